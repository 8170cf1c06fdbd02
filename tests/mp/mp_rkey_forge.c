/* Forged keys (issue 11, item 1): a key that its owner did not pack is refused with
 * FERRY_ERR_ACCESS, touches nothing, and the endpoint keeps working.
 *
 * The target T registers three regions, each filled with a pattern of its own and with guard
 * bytes around it: A (registered, read-write-atomic: its key is handed out), B (registered,
 * all access) and C (ferry_mem_alloc, all access: peers map it). B's and C's keys are never
 * handed out: T sends their packed bytes to the initiator only as material to corrupt (the
 * initiator never unpacks them unmodified), as an attacker who guessed everything but the
 * secret would have. The initiator then tries
 *   - every single-bit flip of each of the three keys (3 x 512 keys), and
 *   - 10 000 random keys: a key of one of the three regions with 64 random bits as its
 *     secret (everything else right, as predictable as it is: slot, generation, pid),
 * and with every key that unpacks it does a 64-byte put and get (inline: the target's
 * progress checks them), a 4 KiB put and get (cross-memory attach on shm), an atomic
 * fetch-add, and ferry_rkey_ptr. Every one must fail with FERRY_ERR_ACCESS (an unpack may
 * refuse a flipped key earlier: FERRY_ERR_INVALID_ADDRESS for a broken format,
 * FERRY_ERR_ACCESS for another owner), a refused get leaves its buffer untouched, and after
 * each group T checks every byte of B and C and all guards, and a put and a get through A's
 * real key work (every byte checked). Run over shm (cross-memory attach on, then
 * FERRY_SHM_CMA=off) and tcp. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "ft.h"
#include "ft_rma.h"

enum { FG_TAG_CMD = 0x46434d44, FG_TAG_ACK = 0x4641434b };
enum { FG_CMD_VERIFY = 1, FG_CMD_DONE };
enum { FG_INITIATOR = 31, FG_TARGET = 32 };
enum { FG_A, FG_B, FG_C, FG_REGIONS };

#define FG_LENGTH 8192u
#define FG_GUARD 256u
#define FG_GUARD_BYTE 0x5a
#define FG_SMALL 64u   /* below FERRY_SHM_CMA_MIN: inline, performed by T's progress */
#define FG_LARGE 4096u /* cross-memory attach on shm when it is allowed */
#define FG_SENTINEL 0xe7
#define FG_RANDOM_KEYS 10000u
#define FG_KEY_MAX 256
#define FG_TIMEOUT_MS 30000

static const char *const fg_names[FG_REGIONS] = {
    "A (handed out)", "B (registered, never handed out)", "C (allocated, never handed out)"};

static uint64_t fg_seed(unsigned id)
{
    return ft_pattern_seed(FG_TARGET, 0xf0f00000u + id, FG_LENGTH);
}

/* What the initiator writes into A through its real key in check number n. */
static uint64_t fg_check_seed(uint64_t n)
{
    return ft_pattern_seed(FG_INITIATOR, n, FG_LARGE);
}

/* ------------------------------------------------------------------ the target */

typedef struct fg_region {
    uint8_t *block; /* registered: guard, region, guard */
    uint8_t *base;
    ferry_mem_t *mem;
} fg_region_t;

static void fg_region_create(fg_region_t *r, unsigned id, ferry_context_t *context)
{
    if (id == FG_C) {
        void *ptr = NULL;
        FT_CHECK_OK(ferry_mem_alloc(context, FG_LENGTH, FERRY_ACCESS_ALL, &r->mem, &ptr));
        r->block = NULL;
        r->base = ptr;
    } else {
        r->block = aligned_alloc(64, FG_GUARD + FG_LENGTH + FG_GUARD);
        FT_CHECK(r->block != NULL, "out of memory");
        r->base = r->block + FG_GUARD;
        memset(r->block, FG_GUARD_BYTE, FG_GUARD);
        memset(r->base + FG_LENGTH, FG_GUARD_BYTE, FG_GUARD);
        ferry_iov_t iov = {.buffer = r->base, .length = FG_LENGTH};
        FT_CHECK_OK(ferry_mem_register(context, &iov, 1, FERRY_ACCESS_ALL, 0, &r->mem));
    }
    ft_pattern_fill(r->base, FG_LENGTH, fg_seed(id), 0);
}

