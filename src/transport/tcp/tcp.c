/* The tcp transport: active messages between workers on different hosts (or, with
 * FERRY_TRANSPORTS=tcp, on one host) over TCP. This file: the ops table, query, the worker's
 * part (listening socket, interface choice, address record, the epoll set and the timer),
 * the endpoint slots and poll/arm. See tcp.h for the other files. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "core/time.h"
#include "transport/tcp/tcp.h"

static const fy_config_var_t tcp_iface_var = {
    .name = "FERRY_TCP_IFACE",
    .type = FERRY_CONFIG_STRING,
    .default_value = "",
    .description = "interfaces whose addresses the tcp transport publishes: names or CIDRs, "
                   "comma-separated (default: the interface of the default route, else every "
                   "up non-loopback interface; 127.0.0.1 is always added, for peers on this "
                   "host only)"};
static const fy_config_var_t *const tcp_iface_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_iface_var;

static const fy_config_var_t tcp_port_var = {
    .name = "FERRY_TCP_PORT",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "0",
    .description = "TCP port a worker listens on (0: an ephemeral port; a fixed port allows "
                   "one worker per host)"};
static const fy_config_var_t *const tcp_port_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_port_var;

static const fy_config_var_t tcp_timeout_var = {
    .name = "FERRY_TCP_TIMEOUT_MS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "10000",
    .description = "a tcp peer silent this long (stopped, dead, link cut) fails every endpoint "
                   "of its connection with FERRY_ERR_ENDPOINT_TIMEOUT; workers send a PING "
                   "after a third of it without traffic, so a peer must call progress that "
                   "often (0: never time out)"};
static const fy_config_var_t *const tcp_timeout_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_timeout_var;

static const fy_config_var_t tcp_connect_timeout_var = {
    .name = "FERRY_TCP_CONNECT_TIMEOUT_MS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "10000",
    .description = "time a tcp connection has to connect and exchange HELLO (both sides)"};
static const fy_config_var_t *const tcp_connect_timeout_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_connect_timeout_var;

static const fy_config_var_t tcp_max_frame_var = {
    .name = "FERRY_TCP_MAX_FRAME",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "1G",
    .description = "largest active-message payload a worker accepts from a tcp peer (larger: "
                   "the connection is closed)"};
static const fy_config_var_t *const tcp_max_frame_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_max_frame_var;

static const fy_config_var_t tcp_queue_max_var = {
    .name = "FERRY_TCP_QUEUE_MAX",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "4M",
    .description = "bytes waiting in a tcp peer's send queue (the socket full) beyond which "
                   "small sends return FERRY_ERR_NO_RESOURCE"};
static const fy_config_var_t *const tcp_queue_max_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_queue_max_var;

/* FERRY_TCP_CONGESTION: "system", or a name the kernel may know (TCP_CA_NAME_MAX: at most 15
 * characters). */
static bool tcp_congestion_check(const char *text, char *why, size_t why_len)
{
    size_t length = strlen(text);
    bool ok = length > 0 && length < TCP_CONGESTION_NAME_SIZE;
    for (size_t i = 0; ok && i < length; i++)
        ok = isalnum((unsigned char)text[i]) || text[i] == '_' || text[i] == '-';
    if (!ok)
        snprintf(why, why_len,
                 "system, or a congestion control name of at most %u letters, digits, '_' or "
                 "'-' (cubic, reno, bbr: see /proc/sys/net/ipv4/tcp_available_congestion_control)",
                 TCP_CONGESTION_NAME_SIZE - 1u);
    return ok;
}

static const fy_config_var_t tcp_congestion_var = {
    .name = "FERRY_TCP_CONGESTION",
    .type = FERRY_CONFIG_STRING,
    .default_value = TCP_CONGESTION_DEFAULT,
    .description = "TCP congestion control of the tcp transport's connections (TCP_CONGESTION); "
                   "system: the system's (net.ipv4.tcp_congestion_control). A pacing one (bbr) "
                   "delays large messages: tag_lat 1 MiB over loopback 240-270 us with bbr, "
                   "131 with cubic; tag_bw 16 MiB 4.1-6.2 GB/s against 9.0-9.1",
    .check = tcp_congestion_check};
