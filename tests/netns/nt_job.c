/* The netns suite's job: bootstrap, worker, endpoints to every rank (see nt_job.h). */
#define _GNU_SOURCE
#include "nt_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft_check.h"
#include "ft_progress.h"

/* What every rank contributes to the address exchange (one fixed-size record, one
 * allgather): its host name and its compact worker address, the same size in every process. */
typedef struct nt_card {
    char host[NT_HOST_MAX];
    uint8_t address[FERRY_ADDRESS_COMPACT_SIZE];
} nt_card_t;

typedef struct nt_ep_arg {
    nt_job_t *job;
    unsigned peer;
} nt_ep_arg_t;

static char nt_role[128];
static nt_ep_arg_t *nt_ep_args;

double nt_ms_since(uint64_t start_ns)
{
    return (double)(ft_now_ns() - start_ns) / 1e6;
}

long nt_env_long(const char *name, long def)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    FT_CHECK(*end == '\0', "%s=%s is not a number", name, s);
    return v;
}

static void nt_ep_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    nt_ep_arg_t *a = arg;
    nt_peer_t *p = &a->job->peers[a->peer];
    (void)ep;
    if (p->error_calls++ == 0) {
        p->error = status;
        p->error_ns = ft_now_ns();
    }
    ft_note("endpoint to rank %u (%s) failed: %s", a->peer, p->host, ferry_status_name(status));
}

static void nt_accepted_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    nt_job_t *job = arg;
    (void)ep;
    job->accepted_errors++;
    ft_note("an accepted endpoint failed: %s", ferry_status_name(status));
}

static ferry_status_t nt_barrier_cb(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params);

void nt_job_init(nt_job_t *job, const char *name, unsigned deadline_s)
{
    memset(job, 0, sizeof(*job));
    setvbuf(stdout, NULL, _IOLBF, 0);
    long env_deadline = nt_env_long("NT_DEADLINE_S", 0);
    if (env_deadline > 0 && (unsigned long)env_deadline < deadline_s)
        deadline_s = (unsigned)env_deadline;
    ft_watchdog(deadline_s);
    gethostname(job->host, sizeof(job->host) - 1);
    snprintf(nt_role, sizeof(nt_role), "%s ?@%s", name, job->host);
    ft_set_role(nt_role);

    FT_CHECK_OK(ferry_bootstrap_init(NULL, &job->bs));
    job->rank = ferry_bootstrap_rank(job->bs);
    job->size = ferry_bootstrap_size(job->bs);
    snprintf(nt_role, sizeof(nt_role), "%s r%u@%s", name, job->rank, job->host);
    ft_note("rank %u of %u, pid %d, bootstrap %s", job->rank, job->size, (int)getpid(),
            ferry_bootstrap_method_name(ferry_bootstrap_method(job->bs)));

    FT_CHECK_OK(ferry_context_create(NULL, &job->context));
    ferry_worker_params_t wp = {.accepted_ep_error_cb = nt_accepted_error_cb,
                                .accepted_ep_error_arg = job};
    FT_CHECK_OK(ferry_worker_create(job->context, &wp, &job->worker));
    FT_CHECK_OK(ferry_am_set_handler(job->worker, NT_BARRIER_AM_ID, nt_barrier_cb, job));
    /* the bootstrap's collectives progress the worker: see nt_job_barrier */
    FT_CHECK_OK(ferry_bootstrap_set_progress(job->bs, job->worker));

    nt_card_t *mine = calloc(1, sizeof(*mine));
    nt_card_t *all = calloc(job->size, sizeof(*all));
    job->peers = calloc(job->size, sizeof(*job->peers));
    nt_ep_args = calloc(job->size, sizeof(*nt_ep_args));
    FT_CHECK(mine && all && job->peers && nt_ep_args, "out of memory");
    FT_CHECK_OK(ferry_worker_address_compact(job->worker, mine->address));
    memcpy(mine->host, job->host, sizeof(mine->host));
    nt_job_allgather(job, mine, sizeof(*mine), all);

    for (unsigned r = 0; r < job->size; r++) {
        nt_peer_t *p = &job->peers[r];
        memcpy(p->host, all[r].host, sizeof(p->host));
        p->host[NT_HOST_MAX - 1] = '\0';
        p->same_host = strcmp(p->host, job->host) == 0;
        if (r == job->rank)
            continue;
        nt_ep_args[r] = (nt_ep_arg_t){.job = job, .peer = r};
        ferry_ep_params_t ep_params = {.error_cb = nt_ep_error_cb, .error_arg = &nt_ep_args[r]};
        FT_CHECK_OK(ferry_ep_create(job->worker, all[r].address, sizeof(all[r].address), &ep_params,
                                    &p->ep));
    }
    free(all);
    free(mine);
}

