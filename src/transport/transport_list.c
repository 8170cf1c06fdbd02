/* The one explicit list of transports, in order of preference. Adding a transport means
 * adding its folder and one line here. */
#include "transport/transport.h"

#include "core/compiler.h"

extern const fy_tl_ops_t fy_tl_self_ops;
extern const fy_tl_ops_t fy_tl_shm_ops;
extern const fy_tl_ops_t fy_tl_tcp_ops;

const fy_tl_ops_t *const fy_transports[] = {
    &fy_tl_self_ops,
    &fy_tl_shm_ops,
    &fy_tl_tcp_ops,
};

const size_t fy_transports_count = FERRY_ARRAY_SIZE(fy_transports);