static const fy_config_var_t *const tcp_congestion_reg
    __attribute__((used, section("ferry_config_registry"))) = &tcp_congestion_var;

/* ------------------------------------------------------------------ poll, timer */

void tcp_poll_skip_update(fy_tl_worker_t *tlw)
{
    if (tlw->conn_count == 0 && tlw->dead_count == 0)
        *tlw->local->poll_skip |= tlw->local->poll_bit;
    else
        *tlw->local->poll_skip &= ~tlw->local->poll_bit;
}

void tcp_timer_update(fy_tl_worker_t *tlw)
{
    bool waiting = false;
    for (fy_list_link_t *l = fy_list_first(&tlw->peers); !waiting && l != fy_list_end(&tlw->peers);
         l = l->next)
        waiting = fy_list_entry(l, tcp_peer_t, link)->wait_deadline_ns != 0;
    bool want = tlw->conn_count > 0 || waiting;
    if (want == tlw->timer_armed)
        return;
    uint64_t base = tlw->timeout_ns;
    if (base == 0 || (tlw->connect_timeout_ns != 0 && tlw->connect_timeout_ns < base))
        base = tlw->connect_timeout_ns;
    uint64_t tick = base / 8;
    if (tick < 5000000u)
        tick = 5000000u;
    if (tick > 500000000u)
        tick = 500000000u;
    struct itimerspec its = {0};
    if (want && base != 0) {
        its.it_interval.tv_sec = (time_t)(tick / 1000000000u);
        its.it_interval.tv_nsec = (long)(tick % 1000000000u);
        its.it_value = its.it_interval;
    }
    if (want)
        tlw->last_tick_ns = fy_time_coarse_ns();
    if (timerfd_settime(tlw->timerfd, 0, &its, NULL) != 0)
        fy_warn("tcp: timerfd_settime(fd %d) failed: %s", tlw->timerfd, strerror(errno));
    tlw->timer_armed = want;
}

static void tcp_timer_cb(void *arg, uint32_t events)
{
    fy_tl_worker_t *tlw = arg;
    uint64_t expirations;
    (void)events;
    if (read(tlw->timerfd, &expirations, sizeof(expirations)) != sizeof(expirations))
        return;
    tcp_conn_tick(tlw, fy_time_coarse_ns());
}

static void tcp_listen_cb(void *arg, uint32_t events)
{
    (void)events;
    tcp_conn_accept(arg);
}

/* The one connection a spinning worker may read without asking epoll first: the only one,
 * established, with nothing waiting to be written (EPOLLOUT comes through epoll). */
static tcp_conn_t *tcp_poll_direct_conn(fy_tl_worker_t *tlw)
{
    if (tlw->conn_count != 1 || (++tlw->poll_count & (TCP_POLL_EPOLL_EVERY - 1)) == 0)
        return NULL;
    for (fy_list_link_t *l = fy_list_first(&tlw->conns); l != fy_list_end(&tlw->conns);
         l = l->next) {
        tcp_conn_t *conn = fy_list_entry(l, tcp_conn_t, link);
        if (conn->state == TCP_CONN_DEAD)
            continue;
        return conn->state == TCP_CONN_ESTABLISHED && !conn->want_out ? conn : NULL;
    }
    return NULL;
}

