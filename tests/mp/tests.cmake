# Multi-process tests: one ferry_add_test() per test (see tests/CMakeLists.txt for the options);
# they fork real peers (tests/common/ft_peer.h) and check every byte. Paths are relative to
# tests/. Each test also arms a watchdog (ft_watchdog) 5 s under its TIMEOUT, which names the
# hang and kills the test's peers.

ferry_add_test(NAME mp_am_pingpong SOURCES mp/mp_am_pingpong.c TIMEOUT 60)
# the same ping-pong, one worker to itself over the self transport
ferry_add_test(NAME am_self SOURCES mp/mp_am_pingpong.c ARGS self TIMEOUT 60
               ENV FERRY_TRANSPORTS=self)
ferry_add_test(NAME mp_am_flood SOURCES mp/mp_am_flood.c TIMEOUT 120)
# the same through rings of 2 cells: a sender's knowledge of free cells (shm_tx_room) runs out at
# every other send, and every inline message of more than one cell takes a buffer instead
ferry_add_test(NAME mp_am_flood_ring2 SOURCES mp/mp_am_flood.c TIMEOUT 120
               ENV FERRY_SHM_RING_CELLS=2)
ferry_add_test(NAME mp_am_backpressure SOURCES mp/mp_am_backpressure.c TIMEOUT 60)
# shm's medium buffers reserved ahead by a sender come back when its endpoint closes
ferry_add_test(NAME mp_shm_claim SOURCES mp/mp_shm_claim.c TIMEOUT 60)
# measures an idle waiter's CPU time and its wake-up: run alone
ferry_add_test(NAME mp_am_wait SOURCES mp/mp_am_wait.c TIMEOUT 60 LABELS perf_sensitive)
# the same with fences instead of membarrier (FERRY_SHM_MEMBARRIER=off) on both sides, and on the
# server's side only (the client then fences too: shm's handshake says who issues membarrier)
ferry_add_test(NAME mp_am_wait_fenced SOURCES mp/mp_am_wait.c TIMEOUT 60 LABELS perf_sensitive
               ENV FERRY_SHM_MEMBARRIER=off)
ferry_add_test(NAME mp_am_wait_mixed SOURCES mp/mp_am_wait.c ARGS mixed TIMEOUT 60
               LABELS perf_sensitive)
# and with rings of 2 cells: the blocking sender waits for a free cell at almost every send
ferry_add_test(NAME mp_am_wait_ring2 SOURCES mp/mp_am_wait.c TIMEOUT 60 LABELS perf_sensitive
               ENV FERRY_SHM_RING_CELLS=2)
ferry_add_test(NAME mp_peer_death SOURCES mp/mp_peer_death.c TIMEOUT 60)
ferry_add_test(NAME mp_bad_input SOURCES mp/mp_bad_input.c TIMEOUT 60)
# INTERNAL: forges the uid in an address, and sends a hand-made handshake. shm's uid check is
# the premise: tcp (which, like any network transport, takes peers of any user) is left out
ferry_add_test(NAME mp_other_uid SOURCES mp/mp_other_uid.c INTERNAL TIMEOUT 60
               ENV FERRY_TRANSPORTS=self,shm)
# INTERNAL: hand-made shm HELLOs with an unknown flag and with the previous layout version,
# each refused with one warning; the worker then ping-pongs with a peer
ferry_add_test(NAME mp_shm_handshake SOURCES mp/mp_shm_handshake.c INTERNAL TIMEOUT 60)
ferry_add_test(NAME mp_close SOURCES mp/mp_close.c TIMEOUT 60)
# a clean shutdown of 3 processes (graceful closes seen by both sides, staggered ends) logs
# nothing above info, 10 rounds (issue 11); over tcp below
ferry_add_test(NAME mp_clean_close SOURCES mp/mp_clean_close.c TIMEOUT 120)
# hostile connections to the listeners (issue 11): silent ones closed after the handshake
# timeouts, 400 per listener under a lowered open-files limit (no spinning, one warning, the
# endpoints keep working), 401 bad ones per listener with bounded, accounted log lines
ferry_add_test(NAME mp_hostile SOURCES mp/mp_hostile.c INTERNAL TIMEOUT 180
               ENV FERRY_SHM_CONNECT_TIMEOUT_MS=1000 FERRY_TCP_CONNECT_TIMEOUT_MS=1000)
