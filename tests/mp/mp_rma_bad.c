/* Bad one-sided input between processes: a clear status, and nothing touched.
 *
 * The parent (initiator) works on memory of a forked target T and of a second peer O. T owns
 * registered regions (read-write, read-only, all access, one at an odd address, one of two
 * pieces where an 8-byte word straddles them, single-use ones) and ferry_mem_alloc regions
 * (read-write, read-only, all access, single-use), each filled with a pattern of its own,
 * registered ones with guard bytes around them (outside the registration), allocated ones with
 * the tail of their last page (outside the region) zero.
 *
 *   keys        truncated (0, 1, 32, 63, 65 bytes), NULL, and corrupted (magic, version, size,
 *               generation 0, unknown access or flag bits, an allocation's fields on a registered
 *               region's key): ferry_rkey_unpack -> FERRY_ERR_INVALID_ADDRESS (NULL:
 *               FERRY_ERR_INVALID_PARAM), *rkey_p untouched;
 *   forged      well-formed keys that claim what the owner did not grant: write access to a
 *               read-only region, 4 KiB (registered) or 50 bytes (allocated: still inside its
 *               last page) more than the region has, another generation: the operation gets
 *               FERRY_ERR_ACCESS and touches nothing; another descriptor number in an allocated
 *               region's key: FERRY_ERR_ACCESS (an edited key claims another secret);
 *   deregistered after a put through its key succeeded (paths warmed up), the region is
 *               deregistered: put and get get FERRY_ERR_ACCESS (returned or in the completion),
 *               the memory is untouched; the same buffer registered again has a new key that
 *               works, the old key still fails;
 *   single use  a refused operation (out of range) does not use the region up; one operation
 *               (a 1 MiB put, or a putv of two ranges) works; the next put and get get
 *               FERRY_ERR_ACCESS;
 *   ranges      one byte past the end (put, get, 0 bytes at length + 1, a putv/getv whose last
 *               range ends one byte late), offset + length overflowing 64 bits (put, get,
 *               putv, atomics), local pieces whose total overflows: FERRY_ERR_ACCESS (the
 *               overflowing local total: FERRY_ERR_INVALID_PARAM);
 *   access      put/putv and atomics through a read-only key, atomics through a read-write key
 *               without REMOTE_ATOMIC: FERRY_ERR_ACCESS, a get through the read-only key works;
 *   atomics     misaligned offsets (8-byte at 4, 4-byte at 2 and 1), sizes 2 and 16, a post of
 *               SWAP, a fetch of AND, a NULL result: FERRY_ERR_INVALID_PARAM; an aligned offset
 *               of a region registered at an odd address, and an 8-byte word straddling two
 *               pieces of a registration: FERRY_ERR_INVALID_PARAM from the target;
 *   peers       a key of T unpacked on the endpoint to O, and O's on the endpoint to T:
 *               FERRY_ERR_ACCESS; a key used on another endpoint than its own: an error, and
 *               neither peer's memory changes.
 * After each refused operation (and each group of refused unpacks) the endpoints still work (a
 * put and a get through T's read-write keys and O's key, every byte checked), and T and O check
 * every byte of their regions and guards. The groups run in this order: those of the issue's
 * list first, then single use, then forged keys. Run on both paths (normal and
 * FERRY_SHM_CMA=off). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ft.h"
#include "ft_rma.h"

enum { BD_TAG_CMD = 0x42434d44, BD_TAG_ACK = 0x4241434b };
enum { BD_CMD_VERIFY = 1, BD_CMD_DEREG, BD_CMD_REREG, BD_CMD_CHECK_SINGLE, BD_CMD_DONE };
enum { BD_INITIATOR = 21, BD_TARGET = 22, BD_OTHER = 23 };

/* The packed key's layout (src/mem/mem.h): u32 magic at 0, u16 version at 4, u16 size at 6,
 * boot id (8 bytes) at 8, u64 secret at 16, u32 pid at 24, u32 slot at 28, u32 generation at 32,
 * u32 access at 36, u32 flags at 40, u32 alloc fd at 44, u64 length at 48, u64 alloc inode at 56.
 */
#define BD_KEY_VERSION 4
#define BD_KEY_SIZE 6
#define BD_KEY_BOOT_ID 8
#define BD_KEY_PID 24
#define BD_KEY_GENERATION 32
#define BD_KEY_ACCESS 36
#define BD_KEY_FLAGS 40
#define BD_KEY_ALLOC_FD 44
#define BD_KEY_LENGTH 48
#define BD_KEY_MAX 256

#define MIB (1024u * 1024u)
#define BD_GUARD 256u
#define BD_GUARD_BYTE 0xc3
#define BD_SCRATCH_OFFSET 1000u
#define BD_SCRATCH_LENGTH 3000u
#define BD_TIMEOUT_MS 30000

typedef enum bd_id {
    RG_RW,
    RG_RO,
    RG_AT,
    RG_ODD,
    RG_SPLIT,
    AL_RW,
    AL_RO,
    AL_AT,
    RG_DEREG,
    AL_DEREG,
    RG_SINGLE,
    RG_SINGLE2,
    AL_SINGLE,
    BD_REGIONS,
} bd_id_t;

typedef struct bd_spec {
    const char *name;
    bool alloc;
    unsigned access;
    unsigned flags;
    size_t len[2]; /* pieces (second 0: one piece) */
    bool odd;      /* registered at an odd address */
} bd_spec_t;

#define RW (FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE)
static const bd_spec_t bd_specs[BD_REGIONS] = {
    [RG_RW] = {"registered read-write", false, RW, 0, {65536, 0}, false},
    [RG_RO] = {"registered read-only", false, FERRY_ACCESS_REMOTE_READ, 0, {4096, 0}, false},
    [RG_AT] = {"registered all-access", false, FERRY_ACCESS_ALL, 0, {4096, 0}, false},
    [RG_ODD] = {"registered at an odd address", false, FERRY_ACCESS_ALL, 0, {64, 0}, true},
    [RG_SPLIT] = {"registered in two pieces (4 + 60)", false, FERRY_ACCESS_ALL, 0, {4, 60}, false},
    [AL_RW] = {"allocated read-write", true, RW, 0, {65536 + 100, 0}, false},
    [AL_RO] = {"allocated read-only", true, FERRY_ACCESS_REMOTE_READ, 0, {4000, 0}, false},
    [AL_AT] = {"allocated all-access", true, FERRY_ACCESS_ALL, 0, {4096, 0}, false},
    [RG_DEREG] = {"registered, to deregister", false, RW, 0, {8192, 0}, false},
    [AL_DEREG] = {"allocated, to deregister", true, RW, 0, {8192, 0}, false},
    [RG_SINGLE] = {"registered single-use", false, RW, FERRY_MEM_SINGLE_USE, {MIB, 0}, false},
    [RG_SINGLE2] =
        {"registered single-use (putv)", false, RW, FERRY_MEM_SINGLE_USE, {4096, 0}, false},
    [AL_SINGLE] = {"allocated single-use", true, RW, FERRY_MEM_SINGLE_USE, {MIB, 0}, false},
};

