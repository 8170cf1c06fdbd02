/* src/wireup/address.c: worker addresses written and parsed back, every malformed input
 * rejected with FERRY_ERR_INVALID_ADDRESS (and the output left untouched), the host identity.
 *
 * The rejected inputs log one warning each (WARN, not ERROR): expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <ferry/ferry.h>

#include "progress/worker.h"
#include "wireup/address.h"

/* ---------------------------------------------------------------- building addresses */

typedef struct test_record {
    uint8_t id;
    uint16_t length;
    uint8_t fill; /* every data byte */
} test_record_t;

static const fy_host_id_t test_host = {
    .boot_id = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54,
                0x32, 0x10},
    .net_ns = 4026531840u,
    .pid_ns = 4026531836u,
    .user_ns = 4026531837u,
};

#define TEST_UUID 0x0123456789abcdefull
#define TEST_PID 4242u

/* Write an address with the given records into buffer; returns its length. */
static size_t test_build(uint8_t *buffer, size_t size, const test_record_t *records, size_t count)
{
    size_t offset = FERRY_ADDRESS_HEADER_SIZE;

    assert_true(size >= FERRY_ADDRESS_HEADER_SIZE);
    fy_address_write_header(buffer, TEST_UUID, &test_host, TEST_PID, (uint16_t)count);
    for (size_t i = 0; i < count; i++) {
        assert_true(offset + FERRY_ADDRESS_RECORD_HEADER_SIZE + records[i].length <= size);
        buffer[offset] = records[i].id;
        buffer[offset + 1] = 0;
        memcpy(buffer + offset + 2, &records[i].length, sizeof(records[i].length));
        memset(buffer + offset + FERRY_ADDRESS_RECORD_HEADER_SIZE, records[i].fill,
               records[i].length);
        offset += FERRY_ADDRESS_RECORD_HEADER_SIZE + records[i].length;
    }
    fy_address_finish(buffer, (uint16_t)offset);
    return offset;
}

static void test_put16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, sizeof(v));
}

static void test_put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

/* The parse must fail with FERRY_ERR_INVALID_ADDRESS and leave *out as it was. */
static void test_expect_invalid(const void *blob, size_t length)
{
    fy_address_t out, before;
    memset(&out, 0xa5, sizeof(out));
    before = out;
    assert_int_equal(fy_address_parse(blob, length, &out), FERRY_ERR_INVALID_ADDRESS);
    assert_memory_equal(&out, &before, sizeof(out));
}

static const test_record_t test_two_records[] = {
    {.id = 1, .length = 0, .fill = 0},
    {.id = 2, .length = 36, .fill = 0x5a},
};

/* ---------------------------------------------------------------- round trip */

static void test_round_trip(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    fy_address_t a;
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    assert_int_equal(length, FERRY_ADDRESS_HEADER_SIZE + 2 * FERRY_ADDRESS_RECORD_HEADER_SIZE + 36);
    assert_int_equal(fy_address_parse(blob, length, &a), FERRY_OK);
    assert_int_equal(a.version, FERRY_ADDRESS_VERSION);
    assert_true(a.worker_uuid == TEST_UUID);
    assert_int_equal(a.pid, TEST_PID);
    assert_true(fy_host_id_equal(&a.host, &test_host));
    assert_memory_equal(a.host.boot_id, test_host.boot_id, sizeof(test_host.boot_id));
    assert_true(a.host.net_ns == test_host.net_ns);
    assert_true(a.host.pid_ns == test_host.pid_ns);
    assert_true(a.host.user_ns == test_host.user_ns);
    assert_int_equal(a.record_count, 2);

    assert_int_equal(a.records[0].transport_id, 1);
    assert_int_equal(a.records[0].length, 0);
    assert_ptr_equal(a.records[0].data, blob + FERRY_ADDRESS_HEADER_SIZE + 4);
    assert_int_equal(a.records[1].transport_id, 2);
    assert_int_equal(a.records[1].length, 36);
    assert_ptr_equal(a.records[1].data, blob + FERRY_ADDRESS_HEADER_SIZE + 8);
    for (unsigned i = 0; i < 36; i++)
        assert_int_equal(a.records[1].data[i], 0x5a);

    assert_ptr_equal(fy_address_find(&a, 1), &a.records[0]);
    assert_ptr_equal(fy_address_find(&a, 2), &a.records[1]);
    assert_null(fy_address_find(&a, 3));
}

