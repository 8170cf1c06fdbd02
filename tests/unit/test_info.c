/* The introspection API (include/ferry/info.h) through the public headers only, linked with
 * libferry.so and libferry_bootstrap.so as an application would be:
 *   - the transports: self, shm, tcp in order, with their ids and capability bits, the names
 *     of every capability bit, and a worker's facts about the ones it uses;
 *   - the configuration: known variables with their types and defaults, one set in the
 *     environment by ctest (FERRY_WAIT_SPIN_US=7k: its text and its value in effect),
 *     libferry_bootstrap's variables, lookup by name and "did you mean";
 *   - the structures' size member: too small is refused, a larger (newer) one is zeroed past
 *     what this library knows;
 *   - bad input: NULL arguments and indices out of range, truncated and corrupted addresses
 *     (FERRY_ERR_INVALID_ADDRESS, outputs untouched), a malformed record and a record of an
 *     unknown transport inside a valid address.
 * The invalid calls log one warning each (WARN, not ERROR): expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>
#include <ferry/info.h>

/* The address layout (src/wireup/address.h), for forging: u32 magic at 0, u16 version at 4,
 * u16 total length at 6, u16 record count at 60; records after the 64-byte header, each
 * u8 id, u8 0, u16 length, then its bytes. */
#define TI_ADDR_HEADER 64
#define TI_RECORD_HEADER 4

static ferry_context_t *ti_context;
static ferry_worker_t *ti_worker;

static int ti_setup(void **state)
{
    (void)state;
    if (ferry_context_create(NULL, &ti_context) != FERRY_OK)
        return -1;
    return ferry_worker_create(ti_context, NULL, &ti_worker) == FERRY_OK ? 0 : -1;
}

static int ti_teardown(void **state)
{
    (void)state;
    ferry_worker_destroy(ti_worker);
    ferry_context_destroy(ti_context);
    return 0;
}

static ferry_transport_info_t ti_transport(size_t index)
{
    ferry_transport_info_t info = {.size = sizeof(info)};
    assert_int_equal(ferry_transport_query(ti_context, index, &info), FERRY_OK);
    return info;
}

static ferry_config_info_t ti_config(const char *name)
{
    ferry_config_info_t info = {.size = sizeof(info)};
    assert_int_equal(ferry_config_lookup(name, &info), FERRY_OK);
    assert_string_equal(info.name, name);
    return info;
}

/* ---------------------------------------------------------------- version */

static void test_build_options(void **state)
{
    (void)state;
    const char *options = ferry_build_options();
    assert_non_null(options);
    assert_non_null(strstr(options, "compiler: "));
    assert_non_null(strstr(options, "pmix: "));
    assert_non_null(ferry_version_string());
}

/* ---------------------------------------------------------------- transports */

static void test_cap_names(void **state)
{
    (void)state;
    static const struct {
        unsigned cap;
        const char *name;
    } caps[] = {
        {FERRY_TRANSPORT_CAP_AM, "AM"},
        {FERRY_TRANSPORT_CAP_AM_ORDERED, "AM_ORDERED"},
        {FERRY_TRANSPORT_CAP_SAME_HOST, "SAME_HOST"},
        {FERRY_TRANSPORT_CAP_SAME_WORKER, "SAME_WORKER"},
        {FERRY_TRANSPORT_CAP_RMA, "RMA"},
        {FERRY_TRANSPORT_CAP_RMA_ORDERED, "RMA_ORDERED"},
        {FERRY_TRANSPORT_CAP_CMA, "CMA"},
        {FERRY_TRANSPORT_CAP_STREAM, "STREAM"},
    };
    unsigned all = 0;
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        assert_int_equal(__builtin_popcount(caps[i].cap), 1);
        assert_int_equal(all & caps[i].cap, 0);
        all |= caps[i].cap;
        assert_string_equal(ferry_transport_cap_name(caps[i].cap), caps[i].name);
    }
    assert_null(ferry_transport_cap_name(0));
    assert_null(ferry_transport_cap_name(FERRY_TRANSPORT_CAP_AM | FERRY_TRANSPORT_CAP_RMA));
    assert_null(ferry_transport_cap_name(0x80000000u));
}