static unsigned tcp_poll(fy_tl_worker_t *tlw)
{
    struct epoll_event events[16];
    unsigned count = 0;
    tlw->in_poll++;
    /* With one connection, a read finds a message as soon as epoll_wait would have announced
     * it, and saves that system call on the latency path; epoll_wait still runs every
     * TCP_POLL_EPOLL_EVERY polls for everything else. */
    tcp_conn_t *direct = tcp_poll_direct_conn(tlw);
    if (direct != NULL) {
        count = tcp_io_recv(direct) ? 1 : 0;
        tlw->in_poll--;
        if (tlw->in_poll == 0)
            tcp_conn_reap(tlw);
        return count;
    }
    int n = epoll_wait(tlw->epfd, events, 16, 0);
    for (int i = 0; i < n; i++) {
        fy_worker_fd_t *entry = events[i].data.ptr;
        entry->cb(entry->arg, events[i].events);
        count++;
    }
    tlw->in_poll--;
    if (tlw->in_poll == 0)
        tcp_conn_reap(tlw);
    return count;
}

static void tcp_epfd_cb(void *arg, uint32_t events)
{
    (void)events;
    tcp_poll(arg);
}

static ferry_status_t tcp_arm(fy_tl_worker_t *tlw)
{
    /* everything pending shows as readiness of epfd in the worker's set, except frames
     * already read into a receive buffer (they are parsed when read: none wait) */
    (void)tlw;
    return FERRY_OK;
}

/* ------------------------------------------------------------------ interfaces */