static void fg_region_verify(const fg_region_t *r, unsigned id, uint64_t check, const char *when)
{
    char what[160];
    snprintf(what, sizeof(what), "target, %s: region %s", when, fg_names[id]);
    if (id == FG_A && check > 0) {
        /* the initiator's last check wrote its bytes at the start of A */
        ft_pattern_check(r->base, FG_LARGE, fg_check_seed(check), 0, what);
        ft_pattern_check(r->base + FG_LARGE, FG_LENGTH - FG_LARGE, fg_seed(id), FG_LARGE, what);
    } else {
        ft_pattern_check(r->base, FG_LENGTH, fg_seed(id), 0, what);
    }
    if (r->block == NULL)
        return;
    for (size_t g = 0; g < FG_GUARD; g++) {
        FT_CHECK(r->block[g] == FG_GUARD_BYTE && r->base[FG_LENGTH + g] == FG_GUARD_BYTE,
                 "%s: a guard byte %zu from the region changed", what, g);
    }
}

static int fg_target_role(int chan, void *arg)
{
    static fg_region_t r[FG_REGIONS];
    ft_ferry_t f;
    uint64_t check = 0;
    (void)arg;

#ifdef PR_SET_PTRACER
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* cross-memory attach (Yama) */
#endif
    ft_ferry_init(&f, NULL, NULL);
    for (unsigned i = 0; i < FG_REGIONS; i++)
        fg_region_create(&r[i], i, f.context);
    ft_send_address(chan, f.worker);
    for (unsigned i = 0; i < FG_REGIONS; i++)
        ft_rkey_send(chan, r[i].mem);
    for (;;) {
        ft_token_t t;
        ft_progress_until_token(f.worker, chan, FG_TAG_CMD, 120000, &t);
        if (t.v[0] == FG_CMD_DONE)
            break;
        check = t.v[1];
        for (unsigned i = 0; i < FG_REGIONS; i++)
            fg_region_verify(&r[i], i, t.v[1], "after a group of forged keys");
        ft_chan_send_token(chan, FG_TAG_ACK, t.v[0], t.v[1], 0, 0);
    }
    /* the initiator closed its endpoint: progress until the close is through */
    ft_progress_for_ms(f.worker, 50);
    for (unsigned i = 0; i < FG_REGIONS; i++) {
        fg_region_verify(&r[i], i, check, "at the end");
        FT_CHECK_OK(ferry_mem_deregister(r[i].mem));
        free(r[i].block);
    }
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ the initiator */

typedef struct fg {
    ft_ferry_t f;
    ft_peer_t t;
    ferry_ep_t *ep;
    uint8_t key[FG_REGIONS][FG_KEY_MAX];
    size_t klen[FG_REGIONS];
    ferry_rkey_t *a; /* A's real key */
    uint64_t checks;
    /* counts */
    uint64_t keys, refused_invalid, refused_owner, uses;
    uint8_t data[FG_LARGE];
    uint8_t got[FG_LARGE];
} fg_t;

/* The endpoint still works (a put and a get through A's real key, every byte checked) and T
 * finds B, C and every guard untouched. */
static void fg_usable(fg_t *g, const char *group)
{
    char what[160];
    uint64_t n = ++g->checks;
    snprintf(what, sizeof(what), "A's real key after %s", group);
    ft_pattern_fill(g->data, FG_LARGE, fg_check_seed(n), 0);
    ft_rma_op_t put = ft_rma_put(g->data, FG_LARGE, 0);
    ft_rma_expect(g->f.worker, g->ep, g->a, &put, FERRY_OK, what);
    memset(g->got, 0, sizeof(g->got));
    ft_rma_op_t get = ft_rma_get(g->got, FG_LARGE, 0);
    ft_rma_expect(g->f.worker, g->ep, g->a, &get, FERRY_OK, what);
    ft_pattern_check(g->got, FG_LARGE, fg_check_seed(n), 0, what);
    ft_chan_send_token(g->t.chan, FG_TAG_CMD, FG_CMD_VERIFY, n, 0, 0);
    ft_token_t t;
    ft_progress_until_token(g->f.worker, g->t.chan, FG_TAG_ACK, FG_TIMEOUT_MS, &t);
    FT_CHECK(t.v[1] == n, "T acknowledged check %llu, expected %llu", (unsigned long long)t.v[1],
             (unsigned long long)n);
}

/* One use of a forged key: must end with FERRY_ERR_ACCESS, and a get must not write. */
static void fg_expect_refused(fg_t *g, ferry_rkey_t *rkey, ft_rma_op_t op, const char *key)
{
    char desc[96];
    bool get = op.kind == FT_RMA_GET;
    if (get)
        memset(g->got, FG_SENTINEL, op.length);
    ferry_status_t status = ft_rma_run(g->f.worker, g->ep, rkey, &op, FG_TIMEOUT_MS, NULL);
    FT_CHECK(status == FERRY_ERR_ACCESS, "%s through %s: %s, expected FERRY_ERR_ACCESS",
             ft_rma_describe(&op, desc, sizeof(desc)), key, ferry_status_name(status));
    if (get) {
        for (size_t i = 0; i < op.length; i++)
            FT_CHECK(g->got[i] == FG_SENTINEL, "a refused %s through %s wrote byte %zu",
                     ft_rma_describe(&op, desc, sizeof(desc)), key, i);
    }
    g->uses++;
}

/* Unpack buf; if the key unpacks, every use of it is refused. */
static void fg_try_key(fg_t *g, const uint8_t *buf, size_t len, const char *key)
{
    ferry_rkey_t *rkey = NULL;
    uint64_t result = 0;
    void *ptr = NULL;

    g->keys++;
    ferry_status_t status = ferry_rkey_unpack(g->ep, buf, len, &rkey);
    if (status == FERRY_ERR_INVALID_ADDRESS) {
        g->refused_invalid++;
        return;
    }
    if (status == FERRY_ERR_ACCESS) {
        g->refused_owner++;
        return;
    }
    FT_CHECK(status == FERRY_OK, "ferry_rkey_unpack(%s): %s", key, ferry_status_name(status));
    ft_pattern_fill(g->data, FG_LARGE, ft_pattern_seed(FG_INITIATOR, 0xbad, g->keys), 0);
    fg_expect_refused(g, rkey, ft_rma_put(g->data, FG_SMALL, 0), key);
    fg_expect_refused(g, rkey, ft_rma_get(g->got, FG_SMALL, 0), key);
    fg_expect_refused(g, rkey, ft_rma_put(g->data, FG_LARGE, 8), key);
    fg_expect_refused(g, rkey, ft_rma_get(g->got, FG_LARGE, 8), key);
    fg_expect_refused(g, rkey, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, FG_LARGE, &result), key);
    status = ferry_rkey_ptr(rkey, 0, &ptr);
    FT_CHECK(status == FERRY_ERR_ACCESS || status == FERRY_ERR_UNSUPPORTED,
             "ferry_rkey_ptr(%s): %s, expected FERRY_ERR_ACCESS (or FERRY_ERR_UNSUPPORTED when "
             "nothing can be mapped)",
             key, ferry_status_name(status));
    FT_CHECK(ptr == NULL, "ferry_rkey_ptr(%s) set a pointer", key);
    ferry_rkey_release(rkey);
}

