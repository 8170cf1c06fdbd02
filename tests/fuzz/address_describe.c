/* Fuzz the introspection of worker addresses (include/ferry/info.h) on arbitrary bytes: the
 * public calls that hand a peer's address to each transport's record_describe and
 * record_fields (src/transport/{self,shm,tcp}) and to the endpoint choice.
 *
 * For an input ferry_address_decode accepts, every record is decoded without a worker and
 * from a real worker of this process (all transports enabled), and ferry_ep_choose decides.
 * What is checked (a violation aborts): every text is NUL-terminated inside its array; at most
 * FERRY_INFO_FIELDS_MAX fields, each key a non-empty word; a record is reachable only when
 * considered, has a reason exactly when it is not reachable (given a worker), and none without
 * a worker; a malformed record is never reachable; the choice names a record that is present,
 * of its transport and reachable, and a reason; "unreachable" means no record is reachable.
 *
 * Seeds (tests/fuzz/corpus/address_describe/): an address of self, shm and tcp written by
 * `ferry_info -a`, one with malformed shm and tcp records, and one with an unknown id. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/ferry.h>
#include <ferry/info.h>

#include "fuzz_common.h"

static ferry_context_t *fuzz_context;
static ferry_worker_t *fuzz_worker;

static void fuzz_text(const char *text, size_t size, const char *what)
{
    if (memchr(text, '\0', size) == NULL)
        fuzz_fail(what);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Every rejected input logs a warning: keep the fuzzer's output readable. */
    setenv("FERRY_LOG_LEVEL", "error", 1);
    if (ferry_context_create(NULL, &fuzz_context) != FERRY_OK ||
        ferry_worker_create(fuzz_context, NULL, &fuzz_worker) != FERRY_OK)
        fuzz_fail("no context or worker");
    return 0;
}

/* Record index decoded from worker (may be NULL), checked; returns it. */
static ferry_address_record_info_t fuzz_record(const uint8_t *data, size_t size, size_t index,
                                               ferry_worker_t *worker)
{
    ferry_address_record_info_t r = {.size = sizeof(r)};
    if (ferry_address_record_decode(data, size, index, worker, &r) != FERRY_OK)
        fuzz_fail("ferry_address_record_decode refused a record of a decoded address");
    fuzz_text(r.text, sizeof(r.text), "record text not terminated");
    fuzz_text(r.why, sizeof(r.why), "record why not terminated");
    if (r.field_count > FERRY_INFO_FIELDS_MAX)
        fuzz_fail("too many fields");
    for (size_t f = 0; f < r.field_count; f++) {
        fuzz_text(r.fields[f].key, sizeof(r.fields[f].key), "field key not terminated");
        fuzz_text(r.fields[f].value, sizeof(r.fields[f].value), "field value not terminated");
        if (r.fields[f].key[0] == '\0' || strchr(r.fields[f].key, ' ') != NULL)
            fuzz_fail("a field key is not a word");
    }
    if ((r.transport == NULL) != (r.transport_index == FERRY_TRANSPORT_NONE))
        fuzz_fail("transport name and index disagree");
    if (r.status != FERRY_OK && r.field_count != 0)
        fuzz_fail("fields of a malformed or unknown record");
    if (r.reachable && (!r.considered || r.status != FERRY_OK))
        fuzz_fail("reachable, yet not considered or malformed");
    if (worker == NULL && (r.considered || r.why[0] != '\0'))
        fuzz_fail("judged without a worker");
    if (worker != NULL && r.reachable != (r.why[0] == '\0'))
        fuzz_fail("a reason for a reachable record, or none for an unreachable one");
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ferry_address_info_t info = {.size = sizeof(info)};
    bool any_reachable = false;

    if (ferry_address_decode(data, size, &info) != FERRY_OK)
        return 0;
    for (size_t i = 0; i < info.record_count; i++) {
        fuzz_record(data, size, i, NULL);
        any_reachable |= fuzz_record(data, size, i, fuzz_worker).reachable;
    }

    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    if (ferry_ep_choose(fuzz_worker, data, size, &choice) != FERRY_OK)
        fuzz_fail("ferry_ep_choose refused a decoded address");
    fuzz_text(choice.reason, sizeof(choice.reason), "choice reason not terminated");
    if (choice.reason[0] == '\0')
        fuzz_fail("a choice without a reason");
    if (choice.status == FERRY_OK) {
        if (choice.transport == NULL || choice.record_index >= info.record_count)
            fuzz_fail("a choice without a transport or a record");
        ferry_address_record_info_t r = fuzz_record(data, size, choice.record_index, fuzz_worker);
        if (!r.reachable || r.transport_index != choice.transport_index)
            fuzz_fail("the chosen record is not reachable, or of another transport");
    } else if (choice.status != FERRY_ERR_UNREACHABLE || choice.transport != NULL ||
               any_reachable) {
        fuzz_fail("unreachable, yet a record is reachable (or a bad status)");
    }
    return 0;
}