static size_t bd_length(bd_id_t id)
{
    return bd_specs[id].len[0] + bd_specs[id].len[1];
}

static uint64_t bd_bg_seed(unsigned who, unsigned id)
{
    return ft_pattern_seed(who, 0xb6b60000u + id, 0);
}

/* What the initiator writes in a case (and the owner then finds). */
static uint64_t bd_case_seed(unsigned c)
{
    return ft_pattern_seed(BD_INITIATOR, c, BD_SCRATCH_LENGTH);
}

static uint64_t bd_single_seed(unsigned id)
{
    return ft_pattern_seed(BD_INITIATOR, 0x51000000u + id, 0);
}

/* The single-use regions' one successful operation: its remote ranges. */
static size_t bd_single_ranges(bd_id_t id, ferry_remote_iov_t *r)
{
    if (id == RG_SINGLE2) {
        r[0] = (ferry_remote_iov_t){.offset = 3000, .length = 100};
        r[1] = (ferry_remote_iov_t){.offset = 10, .length = 100};
        return 2;
    }
    r[0] = (ferry_remote_iov_t){.offset = 0, .length = MIB}; /* > the fallback's chunk */
    return 1;
}

/* ------------------------------------------------------------------ an owner's regions */

typedef struct bd_piece {
    uint8_t *block; /* malloc'ed (registered) */
    uint8_t *base;
    size_t len;
    size_t guard_lo, guard_hi;
} bd_piece_t;

typedef struct bd_region {
    const char *name;
    unsigned who, id;
    bool alloc, live, kept; /* kept: deregistered, its memory still checked */
    size_t npieces;
    bd_piece_t piece[2];
    size_t length;
    size_t tail; /* alloc: bytes of the last page after the region */
    ferry_mem_t *mem;
    ferry_iov_t iov[2];
    unsigned access, flags;
} bd_region_t;

static uint8_t *bd_at(bd_region_t *r, uint64_t off, size_t *avail)
{
    for (size_t i = 0; i < r->npieces; i++) {
        if (off < r->piece[i].len) {
            *avail = r->piece[i].len - (size_t)off;
            return r->piece[i].base + off;
        }
        off -= r->piece[i].len;
    }
    ft_fail_at(__FILE__, __LINE__, "offset beyond %s", r->name);
}

static void bd_fill(bd_region_t *r, uint64_t off, uint64_t len, uint64_t seed, uint64_t msg)
{
    while (len > 0) {
        size_t avail;
        uint8_t *p = bd_at(r, off, &avail);
        size_t n = avail < len ? avail : (size_t)len;
        ft_pattern_fill(p, n, seed, msg);
        off += n;
        msg += n;
        len -= n;
    }
}

static void bd_check(bd_region_t *r, uint64_t off, uint64_t len, uint64_t seed, uint64_t msg,
                     const char *what)
{
    char desc[256];
    while (len > 0) {
        size_t avail;
        uint8_t *p = bd_at(r, off, &avail);
        size_t n = avail < len ? avail : (size_t)len;
        snprintf(desc, sizeof(desc), "%s: %s, offset %llu", what, r->name, (unsigned long long)off);
        ft_pattern_check(p, n, seed, msg, desc);
        off += n;
        msg += n;
        len -= n;
    }
}

static void bd_region_create(bd_region_t *r, unsigned who, unsigned id, const char *name,
                             bool alloc, unsigned access, unsigned flags, const size_t len[2],
                             bool odd, ferry_context_t *context)
{
    memset(r, 0, sizeof(*r));
    r->name = name;
    r->who = who;
    r->id = id;
    r->alloc = alloc;
    r->access = access;
    r->flags = flags;
    r->npieces = len[1] > 0 ? 2 : 1;
    if (alloc) {
        void *ptr = NULL;
        long page = sysconf(_SC_PAGESIZE);
        FT_CHECK_OK(ferry_mem_alloc(context, len[0], access | flags, &r->mem, &ptr));
        r->piece[0].base = ptr;
        r->piece[0].len = len[0];
        r->tail = (size_t)((len[0] + (size_t)page - 1) & ~((size_t)page - 1)) - len[0];
    } else {
        for (size_t i = 0; i < r->npieces; i++) {
            bd_piece_t *p = &r->piece[i];
            p->len = len[i];
            p->guard_lo = BD_GUARD + (odd ? 1 : 0);
            p->guard_hi = BD_GUARD;
            p->block = aligned_alloc(64, (p->guard_lo + p->len + p->guard_hi + 63) & ~63ul);
            FT_CHECK(p->block != NULL, "out of memory");
            p->base = p->block + p->guard_lo;
            memset(p->block, BD_GUARD_BYTE, p->guard_lo);
            memset(p->base + p->len, BD_GUARD_BYTE, p->guard_hi);
            r->iov[i] = (ferry_iov_t){.buffer = p->base, .length = p->len};
        }
        FT_CHECK_OK(ferry_mem_register(context, r->iov, r->npieces, access, flags, &r->mem));
    }
    r->length = len[0] + len[1];
    r->live = true;
    bd_fill(r, 0, r->length, bd_bg_seed(who, id), 0);
}

static void bd_region_verify(bd_region_t *r, const char *when)
{
    if (!r->live && !r->kept)
        return;
    bd_check(r, 0, r->length, bd_bg_seed(r->who, r->id), 0, when);
    for (size_t i = 0; i < r->npieces; i++) {
        bd_piece_t *p = &r->piece[i];
        for (size_t g = 0; g < p->guard_lo; g++)
            FT_CHECK(p->block[g] == BD_GUARD_BYTE,
                     "%s: %s: guard byte %zu before piece %zu is 0x%02x", when, r->name,
                     p->guard_lo - g, i, p->block[g]);
        for (size_t g = 0; g < p->guard_hi; g++)
            FT_CHECK(p->base[p->len + g] == BD_GUARD_BYTE,
                     "%s: %s: guard byte %zu after piece %zu is 0x%02x", when, r->name, g, i,
                     p->base[p->len + g]);
    }
    for (size_t g = 0; g < r->tail; g++)
        FT_CHECK(r->piece[0].base[r->length + g] == 0,
                 "%s: %s: byte %zu after the end of the allocated region (in its last page) is "
                 "0x%02x",
                 when, r->name, g, r->piece[0].base[r->length + g]);
}