static void fg_flips(fg_t *g, unsigned id)
{
    uint8_t k[FG_KEY_MAX];
    char key[128];
    uint64_t keys = g->keys, invalid = g->refused_invalid, owner = g->refused_owner;
    uint64_t uses = g->uses;

    for (size_t bit = 0; bit < 8 * g->klen[id]; bit++) {
        memcpy(k, g->key[id], g->klen[id]);
        k[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        snprintf(key, sizeof(key), "the key of %s with bit %zu flipped", fg_names[id], bit);
        fg_try_key(g, k, g->klen[id], key);
    }
    snprintf(key, sizeof(key), "single-bit flips of the key of %s", fg_names[id]);
    fg_usable(g, key);
    ft_note("%s: %llu keys; unpack refused %llu (format) and %llu (another owner); %llu uses of "
            "the others, all FERRY_ERR_ACCESS",
            key, (unsigned long long)(g->keys - keys),
            (unsigned long long)(g->refused_invalid - invalid),
            (unsigned long long)(g->refused_owner - owner), (unsigned long long)(g->uses - uses));
}

/* Keys with everything right but the secret (the sealed secret at byte 16: 64 random bits). */
static void fg_random(fg_t *g)
{
    uint8_t k[FG_KEY_MAX];
    uint64_t uses = g->uses, keys = g->keys;
    char key[128];

    for (unsigned n = 0; n < FG_RANDOM_KEYS; n++) {
        unsigned id = n % FG_REGIONS;
        uint64_t secret;
        FT_CHECK(getrandom(&secret, sizeof(secret), 0) == sizeof(secret), "getrandom failed");
        memcpy(k, g->key[id], g->klen[id]);
        memcpy(k + 16, &secret, sizeof(secret));
        snprintf(key, sizeof(key), "random key %u (of %s, secret 0x%016llx)", n, fg_names[id],
                 (unsigned long long)secret);
        fg_try_key(g, k, g->klen[id], key);
        if ((n + 1) % 2500 == 0)
            fg_usable(g, "random keys");
    }
    FT_CHECK(g->keys - keys == FG_RANDOM_KEYS && g->uses - uses == 5ull * FG_RANDOM_KEYS,
             "random keys: %llu unpacked of %u", (unsigned long long)(g->uses - uses) / 5,
             FG_RANDOM_KEYS);
    ft_note("%u random keys: all unpacked, %llu uses, all FERRY_ERR_ACCESS", FG_RANDOM_KEYS,
            (unsigned long long)(g->uses - uses));
}

int main(void)
{
    static fg_t g;
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;

    ft_set_role("initiator");
    ft_watchdog(175);
    ft_files_snapshot(&before);
    ft_peer_spawn(&g.t, "target", fg_target_role, NULL);
    ft_ferry_init(&g.f, NULL, NULL);
    size_t len = ft_recv_address(g.t.chan, address, sizeof(address), FG_TIMEOUT_MS);
    g.ep = ft_ep_create(g.f.worker, address, len, NULL);
    for (unsigned i = 0; i < FG_REGIONS; i++)
        g.klen[i] = ft_rkey_recv(g.t.chan, g.key[i], sizeof(g.key[i]), FG_TIMEOUT_MS);
    FT_CHECK_OK(ferry_rkey_unpack(g.ep, g.key[FG_A], g.klen[FG_A], &g.a));
    if (strcmp(ft_remote_transport(), "shm") == 0) {
        const char *why = NULL;
        if (ft_cma_forced_off())
            ft_note("FERRY_SHM_CMA=off: registered memory is reached through T's progress");
        else if (!ft_cma_usable(g.t.pid, &g, &why))
            ft_note("cross-memory attach is denied here (%s): the target's progress checks "
                    "every key",
                    why);
        else
            ft_note("cross-memory attach works: 4 KiB accesses check T's key table");
    }

    uint64_t start = ft_now_ns();
    fg_usable(&g, "nothing (the first check)");
    for (unsigned id = 0; id < FG_REGIONS; id++)
        fg_flips(&g, id);
    fg_random(&g);
    ft_note("%llu keys tried, %llu uses refused with FERRY_ERR_ACCESS, %llu checks of T's "
            "memory, %.2f s",
            (unsigned long long)g.keys, (unsigned long long)g.uses, (unsigned long long)g.checks,
            (double)(ft_now_ns() - start) / 1e9);

    ferry_rkey_release(g.a);
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(g.ep, 0, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(g.f.worker, 10000, &comp, "the graceful close");
    ft_chan_send_token(g.t.chan, FG_TAG_CMD, FG_CMD_DONE, g.checks, 0, 0);
    ft_peer_expect_exit(&g.t, 30000, 0);
    ferry_ep_destroy(g.ep);
    ft_ferry_fini(&g.f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
