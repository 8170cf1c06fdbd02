/* src/mem/rkey.c and mem.c: packed keys round-trip; every malformed key is rejected with
 * FERRY_ERR_INVALID_ADDRESS; a key unpacked on an endpoint to another process is refused with
 * FERRY_ERR_ACCESS; registrations are cached and range translation is exact.
 *
 * The rejected keys log one warning each (WARN, not ERROR): expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <ferry/ferry.h>

#include "mem/mem.h"

static rkey_packed_t test_key(void)
{
    rkey_packed_t k;
    memset(&k, 0, sizeof(k));
    for (int i = 0; i < 8; i++)
        k.boot_id[i] = (uint8_t)i;
    k.sealed_secret = 0x0123456789abcdefull;
    k.pid = 1234;
    k.index = 7;
    k.generation = 3;
    k.access = FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE;
    k.flags = FERRY_MEM_SINGLE_USE;
    k.length = 1u << 20;
    return k;
}

static void test_roundtrip(void **state)
{
    (void)state;
    uint8_t buf[RKEY_PACKED_SIZE];
    rkey_packed_t in = test_key(), out;
    rkey_encode(&in, buf);
    assert_int_equal(rkey_decode(buf, sizeof(buf), &out), FERRY_OK);
    assert_memory_equal(&in, &out, sizeof(in));
}

/* Corrupt byte offset of a valid key to value: must be rejected. */
static void test_reject(size_t offset, uint8_t value)
{
    uint8_t buf[RKEY_PACKED_SIZE];
    rkey_packed_t in = test_key(), out;
    memset(&out, 0xa5, sizeof(out));
    rkey_encode(&in, buf);
    buf[offset] = value;
    assert_int_equal(rkey_decode(buf, sizeof(buf), &out), FERRY_ERR_INVALID_ADDRESS);
    assert_int_equal(out.pid, 0xa5a5a5a5u); /* output untouched */
}

static void test_bad_keys(void **state)
{
    (void)state;
    uint8_t buf[RKEY_PACKED_SIZE];
    rkey_packed_t in = test_key(), out;
    rkey_encode(&in, buf);
    assert_int_equal(rkey_decode(NULL, sizeof(buf), &out), FERRY_ERR_INVALID_ADDRESS);
    for (size_t len = 0; len < sizeof(buf); len += 7)
        assert_int_equal(rkey_decode(buf, len, &out), FERRY_ERR_INVALID_ADDRESS); /* truncated */
    test_reject(0, 'X');                                                          /* magic */
    test_reject(4, 1);     /* version 1 (keys without a secret) */
    test_reject(6, 63);    /* size */
    test_reject(32, 0);    /* generation 3 -> 0 */
    test_reject(36, 0xff); /* unknown access bits */
    test_reject(41, 0x80); /* unknown flags */
    test_reject(44, 9);    /* memfd number on plain memory */
}

static void test_other_peer(void **state)
{
    (void)state;
    ferry_context_t *ctx;
    ferry_worker_t *w;
    ferry_ep_t *ep;
    ferry_mem_t *mem;
    ferry_rkey_t *rkey;
    const void *addr;
    size_t len, klen;
    void *packed;
    static char region[4096];
    ferry_iov_t iov = {.buffer = region, .length = sizeof(region)};

    assert_int_equal(ferry_context_create(NULL, &ctx), FERRY_OK);
    assert_int_equal(ferry_worker_create(ctx, NULL, &w), FERRY_OK);
    assert_int_equal(ferry_worker_address(w, &addr, &len), FERRY_OK);
    assert_int_equal(ferry_ep_create(w, addr, len, NULL, &ep), FERRY_OK);
    assert_int_equal(ferry_mem_register(ctx, &iov, 1, FERRY_ACCESS_ALL, 0, &mem), FERRY_OK);
    assert_int_equal(ferry_rkey_pack(mem, &packed, &klen), FERRY_OK);
    assert_int_equal(ferry_rkey_unpack(ep, packed, klen, &rkey), FERRY_OK); /* our own key */
    ferry_rkey_release(rkey);
    /* the same key claiming another owner pid: refused */
    rkey_packed_t k;
    assert_int_equal(rkey_decode(packed, klen, &k), FERRY_OK);
    k.pid ^= 1;
    rkey_encode(&k, packed);
    assert_int_equal(ferry_rkey_unpack(ep, packed, klen, &rkey), FERRY_ERR_ACCESS);
    ferry_rkey_buffer_release(packed);

    /* the cache: the same pieces again give the same registration, counted */
    ferry_mem_t *again;
    assert_int_equal(ferry_mem_register(ctx, &iov, 1, FERRY_ACCESS_ALL, 0, &again), FERRY_OK);
    assert_ptr_equal(again, mem);
    assert_int_equal(ferry_mem_deregister(again), FERRY_OK);
    /* bad registrations */
    assert_int_equal(ferry_mem_register(ctx, &iov, 0, FERRY_ACCESS_ALL, 0, &again),
                     FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_mem_register(ctx, &iov, 1, 0x80, 0, &again), FERRY_ERR_INVALID_PARAM);
    assert_int_equal(ferry_mem_deregister(mem), FERRY_OK);
    ferry_ep_destroy(ep);
    ferry_worker_destroy(w);
    ferry_context_destroy(ctx);
}

static void test_translate(void **state)
{
    (void)state;
    ferry_context_t *ctx;
    ferry_mem_t *mem;
    static char a[10], b[1], c[100];
    ferry_iov_t iov[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {c, sizeof(c)}};
    ferry_iov_t out[4];
    uint64_t done;

    assert_int_equal(ferry_context_create(NULL, &ctx), FERRY_OK);
    assert_int_equal(ferry_mem_register(ctx, iov, 3, FERRY_ACCESS_ALL, 0, &mem), FERRY_OK);
    assert_int_equal(ferry_mem_length(mem), 111);
    assert_int_equal(mem_translate(mem, 9, 3, out, 4, &done), 3);
    assert_int_equal(done, 3);
    assert_ptr_equal(out[0].buffer, a + 9);
    assert_int_equal(out[0].length, 1);
    assert_ptr_equal(out[1].buffer, b);
    assert_ptr_equal(out[2].buffer, c);
    assert_int_equal(out[2].length, 1);
    assert_int_equal(mem_translate(mem, 11, 100, out, 4, &done), 1);
    assert_int_equal(done, 100);
    assert_true(mem_range_ok(111, 111, 0));
    assert_false(mem_range_ok(111, 111, 1));
    assert_false(mem_range_ok(111, UINT64_MAX, 2)); /* offset + length overflows */
    assert_false(mem_range_ok(111, 1, UINT64_MAX));
    assert_int_equal(ferry_mem_deregister(mem), FERRY_OK);
    ferry_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_bad_keys),
        cmocka_unit_test(test_other_peer),
        cmocka_unit_test(test_translate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
