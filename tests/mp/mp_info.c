/* The introspection API (include/ferry/info.h) on the address of a worker in another process,
 * through the public headers only:
 *   decode      the header says the peer's pid and the record count; the records are self
 *               (empty), shm (this uid, an abstract socket named ferry-...) and tcp (the port
 *               the peer says it listens on, as its own ferry_worker_transport_describe has it);
 *   reach       from a worker of this process: self does not reach it (another worker), shm
 *               and tcp do; ferry_ep_choose picks shm and says why not self, and
 *               ferry_ep_create then uses shm; from a worker whose context enables self and tcp
 *               only, the shm record is not considered and tcp is chosen;
 *   forged      the same address with another net namespace in its header, or another uid in
 *               its shm record: shm says which and does not reach it, and is not chosen.
 * Requires the default transport list (self, shm, tcp). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ferry/info.h>

#include "ft.h"

/* The address layout (src/wireup/address.h), for forging: u64 net namespace inode at 32;
 * records after the 64-byte header, each with a 4-byte header. */
#define MI_ADDR_HEADER 64
#define MI_ADDR_NET_NS 32
#define MI_RECORD_HEADER 4

enum { MI_TOKEN_PORT = 0x504f5254, MI_TOKEN_EXIT = 0x45584954 };

/* The tcp port in ferry_worker_transport_describe's text ("port 45123, addresses ..."). */
static unsigned mi_describe_port(ferry_worker_t *worker)
{
    char text[FERRY_INFO_TEXT_MAX];
    unsigned port = 0;
    FT_CHECK_OK(ferry_worker_transport_describe(worker, 2, text, sizeof(text)));
    FT_CHECK(sscanf(text, "port %u,", &port) == 1, "no port in the tcp facts \"%s\"", text);
    return port;
}

static int mi_peer_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    ft_chan_send_token(chan, MI_TOKEN_PORT, mi_describe_port(f.worker), 0, 0, 0);
    ft_chan_expect_token(chan, MI_TOKEN_EXIT, 30000);
    ft_ferry_fini(&f);
    return 0;
}

static ferry_address_record_info_t mi_record(const void *address, size_t length, size_t index,
                                             ferry_worker_t *worker, const char *transport)
{
    ferry_address_record_info_t info = {.size = sizeof(info)};
    FT_CHECK_OK(ferry_address_record_decode(address, length, index, worker, &info));
    FT_CHECK(info.transport != NULL && strcmp(info.transport, transport) == 0,
             "record %zu is %s, expected %s", index, info.transport ? info.transport : "(none)",
             transport);
    FT_CHECK(info.status == FERRY_OK, "record %zu (%s): %s", index, transport,
             ferry_status_name(info.status));
    return info;
}

static const char *mi_field(const ferry_address_record_info_t *info, const char *key)
{
    for (size_t i = 0; i < info->field_count; i++) {
        if (strcmp(info->fields[i].key, key) == 0)
            return info->fields[i].value;
    }
    ft_fail_at(__FILE__, __LINE__, "record %s has no field %s", info->transport, key);
}

static ferry_ep_choice_t mi_choose(ferry_worker_t *worker, const void *address, size_t length)
{
    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    FT_CHECK_OK(ferry_ep_choose(worker, address, length, &choice));
    ft_note("choice: %s: %s", choice.transport ? choice.transport : "none", choice.reason);
    return choice;
}

static void mi_decode(const void *address, size_t length, pid_t pid, unsigned port)
{
    ferry_address_info_t info = {.size = sizeof(info)};
    FT_CHECK_OK(ferry_address_decode(address, length, &info));
    FT_CHECK(info.pid == (uint32_t)pid, "decoded pid %u, the peer is %d", info.pid, (int)pid);
    FT_CHECK(info.version == 1, "version %u", info.version);
    FT_CHECK(info.record_count == 3, "%zu records, expected 3 (self, shm, tcp)", info.record_count);

    ferry_address_record_info_t self = mi_record(address, length, 0, NULL, "self");
    FT_CHECK(self.length == 0 && self.transport_id == 1 && self.transport_index == 0,
             "self record: %zu bytes, id %u, index %zu", self.length, self.transport_id,
             self.transport_index);

    ferry_address_record_info_t shm = mi_record(address, length, 1, NULL, "shm");
    char uid[32];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    FT_CHECK(strcmp(mi_field(&shm, "uid"), uid) == 0, "shm uid %s, here %s", mi_field(&shm, "uid"),
             uid);
    FT_CHECK(strncmp(mi_field(&shm, "socket"), "ferry-", 6) == 0, "shm socket %s",
             mi_field(&shm, "socket"));
    FT_CHECK(strstr(shm.text, "socket @ferry-") != NULL, "shm text \"%s\"", shm.text);

    ferry_address_record_info_t tcp = mi_record(address, length, 2, NULL, "tcp");
    char port_text[16];
    snprintf(port_text, sizeof(port_text), "%u", port);
    FT_CHECK(strcmp(mi_field(&tcp, "port"), port_text) == 0,
             "tcp record port %s, the peer listens on %u", mi_field(&tcp, "port"), port);
    FT_CHECK(strstr(mi_field(&tcp, "addresses"), "127.0.0.1") != NULL, "tcp addresses %s",
             mi_field(&tcp, "addresses"));
    FT_CHECK(strncmp(tcp.text, "port ", 5) == 0, "tcp text \"%s\"", tcp.text);
}

