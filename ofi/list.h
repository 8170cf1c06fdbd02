/*
 * libferry-fi — an intrusive doubly-linked list (the provider cannot use ferry's internal
 * src/core/list.h: it is written on the public API only).
 */
#ifndef FERRY_OFI_LIST_H
#define FERRY_OFI_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fy_ofi_list {
    struct fy_ofi_list *next;
    struct fy_ofi_list *prev;
} fy_ofi_list_t;

#define FY_OFI_CONTAINER(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void fy_ofi_list_init(fy_ofi_list_t *head)
{
    head->next = head;
    head->prev = head;
}

static inline bool fy_ofi_list_empty(const fy_ofi_list_t *head)
{
    return head->next == head;
}

static inline void fy_ofi_list_push_tail(fy_ofi_list_t *head, fy_ofi_list_t *item)
{
    item->prev = head->prev;
    item->next = head;
    head->prev->next = item;
    head->prev = item;
}

static inline void fy_ofi_list_remove(fy_ofi_list_t *item)
{
    item->prev->next = item->next;
    item->next->prev = item->prev;
    item->next = item;
    item->prev = item;
}

/** The first item, taken out of the list; NULL when empty. */
static inline fy_ofi_list_t *fy_ofi_list_pop_head(fy_ofi_list_t *head)
{
    fy_ofi_list_t *item = head->next;
    if (item == head)
        return NULL;
    fy_ofi_list_remove(item);
    return item;
}

#endif
