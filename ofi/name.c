/*
 * libferry-fi — endpoint names (name.h): ferry's compact worker addresses, checked by ferry.
 */
#include <ferry/info.h>

#include "name.h"

bool fy_ofi_name_check(const uint8_t name[FY_OFI_NAME_LEN], ferry_peer_id_t *peer_p)
{
    ferry_address_info_t info = {.size = sizeof(info)};
    if (ferry_address_decode(name, FY_OFI_NAME_LEN, &info) != FERRY_OK || !info.compact ||
        info.worker_id == FERRY_PEER_ANY)
        return false;
    *peer_p = info.worker_id;
    return true;
}
