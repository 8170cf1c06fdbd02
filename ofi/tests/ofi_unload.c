/*
 * The provider leaves nothing behind when libfabric unloads it. libfabric dlopens
 * libferry-fi.so at its first fi_getinfo and dlcloses it in fi_fini (its destructor, at exit);
 * whatever ferry keeps for the process's lifetime (the configuration registry of
 * src/core/config.c, built when a domain creates a ferry context) must be freed then: once the
 * module is unmapped nothing points to it any more.
 *
 * This program opens a domain (a ferry context) and closes everything; ctest runs it under
 * valgrind (ofi_unload.sh), whose leak check runs after the destructors, so a block the
 * unloaded provider left behind is "definitely lost" and fails the test.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ot.h"

int main(void)
{
    ot_require_provider();

    struct fi_info *hints = ot_hints(FI_TAGGED, 0);
    struct fi_info *info = ot_getinfo(hints);
    struct fid_fabric *fabric;
    struct fid_domain *domain;

    OT_EXPECT(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
    OT_EXPECT(fi_domain(fabric, info, &domain, NULL), 0);
    OT_EXPECT(fi_close(&domain->fid), 0);
    OT_EXPECT(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    printf("ofi_unload: domain opened and closed\n");
    return 0;
}
