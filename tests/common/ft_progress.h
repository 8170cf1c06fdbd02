/* Progress loops with a deadline: they make progress until a condition holds, and fail with
 * a description of what did not happen when the deadline passes. They never hang, and
 * notice peers that died meanwhile (ft_peers_check). */
#ifndef FT_PROGRESS_H
#define FT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include <ferry/ferry.h>

typedef struct ft_deadline {
    uint64_t end_ns;
} ft_deadline_t;

ft_deadline_t ft_deadline_in_ms(int timeout_ms);
bool ft_deadline_passed(ft_deadline_t deadline);

typedef bool (*ft_cond_fn_t)(void *arg);

/* Spin on ferry_worker_progress until cond(arg). Returns false on timeout. */
bool ft_progress_try_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg);
/* The same; fails with "timed out after N ms waiting for <what>". */
void ft_progress_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg,
                       const char *what);

/* Sleep in ferry_worker_wait (blocking mode) until cond(arg); fails on timeout. */
void ft_wait_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg,
                   const char *what);

/* Shorthands: until *counter >= target; until comp->count == 0. */
void ft_progress_until_count(ferry_worker_t *worker, int timeout_ms, const uint64_t *counter,
                             uint64_t target, const char *what);
void ft_progress_until_completion(ferry_worker_t *worker, int timeout_ms,
                                  const ferry_completion_t *comp, const char *what);

/* Make progress until a token with this tag arrives on the channel (ft_chan.h); returns
 * it. A process that waits for its peer must usually keep progressing: its queued sends
 * move only then. */
struct ft_token;
void ft_progress_until_token(ferry_worker_t *worker, int chan, uint32_t tag, int timeout_ms,
                             struct ft_token *token);

/* Receive the next channel message (at most cap bytes; returns its length) while the worker
 * keeps working: sleeps on the channel and the worker's fd (ferry_worker_arm) together and
 * progresses whenever the worker has events. For a peer that waits for its next command: a
 * send that returned FERRY_OK may still need this side's progress (a small send switched to
 * rendezvous by the receiver's EAGER_OFF is injected: the receiver's CTS or DONE comes
 * later); blocking in ft_chan_recv instead would leave that receive waiting forever. Fails
 * on timeout. */
size_t ft_wait_chan_recv(ferry_worker_t *worker, int chan, void *buf, size_t cap, int timeout_ms);

/* Keep making progress for ms milliseconds (letting a peer see our state; never the reason a
 * check passes). */
void ft_progress_for_ms(ferry_worker_t *worker, int ms);

/* One spin of a progress loop: progress once, and every so often check the peers and give
 * the CPU away (the test machines have few cores). Returns ferry_worker_progress's count. */
unsigned ft_progress_once(ferry_worker_t *worker);

#endif