static void mi_reach(ferry_worker_t *worker, const void *address, size_t length)
{
    ferry_address_record_info_t self = mi_record(address, length, 0, worker, "self");
    FT_CHECK(self.considered && !self.reachable, "self: considered %d, reachable %d",
             self.considered, self.reachable);
    FT_CHECK(strstr(self.why, "another worker") != NULL, "self why \"%s\"", self.why);
    ferry_address_record_info_t shm = mi_record(address, length, 1, worker, "shm");
    FT_CHECK(shm.considered && shm.reachable && shm.why[0] == '\0',
             "shm: considered %d, reachable %d, why \"%s\"", shm.considered, shm.reachable,
             shm.why);
    ferry_address_record_info_t tcp = mi_record(address, length, 2, worker, "tcp");
    FT_CHECK(tcp.considered && tcp.reachable, "tcp: considered %d, reachable %d (%s)",
             tcp.considered, tcp.reachable, tcp.why);

    ferry_ep_choice_t choice = mi_choose(worker, address, length);
    FT_CHECK(choice.status == FERRY_OK && choice.transport != NULL &&
                 strcmp(choice.transport, "shm") == 0 && choice.transport_index == 1 &&
                 choice.record_index == 1,
             "ferry_ep_choose: %s, transport %s, index %zu, record %zu",
             ferry_status_name(choice.status), choice.transport ? choice.transport : "none",
             choice.transport_index, choice.record_index);
    FT_CHECK(strstr(choice.reason, "self: another worker") != NULL, "reason \"%s\"", choice.reason);

    /* ferry_ep_create chooses the same */
    ferry_ep_t *ep = ft_ep_create(worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), choice.transport) == 0,
             "ferry_ep_create uses %s, ferry_ep_choose said %s", ferry_ep_transport_name(ep),
             choice.transport);
    ferry_ep_destroy(ep);
}

static void mi_reach_without_shm(const void *address, size_t length)
{
    ft_ferry_t f;
    ft_ferry_init(&f, "self,tcp", NULL);
    ferry_address_record_info_t shm = mi_record(address, length, 1, f.worker, "shm");
    FT_CHECK(!shm.considered && !shm.reachable && strstr(shm.why, "not used") != NULL,
             "shm from a self,tcp worker: considered %d, reachable %d, why \"%s\"", shm.considered,
             shm.reachable, shm.why);
    ferry_ep_choice_t choice = mi_choose(f.worker, address, length);
    FT_CHECK(choice.status == FERRY_OK && strcmp(choice.transport, "tcp") == 0 &&
                 choice.record_index == 2,
             "a self,tcp worker would use %s", choice.transport ? choice.transport : "none");
    ft_ferry_fini(&f);
}

static void mi_forged(ferry_worker_t *worker, const void *address, size_t length)
{
    uint8_t copy[FT_CHAN_MSG_MAX];
    memcpy(copy, address, length);

    /* another net namespace */
    uint64_t net_ns;
    memcpy(&net_ns, copy + MI_ADDR_NET_NS, sizeof(net_ns));
    net_ns += 1;
    memcpy(copy + MI_ADDR_NET_NS, &net_ns, sizeof(net_ns));
    ferry_address_record_info_t shm = mi_record(copy, length, 1, worker, "shm");
    FT_CHECK(shm.considered && !shm.reachable && strstr(shm.why, "another net namespace"),
             "shm of another net namespace: reachable %d, why \"%s\"", shm.reachable, shm.why);
    ferry_ep_choice_t choice = mi_choose(worker, copy, length);
    FT_CHECK(choice.transport == NULL || strcmp(choice.transport, "shm") != 0,
             "shm chosen for another net namespace");
    FT_CHECK(strstr(choice.reason, "shm: another net namespace") != NULL, "reason \"%s\"",
             choice.reason);

    /* another uid in the shm record (self's record is empty: shm's data follows two record
     * headers) */
    memcpy(copy, address, length);
    uint32_t uid;
    size_t at = MI_ADDR_HEADER + 2 * MI_RECORD_HEADER;
    memcpy(&uid, copy + at, sizeof(uid));
    uid += 1;
    memcpy(copy + at, &uid, sizeof(uid));
    shm = mi_record(copy, length, 1, worker, "shm");
    FT_CHECK(shm.considered && !shm.reachable && strstr(shm.why, "another user"),
             "shm of another uid: reachable %d, why \"%s\"", shm.reachable, shm.why);
    choice = mi_choose(worker, copy, length);
    FT_CHECK(choice.status == FERRY_OK && strcmp(choice.transport, "tcp") == 0,
             "another uid on this host: %s, expected tcp",
             choice.transport ? choice.transport : "none");
    FT_CHECK(strstr(choice.reason, "shm: another user") != NULL, "reason \"%s\"", choice.reason);
}

int main(void)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_peer_t peer;
    ft_ferry_t f;

    const char *transports = getenv("FERRY_TRANSPORTS");
    if (transports != NULL && transports[0] != '\0' && strcmp(transports, "all") != 0)
        ft_skip("FERRY_TRANSPORTS=%s: this test needs self, shm and tcp", transports);
    ft_set_role("parent");
    ft_watchdog(55);
    ft_peer_spawn(&peer, "peer", mi_peer_role, NULL);
    ft_ferry_init(&f, NULL, NULL);
    size_t length = ft_recv_address(peer.chan, address, sizeof(address), 30000);
    ft_token_t port = ft_chan_expect_token(peer.chan, MI_TOKEN_PORT, 30000);

    mi_decode(address, length, peer.pid, (unsigned)port.v[0]);
    mi_reach(f.worker, address, length);
    mi_reach_without_shm(address, length);
    mi_forged(f.worker, address, length);

    ft_chan_send_token(peer.chan, MI_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&peer, 30000, 0);
    ft_ferry_fini(&f);
    ft_note("passed");
    return 0;
}
