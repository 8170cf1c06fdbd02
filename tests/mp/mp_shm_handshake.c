/* Hand-made shm handshakes a worker must refuse (issue 11's hostile peers, and the wake-up
 * flags of layout version 8): each connects to the worker's own listening socket, sends a HELLO
 * with four memfds that is well-formed but for one field, and must see the connection closed
 * without an answer, one "malformed handshake" warning naming the field, and the worker still
 * working (a ping-pong with a peer afterwards).
 *   flags     a flag bit the layout does not define (0x2)
 *   version   the previous layout's version (7: its peers fence every send, and know no flags)
 * The bad peers are raw sockets of this process; the echo peer is forked before capturing. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ft.h"
#include "ft_capture.h"
#include "ft_echo.h"
#include "mp_shm_raw.h"
#include "transport/shm/shm.h"
#include "wireup/address.h"

/* The shm record inside this worker's address. */
static shm_record_t hk_own_record(ferry_worker_t *worker)
{
    const void *address;
    size_t length;
    fy_address_t parsed;
    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    FT_CHECK_OK(fy_address_parse(address, length, &parsed));
    const fy_address_record_t *rec = fy_address_find(&parsed, fy_tl_shm_ops.id);
    FT_CHECK(rec != NULL && rec->length == sizeof(shm_record_t), "the address has no shm record");
    shm_record_t record;
    memcpy(&record, rec->data, sizeof(record));
    return record;
}

/* Connect to the listener by hand and send msg with four memfds; progress the worker until it
 * closes the connection (it must not answer). */
static void hk_send_hello(ferry_worker_t *worker, const shm_record_t *record,
                          const shm_handshake_t *msg, const char *what)
{
    int fd = mp_shm_raw_connect(record, SOCK_NONBLOCK);
    FT_CHECK(fd >= 0, "connect to the worker's shm socket: %s", strerror(errno));
    int fds[SHM_HANDSHAKE_FDS];
    mp_shm_raw_memfds(fds, SHM_HANDSHAKE_FDS, "handshake-test", 0);
    FT_CHECK(mp_shm_raw_send_handshake(fd, msg, fds, SHM_HANDSHAKE_FDS) == (ssize_t)sizeof(*msg),
             "sendmsg(%s HELLO): %s", what, strerror(errno));
    uint64_t deadline = ft_now_ns() + 10000000000ull;
    for (;;) {
        char answer[64];
        ssize_t n = recv(fd, answer, sizeof(answer), 0);
        FT_CHECK(n <= 0, "the worker answered a HELLO with %s (%zd bytes)", what, n);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            break;
        FT_CHECK(errno == EAGAIN, "recv: %s", strerror(errno));
        FT_CHECK(ft_now_ns() < deadline, "the worker kept a HELLO with %s open for 10 s", what);
        ferry_worker_progress(worker);
    }
    for (int i = 0; i < SHM_HANDSHAKE_FDS; i++)
        close(fds[i]);
    close(fd);
}

int main(void)
{
    ft_ferry_t f;
    ft_peer_t echo;
    ft_echo_client_t client;

    ft_set_role("parent");
    ft_watchdog(55);
    ft_peer_spawn(&echo, "echo", ft_echo_role, NULL);
    ft_ferry_init(&f, "self,shm", NULL);
    shm_record_t record = hk_own_record(f.worker);
    shm_handshake_t good = mp_shm_raw_hello();
    good.flags = SHM_HANDSHAKE_MEMBARRIER;

    ft_capture_begin();
    shm_handshake_t msg = good;
    msg.flags = SHM_HANDSHAKE_MEMBARRIER | 0x2u;
    hk_send_hello(f.worker, &record, &msg, "an unknown flag");
    msg = good;
    msg.version = 7;
    msg.flags = 0;
    hk_send_hello(f.worker, &record, &msg, "layout version 7");
    char *text = ft_capture_end();
    FT_CHECK(ft_count(text, "shm: malformed handshake") == 2,
             "%zu malformed-handshake warnings for 2 bad HELLOs:\n%s",
             ft_count(text, "shm: malformed handshake"), text);
    FT_CHECK(ft_count(text, "flags 0x3)") == 1, "the unknown flag is not named:\n%s", text);
    FT_CHECK(ft_count(text, "version 7,") == 1, "the old version is not named:\n%s", text);
    free(text);

    /* the worker still works */
    ft_echo_connect(&client, f.worker, &echo);
    ft_echo_pingpong(&client, 100, 8);
    ft_echo_pingpong(&client, 20, 3000);
    ft_echo_finish(&client, &echo);
    ft_ferry_fini(&f);
    ft_note("passed");
    return 0;
}
