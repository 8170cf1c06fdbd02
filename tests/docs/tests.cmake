# Documentation checks run by ctest (paths are relative to tests/).
#
# docs_ferry_info: the sample outputs in docs/ferry_info.md match what the built ferry_info
# prints, machine- and run-specific values aside (docs/gen_ferry_info.sh --check says which);
# regenerate them with `bash docs/gen_ferry_info.sh build/tools/ferry_info`.
if(TARGET ferry_info)
    add_test(NAME docs_ferry_info
             COMMAND bash ${PROJECT_SOURCE_DIR}/docs/gen_ferry_info.sh --check
                     $<TARGET_FILE:ferry_info> ${PROJECT_SOURCE_DIR}/docs/ferry_info.md)
    set(docs_fail_regex "${FERRY_TEST_ERROR_REGEX}")
    if(FERRY_SANITIZE OR FERRY_FUZZ)
        string(APPEND docs_fail_regex "|${FERRY_TEST_SANITIZER_REGEX}")
    endif()
    set_tests_properties(docs_ferry_info PROPERTIES
        TIMEOUT 60
        LABELS docs
        FAIL_REGULAR_EXPRESSION "${docs_fail_regex}")
endif()

# tools_ferry_info_counters: ferry_info -x runs its exchange between two workers and prints the
# counters; the 16 messages of 8 B are counted exactly (eager, on the sender and the receiver)
if(TARGET ferry_info)
    add_test(NAME tools_ferry_info_counters COMMAND $<TARGET_FILE:ferry_info> -x)
    set_tests_properties(tools_ferry_info_counters PROPERTIES
        TIMEOUT 60
        LABELS docs
        PASS_REGULAR_EXPRESSION "tagged of 8[.][.]15 B: eager 16\n.*received 18 \\(4259968 B\\)"
        FAIL_REGULAR_EXPRESSION "${docs_fail_regex}")
endif()