void nt_job_check_transports(const nt_job_t *job)
{
    const char *forced = getenv("FERRY_TRANSPORTS");
    bool tcp_only = forced != NULL && strcmp(forced, "tcp") == 0;
    for (unsigned r = 0; r < job->size; r++) {
        const nt_peer_t *p = &job->peers[r];
        if (p->ep == NULL)
            continue;
        const char *name = ferry_ep_transport_name(p->ep);
        const char *want = p->same_host && !tcp_only ? "shm" : "tcp";
        ft_note("endpoint to rank %u on %s: %s", r, p->host, name);
        FT_CHECK(strcmp(name, want) == 0, "endpoint to rank %u on %s uses %s, expected %s", r,
                 p->host, name, want);
    }
}

/* A barrier message of epoch e arrives: count it under e's parity (a peer can be at most one
 * barrier ahead: it cannot leave barrier e+1 before this rank entered it). */
static ferry_status_t nt_barrier_cb(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    nt_job_t *job = arg;
    uint64_t epoch;
    (void)data;
    (void)length;
    FT_CHECK(header_length == sizeof(epoch), "barrier message with a %zu-byte header",
             header_length);
    memcpy(&epoch, header, sizeof(epoch));
    FT_CHECK(epoch == job->barrier_epoch || epoch == job->barrier_epoch + 1,
             "barrier message of epoch %llu in epoch %llu", (unsigned long long)epoch,
             (unsigned long long)job->barrier_epoch);
    job->barrier_arrived[epoch & 1]++;
    for (unsigned r = 0; r < job->size && r < 64; r++) {
        ferry_peer_id_t id;
        if (job->peers[r].ep != NULL && ferry_ep_peer_id(job->peers[r].ep, &id) == FERRY_OK &&
            id == params->peer)
            job->barrier_from[epoch & 1] |= 1ull << r;
    }
    return FERRY_OK;
}

typedef struct nt_barrier_wait {
    const nt_job_t *job;
    const ferry_completion_t *sends;
    unsigned expected;
    unsigned parity;
} nt_barrier_wait_t;

static bool nt_barrier_done(void *arg)
{
    const nt_barrier_wait_t *w = arg;
    return w->sends->count == 0 && w->job->barrier_arrived[w->parity] >= w->expected;
}

/* Two steps: (1) over ferry, progressing all the while, so that a peer whose one-sided
 * operations need this rank's progress (the target-executed protocol over tcp) can finish
 * them: every rank tells every peer it arrived and waits for all of them; (2) the bootstrap's
 * barrier, after which every rank has received every barrier message, so none is still in
 * flight when a rank moves on (and, say, destroys its endpoints). Step 2 progresses the worker
 * too (ferry_bootstrap_set_progress): a rank may finish step 1 while its own barrier message
 * still waits in its endpoint for the connection's handshake (a send to a connecting endpoint
 * completes from a copy), and only its progress posts it. Without that, the PMIx fence of the
 * mpirun job timed out now and then (mp_bootstrap_progress_shm has the case). */
void nt_job_barrier(nt_job_t *job)
{
    uint64_t epoch = job->barrier_epoch;
    ferry_completion_t sends = {0};
    unsigned expected = 0;
    for (unsigned r = 0; r < job->size; r++) {
        if (job->peers[r].ep == NULL)
            continue;
        ferry_status_t s =
            nt_am_send(job, r, NT_BARRIER_AM_ID, &epoch, sizeof(epoch), NULL, 0, &sends, 60000);
        FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "barrier message to rank %u: %s", r,
                 ferry_status_name(s));
        expected++;
    }
    nt_barrier_wait_t w = {
        .job = job, .sends = &sends, .expected = expected, .parity = (unsigned)(epoch & 1)};
    /* a slow barrier says what it waits for, every 10 s: which ranks' messages, how many sends */
    for (int waited_s = 10; !ft_progress_try_until(job->worker, 10000, nt_barrier_done, &w);
         waited_s += 10) {
        char missing[256] = "";
        for (unsigned r = 0; r < job->size && r < 64; r++) {
            if (job->peers[r].ep != NULL && !(job->barrier_from[epoch & 1] & (1ull << r)))
                snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %u", r);
        }
        ft_note("barrier %llu: after %d s, %u of %u messages arrived (missing from ranks:%s), "
                "%lld of my sends not complete",
                (unsigned long long)epoch, waited_s, job->barrier_arrived[epoch & 1], expected,
                missing, (long long)sends.count);
        FT_CHECK(waited_s < 60, "barrier %llu timed out", (unsigned long long)epoch);
    }
    FT_CHECK_OK(sends.status);
    job->barrier_arrived[epoch & 1] = 0;
    job->barrier_from[epoch & 1] = 0;
    job->barrier_epoch = epoch + 1;
    FT_CHECK_OK(ferry_bootstrap_barrier(job->bs));
}

void nt_job_allgather(nt_job_t *job, const void *mine, size_t length, void *all)
{
    FT_CHECK_OK(ferry_bootstrap_allgather(job->bs, mine, length, all));
}

static bool nt_peer_failed(void *arg)
{
    return ((const nt_peer_t *)arg)->error_calls > 0;
}

