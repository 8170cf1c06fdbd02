/* Secrets from getrandom(2), drawn from a per-context pool. */
#define _GNU_SOURCE
#include "core/secret.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "core/log.h"

static ferry_status_t secret_refill(fy_secret_pool_t *pool)
{
    size_t filled = 0;
    while (filled < sizeof(pool->values)) {
        ssize_t n = getrandom((char *)pool->values + filled, sizeof(pool->values) - filled, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fy_error("getrandom(%zu bytes) for the secrets of registrations failed: %s (the "
                     "kernel's random generator must be available, Linux >= 3.17)",
                     sizeof(pool->values) - filled, n < 0 ? strerror(errno) : "no bytes");
            return FERRY_ERR_IO;
        }
        filled += (size_t)n;
    }
    pool->left = FY_SECRET_POOL;
    return FERRY_OK;
}

ferry_status_t fy_secret_draw(fy_secret_pool_t *pool, uint64_t *secret_p)
{
    uint64_t value;
    do {
        if (pool->left == 0) {
            ferry_status_t status = secret_refill(pool);
            if (status != FERRY_OK)
                return status;
        }
        value = pool->values[--pool->left];
        pool->values[pool->left] = 0;
    } while (value == 0); /* 0 marks "no secret": never hand it out */
    *secret_p = value;
    return FERRY_OK;
}

void fy_secret_pool_clear(fy_secret_pool_t *pool)
{
    explicit_bzero(pool->values, sizeof(pool->values));
    pool->left = 0;
}