# one-sided operations of a worker on itself (self transport: the target-executed protocol);
# INTERNAL: also sends hand-made protocol messages
ferry_add_test(NAME mp_rma_self SOURCES mp/mp_rma_self.c INTERNAL TIMEOUT 60)
# put/get between two processes, every byte checked at both ends: registered (malloc'ed and
# multi-piece) and ferry_mem_alloc memory, sizes 0 .. 256 MiB, iov shapes; the second run forces
# the fallback (the target's progress performs the accesses to registered memory)
ferry_add_test(NAME mp_rma_putget SOURCES mp/mp_rma_putget.c TIMEOUT 180)
ferry_add_test(NAME mp_rma_putget_nocma SOURCES mp/mp_rma_putget.c TIMEOUT 180
               ENV FERRY_SHM_CMA=off)
# remote atomics: two hammers and the owner, on mapped (CPU atomics) and on registered memory
# (target-executed); fetch-add 64/32, post ops, swap, a CSWAP lock, mixed with the owner's own
ferry_add_test(NAME mp_rma_atomic SOURCES mp/mp_rma_atomic.c TIMEOUT 60)
# tagged messages between two processes, every byte checked: sizes on both sides of the eager
# threshold up to 64 MiB, posted and unexpected, truncation, cancel, probe + message_recv, iov
# shapes; then the same under each forced rendezvous mode
ferry_add_test(NAME mp_tag_basic SOURCES mp/mp_tag_basic.c TIMEOUT 120)
foreach(mode get put coop null split)
    ferry_add_test(NAME mp_tag_basic_${mode} SOURCES mp/mp_tag_basic.c TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode})
endforeach()
ferry_add_test(NAME mp_tag_basic_ring4 SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FERRY_SHM_RING_CELLS=4)
# every message with immediate data (FT_TAG_IMM: the sends carry FERRY_TAG_SEND_IMM, about half
# below 2^32 and half above, so both forms of the EAGER header go; each receive and probe checks
# it), automatic and COOP
ferry_add_test(NAME mp_tag_basic_imm SOURCES mp/mp_tag_basic.c TIMEOUT 120 ENV FT_TAG_IMM=1)
ferry_add_test(NAME mp_tag_basic_imm_coop SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FT_TAG_IMM=1 FERRY_RNDV_MODE=coop)
# COOP moves everything above the eager size through shm's bulk buffers: once with plain stores
# into them (FERRY_SHM_STREAM_MIN=16G), once with non-temporal stores from 65 bytes (unaligned
# heads and tails of iov pieces)
ferry_add_test(NAME mp_tag_basic_coop_plain SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FERRY_RNDV_MODE=coop FERRY_SHM_STREAM_MIN=16G)
ferry_add_test(NAME mp_tag_basic_coop_stream65 SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FERRY_RNDV_MODE=coop FERRY_SHM_STREAM_MIN=65)
# bad one-sided input between processes (keys truncated, corrupted, forged, deregistered, used
# up; ranges past the end and overflowing; access not granted; misaligned atomics; keys of
# another peer): a clear status, nothing touched, the endpoints still work; on both paths
ferry_add_test(NAME mp_rma_bad SOURCES mp/mp_rma_bad.c TIMEOUT 60)
ferry_add_test(NAME mp_rma_bad_nocma SOURCES mp/mp_rma_bad.c TIMEOUT 60 ENV FERRY_SHM_CMA=off)
# forged keys (issue 11): every single-bit flip of three keys (one handed out, two never) and
# 10 000 random secrets: every use FERRY_ERR_ACCESS, nothing read or written, the endpoint keeps
# working; shm with and without cross-memory attach, and tcp (below)
ferry_add_test(NAME mp_rkey_forge SOURCES mp/mp_rkey_forge.c TIMEOUT 180)
ferry_add_test(NAME mp_rkey_forge_nocma SOURCES mp/mp_rkey_forge.c TIMEOUT 180
               ENV FERRY_SHM_CMA=off)