/* Does addr match the CIDR text "a.b.c.d/n" or "x::y/n"? */
static bool tcp_cidr_match(const char *cidr, const struct sockaddr *addr)
{
    char text[INET6_ADDRSTRLEN + 8];
    snprintf(text, sizeof(text), "%s", cidr);
    char *slash = strchr(text, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    int bits = atoi(slash + 1);
    uint8_t net[16], mine[16];
    size_t size;
    if (addr->sa_family == AF_INET && inet_pton(AF_INET, text, net) == 1) {
        memcpy(mine, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        size = 4;
    } else if (addr->sa_family == AF_INET6 && inet_pton(AF_INET6, text, net) == 1) {
        memcpy(mine, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        size = 16;
    } else {
        return false;
    }
    if (bits < 0 || (size_t)bits > size * 8)
        return false;
    for (int b = 0; b < bits; b++) {
        int mask = 0x80 >> (b % 8);
        if ((net[b / 8] & mask) != (mine[b / 8] & mask))
            return false;
    }
    return true;
}

/* The interface of the default route (/proc/net/route), or "" when there is none. */
static void tcp_default_route_iface(char *name, size_t length)
{
    name[0] = '\0';
    FILE *f = fopen("/proc/net/route", "re");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        char ifname[IF_NAMESIZE + 1];
        unsigned long dest, gateway, flags;
        if (sscanf(line, "%16s %lx %lx %lx", ifname, &dest, &gateway, &flags) == 4 && dest == 0 &&
            (flags & 0x1) /* RTF_UP */) {
            snprintf(name, length, "%s", ifname);
            break;
        }
    }
    fclose(f);
}

static bool tcp_iface_selected(const char *spec, const struct ifaddrs *ifa)
{
    char copy[256], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", spec);
    for (char *tok = strtok_r(copy, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        if (strchr(tok, '/') != NULL ? tcp_cidr_match(tok, ifa->ifa_addr)
                                     : strcmp(tok, ifa->ifa_name) == 0)
            return true;
    }
    return false;
}

/* Add an address (family AF_INET or AF_INET6, bytes in network order) unless present. */
static void tcp_record_add(tcp_record_t *rec, int family, const void *bytes)
{
    tcp_record_addr_t a;
    memset(&a, 0, sizeof(a));
    if (rec->count >= TCP_RECORD_MAX_ADDRS)
        return;
    if (family == AF_INET) {
        a.family = 4;
        memcpy(a.bytes, bytes, 4);
    } else {
        struct in6_addr in6;
        memcpy(&in6, bytes, sizeof(in6));
        if (IN6_IS_ADDR_LINKLOCAL(&in6))
            return; /* needs a scope id that means nothing on another host */
        a.family = 6;
        memcpy(a.bytes, bytes, 16);
    }
    for (unsigned i = 0; i < rec->count; i++) {
        if (memcmp(&rec->addrs[i], &a, sizeof(a)) == 0)
            return;
    }
    rec->addrs[rec->count++] = a;
}

/* An interface address's family and bytes (copied out: no aliasing through sockaddr). */
static void tcp_record_add_sockaddr(tcp_record_t *rec, const struct sockaddr *sa)
{
    struct sockaddr_storage ss;
    memcpy(&ss, sa,
           sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
    if (ss.ss_family == AF_INET)
        tcp_record_add(rec, AF_INET, &((struct sockaddr_in *)&ss)->sin_addr);
    else
        tcp_record_add(rec, AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr);
}

/* Fill the record's addresses: the chosen interfaces' addresses, then 127.0.0.1. */
static void tcp_choose_addresses(fy_tl_worker_t *tlw, bool have_ipv6)
{
    const char *spec = fy_config_string_in(tlw->local->config, &tcp_iface_var);
    char route_if[IF_NAMESIZE + 1] = "";
    struct ifaddrs *list = NULL;
    const char *why;

    if (spec[0] == '\0')
        tcp_default_route_iface(route_if, sizeof(route_if));
    if (getifaddrs(&list) != 0) {
        fy_warn("tcp: getifaddrs failed: %s; only 127.0.0.1 is published", strerror(errno));
        list = NULL;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (struct ifaddrs *ifa = list; ifa != NULL; ifa = ifa->ifa_next) {
            if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP) ||
                (ifa->ifa_addr->sa_family != AF_INET &&
                 (ifa->ifa_addr->sa_family != AF_INET6 || !have_ipv6)))
                continue;
            bool take;
            if (spec[0] != '\0')
                take = tcp_iface_selected(spec, ifa) && !(ifa->ifa_flags & IFF_LOOPBACK);
            else if (pass == 0)
                take = route_if[0] != '\0' && strcmp(ifa->ifa_name, route_if) == 0;
            else
                take = !(ifa->ifa_flags & IFF_LOOPBACK);
            if (take && tlw->record.count < TCP_RECORD_MAX_ADDRS - 1)
                tcp_record_add_sockaddr(&tlw->record, ifa->ifa_addr);
        }
        if (spec[0] != '\0' || tlw->record.count > 0)
            break;
    }
    if (spec[0] != '\0')
        why = "FERRY_TCP_IFACE";
    else if (route_if[0] != '\0' && tlw->record.count > 0)
        why = "the default route's interface";
    else
        why = tlw->record.count > 0 ? "every up non-loopback interface (no default route)"
                                    : "no usable interface: peers on other hosts cannot connect";
    snprintf(tlw->iface_desc, sizeof(tlw->iface_desc), "%s%s%s (%s)",
             spec[0] != '\0' ? spec : route_if, spec[0] != '\0' || route_if[0] ? " " : "",
             "addresses", why);
    if (spec[0] != '\0' && tlw->record.count == 0)
        fy_warn("tcp: FERRY_TCP_IFACE=%s matches no up interface address; only peers on "
                "this host can connect (list them with: ip -brief addr)",
                spec);
    freeifaddrs(list);
    uint32_t lo = htonl(INADDR_LOOPBACK);
    tcp_record_add(&tlw->record, AF_INET, &lo);
}

/* Listen on the wildcard address (IPv6 with IPv4 mapped when the host has IPv6, else IPv4):
 * every published address reaches it, and addresses that come later do too. */
static ferry_status_t tcp_listen(fy_tl_worker_t *tlw, bool *have_ipv6)
{
    uint64_t port = fy_config_size_in(tlw->local->config, &tcp_port_var);
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int zero = 0, one = 1;
    struct sockaddr_storage ss;
    socklen_t sl;

    if (port > 65535) {
        fy_warn("FERRY_TCP_PORT=%llu is not a port; using an ephemeral one",
                (unsigned long long)port);
        port = 0;
    }
    *have_ipv6 = fd >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) == 0;
    memset(&ss, 0, sizeof(ss));
    if (*have_ipv6) {
        struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
        in6.sin6_addr = in6addr_any;
        memcpy(&ss, &in6, sizeof(in6));
        sl = sizeof(in6);
    } else {
        if (fd >= 0)
            close(fd);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        in.sin_addr.s_addr = htonl(INADDR_ANY);
        memcpy(&ss, &in, sizeof(in));
        sl = sizeof(in);
    }
    if (fd < 0) {
        fy_error("tcp: socket() for the listening socket failed: %s", strerror(errno));
        return FERRY_ERR_IO;
    }
    if (port != 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 128) != 0) {
        fy_error("tcp: bind/listen on port %llu failed: %s%s", (unsigned long long)port,
                 strerror(errno),
                 port != 0 ? " (FERRY_TCP_PORT: is another worker using it?)" : "");
        close(fd);
        return FERRY_ERR_IO;
    }
    sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    tlw->record.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                      : ((struct sockaddr_in *)&ss)->sin_port);
    tlw->listen.fd = fd;
    tlw->listen.cb = tcp_listen_cb;
    tlw->listen.arg = tlw;
    return FERRY_OK;
}

