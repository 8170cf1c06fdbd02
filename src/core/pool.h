/* Fixed-size objects recycled through a freelist and allocated in blocks: the one pool every
 * protocol and transport uses for its requests. Once warm, get and put are a list pop and a
 * push (no malloc, no lock). Each object is preceded by a small hidden header (the freelist
 * link and an in-use flag), so the object's own layout is free; its contents are whatever the
 * last user left (the caller initialises what it needs). fy_pool_destroy visits the objects
 * still in use, so that a worker going away can complete or release them.
 *
 * Not thread-safe: the owner (a worker, a transport's worker state) serialises. */
#ifndef FY_CORE_POOL_H
#define FY_CORE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compiler.h"
#include "core/list.h"

typedef struct fy_pool_block fy_pool_block_t;

/* The hidden header in front of each object. */
typedef struct fy_pool_slot {
    fy_list_link_t link; /* in the pool's freelist while free */
    uint64_t in_use;
} fy_pool_slot_t;

#define FY_POOL_HEADER_SIZE                                                                        \
    ((sizeof(fy_pool_slot_t) + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1))

typedef struct fy_pool {
    fy_list_t free;          /* slots to reuse */
    fy_pool_block_t *blocks; /* every block allocated (a chain) */
    size_t slot_size;        /* header + object, aligned for any type */
    unsigned block_objects;  /* objects allocated at once when the freelist is empty */
    const char *what;        /* what the objects are, for the out-of-memory message */
} fy_pool_t;

/* Set up an empty pool of objects of object_size bytes; allocates nothing. */
void fy_pool_init(fy_pool_t *pool, size_t object_size, unsigned block_objects, const char *what);

/* Allocate a block of objects and put them on the freelist. Returns false when malloc failed
 * (logged, with what and the size). */
bool fy_pool_grow(fy_pool_t *pool);

/* An object (not zeroed), or NULL when out of memory (logged). */
static inline void *fy_pool_get(fy_pool_t *pool)
{
    fy_list_link_t *link = fy_list_pop_head(&pool->free);
    if (fy_unlikely(link == NULL)) {
        if (!fy_pool_grow(pool))
            return NULL;
        link = fy_list_pop_head(&pool->free);
    }
    fy_pool_slot_t *slot = fy_container_of(link, fy_pool_slot_t, link);
    slot->in_use = 1;
    return (char *)slot + FY_POOL_HEADER_SIZE;
}

/* Give an object from fy_pool_get back. */
static inline void fy_pool_put(fy_pool_t *pool, void *object)
{
    fy_pool_slot_t *slot = (fy_pool_slot_t *)((char *)object - FY_POOL_HEADER_SIZE);
    slot->in_use = 0;
    fy_list_push_head(&pool->free, &slot->link);
}

/* Is object (from this pool) handed out, not on the freelist? */
static inline bool fy_pool_in_use(const void *object)
{
    return ((const fy_pool_slot_t *)((const char *)object - FY_POOL_HEADER_SIZE))->in_use != 0;
}

/* Call release(arg, object) on every object still in use (may be NULL: none is called), then
 * free every block. The pool is empty and may be used again. */
void fy_pool_destroy(fy_pool_t *pool, void (*release)(void *arg, void *object), void *arg);

#endif
