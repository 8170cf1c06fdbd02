/**
 * @file status.h
 * @brief ferry — status codes.
 *
 * This enum is the one list of statuses. Each entry is written on one line as
 *     FERRY_NAME = value, // description
 * and the build generates ferry_status_string()/ferry_status_name() from these
 * very lines (cmake/gen_status.cmake), so names, values and descriptions
 * can never drift apart. Keep that one-line shape when adding an entry (the API
 * reference shows the description too: docs/api/Doxyfile.in reads it as the
 * entry's documentation).
 */
#ifndef FERRY_STATUS_H
#define FERRY_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup ferry_api_status Statuses
 * @brief The one status enum of ferry and its names and descriptions.
 *
 * OK (0) and INPROGRESS (1) are not errors. Errors are negative and grouped by
 * what they affect:
 * - `-1 .. -29`: the operation: nothing else is affected, retry or fix the call;
 * - `-30 .. -59`: the endpoint: the connection to that peer is unusable;
 * - `-60 .. -89`: the worker or context: local resources or the environment.
 * @{
 */

/** @brief The status every ferry call returns or reports. */
// clang-format off
typedef enum ferry_status {
    FERRY_OK = 0, // success
    FERRY_INPROGRESS = 1, // operation started; its completion will be signalled
    /* operation errors */
    FERRY_ERR_NO_RESOURCE = -1, // no transport resources now; call ferry_worker_progress() and retry
    FERRY_ERR_INVALID_PARAM = -2, // invalid parameter
    FERRY_ERR_NO_MEMORY = -3, // out of memory
    FERRY_ERR_UNSUPPORTED = -4, // operation not supported by this transport or build
    FERRY_ERR_MESSAGE_TRUNCATED = -5, // message longer than the receive buffer
    FERRY_ERR_CANCELED = -6, // operation canceled
    FERRY_ERR_ACCESS = -7, // access outside a registration or not granted by its key
    FERRY_ERR_TIMED_OUT = -8, // operation timed out
    FERRY_ERR_BUSY = -9, // object busy: events pending or still in use
    FERRY_ERR_NO_ELEM = -10, // no such element
    FERRY_ERR_ALREADY_EXISTS = -11, // element already exists
    FERRY_ERR_OUT_OF_RANGE = -12, // value out of range
    FERRY_ERR_NOT_AVAILABLE = -13, // object exists but is not available
    FERRY_ERR_ILLEGAL_STATE = -14, // operation not allowed in the object's current state
    FERRY_ERR_REMOVED = -15, // object removed: only its release is allowed
    /* endpoint errors */
    FERRY_ERR_UNREACHABLE = -30, // no enabled transport reaches the peer
    FERRY_ERR_CONNECTION_REFUSED = -31, // peer refused the connection or is not listening
    FERRY_ERR_CONNECTION_RESET = -32, // connection lost: the peer died or the link failed
    FERRY_ERR_ENDPOINT_CLOSED = -33, // endpoint closed locally or by the peer
    FERRY_ERR_ENDPOINT_TIMEOUT = -34, // endpoint timed out: the peer does not answer
    FERRY_ERR_PROTOCOL = -35, // malformed or unexpected message from the peer
    FERRY_ERR_INVALID_ADDRESS = -36, // malformed, truncated or incompatible worker address
    FERRY_ERR_NOT_CONNECTED = -37, // endpoint still connecting: progress (or ferry_ep_wait_connected) and retry
    /* worker and context errors */
    FERRY_ERR_IO = -60, // system call failed (see the log for the call and the reason)
    FERRY_ERR_NO_DEVICE = -61, // no usable transport on this host
    FERRY_ERR_SHMEM = -62, // shared memory could not be created or mapped
    FERRY_ERR_LIMIT = -63, // a configured or system limit was reached
    FERRY_ERR_FORKED = -64, // object inherited across fork(): unusable in the child process; create new ones there
} ferry_status_t;
// clang-format on

/**
 * @brief Short description of a status ("success", "out of memory", ...).
 * @param status any value
 * @return the description of the status; never NULL: an unknown value gives "unknown status".
 *         The string is static.
 */
const char *ferry_status_string(ferry_status_t status);

/**
 * @brief The enum name of a status ("FERRY_ERR_ACCESS").
 * @param status any value
 * @return the name, or "FERRY_UNKNOWN_STATUS" for an unknown value. Static.
 */
const char *ferry_status_name(ferry_status_t status);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
