/*
 * libferry-fi — the provider object and its entry point, fi_prov_ini: the only symbol the
 * library exports (libferry-fi.map). libfabric dlopens every "*fi.so" in FI_PROVIDER_PATH and
 * calls fi_prov_ini once.
 */
#include "ofi.h"

static void fy_ofi_cleanup(void)
{
    /* nothing global: every object is freed by its fi_close */
}

struct fi_provider fy_ofi_prov = {
    .version = FY_OFI_PROV_VERSION,
    .fi_version = FY_OFI_API_VERSION,
    .name = FY_OFI_PROV_NAME,
    .getinfo = fy_ofi_getinfo,
    .fabric = fy_ofi_fabric_open,
    .cleanup = fy_ofi_cleanup,
};

__attribute__((visibility("default"))) struct fi_provider *fi_prov_ini(void);

struct fi_provider *fi_prov_ini(void)
{
    fy_ofi_ep_params_init();
    return &fy_ofi_prov;
}
