/* Per-context settings (ferry_context_params_t.config): a program's "NAME=value" settings win
 * over the environment for one context, and are checked like the environment.
 *
 *   rndv     (the environment says FERRY_RNDV_THRESH=1M) a context created with
 *            "FERRY_RNDV_THRESH=1k" sends 4 KiB tagged messages to a tag echo peer by
 *            rendezvous, a context of the same process without the setting sends them eager
 *            (the sender's counters say how each moved); every byte checked both ways, and
 *            ferry_context_config_lookup reports each context's value and where it came from
 *   tcp      (the environment says FERRY_TCP_TIMEOUT_MS=120000, FERRY_TRANSPORTS=tcp) a
 *            context created with "FERRY_TCP_TIMEOUT_MS=1500" fails its endpoint to a peer
 *            that stopped (SIGSTOP) with FERRY_ERR_ENDPOINT_TIMEOUT after 1.5 s, not 120 s
 *   bad      settings refused, each with FERRY_ERR_INVALID_PARAM, *context_p untouched and
 *            exactly one warning: not NAME=value, an unknown name (the closest suggested), a
 *            process-wide variable (FERRY_LOG_LEVEL, FERRY_BOOTSTRAP_RANK), values that do not
 *            parse as the variable's type (size, bool, int) or its own syntax
 *            (FERRY_RNDV_MODE, FERRY_RNDV_THRESH); good ones next to them change nothing */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ferry/counters.h>
#include <ferry/info.h>

#include "ft.h"
#include "ft_tag.h"

enum { CC_MESSAGES = 50, CC_SIZE = 4096 };

static void cc_create(const char *transports, const char *const *config, ft_ferry_t *f)
{
    ferry_context_params_t params = {.transports = transports, .config = config};
    FT_CHECK_OK(ferry_context_create(&params, &f->context));
    FT_CHECK_OK(ferry_worker_create(f->context, NULL, &f->worker));
}

/* The context's view of name: its value (text) and whether the context set it. */
static void cc_expect_value(const ferry_context_t *context, const char *name, const char *value,
                            bool from_context)
{
    ferry_config_info_t info = {.size = sizeof(info)};
    FT_CHECK_OK(ferry_context_config_lookup(context, name, &info));
    FT_CHECK(strcmp(info.value, value) == 0 && info.from_context == from_context,
             "%s in this context: value \"%s\" (from the context: %d), expected \"%s\" (%d)", name,
             info.value, info.from_context, value, from_context);
    FT_CHECK(info.from_environment, "%s: the test's environment sets it, lookup says not", name);
}

/* ------------------------------------------------------------------ rndv */

/* Send CC_MESSAGES round trips of CC_SIZE bytes; returns how many of our sends went eager and
 * how many by rendezvous. */
static void cc_roundtrips(ft_ferry_t *f, ft_peer_t *echo, uint64_t *eager_p, uint64_t *rndv_p)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    size_t length = ft_recv_address(echo->chan, address, sizeof(address), 30000);
    ferry_ep_t *ep = ft_ep_create(f->worker, address, length, NULL);
    for (unsigned i = 0; i < CC_MESSAGES; i++)
        ft_tag_echo_roundtrip(f->worker, ep, 100 + i, CC_SIZE);
    ferry_counters_t counters = {.size = sizeof(counters)};
    FT_CHECK_OK(ferry_ep_counters(ep, &counters));
    unsigned c = ferry_counters_size_class(CC_SIZE);
    *eager_p = counters.tag_modes[c][FERRY_COUNTERS_MODE_EAGER];
    *rndv_p = 0;
    for (unsigned m = 1; m < FERRY_COUNTERS_MODES; m++)
        *rndv_p += counters.tag_modes[c][m];
    ft_tag_echo_finish(f->worker, echo);
    ferry_ep_destroy(ep);
}

