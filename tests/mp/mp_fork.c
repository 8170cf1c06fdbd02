/* fork() and ferry (ferry.h, "fork()"): descriptors are close-on-exec, a child's copies of its
 * parent's objects are dead, and a child may use ferry on its own.
 *
 *   mp_fork cloexec   workers connected over shm and over tcp, memory from ferry_mem_alloc:
 *                     every descriptor ferry opened (listed in /proc/self/fd) has FD_CLOEXEC
 *   mp_fork stream    the parent streams active messages (sizes from inline to fragmented) to a
 *                     server peer and forks a child without exec halfway: the child's calls on
 *                     every inherited object return FERRY_ERR_FORKED (or do nothing), it writes
 *                     garbage over its copy of the parent's registered buffer, destroys what it
 *                     inherited and exits; while it lives the server reads the parent's
 *                     registered and allocated memory with ferry_get and finds the parent's
 *                     bytes, and the memory ferry_mem_alloc gave is not mapped in the child
 *                     (MADV_DONTFORK); the server sees every message in order, byte-exact, and
 *                     no endpoint error; a reply reaches the parent after the child exited
 *   mp_fork exec      the parent forks and execs this program, which finds none of the
 *                     parent's ferry descriptors open, creates a worker, connects back and
 *                     exchanges messages (every byte checked) with the parent
 *   mp_fork child     a forked child (no exec) creates its own context and worker and exchanges
 *                     tagged messages (eager and rendezvous sizes) and active messages with its
 *                     parent, both ways, every byte checked
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ferry/counters.h>

#include "ft.h"

#define FK_MAGIC 0x4b524f46u /* "FORK" */
#define FK_STREAM_COUNT 3000
#define FK_MEM_SIZE (64u * 1024)
#define FK_MAX_FDS 256

enum { FK_ID_DATA = 40, FK_ID_REPLY = 41, FK_ID_HELLO = 42 };
enum {
    FK_TOKEN_COUNT = 0x434f554e, /* v0: messages the server checked */
    FK_TOKEN_KEYS = 0x4b455953,  /* then two packed keys follow as messages */
    FK_TOKEN_READ_OK = 0x52444f4b,
    FK_TOKEN_CHILD_READY = 0x43524459,
    FK_TOKEN_CHILD_GO = 0x43474f21,
    FK_TOKEN_EXIT = 0x45584954,
};

typedef struct fk_hdr {
    uint32_t magic;
    uint32_t seq;
    uint32_t size;
    uint32_t sender;
} fk_hdr_t;

static const size_t fk_sizes[] = {0, 8, 40, 200, 1000, 4096, 20000, 100000};
#define FK_NSIZES (sizeof(fk_sizes) / sizeof(fk_sizes[0]))

/* ------------------------------------------------------------------ descriptors */

/* The open descriptors of this process, sorted. Returns the count. */
static size_t fk_list_fds(int *fds, size_t cap)
{
    DIR *dir = opendir("/proc/self/fd");
    FT_CHECK(dir != NULL, "opendir(/proc/self/fd): %s", strerror(errno));
    int self = dirfd(dir);
    size_t n = 0;
    struct dirent *d;
    while ((d = readdir(dir)) != NULL) {
        if (d->d_name[0] == '.')
            continue;
        int fd = atoi(d->d_name);
        if (fd == self)
            continue;
        FT_CHECK(n < cap, "more than %zu descriptors", cap);
        fds[n++] = fd;
    }
    closedir(dir);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (size_t j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
            int t = fds[j];
            fds[j] = fds[j - 1];
            fds[j - 1] = t;
        }
    return n;
}

static bool fk_contains(const int *fds, size_t n, int fd)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] == fd)
            return true;
    return false;
}

/* The descriptors in after[] that were not in before[]: ferry's. */
static size_t fk_new_fds(const int *before, size_t nb, const int *after, size_t na, int *out)
{
    size_t n = 0;
    for (size_t i = 0; i < na; i++)
        if (!fk_contains(before, nb, after[i]))
            out[n++] = after[i];
    return n;
}

static void fk_fd_describe(int fd, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, buf, len - 1);
    buf[n < 0 ? 0 : n] = '\0';
}

/* ------------------------------------------------------------------ mp_fork cloexec */

