/*
 * libferry-fi — address vectors. An AV is a table of names (fi_addr_t = index, never reused,
 * for FI_AV_MAP and FI_AV_TABLE alike); insertion is synchronous. A name (a compact ferry worker
 * address, name.h) is checked when it is inserted: a name that is not a ferry provider name fails
 * the insert (the entry is FI_ADDR_NOTAVAIL and the error is reported per entry with FI_SYNC_ERR).
 * Each endpoint already bound to the AV then creates its ferry endpoint to the new peer at once;
 * endpoints bound later connect on first use. A peer that cannot be reached (it has exited, or
 * refuses) does not fail the insert, as in every libfabric provider: an address may outlive its
 * process (a peer sends its last message and exits before the receiver inserts its name, and the
 * message must still be matched to that fi_addr). The endpoint keeps the connect error, and every
 * later operation to that fi_addr fails with it. Only a lack of memory fails the insert.
 *
 * The table peer id -> index (the worker id a name carries, which ferry reports as the sender
 * of every tagged message) lets a completion name its source (FI_SOURCE, the MTL's directed
 * receives): exact, no hashing of names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define PEER_TABLE_MIN 64u

/* peer_table: open addressing on the peer id (never FERRY_PEER_ANY, which marks an empty
 * entry), value the slot index of the latest name inserted with that id. Entries are never
 * deleted: lookups check that the slot is live and still has that id. */
static fy_ofi_av_peer_entry_t *peer_find(fy_ofi_av_t *av, ferry_peer_id_t peer)
{
    size_t mask = av->peer_table_size - 1;
    for (size_t i = (size_t)((peer * 0x9e3779b97f4a7c15ull) >> 32) & mask;; i = (i + 1) & mask) {
        fy_ofi_av_peer_entry_t *e = &av->peer_table[i];
        if (e->peer == FERRY_PEER_ANY || e->peer == peer)
            return e;
    }
}

static int peer_grow(fy_ofi_av_t *av)
{
    size_t size = av->peer_table_size ? av->peer_table_size * 2 : PEER_TABLE_MIN;
    fy_ofi_av_peer_entry_t *old = av->peer_table;
    size_t old_size = av->peer_table_size;
    av->peer_table = calloc(size, sizeof(*av->peer_table));
    if (av->peer_table == NULL) {
        av->peer_table = old;
        return -FI_ENOMEM;
    }
    av->peer_table_size = size;
    for (size_t i = 0; i < old_size; i++) {
        if (old[i].peer != FERRY_PEER_ANY)
            *peer_find(av, old[i].peer) = old[i];
    }
    free(old);
    return 0;
}

/* Record slot index under its peer id (the latest name of a worker inserted twice wins). */
static int peer_insert(fy_ofi_av_t *av, size_t index)
{
    if ((av->peer_table_used + 1) * 2 > av->peer_table_size) {
        int rc = peer_grow(av);
        if (rc != 0)
            return rc;
    }
    ferry_peer_id_t peer = av->slots[index].peer;
    fy_ofi_av_peer_entry_t *e = peer_find(av, peer);
    if (e->peer == FERRY_PEER_ANY)
        av->peer_table_used++;
    e->peer = peer;
    e->index = index;
    av->last_peer = FERRY_PEER_ANY; /* the peer may have a new index */
    return 0;
}

fi_addr_t fy_ofi_av_lookup_peer(fy_ofi_av_t *av, ferry_peer_id_t peer)
{
    if (av == NULL || av->peer_table_size == 0 || peer == FERRY_PEER_ANY)
        return FI_ADDR_NOTAVAIL;
    fy_ofi_av_peer_entry_t *e = peer_find(av, peer);
    if (e->peer != peer)
        return FI_ADDR_NOTAVAIL;
    fy_ofi_av_slot_t *slot = &av->slots[e->index];
    if (!slot->live || slot->peer != peer)
        return FI_ADDR_NOTAVAIL;
    av->last_peer = peer;
    av->last_addr = e->index;
    return e->index;
}

static int av_reserve(fy_ofi_av_t *av, size_t more)
{
    if (av->count + more <= av->capacity)
        return 0;
    size_t capacity = av->capacity ? av->capacity : 16;
    while (capacity < av->count + more)
        capacity *= 2;
    fy_ofi_av_slot_t *slots = realloc(av->slots, capacity * sizeof(*slots));
    if (slots == NULL)
        return -FI_ENOMEM;
    av->slots = slots;
    av->capacity = capacity;
    return 0;
}

/* One name: checked, appended, connected from the bound endpoints. Returns 0 or the error of
 * this entry (the slot then stays dead). */
