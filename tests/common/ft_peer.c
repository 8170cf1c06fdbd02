/* Forking peers, reaping them with a timeout, killing them. */
#define _GNU_SOURCE
#include "ft_peer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft_check.h"

#define FT_PEERS_MAX 32

static ft_peer_t *ft_peers[FT_PEERS_MAX];
static volatile pid_t ft_peer_pids[FT_PEERS_MAX]; /* for the signal-safe kill */
static unsigned ft_peer_count;

static void ft_peer_unregister(ft_peer_t *peer)
{
    for (unsigned i = 0; i < ft_peer_count; i++) {
        if (ft_peers[i] == peer) {
            ft_peers[i] = ft_peers[ft_peer_count - 1];
            ft_peer_pids[i] = ft_peer_pids[ft_peer_count - 1];
            ft_peer_count--;
            ft_peer_pids[ft_peer_count] = 0;
            return;
        }
    }
}

const char *ft_wstatus_string(int wstatus, char *buf, size_t len)
{
    if (WIFEXITED(wstatus))
        snprintf(buf, len, "exited with %d", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(buf, len, "wait status 0x%x", wstatus);
    return buf;
}

void ft_peer_spawn(ft_peer_t *peer, const char *name, ft_role_fn_t fn, void *arg)
{
    int sv[2];
    pid_t parent = getpid();

    FT_CHECK(ft_peer_count < FT_PEERS_MAX, "too many peers (%u)", ft_peer_count);
    FT_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
             "socketpair for peer %s: %s", name, strerror(errno));
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t pid = fork();
    FT_CHECK(pid >= 0, "fork for peer %s: %s", name, strerror(errno));
    if (pid == 0) {
        /* the child: die with the parent, forget the parent's peers */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        for (unsigned i = 0; i < ft_peer_count; i++) {
            close(ft_peers[i]->chan);
            ft_peer_pids[i] = 0;
        }
        ft_peer_count = 0;
        alarm(0); /* the parent's watchdog covers the child (it dies with the parent) */
        close(sv[0]);
        ft_set_role(name);
        int rc = fn(sv[1], arg);
        close(sv[1]);
        fflush(NULL);
        exit(rc);
    }
    close(sv[1]);
    peer->name = name;
    peer->pid = pid;
    peer->chan = sv[0];
    peer->reaped = false;
    peer->wstatus = 0;
    ft_peers[ft_peer_count] = peer;
    ft_peer_pids[ft_peer_count] = pid;
    ft_peer_count++;
}

bool ft_peer_try_reap(ft_peer_t *peer)
{
    int wstatus;
    if (peer->reaped)
        return true;
    pid_t r = waitpid(peer->pid, &wstatus, WNOHANG);
    if (r == 0)
        return false;
    if (r < 0 && errno == EINTR)
        return false;
    FT_CHECK(r == peer->pid, "waitpid(peer %s, pid %d): %s", peer->name, (int)peer->pid,
             strerror(errno));
    peer->reaped = true;
    peer->wstatus = wstatus;
    ft_peer_unregister(peer);
    return true;
}

bool ft_peer_wait(ft_peer_t *peer, int timeout_ms)
{
    uint64_t end = ft_now_ns() + (uint64_t)timeout_ms * 1000000u;
    unsigned delay_us = 100;
    while (!ft_peer_try_reap(peer)) {
        if (ft_now_ns() >= end) {
            ft_note("peer %s (pid %d) did not exit within %d ms: killing it", peer->name,
                    (int)peer->pid, timeout_ms);
            kill(peer->pid, SIGKILL);
            int wstatus;
            while (waitpid(peer->pid, &wstatus, 0) < 0 && errno == EINTR) {
            }
            peer->reaped = true;
            peer->wstatus = wstatus;
            ft_peer_unregister(peer);
            return false;
        }
        usleep(delay_us); /* reaping only: no result depends on this delay */
        if (delay_us < 5000)
            delay_us *= 2;
    }
    return true;
}

void ft_peer_expect_exit(ft_peer_t *peer, int timeout_ms, int code)
{
    char why[96];
    FT_CHECK(ft_peer_wait(peer, timeout_ms), "peer %s (pid %d) hung: killed after %d ms",
             peer->name, (int)peer->pid, timeout_ms);
    if (code != 77 && WIFEXITED(peer->wstatus) && WEXITSTATUS(peer->wstatus) == 77)
        ft_skip("peer %s skipped (see its message above)", peer->name);
    FT_CHECK(WIFEXITED(peer->wstatus) && WEXITSTATUS(peer->wstatus) == code,
             "peer %s (pid %d) %s, expected exit code %d", peer->name, (int)peer->pid,
             ft_wstatus_string(peer->wstatus, why, sizeof(why)), code);
}

uint64_t ft_peer_kill(ft_peer_t *peer)
{
    FT_CHECK(!peer->reaped, "peer %s was already reaped", peer->name);
    uint64_t t = ft_now_ns();
    FT_CHECK(kill(peer->pid, SIGKILL) == 0, "kill(peer %s, pid %d, SIGKILL): %s", peer->name,
             (int)peer->pid, strerror(errno));
    FT_CHECK(ft_peer_wait(peer, 10000), "peer %s did not die of SIGKILL", peer->name);
    return t;
}

void ft_peers_check(void)
{
    char why[96];
    for (unsigned i = 0; i < ft_peer_count;) {
        ft_peer_t *peer = ft_peers[i];
        if (!ft_peer_try_reap(peer)) {
            i++;
            continue;
        }
        /* reaped: the registry shrank, i now names another peer */
        if (WIFEXITED(peer->wstatus) && WEXITSTATUS(peer->wstatus) == 0)
            continue;
        if (WIFEXITED(peer->wstatus) && WEXITSTATUS(peer->wstatus) == 77)
            ft_skip("peer %s skipped (see its message above)", peer->name);
        ft_fail_at(__FILE__, __LINE__, "peer %s (pid %d) %s", peer->name, (int)peer->pid,
                   ft_wstatus_string(peer->wstatus, why, sizeof(why)));
    }
}

void ft_peers_kill_all_signal_safe(void)
{
    for (unsigned i = 0; i < FT_PEERS_MAX; i++) {
        if (ft_peer_pids[i] > 0)
            kill(ft_peer_pids[i], SIGKILL);
    }
}

void ft_peers_abort(void)
{
    while (ft_peer_count > 0) {
        ft_peer_t *peer = ft_peers[0];
        kill(peer->pid, SIGKILL);
        int wstatus;
        while (waitpid(peer->pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        peer->reaped = true;
        peer->wstatus = wstatus;
        ft_peer_unregister(peer);
    }
}