static void fk_progress_all(ferry_worker_t **workers, size_t n, ferry_ep_t **eps, size_t neps)
{
    ft_deadline_t deadline = ft_deadline_in_ms(20000);
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < neps; i++) {
            ferry_ep_attr_t attr;
            FT_CHECK_OK(ferry_ep_query(eps[i], &attr));
            FT_CHECK_OK(attr.status);
            all = all && attr.connected;
        }
        if (all)
            return;
        FT_CHECK(!ft_deadline_passed(deadline), "endpoints not connected after 20 s");
        for (size_t i = 0; i < n; i++)
            ft_progress_once(workers[i]);
    }
}

static int fk_cloexec(void)
{
    int before[FK_MAX_FDS], after[FK_MAX_FDS], fresh[FK_MAX_FDS];
    size_t nb = fk_list_fds(before, FK_MAX_FDS);
    ft_ferry_t a, b, c;
    ft_ferry_init(&a, "self,shm,tcp", NULL); /* both transports */
    ft_ferry_init(&b, "shm", NULL);
    ft_ferry_init(&c, "tcp", NULL);
    const void *addr;
    size_t len;
    ferry_ep_t *eps[2];
    FT_CHECK_OK(ferry_worker_address(b.worker, &addr, &len));
    eps[0] = ft_ep_create(a.worker, addr, len, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(eps[0]), "shm") == 0, "a -> b over %s",
             ferry_ep_transport_name(eps[0]));
    FT_CHECK_OK(ferry_worker_address(c.worker, &addr, &len));
    eps[1] = ft_ep_create(a.worker, addr, len, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(eps[1]), "tcp") == 0, "a -> c over %s",
             ferry_ep_transport_name(eps[1]));
    ferry_worker_t *workers[3] = {a.worker, b.worker, c.worker};
    fk_progress_all(workers, 3, eps, 2);
    ferry_mem_t *mem;
    void *ptr;
    FT_CHECK_OK(ferry_mem_alloc(a.context, FK_MEM_SIZE, FERRY_ACCESS_ALL, &mem, &ptr));

    size_t na = fk_list_fds(after, FK_MAX_FDS);
    size_t nf = fk_new_fds(before, nb, after, na, fresh);
    unsigned sockets = 0, memfds = 0;
    for (size_t i = 0; i < nf; i++) {
        char what[256];
        fk_fd_describe(fresh[i], what, sizeof(what));
        int flags = fcntl(fresh[i], F_GETFD);
        FT_CHECK(flags >= 0 && (flags & FD_CLOEXEC), "descriptor %d (%s) is not close-on-exec",
                 fresh[i], what);
        sockets += strncmp(what, "socket:", 7) == 0;
        memfds += strncmp(what, "/memfd:", 7) == 0;
    }
    /* 3 epoll sets + tcp's own, sockets (listeners, connections), eventfds, memfds */
    FT_CHECK(nf >= 12 && sockets >= 6 && memfds >= 4,
             "only %zu new descriptors (%u sockets, %u memfds): did the set-up happen?", nf,
             sockets, memfds);
    ft_note("%zu descriptors ferry opened, all close-on-exec (%u sockets, %u memfds)", nf, sockets,
            memfds);
    FT_CHECK_OK(ferry_mem_deregister(mem));
    ferry_ep_destroy(eps[0]);
    ferry_ep_destroy(eps[1]);
    ft_ferry_fini(&c);
    ft_ferry_fini(&b);
    ft_ferry_fini(&a);
    return 0;
}

/* ------------------------------------------------------------------ the stream's server */

typedef struct fk_server {
    uint32_t next_seq;
    uint64_t checked;
    unsigned ep_errors;
} fk_server_t;

static void fk_check_message(const void *header, size_t header_length, const void *data,
                             size_t length, uint32_t sender, uint32_t expected_seq)
{
    fk_hdr_t h;
    FT_CHECK(header_length == sizeof(h), "header of %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.magic == FK_MAGIC && h.sender == sender, "bad header (magic %x sender %u)", h.magic,
             h.sender);
    FT_CHECK(h.seq == expected_seq, "message %u arrived where %u was expected", h.seq,
             expected_seq);
    FT_CHECK(h.size == length, "message %u: %zu bytes, %u expected", h.seq, length, h.size);
    ft_pattern_check(data, length, ft_pattern_seed(sender, h.seq, h.size), 0, "a message");
}

