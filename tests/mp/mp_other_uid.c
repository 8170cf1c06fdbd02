/* A process of another user cannot connect to a worker, and the worker keeps working.
 *
 * A child drops to nobody (uid/gid 65534) and tries, against the parent's worker:
 *   plain    ferry_ep_create with the address as published: refused (the address says the
 *            worker belongs to another uid: FERRY_ERR_UNREACHABLE), or an endpoint whose
 *            error callback fires;
 *   forged   the same address with the uid field of its shm record changed to nobody's (a
 *            peer that lies to get past that first check): refused, by the client's own
 *            SO_PEERCRED check or the listener's;
 *   raw      a hand-made connection to the worker's socket with a well-formed HELLO and
 *            three memfds (a hostile peer without ferry's client-side checks).
 * The parent logs a warning naming the refused pid and uid (checked in its captured stderr),
 * creates no endpoint, and afterwards still ping-pongs with a third process.
 * Needs root (setuid): skipped otherwise. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ft.h"
#include "mp_shm_raw.h"
#include "transport/shm/shm.h"
#include "wireup/address.h"

#define OU_NOBODY 65534

enum { OU_TOKEN_RESULT = 0x52534c54, OU_TOKEN_READY = 0x52454459 };
enum { OU_PLAIN = 1, OU_FORGED = 2, OU_RAW = 3 };
enum { OU_ID_HELLO = 7 };

static ferry_status_t ou_hello_handler(void *arg, const void *header, size_t header_length,
                                       void *data, size_t length,
                                       const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    ft_fail_at(__FILE__, __LINE__, "a message from another user's process was delivered");
}

/* The shm record inside an address blob (NULL if there is none). */
static shm_record_t *ou_shm_record(uint8_t *blob, size_t length)
{
    fy_address_t parsed;
    FT_CHECK_OK(fy_address_parse(blob, length, &parsed));
    const fy_address_record_t *rec = fy_address_find(&parsed, fy_tl_shm_ops.id);
    if (rec == NULL || rec->length != sizeof(shm_record_t))
        return NULL;
    return (shm_record_t *)(blob + (rec->data - blob));
}

typedef struct ou_errors {
    unsigned count;
    ferry_status_t status;
} ou_errors_t;

static void ou_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    ou_errors_t *e = arg;
    (void)ep;
    if (e->count++ == 0)
        e->status = status;
}

static bool ou_error_seen(void *arg)
{
    return ((ou_errors_t *)arg)->count > 0;
}

/* Try to connect: returns the status of ferry_ep_create, or the endpoint's error. A message is
 * sent on an endpoint that was created, so that a connection that got through would be used. */
static ferry_status_t ou_try_connect(ferry_worker_t *worker, const void *address, size_t length)
{
    ou_errors_t errors = {0};
    ferry_ep_params_t params = {.error_cb = ou_error_cb, .error_arg = &errors};
    ferry_ep_t *ep = NULL;
    ferry_status_t status = ferry_ep_create(worker, address, length, &params, &ep);
    if (status != FERRY_OK)
        return status;
    uint32_t hello = 0x4f4c4c45;
    (void)ferry_am_send(ep, OU_ID_HELLO, &hello, sizeof(hello), NULL, 0, NULL);
    ft_progress_until(worker, 5000, ou_error_seen, &errors,
                      "the error callback of an endpoint to another user's worker");
    ferry_ep_destroy(ep);
    return errors.status;
}

/* A hostile peer: connect to the listening socket by hand and send a well-formed HELLO with
 * three memfds. Returns true when the connection was made (the listener must refuse it). */
static bool ou_raw_hello(const shm_record_t *record)
{
    int fd = mp_shm_raw_connect(record, 0);
    if (fd < 0) {
        ft_note("raw connect: %s", strerror(errno));
        return false;
    }
    int fds[3];
    mp_shm_raw_memfds(fds, 3, "hostile", MFD_ALLOW_SEALING);
    shm_handshake_t msg = mp_shm_raw_hello();
    ssize_t n = mp_shm_raw_send_handshake(fd, &msg, fds, 3);
    ft_note("raw HELLO: sendmsg returned %zd%s%s", n, n < 0 ? ": " : "",
            n < 0 ? strerror(errno) : "");
    /* the listener must close it without an answer */
    char answer[64];
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    n = recv(fd, answer, sizeof(answer), 0);
    FT_CHECK(n <= 0, "the listener answered a HELLO from another user (%zd bytes)", n);
    FT_CHECK(n == 0 || errno == ECONNRESET,
             "the listener neither closed nor answered within 5 s (%s)", strerror(errno));
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    close(fd);
    return true;
}

