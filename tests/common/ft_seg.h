/* The owner of the segment DMA tests, as a forked peer, and the importer's side of its checks.
 *
 * The owner publishes segment 1 (size1 bytes of ferry_mem_alloc memory: importers reach it
 * through the mapping) and segment 2 (size2 bytes of malloc'ed memory it registers: reached by
 * cross-memory attach, or by the owner's progress with FERRY_SHM_CMA=off), both available, sends
 * its address, and then, for each FT_SEG_CHECK token, checks the importer's bytes at the range
 * (pattern seed ft_pattern_seed(FT_SEG_IMPORTER, seq, length)), writes its own there (seed
 * ft_pattern_seed(FT_SEG_OWNER, seq, length)) and answers FT_SEG_OK; FT_SEG_EXIT ends it. */
#ifndef FT_SEG_H
#define FT_SEG_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

enum { FT_SEG_CHECK = 0x43484b20, FT_SEG_OK = 0x4f4b2020, FT_SEG_EXIT = 0x45584954 };
enum { FT_SEG_IMPORTER = 1, FT_SEG_OWNER = 2 }; /* the "who" of the patterns' seeds */

typedef struct ft_seg_sizes {
    size_t size1; /* segment 1: ferry_mem_alloc memory */
    size_t size2; /* segment 2: registered malloc'ed memory */
} ft_seg_sizes_t;

/* The owner's role function for ft_peer_spawn; arg: a ft_seg_sizes_t. */
int ft_seg_owner(int chan, void *arg);

/* Importer: ask the owner on chan to check [offset, offset + length) of segment s (1 or 2)
 * against seq and write its own pattern there; progress worker until it answered. */
void ft_seg_owner_check(ferry_worker_t *worker, int chan, unsigned s, uint64_t offset,
                        uint64_t length, uint64_t seq, int timeout_ms);

/* Poll q by ferry_dma_state, progressing worker, until it leaves FERRY_DMA_RUNNING (status
 * FERRY_INPROGRESS meanwhile); it must end FERRY_DMA_DONE with FERRY_OK. Fails the test after
 * timeout_ms. */
void ft_seg_dma_poll_done(ferry_worker_t *worker, const ferry_dma_queue_t *q, int timeout_ms);

/* A scatter list of count entries over one allocation of count * 2000 bytes, *bufs (the caller
 * frees it and the list): entry k is 1 + (k * 7919) % 2000 bytes (kept within its 2000) at
 * *bufs + k * 2000 and at segment offset k * 2000 + k % 13: disjoint, of many lengths and
 * alignments; each is FERRY_DMA_WRITE and holds the importer's pattern of seq0 + k. */
ferry_dma_entry_t *ft_seg_scatter(size_t count, uint64_t seq0, uint8_t **bufs);

#endif
