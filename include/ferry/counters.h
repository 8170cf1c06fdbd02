/**
 * @file counters.h
 * @brief ferry counters — what a worker and each of its endpoints moved, how, and what went
 *        wrong: always on, cheap enough for the fast paths.
 *
 * Part of libferry. See @ref ferry_api_counters.
 */
#ifndef FERRY_COUNTERS_H
#define FERRY_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup ferry_api_counters Counters
 * @brief Messages and bytes by protocol and by transport, the way each tagged message moved
 *        by size class, retries, errors by status, connections made and lost.
 *
 * Every endpoint counts what goes through it; a worker's counters are the sum over its
 * endpoints, the ones it has now and the ones already destroyed. Counting costs an increment
 * or two per operation (no system call, no lock, no atomic), so it is always on. Reading them
 * is not a fast path. FERRY_STATS=1 prints a worker's counters when it is destroyed;
 * ferry_perf -v prints them after a run.
 *
 * Like the structures of @ref ferry_api_info, ferry_counters_t starts with a `size` member the
 * caller sets to `sizeof(ferry_counters_t)` before the call.
 * @{
 */

/** @brief Size classes of ferry_counters_t.tag_modes: class 0 holds empty messages, class c
 *         (1 .. FERRY_COUNTERS_SIZE_CLASSES - 1) messages of [2^(c-1), 2^c) bytes, the last one
 *         also everything larger. */
#define FERRY_COUNTERS_SIZE_CLASSES 36
/** @brief How a tagged message moved (the second index of ferry_counters_t.tag_modes). */
typedef enum ferry_counters_mode {
    FERRY_COUNTERS_MODE_EAGER = 0, /**< with the message's header, copied by the receiver */
    FERRY_COUNTERS_MODE_GET = 1,   /**< rendezvous: the receiver reads it (one-sided) */
    FERRY_COUNTERS_MODE_PUT = 2,   /**< rendezvous: the sender writes it (one-sided) */
    FERRY_COUNTERS_MODE_COOP = 3,  /**< rendezvous: both copy through shared buffers */
    FERRY_COUNTERS_MODE_NULL = 4,  /**< rendezvous: DATA messages (a byte stream) */
    FERRY_COUNTERS_MODE_SPLIT = 5, /**< rendezvous: both read and write a part */
    FERRY_COUNTERS_MODES = 6       /**< how many */
} ferry_counters_mode_t;
/** @brief Transports counted (index = the transport's index, ferry_transport_query()). */
#define FERRY_COUNTERS_TRANSPORTS 8
/** @brief Statuses counted in ferry_counters_t.errors (index = -status). */
#define FERRY_COUNTERS_STATUSES 64

/** @brief Messages (or operations) and bytes, each way. */
typedef struct ferry_traffic {
    uint64_t sent;           /**< messages sent (operations started) */
    uint64_t sent_bytes;     /**< their payload bytes */
    uint64_t received;       /**< messages received */
    uint64_t received_bytes; /**< their payload bytes */
} ferry_traffic_t;

/** @brief What a worker or an endpoint counted. */
typedef struct ferry_counters {
    size_t size;         /**< set by the caller: sizeof(ferry_counters_t) */
    ferry_traffic_t am;  /**< active messages of the application (ids < FERRY_AM_ID_MAX) */
    ferry_traffic_t tag; /**< tagged messages: sent by ferry_tag_send*, received when matched */
    /** one-sided operations: sent = puts and atomics started, received = gets started (bytes
     *  read) */
    ferry_traffic_t rma;
    /** every message each transport carried (application and ferry's own: rendezvous, the
     *  target-executed protocol, segments), by transport index */
    ferry_traffic_t transport[FERRY_COUNTERS_TRANSPORTS];
    /** tagged messages sent, by size class and by how they moved */
    uint64_t tag_modes[FERRY_COUNTERS_SIZE_CLASSES][FERRY_COUNTERS_MODES];
    /** sends and one-sided operations refused with FERRY_ERR_NO_RESOURCE (each retry counts) */
    uint64_t no_resource;
    /** errors by status (index -status): returned by a send, receive or one-sided call, or the
     *  status an endpoint failed with */
    uint64_t errors[FERRY_COUNTERS_STATUSES];
    uint64_t connections_made; /**< endpoints whose connection was established */
    uint64_t connections_lost; /**< endpoints that failed (not a graceful close) */
    /** times the receiver restricted this endpoint's eager tagged sends because its backlog
     *  of unexpected messages crossed a bound (FERRY_TAG_UNEXPECTED_MAX or
     *  FERRY_TAG_UNEXPECTED_COUNT; the sender then uses rendezvous until told otherwise) */
    uint64_t tag_flow_limited;
    /** worker-wide (0 in ferry_ep_counters): the most unexpected eager tagged messages the
     *  worker held at once */
    uint64_t tag_unexpected_peak_count;
    /** worker-wide (0 in ferry_ep_counters): the most payload bytes of unexpected eager tagged
     *  messages of more than 256 bytes the worker held at once (what FERRY_TAG_UNEXPECTED_MAX
     *  bounds, softly: messages in flight when the bound is crossed still arrive) */
    uint64_t tag_unexpected_peak_bytes;
} ferry_counters_t;

/**
 * @brief A worker's counters: the sum over its endpoints, present and destroyed.
 * @param worker the worker
 * @param[in,out] counters size set by the caller; filled on success
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument, or counters->size too small
 */
ferry_status_t ferry_worker_counters(ferry_worker_t *worker, ferry_counters_t *counters);

/**
 * @brief One endpoint's counters (its transport's row only in transport[]).
 * @param ep the endpoint
 * @param[in,out] counters size set by the caller; filled on success
 * @retval FERRY_OK done
 * @retval FERRY_ERR_INVALID_PARAM a NULL argument, or counters->size too small
 */
ferry_status_t ferry_ep_counters(const ferry_ep_t *ep, ferry_counters_t *counters);

/**
 * @brief The size class of a message of length bytes (the first index of tag_modes).
 * @param length bytes
 * @return 0 for 0 bytes, else 1 + floor(log2(length)), at most FERRY_COUNTERS_SIZE_CLASSES - 1
 */
unsigned ferry_counters_size_class(uint64_t length);

/**
 * @brief The counters as text for people: one line per non-zero counter (what FERRY_STATS=1
 *        and ferry_perf -v print).
 * @param[in] counters what to print
 * @param[out] buffer receives the text, NUL-terminated, truncated to fit
 * @param length the buffer's size
 * @return the length the whole text needs (without the NUL), like snprintf
 */
size_t ferry_counters_format(const ferry_counters_t *counters, char *buffer, size_t length);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
