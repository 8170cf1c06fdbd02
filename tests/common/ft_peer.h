/* Peers: real processes forked from the test, each running a role function, each joined to
 * the test by a channel (a SOCK_SEQPACKET socketpair, see ft_chan.h).
 *
 * Fork peers BEFORE this process creates any ferry object: a child would otherwise inherit
 * the parent's sockets and memfds (a dead parent would then not look dead to its peers).
 *
 * Every peer is registered: a failed check kills them all (ft_fail), progress loops notice a
 * peer that exited with an error (ft_peers_check), and peers die with their parent
 * (PR_SET_PDEATHSIG). */
#ifndef FT_PEER_H
#define FT_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Runs in the child; chan is its end of the channel to the parent. The return value is the
 * child's exit code (0 success, 77 skipped, else failure). */
typedef int (*ft_role_fn_t)(int chan, void *arg);

typedef struct ft_peer {
    const char *name;
    pid_t pid;
    int chan; /* the parent's end of the channel (left open after the peer exits, so
                 that its last messages can still be read) */
    bool reaped;
    int wstatus; /* waitpid status once reaped */
} ft_peer_t;

/* Fork a peer running fn(chan, arg); peer must stay valid until it is reaped. */
void ft_peer_spawn(ft_peer_t *peer, const char *name, ft_role_fn_t fn, void *arg);

/* Reap the peer if it has exited, without waiting; true once reaped (peer->wstatus). */
bool ft_peer_try_reap(ft_peer_t *peer);

/* Wait up to timeout_ms for the peer to exit. Returns true when it exited (peer->wstatus);
 * on timeout it is killed with SIGKILL, reaped, and false is returned. */
bool ft_peer_wait(ft_peer_t *peer, int timeout_ms);

/* Wait for the peer and fail unless it exited with code. A peer that exited with 77 makes
 * this process skip too. */
void ft_peer_expect_exit(ft_peer_t *peer, int timeout_ms, int code);

/* SIGKILL the peer and reap it. Returns the monotonic time (ns) at which the signal was sent,
 * the start of "how long did the survivor take to notice". */
uint64_t ft_peer_kill(ft_peer_t *peer);

/* Non-blocking: fail at once if a peer exited with an error or a signal (it already printed
 * why); a peer that exited with 77 makes the test skip. Cheap enough for progress loops. */
void ft_peers_check(void);

/* Failure path: SIGKILL and reap every registered peer still alive. */
void ft_peers_abort(void);
/* The same from a signal handler: only kill(2). */
void ft_peers_kill_all_signal_safe(void);

/* "exited with 3", "killed by signal 9 (Killed)". */
const char *ft_wstatus_string(int wstatus, char *buf, size_t len);

#endif