/* ------------------------------------------------------------------ worker */

static ferry_status_t tcp_query(const fy_config_set_t *config, fy_tl_caps_t *caps, char *why,
                                size_t why_len)
{
    (void)config;
    (void)why;
    (void)why_len;
    memset(caps, 0, sizeof(*caps));
    /* one-sided operations go through the target-executed protocol */
    caps->flags = FY_TL_CAP_AM | FY_TL_CAP_AM_ORDERED | FY_TL_CAP_STREAM;
    caps->max_short = TCP_REQ_INLINE - TCP_FRAME_HEADER_SIZE;
    caps->max_bcopy = 65536;
    caps->max_iov = SIZE_MAX;
    caps->latency_ns = 10000;
    caps->bandwidth_Bps = 1e9;
    return FERRY_OK;
}

static ferry_status_t tcp_epoll_add(fy_tl_worker_t *tlw, fy_worker_fd_t *entry)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = entry};
    if (epoll_ctl(tlw->epfd, EPOLL_CTL_ADD, entry->fd, &ev) != 0) {
        fy_error("tcp: epoll_ctl(ADD, fd %d) failed: %s", entry->fd, strerror(errno));
        return FERRY_ERR_IO;
    }
    return FERRY_OK;
}

/* The listener's back-off watches and unwatches through these (tcp's own epoll set). */
static ferry_status_t tcp_listen_watch(void *tlw, fy_worker_fd_t *entry)
{
    return tcp_epoll_add(tlw, entry);
}

static void tcp_listen_unwatch(void *tlw, fy_worker_fd_t *entry)
{
    if (epoll_ctl(((fy_tl_worker_t *)tlw)->epfd, EPOLL_CTL_DEL, entry->fd, NULL) != 0)
        fy_debug("tcp: epoll_ctl(DEL, fd %d): %s", entry->fd, strerror(errno));
}