static ferry_status_t fk_server_data_cb(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length,
                                        const ferry_am_recv_params_t *params)
{
    fk_server_t *s = arg;
    (void)params;
    fk_check_message(header, header_length, data, length, 1, s->next_seq);
    s->next_seq++;
    s->checked++;
    return FERRY_OK;
}

static void fk_server_ep_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    fk_server_t *s = arg;
    (void)ep;
    (void)status;
    s->ep_errors++;
}

/* Receive a packed key over the channel and read the whole region with ferry_get. */
static void fk_server_read(ferry_worker_t *worker, ferry_ep_t *ep, int chan, uint64_t seed,
                           const char *what)
{
    uint8_t packed[FT_CHAN_MSG_MAX];
    size_t len = ft_chan_recv(chan, packed, sizeof(packed), 20000);
    ferry_rkey_t *rkey;
    FT_CHECK_OK(ferry_rkey_unpack(ep, packed, len, &rkey));
    uint8_t *buf = malloc(FK_MEM_SIZE);
    FT_CHECK(buf != NULL, "malloc");
    ferry_completion_t comp = {.count = 1};
    ferry_status_t status = ferry_get(ep, buf, FK_MEM_SIZE, 0, rkey, &comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_get: %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(worker, 20000, &comp, "the get");
    FT_CHECK_OK(comp.status);
    ft_pattern_check(buf, FK_MEM_SIZE, seed, 0, what);
    free(buf);
    ferry_rkey_release(rkey);
}

static int fk_server(int chan, void *arg)
{
    (void)arg;
    fk_server_t s = {0};
    ferry_worker_params_t wp = {.accepted_ep_error_cb = fk_server_ep_error,
                                .accepted_ep_error_arg = &s};
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, &wp);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, FK_ID_DATA, fk_server_data_cb, &s));
    ft_send_address(chan, f.worker);
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen = ft_recv_address(chan, addr, sizeof(addr), 20000);
    ferry_ep_t *ep = ft_ep_create(f.worker, addr, alen, NULL);

    /* the parent's memory, read while its child lives */
    ft_progress_until_token(f.worker, chan, FK_TOKEN_KEYS, 30000, NULL);
    fk_server_read(f.worker, ep, chan, ft_pattern_seed(7, 0, FK_MEM_SIZE), "registered memory");
    fk_server_read(f.worker, ep, chan, ft_pattern_seed(8, 0, FK_MEM_SIZE), "allocated memory");
    ft_chan_send_token(chan, FK_TOKEN_READ_OK, 0, 0, 0, 0);

    ft_progress_until_count(f.worker, 60000, &s.checked, FK_STREAM_COUNT, "the whole stream");
    FT_CHECK(s.ep_errors == 0, "%u endpoint errors", s.ep_errors);
    /* a reply: the connection still works both ways */
    fk_hdr_t h = {.magic = FK_MAGIC, .seq = 0, .size = 8, .sender = 2};
    uint8_t payload[8];
    ft_pattern_fill(payload, 8, ft_pattern_seed(2, 0, 8), 0);
    ft_am_send_ok(f.worker, ep, FK_ID_REPLY, &h, sizeof(h), payload, 8, NULL, 20000);
    ft_chan_send_token(chan, FK_TOKEN_COUNT, s.checked, s.ep_errors, 0, 0);
    ft_progress_until_token(f.worker, chan, FK_TOKEN_EXIT, 30000, NULL);
    FT_CHECK(s.ep_errors == 0, "%u endpoint errors", s.ep_errors);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ mp_fork stream */

typedef struct fk_parent {
    ft_ferry_t f;
    ferry_ep_t *ep;
    ferry_mem_t *reg;
    uint8_t *reg_buf;
    ferry_mem_t *alloc;
    uint8_t *alloc_buf;
    uint64_t replies;
} fk_parent_t;

static ferry_status_t fk_reply_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    uint64_t *replies = arg;
    (void)params;
    fk_check_message(header, header_length, data, length, 2, (uint32_t)*replies);
    (*replies)++;
    return FERRY_OK;
}