static void bd_region_destroy(bd_region_t *r)
{
    if (r->live)
        FT_CHECK_OK(ferry_mem_deregister(r->mem));
    for (size_t i = 0; i < r->npieces; i++)
        free(r->piece[i].block);
    memset(r, 0, sizeof(*r));
}

static void bd_ack(int chan, uint64_t cmd, uint64_t arg)
{
    ft_chan_send_token(chan, BD_TAG_ACK, cmd, arg, 0, 0);
}

/* ------------------------------------------------------------------ T and O */

static int bd_target_role(int chan, void *arg)
{
    static bd_region_t r[BD_REGIONS];
    ft_ferry_t f;
    char when[96];
    (void)arg;

#ifdef PR_SET_PTRACER
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    ft_ferry_init(&f, NULL, NULL);
    for (unsigned i = 0; i < BD_REGIONS; i++)
        bd_region_create(&r[i], BD_TARGET, i, bd_specs[i].name, bd_specs[i].alloc,
                         bd_specs[i].access, bd_specs[i].flags, bd_specs[i].len, bd_specs[i].odd,
                         f.context);
    ft_send_address(chan, f.worker);
    for (unsigned i = 0; i < BD_REGIONS; i++)
        ft_rkey_send(chan, r[i].mem);
    for (;;) {
        ft_token_t t;
        ft_progress_until_token(f.worker, chan, BD_TAG_CMD, 60000, &t);
        switch (t.v[0]) {
        case BD_CMD_VERIFY:
            snprintf(when, sizeof(when), "target, after case %llu", (unsigned long long)t.v[1]);
            if (t.v[2]) {
                /* the usable check wrote the case's bytes into the read-write regions */
                bd_check(&r[RG_RW], BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH, bd_case_seed(t.v[1]), 0,
                         when);
                bd_check(&r[AL_RW], BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH, bd_case_seed(t.v[1]), 0,
                         when);
                bd_fill(&r[RG_RW], BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH,
                        bd_bg_seed(BD_TARGET, RG_RW), BD_SCRATCH_OFFSET);
                bd_fill(&r[AL_RW], BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH,
                        bd_bg_seed(BD_TARGET, AL_RW), BD_SCRATCH_OFFSET);
            }
            for (unsigned i = 0; i < BD_REGIONS; i++)
                bd_region_verify(&r[i], when);
            bd_ack(chan, BD_CMD_VERIFY, t.v[1]);
            break;
        case BD_CMD_DEREG:
            /* the registered one's memory stays (and is checked); the allocated one is freed */
            FT_CHECK_OK(ferry_mem_deregister(r[RG_DEREG].mem));
            r[RG_DEREG].live = false;
            r[RG_DEREG].kept = true;
            FT_CHECK_OK(ferry_mem_deregister(r[AL_DEREG].mem));
            r[AL_DEREG].live = false;
            bd_ack(chan, BD_CMD_DEREG, 0);
            break;
        case BD_CMD_REREG:
            FT_CHECK_OK(ferry_mem_register(f.context, r[RG_DEREG].iov, r[RG_DEREG].npieces,
                                           r[RG_DEREG].access, 0, &r[RG_DEREG].mem));
            r[RG_DEREG].live = true;
            r[RG_DEREG].kept = false;
            ft_rkey_send(chan, r[RG_DEREG].mem);
            break;
        case BD_CMD_CHECK_SINGLE: {
            ferry_remote_iov_t ranges[2];
            bd_id_t id = (bd_id_t)t.v[1];
            size_t n = bd_single_ranges(id, ranges);
            uint64_t msg = 0;
            snprintf(when, sizeof(when), "target: the one operation on %s", r[id].name);
            for (size_t i = 0; i < n; i++) {
                bd_check(&r[id], ranges[i].offset, ranges[i].length, bd_single_seed(id), msg, when);
                bd_fill(&r[id], ranges[i].offset, ranges[i].length, bd_bg_seed(BD_TARGET, id),
                        ranges[i].offset);
                msg += ranges[i].length;
            }
            bd_region_verify(&r[id], when);
            bd_ack(chan, BD_CMD_CHECK_SINGLE, t.v[1]);
            break;
        }
        case BD_CMD_DONE:
            for (unsigned i = 0; i < BD_REGIONS; i++)
                bd_region_destroy(&r[i]);
            ft_ferry_fini(&f);
            return 0;
        default:
            ft_fail_at(__FILE__, __LINE__, "unknown command %llu", (unsigned long long)t.v[0]);
        }
    }
}