# Tagged-message suite (mp_tag_*): every test once per forced rendezvous mode (suffix _get, _put,
# _coop, _null, _split), with a few variants.
#   sizes       0 B .. 256 MiB both ways, both sides of the eager threshold, posted / unexpected /
#               probed, iov shapes that differ on the two sides; _thresh0: every message of a
#               byte or more is a rendezvous (without the 256 MiB steps)
#   match       1 000 interleaved tags received out of order with masks, wildcard receives from 3
#               senders, probe with and without remove, cancel, truncation (eager, rendezvous);
#               _unexpmax: a small unexpected-message bound switches the senders to rendezvous
#               (even for 0 bytes) mid-stream; _thresh0: every message of a byte or more is a
#               rendezvous, the small ones injected (FERRY_OK at once, the CTS later): the
#               senders wait for their next command sleeping on the worker's fd, which the
#               CTS must wake (a sender blocked outside ferry left receive B of phase 3
#               waiting forever: the _unexpmax hang, 1 in ~80 runs, when an EAGER_ON came
#               after the sender's last progress)
#   concurrent  64 rendezvous in flight one way (posted; unexpected, received in reverse), 64 each
#               way at once, 200 of one tag (receive k gets message k)
#   death       SIGKILL of the receiver and of the sender in the middle of a 256 MiB rendezvous,
#               and of peers holding / owning an unexpected RTS: endpoint errors within 1 s, no
#               registration left (INTERNAL: reads the context's registration slots), the
#               survivor keeps working with another peer
# (get: a contiguous send goes by address, TAG_FLAG_ADDR, read without a key; one in pieces, or
# larger than FERRY_RNDV_SECTION, with keys)
foreach(mode get put coop null split)
    ferry_add_test(NAME mp_tag_sizes_${mode} SOURCES mp/mp_tag_sizes.c TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode})
    ferry_add_test(NAME mp_tag_sizes_thresh0_${mode} SOURCES mp/mp_tag_sizes.c ARGS quick
                   TIMEOUT 60 ENV FERRY_RNDV_MODE=${mode} FERRY_RNDV_THRESH=0)
    ferry_add_test(NAME mp_tag_match_${mode} SOURCES mp/mp_tag_match.c TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode})
    ferry_add_test(NAME mp_tag_match_unexpmax_${mode} SOURCES mp/mp_tag_match.c TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode} FERRY_TAG_UNEXPECTED_MAX=65536
                       FERRY_TAG_UNEXPECTED_COUNT=64)
    ferry_add_test(NAME mp_tag_match_thresh0_${mode} SOURCES mp/mp_tag_match.c TIMEOUT 60
                   ENV FERRY_RNDV_MODE=${mode} FERRY_RNDV_THRESH=0)
    ferry_add_test(NAME mp_tag_concurrent_${mode} SOURCES mp/mp_tag_concurrent.c TIMEOUT 60
                   ENV FERRY_RNDV_MODE=${mode})
    ferry_add_test(NAME mp_tag_death_${mode} SOURCES mp/mp_tag_death.c INTERNAL TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode})
endforeach()
# the automatic choice: eager up to 256 KiB (posted, unexpected, probed; above 32 KiB in fragments
# placed straight into a contiguous posted receive; the sender's counters say each message of at
# most 256 KiB moved eager and no longer one did), COOP or SPLIT above, with and without
# cross-memory attach
ferry_add_test(NAME mp_tag_sizes_auto SOURCES mp/mp_tag_sizes.c ARGS quick eager TIMEOUT 60)
ferry_add_test(NAME mp_tag_sizes_auto_nocma SOURCES mp/mp_tag_sizes.c ARGS quick eager TIMEOUT 60
               ENV FERRY_SHM_CMA=off)
# the same with immediate data on every message (FT_TAG_IMM: each receive and probe checks it)
ferry_add_test(NAME mp_tag_sizes_auto_imm SOURCES mp/mp_tag_sizes.c ARGS quick eager TIMEOUT 60
               ENV FT_TAG_IMM=1)
