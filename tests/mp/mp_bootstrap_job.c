/* One rank of a bootstrap job (ft_bootstrap_alltoall): run alone it is a job of one (the single
 * method); tests/mp/mpirun_pmix.sh runs 4 of them under mpirun (the pmix method). With an
 * argument, the method it must have found ("pmix"). */
#include <stdio.h>
#include <string.h>

#include <ferry/bootstrap.h>

#include "ft.h"
#include "ft_alltoall.h"

int main(int argc, char **argv)
{
    ferry_bootstrap_t *bs;
    char role[32];

    FT_CHECK_OK(ferry_bootstrap_init(NULL, &bs));
    snprintf(role, sizeof(role), "rank%u", ferry_bootstrap_rank(bs));
    ft_set_role(role);
    const char *method = ferry_bootstrap_method_name(ferry_bootstrap_method(bs));
    if (argc > 1)
        FT_CHECK(strcmp(method, argv[1]) == 0, "bootstrap method %s, expected %s", method, argv[1]);
    unsigned rank = ferry_bootstrap_rank(bs), size = ferry_bootstrap_size(bs);
    ft_bootstrap_alltoall(bs);
    ferry_bootstrap_finalize(bs);
    printf("rank %u of %u (%s): all-to-all passed\n", rank, size, method);
    return 0;
}