static int bd_other_role(int chan, void *arg)
{
    static const size_t len[2] = {4096, 0};
    bd_region_t r;
    ft_ferry_t f;
    char when[96];
    (void)arg;

    ft_ferry_init(&f, NULL, NULL);
    bd_region_create(&r, BD_OTHER, 0, "O's read-write region", false, RW, 0, len, false, f.context);
    ft_send_address(chan, f.worker);
    ft_rkey_send(chan, r.mem);
    for (;;) {
        ft_token_t t;
        ft_progress_until_token(f.worker, chan, BD_TAG_CMD, 60000, &t);
        if (t.v[0] == BD_CMD_DONE)
            break;
        FT_CHECK(t.v[0] == BD_CMD_VERIFY, "O: command %llu", (unsigned long long)t.v[0]);
        snprintf(when, sizeof(when), "O, after case %llu", (unsigned long long)t.v[1]);
        if (t.v[2]) {
            bd_check(&r, BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH, bd_case_seed(t.v[1]), 0, when);
            bd_fill(&r, BD_SCRATCH_OFFSET, BD_SCRATCH_LENGTH, bd_bg_seed(BD_OTHER, 0),
                    BD_SCRATCH_OFFSET);
        }
        bd_region_verify(&r, when);
        bd_ack(chan, BD_CMD_VERIFY, t.v[1]);
    }
    bd_region_destroy(&r);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ the initiator */

typedef struct bd {
    ft_ferry_t f;
    ft_peer_t t, o;
    ferry_ep_t *ep_t, *ep_o;
    uint8_t kb[BD_REGIONS][BD_KEY_MAX]; /* T's packed keys */
    size_t klen[BD_REGIONS];
    ferry_rkey_t *rk[BD_REGIONS];
    uint8_t okb[BD_KEY_MAX];
    size_t oklen;
    ferry_rkey_t *ork;
    unsigned cases;
} bd_t;

static ferry_worker_t *bd_w(bd_t *b)
{
    return b->f.worker;
}

static void bd_command(bd_t *b, ft_peer_t *peer, uint64_t cmd, uint64_t arg, uint64_t arg2)
{
    ft_token_t t;
    ft_chan_send_token(peer->chan, BD_TAG_CMD, cmd, arg, arg2, 0);
    ft_progress_until_token(bd_w(b), peer->chan, BD_TAG_ACK, BD_TIMEOUT_MS, &t);
    FT_CHECK(t.v[0] == cmd && t.v[1] == arg, "%s: ack %llu/%llu for %llu/%llu", peer->name,
             (unsigned long long)t.v[0], (unsigned long long)t.v[1], (unsigned long long)cmd,
             (unsigned long long)arg);
}

static void bd_expect(bd_t *b, ferry_ep_t *ep, ferry_rkey_t *rkey, ft_rma_op_t op,
                      ferry_status_t expected, const char *what);

/* The endpoints still work: put and get the case's bytes through T's read-write keys and O's
 * key; T and O check them and every other byte of their memory. */
static void bd_check_usable(bd_t *b, const char *group, bool note)
{
    unsigned c = ++b->cases;
    uint8_t out[BD_SCRATCH_LENGTH], in[BD_SCRATCH_LENGTH];
    char what[128];
    struct {
        ferry_ep_t *ep;
        ferry_rkey_t *rk;
    } targets[] = {{b->ep_t, b->rk[RG_RW]}, {b->ep_t, b->rk[AL_RW]}, {b->ep_o, b->ork}};
    snprintf(what, sizeof(what), "after %s: a valid put/get", group);
    ft_pattern_fill(out, sizeof(out), bd_case_seed(c), 0);
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        bd_expect(b, targets[i].ep, targets[i].rk, ft_rma_put(out, sizeof(out), BD_SCRATCH_OFFSET),
                  FERRY_OK, what);
        memset(in, 0, sizeof(in));
        bd_expect(b, targets[i].ep, targets[i].rk, ft_rma_get(in, sizeof(in), BD_SCRATCH_OFFSET),
                  FERRY_OK, what);
        ft_pattern_check(in, sizeof(in), bd_case_seed(c), 0, what);
    }
    ft_rma_flush_worker(bd_w(b), BD_TIMEOUT_MS);
    bd_command(b, &b->t, BD_CMD_VERIFY, c, 1);
    bd_command(b, &b->o, BD_CMD_VERIFY, c, 1);
    if (note)
        ft_note("%s: refused as expected; the endpoints still work; T's and O's memory "
                "untouched (%u checks so far)",
                group, b->cases);
}

/* After a group of bad input. */
static void bd_usable(bd_t *b, const char *group)
{
    bd_check_usable(b, group, true);
}

static void bd_expect(bd_t *b, ferry_ep_t *ep, ferry_rkey_t *rkey, ft_rma_op_t op,
                      ferry_status_t expected, const char *what)
{
    ft_rma_expect(bd_w(b), ep, rkey, &op, expected, what);
    if (expected != FERRY_OK)
        bd_check_usable(b, what, false); /* after every refused operation */
}

static void bd_expect_unpack(bd_t *b, ferry_ep_t *ep, const void *buf, size_t len,
                             ferry_status_t expected, const char *what)
{
    ferry_rkey_t *sentinel = (ferry_rkey_t *)(uintptr_t)0x5a5a5a5a, *rkey = sentinel;
    (void)b;
    ferry_status_t status = ferry_rkey_unpack(ep, buf, len, &rkey);
    FT_CHECK(status == expected, "ferry_rkey_unpack(%s, %zu bytes) returned %s, expected %s", what,
             len, ferry_status_name(status), ferry_status_name(expected));
    FT_CHECK(rkey == sentinel, "ferry_rkey_unpack(%s) failed but wrote *rkey_p", what);
}

static void bd_put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static uint32_t bd_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static void bd_put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static void bd_keys(bd_t *b)
{
    uint8_t k[BD_KEY_MAX + 1];
    size_t len = b->klen[RG_RW];
    static const size_t truncated[] = {0, 1, 32};
    for (size_t i = 0; i < sizeof(truncated) / sizeof(truncated[0]); i++)
        bd_expect_unpack(b, b->ep_t, b->kb[RG_RW], truncated[i], FERRY_ERR_INVALID_ADDRESS,
                         "a truncated key");
    bd_expect_unpack(b, b->ep_t, b->kb[RG_RW], len - 1, FERRY_ERR_INVALID_ADDRESS,
                     "a key 1 byte short");
    memcpy(k, b->kb[RG_RW], len);
    k[len] = 0;
    bd_expect_unpack(b, b->ep_t, k, len + 1, FERRY_ERR_INVALID_ADDRESS, "a key 1 byte long");
    bd_expect_unpack(b, b->ep_t, NULL, len, FERRY_ERR_INVALID_PARAM, "a NULL key");

    struct {
        const char *what;
        size_t offset;
        int kind; /* 0 xor byte, 1 set u32, 2 or u32 */
        uint32_t value;
        bd_id_t id;
    } corrupt[] = {
        {"wrong magic", 0, 0, 0x01, RG_RW},
        {"wrong magic (high byte)", 3, 0, 0x80, RG_RW},
        {"version + 1", BD_KEY_VERSION, 0, 0x03, RG_RW},
        {"version high byte", BD_KEY_VERSION + 1, 0, 0x01, RG_RW},
        {"size field 63", BD_KEY_SIZE, 0, 0x7f, RG_RW},
        {"generation 0", BD_KEY_GENERATION, 1, 0, RG_RW},
        {"an unknown access bit", BD_KEY_ACCESS, 2, 0x8, RG_RW},
        {"access bit 31", BD_KEY_ACCESS, 2, 0x80000000u, RG_RO},
        {"an unknown flag", BD_KEY_FLAGS, 2, 0x200, RG_RW},
        {"flag bit 31", BD_KEY_FLAGS, 2, 0x80000000u, AL_RW},
        {"an allocation's descriptor on a registered region", BD_KEY_ALLOC_FD, 1, 3, RG_RW},
        {"an allocation's inode on a registered region", 56, 1, 12345, RG_AT},
    };
    for (size_t i = 0; i < sizeof(corrupt) / sizeof(corrupt[0]); i++) {
        bd_id_t id = corrupt[i].id;
        memcpy(k, b->kb[id], b->klen[id]);
        if (corrupt[i].kind == 0)
            k[corrupt[i].offset] ^= (uint8_t)corrupt[i].value;
        else if (corrupt[i].kind == 1)
            bd_put32(k + corrupt[i].offset, corrupt[i].value);
        else
            bd_put32(k + corrupt[i].offset, bd_get32(k + corrupt[i].offset) | corrupt[i].value);
        bd_expect_unpack(b, b->ep_t, k, b->klen[id], FERRY_ERR_INVALID_ADDRESS, corrupt[i].what);
    }
    /* another process's key: the pid or the boot id changed */
    memcpy(k, b->kb[RG_RW], len);
    bd_put32(k + BD_KEY_PID, bd_get32(k + BD_KEY_PID) + 1);
    bd_expect_unpack(b, b->ep_t, k, len, FERRY_ERR_ACCESS, "a key whose pid was changed");
    memcpy(k, b->kb[RG_RW], len);
    k[BD_KEY_BOOT_ID + 5] ^= 0x10;
    bd_expect_unpack(b, b->ep_t, k, len, FERRY_ERR_ACCESS, "a key whose boot id was changed");
    bd_usable(b, "truncated and corrupted keys");
}

