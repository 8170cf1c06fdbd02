/* Module ids: each protocol's index in fy_modules[] (module_list.c). */
#ifndef FY_PROTO_MODULE_LIST_H
#define FY_PROTO_MODULE_LIST_H

enum fy_module_id {
    FY_MODULE_RMA,     /* one-sided operations (rma.c, rma_am.c) */
    FY_MODULE_TAG,     /* tagged messages (tag.c, tag_rndv.c): uses RMA */
    FY_MODULE_SEGMENT, /* named segments (segment*.c, rsegment.c): uses RMA */
    FY_MODULE_COUNT
};

#endif