static void cc_rndv(void)
{
    static const char *const config[] = {"FERRY_RNDV_THRESH=1k", NULL};
    ft_peer_t echo_a, echo_b;
    ft_ferry_t mine, plain;
    uint64_t eager, rndv;

    FT_CHECK(getenv("FERRY_RNDV_THRESH") != NULL && strcmp(getenv("FERRY_RNDV_THRESH"), "1M") == 0,
             "this case runs with FERRY_RNDV_THRESH=1M in the environment (tests/mp/tests.cmake)");
    ft_peer_spawn(&echo_a, "tag echo a", ft_tag_echo_role, NULL);
    ft_peer_spawn(&echo_b, "tag echo b", ft_tag_echo_role, NULL);
    cc_create(NULL, config, &mine);
    cc_create(NULL, NULL, &plain);
    cc_expect_value(mine.context, "FERRY_RNDV_THRESH", "1k", true);
    cc_expect_value(plain.context, "FERRY_RNDV_THRESH", "1M", false);

    cc_roundtrips(&mine, &echo_a, &eager, &rndv);
    FT_CHECK(eager == 0 && rndv == CC_MESSAGES,
             "with FERRY_RNDV_THRESH=1k set for the context: %llu eager, %llu rendezvous sends "
             "of %u bytes, expected 0 and %u",
             (unsigned long long)eager, (unsigned long long)rndv, CC_SIZE, CC_MESSAGES);
    ft_note("context FERRY_RNDV_THRESH=1k (environment 1M): %llu of %u messages of %u B by "
            "rendezvous",
            (unsigned long long)rndv, CC_MESSAGES, CC_SIZE);
    cc_roundtrips(&plain, &echo_b, &eager, &rndv);
    FT_CHECK(eager == CC_MESSAGES && rndv == 0,
             "without a context setting (environment 1M): %llu eager, %llu rendezvous, expected "
             "%u and 0",
             (unsigned long long)eager, (unsigned long long)rndv, CC_MESSAGES);
    ft_note("context without a setting (environment 1M): %llu of %u eager",
            (unsigned long long)eager, CC_MESSAGES);
    ft_ferry_fini(&mine);
    ft_ferry_fini(&plain);
}

/* ------------------------------------------------------------------ tcp timeout */

static bool cc_failed(void *arg)
{
    return ((ft_echo_client_t *)arg)->errors > 0;
}

static void cc_tcp(void)
{
    static const char *const config[] = {"FERRY_TCP_TIMEOUT_MS=1500", NULL};
    ft_echo_client_t echo;
    ft_peer_t peer;
    ft_ferry_t f;

    FT_CHECK(getenv("FERRY_TCP_TIMEOUT_MS") != NULL &&
                 strcmp(getenv("FERRY_TCP_TIMEOUT_MS"), "120000") == 0,
             "this case runs with FERRY_TCP_TIMEOUT_MS=120000 in the environment");
    ft_peer_spawn(&peer, "stopped", ft_echo_role, NULL);
    cc_create("tcp", config, &f);
    cc_expect_value(f.context, "FERRY_TCP_TIMEOUT_MS", "1500", true);
    ft_echo_connect(&echo, f.worker, &peer);
    FT_CHECK(strcmp(ferry_ep_transport_name(echo.ep), "tcp") == 0, "the endpoint uses %s",
             ferry_ep_transport_name(echo.ep));
    ft_echo_pingpong(&echo, 20, 1000);
    uint64_t start = ft_now_ns();
    FT_CHECK(kill(peer.pid, SIGSTOP) == 0, "kill(SIGSTOP)");
    /* the environment's 120 s would outlast this wait and the test's timeout */
    ft_progress_until(f.worker, 30000, cc_failed, &echo,
                      "the endpoint to fail after the peer stopped");
    double ms = (double)(ft_now_ns() - start) / 1e6;
    FT_CHECK(echo.error == FERRY_ERR_ENDPOINT_TIMEOUT, "the endpoint failed with %s",
             ferry_status_name(echo.error));
    FT_CHECK(ms >= 1400,
             "the endpoint timed out %.0f ms after the peer stopped, before the "
             "context's 1500 ms",
             ms);
    ft_note("context FERRY_TCP_TIMEOUT_MS=1500 (environment 120000): a stopped peer timed out "
            "after %.0f ms",
            ms);
    ferry_ep_destroy(echo.ep);
    ft_ferry_fini(&f);
    ft_peer_kill(&peer);
}

/* ------------------------------------------------------------------ bad settings */

static void cc_expect_refused(const char *setting, const char *needle)
{
    const char *const config[] = {"FERRY_WAIT_SPIN_US=10", setting, NULL};
    ferry_context_params_t params = {.config = config};
    ferry_context_t *sentinel = (ferry_context_t *)(uintptr_t)0x5a5a5a5a;
    ferry_context_t *context = sentinel;

    ft_capture_begin();
    ferry_status_t status = ferry_context_create(&params, &context);
    char *log = ft_capture_end();
    FT_CHECK(status == FERRY_ERR_INVALID_PARAM,
             "ferry_context_create with \"%s\" returned %s, expected FERRY_ERR_INVALID_PARAM",
             setting, ferry_status_name(status));
    FT_CHECK(context == sentinel, "a refused ferry_context_create wrote *context_p");
    FT_CHECK(ft_count(log, "] WARN ") == 1 && ft_count(log, "\n") == 1 &&
                 strstr(log, needle) != NULL,
             "\"%s\": expected one warning saying \"%s\", got:\n%s", setting, needle, log);
    free(log);
}