static void test_transports(void **state)
{
    (void)state;
    assert_int_equal(ferry_transport_count(), 3);

    ferry_transport_info_t self = ti_transport(0);
    assert_string_equal(self.name, "self");
    assert_int_equal(self.id, 1);
    assert_int_equal(self.usable, FERRY_OK);
    assert_string_equal(self.why, "");
    assert_true(self.enabled);
    assert_int_equal(self.caps, FERRY_TRANSPORT_CAP_AM | FERRY_TRANSPORT_CAP_AM_ORDERED |
                                    FERRY_TRANSPORT_CAP_SAME_WORKER |
                                    FERRY_TRANSPORT_CAP_RMA_ORDERED);
    assert_int_equal(self.max_short, 256);
    assert_int_equal(self.max_bcopy, SIZE_MAX);

    /* shm: RMA exactly when cross-memory attach is on (FERRY_SHM_CMA) */
    ferry_transport_info_t shm = ti_transport(1);
    ferry_config_info_t cma = ti_config("FERRY_SHM_CMA");
    assert_string_equal(shm.name, "shm");
    assert_int_equal(shm.id, 2);
    assert_int_equal(shm.usable, FERRY_OK);
    assert_true(shm.enabled);
    assert_int_equal(shm.caps, FERRY_TRANSPORT_CAP_AM | FERRY_TRANSPORT_CAP_AM_ORDERED |
                                   FERRY_TRANSPORT_CAP_SAME_HOST |
                                   (cma.value_bool ? FERRY_TRANSPORT_CAP_RMA : 0));
    assert_true(shm.max_short > 0 && shm.max_short < shm.max_bcopy);
    assert_true(shm.latency_ns > 0 && shm.bandwidth_Bps > 0);

    ferry_transport_info_t tcp = ti_transport(2);
    assert_string_equal(tcp.name, "tcp");
    assert_int_equal(tcp.id, 3);
    assert_int_equal(tcp.usable, FERRY_OK);
    assert_int_equal(tcp.caps, FERRY_TRANSPORT_CAP_AM | FERRY_TRANSPORT_CAP_AM_ORDERED |
                                   FERRY_TRANSPORT_CAP_STREAM);

    /* without a context: the same facts, enabled false */
    ferry_transport_info_t alone = {.size = sizeof(alone)};
    assert_int_equal(ferry_transport_query(NULL, 1, &alone), FERRY_OK);
    assert_string_equal(alone.name, "shm");
    assert_false(alone.enabled);
    assert_int_equal(alone.caps, shm.caps);
}

static void test_worker_describe(void **state)
{
    (void)state;
    char text[FERRY_INFO_TEXT_MAX];
    char tiny[8];

    /* self has nothing to say; shm and tcp describe their part of the worker */
    memset(text, 'x', sizeof(text));
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 0, text, sizeof(text)), FERRY_OK);
    assert_string_equal(text, "");
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 1, text, sizeof(text)), FERRY_OK);
    assert_non_null(strstr(text, "region"));
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 2, text, sizeof(text)), FERRY_OK);
    assert_non_null(strstr(text, "port "));
    /* truncated, still terminated */
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 2, tiny, sizeof(tiny)), FERRY_OK);
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);

    /* a worker of a context that enables self only does not use shm */
    ferry_context_params_t params = {.transports = "self"};
    ferry_context_t *context;
    ferry_worker_t *worker;
    assert_int_equal(ferry_context_create(&params, &context), FERRY_OK);
    assert_int_equal(ferry_worker_create(context, NULL, &worker), FERRY_OK);
    ferry_transport_info_t shm = {.size = sizeof(shm)};
    assert_int_equal(ferry_transport_query(context, 1, &shm), FERRY_OK);
    assert_int_equal(shm.usable, FERRY_OK);
    assert_false(shm.enabled);
    strcpy(text, "untouched");
    assert_int_equal(ferry_worker_transport_describe(worker, 1, text, sizeof(text)),
                     FERRY_ERR_NOT_AVAILABLE);
    assert_string_equal(text, "untouched");
    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
}

/* ---------------------------------------------------------------- configuration */