static ferry_status_t tcp_init(ferry_worker_t *worker, const fy_tl_local_t *local,
                               fy_tl_worker_t **tlw_p)
{
    fy_tl_worker_t *tlw = calloc(1, sizeof(*tlw));
    ferry_status_t status;
    bool have_ipv6 = false;

    if (tlw == NULL) {
        fy_error("calloc(%zu) for the tcp transport failed", sizeof(*tlw));
        return FERRY_ERR_NO_MEMORY;
    }
    tlw->worker = worker;
    tlw->local = local;
    fy_list_init(&tlw->peers);
    fy_list_init(&tlw->conns);
    fy_pool_init(&tlw->reqs, sizeof(tcp_req_t), TCP_REQ_BLOCK, "tcp send requests");
    tlw->max_frame = fy_config_size_in(tlw->local->config, &tcp_max_frame_var);
    tlw->timeout_ns = fy_config_size_in(tlw->local->config, &tcp_timeout_var) * 1000000u;
    tlw->connect_timeout_ns =
        fy_config_size_in(tlw->local->config, &tcp_connect_timeout_var) * 1000000u;
    tlw->queue_max = fy_config_size_in(tlw->local->config, &tcp_queue_max_var);
    const char *congestion = fy_config_string_in(tlw->local->config, &tcp_congestion_var);
    char why[200];
    if (!tcp_congestion_check(congestion, why, sizeof(why)))
        fy_warn("invalid FERRY_TCP_CONGESTION=\"%s\": expected %s; using the system's", congestion,
                why);
    else if (strcmp(congestion, "system") != 0)
        snprintf(tlw->congestion, sizeof(tlw->congestion), "%s", congestion);
    tlw->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (tlw->epfd < 0) {
        fy_error("tcp: epoll_create1 failed: %s (check ulimit -n)", strerror(errno));
        status = FERRY_ERR_IO;
        goto err_free;
    }
    tlw->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (tlw->timerfd < 0) {
        fy_error("tcp: timerfd_create failed: %s", strerror(errno));
        status = FERRY_ERR_IO;
        goto err_close_epfd;
    }
    tlw->timer_entry.fd = tlw->timerfd;
    tlw->timer_entry.cb = tcp_timer_cb;
    tlw->timer_entry.arg = tlw;
    status = tcp_epoll_add(tlw, &tlw->timer_entry);
    if (status != FERRY_OK)
        goto err_close_timer;
    status = tcp_listen(tlw, &have_ipv6);
    if (status != FERRY_OK)
        goto err_close_timer;
    status = fy_listen_backoff_init(&tlw->listen_backoff, tcp_listen_watch, tcp_listen_unwatch, tlw,
                                    &tlw->listen, "tcp");
    if (status != FERRY_OK)
        goto err_close_listen;
    status = tcp_epoll_add(tlw, &tlw->listen);
    if (status != FERRY_OK)
        goto err_backoff;
    tcp_choose_addresses(tlw, have_ipv6);
    tlw->record_length = tcp_record_encode(&tlw->record, tlw->record_bytes);
    tlw->epfd_entry.fd = tlw->epfd;
    tlw->epfd_entry.cb = tcp_epfd_cb;
    tlw->epfd_entry.arg = tlw;
    status = fy_worker_fd_add(worker, &tlw->epfd_entry, EPOLLIN);
    if (status != FERRY_OK)
        goto err_backoff;
    tcp_poll_skip_update(tlw);
    fy_debug("tcp: listening on port %u; publishing %u addresses: %s", tlw->record.port,
             tlw->record.count, tlw->iface_desc);
    *tlw_p = tlw;
    return FERRY_OK;

err_backoff:
    fy_listen_backoff_fini(&tlw->listen_backoff);
err_close_listen:
    close(tlw->listen.fd);
err_close_timer:
    close(tlw->timerfd);
err_close_epfd:
    close(tlw->epfd);
err_free:
    free(tlw);
    return status;
}

static void tcp_finalize(fy_tl_worker_t *tlw)
{
    fy_list_link_t *link;
    /* endpoints are gone; what is left are connections without channels */
    for (link = fy_list_first(&tlw->conns); link != fy_list_end(&tlw->conns); link = link->next)
        tcp_conn_fail(fy_list_entry(link, tcp_conn_t, link), FERRY_ERR_CANCELED);
    tcp_conn_reap(tlw);
    while ((link = fy_list_pop_head(&tlw->peers)) != NULL) {
        tcp_peer_t *peer = fy_list_entry(link, tcp_peer_t, link);
        fy_list_init(&peer->link);
        tcp_io_drop_queue(peer, FERRY_ERR_CANCELED);
        free(peer);
    }
    fy_pool_destroy(&tlw->reqs, tcp_req_release, tlw); /* completes what waits to be reported */
    fy_worker_fd_remove(tlw->worker, &tlw->epfd_entry);
    fy_listen_backoff_fini(&tlw->listen_backoff);
    close(tlw->listen.fd);
    close(tlw->timerfd);
    close(tlw->epfd);
    free(tlw);
}