static void test_round_trip_no_records(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_HEADER_SIZE];
    fy_address_t a;
    size_t length = test_build(blob, sizeof(blob), NULL, 0);

    assert_int_equal(length, FERRY_ADDRESS_HEADER_SIZE);
    assert_int_equal(fy_address_parse(blob, length, &a), FERRY_OK);
    assert_int_equal(a.record_count, 0);
    assert_null(fy_address_find(&a, 1));
}

static void test_round_trip_max_records(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    test_record_t records[FERRY_ADDRESS_MAX_RECORDS];
    fy_address_t a;

    for (unsigned i = 0; i < FERRY_ADDRESS_MAX_RECORDS; i++)
        records[i] =
            (test_record_t){.id = (uint8_t)(10 + i), .length = (uint16_t)i, .fill = (uint8_t)i};
    size_t length = test_build(blob, sizeof(blob), records, FERRY_ADDRESS_MAX_RECORDS);
    assert_int_equal(fy_address_parse(blob, length, &a), FERRY_OK);
    assert_int_equal(a.record_count, FERRY_ADDRESS_MAX_RECORDS);
    for (unsigned i = 0; i < FERRY_ADDRESS_MAX_RECORDS; i++) {
        assert_int_equal(a.records[i].transport_id, 10 + i);
        assert_int_equal(a.records[i].length, i);
        assert_true(a.records[i].data >= blob && a.records[i].data + i <= blob + length);
    }
}

/* The address of a real worker parses, and names this process and host. */
static void test_worker_address(void **state)
{
    (void)state;
    ferry_context_t *context;
    ferry_worker_t *worker;
    const void *blob;
    size_t length;
    fy_address_t a;
    fy_host_id_t host;

    assert_int_equal(ferry_context_create(NULL, &context), FERRY_OK);
    assert_int_equal(ferry_worker_create(context, NULL, &worker), FERRY_OK);
    assert_int_equal(ferry_worker_address(worker, &blob, &length), FERRY_OK);
    assert_int_equal(fy_address_parse(blob, length, &a), FERRY_OK);
    assert_true(a.worker_uuid == worker->uuid);
    assert_int_equal(a.pid, (uint32_t)getpid());
    assert_int_equal(fy_host_id_read(&host), FERRY_OK);
    assert_true(fy_host_id_equal(&a.host, &host));
    assert_int_equal(a.record_count, worker->tl_active_count);
    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
}

/* ---------------------------------------------------------------- bad inputs */

static void test_null_and_empty(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    test_expect_invalid(NULL, length);
    test_expect_invalid(NULL, 0);
    test_expect_invalid(blob, 0);
}

static void test_truncated(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    /* prefixes cut inside the header, in a record header, in record data */
    const size_t cuts[] = {1,
                           4,
                           6,
                           8,
                           32,
                           FERRY_ADDRESS_HEADER_SIZE - 1,
                           FERRY_ADDRESS_HEADER_SIZE,
                           FERRY_ADDRESS_HEADER_SIZE + 2,
                           FERRY_ADDRESS_HEADER_SIZE + 4,
                           FERRY_ADDRESS_HEADER_SIZE + 6,
                           length - 10,
                           length - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        test_expect_invalid(blob, cuts[i]);
}

static void test_wrong_magic(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    test_put32(blob, FERRY_ADDRESS_MAGIC ^ 0x100u);
    test_expect_invalid(blob, length);
    test_put32(blob, 0);
    test_expect_invalid(blob, length);
}

static void test_wrong_version(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    test_put16(blob + 4, FERRY_ADDRESS_VERSION + 1);
    test_expect_invalid(blob, length);
    test_put16(blob + 4, 0);
    test_expect_invalid(blob, length);
}

static void test_total_length_mismatch(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    test_put16(blob + 6, (uint16_t)(length + 1)); /* says more than given */
    test_expect_invalid(blob, length);
    test_put16(blob + 6, (uint16_t)(length - 1)); /* says less than given */
    test_expect_invalid(blob, length);
    test_put16(blob + 6, 0);
    test_expect_invalid(blob, length);
}

static void test_record_count_too_high(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    test_record_t records[FERRY_ADDRESS_MAX_RECORDS + 1];

    for (unsigned i = 0; i <= FERRY_ADDRESS_MAX_RECORDS; i++)
        records[i] = (test_record_t){.id = (uint8_t)(i + 1), .length = 1, .fill = 0};
    /* 9 well-formed records: one too many */
    size_t length = test_build(blob, sizeof(blob), records, FERRY_ADDRESS_MAX_RECORDS + 1);
    test_expect_invalid(blob, length);

    /* a count far beyond the bytes given */
    length = test_build(blob, sizeof(blob), test_two_records, 2);
    test_put16(blob + 60, 0xffff);
    test_expect_invalid(blob, length);

    /* the reserved bytes after the count must be 0 */
    length = test_build(blob, sizeof(blob), test_two_records, 2);
    test_put16(blob + 62, 1);
    test_expect_invalid(blob, length);
}

static void test_record_count_too_low(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    /* says 1 record: the second one becomes trailing bytes */
    test_put16(blob + 60, 1);
    test_expect_invalid(blob, length);
    /* says 3: the third record header is missing */
    test_put16(blob + 60, 3);
    test_expect_invalid(blob, length);
}

static void test_record_past_the_end(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);
    size_t second = FERRY_ADDRESS_HEADER_SIZE + FERRY_ADDRESS_RECORD_HEADER_SIZE;

    /* the last record claims one byte more than is left */
    test_put16(blob + second + 2, 37);
    test_expect_invalid(blob, length);
    /* ... or the most a u16 can say */
    test_put16(blob + second + 2, 0xffff);
    test_expect_invalid(blob, length);
    /* the first record swallows the second one's header and runs past the end */
    test_put16(blob + second + 2, 36);
    test_put16(blob + FERRY_ADDRESS_HEADER_SIZE + 2, 41);
    test_expect_invalid(blob, length);
}

