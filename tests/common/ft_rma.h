/* One-sided operations for the tests: one description of an operation (put, get, their iov
 * forms, atomics), started once or run to the end (retrying FERRY_ERR_NO_RESOURCE with
 * progress, waiting for the completion), flushes with deadlines, remote keys over a channel,
 * big messages over a channel (bitmaps of results), and a probe of cross-memory attach.
 *
 * Every helper that "runs" an operation returns its FINAL status: the call's own when it did not
 * return FERRY_INPROGRESS, else the completion's. */
#ifndef FT_RMA_H
#define FT_RMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ferry/ferry.h>

typedef enum ft_rma_kind {
    FT_RMA_PUT,   /* ferry_put(buffer, length, offset) */
    FT_RMA_GET,   /* ferry_get(buffer, length, offset) */
    FT_RMA_PUTV,  /* ferry_putv(iov, remote) */
    FT_RMA_GETV,  /* ferry_getv(iov, remote) */
    FT_RMA_POST,  /* ferry_atomic_post(aop, value, size, offset) */
    FT_RMA_FETCH, /* ferry_atomic_fetch(aop, value, compare, size, offset, result) */
} ft_rma_kind_t;

typedef struct ft_rma_op {
    ft_rma_kind_t kind;
    void *buffer; /* PUT/GET */
    size_t length;
    uint64_t offset;        /* PUT/GET/atomics */
    const ferry_iov_t *iov; /* PUTV/GETV */
    size_t iovcnt;
    const ferry_remote_iov_t *remote;
    size_t remote_count;
    ferry_atomic_op_t aop; /* atomics */
    uint64_t value;
    uint64_t compare;
    size_t size;
    uint64_t *result;
} ft_rma_op_t;

/* "ferry_put(4096 bytes at offset 13)" into buf. */
const char *ft_rma_describe(const ft_rma_op_t *op, char *buf, size_t len);

/* Shorthands. */
ft_rma_op_t ft_rma_put(const void *buffer, size_t length, uint64_t offset);
ft_rma_op_t ft_rma_get(void *buffer, size_t length, uint64_t offset);
ft_rma_op_t ft_rma_putv(const ferry_iov_t *iov, size_t iovcnt, const ferry_remote_iov_t *remote,
                        size_t remote_count);
ft_rma_op_t ft_rma_getv(const ferry_iov_t *iov, size_t iovcnt, const ferry_remote_iov_t *remote,
                        size_t remote_count);
ft_rma_op_t ft_rma_post(ferry_atomic_op_t aop, uint64_t value, size_t size, uint64_t offset);
ft_rma_op_t ft_rma_fetch(ferry_atomic_op_t aop, uint64_t value, uint64_t compare, size_t size,
                         uint64_t offset, uint64_t *result);

/* One call. comp (may be NULL) is counted as in ft_am_try_send: raised by one before the call
 * and lowered again unless the call returned FERRY_INPROGRESS. */
ferry_status_t ft_rma_try(ferry_ep_t *ep, ferry_rkey_t *rkey, const ft_rma_op_t *op,
                          ferry_completion_t *comp);

/* Start op, retrying FERRY_ERR_NO_RESOURCE (with progress) for at most timeout_ms. */
ferry_status_t ft_rma_start(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                            const ft_rma_op_t *op, ferry_completion_t *comp, int timeout_ms);

/* Start op and wait for its completion; returns the final status. *inprogress_p (may be NULL)
 * tells whether the call returned FERRY_INPROGRESS. */
ferry_status_t ft_rma_run(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                          const ft_rma_op_t *op, int timeout_ms, bool *inprogress_p);

/* ft_rma_run, and fail unless the final status is expected. */
void ft_rma_expect(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                   const ft_rma_op_t *op, ferry_status_t expected, const char *what);

/* ferry_ep_flush / ferry_worker_flush and wait; fail unless they end with FERRY_OK. */
void ft_rma_flush_ep(ferry_worker_t *worker, ferry_ep_t *ep, int timeout_ms);
void ft_rma_flush_worker(ferry_worker_t *worker, int timeout_ms);

/* Pack mem's key and send it over the channel. */
void ft_rkey_send(int chan, ferry_mem_t *mem);
/* Receive a packed key (returns its length, at most cap). */
size_t ft_rkey_recv(int chan, void *buf, size_t cap, int timeout_ms);
/* Receive a packed key and unpack it on ep (must succeed). */
ferry_rkey_t *ft_rkey_recv_unpack(int chan, ferry_ep_t *ep, int timeout_ms);

/* Messages longer than a channel message, in pieces. */
void ft_chan_send_big(int chan, const void *buf, size_t len);
void ft_chan_recv_big(int chan, void *buf, size_t len, int timeout_ms);

/* Can this process read pid's memory with process_vm_readv? (addr: a readable address there,
 * e.g. of a global variable when pid was forked from us.) On false, *why_p says why. */
bool ft_cma_usable(pid_t pid, const void *addr, const char **why_p);

/* FERRY_SHM_CMA=off (or 0/no/false) is set in the environment. */
bool ft_cma_forced_off(void);

#endif
