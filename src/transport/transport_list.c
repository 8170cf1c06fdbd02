/* The one explicit list of transports, in order of preference. Adding a transport means
 * adding its folder and one line here. */
#include "transport/transport.h"

#include "core/compiler.h"

extern const ferry_tl_ops_t ferry_tl_self_ops;
extern const ferry_tl_ops_t ferry_tl_shm_ops;
extern const ferry_tl_ops_t ferry_tl_tcp_ops;

const ferry_tl_ops_t *const ferry_transports[] = {
    &ferry_tl_self_ops,
    &ferry_tl_shm_ops,
    &ferry_tl_tcp_ops,
};

const size_t ferry_transports_count = FERRY_ARRAY_SIZE(ferry_transports);