static ferry_status_t tcp_address(fy_tl_worker_t *tlw, void *buffer, size_t *length_p)
{
    if (*length_p < tlw->record_length)
        return FERRY_ERR_OUT_OF_RANGE;
    memcpy(buffer, tlw->record_bytes, tlw->record_length);
    *length_p = tlw->record_length;
    return FERRY_OK;
}

/* ------------------------------------------------------------------ endpoints */

static ferry_status_t tcp_ep_init(fy_tl_worker_t *tlw, ferry_ep_t *ep, const fy_tl_peer_t *address,
                                  const void *record, size_t record_length, fy_tl_caps_t *caps_p,
                                  fy_tl_ep_t **tlep_p)
{
    (void)caps_p; /* a byte stream to every peer alike */
    tcp_record_t rec;
    tcp_peer_t *peer;
    bool fresh = false;
    if (!tcp_record_decode(record, record_length, &rec))
        return FERRY_ERR_INVALID_ADDRESS;
    peer = tcp_peer_get(tlw, address->worker_uuid);
    if (peer == NULL) {
        peer = calloc(1, sizeof(*peer));
        if (peer == NULL) {
            fy_error("tcp: calloc(%zu) for a peer failed", sizeof(*peer));
            return FERRY_ERR_NO_MEMORY;
        }
        peer->tlw = tlw;
        peer->in_table = true;
        fy_list_init(&peer->chans);
        fy_list_init(&peer->queue);
        fy_list_push_tail(&tlw->peers, &peer->link);
        fresh = true;
    }
    peer->uuid = address->worker_uuid;
    peer->pid = address->pid;
    peer->host = address->host;
    peer->same_host = fy_host_id_equal(&address->host, &tlw->local->host);
    peer->record = rec;
    peer->have_record = true;
    if (fresh) {
        ferry_status_t status = tcp_conn_connect_peer(peer);
        if (status != FERRY_OK) {
            fy_list_remove(&peer->link);
            free(peer);
            return status;
        }
    }
    fy_tl_ep_t *chan = calloc(1, sizeof(*chan));
    if (chan == NULL) {
        fy_error("tcp: calloc(%zu) for a channel failed", sizeof(*chan));
        if (fresh) {
            peer->chan_count++;
            tcp_peer_chan_removed(peer); /* drops the connection attempt and the peer */
        }
        return FERRY_ERR_NO_MEMORY;
    }
    chan->peer = peer;
    chan->ep = ep;
    chan->id = ++peer->next_chan_id;
    chan->mine = true;
    chan->state = TCP_CHAN_OPEN;
    fy_list_push_tail(&peer->chans, &chan->link);
    peer->chan_count++;
    peer->idle_sent = false;
    ferry_status_t status = tcp_send_control(peer, chan, TCP_FRAME_OPEN, NULL, 0, false);
    if (status != FERRY_OK && status != FERRY_INPROGRESS) {
        fy_list_remove(&chan->link);
        free(chan);
        tcp_peer_chan_removed(peer);
        return status;
    }
    if (peer->conn != NULL && peer->conn->state == TCP_CONN_ESTABLISHED)
        fy_ep_connected(ep); /* a channel on a connection that is there already */
    *tlep_p = chan;
    return FERRY_OK;
}

static ferry_status_t tcp_ep_terminate(fy_tl_ep_t *chan)
{
    tcp_peer_t *peer = chan->peer;
    if (chan->state == TCP_CHAN_GONE || peer->failed)
        return FERRY_OK;
    if (chan->state == TCP_CHAN_CLOSING)
        return FERRY_INPROGRESS;
    chan->state = TCP_CHAN_CLOSING;
    ferry_status_t status = tcp_send_control(peer, chan, TCP_FRAME_CLOSE, NULL, 0, true);
    if (status == FERRY_OK || chan->state == TCP_CHAN_GONE) {
        /* written at once (tcp_req_written called fy_ep_terminated, which did nothing yet:
         * the endpoint is not CLOSING until we return) */
        chan->state = TCP_CHAN_GONE;
        tcp_io_drop_chan(chan, false);
        return FERRY_OK;
    }
    if (status != FERRY_INPROGRESS) {
        chan->state = TCP_CHAN_GONE;
        return FERRY_OK;
    }
    return FERRY_INPROGRESS;
}

