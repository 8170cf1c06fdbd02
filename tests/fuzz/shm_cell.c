/* Fuzz the shm transport's cell decoder, shm_cell_check() (src/transport/shm/shm_cell.c).
 *
 * The input gives the receiver's state and a sequence of cells, as a hostile peer could write
 * them into a ring:
 *     0  u64 am_max (FERRY_SHM_AM_MAX)
 *     8  u8  fragment state: bit 0 active
 *     9  u16 fragment header length   11 u64 fragment length   19 u64 fragment bytes received
 *    27  then records of 72 bytes: u64 free-buffer bits (bit set = free; used for both the
 *        medium and the bulk pool), 64-byte cell
 *        (a last partial record is padded with zeros; there is always at least one)
 * The fragment state is made a state the receiver can be in (0 < length <= am_max,
 * received < length, header length <= FERRY_AM_HEADER_MAX), or inactive.
 *
 * Each cell the decoder accepts is then used the way shm_rx_cell() (src/transport/shm/shm.c)
 * uses it — header and payload read from the cell or from a 4 KiB buffer of the pool, a
 * fragmented message reassembled into a buffer of its announced length — and every index and
 * length is asserted to be in bounds first: a violation prints the cell and aborts, so the
 * fuzzer reports it. The memory is real where it is small enough (heap copies of the cell and
 * the buffer, a reassembly buffer up to 1 MiB) so that AddressSanitizer checks the copies too.
 * The sequence stops where the receiver would stop: at a rejected cell (the endpoint is closed)
 * or a CLOSE cell. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "transport/shm/shm.h"

#define FUZZ_STATE_SIZE 27u
#define FUZZ_RECORD_SIZE (8u + SHM_CELL_SIZE)
#define FUZZ_REASSEMBLY_MAX (1u << 20) /* larger messages are tracked without memory */

typedef struct fuzz_rx {
    shm_rx_frag_t frag; /* what shm_cell_check sees */
    uint8_t *data;      /* reassembly buffer of frag.length bytes, or NULL when too large */
    uint64_t am_max;
} fuzz_rx_t;

static void fuzz_fail_cell(const shm_cell_t *cell, const fuzz_rx_t *rx, const char *what)
{
    fprintf(stderr,
            "fuzz_shm_cell: accepted cell used out of bounds: %s\n"
            "  cell: type %u, am_id %u, header_length %u, length %u, buf %u, flags 0x%x\n"
            "  fragment state: active %d, header_length %u, length %llu, received %llu; "
            "am_max %llu\n",
            what, cell->type, cell->am_id, cell->header_length, cell->length, cell->buf,
            cell->flags, rx->frag.active, rx->frag.header_length,
            (unsigned long long)rx->frag.length, (unsigned long long)rx->frag.received,
            (unsigned long long)rx->am_max);
    abort();
}

#define FUZZ_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail_cell(cell, rx, #cond);                                                       \
    } while (0)

/* Where the bytes read go, so that the compiler keeps the reads. */
static volatile uint8_t fuzz_sink;

static void fuzz_consume(const uint8_t *p, size_t length)
{
    uint8_t x = 0;
    for (size_t i = 0; i < length; i++)
        x ^= p[i];
    fuzz_sink = x;
}

/* The buffer-index checks shared by MEDIUM and FRAG cells (free_bits: of the cell's pool);
 * with SHM_CELL_HEAD the header is in the cell and only the payload in the buffer. */
static void fuzz_require_buffer(const shm_cell_t *cell, const fuzz_rx_t *rx, uint64_t free_bits)
{
    bool bulk = (cell->flags & SHM_CELL_BULK) != 0;
    bool head = (cell->flags & SHM_CELL_HEAD) != 0;
    FUZZ_REQUIRE(cell->buf < (bulk ? SHM_BULK_COUNT : SHM_BUF_COUNT));
    FUZZ_REQUIRE((free_bits & (1ull << cell->buf)) == 0); /* reserved by the sender */
    FUZZ_REQUIRE(cell->header_length <= cell->length);
    FUZZ_REQUIRE(!head || cell->header_length <= SHM_CELL_DATA);
    /* a FRAG's header in the cell: the first fragment's only, after the message length */
    FUZZ_REQUIRE(!head || cell->type == SHM_CELL_MEDIUM ||
                 ((cell->flags & SHM_FRAG_FIRST) && cell->header_length <= SHM_FRAG_HEAD_MAX));
    FUZZ_REQUIRE(cell->length - (head ? cell->header_length : 0u) <=
                 (bulk ? SHM_BULK_SIZE : SHM_BUF_SIZE));
}