static void test_record_header_truncated(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    /* one record announced, only 2 of its 4 header bytes present (total length consistent) */
    size_t length = test_build(blob, sizeof(blob), NULL, 0);
    test_put16(blob + 60, 1);
    blob[length] = 1;
    blob[length + 1] = 0;
    length += 2;
    test_put16(blob + 6, (uint16_t)length);
    test_expect_invalid(blob, length);
}

static void test_trailing_bytes(void **state)
{
    (void)state;
    uint8_t blob[FERRY_ADDRESS_MAX_SIZE];
    size_t length = test_build(blob, sizeof(blob), test_two_records, 2);

    /* bytes after the last record, with the total length saying so */
    for (size_t extra = 1; extra <= 5; extra++) {
        memset(blob + length, 0, extra);
        test_put16(blob + 6, (uint16_t)(length + extra));
        test_expect_invalid(blob, length + extra);
    }
    /* no records, but bytes after the header */
    length = test_build(blob, sizeof(blob), NULL, 0);
    test_put16(blob + 6, (uint16_t)(length + 4));
    memset(blob + length, 0, 4);
    test_expect_invalid(blob, length + 4);
}

/* ---------------------------------------------------------------- host identity */

static void test_host_id(void **state)
{
    (void)state;
    fy_host_id_t a, b, c;
    static const uint8_t zero[16] = {0};

    memset(&a, 0, sizeof(a));
    memset(&b, 0xff, sizeof(b));
    assert_int_equal(fy_host_id_read(&a), FERRY_OK);
    assert_int_equal(fy_host_id_read(&b), FERRY_OK);
    assert_true(fy_host_id_equal(&a, &a));
    assert_true(fy_host_id_equal(&a, &b));
    assert_memory_equal(&a.boot_id, &b.boot_id, sizeof(a.boot_id));
    assert_memory_not_equal(a.boot_id, zero, sizeof(zero)); /* a boot id was read */
    assert_true(a.net_ns != 0 && a.pid_ns != 0 && a.user_ns != 0);

    /* each field on its own makes another host */
    c = a;
    c.boot_id[15] ^= 1;
    assert_false(fy_host_id_equal(&a, &c));
    c = a;
    c.net_ns++;
    assert_false(fy_host_id_equal(&a, &c));
    c = a;
    c.pid_ns++;
    assert_false(fy_host_id_equal(&a, &c));
    c = a;
    c.user_ns++;
    assert_false(fy_host_id_equal(&a, &c));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_no_records),
        cmocka_unit_test(test_round_trip_max_records),
        cmocka_unit_test(test_worker_address),
        cmocka_unit_test(test_null_and_empty),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_wrong_version),
        cmocka_unit_test(test_total_length_mismatch),
        cmocka_unit_test(test_record_count_too_high),
        cmocka_unit_test(test_record_count_too_low),
        cmocka_unit_test(test_record_past_the_end),
        cmocka_unit_test(test_record_header_truncated),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_host_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