static void cc_bad(void)
{
    cc_expect_refused("FERRY_TCP_TIMEOUT_MS", "is not NAME=value");
    cc_expect_refused("FERRY_TCP_TIMOUT_MS=100", "did you mean FERRY_TCP_TIMEOUT_MS?");
    cc_expect_refused("FERRY_NO_SUCH_THING=1", "not a ferry configuration variable");
    cc_expect_refused("FERRY_LOG_LEVEL=debug", "process-wide");
    cc_expect_refused("FERRY_BOOTSTRAP_RANK=0", "not a ferry configuration variable");
    cc_expect_refused("FERRY_TCP_TIMEOUT_MS=soon", "expected an unsigned decimal integer");
    cc_expect_refused("FERRY_TCP_TIMEOUT_MS=-5", "expected an unsigned decimal integer");
    cc_expect_refused("FERRY_SHM_CMA=maybe", "expected y, yes, on");
    cc_expect_refused("FERRY_RNDV_MODE=fast", "get, put, coop, null, split or auto");
    cc_expect_refused("FERRY_RNDV_THRESH=big", "a size (65536, 64k) or auto");

    /* good settings: accepted silently, readable back; NULL config and an empty list too */
    static const char *const good[] = {"FERRY_RNDV_MODE= coop ", "FERRY_SHM_CMA=off",
                                       "FERRY_TAG_UNEXPECTED_MAX=2m", "FERRY_WAIT_SPIN_US=", NULL};
    ferry_context_params_t params = {.config = good};
    ferry_context_t *context = NULL;
    ft_capture_begin();
    FT_CHECK_OK(ferry_context_create(&params, &context));
    char *log = ft_capture_end();
    FT_CHECK(ft_count(log, "] WARN ") == 0, "good settings were warned about:\n%s", log);
    free(log);
    ferry_config_info_t info = {.size = sizeof(info)};
    FT_CHECK_OK(ferry_context_config_lookup(context, "FERRY_RNDV_MODE", &info));
    FT_CHECK(info.from_context && strcmp(info.value, "coop") == 0, "FERRY_RNDV_MODE: %s",
             info.value);
    FT_CHECK_OK(ferry_context_config_lookup(context, "FERRY_TAG_UNEXPECTED_MAX", &info));
    FT_CHECK(info.value_size == 2u << 20, "FERRY_TAG_UNEXPECTED_MAX: %llu",
             (unsigned long long)info.value_size);
    FT_CHECK_OK(ferry_context_config_lookup(context, "FERRY_SHM_CMA", &info));
    FT_CHECK(info.from_context && !info.value_bool, "FERRY_SHM_CMA: %s", info.value);
    FT_CHECK_OK(ferry_context_config_lookup(context, "FERRY_WAIT_SPIN_US", &info));
    FT_CHECK(info.from_context && strcmp(info.value, info.default_value) == 0,
             "FERRY_WAIT_SPIN_US= (the default): %s, default %s", info.value, info.default_value);
    FT_CHECK_OK(ferry_context_config_lookup(context, "FERRY_LOG_LEVEL", &info));
    FT_CHECK(info.process_wide && !info.from_context, "FERRY_LOG_LEVEL is process-wide");
    FT_CHECK_STATUS(ferry_context_config_lookup(context, "FERRY_NO_SUCH_THING", &info),
                    FERRY_ERR_NO_ELEM);
    FT_CHECK_STATUS(ferry_context_config_lookup(NULL, "FERRY_SHM_CMA", &info),
                    FERRY_ERR_INVALID_PARAM);
    ferry_context_destroy(context);

    static const char *const empty[] = {NULL};
    params.config = empty;
    FT_CHECK_OK(ferry_context_create(&params, &context));
    ferry_context_destroy(context);
}

int main(int argc, char **argv)
{
    ft_set_role("parent");
    ft_watchdog(110);
    const char *which = argc > 1 ? argv[1] : "bad";
    if (strcmp(which, "rndv") == 0)
        cc_rndv();
    else if (strcmp(which, "tcp") == 0)
        cc_tcp();
    else
        cc_bad();
    ft_note("ok");
    return 0;
}