/* Use one accepted cell as shm_rx_cell() does. Returns false when the receiver stops. */
static bool fuzz_use_cell(fuzz_rx_t *rx, const shm_cell_t *cell, uint64_t free_bits,
                          const uint8_t *buffer /* the pool buffer: a medium one's slot, exactly
                                                   SHM_BUF_SLOT bytes, or SHM_BULK_SIZE bytes
                                                   for SHM_CELL_BULK */,
                          const uint8_t *cell_data /* an INLINE message's bytes, gathered from
                                                      its cell and continuation cells: exactly
                                                      SHM_CELL_DATA + flags * SHM_CELL_EXTRA_DATA */)
{
    shm_rx_frag_t *frag = &rx->frag;

    switch (cell->type) {
    case SHM_CELL_INLINE:
        FUZZ_REQUIRE(!frag->active);
        FUZZ_REQUIRE(cell->flags <= SHM_INLINE_EXTRA_MAX);
        FUZZ_REQUIRE(cell->length <= SHM_CELL_DATA + cell->flags * SHM_CELL_EXTRA_DATA);
        FUZZ_REQUIRE(cell->header_length <= cell->length);
        FUZZ_REQUIRE(cell->header_length <= FERRY_AM_HEADER_MAX);
        fuzz_consume(cell_data, cell->header_length);
        fuzz_consume(cell_data + cell->header_length, cell->length - cell->header_length);
        return true;
    case SHM_CELL_MEDIUM:
        FUZZ_REQUIRE(!frag->active);
        fuzz_require_buffer(cell, rx, free_bits);
        FUZZ_REQUIRE(cell->header_length <= FERRY_AM_HEADER_MAX);
        if (cell->flags & SHM_CELL_HEAD) { /* header in the cell, payload from the start */
            fuzz_consume(cell->data, cell->header_length);
            if (!(cell->flags & SHM_CELL_BULK))
                buffer += shm_buf_shift(cell->length - cell->header_length);
            fuzz_consume(buffer, cell->length - cell->header_length);
        } else {
            if (!(cell->flags & SHM_CELL_BULK))
                buffer += shm_buf_shift(cell->length);
            fuzz_consume(buffer, cell->header_length);
            fuzz_consume(buffer + cell->header_length, cell->length - cell->header_length);
        }
        return true;
    case SHM_CELL_FRAG: {
        fuzz_require_buffer(cell, rx, free_bits);
        if (cell->flags & SHM_FRAG_FIRST) {
            uint64_t total;
            FUZZ_REQUIRE(!frag->active);
            FUZZ_REQUIRE(cell->header_length <= sizeof(frag->header));
            memcpy(&total, cell->data, sizeof(total));
            FUZZ_REQUIRE(total <= rx->am_max);
            free(rx->data);
            rx->data = NULL;
            if (total <= FUZZ_REASSEMBLY_MAX) {
                rx->data = malloc(total ? total : 1);
                if (rx->data == NULL)
                    abort();
            }
            frag->active = true;
            frag->id = cell->am_id;
            frag->header_length = cell->header_length;
            frag->length = total;
            frag->received = 0;
            memcpy(frag->header,
                   (cell->flags & SHM_CELL_HEAD) ? cell->data + SHM_FRAG_HEAD_AT : buffer,
                   cell->header_length);
        } else {
            FUZZ_REQUIRE(frag->active);
            FUZZ_REQUIRE(cell->header_length == 0);
        }
        uint64_t n = cell->length - cell->header_length;
        FUZZ_REQUIRE(frag->received <= frag->length);
        FUZZ_REQUIRE(n <= frag->length - frag->received);
        if (rx->data != NULL)
            memcpy(rx->data + frag->received,
                   buffer + ((cell->flags & SHM_CELL_HEAD) ? 0 : cell->header_length), n);
        frag->received += n;
        if (cell->flags & SHM_FRAG_LAST) {
            FUZZ_REQUIRE(frag->received == frag->length); /* the whole message is delivered */
            if (rx->data != NULL)
                fuzz_consume(rx->data, frag->length);
            fuzz_consume(frag->header, frag->header_length);
            frag->active = false;
            free(rx->data);
            rx->data = NULL;
        } else {
            FUZZ_REQUIRE(frag->received < frag->length); /* more must follow */
        }
        return true;
    }
    case SHM_CELL_CLOSE:
        return false;
    default:
        fuzz_fail_cell(cell, rx, "a cell of unknown type was accepted");
        return false;
    }
}