# the same with each store kind of the copies into shm's bulk buffers forced (automatic: each
# endpoint calibrates the two on its first bulk copies, so the runs above move bytes with both;
# forced, messages from 16 KiB may go by rendezvous: their class calibrates from the first one)
ferry_add_test(NAME mp_tag_sizes_auto_plain SOURCES mp/mp_tag_sizes.c ARGS quick eager TIMEOUT 60
               ENV FERRY_SHM_STREAM_MIN=16G)
ferry_add_test(NAME mp_tag_sizes_auto_nocma_plain SOURCES mp/mp_tag_sizes.c ARGS quick eager
               TIMEOUT 60 ENV FERRY_SHM_CMA=off FERRY_SHM_STREAM_MIN=16G)
ferry_add_test(NAME mp_tag_sizes_auto_stream SOURCES mp/mp_tag_sizes.c ARGS quick eager TIMEOUT 60
               ENV FERRY_SHM_STREAM_MIN=4096)
ferry_add_test(NAME mp_tag_sizes_auto_nocma_stream SOURCES mp/mp_tag_sizes.c ARGS quick eager
               TIMEOUT 60 ENV FERRY_SHM_CMA=off FERRY_SHM_STREAM_MIN=4096)
# automatic mode with eager messages up to 64 KiB (fragmented, kept by the transport when
# unexpected); GET with 5000-byte sections (every rendezvous re-keyed with COOKIE many times)
ferry_add_test(NAME mp_tag_sizes_thresh64k SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 60
               ENV FERRY_RNDV_THRESH=65536)
ferry_add_test(NAME mp_tag_sizes_get_sections SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 60
               ENV FERRY_RNDV_MODE=get FERRY_RNDV_SECTION=5000)
# SPLIT whose first half spans many sections, with cross-memory attach (the writes complete at
# once) and without (target-executed: the receiver's sections and COOKIEs interleave with the
# sender's writes still in progress)
ferry_add_test(NAME mp_tag_sizes_split_sections SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 60
               ENV FERRY_RNDV_MODE=split FERRY_RNDV_SECTION=5000)
ferry_add_test(NAME mp_tag_sizes_split_nocma SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 120
               ENV FERRY_RNDV_MODE=split FERRY_SHM_CMA=off FERRY_RNDV_SECTION=300k)
# the automatic choice calibrating on a stream of messages (16 in flight) of three size classes,
# every byte checked: with cross-memory attach both COOP and SPLIT move messages while a class
# calibrates and one of them afterwards; without it, COOP only
ferry_add_test(NAME mp_tag_calib SOURCES mp/mp_tag_calib.c TIMEOUT 120)
ferry_add_test(NAME mp_tag_calib_nocma SOURCES mp/mp_tag_calib.c TIMEOUT 120 ENV FERRY_SHM_CMA=off)
# the store kind fixed: the transport has no rate of its copies, so the eager classes' eager
# blocks run, and eager must move messages too
ferry_add_test(NAME mp_tag_calib_eager SOURCES mp/mp_tag_calib.c TIMEOUT 120
               ENV FERRY_SHM_STREAM_MIN=16G)
# the store kind fixed (plain): the eager blocks run, and no send goes by COOP while the transport
# measures it
ferry_add_test(NAME mp_tag_calib_restricted SOURCES mp/mp_tag_calib.c TIMEOUT 120
               ENV MP_TAG_CALIB_RESTRICTED=1 FERRY_SHM_STREAM_MIN=16G)
ferry_add_test(NAME mp_tag_reply SOURCES mp/mp_tag_reply.c TIMEOUT 60)
ferry_add_test(NAME mp_tag_reply_nocma SOURCES mp/mp_tag_reply.c TIMEOUT 60 ENV FERRY_SHM_CMA=off)
# bad input: hand-made tag-protocol messages (INTERNAL: ferry_am_send_internal) from a peer that
# speaks the protocol by hand: each dropped with one warning per kind, or ending only its
# transfer; _nocma: the target reads through the peer's progress (target-executed one-sided
# operations), which adds the abort of a read in flight. Case 17 needs NULL DATA that waits
# inside the transport (a 1 MiB DATA, fragmented by shm) when the transfer is aborted: the
# automatic NULL size on shm (one buffer) is copied at once and never waits there. Case 18 needs
# the automatic choice to offer SPLIT for its first 100000-byte message: the fixed threshold
# (FERRY_RNDV_SPLIT_MIN), not the calibration, whose first block is COOP.
ferry_add_test(NAME mp_tag_bad SOURCES mp/mp_tag_bad.c INTERNAL TIMEOUT 60
               ENV FERRY_RNDV_NULL_CHUNK=1m FERRY_RNDV_SPLIT_MIN=64k)
