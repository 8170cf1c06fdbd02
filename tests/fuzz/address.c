/* Fuzz fy_address_parse() (src/wireup/address.c) on arbitrary bytes.
 *
 * When it accepts the input, every promise of the parsed address is checked: the record count
 * is within FERRY_ADDRESS_MAX_RECORDS, every record lies inside the input, the records follow
 * the header back to back and end exactly at the end of the input, the header fields are the
 * input's bytes, and re-encoding the parsed address gives the input again (reserved bytes must
 * be 0). Every record byte is read, so
 * that AddressSanitizer sees any record pointing outside the input. A violation aborts.
 *
 * Seeds (tests/fuzz/corpus/address/): an address written by `ferry_info -a`, and truncated
 * variants of it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "wireup/address.h"

/* Where the record bytes go, so that the compiler keeps the reads. */
static volatile unsigned fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fy_address_t address;
    static uint8_t rebuilt[65536 + FERRY_ADDRESS_HEADER_SIZE];

    if (fy_address_parse(data, size, &address) != FERRY_OK)
        return 0;

    /* header */
    if (size < FERRY_ADDRESS_HEADER_SIZE || size > UINT16_MAX)
        fuzz_fail("accepted an input shorter than the header or longer than a u16 length");
    if (fuzz_get32(data) != FERRY_ADDRESS_MAGIC || address.version != FERRY_ADDRESS_VERSION ||
        fuzz_get16(data + 4) != address.version || fuzz_get16(data + 6) != size)
        fuzz_fail("accepted a wrong magic, version or total length");
    if (address.worker_uuid != fuzz_get64(data + 8) ||
        memcmp(address.host.boot_id, data + 16, 16) != 0 ||
        address.host.net_ns != fuzz_get64(data + 32) ||
        address.host.pid_ns != fuzz_get64(data + 40) ||
        address.host.user_ns != fuzz_get64(data + 48) || address.pid != fuzz_get32(data + 56))
        fuzz_fail("a header field differs from the input");
    if (address.record_count > FERRY_ADDRESS_MAX_RECORDS ||
        address.record_count != fuzz_get16(data + 60) || fuzz_get16(data + 62) != 0)
        fuzz_fail("record count out of range or reserved header bytes not 0");

    /* records: inside the input, back to back, ending at its end */
    size_t offset = FERRY_ADDRESS_HEADER_SIZE;
    unsigned sum = 0;
    for (unsigned i = 0; i < address.record_count; i++) {
        const fy_address_record_t *r = &address.records[i];
        if (offset + FERRY_ADDRESS_RECORD_HEADER_SIZE > size)
            fuzz_fail("record header outside the input");
        if (r->transport_id != data[offset] || r->length != fuzz_get16(data + offset + 2))
            fuzz_fail("record header differs from the input");
        offset += FERRY_ADDRESS_RECORD_HEADER_SIZE;
        if (r->data != data + offset)
            fuzz_fail("record data is not where its header ends");
        if (r->data < data || r->length > size || r->data + r->length > data + size)
            fuzz_fail("record lies outside the input");
        for (size_t b = 0; b < r->length; b++) /* AddressSanitizer checks each read */
            sum += r->data[b];
        offset += r->length;
        if (fy_address_find(&address, r->transport_id) == NULL)
            fuzz_fail("fy_address_find misses a record");
    }
    if (offset != size)
        fuzz_fail("the records do not end at the end of the input");
    for (unsigned i = address.record_count; i < FERRY_ADDRESS_MAX_RECORDS; i++) {
        if (address.records[i].data != NULL || address.records[i].length != 0)
            fuzz_fail("unused record slot not cleared");
    }

    /* re-encode with the writer and compare */
    fy_address_write_header(rebuilt, address.worker_uuid, &address.host, address.pid,
                            (uint16_t)address.record_count);
    offset = FERRY_ADDRESS_HEADER_SIZE;
    for (unsigned i = 0; i < address.record_count; i++) {
        const fy_address_record_t *r = &address.records[i];
        rebuilt[offset] = r->transport_id;
        rebuilt[offset + 1] = 0; /* reserved: the parser accepts only 0 */
        memcpy(rebuilt + offset + 2, &r->length, sizeof(r->length));
        memcpy(rebuilt + offset + FERRY_ADDRESS_RECORD_HEADER_SIZE, r->data, r->length);
        offset += FERRY_ADDRESS_RECORD_HEADER_SIZE + r->length;
    }
    fy_address_finish(rebuilt, (uint16_t)offset);
    if (offset != size || memcmp(rebuilt, data, size) != 0)
        fuzz_fail("re-encoding the parsed address does not give the input");

    /* the parsed address of a re-encoded blob is the same */
    fy_address_t again;
    if (fy_address_parse(rebuilt, offset, &again) != FERRY_OK ||
        again.record_count != address.record_count || again.worker_uuid != address.worker_uuid)
        fuzz_fail("the re-encoded address does not parse the same");

    fuzz_sink = sum; /* keeps the reads */
    return 0;
}
