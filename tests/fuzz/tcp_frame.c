/* Fuzz the tcp transport's decoders (src/transport/tcp/tcp_frame.c): the frame header, the
 * HELLO payload and the address record, which all read bytes a hostile peer (or any program
 * that connects to the port) controls.
 *
 * Input: 0 u8 selector   1 u64 max payload (FERRY_TCP_MAX_FRAME)   9 the bytes to decode.
 * selector % 3: 0 a stream of frame headers (each accepted one is followed by its HELLO
 * payload, decoded as such, or skipped by its length as the receiver would), 1 a HELLO
 * payload, 2 an address record. Every accepted value is checked against the rules the
 * receiver relies on and re-encoded: the bytes must come back identical (nothing accepted is
 * ambiguous); a violation aborts so that the fuzzer reports it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/ferry.h>

#include "fuzz_common.h"
#include "transport/tcp/tcp_frame.h"

static void fuzz_require(int cond, const char *what)
{
    if (!cond)
        fuzz_fail(what); /* an accepted input breaks this rule */
}

static void fuzz_hello(const uint8_t *data, size_t size)
{
    tcp_hello_t hello;
    if (!tcp_hello_decode(data, size, &hello))
        return;
    fuzz_require(hello.address + hello.address_length == data + size, "hello address in bounds");
    fuzz_require((hello.flags & ~TCP_HELLO_FLAGS_KNOWN) == 0, "hello flags known");
    uint8_t *again = malloc(TCP_HELLO_MAX);
    size_t n = tcp_hello_encode(hello.flags, hello.address, hello.address_length, again);
    fuzz_require(n == size && memcmp(again, data, size) == 0, "hello re-encodes identically");
    free(again);
}

static void fuzz_record(const uint8_t *data, size_t size)
{
    tcp_record_t record;
    uint8_t again[TCP_RECORD_MAX_SIZE];
    if (!tcp_record_decode(data, size, &record))
        return;
    fuzz_require(record.count >= 1 && record.count <= TCP_RECORD_MAX_ADDRS, "record count");
    fuzz_require(record.port != 0, "record port");
    size_t n = tcp_record_encode(&record, again);
    fuzz_require(n == size && memcmp(again, data, size) == 0, "record re-encodes identically");
}

static void fuzz_frames(const uint8_t *data, size_t size, uint64_t max_payload)
{
    while (size >= TCP_FRAME_HEADER_SIZE) {
        tcp_frame_t frame;
        uint8_t again[TCP_FRAME_HEADER_SIZE];
        if (tcp_frame_decode(data, max_payload, &frame) != TCP_FRAME_OK)
            return; /* the receiver closes the connection */
        fuzz_require(frame.header_length <= FERRY_AM_HEADER_MAX, "am header length");
        fuzz_require(frame.type != TCP_FRAME_AM || frame.length <= max_payload, "max payload");
        fuzz_require(frame.type == TCP_FRAME_AM || frame.type == TCP_FRAME_HELLO ||
                         frame.length == 0,
                     "control frames carry nothing");
        tcp_frame_encode(&frame, again);
        fuzz_require(memcmp(again, data, TCP_FRAME_HEADER_SIZE) == 0, "frame re-encodes");
        data += TCP_FRAME_HEADER_SIZE;
        size -= TCP_FRAME_HEADER_SIZE;
        uint64_t body = frame.header_length + frame.length;
        if (frame.type == TCP_FRAME_HELLO)
            fuzz_require(frame.length <= TCP_HELLO_MAX, "hello length");
        if (body > size)
            return; /* the receiver waits for more */
        if (frame.type == TCP_FRAME_HELLO)
            fuzz_hello(data, (size_t)body);
        data += body;
        size -= (size_t)body;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t max_payload = 0;
    if (size < 9)
        return 0;
    for (int i = 7; i >= 0; i--)
        max_payload = (max_payload << 8) | data[1 + i];
    switch (data[0] % 3) {
    case 0:
        fuzz_frames(data + 9, size - 9, max_payload);
        break;
    case 1:
        fuzz_hello(data + 9, size - 9);
        break;
    default:
        fuzz_record(data + 9, size - 9);
        break;
    }
    return 0;
}
