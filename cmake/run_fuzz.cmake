# Run one libFuzzer program for a bounded time (the fuzz_<name> ctests, cmake/FerryFuzz.cmake).
#   cmake -DFUZZER=<program> -DCORPUS=<dir> [-DSEED=<dir>] [-DSECONDS=20] -P run_fuzz.cmake
# New inputs are written to CORPUS (kept between runs); SEED is read when it exists. A crash,
# leak, timeout or sanitizer report fails the test and leaves crash-*/leak-*/timeout-* files in
# the working directory (build/fuzz/).

cmake_minimum_required(VERSION 3.25)

if(NOT SECONDS)
    set(SECONDS 20)
endif()
file(MAKE_DIRECTORY "${CORPUS}")
set(dirs "${CORPUS}")
if(SEED AND IS_DIRECTORY "${SEED}")
    list(APPEND dirs "${SEED}")
endif()

execute_process(
    COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
            -print_final_stats=1 ${dirs}
    RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "${FUZZER} failed (${result}): see the report above")
endif()
