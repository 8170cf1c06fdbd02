/* The tcp address record (tcp_frame.h: port and addresses): which peers it reaches, and what
 * it says, for people and for programs (ferry_address_record_decode). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "transport/tcp/tcp.h"

static bool tcp_addr_is_loopback(const tcp_record_addr_t *a)
{
    return a->family == 4 ? a->bytes[0] == 127
                          : memcmp(a->bytes, in6addr_loopback.s6_addr, 16) == 0;
}

/* How many of the record's addresses are not loopback. */
static unsigned tcp_record_routable(const tcp_record_t *rec)
{
    unsigned count = 0;
    for (unsigned i = 0; i < rec->count; i++)
        count += !tcp_addr_is_loopback(&rec->addrs[i]);
    return count;
}

bool tcp_record_reachable(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                          size_t record_length)
{
    tcp_record_t rec;
    if (!tcp_record_decode(record, record_length, &rec))
        return false;
    if (fy_host_id_equal(&peer->host, &tlw->local->host))
        return true; /* loopback (or any of its addresses: they are this host's) */
    return tcp_record_routable(&rec) > 0; /* only loopback, and the peer is elsewhere: never */
}

void tcp_record_addrs_text(const tcp_record_t *rec, const char *separator, char *buffer,
                           size_t length)
{
    size_t used = 0;

    if (length == 0)
        return;
    buffer[0] = '\0';
    for (unsigned i = 0; i < rec->count && used < length; i++) {
        char text[INET6_ADDRSTRLEN];
        if (inet_ntop(rec->addrs[i].family == 4 ? AF_INET : AF_INET6, rec->addrs[i].bytes, text,
                      sizeof(text)) == NULL)
            snprintf(text, sizeof(text), "?");
        used += (size_t)snprintf(buffer + used, length - used, "%s%s", i ? separator : "", text);
    }
}

ferry_status_t tcp_record_describe(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                   const void *record, size_t record_length, char *text,
                                   size_t text_len, bool *reachable_p, char *why, size_t why_len)
{
    char addrs[TCP_RECORD_MAX_ADDRS * (INET6_ADDRSTRLEN + 1)];
    tcp_record_t rec;

    if (!tcp_record_decode(record, record_length, &rec)) {
        snprintf(text, text_len,
                 "malformed: %zu bytes (a tcp record is version %u, a port other than 0 and 1 "
                 "to %u addresses of family 4 or 6: %u + %u bytes per address)",
                 record_length, TCP_RECORD_VERSION, TCP_RECORD_MAX_ADDRS, TCP_RECORD_FIXED_SIZE,
                 TCP_RECORD_ENTRY_SIZE);
        if (tlw != NULL) {
            *reachable_p = false;
            snprintf(why, why_len, "%s", text);
        }
        return FERRY_ERR_INVALID_ADDRESS;
    }
    tcp_record_addrs_text(&rec, " ", addrs, sizeof(addrs));
    snprintf(text, text_len, "port %u: %s", rec.port, addrs);
    if (tlw != NULL) {
        *reachable_p = tcp_record_reachable(tlw, peer, record, record_length);
        if (*reachable_p)
            why[0] = '\0';
        else
            snprintf(why, why_len,
                     "another host, and the record has only loopback addresses (the peer "
                     "publishes no address reachable from here: FERRY_TCP_IFACE there chooses "
                     "its interfaces)");
    }
    return FERRY_OK;
}

size_t tcp_record_fields(const void *record, size_t record_length, ferry_info_field_t *fields,
                         size_t max)
{
    char addrs[TCP_RECORD_MAX_ADDRS * (INET6_ADDRSTRLEN + 1)];
    tcp_record_t rec;
    size_t count = 0;

    if (!tcp_record_decode(record, record_length, &rec))
        return 0;
    tcp_record_addrs_text(&rec, " ", addrs, sizeof(addrs));
    fy_tl_field_add(fields, max, &count, "port", "%u", rec.port);
    fy_tl_field_add(fields, max, &count, "addresses", "%s", addrs);
    return count;
}