static int ou_nobody_role(int chan, void *arg)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    (void)arg;

    if (setgroups(0, NULL) != 0 || setgid(OU_NOBODY) != 0 || setuid(OU_NOBODY) != 0) {
        ft_note("SKIP: cannot become uid/gid %d: %s", OU_NOBODY, strerror(errno));
        return 77;
    }
    /* a change of credentials clears these */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_DUMPABLE, 1);
    FT_CHECK(getuid() == OU_NOBODY && geteuid() == OU_NOBODY, "still uid %d", (int)geteuid());

    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(chan, address, sizeof(address), 30000);
    shm_record_t *record = ou_shm_record(address, length);
    FT_CHECK(record != NULL, "the parent's address has no shm record");
    FT_CHECK(record->uid == 0, "the parent's address says uid %u", record->uid);

    ferry_status_t plain = ou_try_connect(f.worker, address, length);
    ft_chan_send_token(chan, OU_TOKEN_RESULT, OU_PLAIN, (uint64_t)(int64_t)plain, 0, 0);

    record->uid = OU_NOBODY;
    ferry_status_t forged = ou_try_connect(f.worker, address, length);
    ft_chan_send_token(chan, OU_TOKEN_RESULT, OU_FORGED, (uint64_t)(int64_t)forged, 0, 0);

    bool raw = ou_raw_hello(record);
    ft_chan_send_token(chan, OU_TOKEN_RESULT, OU_RAW, raw, 0, 0);
    ft_ferry_fini(&f);
    return 0;
}

int main(void)
{
    ft_peer_t nobody, echo;
    ft_echo_client_t client;
    ft_files_t before;
    ft_ferry_t f;

    ft_set_role("parent");
    ft_watchdog(55);
    if (geteuid() != 0)
        ft_skip("needs root to setuid() a child to nobody (uid %d); running as uid %d", OU_NOBODY,
                (int)geteuid());
    ft_files_snapshot(&before);
    ft_peer_spawn(&nobody, "nobody", ou_nobody_role, NULL);
    ft_peer_spawn(&echo, "echo", ft_echo_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, OU_ID_HELLO, ou_hello_handler, NULL));
    ft_capture_begin();
    ft_send_address(nobody.chan, f.worker);

    ft_token_t t;
    ft_progress_until_token(f.worker, nobody.chan, OU_TOKEN_RESULT, 30000, &t);
    ferry_status_t plain = (ferry_status_t)(int64_t)t.v[1];
    ft_progress_until_token(f.worker, nobody.chan, OU_TOKEN_RESULT, 30000, &t);
    ferry_status_t forged = (ferry_status_t)(int64_t)t.v[1];
    ft_progress_until_token(f.worker, nobody.chan, OU_TOKEN_RESULT, 30000, &t);
    bool raw = t.v[1] != 0;
    ft_note("nobody's attempts: plain address %s, forged uid %s, raw HELLO %s",
            ferry_status_name(plain), ferry_status_name(forged),
            raw ? "connected (then refused)" : "could not connect");
    FT_CHECK(plain < 0, "nobody connected to root's worker with its address");
    FT_CHECK(forged < 0, "nobody connected to root's worker with a forged address");

    /* the listener refused every connection it got from nobody, with a warning */
    char needle[96];
    snprintf(needle, sizeof(needle), "pid %d of uid %d", (int)nobody.pid, OU_NOBODY);
    ft_deadline_t deadline = ft_deadline_in_ms(5000);
    size_t refusals = 0, expected = raw ? 2 : 1; /* forged (and raw) connected */
    for (;;) {
        ft_progress_for_ms(f.worker, 10);
        char *text = ft_capture_text();
        refusals = ft_count(text, needle);
        free(text);
        if (refusals >= expected || ft_deadline_passed(deadline))
            break;
    }
    char *text = ft_capture_end();
    FT_CHECK(refusals >= expected,
             "%zu warnings naming \"%s\" in the parent's log, expected one per connection "
             "from nobody (log: %s)",
             refusals, needle, text);
    free(text);
    ft_peer_expect_exit(&nobody, 30000, 0);

    /* the worker still works */
    ft_echo_connect(&client, f.worker, &echo);
    ft_echo_pingpong(&client, 20, 3000);
    ft_echo_finish(&client, &echo);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed (%zu refusals logged)", refusals);
    return 0;
}