static void test_config_known(void **state)
{
    (void)state;
    size_t count = ferry_config_count();
    assert_true(count >= 20);

    /* every index, sorted by name, each with a type name, a default and a description */
    const char *previous = "";
    for (size_t i = 0; i < count; i++) {
        ferry_config_info_t info = {.size = sizeof(info)};
        assert_int_equal(ferry_config_query(i, &info), FERRY_OK);
        assert_int_equal(strncmp(info.name, "FERRY_", 6), 0);
        assert_true(strcmp(previous, info.name) < 0);
        assert_string_not_equal(ferry_config_type_name(info.type), "unknown");
        assert_non_null(info.default_value);
        assert_true(strlen(info.description) > 10);
        previous = info.name;
    }

    ferry_config_info_t transports = ti_config("FERRY_TRANSPORTS");
    assert_int_equal(transports.type, FERRY_CONFIG_STRING);
    assert_string_equal(transports.default_value, "all");
    assert_false(transports.from_environment);
    assert_string_equal(transports.environment, "");
    assert_string_equal(transports.value, "all");

    ferry_config_info_t cells = ti_config("FERRY_SHM_RING_CELLS");
    assert_int_equal(cells.type, FERRY_CONFIG_SIZE);
    assert_string_equal(cells.default_value, "256");
    assert_int_equal(cells.value_size, 256);
    assert_string_equal(cells.value, "256");

    ferry_config_info_t cma = ti_config("FERRY_SHM_CMA");
    assert_int_equal(cma.type, FERRY_CONFIG_BOOL);
    assert_string_equal(ferry_config_type_name(cma.type), "bool");

    /* set by ctest: FERRY_WAIT_SPIN_US=7k */
    ferry_config_info_t spin = ti_config("FERRY_WAIT_SPIN_US");
    assert_int_equal(spin.type, FERRY_CONFIG_SIZE);
    assert_string_equal(spin.default_value, "50");
    assert_true(spin.from_environment);
    assert_string_equal(spin.environment, "7k");
    assert_int_equal(spin.value_size, 7 * 1024);
    assert_string_equal(spin.value, "7168");

    /* libferry_bootstrap's variables, registered when it is loaded */
    assert_non_null(ferry_bootstrap_methods_built());
    ferry_config_info_t method = ti_config("FERRY_BOOTSTRAP_METHOD");
    assert_string_equal(method.default_value, "auto");
    ferry_config_info_t timeout = ti_config("FERRY_BOOTSTRAP_TIMEOUT_MS");
    assert_int_equal(timeout.type, FERRY_CONFIG_INT);
    assert_int_equal(timeout.value_int, 30000);
}

static void test_config_unknown(void **state)
{
    (void)state;
    ferry_config_info_t info = {.size = sizeof(info)};
    const char *closest = NULL;

    info.name = "untouched";
    assert_int_equal(ferry_config_lookup("FERRY_LOG_LEVL", &info), FERRY_ERR_NO_ELEM);
    assert_string_equal(info.name, "untouched");
    assert_int_equal(ferry_config_lookup("ferry_log_level", &info), FERRY_ERR_NO_ELEM);
    assert_int_equal(ferry_config_closest("FERRY_LOG_LEVL", &closest), FERRY_OK);
    assert_string_equal(closest, "FERRY_LOG_LEVEL");
    assert_int_equal(ferry_config_closest("ferry_shm_ring_cell", &closest), FERRY_OK);
    assert_string_equal(closest, "FERRY_SHM_RING_CELLS");
    closest = "untouched";
    assert_int_equal(ferry_config_closest("FERRY_SOMETHING_ELSE_ENTIRELY", &closest),
                     FERRY_ERR_NO_ELEM);
    assert_string_equal(closest, "untouched");
}

static void test_config_type_names(void **state)
{
    (void)state;
    assert_string_equal(ferry_config_type_name(FERRY_CONFIG_BOOL), "bool");
    assert_string_equal(ferry_config_type_name(FERRY_CONFIG_INT), "int");
    assert_string_equal(ferry_config_type_name(FERRY_CONFIG_SIZE), "size");
    assert_string_equal(ferry_config_type_name(FERRY_CONFIG_STRING), "string");
    assert_string_equal(ferry_config_type_name((ferry_config_type_t)42), "unknown");
}

/* ---------------------------------------------------------------- structure sizes */

