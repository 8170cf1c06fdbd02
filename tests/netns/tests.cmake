# The netns suite: ferry across "hosts" made of Linux namespaces (tests/netns/README.md).
# run.sh builds the test bed (root only: it exits 77 otherwise), so the ctest entries below
# skip cleanly on machines and in CI runs without root.
#
#   netns_bed    the test bed itself: isolation, mpirun across hosts, each fault measured with
#                plain TCP (nt_net) — needs no ferry transport across hosts
#   netns_suite  the ferry programs below and ferry_perf across hosts; skips (77) until the tcp
#                transport and the bootstrap library are built

add_executable(nt_net ${CMAKE_CURRENT_SOURCE_DIR}/netns/nt_net.c)

set(FERRY_NETNS_RUN ${CMAKE_CURRENT_SOURCE_DIR}/netns/run.sh)
set(FERRY_NETNS_ARGS --bin-dir ${CMAKE_CURRENT_BINARY_DIR} --tools-dir ${PROJECT_BINARY_DIR}/tools)

# The ferry programs need the bootstrap library (ranks and the address exchange).
if(TARGET ferry_bootstrap)
    set(FERRY_NETNS_BOOTSTRAP ferry_bootstrap)
elseif(TARGET ferry::bootstrap)
    set(FERRY_NETNS_BOOTSTRAP ferry::bootstrap)
endif()
if(FERRY_NETNS_BOOTSTRAP)
    foreach(prog nt_ops nt_alltoall nt_fault nt_mpi)
        add_executable(${prog} ${CMAKE_CURRENT_SOURCE_DIR}/netns/${prog}.c
                               ${CMAKE_CURRENT_SOURCE_DIR}/netns/nt_job.c)
        target_link_libraries(${prog} PRIVATE ferry_testcommon ferry ${FERRY_NETNS_BOOTSTRAP})
    endforeach()
    # nt_mpi on this host: 4 ranks over shm, and over tcp (tests/netns/local_job.sh)
    # (and over shm with each rendezvous mode forced)
    foreach(variant shm tcp shm_get shm_put shm_coop shm_null shm_split)
        set(env "")
        if(variant STREQUAL "tcp")
            set(env FERRY_TRANSPORTS=tcp)
        elseif(variant MATCHES "^shm_(.*)$")
            set(env FERRY_RNDV_MODE=${CMAKE_MATCH_1})
        endif()
        add_test(NAME mp_mpi_p2p_${variant}
                 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/netns/local_job.sh 4 150
                         $<TARGET_FILE:nt_mpi>)
        set_tests_properties(mp_mpi_p2p_${variant} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                             ENVIRONMENT "FERRY_LOG_LEVEL=warn;${env}")
    endforeach()
else()
    message(STATUS "netns suite: no bootstrap library (target ferry_bootstrap): the ferry "
                   "programs of tests/netns are not built; netns_suite will skip")
endif()

add_test(NAME netns_bed COMMAND bash ${FERRY_NETNS_RUN} ${FERRY_NETNS_ARGS} bed)
add_test(NAME netns_suite COMMAND bash ${FERRY_NETNS_RUN} ${FERRY_NETNS_ARGS} suite)
set_tests_properties(netns_bed PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS netns)
# issue 11, items 2-4 across hosts: mp_hostile's worker on h1, its attacker and echo peer on h2,
# over tcp (silent connections, descriptor exhaustion, bounded logs); its own subnet
if(TARGET mp_hostile)
    add_test(NAME netns_hostile COMMAND bash ${FERRY_NETNS_RUN} ${FERRY_NETNS_ARGS} hostile)
    set_tests_properties(netns_hostile PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE 77 LABELS netns
                         ENVIRONMENT "NETNS_NET=10.78.0" RUN_SERIAL TRUE)
endif()
# The fault tests measure detection times: they run alone, not beside the rest of the suite.
set_tests_properties(netns_suite PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS netns
                     RUN_SERIAL TRUE)
