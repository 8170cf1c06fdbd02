/* Channels between the test's processes: one SOCK_SEQPACKET socketpair per peer (made by
 * ft_peer_spawn), so every send is one message, received whole. Used for addresses, for
 * "go"/"done" tokens and for results; never for the data under test.
 *
 * Every receive has a deadline and fails (never hangs); while it waits it also notices
 * peers that died (ft_peers_check). */
#ifndef FT_CHAN_H
#define FT_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FT_CHAN_MSG_MAX 4096

void ft_chan_send(int chan, const void *buf, size_t len);

/* Receive one message (at most cap bytes; a longer one fails). Fails on timeout or when the
 * other side closed the channel. Returns the length. */
size_t ft_chan_recv(int chan, void *buf, size_t cap, int timeout_ms);

/* Non-blocking receive: true when a message was there (*len_p set). Fails on a closed
 * channel. */
bool ft_chan_try_recv(int chan, void *buf, size_t cap, size_t *len_p);

/* Small tagged messages: a tag (what happened) and up to four numbers. */
typedef struct ft_token {
    uint32_t tag;
    uint32_t reserved;
    uint64_t v[4];
} ft_token_t;

void ft_chan_send_token(int chan, uint32_t tag, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3);
/* Wait for the next message, which must be a token with this tag; returns it. */
ft_token_t ft_chan_expect_token(int chan, uint32_t tag, int timeout_ms);
/* Non-blocking: true when a token arrived (it must have this tag). */
bool ft_chan_try_token(int chan, uint32_t tag, ft_token_t *token);

/* Wait until the other side closed the channel (it exited). Fails on timeout or if a
 * message arrives instead. */
void ft_chan_expect_eof(int chan, int timeout_ms);

#endif
