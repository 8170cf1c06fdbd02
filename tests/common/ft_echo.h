/* An echo peer, to show that a process still works with others after something went wrong:
 * ft_echo_role (a role for ft_peer_spawn) creates a worker, sends its address over the
 * channel, and answers every FT_ECHO_ID_PING with an FT_ECHO_ID_PONG of the same sequence
 * number and size, checking every byte of the ping and filling the pong with its own pattern,
 * until the channel brings FT_ECHO_TOKEN_DONE; it then waits for the channel to close and
 * exits 0. The client side (ft_echo_client_t) connects, ping-pongs and finishes. Tests that
 * use it keep the ids FT_ECHO_ID_PING and FT_ECHO_ID_PONG free. */
#ifndef FT_ECHO_H
#define FT_ECHO_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "ft_peer.h"

enum { FT_ECHO_ID_PING = 120, FT_ECHO_ID_PONG = 121 };
#define FT_ECHO_TOKEN_DONE 0x45434844u

int ft_echo_role(int chan, void *arg);

typedef struct ft_echo_client {
    ferry_worker_t *worker;
    ferry_ep_t *ep;
    uint32_t seq;    /* next ping */
    uint64_t pongs;  /* pongs received (checked) */
    unsigned errors; /* error callbacks of ep */
    ferry_status_t error;
} ft_echo_client_t;

/* Receive the echo peer's address on its channel, create the endpoint (with an error callback
 * that counts into c->errors) and set the PONG handler on worker. */
void ft_echo_connect(ft_echo_client_t *c, ferry_worker_t *worker, ft_peer_t *echo);

/* n round trips of size bytes; fails if one does not come back within 30 s or if the
 * endpoint failed. */
void ft_echo_pingpong(ft_echo_client_t *c, unsigned n, size_t size);

/* Tell the echo peer DONE, close the endpoint gracefully, close the channel, and expect the
 * peer to exit 0. */
void ft_echo_finish(ft_echo_client_t *c, ft_peer_t *echo);

#endif
