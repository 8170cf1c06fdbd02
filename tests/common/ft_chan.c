/* Channel messages with deadlines. */
#define _GNU_SOURCE
#include "ft_chan.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "ft_check.h"
#include "ft_peer.h"

void ft_chan_send(int chan, const void *buf, size_t len)
{
    FT_CHECK(len <= FT_CHAN_MSG_MAX, "channel message of %zu bytes is too long", len);
    ssize_t n;
    do {
        n = send(chan, buf, len, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    FT_CHECK(n == (ssize_t)len, "send(channel fd %d, %zu bytes): %s", chan, len,
             n < 0 ? strerror(errno) : "short write");
}

/* Wait until chan is readable or timeout_ms passed (checking peers meanwhile). */
static bool ft_chan_wait_readable(int chan, int timeout_ms)
{
    uint64_t end = ft_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        struct pollfd pfd = {.fd = chan, .events = POLLIN};
        uint64_t now = ft_now_ns();
        if (now >= end)
            return false;
        int slice = (int)((end - now) / 1000000u) + 1;
        if (slice > 50)
            slice = 50;
        int r = poll(&pfd, 1, slice);
        if (r > 0)
            return true;
        FT_CHECK(r == 0 || errno == EINTR, "poll(channel fd %d): %s", chan, strerror(errno));
        ft_peers_check();
    }
}

static ssize_t ft_chan_read(int chan, void *buf, size_t cap, int flags)
{
    char tmp[FT_CHAN_MSG_MAX];
    ssize_t n;
    do {
        n = recv(chan, tmp, sizeof(tmp), flags | MSG_TRUNC);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -1;
    FT_CHECK(n >= 0, "recv(channel fd %d): %s", chan, strerror(errno));
    FT_CHECK(n > 0 || cap == (size_t)-1,
             "the other side of channel fd %d closed it (did that process exit or die?)", chan);
    if (cap == (size_t)-1)
        return n;
    FT_CHECK((size_t)n <= cap && (size_t)n <= sizeof(tmp),
             "channel message of %zd bytes, room for %zu", n, cap);
    memcpy(buf, tmp, (size_t)n);
    return n;
}

size_t ft_chan_recv(int chan, void *buf, size_t cap, int timeout_ms)
{
    FT_CHECK(ft_chan_wait_readable(chan, timeout_ms), "no message on channel fd %d within %d ms",
             chan, timeout_ms);
    ssize_t n = ft_chan_read(chan, buf, cap, 0);
    FT_CHECK(n >= 0, "channel fd %d was readable but had no message", chan);
    return (size_t)n;
}

bool ft_chan_try_recv(int chan, void *buf, size_t cap, size_t *len_p)
{
    ssize_t n = ft_chan_read(chan, buf, cap, MSG_DONTWAIT);
    if (n < 0)
        return false;
    *len_p = (size_t)n;
    return true;
}

void ft_chan_send_token(int chan, uint32_t tag, uint64_t v0, uint64_t v1, uint64_t v2, uint64_t v3)
{
    ft_token_t token = {.tag = tag, .v = {v0, v1, v2, v3}};
    ft_chan_send(chan, &token, sizeof(token));
}

static void ft_chan_check_token(const ft_token_t *token, size_t len, uint32_t tag)
{
    FT_CHECK(len == sizeof(*token), "channel: a %zu-byte message where a token was expected", len);
    FT_CHECK(token->tag == tag, "channel: token 0x%x where 0x%x was expected", token->tag, tag);
}

ft_token_t ft_chan_expect_token(int chan, uint32_t tag, int timeout_ms)
{
    ft_token_t token;
    size_t len = ft_chan_recv(chan, &token, sizeof(token), timeout_ms);
    ft_chan_check_token(&token, len, tag);
    return token;
}

bool ft_chan_try_token(int chan, uint32_t tag, ft_token_t *token)
{
    size_t len;
    if (!ft_chan_try_recv(chan, token, sizeof(*token), &len))
        return false;
    ft_chan_check_token(token, len, tag);
    return true;
}

void ft_chan_expect_eof(int chan, int timeout_ms)
{
    FT_CHECK(ft_chan_wait_readable(chan, timeout_ms),
             "channel fd %d still open after %d ms (the other side did not exit)", chan,
             timeout_ms);
    ssize_t n = ft_chan_read(chan, NULL, (size_t)-1, 0);
    FT_CHECK(n == 0, "channel fd %d: a %zd-byte message where its end was expected", chan, n);
}