ferry_add_test(NAME mp_tag_bad_nocma SOURCES mp/mp_tag_bad.c INTERNAL TIMEOUT 60
               ENV FERRY_SHM_CMA=off FERRY_RNDV_NULL_CHUNK=1m FERRY_RNDV_SPLIT_MIN=64k)
# Named segments (mp_seg_*). life: the whole life cycle with 4 importers (3 CONNECTs, NOTIFYs and
# DISCONNECTs; set_unavailable refuses the 4th; remove while connected keeps the data for the
# connected peers, then frees it: INTERNAL reads the context's registration slots), the state
# machine's illegal steps and the local bad input
ferry_add_test(NAME mp_seg_life SOURCES mp/mp_seg_life.c INTERNAL TIMEOUT 60)
# dma: transfer queues of 1 B .. 256 MiB and a 1 000-entry scatter list, written and read back,
# every byte checked by both sides, on mapped (ferry_mem_alloc) and registered memory; bad
# entries, abort, busy; _nocma: registered memory through the owner's progress
ferry_add_test(NAME mp_seg_dma SOURCES mp/mp_seg_dma.c TIMEOUT 180)
ferry_add_test(NAME mp_seg_dma_nocma SOURCES mp/mp_seg_dma.c TIMEOUT 180 ENV FERRY_SHM_CMA=off)
# threads: the same transfers on the copy threads (FERRY_SEGMENT_COPY_THREADS=2, then 1): sizes
# 1 B .. 64 MiB, a 1 000-entry scatter list and entries straddling the threads' chunks, every
# byte checked by both sides; threads started by the first queue and joined by
# ferry_worker_destroy (also with a queue running), callbacks on the application's thread, a
# sleeping ferry_dma_wait, aborts of running writes and reads
ferry_add_test(NAME mp_seg_threads SOURCES mp/mp_seg_threads.c TIMEOUT 180 LABELS threads
               ENV FERRY_SEGMENT_COPY_THREADS=2)
ferry_add_test(NAME mp_seg_threads_1 SOURCES mp/mp_seg_threads.c TIMEOUT 180 LABELS threads
               ENV FERRY_SEGMENT_COPY_THREADS=1)
# death: connect timeouts (synchronous and asynchronous: the owner does not progress, then sees
# the late connects come and go), an asynchronous connect with a callback, and the owner
# SIGKILLed: LOST within 1 s, every later operation fails, the mapped memory stays readable
ferry_add_test(NAME mp_seg_death SOURCES mp/mp_seg_death.c TIMEOUT 60)
# the bootstrap (libferry_bootstrap): tcp between 4 forked ranks on 127.0.0.1 and strangers
# knocking at rank 0; INTERNAL: speaks the wire format by hand
ferry_add_test(NAME mp_bootstrap_tcp SOURCES mp/mp_bootstrap_tcp.c INTERNAL
               LIBS ferry_bootstrap_internal TIMEOUT 120)
# a joined rank that breaks the protocol in a collective: the others fail cleanly
ferry_add_test(NAME mp_bootstrap_tcp_bad SOURCES mp/mp_bootstrap_tcp.c ARGS bad INTERNAL
               LIBS ferry_bootstrap_internal TIMEOUT 120 EXPECT_ERRORS)
# one rank of a bootstrap job: alone, the single method (and the program mpirun_pmix runs)
ferry_add_test(NAME mp_bootstrap_job SOURCES mp/mp_bootstrap_job.c LIBS ferry_bootstrap
               TIMEOUT 60)