static void tcp_ep_destroy(fy_tl_ep_t *chan)
{
    tcp_peer_t *peer = chan->peer;
    bool open = chan->state == TCP_CHAN_OPEN && !peer->failed;
    bool tell = open && peer->conn != NULL && peer->conn->state == TCP_CONN_ESTABLISHED;
    chan->state = TCP_CHAN_GONE;
    /* sends that completed already stay queued (behind the channel's OPEN): then the peer is
     * told after them, connected yet or not */
    if (tcp_io_drop_chan(chan, !peer->failed) && open)
        tell = true;
    if (tell) /* forced close: the peer is still told */
        tcp_send_frame(peer, NULL, chan->id, chan->mine, TCP_FRAME_CLOSE, NULL, 0);
    fy_list_remove(&chan->link);
    free(chan);
    tcp_peer_chan_removed(peer);
}

static ferry_status_t tcp_sendv(fy_tl_ep_t *chan, uint8_t id, const void *header,
                                size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                ferry_completion_t *comp)
{
    return tcp_send_am(chan, id, header, header_length, iov, iovcnt, comp, true);
}

static ferry_status_t tcp_send_short(fy_tl_ep_t *chan, uint8_t id, const void *header,
                                     size_t header_length, const void *payload, size_t length)
{
    ferry_status_t status = tcp_send_short_now(chan, id, header, header_length, payload, length);
    if (fy_unlikely(status == FERRY_ERR_UNSUPPORTED)) {
        ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
        status = tcp_send_am(chan, id, header, header_length, &iov, length ? 1 : 0, NULL, true);
    }
    return fy_ep_am_count_short(chan->ep, length, status);
}

static void tcp_describe(fy_tl_worker_t *tlw, char *buffer, size_t length)
{
    char addrs[TCP_RECORD_MAX_ADDRS * (INET6_ADDRSTRLEN + 2)];
    tcp_record_addrs_text(&tlw->record, ", ", addrs, sizeof(addrs));
    snprintf(buffer, length,
             "port %u, addresses %s — %s; %u connections; timeout %llu ms, connect timeout "
             "%llu ms, max frame %llu B, congestion control %s",
             tlw->record.port, addrs, tlw->iface_desc, tlw->conn_count,
             (unsigned long long)(tlw->timeout_ns / 1000000u),
             (unsigned long long)(tlw->connect_timeout_ns / 1000000u),
             (unsigned long long)tlw->max_frame,
             tlw->congestion[0] == '\0' ? "the system's"
             : tlw->congestion_refused  ? "the system's (FERRY_TCP_CONGESTION refused)"
                                        : tlw->congestion);
}

const fy_tl_ops_t fy_tl_tcp_ops = {
    .name = "tcp",
    .id = 3,
    .query = tcp_query,
    .init = tcp_init,
    .finalize = tcp_finalize,
    .address = tcp_address,
    .compact_fill = tcp_record_compact_fill,
    .compact_record = tcp_record_compact_record,
    .reachable = tcp_record_reachable,
    .record_describe = tcp_record_describe,
    .record_fields = tcp_record_fields,
    .ep_init = tcp_ep_init,
    .ep_terminate = tcp_ep_terminate,
    .ep_destroy = tcp_ep_destroy,
    .send_short = tcp_send_short,
    .sendv = tcp_sendv,
    .poll = tcp_poll,
    .arm = tcp_arm,
    .disarm = NULL,
    .am_data_release = NULL,
    .describe = tcp_describe,
    .rma = NULL,
    .rkey_map = NULL,
};