static int av_insert_one(fy_ofi_av_t *av, const uint8_t *name, fi_addr_t *addr_p)
{
    *addr_p = FI_ADDR_NOTAVAIL;
    size_t index = av->count;
    fy_ofi_av_slot_t *slot = &av->slots[index];
    memset(slot, 0, sizeof(*slot));
    if (!fy_ofi_name_check(name, &slot->peer)) {
        FY_OFI_WARN(FI_LOG_AV,
                    "fi_av_insert: not a ferry provider name (%zu bytes from fi_getname of a "
                    "ferry endpoint expected; ferry's warning says what is wrong)\n",
                    FY_OFI_NAME_LEN);
        return -FI_EADDRNOTAVAIL;
    }
    memcpy(slot->name, name, FY_OFI_NAME_LEN);
    slot->live = true;
    av->count++;
    for (size_t i = 0; i < av->ep_count; i++) {
        ferry_status_t st = fy_ofi_ep_peer_connect(av->eps[i], index);
        /* an unreachable peer is still an address: the endpoint keeps the error (see above) */
        if (st == FERRY_ERR_NO_MEMORY) {
            for (size_t j = 0; j < i; j++)
                fy_ofi_ep_peer_remove(av->eps[j], index);
            slot->live = false;
            return fy_ofi_errno(st);
        }
    }
    int rc = peer_insert(av, index);
    if (rc != 0) {
        for (size_t j = 0; j < av->ep_count; j++)
            fy_ofi_ep_peer_remove(av->eps[j], index);
        slot->live = false;
        return rc;
    }
    *addr_p = index;
    return 0;
}

/* insert: count names of FY_OFI_NAME_LEN bytes each. Returns the number inserted; a failed
 * entry gets FI_ADDR_NOTAVAIL in fi_addr (when given) and, with FI_SYNC_ERR, its error in the
 * int array context. Flags: FI_MORE (ignored), FI_SYNC_ERR. */
static int av_insert(struct fid_av *fid, const void *addr, size_t count, fi_addr_t *fi_addr,
                     uint64_t flags, void *context)
{
    fy_ofi_av_t *av = FY_OFI_CONTAINER(fid, fy_ofi_av_t, av_fid);
    if (count > 0 && addr == NULL)
        return -FI_EINVAL;
    if (flags & ~(FI_MORE | FI_SYNC_ERR))
        return -FI_EBADFLAGS;
    if ((flags & FI_SYNC_ERR) && context == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_lock(av->domain);
    int rc = av_reserve(av, count);
    if (rc != 0) {
        fy_ofi_domain_unlock(av->domain);
        return rc;
    }
    int inserted = 0;
    for (size_t i = 0; i < count; i++) {
        fi_addr_t a;
        rc = av_insert_one(av, (const uint8_t *)addr + i * FY_OFI_NAME_LEN, &a);
        if (fi_addr != NULL)
            fi_addr[i] = a;
        if (flags & FI_SYNC_ERR)
            ((int *)context)[i] = -rc;
        if (rc == 0)
            inserted++;
    }
    fy_ofi_domain_unlock(av->domain);
    return inserted;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
                        fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    (void)av, (void)node, (void)service, (void)fi_addr, (void)flags, (void)context;
    return -FI_ENOSYS; /* no name service: names come from fi_getname */
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt, const char *service,
                        size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    (void)av, (void)node, (void)nodecnt, (void)service, (void)svccnt, (void)fi_addr, (void)flags;
    (void)context;
    return -FI_ENOSYS;
}

/* remove: each address stops being valid at once; ferry endpoints to it close gracefully in
 * the background (operations already handed to ferry still complete). Returns 0, or -FI_EINVAL
 * when an address is not in the AV (the others are removed). */
static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
    fy_ofi_av_t *av = FY_OFI_CONTAINER(fid, fy_ofi_av_t, av_fid);
    if (flags != 0)
        return -FI_EBADFLAGS;
    if (count > 0 && fi_addr == NULL)
        return -FI_EINVAL;
    int rc = 0;
    fy_ofi_domain_lock(av->domain);
    for (size_t i = 0; i < count; i++) {
        fy_ofi_av_slot_t *slot = fy_ofi_av_slot(av, fi_addr[i]);
        if (slot == NULL) {
            rc = -FI_EINVAL;
            continue;
        }
        slot->live = false;
        av->last_peer = FERRY_PEER_ANY;
        for (size_t j = 0; j < av->ep_count; j++)
            fy_ofi_ep_peer_remove(av->eps[j], fi_addr[i]);
    }
    fy_ofi_domain_unlock(av->domain);
    return rc;
}

/* lookup: the name of fi_addr, truncated to *addrlen; *addrlen becomes its full size. */
static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
    fy_ofi_av_t *av = FY_OFI_CONTAINER(fid, fy_ofi_av_t, av_fid);
    if (addrlen == NULL || (*addrlen > 0 && addr == NULL))
        return -FI_EINVAL;
    fy_ofi_domain_lock(av->domain);
    fy_ofi_av_slot_t *slot = fy_ofi_av_slot(av, fi_addr);
    int rc = -FI_EINVAL;
    if (slot != NULL) {
        size_t size = FY_OFI_NAME_LEN;
        memcpy(addr, slot->name, *addrlen < size ? *addrlen : size);
        *addrlen = size;
        rc = 0;
    }
    fy_ofi_domain_unlock(av->domain);
    return rc;
}

