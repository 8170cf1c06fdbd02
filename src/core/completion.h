/* Completing a ferry_completion_t (the public completion counter) from progress. */
#ifndef FY_CORE_COMPLETION_H
#define FY_CORE_COMPLETION_H

#include <ferry/ferry.h>

/* Record the first error, decrement, run the callback when the count reaches 0. NULL is
 * ignored. Called from progress only (deferred calls, transports' polls). */
static inline void fy_completion_update(ferry_completion_t *comp, ferry_status_t status)
{
    if (comp == NULL)
        return;
    if (status < 0 && comp->status == FERRY_OK)
        comp->status = status;
    if (--comp->count == 0 && comp->cb != NULL)
        comp->cb(comp);
}

#endif