ferry_status_t nt_job_wait_error(nt_job_t *job, unsigned peer, int timeout_ms)
{
    nt_peer_t *p = &job->peers[peer];
    ft_progress_try_until(job->worker, timeout_ms, nt_peer_failed, p);
    return p->error;
}

void nt_job_close_all(nt_job_t *job, int timeout_ms)
{
    ferry_completion_t comp = {0};
    for (unsigned r = 0; r < job->size; r++) {
        nt_peer_t *p = &job->peers[r];
        if (p->ep == NULL || p->error_calls > 0)
            continue;
        comp.count++;
        ferry_status_t s = ferry_ep_close(p->ep, 0, &comp);
        FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "ferry_ep_close (rank %u): %s", r,
                 ferry_status_name(s));
        if (s == FERRY_OK)
            comp.count--;
    }
    nt_wait_completion(job, &comp, timeout_ms, "the graceful closes");
}

void nt_job_fini(nt_job_t *job, bool collective)
{
    if (collective) {
        /* everybody is done sending before anybody closes */
        nt_job_barrier(job);
    }
    for (unsigned r = 0; r < job->size; r++) {
        if (job->peers[r].ep != NULL)
            ferry_ep_destroy(job->peers[r].ep);
    }
    ferry_worker_destroy(job->worker);
    ferry_context_destroy(job->context);
    if (collective)
        ferry_bootstrap_finalize(job->bs);
    /* else: leave the bootstrap to process exit (a collective peer may be gone) */
    for (unsigned r = 0; r < job->size; r++)
        FT_CHECK(job->peers[r].error_calls <= 1,
                 "the error callback of the endpoint to rank %u "
                 "ran %u times",
                 r, job->peers[r].error_calls);
    free(job->peers);
    free(nt_ep_args);
    ft_note("done");
}

static ferry_status_t nt_send_retry(nt_job_t *job, ferry_completion_t *comp, int timeout_ms,
                                    ferry_status_t (*try_send)(void *arg, ferry_completion_t *c),
                                    void *arg)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    for (;;) {
        ferry_status_t s = try_send(arg, comp);
        if (s == FERRY_INPROGRESS && comp != NULL)
            comp->count++;
        if (s != FERRY_ERR_NO_RESOURCE)
            return s;
        ft_progress_once(job->worker);
        FT_CHECK(!ft_deadline_passed(deadline), "a send found no resource for %d ms", timeout_ms);
    }
}

typedef struct nt_send_args {
    ferry_ep_t *ep;
    unsigned id;
    const void *header;
    size_t header_length;
    const ferry_iov_t *iov;
    size_t iovcnt;
    uint64_t tag;
    const ferry_tag_send_params_t *params;
} nt_send_args_t;

static ferry_status_t nt_try_tag(void *arg, ferry_completion_t *comp)
{
    nt_send_args_t *a = arg;
    return ferry_tag_send_ext(a->ep, a->iov, a->iovcnt, a->tag, a->params, comp);
}

static ferry_status_t nt_try_am(void *arg, ferry_completion_t *comp)
{
    nt_send_args_t *a = arg;
    return ferry_am_send(a->ep, a->id, a->header, a->header_length, a->iov, a->iovcnt, comp);
}

ferry_status_t nt_tag_send(nt_job_t *job, unsigned peer, const ferry_iov_t *iov, size_t iovcnt,
                           uint64_t tag, ferry_completion_t *comp, int timeout_ms)
{
    nt_send_args_t a = {.ep = job->peers[peer].ep, .iov = iov, .iovcnt = iovcnt, .tag = tag};
    return nt_send_retry(job, comp, timeout_ms, nt_try_tag, &a);
}

ferry_status_t nt_tag_send_ext(nt_job_t *job, unsigned peer, const ferry_iov_t *iov, size_t iovcnt,
                               uint64_t tag, const ferry_tag_send_params_t *params,
                               ferry_completion_t *comp, int timeout_ms)
{
    nt_send_args_t a = {
        .ep = job->peers[peer].ep, .iov = iov, .iovcnt = iovcnt, .tag = tag, .params = params};
    return nt_send_retry(job, comp, timeout_ms, nt_try_tag, &a);
}

ferry_status_t nt_am_send(nt_job_t *job, unsigned peer, unsigned id, const void *header,
                          size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                          ferry_completion_t *comp, int timeout_ms)
{
    nt_send_args_t a = {.ep = job->peers[peer].ep,
                        .id = id,
                        .header = header,
                        .header_length = header_length,
                        .iov = iov,
                        .iovcnt = iovcnt};
    return nt_send_retry(job, comp, timeout_ms, nt_try_am, &a);
}

static bool nt_completion_done(void *arg)
{
    return ((const ferry_completion_t *)arg)->count == 0;
}

void nt_wait_completion(nt_job_t *job, const ferry_completion_t *comp, int timeout_ms,
                        const char *what)
{
    ft_progress_until(job->worker, timeout_ms, nt_completion_done, (void *)comp, what);
}