static void test_struct_sizes(void **state)
{
    (void)state;
    /* too small: refused, untouched */
    ferry_transport_info_t small = {.size = sizeof(small) - 1};
    assert_int_equal(ferry_transport_query(NULL, 0, &small), FERRY_ERR_INVALID_PARAM);
    assert_null(small.name);
    ferry_transport_info_t zero = {.size = 0};
    assert_int_equal(ferry_transport_query(NULL, 0, &zero), FERRY_ERR_INVALID_PARAM);
    ferry_config_info_t config = {.size = 8};
    assert_int_equal(ferry_config_query(0, &config), FERRY_ERR_INVALID_PARAM);

    /* larger (a newer header): filled, the rest zeroed, size kept */
    const size_t extra = 24;
    unsigned char *big = malloc(sizeof(ferry_transport_info_t) + extra);
    assert_non_null(big);
    memset(big, 0xa5, sizeof(ferry_transport_info_t) + extra);
    size_t size = sizeof(ferry_transport_info_t) + extra;
    memcpy(big, &size, sizeof(size));
    assert_int_equal(ferry_transport_query(NULL, 0, (ferry_transport_info_t *)big), FERRY_OK);
    ferry_transport_info_t got;
    memcpy(&got, big, sizeof(got));
    assert_int_equal(got.size, size);
    assert_string_equal(got.name, "self");
    for (size_t i = 0; i < extra; i++)
        assert_int_equal(big[sizeof(ferry_transport_info_t) + i], 0);
    free(big);
}

/* ---------------------------------------------------------------- bad input */

static void test_null_and_range(void **state)
{
    (void)state;
    ferry_transport_info_t tinfo = {.size = sizeof(tinfo)};
    ferry_config_info_t cinfo = {.size = sizeof(cinfo)};
    ferry_address_info_t ainfo = {.size = sizeof(ainfo)};
    ferry_address_record_info_t rinfo = {.size = sizeof(rinfo)};
    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    const void *address;
    size_t length;
    char text[64];
    const char *closest;

    assert_int_equal(ferry_worker_address(ti_worker, &address, &length), FERRY_OK);

    assert_int_equal(ferry_transport_query(NULL, 0, NULL), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_transport_query(NULL, ferry_transport_count(), &tinfo),
                     FERRY_ERR_OUT_OF_RANGE);
    assert_int_equal(ferry_transport_query(NULL, FERRY_TRANSPORT_NONE, &tinfo),
                     FERRY_ERR_OUT_OF_RANGE);
    assert_null(tinfo.name);

    assert_int_equal(ferry_worker_transport_describe(NULL, 0, text, sizeof(text)),
                     FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 0, NULL, sizeof(text)),
                     FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 0, text, 0),
                     FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_worker_transport_describe(ti_worker, 3, text, sizeof(text)),
                     FERRY_ERR_OUT_OF_RANGE);

    assert_int_equal(ferry_config_query(0, NULL), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_config_query(ferry_config_count(), &cinfo), FERRY_ERR_OUT_OF_RANGE);
    assert_int_equal(ferry_config_lookup(NULL, &cinfo), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_config_lookup("FERRY_TRANSPORTS", NULL), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_config_closest(NULL, &closest), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_config_closest("FERRY_LOG_LEVL", NULL), FERRY_ERR_INVALID_PARAM);
    assert_null(cinfo.name);

    assert_int_equal(ferry_address_decode(address, length, NULL), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_address_record_decode(address, length, 0, ti_worker, NULL),
                     FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_address_decode(address, length, &ainfo), FERRY_OK);
    assert_int_equal(ferry_address_record_decode(address, length, ainfo.record_count, NULL, &rinfo),
                     FERRY_ERR_OUT_OF_RANGE);
    assert_int_equal(rinfo.length, 0);
    assert_int_equal(ferry_ep_choose(NULL, address, length, &choice), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_ep_choose(ti_worker, address, length, NULL), FERRY_ERR_INVALID_PARAM);
    assert_null(choice.transport);
}

/* Every call that reads an address refuses this one, and leaves its output alone. */
static void ti_expect_invalid(const void *address, size_t length)
{
    ferry_address_info_t ainfo = {.size = sizeof(ainfo), .pid = 777};
    ferry_address_record_info_t rinfo = {.size = sizeof(rinfo), .length = 777};
    ferry_ep_choice_t choice = {.size = sizeof(choice), .record_index = 777};

    assert_int_equal(ferry_address_decode(address, length, &ainfo), FERRY_ERR_INVALID_ADDRESS);
    assert_int_equal(ainfo.pid, 777);
    assert_int_equal(ferry_address_record_decode(address, length, 0, ti_worker, &rinfo),
                     FERRY_ERR_INVALID_ADDRESS);
    assert_int_equal(rinfo.length, 777);
    assert_int_equal(ferry_ep_choose(ti_worker, address, length, &choice),
                     FERRY_ERR_INVALID_ADDRESS);
    assert_int_equal(choice.record_index, 777);
}