/* Unpack a modified copy of T's key of id (must unpack: the fields are well-formed). */
static ferry_rkey_t *bd_forge(bd_t *b, bd_id_t id, size_t offset, int width, uint64_t value)
{
    uint8_t k[BD_KEY_MAX];
    ferry_rkey_t *rkey = NULL;
    memcpy(k, b->kb[id], b->klen[id]);
    if (width == 4)
        bd_put32(k + offset, (uint32_t)value);
    else
        bd_put64(k + offset, value);
    FT_CHECK_OK(ferry_rkey_unpack(b->ep_t, k, b->klen[id], &rkey));
    return rkey;
}

static void bd_forged(bd_t *b)
{
    uint8_t buf[8192];
    ft_pattern_fill(buf, sizeof(buf), bd_case_seed(0xf0), 0);

    /* write access claimed on read-only regions */
    ferry_rkey_t *rk = bd_forge(b, RG_RO, BD_KEY_ACCESS, 4, RW);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 100, 0), FERRY_ERR_ACCESS,
              "a key of a read-only registered region, forged to grant write access");
    ferry_rkey_release(rk);
    rk = bd_forge(b, AL_RO, BD_KEY_ACCESS, 4, RW);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 100, 0), FERRY_ERR_ACCESS,
              "a key of a read-only allocated region, forged to grant write access");
    ferry_rkey_release(rk);
    rk = bd_forge(b, RG_RO, BD_KEY_ACCESS, 4, FERRY_ACCESS_ALL);
    bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0), FERRY_ERR_ACCESS,
              "a key of a read-only registered region, forged to grant atomics");
    ferry_rkey_release(rk);
    rk = bd_forge(b, AL_RO, BD_KEY_ACCESS, 4, FERRY_ACCESS_ALL);
    bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0), FERRY_ERR_ACCESS,
              "a key of a read-only allocated region, forged to grant atomics");
    ferry_rkey_release(rk);

    /* a longer region claimed */
    size_t len = bd_length(RG_RW);
    rk = bd_forge(b, RG_RW, BD_KEY_LENGTH, 8, len + 4096);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 4096, len), FERRY_ERR_ACCESS,
              "a key of a registered region forged 4 KiB longer: a put past the real end");
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 8192, len - 4096), FERRY_ERR_ACCESS,
              "a key of a registered region forged 4 KiB longer: a put across the real end");
    ferry_rkey_release(rk);
    len = bd_length(AL_RW);
    rk = bd_forge(b, AL_RW, BD_KEY_LENGTH, 8, len + 50);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 50, len), FERRY_ERR_ACCESS,
              "a key of an allocated region forged 50 bytes longer (still in its last page): a "
              "put past the real end");
    bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 50, len), FERRY_ERR_ACCESS,
              "a key of an allocated region forged 50 bytes longer: a get past the real end");
    ferry_rkey_release(rk);

    /* another generation: no such registration */
    rk = bd_forge(b, RG_RW, BD_KEY_GENERATION, 4, bd_get32(b->kb[RG_RW] + BD_KEY_GENERATION) + 1);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 100, 0), FERRY_ERR_ACCESS,
              "a key of a registered region with another generation");
    bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 100, 0), FERRY_ERR_ACCESS,
              "a key of a registered region with another generation");
    ferry_rkey_release(rk);
    rk = bd_forge(b, AL_RW, BD_KEY_GENERATION, 4, bd_get32(b->kb[AL_RW] + BD_KEY_GENERATION) + 1);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 100, 0), FERRY_ERR_ACCESS,
              "a key of an allocated region with another generation");
    ferry_rkey_release(rk);
    rk = bd_forge(b, RG_AT, BD_KEY_GENERATION, 4, bd_get32(b->kb[RG_AT] + BD_KEY_GENERATION) + 1);
    bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0), FERRY_ERR_ACCESS,
              "an atomic through a key with another generation");
    ferry_rkey_release(rk);
    bd_usable(b, "forged keys (access, length, generation)");

    /* another descriptor number: an edited key claims another secret (issue 11), so the
     * mapping and the put are refused with FERRY_ERR_ACCESS; T checks that nothing changed */
    static const uint32_t fds[] = {0, 1, 2, 3, 1000};
    unsigned c = b->cases + 1;
    uint8_t out[BD_SCRATCH_LENGTH];
    ft_pattern_fill(out, sizeof(out), bd_case_seed(c), 0);
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (fds[i] == bd_get32(b->kb[AL_RW] + BD_KEY_ALLOC_FD))
            continue;
        rk = bd_forge(b, AL_RW, BD_KEY_ALLOC_FD, 4, fds[i]);
        void *p = (void *)(uintptr_t)0x1234;
        ferry_status_t status = ferry_rkey_ptr(rk, 0, &p);
        bool tcp = strcmp(ft_remote_transport(), "tcp") == 0; /* maps nothing */
        FT_CHECK((status == FERRY_ERR_ACCESS || (tcp && status == FERRY_ERR_UNSUPPORTED)) &&
                     p == (void *)(uintptr_t)0x1234,
                 "ferry_rkey_ptr through a key whose descriptor was changed to %u returned %s",
                 fds[i], ferry_status_name(status));
        ft_rma_op_t op = ft_rma_put(out, sizeof(out), BD_SCRATCH_OFFSET);
        status = ft_rma_run(bd_w(b), b->ep_t, rk, &op, BD_TIMEOUT_MS, NULL);
        FT_CHECK(status == FERRY_ERR_ACCESS,
                 "a put through a key whose descriptor was changed to %u ended with %s", fds[i],
                 ferry_status_name(status));
        ferry_rkey_release(rk);
    }
    bd_usable(b, "keys with another descriptor number");
}

