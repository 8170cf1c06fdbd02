/*
 * libferry-fi — ferry statuses as libfabric errors (one table).
 */
#include "ofi.h"

int fy_ofi_errno(ferry_status_t status)
{
    switch (status) {
    case FERRY_OK:
    case FERRY_INPROGRESS:
        return 0;
    case FERRY_ERR_NO_RESOURCE:
        return -FI_EAGAIN;
    case FERRY_ERR_INVALID_PARAM:
        return -FI_EINVAL;
    case FERRY_ERR_NO_MEMORY:
        return -FI_ENOMEM;
    case FERRY_ERR_UNSUPPORTED:
        return -FI_EOPNOTSUPP;
    case FERRY_ERR_MESSAGE_TRUNCATED:
        return -FI_ETRUNC;
    case FERRY_ERR_CANCELED:
        return -FI_ECANCELED;
    case FERRY_ERR_ACCESS:
        return -FI_EACCES;
    case FERRY_ERR_TIMED_OUT:
    case FERRY_ERR_ENDPOINT_TIMEOUT:
        return -FI_ETIMEDOUT;
    case FERRY_ERR_BUSY:
        return -FI_EBUSY;
    case FERRY_ERR_NO_ELEM:
        return -FI_ENOENT;
    case FERRY_ERR_OUT_OF_RANGE:
        return -FI_EOVERFLOW;
    case FERRY_ERR_UNREACHABLE:
        return -FI_EHOSTUNREACH;
    case FERRY_ERR_CONNECTION_REFUSED:
        return -FI_ECONNREFUSED;
    case FERRY_ERR_CONNECTION_RESET:
    case FERRY_ERR_ENDPOINT_CLOSED:
        return -FI_ECONNRESET;
    case FERRY_ERR_PROTOCOL:
        return -FI_EREMOTEIO;
    case FERRY_ERR_INVALID_ADDRESS:
        return -FI_EADDRNOTAVAIL;
    case FERRY_ERR_LIMIT:
        return -FI_ENOSPC;
    default:
        return -FI_EIO;
    }
}
