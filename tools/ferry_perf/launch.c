/* Under a launcher (mpirun, srun: the bootstrap's pmix method; or FERRY_BOOTSTRAP_ROOT: its
 * tcp method), ferry_perf runs as two ranks: rank 0 is the server, rank 1 the client. Rank 0
 * listens on an ephemeral TCP port and publishes the port and its addresses through
 * ferry_bootstrap_allgather; rank 1 connects to 127.0.0.1 when the bootstrap says rank 0 is on
 * this host, else to rank 0's first address that is not loopback. From there on it is the
 * usual client/server run over that TCP connection. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"

#define LAUNCH_CARD 512 /* rank 0's "port addr addr ...", NUL-padded */

/* "port addr addr ...": the port, then this host's addresses, loopback excluded. */
static void launch_card(unsigned port, char card[LAUNCH_CARD])
{
    struct ifaddrs *list;
    size_t used;

    memset(card, 0, LAUNCH_CARD);
    used = (size_t)snprintf(card, LAUNCH_CARD, "%u", port);
    if (getifaddrs(&list) != 0)
        return; /* rank 1 then only tries 127.0.0.1 */
    for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
        char text[INET6_ADDRSTRLEN];
        const void *addr;
        if (ifa->ifa_addr == NULL)
            continue;
        if (ifa->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)ifa->ifa_addr;
            if (ntohl(in->sin_addr.s_addr) >> 24 == 127)
                continue;
            addr = &in->sin_addr;
        } else {
            continue; /* IPv4 is enough for the test beds this serves */
        }
        if (inet_ntop(ifa->ifa_addr->sa_family, addr, text, sizeof(text)) == NULL)
            continue;
        if (used + 1 + strlen(text) + 1 > LAUNCH_CARD)
            break;
        used += (size_t)snprintf(card + used, LAUNCH_CARD - used, " %s", text);
    }
    freeifaddrs(list);
}

int perf_launch_init(perf_launch_t *launch, perf_options_t *opt)
{
    char mine[LAUNCH_CARD] = "", *all;
    ferry_status_t status;

    memset(launch, 0, sizeof(*launch));
    launch->listen_fd = -1;
    status = ferry_bootstrap_init(NULL, &launch->bs);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_bootstrap_init: %s\n", ferry_status_string(status));
        return -1;
    }
    launch->rank = ferry_bootstrap_rank(launch->bs);
    if (ferry_bootstrap_size(launch->bs) != 2) {
        fprintf(stderr,
                "ferry_perf: -t without HOST runs as a job of 2 ranks (rank 0 serves, rank 1 "
                "measures), found %u (%s bootstrap): run it under `mpirun -np 2` or with "
                "FERRY_BOOTSTRAP_ROOT/_RANK/_SIZE=2, or give the server's HOST\n",
                ferry_bootstrap_size(launch->bs),
                ferry_bootstrap_method_name(ferry_bootstrap_method(launch->bs)));
        goto err_finalize;
    }
    if (launch->rank == 0) {
        launch->listen_fd = perf_tcp_listen(0);
        if (launch->listen_fd < 0)
            goto err_finalize;
        struct sockaddr_storage addr;
        socklen_t len = sizeof(addr);
        if (getsockname(launch->listen_fd, (struct sockaddr *)&addr, &len) != 0) {
            perror("ferry_perf: getsockname");
            goto err_close;
        }
        unsigned port = addr.ss_family == AF_INET6
                            ? ntohs(((struct sockaddr_in6 *)&addr)->sin6_port)
                            : ntohs(((struct sockaddr_in *)&addr)->sin_port);
        opt->port = port;
        launch_card(port, mine);
    }
    all = malloc(2 * LAUNCH_CARD);
    if (all == NULL) {
        fprintf(stderr, "ferry_perf: out of memory\n");
        goto err_close;
    }
    status = ferry_bootstrap_allgather(launch->bs, mine, LAUNCH_CARD, all);
    if (status != FERRY_OK) {
        fprintf(stderr, "ferry_perf: ferry_bootstrap_allgather: %s\n", ferry_status_string(status));
        free(all);
        goto err_close;
    }
    if (launch->rank == 1) {
        char *card = all; /* rank 0's */
        card[LAUNCH_CARD - 1] = '\0';
        char *save = NULL;
        char *port = strtok_r(card, " ", &save);
        char *first = strtok_r(NULL, " ", &save);
        if (port == NULL || (first == NULL && !ferry_bootstrap_is_local(launch->bs, 0))) {
            fprintf(stderr, "ferry_perf: rank 0 published no usable address (\"%s\")\n", card);
            free(all);
            goto err_close;
        }
        opt->port = (unsigned)strtoul(port, NULL, 10);
        snprintf(launch->host, sizeof(launch->host), "%s",
                 ferry_bootstrap_is_local(launch->bs, 0) ? "127.0.0.1" : first);
        opt->host = launch->host;
    }
    free(all);
    return 0;

err_close:
    if (launch->listen_fd >= 0)
        close(launch->listen_fd);
err_finalize:
    ferry_bootstrap_finalize(launch->bs);
    return -1;
}

void perf_launch_fini(perf_launch_t *launch)
{
    ferry_bootstrap_finalize(launch->bs);
}