static void test_bad_addresses(void **state)
{
    (void)state;
    const void *address;
    size_t length;
    uint8_t copy[1024];

    assert_int_equal(ferry_worker_address(ti_worker, &address, &length), FERRY_OK);
    assert_true(length > TI_ADDR_HEADER && length <= sizeof(copy));

    ti_expect_invalid(NULL, length);
    ti_expect_invalid(address, 0);
    for (size_t cut = 1; cut < length; cut += 7) /* truncated anywhere */
        ti_expect_invalid(address, length - cut);

    memcpy(copy, address, length); /* padded */
    copy[length] = 0;
    ti_expect_invalid(copy, length + 1);

    memcpy(copy, address, length); /* wrong magic */
    copy[0] ^= 0xff;
    ti_expect_invalid(copy, length);

    memcpy(copy, address, length); /* wrong version */
    copy[4] = 0x7f;
    ti_expect_invalid(copy, length);

    memcpy(copy, address, length); /* the first record claims more than there is */
    uint16_t huge = 0xfff0;
    memcpy(copy + TI_ADDR_HEADER + 2, &huge, sizeof(huge));
    ti_expect_invalid(copy, length);

    memcpy(copy, address, length); /* more records than the blob holds */
    copy[60] = (uint8_t)(copy[60] + 1);
    ti_expect_invalid(copy, length);
}

/* An address with the worker's header and these records (id, length, fill byte). */
static size_t ti_forge(uint8_t *buffer, const uint8_t ids[], const uint16_t lengths[], size_t count)
{
    const void *address;
    size_t length;
    size_t offset = TI_ADDR_HEADER;

    assert_int_equal(ferry_worker_address(ti_worker, &address, &length), FERRY_OK);
    memcpy(buffer, address, TI_ADDR_HEADER);
    for (size_t i = 0; i < count; i++) {
        buffer[offset] = ids[i];
        buffer[offset + 1] = 0;
        memcpy(buffer + offset + 2, &lengths[i], sizeof(lengths[i]));
        memset(buffer + offset + TI_RECORD_HEADER, 0x41, lengths[i]);
        offset += TI_RECORD_HEADER + lengths[i];
    }
    uint16_t total = (uint16_t)offset, records = (uint16_t)count;
    memcpy(buffer + 6, &total, sizeof(total));
    memcpy(buffer + 60, &records, sizeof(records));
    return offset;
}

