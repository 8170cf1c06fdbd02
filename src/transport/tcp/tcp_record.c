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

void tcp_record_compact_fill(fy_tl_worker_t *tlw, fy_tl_compact_t *compact)
{
    const tcp_record_t *rec = &tlw->record;
    const tcp_record_addr_t *chosen = NULL;

    /* the first address other hosts reach (the record lists the chosen interfaces' first),
     * else loopback (127.0.0.1 is always last) */
    for (unsigned i = 0; i < rec->count && chosen == NULL; i++) {
        if (!tcp_addr_is_loopback(&rec->addrs[i]))
            chosen = &rec->addrs[i];
    }
    if (chosen == NULL && rec->count > 0)
        chosen = &rec->addrs[rec->count - 1];
    if (chosen == NULL)
        return;
    compact->flags |= FY_TL_COMPACT_TCP;
    compact->ip_family = chosen->family;
    compact->port = rec->port;
    memset(compact->ip, 0, sizeof(compact->ip));
    memcpy(compact->ip, chosen->bytes, chosen->family == 4 ? 4 : 16);
}

ferry_status_t tcp_record_compact_record(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                         void *buffer, size_t *length_p)
{
    uint8_t bytes[TCP_RECORD_MAX_SIZE];
    tcp_record_t rec;

    (void)peer;
    if (!(compact->flags & FY_TL_COMPACT_TCP))
        return FERRY_ERR_NO_ELEM;
    memset(&rec, 0, sizeof(rec));
    rec.port = compact->port;
    rec.addrs[0].family = compact->ip_family;
    memcpy(rec.addrs[0].bytes, compact->ip, compact->ip_family == 4 ? 4 : 16);
    rec.count = 1;
    if (!tcp_addr_is_loopback(&rec.addrs[0])) { /* as the full record: loopback last */
        rec.addrs[1].family = 4;
        rec.addrs[1].bytes[0] = 127;
        rec.addrs[1].bytes[3] = 1;
        rec.count = 2;
    }
    size_t length = tcp_record_encode(&rec, bytes);
    if (*length_p < length)
        return FERRY_ERR_OUT_OF_RANGE;
    memcpy(buffer, bytes, length);
    *length_p = length;
    return FERRY_OK;
}