# 4 ranks under mpirun.openmpi with the pmix method, and ferry_perf as 2 ranks (skipped
# without mpirun or PMIx)
if(TARGET example_ferry_hello_bootstrap)
    set(mpirun_pmix_perf -)
    if(TARGET ferry_perf)
        set(mpirun_pmix_perf $<TARGET_FILE:ferry_perf>)
    endif()
    add_test(NAME mpirun_pmix
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mp/mpirun_pmix.sh $<TARGET_FILE:mp_bootstrap_job>
                     $<TARGET_FILE:example_ferry_hello_bootstrap> ${mpirun_pmix_perf}
                     ${FERRY_HAVE_PMIX})
    set_tests_properties(mpirun_pmix PROPERTIES
        TIMEOUT 240
        SKIP_RETURN_CODE 77
        ENVIRONMENT "FERRY_LOG_LEVEL=warn;LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/mp/lsan_pmix.supp:print_suppressions=0"
        FAIL_REGULAR_EXPRESSION "${FERRY_TEST_ERROR_REGEX}")
endif()

# ------------------------------------------------------------------ tcp
# The suites over tcp between local processes (FERRY_TRANSPORTS=tcp; quick arguments where the
# tests have them). Not run over tcp, because their premise is shm's:
#   mp_am_flood        expects messages delivered in keepable transport buffers (tcp delivers
#                      small messages from its receive buffer, not keepable)
#   mp_close           expects every send queued behind a stalled peer to be canceled whole by
#                      a forced close; over tcp a frame already partly on the wire is finished
#                      from a private copy (the stream cannot be cut mid-frame), so its message
#                      is delivered (mp_close_tcp runs its one case that holds over tcp: a
#                      forced close while connecting delivers the sends that completed)
ferry_add_test(NAME mp_am_pingpong_tcp SOURCES mp/mp_am_pingpong.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_close_tcp SOURCES mp/mp_close.c TIMEOUT 60 ENV FERRY_TRANSPORTS=tcp)
# (its stalled peer gets a 64 MiB send over tcp: the socket buffers swallow 1 MiB)
ferry_add_test(NAME mp_peer_death_tcp SOURCES mp/mp_peer_death.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_am_backpressure_tcp SOURCES mp/mp_am_backpressure.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_rma_putget_tcp SOURCES mp/mp_rma_putget.c TIMEOUT 180
               ENV FERRY_TRANSPORTS=tcp)
