/* Checking a cell that came through shared memory, before any field is used. The cell is a
 * private copy: the sender cannot change it between this check and its use. */
#include <stdbool.h>
#include <string.h>

#include "transport/shm/shm.h"

static const char *const shm_cell_verdicts[] = {
    [SHM_CELL_OK] = "ok",
    [SHM_CELL_BAD_TYPE] = "unknown cell type",
    [SHM_CELL_BAD_LENGTH] = "length larger than the cell or buffer",
    [SHM_CELL_BAD_HEADER] = "header length larger than the message or FERRY_AM_HEADER_MAX",
    [SHM_CELL_BAD_BUFFER] = "buffer index out of range or not reserved",
    [SHM_CELL_BAD_FRAGMENT] = "fragment out of sequence or beyond the message length",
    [SHM_CELL_TOO_LARGE] = "message larger than FERRY_SHM_AM_MAX",
};

const char *shm_cell_verdict_string(shm_cell_verdict_t verdict)
{
    if ((unsigned)verdict >= sizeof(shm_cell_verdicts) / sizeof(shm_cell_verdicts[0]))
        return "unknown verdict";
    return shm_cell_verdicts[verdict];
}

/* The cell's buffer: in range, reserved, and large enough for the bytes it holds. */
static shm_cell_verdict_t shm_cell_check_buffer(const shm_cell_t *cell, uint64_t free_bits,
                                                uint64_t free_bulk, uint64_t bytes)
{
    bool bulk = (cell->flags & SHM_CELL_BULK) != 0;
    if (cell->buf >= (bulk ? SHM_BULK_COUNT : SHM_BUF_COUNT) ||
        ((bulk ? free_bulk : free_bits) & (1ull << cell->buf)) != 0)
        return SHM_CELL_BAD_BUFFER;
    if (bytes > (bulk ? SHM_BULK_SIZE : SHM_BUF_SIZE))
        return SHM_CELL_BAD_LENGTH;
    return SHM_CELL_OK;
}

shm_cell_verdict_t shm_cell_check(const shm_cell_t *cell, uint64_t free_bits, uint64_t free_bulk,
                                  const shm_rx_frag_t *frag, uint64_t am_max)
{
    shm_cell_verdict_t verdict;

    switch (cell->type) {
    case SHM_CELL_INLINE:
        return shm_cell_check_inline(cell, frag);
    case SHM_CELL_MEDIUM: {
        if (frag->active)
            return SHM_CELL_BAD_FRAGMENT;
        if ((cell->flags & ~(SHM_CELL_BULK | SHM_CELL_HEAD)) != 0)
            return SHM_CELL_BAD_BUFFER;
        bool head = (cell->flags & SHM_CELL_HEAD) != 0;
        if (cell->header_length > cell->length || cell->header_length > FERRY_AM_HEADER_MAX ||
            (head && cell->header_length > SHM_CELL_DATA))
            return SHM_CELL_BAD_HEADER;
        return shm_cell_check_buffer(cell, free_bits, free_bulk,
                                     head ? cell->length - cell->header_length : cell->length);
    }
    case SHM_CELL_FRAG: {
        if (!(cell->flags & SHM_CELL_BULK) ||
            (cell->flags & ~(SHM_CELL_BULK | SHM_CELL_HEAD | SHM_FRAG_FIRST | SHM_FRAG_LAST)) != 0)
            return SHM_CELL_BAD_BUFFER;
        /* the header in the cell: only a first fragment's, and no longer than the cell holds */
        bool head = (cell->flags & SHM_CELL_HEAD) != 0;
        if (head && (!(cell->flags & SHM_FRAG_FIRST) || cell->header_length > cell->length ||
                     cell->header_length > SHM_FRAG_HEAD_MAX))
            return SHM_CELL_BAD_HEADER;
        verdict = shm_cell_check_buffer(cell, free_bits, free_bulk,
                                        head ? cell->length - cell->header_length : cell->length);
        if (verdict != SHM_CELL_OK)
            return verdict;
        if (cell->flags & SHM_FRAG_FIRST) {
            uint64_t total;
            if (frag->active)
                return SHM_CELL_BAD_FRAGMENT;
            if (cell->header_length > cell->length || cell->header_length > FERRY_AM_HEADER_MAX)
                return SHM_CELL_BAD_HEADER;
            memcpy(&total, cell->data, sizeof(total));
            if (total > am_max)
                return SHM_CELL_TOO_LARGE;
            uint64_t payload = cell->length - cell->header_length;
            if (payload > total)
                return SHM_CELL_BAD_FRAGMENT;
            if (((cell->flags & SHM_FRAG_LAST) != 0) != (payload == total))
                return SHM_CELL_BAD_FRAGMENT;
            return SHM_CELL_OK;
        }
        if (!frag->active || cell->header_length != 0)
            return SHM_CELL_BAD_FRAGMENT;
        if (cell->length > frag->length - frag->received)
            return SHM_CELL_BAD_FRAGMENT;
        if (((cell->flags & SHM_FRAG_LAST) != 0) != (frag->received + cell->length == frag->length))
            return SHM_CELL_BAD_FRAGMENT;
        return SHM_CELL_OK;
    }
    case SHM_CELL_CLOSE:
        return SHM_CELL_OK;
    default:
        return SHM_CELL_BAD_TYPE;
    }
}