/* The child of mp_fork stream: everything it inherited is dead. */
static int fk_stream_child(int chan, void *arg)
{
    fk_parent_t *p = arg;
    ferry_worker_t *w = p->f.worker;
    ferry_ep_t *ep = p->ep;
    uint8_t buf[64] = {0};
    ferry_iov_t iov = {buf, sizeof(buf)};
    fk_hdr_t h = {.magic = FK_MAGIC};
    ferry_completion_t comp = {.count = 1};
    const void *addr;
    size_t alen;
    int fd;
    ferry_ep_t *ep2;
    ferry_worker_t *w2;
    ferry_mem_t *mem2;
    void *ptr2;
    void *packed;
    size_t plen;
    ferry_rkey_t *rkey2;
    uint64_t fetched;
    ferry_segment_t *seg;
    ferry_rsegment_t *rseg;
    ferry_counters_t counters = {.size = sizeof(counters)};
    ferry_ep_attr_t attr;
    ferry_peer_id_t id;

    FT_CHECK(ferry_worker_progress(w) == 0, "progress on an inherited worker did something");
    FT_CHECK_STATUS(ferry_worker_wait(w, 0), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_arm(w), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_get_fd(w, &fd), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_address(w, &addr, &alen), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_id(w, &id), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_counters(w, &counters), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_flush(w, &comp), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_am_set_handler(w, FK_ID_DATA, fk_reply_cb, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_tag_recv(w, &iov, 1, 1, ~0ull, NULL, &comp), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_tag_probe(w, 1, ~0ull, 0, NULL, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_create(w, buf, sizeof(buf), NULL, &ep2), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_segment_create(w, 5, 4096, 0, NULL, NULL, &seg), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_worker_create(p->f.context, NULL, &w2), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_mem_alloc(p->f.context, 4096, FERRY_ACCESS_ALL, &mem2, &ptr2),
                    FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_mem_register(p->f.context, &iov, 1, FERRY_ACCESS_ALL, 0, &mem2),
                    FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_rkey_pack(p->reg, &packed, &plen), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_am_send(ep, FK_ID_DATA, &h, sizeof(h), &iov, 1, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_tag_send(ep, &iov, 1, 1, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_put(ep, buf, 8, 0, NULL, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_get(ep, buf, 8, 0, NULL, NULL), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_atomic_fetch(ep, FERRY_ATOMIC_ADD, 1, 0, 8, 0, NULL, &fetched, NULL),
                    FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_flush(ep, &comp), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_fence(ep), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_query(ep, &attr), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_wait_connected(ep, 0), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_rkey_unpack(ep, buf, sizeof(buf), &rkey2), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_rsegment_connect(ep, 5, 0, 0, NULL, NULL, &rseg), FERRY_ERR_FORKED);
    FT_CHECK_STATUS(ferry_ep_close(ep, 0, NULL), FERRY_ERR_FORKED);
    FT_CHECK(comp.count == 1, "a completion was touched");

    /* memory: the registered buffer is a private copy here; the allocated one is absent */
    memset(p->reg_buf, 0xee, FK_MEM_SIZE);
    unsigned char vec;
    FT_CHECK(mincore(p->alloc_buf, 4096, &vec) != 0 && errno == ENOMEM,
             "memory from ferry_mem_alloc is mapped in a fork() child");
    ft_chan_send_token(chan, FK_TOKEN_CHILD_READY, 0, 0, 0, 0);
    ft_chan_expect_token(chan, FK_TOKEN_CHILD_GO, 30000);

    /* destroying what it inherited touches nothing shared */
    FT_CHECK_STATUS(ferry_mem_deregister(p->reg), FERRY_ERR_FORKED);
    ferry_ep_destroy(ep);
    ferry_worker_destroy(w);
    ferry_context_destroy(p->f.context);
    /* The inherited objects' memory stays with this child by design (ferry.h, "fork()"): end
     * without exit-time handlers. Under ASan, LeakSanitizer's exit check in this child (whose
     * parent had the worker's threads and mappings) got it killed with SIGKILL in about half
     * the runs. */
    fflush(NULL);
    _exit(0);
}

static void fk_send_key(int chan, ferry_mem_t *mem)
{
    void *packed;
    size_t plen;
    FT_CHECK_OK(ferry_rkey_pack(mem, &packed, &plen));
    ft_chan_send(chan, packed, plen);
    ferry_rkey_buffer_release(packed);
}

static int fk_stream(void)
{
    ft_peer_t server;
    ft_peer_spawn(&server, "server", fk_server, NULL);
    static fk_parent_t p;
    ft_ferry_init(&p.f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(p.f.worker, FK_ID_REPLY, fk_reply_cb, &p.replies));
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen = ft_recv_address(server.chan, addr, sizeof(addr), 20000);
    p.ep = ft_ep_create(p.f.worker, addr, alen, NULL);
    ft_send_address(server.chan, p.f.worker);
    FT_CHECK_OK(ferry_ep_wait_connected(p.ep, 20000));

    /* memory the server reads while the child lives */
    p.reg_buf = aligned_alloc(4096, FK_MEM_SIZE);
    FT_CHECK(p.reg_buf != NULL, "aligned_alloc");
    ft_pattern_fill(p.reg_buf, FK_MEM_SIZE, ft_pattern_seed(7, 0, FK_MEM_SIZE), 0);
    ferry_iov_t riov = {p.reg_buf, FK_MEM_SIZE};
    FT_CHECK_OK(ferry_mem_register(p.f.context, &riov, 1, FERRY_ACCESS_ALL, 0, &p.reg));
    void *aptr;
    FT_CHECK_OK(ferry_mem_alloc(p.f.context, FK_MEM_SIZE, FERRY_ACCESS_ALL, &p.alloc, &aptr));
    p.alloc_buf = aptr;
    ft_pattern_fill(p.alloc_buf, FK_MEM_SIZE, ft_pattern_seed(8, 0, FK_MEM_SIZE), 0);
    static uint8_t payload[100000];
    ft_peer_t child = {0};
    bool child_started = false, keys_sent = false, child_done = false;
    ferry_completion_t comp = {0};
    for (uint32_t seq = 0; seq < FK_STREAM_COUNT; seq++) {
        size_t size = fk_sizes[seq % FK_NSIZES];
        fk_hdr_t h = {.magic = FK_MAGIC, .seq = seq, .size = (uint32_t)size, .sender = 1};
        ft_progress_until_completion(p.f.worker, 20000, &comp, "the previous send");
        ft_pattern_fill(payload, size, ft_pattern_seed(1, seq, size), 0);
        ft_am_send_ok(p.f.worker, p.ep, FK_ID_DATA, &h, sizeof(h), payload, size, &comp, 20000);
        if (seq == FK_STREAM_COUNT / 4) {
            ft_progress_until_completion(p.f.worker, 20000, &comp, "the send before fork");
            ft_peer_spawn(&child, "child", fk_stream_child, &p);
            child_started = true;
        }
        ft_token_t tok;
        if (child_started && !keys_sent &&
            ft_chan_try_token(child.chan, FK_TOKEN_CHILD_READY, &tok)) {
            /* the child wrote over its copy: the server reads ours */
            ft_chan_send_token(server.chan, FK_TOKEN_KEYS, 0, 0, 0, 0);
            fk_send_key(server.chan, p.reg);
            fk_send_key(server.chan, p.alloc);
            keys_sent = true;
        }
        if (keys_sent && !child_done && ft_chan_try_token(server.chan, FK_TOKEN_READ_OK, &tok)) {
            ft_chan_send_token(child.chan, FK_TOKEN_CHILD_GO, 0, 0, 0, 0);
            child_done = true;
        }
    }
    FT_CHECK(child_started, "no child");
    if (!keys_sent) {
        ft_progress_until_token(p.f.worker, child.chan, FK_TOKEN_CHILD_READY, 30000, NULL);
        ft_chan_send_token(server.chan, FK_TOKEN_KEYS, 0, 0, 0, 0);
        fk_send_key(server.chan, p.reg);
        fk_send_key(server.chan, p.alloc);
    }
    if (!child_done) {
        ft_progress_until_token(p.f.worker, server.chan, FK_TOKEN_READ_OK, 30000, NULL);
        ft_chan_send_token(child.chan, FK_TOKEN_CHILD_GO, 0, 0, 0, 0);
    }
    /* the child exits while our traffic goes on */
    uint64_t child_end = ft_now_ns() + 30000ull * 1000000u;
    while (!ft_peer_try_reap(&child)) {
        FT_CHECK(ft_now_ns() < child_end, "the child (pid %d) did not exit within 30 s",
                 (int)child.pid);
        ft_progress_once(p.f.worker);
    }
    FT_CHECK(WIFEXITED(child.wstatus) && WEXITSTATUS(child.wstatus) == 0, "the child %s",
             ft_wstatus_string(child.wstatus, (char[64]){0}, 64));
    ft_progress_until_completion(p.f.worker, 20000, &comp, "the last send");
    ft_token_t count;
    ft_progress_until_token(p.f.worker, server.chan, FK_TOKEN_COUNT, 60000, &count);
    FT_CHECK(count.v[0] == FK_STREAM_COUNT && count.v[1] == 0, "server: %llu checked, %llu errors",
             (unsigned long long)count.v[0], (unsigned long long)count.v[1]);
    ft_progress_until_count(p.f.worker, 20000, &p.replies, 1, "the server's reply");
    /* our memory is still ours */
    ft_pattern_check(p.reg_buf, FK_MEM_SIZE, ft_pattern_seed(7, 0, FK_MEM_SIZE), 0, "registered");
    ft_pattern_check(p.alloc_buf, FK_MEM_SIZE, ft_pattern_seed(8, 0, FK_MEM_SIZE), 0, "allocated");
    ft_chan_send_token(server.chan, FK_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&server, 30000, 0);
    FT_CHECK_OK(ferry_mem_deregister(p.reg));
    FT_CHECK_OK(ferry_mem_deregister(p.alloc));
    free(p.reg_buf);
    ferry_ep_destroy(p.ep);
    ft_ferry_fini(&p.f);
    ft_note("%u messages streamed across a fork; the child's calls returned FERRY_ERR_FORKED",
            FK_STREAM_COUNT);
    return 0;
}

/* ------------------------------------------------------------------ exchanges */

/* Send count messages of every size on ep with id, from sender. */
static void fk_send_all(ferry_worker_t *w, ferry_ep_t *ep, unsigned id, uint32_t sender)
{
    static uint8_t payload[100000];
    ferry_completion_t comp = {0};
    for (uint32_t seq = 0; seq < 4 * FK_NSIZES; seq++) {
        size_t size = fk_sizes[seq % FK_NSIZES];
        fk_hdr_t h = {.magic = FK_MAGIC, .seq = seq, .size = (uint32_t)size, .sender = sender};
        ft_progress_until_completion(w, 20000, &comp, "the previous send");
        ft_pattern_fill(payload, size, ft_pattern_seed(sender, seq, size), 0);
        ft_am_send_ok(w, ep, id, &h, sizeof(h), payload, size, &comp, 20000);
    }
    ft_progress_until_completion(w, 20000, &comp, "the last send");
}

typedef struct fk_rx {
    uint32_t sender;
    uint64_t received;
    ferry_ep_t *reply_ep;
    uint8_t hello[FT_CHAN_MSG_MAX];
    size_t hello_length;
} fk_rx_t;

static ferry_status_t fk_rx_cb(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ferry_am_recv_params_t *params)
{
    fk_rx_t *rx = arg;
    fk_check_message(header, header_length, data, length, rx->sender, (uint32_t)rx->received);
    rx->received++;
    rx->reply_ep = params->reply_ep;
    return FERRY_OK;
}

static ferry_status_t fk_hello_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    fk_rx_t *rx = arg;
    (void)header;
    (void)header_length;
    (void)params;
    FT_CHECK(length <= sizeof(rx->hello), "hello of %zu bytes", length);
    memcpy(rx->hello, data, length);
    rx->hello_length = length;
    return FERRY_OK;
}

static bool fk_hello_arrived(void *arg)
{
    return ((fk_rx_t *)arg)->hello_length > 0;
}

/* Tagged messages of eager and rendezvous sizes, from ep's side to the peer (which receives
 * them with fk_tag_recv_all). */
static const size_t fk_tag_sizes[] = {0, 8, 1000, 8192, 65536, 1u << 20, 4u << 20};
#define FK_NTAG (sizeof(fk_tag_sizes) / sizeof(fk_tag_sizes[0]))

static void fk_tag_send_all(ferry_worker_t *w, ferry_ep_t *ep, uint32_t sender)
{
    for (size_t i = 0; i < FK_NTAG; i++) {
        size_t size = fk_tag_sizes[i];
        uint8_t *buf = malloc(size ? size : 1);
        FT_CHECK(buf != NULL, "malloc");
        ft_pattern_fill(buf, size, ft_pattern_seed(sender, i, size), 0);
        ferry_iov_t iov = {buf, size};
        ferry_completion_t comp = {.count = 1};
        ferry_status_t st;
        while ((st = ferry_tag_send(ep, &iov, 1, 0x100 + i, &comp)) == FERRY_ERR_NO_RESOURCE)
            ft_progress_once(w);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "ferry_tag_send: %s",
                 ferry_status_name(st));
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(w, 30000, &comp, "a tagged send");
        FT_CHECK_OK(comp.status);
        free(buf);
    }
}

static void fk_tag_recv_all(ferry_worker_t *w, uint32_t sender)
{
    for (size_t i = 0; i < FK_NTAG; i++) {
        size_t size = fk_tag_sizes[i];
        uint8_t *buf = malloc(size ? size : 1);
        FT_CHECK(buf != NULL, "malloc");
        ferry_iov_t iov = {buf, size};
        ferry_completion_t comp = {.count = 1};
        ferry_tag_info_t info;
        ferry_status_t st = ferry_tag_recv(w, &iov, 1, 0x100 + i, ~0ull, &info, &comp);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "ferry_tag_recv: %s",
                 ferry_status_name(st));
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(w, 30000, &comp, "a tagged receive");
        FT_CHECK_OK(comp.status);
        FT_CHECK(info.length == size, "tagged message %zu: %llu bytes", i,
                 (unsigned long long)info.length);
        ft_pattern_check(buf, size, ft_pattern_seed(sender, i, size), 0, "a tagged message");
        free(buf);
    }
}

/* ------------------------------------------------------------------ mp_fork exec / child */

/* The peer side of exec and child: a fresh worker that connects to the parent's address,
 * says hello (its own address), sends every size, receives every size back, then tagged
 * messages both ways. */
static int fk_connect_back(const uint8_t *parent_addr, size_t alen)
{
    fk_rx_t rx = {.sender = 10};
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, FK_ID_REPLY, fk_rx_cb, &rx));
    ferry_ep_t *ep = ft_ep_create(f.worker, parent_addr, alen, NULL);
    const void *mine;
    size_t mlen;
    FT_CHECK_OK(ferry_worker_address(f.worker, &mine, &mlen));
    ft_am_send_ok(f.worker, ep, FK_ID_HELLO, NULL, 0, mine, mlen, NULL, 20000);
    fk_send_all(f.worker, ep, FK_ID_DATA, 11);
    ft_progress_until_count(f.worker, 30000, &rx.received, 4 * FK_NSIZES, "the parent's replies");
    fk_tag_send_all(f.worker, ep, 12);
    fk_tag_recv_all(f.worker, 13);
    ferry_completion_t comp = {.count = 1};
    ferry_status_t st = ferry_ep_close(ep, 0, &comp);
    if (st == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 20000, &comp, "the close");
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

/* The parent side: serve one fk_connect_back peer. */
static void fk_serve_one(ft_ferry_t *f)
{
    fk_rx_t rx = {.sender = 11}, hello = {0};
    FT_CHECK_OK(ferry_am_set_handler(f->worker, FK_ID_DATA, fk_rx_cb, &rx));
    FT_CHECK_OK(ferry_am_set_handler(f->worker, FK_ID_HELLO, fk_hello_cb, &hello));
    ft_progress_until(f->worker, 30000, fk_hello_arrived, &hello, "the peer's hello");
    ferry_ep_t *ep = ft_ep_create(f->worker, hello.hello, hello.hello_length, NULL);
    ft_progress_until_count(f->worker, 30000, &rx.received, 4 * FK_NSIZES, "the peer's messages");
    fk_send_all(f->worker, ep, FK_ID_REPLY, 10);
    fk_tag_recv_all(f->worker, 12);
    fk_tag_send_all(f->worker, ep, 13);
    ferry_completion_t comp = {.count = 1};
    ferry_status_t st = ferry_ep_close(ep, 0, &comp);
    if (st == FERRY_INPROGRESS)
        ft_progress_until_completion(f->worker, 20000, &comp, "the close");
    ferry_ep_destroy(ep);
}

static int fk_exec_child(int argc, char **argv)
{
    ft_set_role("exec'd child");
    /* argv: exec-child <address hex> <fd>...: none of the parent's ferry fds is open */
    for (int i = 3; i < argc; i++) {
        int fd = atoi(argv[i]);
        FT_CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF,
                 "descriptor %d of the parent's ferry survived exec", fd);
    }
    size_t hex = strlen(argv[2]);
    uint8_t addr[FT_CHAN_MSG_MAX];
    FT_CHECK(hex % 2 == 0 && hex / 2 <= sizeof(addr), "address argument");
    for (size_t i = 0; i < hex / 2; i++) {
        unsigned v;
        FT_CHECK(sscanf(argv[2] + 2 * i, "%2x", &v) == 1, "address argument");
        addr[i] = (uint8_t)v;
    }
    return fk_connect_back(addr, hex / 2);
}