# every atomic section on both kinds of memory, all performed by the owner's progress (its
# "hold" section, whose premise is memory the hammers map, is skipped over tcp)
ferry_add_test(NAME mp_rma_atomic_tcp SOURCES mp/mp_rma_atomic.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_rma_bad_tcp SOURCES mp/mp_rma_bad.c TIMEOUT 60 ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_rkey_forge_tcp SOURCES mp/mp_rkey_forge.c TIMEOUT 180
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_clean_close_tcp SOURCES mp/mp_clean_close.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_tag_basic_tcp SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_tag_basic_imm_tcp SOURCES mp/mp_tag_basic.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp FT_TAG_IMM=1)
# forced COOP cannot use shared buffers over tcp: it falls back to NULL (info log)
ferry_add_test(NAME mp_tag_sizes_tcp SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_tag_sizes_coop_tcp SOURCES mp/mp_tag_sizes.c ARGS quick TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp FERRY_RNDV_MODE=coop)
ferry_add_test(NAME mp_tag_match_tcp SOURCES mp/mp_tag_match.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
# (tcp sends up to 1 MiB eagerly: the threshold of shm keeps these 64 KiB .. 1 MiB messages
# rendezvous, the test's premise)
ferry_add_test(NAME mp_tag_concurrent_tcp SOURCES mp/mp_tag_concurrent.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp FERRY_RNDV_THRESH=8k)
# (the survivors fill 256 MiB buffers without calling progress: on a loaded machine that takes
# longer than tcp's default 10 s timeout; tests run with 60 s, see ferry_add_test)
ferry_add_test(NAME mp_tag_death_tcp SOURCES mp/mp_tag_death.c INTERNAL TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
# bad input on a worker's tcp port from a client that is not ferry: each closes only its
# connection with one log line; a real peer keeps working (short set-up timeout for the stall)
ferry_add_test(NAME mp_tcp_bad SOURCES mp/mp_tcp_bad.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp FERRY_TCP_CONNECT_TIMEOUT_MS=1000)
# simultaneous connects (one connection, 30 rounds), a stopped peer (FERRY_TCP_TIMEOUT_MS),
# a killed peer
ferry_add_test(NAME mp_tcp_conn SOURCES mp/mp_tcp_conn.c TIMEOUT 90
               ENV FERRY_TRANSPORTS=tcp FERRY_TCP_TIMEOUT_MS=1500)
# the introspection API (include/ferry/info.h) on the address of a worker in another process:
# decoded (pid, records, fields), reachability and the transport choice explained, forged
# namespace and uid
ferry_add_test(NAME mp_info SOURCES mp/mp_info.c TIMEOUT 60)

# What callbacks may do: send, receive, close and destroy endpoints from inside a handler, a
# completion or an error callback (ferry.h, "Callbacks"); over shm, tcp and self-free
ferry_add_test(NAME mp_reentrancy SOURCES mp/mp_reentrancy.c TIMEOUT 60)
ferry_add_test(NAME mp_reentrancy_tcp SOURCES mp/mp_reentrancy.c TIMEOUT 60
               ENV FERRY_TRANSPORTS=tcp)

# a bootstrap barrier that progresses a worker (ferry_bootstrap_set_progress): 2 ranks of the
# tcp method on loopback, one-sided operations over tcp (the target's progress performs them)
add_executable(mp_bootstrap_progress ${CMAKE_CURRENT_SOURCE_DIR}/mp/mp_bootstrap_progress.c)
target_link_libraries(mp_bootstrap_progress PRIVATE ferry_testcommon ferry ferry_bootstrap)
add_test(NAME mp_bootstrap_progress
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/netns/local_job.sh 2 80
                 $<TARGET_FILE:mp_bootstrap_progress>)
set_tests_properties(mp_bootstrap_progress PROPERTIES TIMEOUT 100
                     ENVIRONMENT "FERRY_TRANSPORTS=tcp;FERRY_BOOTSTRAP_TIMEOUT_MS=60000")
add_test(NAME mp_bootstrap_progress_shm
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/netns/local_job.sh 2 80
                 $<TARGET_FILE:mp_bootstrap_progress>)
set_tests_properties(mp_bootstrap_progress_shm PROPERTIES TIMEOUT 100
                     ENVIRONMENT "FERRY_BOOTSTRAP_TIMEOUT_MS=60000")

# counters after a known exchange, checked exactly (include/ferry/counters.h), and FERRY_STATS
ferry_add_test(NAME mp_counters SOURCES mp/mp_counters.c TIMEOUT 60)
ferry_add_test(NAME mp_counters_tcp SOURCES mp/mp_counters.c TIMEOUT 60 ENV FERRY_TRANSPORTS=tcp)
# compact addresses (64 bytes): endpoints both ways from them alone, every byte checked, over
# shm, over tcp (loopback) and to the worker itself; bad compact addresses (truncated, padded,
# another version, wrong magic, unknown flags, reserved bytes, id 0, tcp port 0 and family)
# and a dead peer's compact address
ferry_add_test(NAME mp_address_compact SOURCES mp/mp_address_compact.c TIMEOUT 120)
ferry_add_test(NAME mp_address_compact_tcp SOURCES mp/mp_address_compact.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
ferry_add_test(NAME mp_address_compact_self SOURCES mp/mp_address_compact.c ARGS self
               TIMEOUT 60 ENV FERRY_TRANSPORTS=self)
# per-context settings (ferry_context_params_t.config) win over the environment: a rendezvous
# threshold (the sender's counters say how each message moved) and a tcp timeout (a stopped
# peer times out after the context's 1.5 s, not the environment's 120 s); bad settings refused
ferry_add_test(NAME mp_context_config SOURCES mp/mp_context_config.c ARGS bad TIMEOUT 60)
ferry_add_test(NAME mp_context_config_rndv SOURCES mp/mp_context_config.c ARGS rndv TIMEOUT 120
               ENV FERRY_RNDV_THRESH=1M)
ferry_add_test(NAME mp_context_config_tcp SOURCES mp/mp_context_config.c ARGS tcp TIMEOUT 120
               ENV FERRY_TCP_TIMEOUT_MS=120000 FERRY_TRANSPORTS=tcp)
# fork(): descriptors close-on-exec; a child's copies of its parent's objects are dead
# (FERRY_ERR_FORKED) and touch nothing shared; a child (with or without exec) uses ferry anew
ferry_add_test(NAME mp_fork_cloexec SOURCES mp/mp_fork.c ARGS cloexec TIMEOUT 90)
foreach(mode stream exec child)
    ferry_add_test(NAME mp_fork_${mode} SOURCES mp/mp_fork.c ARGS ${mode} TIMEOUT 90)
    ferry_add_test(NAME mp_fork_${mode}_tcp SOURCES mp/mp_fork.c ARGS ${mode} TIMEOUT 90
                   ENV FERRY_TRANSPORTS=tcp)
endforeach()
# FERRY_THREAD_MULTI: one worker shared by several threads (label threads: run under TSan)
foreach(mode msg rma eps)
    ferry_add_test(NAME mp_threads_${mode} SOURCES mp/mp_threads.c ARGS ${mode} TIMEOUT 180
                   LABELS threads)
endforeach()
ferry_add_test(NAME mp_threads_msg_tcp SOURCES mp/mp_threads.c ARGS msg TIMEOUT 180
               LABELS threads ENV FERRY_TRANSPORTS=tcp)
foreach(mode put coop)
    ferry_add_test(NAME mp_threads_msg_${mode} SOURCES mp/mp_threads.c ARGS msg TIMEOUT 180
                   LABELS threads ENV FERRY_RNDV_MODE=${mode})
endforeach()
ferry_add_test(NAME mp_threads_rma_tcp SOURCES mp/mp_threads.c ARGS rma TIMEOUT 180
               LABELS threads ENV FERRY_TRANSPORTS=tcp)
# registrations made, keys handed out and deregistered (under a peer's accesses) while other
# threads progress: shared memory (the peer reads the key table, cross-memory attach) and tcp
# (every access looked up by the target's progress)
# the creating thread's bias revoked while it is busy sending and progressing (nested calls
# from its callbacks, waits), every byte and order checked
ferry_add_test(NAME mp_threads_bias SOURCES mp/mp_threads.c ARGS bias TIMEOUT 180
               LABELS threads)
ferry_add_test(NAME mp_threads_reg SOURCES mp/mp_threads.c ARGS reg TIMEOUT 180 LABELS threads)
ferry_add_test(NAME mp_threads_reg_tcp SOURCES mp/mp_threads.c ARGS reg TIMEOUT 180
               LABELS threads ENV FERRY_TRANSPORTS=tcp)
# a sender that outruns its receiver: the unexpected-message bounds hold, nothing is lost
ferry_add_test(NAME mp_tag_flow SOURCES mp/mp_tag_flow.c TIMEOUT 120
               ENV FERRY_TAG_UNEXPECTED_MAX=256K)
ferry_add_test(NAME mp_tag_flow_count SOURCES mp/mp_tag_flow.c TIMEOUT 120
               ENV FERRY_TAG_UNEXPECTED_COUNT=1000)
# Open MPI's tag_bw pattern: receives posted one at a time after the oldest completed, 64 KiB
# messages (eager in pieces on shm) outrunning them: kept to rendezvous, every byte checked
ferry_add_test(NAME mp_tag_window SOURCES mp/mp_tag_window.c TIMEOUT 120
               ENV FERRY_TAG_UNEXPECTED_MAX=16M)
# the same over tcp, whose 64 KiB messages are single frames: 64 and more buffered at once in
# recycled buffers (the whole 32 MiB stream within the bytes bound), no sender restricted
ferry_add_test(NAME mp_tag_window_tcp SOURCES mp/mp_tag_window.c ARGS tcp TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp FERRY_TAG_UNEXPECTED_MAX=64M)
# a tcp receiver that stalls behind a stream of 1 MiB eager messages and then takes them one
# receive at a time, posted between progress calls: none goes unexpected, every byte checked
ferry_add_test(NAME mp_tcp_behind SOURCES mp/mp_tcp_behind.c TIMEOUT 120
               ENV FERRY_TRANSPORTS=tcp)
