/* See fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"

void fuzz_quiet_logs(void)
{
    setenv("FERRY_LOG_LEVEL", "error", 1);
    ferry_log_init();
}

_Noreturn void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_%s: %s\n", program_invocation_short_name, what);
    abort();
}

/* Weak: a target with more set-up defines its own. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet_logs();
    return 0;
}