static void test_bad_records(void **state)
{
    (void)state;
    uint8_t buffer[512];
    /* a malformed shm record, a malformed tcp record, an id no transport has, a second shm */
    const uint8_t ids[] = {2, 3, 9, 2};
    const uint16_t lengths[] = {5, 6, 3, 5};
    size_t length = ti_forge(buffer, ids, lengths, 4);

    ferry_address_info_t ainfo = {.size = sizeof(ainfo)};
    assert_int_equal(ferry_address_decode(buffer, length, &ainfo), FERRY_OK);
    assert_int_equal(ainfo.record_count, 4);

    ferry_address_record_info_t shm = {.size = sizeof(shm)};
    assert_int_equal(ferry_address_record_decode(buffer, length, 0, ti_worker, &shm), FERRY_OK);
    assert_int_equal(shm.status, FERRY_ERR_INVALID_ADDRESS);
    assert_string_equal(shm.transport, "shm");
    assert_int_equal(shm.transport_index, 1);
    assert_int_equal(shm.length, 5);
    assert_non_null(strstr(shm.text, "malformed"));
    assert_int_equal(shm.field_count, 0);
    assert_true(shm.considered);
    assert_false(shm.reachable);
    assert_non_null(strstr(shm.why, "malformed"));

    ferry_address_record_info_t tcp = {.size = sizeof(tcp)};
    assert_int_equal(ferry_address_record_decode(buffer, length, 1, ti_worker, &tcp), FERRY_OK);
    assert_int_equal(tcp.status, FERRY_ERR_INVALID_ADDRESS);
    assert_string_equal(tcp.transport, "tcp");
    assert_non_null(strstr(tcp.text, "malformed"));
    assert_false(tcp.reachable);

    ferry_address_record_info_t unknown = {.size = sizeof(unknown)};
    assert_int_equal(ferry_address_record_decode(buffer, length, 2, ti_worker, &unknown), FERRY_OK);
    assert_int_equal(unknown.status, FERRY_ERR_UNSUPPORTED);
    assert_int_equal(unknown.transport_id, 9);
    assert_null(unknown.transport);
    assert_int_equal(unknown.transport_index, FERRY_TRANSPORT_NONE);
    assert_false(unknown.considered);
    assert_non_null(strstr(unknown.why, "id 9"));

    ferry_address_record_info_t second = {.size = sizeof(second)};
    assert_int_equal(ferry_address_record_decode(buffer, length, 3, ti_worker, &second), FERRY_OK);
    assert_false(second.considered);
    assert_non_null(strstr(second.why, "second record"));

    /* the same worker id as ours, but no self record: nothing reaches it */
    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    assert_int_equal(ferry_ep_choose(ti_worker, buffer, length, &choice), FERRY_OK);
    assert_int_equal(choice.status, FERRY_ERR_UNREACHABLE);
    assert_null(choice.transport);
    assert_int_equal(choice.transport_index, FERRY_TRANSPORT_NONE);
    assert_non_null(strstr(choice.reason, "self: no record"));
    assert_non_null(strstr(choice.reason, "shm: malformed"));
    ferry_ep_t *ep = NULL;
    assert_int_equal(ferry_ep_create(ti_worker, buffer, length, NULL, &ep), FERRY_ERR_UNREACHABLE);
}

/* The worker's own address: self reaches it, and is what ferry_ep_create would choose. */
static void test_own_address(void **state)
{
    (void)state;
    const void *address;
    size_t length;

    assert_int_equal(ferry_worker_address(ti_worker, &address, &length), FERRY_OK);
    ferry_address_info_t info = {.size = sizeof(info)};
    assert_int_equal(ferry_address_decode(address, length, &info), FERRY_OK);
    assert_int_equal(info.version, 1);
    assert_int_equal(info.pid, (uint32_t)getpid());
    assert_int_equal(info.record_count, 3);

    ferry_address_record_info_t self = {.size = sizeof(self)};
    assert_int_equal(ferry_address_record_decode(address, length, 0, ti_worker, &self), FERRY_OK);
    assert_string_equal(self.transport, "self");
    assert_int_equal(self.status, FERRY_OK);
    assert_true(self.considered);
    assert_true(self.reachable);
    assert_string_equal(self.why, "");

    /* without a worker: described, not judged */
    ferry_address_record_info_t shm = {.size = sizeof(shm)};
    assert_int_equal(ferry_address_record_decode(address, length, 1, NULL, &shm), FERRY_OK);
    assert_string_equal(shm.transport, "shm");
    assert_false(shm.considered);
    assert_false(shm.reachable);
    assert_string_equal(shm.why, "");
    assert_int_equal(shm.field_count, 2);
    assert_string_equal(shm.fields[0].key, "uid");
    assert_int_equal(strtoul(shm.fields[0].value, NULL, 10), getuid());
    assert_string_equal(shm.fields[1].key, "socket");

    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    assert_int_equal(ferry_ep_choose(ti_worker, address, length, &choice), FERRY_OK);
    assert_int_equal(choice.status, FERRY_OK);
    assert_string_equal(choice.transport, "self");
    assert_int_equal(choice.transport_index, 0);
    assert_int_equal(choice.record_index, 0);
    assert_non_null(strstr(choice.reason, "self is the first"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_options),     cmocka_unit_test(test_cap_names),
        cmocka_unit_test(test_transports),        cmocka_unit_test(test_worker_describe),
        cmocka_unit_test(test_config_known),      cmocka_unit_test(test_config_unknown),
        cmocka_unit_test(test_config_type_names), cmocka_unit_test(test_struct_sizes),
        cmocka_unit_test(test_null_and_range),    cmocka_unit_test(test_bad_addresses),
        cmocka_unit_test(test_bad_records),       cmocka_unit_test(test_own_address),
    };
    return cmocka_run_group_tests(tests, ti_setup, ti_teardown);
}
