/*
 * libferry-fi — endpoint names (name.h): ferry's compact worker addresses, checked by ferry.
 */
#include <ferry/info.h>

#include "name.h"

bool fy_ofi_name_check(const uint8_t name[FY_OFI_NAME_LEN])
{
    ferry_address_info_t info = {.size = sizeof(info)};
    return ferry_address_decode(name, FY_OFI_NAME_LEN, &info) == FERRY_OK && info.compact;
}