static void bd_deregistered(bd_t *b)
{
    uint8_t buf[4096];
    ft_pattern_fill(buf, sizeof(buf), bd_bg_seed(BD_TARGET, RG_DEREG), 0);
    /* warm the paths up: puts that change nothing (the background itself) */
    bd_expect(b, b->ep_t, b->rk[RG_DEREG], ft_rma_put(buf, sizeof(buf), 0), FERRY_OK,
              "a put before the deregistration");
    ft_pattern_fill(buf, sizeof(buf), bd_bg_seed(BD_TARGET, AL_DEREG), 0);
    bd_expect(b, b->ep_t, b->rk[AL_DEREG], ft_rma_put(buf, sizeof(buf), 0), FERRY_OK,
              "a put before the deregistration");
    ft_rma_flush_ep(bd_w(b), b->ep_t, BD_TIMEOUT_MS);
    bd_command(b, &b->t, BD_CMD_DEREG, 0, 0);

    ft_pattern_fill(buf, sizeof(buf), bd_case_seed(0xde), 0);
    for (int rep = 0; rep < 2; rep++) {
        bd_expect(b, b->ep_t, b->rk[RG_DEREG], ft_rma_put(buf, sizeof(buf), 0), FERRY_ERR_ACCESS,
                  "a put through the key of a deregistered region");
        bd_expect(b, b->ep_t, b->rk[RG_DEREG], ft_rma_get(buf, 64, 0), FERRY_ERR_ACCESS,
                  "a get through the key of a deregistered region");
        bd_expect(b, b->ep_t, b->rk[AL_DEREG], ft_rma_put(buf, sizeof(buf), 0), FERRY_ERR_ACCESS,
                  "a put through the key of a deregistered allocated region");
        bd_expect(b, b->ep_t, b->rk[AL_DEREG], ft_rma_get(buf, 64, 0), FERRY_ERR_ACCESS,
                  "a get through the key of a deregistered allocated region");
    }
    bd_usable(b, "keys of deregistered regions");

    /* the same buffer again: a new key works, the old one does not */
    uint8_t k[BD_KEY_MAX];
    ferry_rkey_t *fresh = NULL;
    ft_chan_send_token(b->t.chan, BD_TAG_CMD, BD_CMD_REREG, 0, 0, 0);
    size_t klen = ft_rkey_recv(b->t.chan, k, sizeof(k), BD_TIMEOUT_MS);
    FT_CHECK_OK(ferry_rkey_unpack(b->ep_t, k, klen, &fresh));
    bd_expect(b, b->ep_t, b->rk[RG_DEREG], ft_rma_put(buf, sizeof(buf), 0), FERRY_ERR_ACCESS,
              "a put through the old key of a region registered again");
    ft_pattern_fill(buf, sizeof(buf), bd_bg_seed(BD_TARGET, RG_DEREG), 0);
    bd_expect(b, b->ep_t, fresh, ft_rma_put(buf, sizeof(buf), 0), FERRY_OK,
              "a put through the new key of a region registered again");
    memset(buf, 0, sizeof(buf));
    bd_expect(b, b->ep_t, fresh, ft_rma_get(buf, sizeof(buf), 0), FERRY_OK,
              "a get through the new key of a region registered again");
    ft_pattern_check(buf, sizeof(buf), bd_bg_seed(BD_TARGET, RG_DEREG), 0,
                     "a get through the new key");
    ferry_rkey_release(fresh);
    bd_usable(b, "a region registered again");
}

static void bd_single_use(bd_t *b, bd_id_t id)
{
    ferry_remote_iov_t ranges[2];
    size_t n = bd_single_ranges(id, ranges), total = 0;
    ferry_rkey_t *rk = b->rk[id];
    char what[160];
    for (size_t i = 0; i < n; i++)
        total += ranges[i].length;
    uint8_t *buf = malloc(total);
    FT_CHECK(buf != NULL, "out of memory");
    ft_pattern_fill(buf, total, bd_single_seed(id), 0);

    snprintf(what, sizeof(what), "%s: a put out of range (refused: no use)", bd_specs[id].name);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 16, bd_length(id) - 8), FERRY_ERR_ACCESS, what);
    snprintf(what, sizeof(what), "%s: its one operation", bd_specs[id].name);
    if (n == 1) {
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, total, ranges[0].offset), FERRY_OK, what);
    } else {
        ferry_iov_t iov = {.buffer = buf, .length = total};
        bd_expect(b, b->ep_t, rk, ft_rma_putv(&iov, 1, ranges, n), FERRY_OK, what);
    }
    ft_rma_flush_ep(bd_w(b), b->ep_t, BD_TIMEOUT_MS);
    bd_command(b, &b->t, BD_CMD_CHECK_SINGLE, id, 0); /* then the background is back */
    snprintf(what, sizeof(what), "%s: a second use (get)", bd_specs[id].name);
    bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 64, 0), FERRY_ERR_ACCESS, what);
    snprintf(what, sizeof(what), "%s: a third use (put)", bd_specs[id].name);
    memset(buf, 0x11, total);
    bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 64, 0), FERRY_ERR_ACCESS, what);
    free(buf);
}

