/* Fuzz the compact worker address parser (fy_address_compact_parse and fy_address_parse_any,
 * src/wireup/address.c) on arbitrary bytes.
 *
 * When it accepts the input, every promise is checked: the input is exactly
 * FERRY_ADDRESS_COMPACT_SIZE bytes with the compact magic and version, only known flags,
 * the fields are the input's bytes, and re-encoding them with fy_address_compact_write gives
 * the input again (so every reserved byte and every field of a clear flag is 0, a tcp family
 * is 4 or 6 and its port not 0). fy_address_parse_any then rebuilds the transports' records
 * (with a local host, and with none): each lies inside the address's storage, and each
 * transport's record_describe finds its rebuilt record well-formed. A violation aborts.
 *
 * Seeds (tests/fuzz/corpus/address_compact/): compact addresses of shm+tcp (IPv4, IPv6),
 * self-only and tcp-only workers, and truncated, padded and corrupted variants. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "transport/transport.h"
#include "wireup/address.h"

/* Rebuild the records as ferry_ep_create does, with local as this host. */
static void fuzz_rebuild(const uint8_t *data, size_t size, const fy_host_id_t *local)
{
    static fy_address_t address;
    if (fy_address_parse_any(data, size, local, &address) != FERRY_OK)
        fuzz_fail("fy_address_parse_any refused what fy_address_compact_parse accepted");
    if (!address.compact || address.record_count > FERRY_ADDRESS_MAX_RECORDS)
        fuzz_fail("a compact address parsed as not compact, or too many records");
    for (unsigned i = 0; i < address.record_count; i++) {
        const fy_address_record_t *r = &address.records[i];
        const fy_tl_ops_t *tl = NULL;
        if (r->length > 0 && (r->data < address.storage ||
                              r->data + r->length > address.storage + sizeof(address.storage)))
            fuzz_fail("a rebuilt record lies outside the address's storage");
        for (size_t t = 0; t < fy_transports_count; t++) {
            if (fy_transports[t]->id == r->transport_id)
                tl = fy_transports[t];
        }
        if (tl == NULL)
            fuzz_fail("a rebuilt record of no transport");
        fy_tl_peer_t peer = {.worker_uuid = address.worker_uuid, .host = address.host};
        char text[256], why[256];
        bool reachable = false;
        if (tl->record_describe(NULL, &peer, r->data, r->length, text, sizeof(text), &reachable,
                                why, sizeof(why)) != FERRY_OK)
            fuzz_fail("a transport finds its own rebuilt record malformed");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t rebuilt[FERRY_ADDRESS_COMPACT_SIZE];
    fy_address_compact_t c;

    if (fy_address_compact_parse(data, size, &c) != FERRY_OK) {
        fy_address_t address; /* the dispatcher must refuse it too, whichever form it is */
        if (fy_address_is_compact(data, size) &&
            fy_address_parse_any(data, size, NULL, &address) == FERRY_OK)
            fuzz_fail("fy_address_parse_any accepted a compact address the parser refused");
        return 0;
    }
    if (size != FERRY_ADDRESS_COMPACT_SIZE || fuzz_get32(data) != FY_ADDRESS_COMPACT_MAGIC ||
        data[4] != FY_ADDRESS_COMPACT_VERSION)
        fuzz_fail("accepted another size, magic or version");
    if ((c.fields.flags & ~FY_TL_COMPACT_FLAGS) != 0 || c.fields.flags != data[5])
        fuzz_fail("accepted unknown flags, or the flags differ from the input");
    if (c.worker_uuid == 0 || c.worker_uuid != fuzz_get64(data + 8) ||
        memcmp(c.boot_id, data + 16, 16) != 0 || c.ns_digest != fuzz_get32(data + 32) ||
        c.pid != fuzz_get32(data + 36))
        fuzz_fail("worker id 0, or a field differs from the input");
    if ((c.fields.flags & FY_TL_COMPACT_TCP) &&
        ((c.fields.ip_family != 4 && c.fields.ip_family != 6) || c.fields.port == 0))
        fuzz_fail("accepted a tcp family other than 4 and 6, or port 0");
    fy_address_compact_write(rebuilt, &c);
    if (memcmp(rebuilt, data, sizeof(rebuilt)) != 0)
        fuzz_fail("re-encoding the parsed fields does not give the input");

    /* with a local host of the input's boot id (its namespaces may or may not match) and
     * without one */
    fy_host_id_t local;
    memset(&local, 0, sizeof(local));
    memcpy(local.boot_id, c.boot_id, sizeof(local.boot_id));
    local.net_ns = 1;
    fuzz_rebuild(data, size, &local);
    fuzz_rebuild(data, size, NULL);
    return 0;
}