/* straddr: "ferry:<the name's first 24 bytes in hex>" (a name is binary). */
static const char *av_straddr(struct fid_av *fid, const void *addr, char *buf, size_t *len)
{
    (void)fid;
    char tmp[96];
    if (addr == NULL || len == NULL)
        return NULL;
    int n = snprintf(tmp, sizeof(tmp), "ferry:");
    const uint8_t *p = addr;
    for (size_t i = 0; i < 24; i++)
        n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, "%02x", p[i]);
    size_t need = strlen(tmp) + 1;
    if (buf != NULL && *len > 0) {
        strncpy(buf, tmp, *len - 1);
        buf[*len - 1] = '\0';
    }
    *len = need;
    return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr, struct fid_av_set **av_set_p,
                  void *context)
{
    (void)av, (void)attr, (void)av_set_p, (void)context;
    return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,       /* synchronous; number inserted */
    .insertsvc = av_insertsvc, /* -FI_ENOSYS */
    .insertsym = av_insertsym, /* -FI_ENOSYS */
    .remove = av_remove,       /* 0 or -FI_EINVAL */
    .lookup = av_lookup,       /* copies at most *addrlen bytes */
    .straddr = av_straddr,     /* NULL for NULL arguments */
    .av_set = av_set,          /* -FI_ENOSYS */
};

int fy_ofi_av_bind_ep(fy_ofi_av_t *av, fy_ofi_ep_t *ep)
{
    fy_ofi_ep_t **eps = realloc(av->eps, (av->ep_count + 1) * sizeof(*eps));
    if (eps == NULL)
        return -FI_ENOMEM;
    av->eps = eps;
    av->eps[av->ep_count++] = ep;
    return 0;
}

void fy_ofi_av_unbind_ep(fy_ofi_av_t *av, fy_ofi_ep_t *ep)
{
    for (size_t i = 0; i < av->ep_count; i++) {
        if (av->eps[i] == ep) {
            av->eps[i] = av->eps[--av->ep_count];
            return;
        }
    }
}

static int av_close(struct fid *fid)
{
    fy_ofi_av_t *av = FY_OFI_CONTAINER(fid, fy_ofi_av_t, av_fid.fid);
    fy_ofi_domain_t *domain = av->domain;
    fy_ofi_domain_lock(domain);
    if (av->ep_count > 0) {
        fy_ofi_domain_unlock(domain);
        return -FI_EBUSY;
    }
    domain->refs--;
    fy_ofi_domain_unlock(domain);
    free(av->eps);
    free(av->slots);
    free(av->peer_table);
    free(av);
    return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid, (void)bfid, (void)flags;
    return -FI_ENOSYS; /* insertion is synchronous: no EQ */
}

static struct fi_ops av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close, /* -FI_EBUSY while endpoints are bound */
    .bind = av_bind,   /* -FI_ENOSYS (no asynchronous AV) */
    .control = fy_ofi_no_control,
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

int fy_ofi_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr, struct fid_av **av_p,
                   void *context)
{
    if (domain_fid == NULL || attr == NULL || av_p == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_t *domain = FY_OFI_CONTAINER(domain_fid, fy_ofi_domain_t, domain_fid);
    switch (attr->type) {
    case FI_AV_UNSPEC:
    case FI_AV_MAP:
    case FI_AV_TABLE:
        break;
    default:
        return -FI_EINVAL;
    }
    if (attr->flags & (FI_EVENT | FI_READ | FI_SYMMETRIC | FI_AV_USER_ID))
        return -FI_ENOSYS;
    if (attr->name != NULL)
        return -FI_ENOSYS; /* no shared AVs */
    if (attr->rx_ctx_bits != 0)
        return -FI_EINVAL;
    fy_ofi_av_t *av = calloc(1, sizeof(*av));
    if (av == NULL)
        return -FI_ENOMEM;
    av->domain = domain;
    av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
    /* attr->count is a hint (Open MPI passes the job's size): start with at most 1024 slots */
    if (av_reserve(av, attr->count > 0 && attr->count < 1024 ? attr->count : 1024) != 0) {
        free(av);
        return -FI_ENOMEM;
    }
    av->av_fid.fid.fclass = FI_CLASS_AV;
    av->av_fid.fid.context = context;
    av->av_fid.fid.ops = &av_fi_ops;
    av->av_fid.ops = &av_ops;
    fy_ofi_domain_lock(domain);
    domain->refs++;
    fy_ofi_domain_unlock(domain);
    *av_p = &av->av_fid;
    return 0;
}
