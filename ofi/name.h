/*
 * libferry-fi — endpoint names. An endpoint's name (fi_getname) is its ferry worker's compact
 * address (ferry_worker_address_compact): FY_OFI_NAME_LEN = FERRY_ADDRESS_COMPACT_SIZE = 64
 * bytes in every process, which ferry_ep_create accepts on one host (self, shm, tcp over
 * loopback) and across hosts (tcp). It fits Open MPI's 64-byte name buffer.
 */
#ifndef FERRY_OFI_NAME_H
#define FERRY_OFI_NAME_H

#include <stdbool.h>
#include <stdint.h>

#include <ferry/ferry.h>

#define FY_OFI_NAME_LEN ((size_t)FERRY_ADDRESS_COMPACT_SIZE)

/** Check a name an application inserts (untrusted: it may come from any peer): a compact ferry
 *  worker address whose every field is valid (ferry_address_decode; ferry logs one warning
 *  saying what is wrong). Returns false when it is not one; else true and, in peer_p, the
 *  worker id it names (what ferry_tag_info_t.peer reports for its messages). */
bool fy_ofi_name_check(const uint8_t name[FY_OFI_NAME_LEN], ferry_peer_id_t *peer_p);

#endif