static void bd_ranges(bd_t *b)
{
    static const bd_id_t ids[] = {RG_RW, AL_RW};
    uint8_t buf[8192];
    char what[160];
    ft_pattern_fill(buf, sizeof(buf), bd_case_seed(0x7a), 0);
    for (size_t k = 0; k < 2; k++) {
        bd_id_t id = ids[k];
        ferry_rkey_t *rk = b->rk[id];
        uint64_t len = bd_length(id);
        static const size_t sizes[] = {1, 8, 4096};
        for (size_t i = 0; i < 3; i++) {
            snprintf(what, sizeof(what), "%s: %zu bytes ending one byte past the end",
                     bd_specs[id].name, sizes[i]);
            bd_expect(b, b->ep_t, rk, ft_rma_put(buf, sizes[i], len - sizes[i] + 1),
                      FERRY_ERR_ACCESS, what);
            bd_expect(b, b->ep_t, rk, ft_rma_get(buf, sizes[i], len - sizes[i] + 1),
                      FERRY_ERR_ACCESS, what);
        }
        snprintf(what, sizeof(what), "%s: at the end", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 1, len), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 0, len + 1), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 0, len + 1), FERRY_ERR_ACCESS, what);
        ferry_iov_t iov[2] = {{buf, 8}, {buf + 8, 8}};
        ferry_remote_iov_t r[2] = {{0, 8}, {len - 7, 8}};
        snprintf(what, sizeof(what), "%s: a putv/getv whose last range ends one byte late",
                 bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_putv(iov, 2, r, 2), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_getv(iov, 2, r, 2), FERRY_ERR_ACCESS, what);

        snprintf(what, sizeof(what), "%s: offset + length overflowing 64 bits", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 16, UINT64_MAX - 7), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 16, UINT64_MAX - 7), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 1, UINT64_MAX), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, SIZE_MAX, 16), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_get(buf, SIZE_MAX, 16), FERRY_ERR_ACCESS, what);
        ferry_remote_iov_t ro[2] = {{8, 8}, {UINT64_MAX - 3, 8}};
        bd_expect(b, b->ep_t, rk, ft_rma_putv(iov, 2, ro, 2), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_getv(iov, 2, ro, 2), FERRY_ERR_ACCESS, what);
        ferry_iov_t huge[2] = {{buf, SIZE_MAX}, {buf, 2}};
        ferry_remote_iov_t one = {0, 1};
        snprintf(what, sizeof(what), "%s: local pieces whose total overflows", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_putv(huge, 2, &one, 1), FERRY_ERR_INVALID_PARAM, what);
    }
    static const bd_id_t atomic_ids[] = {RG_AT, AL_AT};
    for (size_t k = 0; k < 2; k++) {
        bd_id_t id = atomic_ids[k];
        uint64_t result = 0, len = bd_length(id);
        snprintf(what, sizeof(what), "%s: an atomic past the end or overflowing",
                 bd_specs[id].name);
        bd_expect(b, b->ep_t, b->rk[id], ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, len), FERRY_ERR_ACCESS,
                  what);
        bd_expect(b, b->ep_t, b->rk[id], ft_rma_post(FERRY_ATOMIC_ADD, 1, 4, len), FERRY_ERR_ACCESS,
                  what);
        bd_expect(b, b->ep_t, b->rk[id],
                  ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, UINT64_MAX - 7, &result),
                  FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, b->rk[id],
                  ft_rma_fetch(FERRY_ATOMIC_SWAP, 1, 0, 4, UINT64_MAX - 3, &result),
                  FERRY_ERR_ACCESS, what);
    }
    bd_usable(b, "ranges past the end and overflowing");
}

static void bd_access(bd_t *b)
{
    static const bd_id_t ro[] = {RG_RO, AL_RO}, rw[] = {RG_RW, AL_RW};
    uint8_t buf[4096];
    uint64_t result = 0;
    char what[160];
    for (size_t k = 0; k < 2; k++) {
        bd_id_t id = ro[k];
        ferry_rkey_t *rk = b->rk[id];
        ft_pattern_fill(buf, sizeof(buf), bd_case_seed(0xac), 0);
        snprintf(what, sizeof(what), "%s: a write through a read-only key", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_put(buf, 100, 0), FERRY_ERR_ACCESS, what);
        ferry_iov_t iov = {buf, 16};
        ferry_remote_iov_t r[2] = {{0, 8}, {100, 8}};
        bd_expect(b, b->ep_t, rk, ft_rma_putv(&iov, 1, r, 2), FERRY_ERR_ACCESS, what);
        snprintf(what, sizeof(what), "%s: an atomic through a read-only key", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_ADD, 0, 0, 8, 0, &result),
                  FERRY_ERR_ACCESS, what);
        snprintf(what, sizeof(what), "%s: a get through the read-only key", bd_specs[id].name);
        memset(buf, 0, sizeof(buf));
        bd_expect(b, b->ep_t, rk, ft_rma_get(buf, 1000, 7), FERRY_OK, what);
        ft_pattern_check(buf, 1000, bd_bg_seed(BD_TARGET, id), 7, what);
    }
    for (size_t k = 0; k < 2; k++) {
        bd_id_t id = rw[k];
        ferry_rkey_t *rk = b->rk[id];
        snprintf(what, sizeof(what), "%s: an atomic without REMOTE_ATOMIC", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 64), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_XOR, 1, 4, 64), FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, 64, &result),
                  FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_SWAP, 1, 0, 8, 64, &result),
                  FERRY_ERR_ACCESS, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_CSWAP, 1, 0, 4, 64, &result),
                  FERRY_ERR_ACCESS, what);
    }
    bd_usable(b, "access not granted");
}