static int fk_exec(void)
{
    int before[FK_MAX_FDS], after[FK_MAX_FDS], fresh[FK_MAX_FDS];
    size_t nb = fk_list_fds(before, FK_MAX_FDS);
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    size_t nf = fk_new_fds(before, nb, after, fk_list_fds(after, FK_MAX_FDS), fresh);
    const void *addr;
    size_t alen;
    FT_CHECK_OK(ferry_worker_address(f.worker, &addr, &alen));
    char *hex = malloc(2 * alen + 1);
    FT_CHECK(hex != NULL, "malloc");
    for (size_t i = 0; i < alen; i++)
        sprintf(hex + 2 * i, "%02x", ((const uint8_t *)addr)[i]);
    char *args[FK_MAX_FDS + 4];
    char fdstr[FK_MAX_FDS][12];
    size_t n = 0;
    args[n++] = "mp_fork";
    args[n++] = "exec-child";
    args[n++] = hex;
    for (size_t i = 0; i < nf; i++) {
        snprintf(fdstr[i], sizeof(fdstr[i]), "%d", fresh[i]);
        args[n++] = fdstr[i];
    }
    args[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    FT_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        execv("/proc/self/exe", args);
        _exit(127);
    }
    fk_serve_one(&f);
    int wstatus;
    ft_deadline_t deadline = ft_deadline_in_ms(30000);
    while (waitpid(pid, &wstatus, WNOHANG) == 0) {
        FT_CHECK(!ft_deadline_passed(deadline), "the exec'd child did not exit");
        ft_progress_once(f.worker);
    }
    FT_CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "the exec'd child %s",
             ft_wstatus_string(wstatus, (char[64]){0}, 64));
    free(hex);
    ft_ferry_fini(&f);
    ft_note("fork + exec: %zu ferry descriptors closed by exec; the new program connected back",
            nf);
    return 0;
}

typedef struct fk_child_arg {
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen;
} fk_child_arg_t;

static int fk_child_role(int chan, void *arg)
{
    (void)chan;
    fk_child_arg_t *a = arg;
    return fk_connect_back(a->addr, a->alen);
}

static int fk_child(void)
{
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    static fk_child_arg_t a;
    const void *addr;
    FT_CHECK_OK(ferry_worker_address(f.worker, &addr, &a.alen));
    memcpy(a.addr, addr, a.alen);
    ft_peer_t child;
    ft_peer_spawn(&child, "child", fk_child_role, &a);
    fk_serve_one(&f);
    ft_peer_expect_exit(&child, 30000, 0);
    ft_ferry_fini(&f);
    ft_note("a forked child's own worker exchanged messages with its parent");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "exec-child") == 0)
        return fk_exec_child(argc, argv);
    ft_set_role("parent");
    ft_watchdog(85);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "cloexec") == 0)
        return fk_cloexec();
    if (strcmp(mode, "stream") == 0)
        return fk_stream();
    if (strcmp(mode, "exec") == 0)
        return fk_exec();
    if (strcmp(mode, "child") == 0)
        return fk_child();
    fprintf(stderr, "usage: mp_fork cloexec|stream|exec|child\n");
    return 2;
}
