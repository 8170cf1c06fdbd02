/* A two-process test: this process (role "a") and a peer forked from it (role "b", ft_peer.h),
 * each with its own ferry worker and an endpoint to the other, the addresses exchanged over
 * their channel (ft_chan.h). */
#ifndef FT_PAIR_H
#define FT_PAIR_H

#include <ferry/ferry.h>

enum { FT_PAIR_A = 1, FT_PAIR_B = 2 }; /* nonzero: usable as sender ids in patterns */

typedef struct ft_pair {
    unsigned self, peer;    /* FT_PAIR_A or FT_PAIR_B */
    ferry_worker_t *worker; /* this process's */
    ferry_ep_t *ep;         /* to the other process */
    int chan;               /* the channel between the two */
} ft_pair_t;

/* The test, run in both processes. */
typedef void (*ft_pair_fn_t)(ft_pair_t *pair, void *arg);

/* Fork b, connect both ways, run fn(pair, arg) in both; then b progresses until a says the test
 * is over, a checks that b exited with 0, both tear down, and a checks that nothing of ferry's
 * is left in /dev/shm or /tmp. Call it first thing (before any ferry object exists), with the
 * watchdog set. Returns the seconds fn took in a. */
double ft_pair_run(ft_pair_fn_t fn, void *arg);

#endif
