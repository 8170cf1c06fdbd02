/* ft_pair.h: the two-process scaffold. */
#include "ft_pair.h"

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_ferry.h"
#include "ft_files.h"
#include "ft_peer.h"
#include "ft_progress.h"
#include "ft_tag.h"

#define FT_PAIR_TOKEN_END 0x50454e44u /* "PEND" */

typedef struct ft_pair_job {
    ft_pair_fn_t fn;
    void *arg;
} ft_pair_job_t;

static int ft_pair_b(int chan, void *arg)
{
    const ft_pair_job_t *job = arg;
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    size_t length = ft_recv_address(chan, address, sizeof(address), FT_TAG_TIMEOUT);
    ft_pair_t p = {.self = FT_PAIR_B, .peer = FT_PAIR_A, .worker = f.worker, .chan = chan};
    p.ep = ft_ep_create(f.worker, address, length, NULL);
    job->fn(&p, job->arg);
    ft_progress_until_token(f.worker, chan, FT_PAIR_TOKEN_END, FT_TAG_TIMEOUT, NULL);
    ferry_ep_destroy(p.ep);
    ft_ferry_fini(&f);
    return 0;
}

double ft_pair_run(ft_pair_fn_t fn, void *arg)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;
    ft_peer_t b;
    ft_ferry_t f;
    ft_pair_job_t job = {.fn = fn, .arg = arg};

    ft_set_role("a");
    ft_files_snapshot(&before);
    ft_peer_spawn(&b, "b", ft_pair_b, &job);
    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(b.chan, address, sizeof(address), FT_TAG_TIMEOUT);
    ft_send_address(b.chan, f.worker);
    ft_pair_t p = {.self = FT_PAIR_A, .peer = FT_PAIR_B, .worker = f.worker, .chan = b.chan};
    p.ep = ft_ep_create(f.worker, address, length, NULL);
    uint64_t start = ft_now_ns();
    fn(&p, arg);
    double seconds = (double)(ft_now_ns() - start) / 1e9;
    ft_chan_send_token(b.chan, FT_PAIR_TOKEN_END, 0, 0, 0, 0);
    ft_peer_expect_exit(&b, FT_TAG_TIMEOUT, 0);
    ferry_ep_destroy(p.ep);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    return seconds;
}
