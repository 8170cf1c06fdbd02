/* Registered memory, the shared key table, and remote keys.
 *
 * A registration (ferry_mem_t) belongs to a context and occupies one slot of the context's
 * KEY TABLE: a sealed memfd of FERRY_MEM_MAX_REGIONS fixed 64-byte entries that the owner
 * writes and that peers on this host map (passed in the shm handshake). An entry says whether
 * the slot holds a live registration of a given generation, its length, access and flags, where
 * its pieces are (in the owner's address space, for cross-memory attach) and, for single-use
 * regions, a use counter that initiators claim with a CAS, and the registration's SECRET. A
 * packed key names (owner, slot, generation), carries the secret and never carries a pointer:
 * whoever uses it checks the entry first, the secret compared in constant time.
 *
 * Target-executed operations (the AM path) look the registration up in the owner's private
 * slot array (mem_lookup_begin, which compares the secret) and check it there.
 *
 * The secret (64 bits from getrandom, drawn per registration) is what makes a key
 * unforgeable: slot, generation and pid are predictable, so without it any peer that reaches
 * the worker could name every registration. A made-up key matches a given registration with
 * probability 2^-64 per try. It protects against other hosts (tcp), other users, and stale or
 * wrong keys; it does not protect against processes of the same user on this host, which can
 * read the key table (and any memory, with cross-memory attach or ptrace) anyway. */
#ifndef FERRY_MEM_H
#define FERRY_MEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/config.h"
#include "core/list.h"
#include "core/secret.h"
#include "wireup/address.h"

#define MEM_KEYTABLE_MAGIC 0x454c4241544b5946ull /* "FYKTABLE" */
#define MEM_LAYOUT_VERSION 2u
#define MEM_KEYTABLE_HEADER_SIZE 64u

/* entry state: (generation << 1) | 1 while live; the low bit is 0 when free */
typedef struct mem_keytable_entry {
    _Atomic uint64_t state;
    _Atomic uint64_t uses; /* single-use regions: 0 unused, 1 used (CAS by the user) */
    uint64_t length;       /* total bytes */
    uint32_t access;       /* FERRY_ACCESS_* */
    uint32_t flags;        /* FERRY_MEM_SINGLE_USE, MEM_FLAG_ALLOC */
    uint64_t base;         /* iovcnt == 1: address of the piece in the owner's space */
    uint64_t iov_addr;     /* iovcnt > 1: address of a ferry_iov_t[iovcnt] in the owner */
    uint32_t iovcnt;
    uint32_t reserved;
    uint64_t secret; /* the registration's secret: keys must carry the same (never 0) */
} mem_keytable_entry_t;

_Static_assert(sizeof(mem_keytable_entry_t) == 64, "a key-table entry is one cache line");

typedef struct mem_keytable_header {
    uint64_t magic;
    uint32_t version;
    uint32_t entries;
    uint32_t owner_pid;
    uint32_t reserved;
    uint64_t context_uuid;
} mem_keytable_header_t;

/* flags bit (beyond the public ones) of memory from ferry_mem_alloc */
#define MEM_FLAG_ALLOC 0x10000u

struct ferry_mem {
    fy_list_link_t cache_link; /* in the context's registration cache */
    ferry_context_t *context;
    uint32_t index;
    uint32_t generation;
    uint64_t secret; /* random, non-zero; in the key table entry and in packed keys */
    unsigned access;
    unsigned flags; /* public flags | MEM_FLAG_ALLOC */
    unsigned refcount;
    size_t length;
    size_t iovcnt;
    ferry_iov_t *iov; /* private copy of the pieces (iov_inline when iovcnt == 1) */
    uint64_t *ends;   /* ends[i] = offset just past piece i (binary search by offset) */
    ferry_iov_t iov_inline;
    uint64_t end_inline;
    int alloc_fd;          /* memfd of ferry_mem_alloc memory, else -1 */
    uint64_t alloc_inode;  /* its inode, so that a peer can check what it opened */
    size_t alloc_size;     /* mapped size (page multiple) */
    const void *use_owner; /* single use: who claimed it (an endpoint) and with what token */
    uint64_t use_token;
};

/* Per-context state of the memory layer (owned by ferry_context_t). */
typedef struct mem_context {
    int keytable_fd;
    size_t keytable_size;
    mem_keytable_header_t *keytable; /* header, then entries */
    mem_keytable_entry_t *entries;
    /* slots[index]: the live registration, or NULL. Written under the context's lock (in
     * multi-thread mode), read without it by progress (mem_lookup_begin): see mem_reader_t. */
    _Atomic(ferry_mem_t *) *slots;
    uint32_t *generations; /* next generation of each slot */
    uint32_t capacity;     /* FERRY_MEM_MAX_REGIONS */
    uint32_t free_hint;
    fy_list_t cache; /* registrations, for reuse */
    uint64_t uuid;
    uint32_t pid; /* getpid() at init: keys carry it without a system call per key (a forked
                   * child's context is refused before any key is packed) */
    fy_secret_pool_t secrets; /* of new registrations */
    /* Multi-thread mode: progress looks registrations up while another thread deregisters.
     * A lookup counts itself in readers[phase & 1] until it is done with the registration; a
     * deregistration unpublishes the slot, advances phase and waits until the old phase's
     * readers are gone before it frees (a grace period; lookups that start later count in the
     * new phase, so they never hold it up, and they find the slot empty). */
    atomic_uint read_phase;
    atomic_uint readers[2];
} mem_context_t;

/* Context life cycle (called by ferry_context_create/destroy). Returns FERRY_OK,
 * FERRY_ERR_SHMEM or FERRY_ERR_NO_MEMORY (logged). */
