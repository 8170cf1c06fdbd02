/* Fixed-size objects in blocks, recycled through a freelist (core/pool.h). */
#include "core/pool.h"

#include <stdlib.h>

#include "core/log.h"

struct fy_pool_block {
    fy_pool_block_t *next;
    unsigned count;
    _Alignas(max_align_t) unsigned char slots[];
};

void fy_pool_init(fy_pool_t *pool, size_t object_size, unsigned block_objects, const char *what)
{
    const size_t align = _Alignof(max_align_t);
    fy_list_init(&pool->free);
    pool->blocks = NULL;
    pool->slot_size = (FY_POOL_HEADER_SIZE + object_size + align - 1) & ~(align - 1);
    pool->block_objects = block_objects > 0 ? block_objects : 1;
    pool->what = what;
}

bool fy_pool_grow(fy_pool_t *pool)
{
    size_t bytes = sizeof(fy_pool_block_t) + (size_t)pool->block_objects * pool->slot_size;
    fy_pool_block_t *block = malloc(bytes);
    if (block == NULL) {
        fy_error("malloc(%zu) for %u %s failed", bytes, pool->block_objects, pool->what);
        return false;
    }
    block->next = pool->blocks;
    block->count = pool->block_objects;
    pool->blocks = block;
    for (unsigned i = 0; i < block->count; i++) {
        fy_pool_slot_t *slot = (fy_pool_slot_t *)(block->slots + (size_t)i * pool->slot_size);
        slot->in_use = 0;
        fy_list_push_tail(&pool->free, &slot->link);
    }
    return true;
}

void fy_pool_destroy(fy_pool_t *pool, void (*release)(void *arg, void *object), void *arg)
{
    while (pool->blocks != NULL) {
        fy_pool_block_t *block = pool->blocks;
        pool->blocks = block->next;
        for (unsigned i = 0; i < block->count; i++) {
            fy_pool_slot_t *slot = (fy_pool_slot_t *)(block->slots + (size_t)i * pool->slot_size);
            if (slot->in_use && release != NULL)
                release(arg, (char *)slot + FY_POOL_HEADER_SIZE);
        }
        free(block);
    }
    fy_list_init(&pool->free);
}