static void bd_atomics(bd_t *b)
{
    static const bd_id_t ids[] = {RG_AT, AL_AT};
    uint64_t result = 0;
    char what[160];
    for (size_t k = 0; k < 2; k++) {
        bd_id_t id = ids[k];
        ferry_rkey_t *rk = b->rk[id];
        snprintf(what, sizeof(what), "%s: a misaligned or malformed atomic", bd_specs[id].name);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 4), FERRY_ERR_INVALID_PARAM,
                  what);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 4, 2), FERRY_ERR_INVALID_PARAM,
                  what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 4, 1, &result),
                  FERRY_ERR_INVALID_PARAM, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_CSWAP, 1, 0, 8, 12, &result),
                  FERRY_ERR_INVALID_PARAM, what);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 2, 0), FERRY_ERR_INVALID_PARAM,
                  what);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_ADD, 1, 16, 0), FERRY_ERR_INVALID_PARAM,
                  what);
        bd_expect(b, b->ep_t, rk, ft_rma_post(FERRY_ATOMIC_SWAP, 1, 8, 0), FERRY_ERR_INVALID_PARAM,
                  what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_AND, 1, 0, 8, 0, &result),
                  FERRY_ERR_INVALID_PARAM, what);
        bd_expect(b, b->ep_t, rk, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, 0, NULL),
                  FERRY_ERR_INVALID_PARAM, what);
    }
    /* aligned offsets that are not aligned words in the owner's memory */
    bd_expect(b, b->ep_t, b->rk[RG_ODD], ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0),
              FERRY_ERR_INVALID_PARAM,
              "an 8-byte atomic at offset 0 of a region registered at "
              "an odd address");
    bd_expect(b, b->ep_t, b->rk[RG_ODD], ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 4, 8, &result),
              FERRY_ERR_INVALID_PARAM,
              "a 4-byte atomic at offset 8 of a region registered at "
              "an odd address");
    bd_expect(b, b->ep_t, b->rk[RG_SPLIT], ft_rma_post(FERRY_ATOMIC_ADD, 1, 8, 0),
              FERRY_ERR_INVALID_PARAM, "an 8-byte atomic straddling two pieces of a region");
    bd_usable(b, "misaligned atomics");
}

static void bd_peers(bd_t *b)
{
    uint8_t buf[64];
    /* unpacked on the endpoint to another peer */
    bd_expect_unpack(b, b->ep_o, b->kb[RG_RW], b->klen[RG_RW], FERRY_ERR_ACCESS,
                     "T's key on the endpoint to O");
    bd_expect_unpack(b, b->ep_o, b->kb[AL_RW], b->klen[AL_RW], FERRY_ERR_ACCESS,
                     "T's allocated region's key on the endpoint to O");
    bd_expect_unpack(b, b->ep_t, b->okb, b->oklen, FERRY_ERR_ACCESS,
                     "O's key on the endpoint to T");
    /* a key used on another endpoint than the one it was unpacked on */
    ft_pattern_fill(buf, sizeof(buf), bd_case_seed(0x0e), 0);
    struct {
        ferry_ep_t *ep;
        ferry_rkey_t *rk;
        const char *what;
    } wrong[] = {{b->ep_o, b->rk[RG_RW], "T's key used on the endpoint to O"},
                 {b->ep_o, b->rk[AL_RW], "T's allocated region's key used on the endpoint to O"},
                 {b->ep_t, b->ork, "O's key used on the endpoint to T"}};
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        ft_rma_op_t ops[] = {ft_rma_put(buf, sizeof(buf), 0), ft_rma_get(buf, sizeof(buf), 0)};
        for (size_t j = 0; j < 2; j++) {
            char desc[200];
            ferry_status_t status =
                ft_rma_run(bd_w(b), wrong[i].ep, wrong[i].rk, &ops[j], BD_TIMEOUT_MS, NULL);
            FT_CHECK(status == FERRY_ERR_INVALID_PARAM || status == FERRY_ERR_ACCESS,
                     "%s: %s ended with %s, expected FERRY_ERR_INVALID_PARAM or FERRY_ERR_ACCESS",
                     wrong[i].what, ft_rma_describe(&ops[j], desc, sizeof(desc)),
                     ferry_status_name(status));
        }
    }
    bd_usable(b, "keys of another peer");
}

int main(void)
{
    static bd_t b;
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;

    ft_set_role("initiator");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    ft_peer_spawn(&b.t, "target", bd_target_role, NULL);
    ft_peer_spawn(&b.o, "other", bd_other_role, NULL);
    if (ft_cma_forced_off())
        ft_note("FERRY_SHM_CMA=off: registered memory is reached through the owners' progress");
    ft_ferry_init(&b.f, NULL, NULL);

    size_t len = ft_recv_address(b.t.chan, address, sizeof(address), BD_TIMEOUT_MS);
    b.ep_t = ft_ep_create(bd_w(&b), address, len, NULL);
    for (unsigned i = 0; i < BD_REGIONS; i++) {
        b.klen[i] = ft_rkey_recv(b.t.chan, b.kb[i], sizeof(b.kb[i]), BD_TIMEOUT_MS);
        FT_CHECK_OK(ferry_rkey_unpack(b.ep_t, b.kb[i], b.klen[i], &b.rk[i]));
    }
    len = ft_recv_address(b.o.chan, address, sizeof(address), BD_TIMEOUT_MS);
    b.ep_o = ft_ep_create(bd_w(&b), address, len, NULL);
    b.oklen = ft_rkey_recv(b.o.chan, b.okb, sizeof(b.okb), BD_TIMEOUT_MS);
    FT_CHECK_OK(ferry_rkey_unpack(b.ep_o, b.okb, b.oklen, &b.ork));

    uint64_t start = ft_now_ns();
    bd_usable(&b, "nothing (the first check)");
    bd_keys(&b);
    bd_deregistered(&b);
    bd_ranges(&b);
    bd_access(&b);
    bd_atomics(&b);
    bd_peers(&b);
    bd_single_use(&b, RG_SINGLE);
    bd_single_use(&b, RG_SINGLE2);
    bd_single_use(&b, AL_SINGLE);
    bd_usable(&b, "single-use regions used twice");
    bd_forged(&b);
    ft_note("%u checks of T's and O's memory, %.2f s", b.cases,
            (double)(ft_now_ns() - start) / 1e9);

    for (unsigned i = 0; i < BD_REGIONS; i++)
        ferry_rkey_release(b.rk[i]);
    ferry_rkey_release(b.ork);
    ferry_ep_t *eps[2] = {b.ep_t, b.ep_o};
    for (int i = 0; i < 2; i++) {
        ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
        ferry_status_t status = ferry_ep_close(eps[i], 0, &comp);
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
                 ferry_status_name(status));
        if (status == FERRY_INPROGRESS)
            ft_progress_until_completion(bd_w(&b), 10000, &comp, "the graceful close");
    }
    ft_chan_send_token(b.t.chan, BD_TAG_CMD, BD_CMD_DONE, 0, 0, 0);
    ft_chan_send_token(b.o.chan, BD_TAG_CMD, BD_CMD_DONE, 0, 0, 0);
    ft_peer_expect_exit(&b.t, 30000, 0);
    ft_peer_expect_exit(&b.o, 30000, 0);
    for (int i = 0; i < 2; i++)
        ferry_ep_destroy(eps[i]);
    ft_ferry_fini(&b.f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed");
    return 0;
}
