# FERRY_FUZZ=ON: each tests/fuzz/<name>.c (defining LLVMFuzzerTestOneInput) becomes the libFuzzer
# program fuzz/<name> and the ctest fuzz_<name> (label "fuzz"), which fuzzes for
# FERRY_FUZZ_SECONDS seconds on the corpus build/fuzz/corpus/<name>/, seeded from
# tests/fuzz/corpus/<name>/ when that exists. The library is instrumented with
# -fsanitize=fuzzer-no-link,address,undefined (top-level CMakeLists.txt); the targets link
# libFuzzer's driver with -fsanitize=fuzzer,address,undefined.
#
# Reproduce a crash:  build-fuzz/fuzz/<name> build-fuzz/fuzz/crash-<sha1>

file(GLOB FERRY_FUZZ_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/fuzz/*.c)
if(NOT FERRY_FUZZ_SOURCES)
    message(STATUS "FERRY_FUZZ: no tests/fuzz/*.c yet, no fuzz target")
endif()

set(FERRY_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
foreach(source IN LISTS FERRY_FUZZ_SOURCES)
    get_filename_component(name ${source} NAME_WE)
    set(target fuzz_${name})
    add_executable(${target} ${source} ${PROJECT_SOURCE_DIR}/tests/fuzz/common/fuzz_common.c)
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz/common)
    set_target_properties(${target} PROPERTIES
        OUTPUT_NAME ${name}
        RUNTIME_OUTPUT_DIRECTORY ${FERRY_FUZZ_DIR})
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    # ferry_bootstrap_internal: libferry.a whole and the bootstrap's objects (bootstrap_wire)
    target_link_libraries(${target} PRIVATE ferry_bootstrap_internal)

    add_test(NAME ${target}
        COMMAND ${CMAKE_COMMAND}
            -DFUZZER=$<TARGET_FILE:${target}>
            -DCORPUS=${FERRY_FUZZ_DIR}/corpus/${name}
            -DSEED=${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${name}
            -DSECONDS=${FERRY_FUZZ_SECONDS}
            -P ${PROJECT_SOURCE_DIR}/cmake/run_fuzz.cmake
        WORKING_DIRECTORY ${FERRY_FUZZ_DIR})
    math(EXPR fuzz_timeout "${FERRY_FUZZ_SECONDS} + 120")
    set_tests_properties(${target} PROPERTIES
        LABELS fuzz
        TIMEOUT ${fuzz_timeout}
        ENVIRONMENT "FERRY_LOG_LEVEL=error")
endforeach()
