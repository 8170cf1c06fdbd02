/* The one list of protocol modules (progress/module.h), in the order their slots are called:
 * a module after the ones it uses. Its index is its id (module_list.h). Active messages need
 * no module: their handler table is the worker's own (progress/am_table.c). */
#include "progress/module.h"

#include "proto/module_list.h"

extern const fy_module_ops_t fy_rma_module;
extern const fy_module_ops_t fy_tag_module;
extern const fy_module_ops_t fy_segment_module;

const fy_module_ops_t *const fy_modules[] = {
    [FY_MODULE_RMA] = &fy_rma_module,
    [FY_MODULE_TAG] = &fy_tag_module,
    [FY_MODULE_SEGMENT] = &fy_segment_module,
};
const size_t fy_modules_count = sizeof(fy_modules) / sizeof(fy_modules[0]);

_Static_assert(sizeof(fy_modules) / sizeof(fy_modules[0]) == FY_MODULE_COUNT,
               "every module id has an entry");
_Static_assert(FY_MODULE_COUNT <= FY_MODULE_MAX, "FY_MODULE_MAX is too small");
