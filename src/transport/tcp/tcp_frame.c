/* The tcp transport's wire formats (layouts in tcp_frame.h). Pure functions, fuzzed. */
#include "transport/tcp/tcp_frame.h"

#include <string.h>

#include <ferry/ferry.h>

#include "core/wire.h"

void tcp_frame_encode(const tcp_frame_t *frame, uint8_t raw[TCP_FRAME_HEADER_SIZE])
{
    fy_le_put32(raw, TCP_FRAME_MAGIC);
    raw[4] = TCP_FRAME_VERSION;
    raw[5] = frame->type;
    raw[6] = frame->am_id;
    raw[7] = frame->flags;
    fy_le_put16(raw + 8, frame->header_length);
    fy_le_put16(raw + 10, 0);
    fy_le_put32(raw + 12, frame->channel);
    fy_le_put64(raw + 16, frame->length);
}

tcp_frame_verdict_t tcp_frame_decode(const uint8_t raw[TCP_FRAME_HEADER_SIZE], uint64_t max_payload,
                                     tcp_frame_t *frame)
{
    tcp_frame_t f;
    if (fy_le_get32(raw) != TCP_FRAME_MAGIC)
        return TCP_FRAME_BAD_MAGIC;
    if (raw[4] != TCP_FRAME_VERSION)
        return TCP_FRAME_BAD_VERSION;
    f.type = raw[5];
    f.am_id = raw[6];
    f.flags = raw[7];
    f.header_length = fy_le_get16(raw + 8);
    f.channel = fy_le_get32(raw + 12);
    f.length = fy_le_get64(raw + 16);
    if (f.type < TCP_FRAME_HELLO || f.type > TCP_FRAME_IDLE)
        return TCP_FRAME_BAD_TYPE;
    if ((f.flags & ~TCP_FRAME_FLAGS_KNOWN) != 0 || fy_le_get16(raw + 10) != 0)
        return TCP_FRAME_BAD_FLAGS;
    if (f.type == TCP_FRAME_AM) {
        if (f.header_length > FERRY_AM_HEADER_MAX)
            return TCP_FRAME_BAD_HEADER_LENGTH;
        if (f.length > max_payload)
            return TCP_FRAME_TOO_LONG;
    } else {
        if (f.header_length != 0 || f.am_id != 0)
            return TCP_FRAME_BAD_HEADER_LENGTH;
        if (f.type == TCP_FRAME_HELLO) {
            if (f.length < TCP_HELLO_FIXED_SIZE || f.length > TCP_HELLO_MAX)
                return TCP_FRAME_BAD_LENGTH;
        } else if (f.length != 0) {
            return TCP_FRAME_BAD_LENGTH;
        }
    }
    *frame = f;
    return TCP_FRAME_OK;
}

const char *tcp_frame_verdict_string(tcp_frame_verdict_t verdict)
{
    switch (verdict) {
    case TCP_FRAME_OK:
        return "ok";
    case TCP_FRAME_BAD_MAGIC:
        return "bad magic (not a ferry tcp frame)";
    case TCP_FRAME_BAD_VERSION:
        return "unsupported frame version";
    case TCP_FRAME_BAD_TYPE:
        return "unknown frame type";
    case TCP_FRAME_BAD_FLAGS:
        return "unknown flags or non-zero reserved bytes";
    case TCP_FRAME_BAD_HEADER_LENGTH:
        return "bad am header length";
    case TCP_FRAME_TOO_LONG:
        return "payload longer than FERRY_TCP_MAX_FRAME";
    case TCP_FRAME_BAD_LENGTH:
        return "bad length for the frame type";
    }
    return "?";
}

size_t tcp_hello_encode(uint32_t flags, const void *address, uint32_t address_length,
                        uint8_t *buffer)
{
    fy_le_put32(buffer, flags);
    fy_le_put32(buffer + 4, address_length);
    memcpy(buffer + TCP_HELLO_FIXED_SIZE, address, address_length);
    return TCP_HELLO_FIXED_SIZE + address_length;
}

bool tcp_hello_decode(const uint8_t *bytes, size_t length, tcp_hello_t *hello)
{
    if (length < TCP_HELLO_FIXED_SIZE || length > TCP_HELLO_MAX)
        return false;
    uint32_t flags = fy_le_get32(bytes);
    uint32_t address_length = fy_le_get32(bytes + 4);
    if ((flags & ~TCP_HELLO_FLAGS_KNOWN) != 0 ||
        (flags & (TCP_HELLO_ACCEPT | TCP_HELLO_REJECT)) == (TCP_HELLO_ACCEPT | TCP_HELLO_REJECT))
        return false;
    if (address_length != length - TCP_HELLO_FIXED_SIZE)
        return false;
    hello->flags = flags;
    hello->address_length = address_length;
    hello->address = bytes + TCP_HELLO_FIXED_SIZE;
    return true;
}

size_t tcp_record_encode(const tcp_record_t *record, uint8_t buffer[TCP_RECORD_MAX_SIZE])
{
    buffer[0] = TCP_RECORD_VERSION;
    buffer[1] = record->count;
    fy_le_put16(buffer + 2, record->port);
    for (unsigned i = 0; i < record->count; i++) {
        uint8_t *e = buffer + TCP_RECORD_FIXED_SIZE + i * TCP_RECORD_ENTRY_SIZE;
        e[0] = record->addrs[i].family;
        e[1] = e[2] = e[3] = 0;
        memcpy(e + 4, record->addrs[i].bytes, 16);
    }
    return TCP_RECORD_FIXED_SIZE + (size_t)record->count * TCP_RECORD_ENTRY_SIZE;
}

bool tcp_record_decode(const uint8_t *bytes, size_t length, tcp_record_t *record)
{
    tcp_record_t r;
    if (length < TCP_RECORD_FIXED_SIZE || bytes[0] != TCP_RECORD_VERSION)
        return false;
    r.count = bytes[1];
    r.port = fy_le_get16(bytes + 2);
    if (r.count == 0 || r.count > TCP_RECORD_MAX_ADDRS || r.port == 0 ||
        length != TCP_RECORD_FIXED_SIZE + (size_t)r.count * TCP_RECORD_ENTRY_SIZE)
        return false;
    for (unsigned i = 0; i < r.count; i++) {
        const uint8_t *e = bytes + TCP_RECORD_FIXED_SIZE + i * TCP_RECORD_ENTRY_SIZE;
        if ((e[0] != 4 && e[0] != 6) || e[1] != 0 || e[2] != 0 || e[3] != 0)
            return false;
        r.addrs[i].family = e[0];
        memcpy(r.addrs[i].bytes, e + 4, 16);
        if (e[0] == 4) {
            for (int k = 4; k < 16; k++) {
                if (e[4 + k] != 0)
                    return false;
            }
        }
    }
    *record = r;
    return true;
}