/* A state the receiver can be in, from arbitrary bytes. */
static void fuzz_make_state(fuzz_rx_t *rx, const uint8_t state[FUZZ_STATE_SIZE])
{
    uint16_t header_length;

    memset(rx, 0, sizeof(*rx));
    rx->am_max = fuzz_get64(state);
    rx->frag.active = (state[8] & 1) != 0;
    memcpy(&header_length, state + 9, sizeof(header_length));
    rx->frag.length = fuzz_get64(state + 11);
    rx->frag.received = fuzz_get64(state + 19);
    rx->frag.header_length = (uint16_t)(header_length % (FERRY_AM_HEADER_MAX + 1));
    if (!rx->frag.active)
        return;
    if (rx->am_max == 0) {
        rx->frag.active = false; /* nothing can be in flight */
        return;
    }
    if (rx->frag.length == 0 || rx->frag.length > rx->am_max)
        rx->frag.length = 1 + rx->frag.length % rx->am_max;
    rx->frag.received %= rx->frag.length;
    /* Reassembly memory only for a message the first fragment could have allocated, with the
     * bytes already received taken as zeros. */
    if (rx->frag.length <= FUZZ_REASSEMBLY_MAX) {
        rx->data = calloc(1, rx->frag.length);
        if (rx->data == NULL)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t state[FUZZ_STATE_SIZE] = {0};
    fuzz_rx_t rx;
    size_t offset;

    memcpy(state, data, size < sizeof(state) ? size : sizeof(state));
    fuzz_make_state(&rx, state);

    /* Exact-size heap copies: AddressSanitizer reports a read past either. */
    shm_cell_t *cell = malloc(sizeof(*cell));
    uint8_t *cell_data = NULL; /* sized per message below */
    uint8_t *buffer = malloc(SHM_BUF_SLOT);
    uint8_t *bulk = malloc(SHM_BULK_SIZE);
    if (cell == NULL || buffer == NULL || bulk == NULL)
        abort();
    for (size_t i = 0; i < SHM_BUF_SLOT; i++)
        buffer[i] = (uint8_t)i;
    for (size_t i = 0; i < SHM_BULK_SIZE; i++)
        bulk[i] = (uint8_t)(i * 7);

    offset = sizeof(state);
    do {
        uint8_t record[FUZZ_RECORD_SIZE] = {0};
        if (offset < size)
            memcpy(record, data + offset,
                   size - offset < sizeof(record) ? size - offset : sizeof(record));
        offset += sizeof(record);

        uint64_t free_bits = fuzz_get64(record);
        memcpy(cell, record + 8, sizeof(*cell));
        /* the receiver gathers an INLINE message's continuation cells (bytes 8..63 of each)
         * behind the cell's data; here they are filled with a pattern */
        size_t extra =
            cell->type == SHM_CELL_INLINE && cell->flags <= SHM_INLINE_EXTRA_MAX ? cell->flags : 0;
        free(cell_data);
        cell_data = malloc(SHM_CELL_DATA + extra * SHM_CELL_EXTRA_DATA);
        if (cell_data == NULL)
            abort();
        memcpy(cell_data, cell->data, SHM_CELL_DATA);
        memset(cell_data + SHM_CELL_DATA, 0x5a, extra * SHM_CELL_EXTRA_DATA);

        shm_cell_verdict_t verdict =
            shm_cell_check(cell, free_bits, free_bits, &rx.frag, rx.am_max);
        if (verdict < SHM_CELL_OK || verdict > SHM_CELL_TOO_LARGE)
            fuzz_fail_cell(cell, &rx, "verdict out of range");
        if (shm_cell_verdict_string(verdict) == NULL)
            fuzz_fail_cell(cell, &rx, "verdict without a string");
        if (verdict != SHM_CELL_OK)
            break; /* the receiver closes the endpoint */
        if (!fuzz_use_cell(&rx, cell, free_bits, (cell->flags & SHM_CELL_BULK) ? bulk : buffer,
                           cell_data))
            break;
    } while (offset < size);

    free(rx.data);
    free(buffer);
    free(bulk);
    free(cell_data);
    free(cell);
    return 0;
}
