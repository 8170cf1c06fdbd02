/* The tcp bootstrap's wire format: encoding and the checks of peer input (bootstrap_wire.h). */
#include "bootstrap/bootstrap_wire.h"

#include <string.h>

#include "core/wire.h"

const char *bootstrap_wire_type_name(unsigned type)
{
    switch (type) {
    case BOOTSTRAP_WIRE_HELLO:
        return "HELLO";
    case BOOTSTRAP_WIRE_WELCOME:
        return "WELCOME";
    case BOOTSTRAP_WIRE_REJECT:
        return "REJECT";
    case BOOTSTRAP_WIRE_ALLGATHER:
        return "ALLGATHER";
    case BOOTSTRAP_WIRE_BARRIER:
        return "BARRIER";
    case BOOTSTRAP_WIRE_RESULT:
        return "RESULT";
    case BOOTSTRAP_WIRE_ABORT:
        return "ABORT";
    }
    return "unknown";
}

void bootstrap_wire_encode(const bootstrap_wire_header_t *header,
                           uint8_t out[BOOTSTRAP_WIRE_HEADER_SIZE])
{
    fy_le_put32(out + 0, header->magic);
    fy_le_put16(out + 4, header->version);
    fy_le_put16(out + 6, header->type);
    fy_le_put32(out + 8, header->rank);
    fy_le_put32(out + 12, header->size);
    fy_le_put32(out + 16, header->seq);
    fy_le_put32(out + 20, header->flags);
    fy_le_put64(out + 24, header->length);
}

ferry_status_t bootstrap_wire_decode(const uint8_t in[BOOTSTRAP_WIRE_HEADER_SIZE],
                                     uint64_t max_length, bootstrap_wire_header_t *header,
                                     const char **reason_p)
{
    header->magic = fy_le_get32(in + 0);
    header->version = fy_le_get16(in + 4);
    header->type = fy_le_get16(in + 6);
    header->rank = fy_le_get32(in + 8);
    header->size = fy_le_get32(in + 12);
    header->seq = fy_le_get32(in + 16);
    header->flags = fy_le_get32(in + 20);
    header->length = fy_le_get64(in + 24);

    if (header->magic != BOOTSTRAP_WIRE_MAGIC) {
        *reason_p = "bad magic: not a ferry bootstrap peer";
        return FERRY_ERR_PROTOCOL;
    }
    if (header->version != BOOTSTRAP_WIRE_VERSION) {
        *reason_p = "another bootstrap wire version: run the same ferry version everywhere";
        return FERRY_ERR_PROTOCOL;
    }
    if (header->flags != 0) {
        *reason_p = "unknown flags";
        return FERRY_ERR_PROTOCOL;
    }
    if (header->size == 0 || header->rank >= header->size) {
        *reason_p = "rank not below size";
        return FERRY_ERR_PROTOCOL;
    }
    switch (header->type) {
    case BOOTSTRAP_WIRE_HELLO:
    case BOOTSTRAP_WIRE_WELCOME:
    case BOOTSTRAP_WIRE_BARRIER:
        if (header->length != 0) {
            *reason_p = "payload on a message that has none";
            return FERRY_ERR_PROTOCOL;
        }
        return FERRY_OK;
    case BOOTSTRAP_WIRE_REJECT:
    case BOOTSTRAP_WIRE_ABORT:
        if (header->length < 4 || header->length > 4 + BOOTSTRAP_WIRE_REASON_MAX) {
            *reason_p = "reason of a bad length";
            return FERRY_ERR_PROTOCOL;
        }
        return FERRY_OK;
    case BOOTSTRAP_WIRE_ALLGATHER:
    case BOOTSTRAP_WIRE_RESULT:
        if (header->length > max_length) {
            *reason_p = "payload longer than allowed (FERRY_BOOTSTRAP_MAX_LENGTH per rank)";
            return FERRY_ERR_PROTOCOL;
        }
        return FERRY_OK;
    }
    *reason_p = "unknown message type";
    return FERRY_ERR_PROTOCOL;
}

size_t bootstrap_wire_reason_encode(ferry_status_t status, const char *text,
                                    uint8_t out[4 + BOOTSTRAP_WIRE_REASON_MAX])
{
    size_t length = strlen(text);
    if (length > BOOTSTRAP_WIRE_REASON_MAX)
        length = BOOTSTRAP_WIRE_REASON_MAX;
    fy_le_put32(out, (uint32_t)(int32_t)status);
    memcpy(out + 4, text, length);
    return 4 + length;
}

void bootstrap_wire_reason_decode(const uint8_t *in, size_t length, ferry_status_t *status_p,
                                  char text[BOOTSTRAP_WIRE_REASON_MAX + 1])
{
    int32_t status = (int32_t)fy_le_get32(in);
    size_t n = length - 4;

    if (n > BOOTSTRAP_WIRE_REASON_MAX)
        n = BOOTSTRAP_WIRE_REASON_MAX;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = in[4 + i];
        text[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    text[n] = '\0';
    /* Only error values travel in a reason; anything else is the peer's confusion. */
    *status_p = status < 0 && status >= -1000 ? (ferry_status_t)status : FERRY_ERR_PROTOCOL;
}
