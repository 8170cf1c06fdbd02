/**
 * @file info.h
 * @brief ferry introspection — what the library is, what it can use here, how it is
 *        configured, what a worker address says, and which transport an endpoint would use.
 *
 * Part of libferry (no other library needed). Everything `ferry_info` prints comes from these
 * calls; any application may make them too, for example to log which transport reaches a
 * peer and why. See @ref ferry_api_info.
 */
#ifndef FERRY_INFO_H
#define FERRY_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup ferry_api_info Introspection
 * @brief The build, the transports and their capabilities, the configuration variables,
 *        worker addresses decoded, and the transport choice of ferry_ep_create() explained.
 *
 * Conventions of this group, for a stable ABI:
 * - Results come back in structures the caller allocates. Each starts with a `size` member
 *   that the caller sets to `sizeof` the structure before the call (a structure from an older
 *   header is accepted: the library fills only the members that fit, and zeroes members it
 *   does not know). A `size` smaller than the first version of the structure is
 *   FERRY_ERR_INVALID_PARAM.
 * - Text is copied into arrays inside those structures (always NUL-terminated, truncated to
 *   fit). Members of type `const char *` point to static strings of the library that defines
 *   them (names, defaults, descriptions): valid while that library is loaded; never free them.
 * - Lists are read by index: a count, then one call per index, in a fixed order.
 * - A call's outputs are written only when it returns FERRY_OK. Invalid arguments are logged
 *   at warn level; an invalid address is logged once with what is wrong with it.
 * - None of these calls is on a fast path: they may make system calls and take locks.
 *
 * @code
 *     ferry_ep_choice_t choice = {.size = sizeof(choice)};
 *     if (ferry_ep_choose(worker, address, length, &choice) == FERRY_OK)
 *         printf("%s: %s\n", choice.status == FERRY_OK ? choice.transport : "unreachable",
 *                choice.reason);
 * @endcode
 * @{
 */

/** @brief Size of the text arrays of this group's structures (bytes, with the NUL). */
#define FERRY_INFO_TEXT_MAX 512
/** @brief Size of the key of a ferry_info_field_t (bytes, with the NUL). */
#define FERRY_INFO_KEY_MAX 32
/** @brief The most fields an address record is decoded into. */
#define FERRY_INFO_FIELDS_MAX 8
/** @brief A transport index that names no transport ("none"). */
#define FERRY_TRANSPORT_NONE ((size_t)-1)

/**
 * @brief How this library was built.
 * @return "compiler: GNU 12.2.0, build type: RelWithDebInfo, sanitizers: none, pmix: yes
 *         (4.2.2rc2, in libferry_bootstrap)"; pmix says whether libferry_bootstrap has the
 *         PMIx method. A static string (never NULL, not to be freed).
 */
const char *ferry_build_options(void);

/* ------------------------------------------------------------------ capabilities */

/** @brief Capability: active messages. */
#define FERRY_TRANSPORT_CAP_AM 0x1u
/** @brief Capability: the active messages of one endpoint arrive in order. */
#define FERRY_TRANSPORT_CAP_AM_ORDERED 0x2u
/** @brief Capability: reaches only peers on this host (shared buffers). */
#define FERRY_TRANSPORT_CAP_SAME_HOST 0x4u
/** @brief Capability: reaches only its own worker. */
#define FERRY_TRANSPORT_CAP_SAME_WORKER 0x8u
/** @brief Capability: one-sided operations complete without the target's progress. */
#define FERRY_TRANSPORT_CAP_RMA 0x10u
/** @brief Capability: one-sided operations take effect in the order they were issued. */
#define FERRY_TRANSPORT_CAP_RMA_ORDERED 0x20u
/** @brief Capability: cross-memory attach to the peer works. Known per endpoint only, once
 *         connected: never in ferry_transport_query()'s caps. */
#define FERRY_TRANSPORT_CAP_CMA 0x40u
/** @brief Capability: a byte stream (tcp): any message size in one frame, and large payloads
 *         are read straight into place. */
#define FERRY_TRANSPORT_CAP_STREAM 0x80u

/**
 * @brief The name of one capability bit.
 * @param cap one FERRY_TRANSPORT_CAP_* bit
 * @return "AM", "AM_ORDERED", "SAME_HOST", "SAME_WORKER", "RMA", "RMA_ORDERED", "CMA",
 *         "STREAM" (the constant's name without FERRY_TRANSPORT_CAP_): a static string; NULL
 *         for 0, several bits, or a bit this library does not know.
 */
const char *ferry_transport_cap_name(unsigned cap);

/* ------------------------------------------------------------------ transports */

/** @brief What a transport is and can do here (ferry_transport_query()). */
typedef struct ferry_transport_info {
    size_t size;      /**< in: sizeof(ferry_transport_info_t) */
    const char *name; /**< "self", "shm", "tcp": what FERRY_TRANSPORTS names (static) */
    unsigned id;      /**< the transport's record id in worker addresses (never reused) */
    /** FERRY_OK: usable on this host; FERRY_ERR_UNSUPPORTED: not usable (why says why) */
    ferry_status_t usable;
    /** when not usable: the transport's own sentence (what is missing, how to fix it);
     *  otherwise "" */
    char why[FERRY_INFO_TEXT_MAX];
    /** a context was given and enabled this transport (its transport list names it, and it
     *  is usable); false without a context */
    bool enabled;
    unsigned caps;        /**< FERRY_TRANSPORT_CAP_* bits (0 when not usable) */
    size_t max_short;     /**< largest header + payload sent inline (one cell, no buffer) */
    size_t max_bcopy;     /**< largest header + payload copied through one buffer (SIZE_MAX:
                           *   no limit) */
    size_t max_iov;       /**< largest scatter/gather count of one send (SIZE_MAX: no limit) */
    double latency_ns;    /**< the transport's estimate of a small message's one-way latency */
    double bandwidth_Bps; /**< its estimate of large-message bandwidth, bytes per second */
} ferry_transport_info_t;

/**
 * @brief How many transports this library has (usable here or not).
 * @return the count; transport indices are 0 .. count-1, in the order of preference in which
 *         ferry_ep_create() tries them
 */
size_t ferry_transport_count(void);

/**
 * @brief What transport index is, whether it is usable here and why not, and what it can do.
 *
 * Probes the system as ferry_context_create() does (it may make system calls), with the
 * FERRY_* environment in effect.
 *
 * @param context a context: info->enabled then says whether it enabled the transport; may
 *                be NULL
 * @param index the transport, 0 .. ferry_transport_count()-1
 * @param[in,out] info in: its size member; out: everything else
 * @retval FERRY_OK filled (a transport that is not usable is FERRY_OK too: see info->usable)
 * @retval FERRY_ERR_INVALID_PARAM info is NULL or its size too small
 * @retval FERRY_ERR_OUT_OF_RANGE index >= ferry_transport_count()
 */
ferry_status_t ferry_transport_query(const ferry_context_t *context, size_t index,
                                     ferry_transport_info_t *info);

/**
 * @brief Facts about a transport's part of a worker (mapped memory, queue sizes, sockets,
 *        peers), for people: one line of text.
 * @param worker the worker
 * @param index the transport, 0 .. ferry_transport_count()-1
 * @param[out] buffer receives the text, NUL-terminated, truncated to length - 1 bytes; ""
 *                    when the transport has nothing to say
 * @param length the size of buffer in bytes (at least 1)
 * @retval FERRY_OK written
 * @retval FERRY_ERR_INVALID_PARAM worker or buffer is NULL, or length is 0
 * @retval FERRY_ERR_OUT_OF_RANGE index >= ferry_transport_count()
 * @retval FERRY_ERR_NOT_AVAILABLE the worker does not use this transport (not enabled by its
 *                                 context)
 */
ferry_status_t ferry_worker_transport_describe(ferry_worker_t *worker, size_t index, char *buffer,
                                               size_t length);

/* ------------------------------------------------------------------ configuration */

/** @brief The type of a configuration variable: how its text is read. */
typedef enum ferry_config_type {
    FERRY_CONFIG_BOOL = 0,   /**< y, yes, on, 1, true; n, no, off, 0, false (any case) */
    FERRY_CONFIG_INT = 1,    /**< a signed decimal integer */
    FERRY_CONFIG_SIZE = 2,   /**< an unsigned decimal integer, optional suffix k, m or g
                              *   (powers of 1024) */
    FERRY_CONFIG_STRING = 3, /**< any text */
} ferry_config_type_t;

/**
 * @brief The name of a configuration type.
 * @param type a ferry_config_type_t value
 * @return "bool", "int", "size", "string"; "unknown" for another value. Static.
 */
const char *ferry_config_type_name(ferry_config_type_t type);

/** @brief One configuration variable: its declaration and the value in effect. */
typedef struct ferry_config_info {
    size_t size;               /**< in: sizeof(ferry_config_info_t) */
    const char *name;          /**< "FERRY_SHM_RING_CELLS": the environment variable (static) */
    ferry_config_type_t type;  /**< how its text is read */
    const char *default_value; /**< the default, as written in the source (static) */
    const char *description;   /**< what it does, for people (static) */
    /** the environment sets it (to a non-empty text) */
    bool from_environment;
    /** the environment's text ("" when not set) */
    char environment[FERRY_INFO_TEXT_MAX];
    /** the value in effect, as text: the environment's parsed as the type (sizes with their
     *  suffix expanded, bools as "yes" or "no"), or the default when the variable is unset or
     *  empty or does not parse (the library then warns, once) */
    char value[FERRY_INFO_TEXT_MAX];
    bool value_bool;     /**< the value in effect of a FERRY_CONFIG_BOOL (else false) */
    int64_t value_int;   /**< the value in effect of a FERRY_CONFIG_INT (else 0) */
    uint64_t value_size; /**< the value in effect of a FERRY_CONFIG_SIZE (else 0) */
    /** process-wide (logging, the bootstrap): only the environment sets it, never a context */
    bool process_wide;
    /** (ferry_context_config_lookup()) the context sets it: then value and value_* are the
     *  context's, whatever the environment says */
    bool from_context;
    /** the context's text ("" when it does not set it, or sets it empty: the default) */
    char context_value[FERRY_INFO_TEXT_MAX];
} ferry_config_info_t;

/**
 * @brief How many configuration variables are registered: libferry's, and those of the
 *        companion libraries loaded (libferry_bootstrap).
 * @return the count; indices 0 .. count-1 list the variables sorted by name. Loading a
 *         companion library later adds its variables (and moves indices).
 */
size_t ferry_config_count(void);

/**
 * @brief Configuration variable index: its declaration and the value in effect.
 *
 * Reads the environment (getenv): not safe against a concurrent setenv().
 *
 * @param index 0 .. ferry_config_count()-1
 * @param[in,out] info in: its size member; out: everything else
 * @retval FERRY_OK filled
 * @retval FERRY_ERR_INVALID_PARAM info is NULL or its size too small
 * @retval FERRY_ERR_OUT_OF_RANGE index >= ferry_config_count()
 */
ferry_status_t ferry_config_query(size_t index, ferry_config_info_t *info);

/**
 * @brief The configuration variable of a name: its declaration and the value in effect.
 * @param[in] name the exact name ("FERRY_LOG_LEVEL")
 * @param[in,out] info in: its size member; out: everything else
 * @retval FERRY_OK filled
 * @retval FERRY_ERR_INVALID_PARAM name or info is NULL, or info's size too small
 * @retval FERRY_ERR_NO_ELEM no registered variable has this name (ferry_config_closest()
 *                          suggests one)
 */
ferry_status_t ferry_config_lookup(const char *name, ferry_config_info_t *info);

/**
 * @brief The registered variable whose name is closest to a word (for "did you mean?").
 * @param[in] word a name, usually a FERRY_* variable of the environment that is not
 *                 registered
 * @param[out] closest_p the closest registered name (static), compared without regard to case
 * @retval FERRY_OK found one within a useful distance
 * @retval FERRY_ERR_INVALID_PARAM word or closest_p is NULL
 * @retval FERRY_ERR_NO_ELEM no registered name is close enough
 * @retval FERRY_ERR_NO_MEMORY out of memory (more than 64 variables need a list)
 */
ferry_status_t ferry_config_closest(const char *word, const char **closest_p);

/* ------------------------------------------------------------------ addresses */

/** @brief The header of a worker address (ferry_address_decode()). */
typedef struct ferry_address_info {
    size_t size;         /**< in: sizeof(ferry_address_info_t) */
    unsigned version;    /**< the address format's version */
    uint64_t worker_id;  /**< the worker's random 64-bit id */
    uint32_t pid;        /**< the worker's process id, in its pid namespace */
    uint8_t boot_id[16]; /**< its kernel's boot id (/proc/sys/kernel/random/boot_id) */
    uint64_t net_ns;     /**< the inode of its network namespace (/proc/self/ns/net) */
    uint64_t pid_ns;     /**< the inode of its pid namespace */
    uint64_t user_ns;    /**< the inode of its user namespace */
    size_t record_count; /**< its transport records: ferry_address_record_decode() reads each */
    /** the compact form (ferry_worker_address_compact()): records are rebuilt from its fields;
     *  it carries the boot id and a digest of the namespaces: the namespace inodes above are
     *  this host's when both match this host, else 0 */
    bool compact;
    uint32_t ns_digest; /**< compact form: the digest of the namespaces it carries */
} ferry_address_info_t;

/**
 * @brief Check and decode the header of a worker address (full or compact form).
 * @param[in] address the blob (from ferry_worker_address(), possibly of another process)
 * @param length its length in bytes
 * @param[in,out] info in: its size member; out: everything else
 * @retval FERRY_OK decoded (every record was checked to lie within the blob)
 * @retval FERRY_ERR_INVALID_PARAM info is NULL or its size too small
 * @retval FERRY_ERR_INVALID_ADDRESS NULL, truncated or corrupted address, wrong magic or
 *                                   version (the warning logged says what is wrong)
 */
ferry_status_t ferry_address_decode(const void *address, size_t length, ferry_address_info_t *info);

/** @brief A named fact of an address record, for programs ("port" = "45123"). */
typedef struct ferry_info_field {
    char key[FERRY_INFO_KEY_MAX];    /**< a lower-case word: "uid", "socket", "port", ... */
    char value[FERRY_INFO_TEXT_MAX]; /**< its value as text; numbers in decimal */
} ferry_info_field_t;

/** @brief One transport record of a worker address (ferry_address_record_decode()). */
typedef struct ferry_address_record_info {
    size_t size;            /**< in: sizeof(ferry_address_record_info_t) */
    unsigned transport_id;  /**< the record's transport id */
    size_t transport_index; /**< the transport of that id (ferry_transport_query()), or
                             *   FERRY_TRANSPORT_NONE when this library has none (a newer
                             *   peer?) */
    const char *transport;  /**< its name (static), or NULL with FERRY_TRANSPORT_NONE */
    size_t length;          /**< the record's length in bytes */
    /** FERRY_OK, or FERRY_ERR_INVALID_ADDRESS: the transport finds the record malformed (text
     *  says how), or FERRY_ERR_UNSUPPORTED: no transport of this library reads it */
    ferry_status_t status;
    /** what the record says, for people, one line ("uid 1000, socket @ferry-..."; "port
     *  45123: 192.0.2.2 127.0.0.1") */
    char text[FERRY_INFO_TEXT_MAX];
    size_t field_count; /**< how many of fields are filled */
    /** what the record says, for programs (shm: uid, socket; tcp: port, addresses) */
    ferry_info_field_t fields[FERRY_INFO_FIELDS_MAX];
    /** a worker was given and looks at this record when it creates an endpoint: the worker
     *  uses the record's transport and this is the first record of that id */
    bool considered;
    /** considered, and the record's transport reaches that worker from the given one */
    bool reachable;
    /** a worker was given and the record is not reachable: why (not considered: why not;
     *  else the transport's reason, e.g. another net namespace); otherwise "" */
    char why[FERRY_INFO_TEXT_MAX];
} ferry_address_record_info_t;

/**
 * @brief Decode one transport record of a worker address and, given a worker, say whether
 *        that worker reaches the address's worker through it, and why not.
 * @param[in] address the blob
 * @param length its length in bytes
 * @param index the record, 0 .. record_count-1 (ferry_address_decode())
 * @param worker a local worker to judge reachability from; may be NULL (then considered and
 *               reachable are false and why is "")
 * @param[in,out] info in: its size member; out: everything else
 * @retval FERRY_OK decoded (a malformed or unknown record too: see info->status)
 * @retval FERRY_ERR_INVALID_PARAM info is NULL or its size too small
 * @retval FERRY_ERR_INVALID_ADDRESS the address itself is invalid (as ferry_address_decode())
 * @retval FERRY_ERR_OUT_OF_RANGE index >= the address's record count
 */
ferry_status_t ferry_address_record_decode(const void *address, size_t length, size_t index,
                                           ferry_worker_t *worker,
                                           ferry_address_record_info_t *info);

/* ------------------------------------------------------------------ endpoint choice */

/** @brief Which transport ferry_ep_create() would use for an address, and why
 *         (ferry_ep_choose()). */
typedef struct ferry_ep_choice {
    size_t size; /**< in: sizeof(ferry_ep_choice_t) */
    /** FERRY_OK: ferry_ep_create() would connect through transport; FERRY_ERR_UNREACHABLE: no
     *  transport the worker uses reaches the peer (ferry_ep_create() returns that) */
    ferry_status_t status;
    size_t transport_index; /**< the transport, or FERRY_TRANSPORT_NONE */
    const char *transport;  /**< its name (static), or NULL */
    size_t record_index;    /**< the address record it would use, or FERRY_TRANSPORT_NONE */
    /** why, for people: the transports tried before it (or all of them) and why each does not
     *  reach the peer */
    char reason[FERRY_INFO_TEXT_MAX];
} ferry_ep_choice_t;

/**
 * @brief Which transport ferry_ep_create() would choose for an address, and why.
 *
 * The choice is made by the very code ferry_ep_create() runs (the first transport the worker
 * uses, in order of preference, whose record is in the address and reaches the peer). Nothing
 * is connected: a peer that has exited still shows as reachable.
 *
 * @param worker the local worker
 * @param[in] address the peer's address
 * @param length its length in bytes
 * @param[in,out] choice in: its size member; out: everything else
 * @retval FERRY_OK decided (reachable or not: see choice->status)
 * @retval FERRY_ERR_INVALID_PARAM worker or choice is NULL, or choice's size too small
 * @retval FERRY_ERR_INVALID_ADDRESS NULL, truncated or corrupted address (as
 *                                   ferry_address_decode())
 */
ferry_status_t ferry_ep_choose(ferry_worker_t *worker, const void *address, size_t length,
                               ferry_ep_choice_t *choice);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