ferry_status_t mem_context_init(mem_context_t *mc, const fy_config_set_t *config);
void mem_context_cleanup(mem_context_t *mc);

/* Target side: the live registration of (index, generation) if its secret is secret (compared
 * in constant time), or NULL. Valid until mem_lookup_end, which must follow every call with
 * the *reader_p it set: with a multi-thread worker in the context, a deregistration in another
 * thread frees the registration only after that (no lock either way; single-thread mode: no
 * atomic read-modify-write either). */
ferry_mem_t *mem_lookup_begin(ferry_context_t *context, uint32_t index, uint32_t generation,
                              uint64_t secret, int *reader_p);
void mem_lookup_end(ferry_context_t *context, int reader);

/* Whoever checks a key against a key-table entry: still live with the key's generation and
 * the key's secret. One expression without early exit, so that the time does not tell how
 * much of the secret matched. */
static inline bool mem_entry_matches(const mem_keytable_entry_t *e, uint32_t generation,
                                     uint64_t secret)
{
    uint64_t live = ((uint64_t)generation << 1) | 1u;
    uint64_t state = atomic_load_explicit(&e->state, memory_order_acquire);
    return fy_secret_equal((state ^ live) | (e->secret ^ secret), 0);
}

/* Check that [offset, offset + length) lies inside a region of region_length bytes, without
 * overflow. */
static inline bool mem_range_ok(uint64_t region_length, uint64_t offset, uint64_t length)
{
    return offset <= region_length && length <= region_length - offset;
}

/* Target side: check a request against mem (range, access). A single-use region is claimed
 * by the first request of an operation (continues false), which records (owner, token); a
 * request that continues an operation is accepted only with the same owner and token.
 * Returns FERRY_OK or FERRY_ERR_ACCESS (logged at debug level with the reason). */
ferry_status_t mem_check_access(ferry_mem_t *mem, uint64_t offset, uint64_t length, unsigned access,
                                const void *owner, uint64_t token, bool continues);

/* Translate (offset, length) of a registration into pieces of the owner's memory: fills up to
 * max entries of out and returns how many were used; *consumed_p receives how many bytes they
 * cover (less than length when max was reached). */
size_t mem_translate(const ferry_mem_t *mem, uint64_t offset, uint64_t length, ferry_iov_t *out,
                     size_t max, uint64_t *consumed_p);

/* The same on any list of pieces with their cumulative ends (used for a peer's pieces too). */
size_t mem_pieces_translate(const ferry_iov_t *pieces, const uint64_t *ends, size_t count,
                            uint64_t offset, uint64_t length, ferry_iov_t *out, size_t max,
                            uint64_t *consumed_p);

/* ------------------------------------------------------------------ remote keys */

#define RKEY_MAGIC 0x59454b52u /* "RKEY" */
#define RKEY_VERSION 2u
#define RKEY_PACKED_SIZE 64u

/* The packed key (little-endian, fixed size):
 *   0 u32 magic  4 u16 version (2)  6 u16 size (64)
 *   8 u8[8] owner boot id (its first 8 bytes)
 *  16 u64 sealed secret: the registration's secret XOR rkey_binding() of the other fields
 *  24 u32 owner pid   28 u32 slot index
 *   32 u32 generation           36 u32 access      40 u32 flags (public | MEM_FLAG_ALLOC)
 *   44 u32 alloc fd (or 0)      48 u64 region length
 *   56 u64 alloc memfd inode (or 0) */
typedef struct rkey_packed {
    uint8_t boot_id[8];
    uint64_t sealed_secret;
    uint32_t pid;
    uint32_t index;
    uint32_t generation;
    uint32_t access;
    uint32_t flags;
    uint32_t alloc_fd;
    uint64_t length;
    uint64_t alloc_inode;
} rkey_packed_t;

/* Check and decode a packed key. Returns FERRY_OK or FERRY_ERR_INVALID_ADDRESS (logged at warn
 * level with the reason). Fuzzed. */
ferry_status_t rkey_decode(const void *buffer, size_t length, rkey_packed_t *out);

/* A mix of every field of the key but the sealed secret, which the owner XORs into the secret
 * it packs and the user XORs out again: a key with any field changed (a bit flipped, another
 * slot, a longer length) then claims another secret and is refused like a made-up one. It is
 * no MAC (whoever holds a key can recompute it): what a key may do is decided by the owner's
 * records (access, length), never by the key. */
uint64_t rkey_binding(const rkey_packed_t *key);
void rkey_encode(const rkey_packed_t *in, void *buffer);

struct ferry_rkey {
    ferry_ep_t *ep;
    /* ep's worker: what ferry_rkey_release locks and checks for fork, since the worker's
     * destruction releases keys whose endpoint it already freed */
    ferry_worker_t *worker;
    rkey_packed_t key;
    uint64_t secret; /* the registration secret the key claims (sealed secret ^ binding) */
    /* shm, filled by the transport on first use */
    void *mapped;                      /* ferry_mem_alloc memory of a local peer, or NULL */
    size_t mapped_size;                /* of the mapping (whole pages) */
    size_t mapped_length;              /* of the region, from the owner's key table */
    const mem_keytable_entry_t *entry; /* the owner's entry, while mapped and ep is open */
    ferry_iov_t *remote_iov;           /* the owner's pieces (cross-memory attach) */
    uint64_t *remote_ends;
    size_t remote_iovcnt;
    int map_tried;
    int map_refused; /* the owner's key table refused the key (FERRY_ERR_ACCESS) */
    int iov_fetched;
};

#endif
