/* An intrusive, circular, doubly-linked list shared by every layer.
 *
 *   fy_list_t queue;                 fy_list_init(&queue);
 *   struct item { fy_list_link_t link; ... };
 *   fy_list_push_tail(&queue, &item->link);
 *
 * Walking a list is a plain `for` (no macro):
 *
 *   for (fy_list_link_t *l = fy_list_first(&queue), *next; l != fy_list_end(&queue);
 *        l = next) {
 *       next = l->next;                  // saved first: the body may remove (and free) l
 *       struct item *it = fy_list_entry(l, struct item, link);
 *   }
 *
 * or fy_list_foreach(&queue, cb, arg) with a callback that may remove its link.
 * A link is "not linked" after fy_list_link_init() or fy_list_remove(); a zeroed link is
 * neither linked nor safe to remove. Nothing here locks: the owner of the list serialises.
 */
#ifndef FERRY_CORE_LIST_H
#define FERRY_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "core/compiler.h"

typedef struct fy_list_link {
    struct fy_list_link *next;
    struct fy_list_link *prev;
} fy_list_link_t;

/* The head is a link too: an empty list points to itself. */
typedef fy_list_link_t fy_list_t;

#define fy_list_entry(link_ptr, type, member) fy_container_of(link_ptr, type, member)

static inline void fy_list_init(fy_list_t *list)
{
    list->next = list;
    list->prev = list;
}

static inline bool fy_list_is_empty(const fy_list_t *list)
{
    return list->next == list;
}

static inline fy_list_link_t *fy_list_first(fy_list_t *list)
{
    return list->next;
}

static inline fy_list_link_t *fy_list_end(fy_list_t *list)
{
    return list;
}

static inline void fy_list_insert_between(fy_list_link_t *link, fy_list_link_t *prev,
                                          fy_list_link_t *next)
{
    link->prev = prev;
    link->next = next;
    prev->next = link;
    next->prev = link;
}

static inline void fy_list_push_tail(fy_list_t *list, fy_list_link_t *link)
{
    fy_list_insert_between(link, list->prev, list);
}

static inline void fy_list_push_head(fy_list_t *list, fy_list_link_t *link)
{
    fy_list_insert_between(link, list, list->next);
}

/* Unlink; the link is left pointing to itself so that a second remove is harmless. */
static inline void fy_list_remove(fy_list_link_t *link)
{
    link->prev->next = link->next;
    link->next->prev = link->prev;
    link->next = link;
    link->prev = link;
}

/* Remove and return the first link, or NULL when empty. */
static inline fy_list_link_t *fy_list_pop_head(fy_list_t *list)
{
    fy_list_link_t *first = list->next;
    if (first == list)
        return NULL;
    fy_list_remove(first);
    return first;
}

/* A link that was initialised (fy_list_init / fy_list_link_init) or removed is not on
 * any list. */
static inline bool fy_list_is_linked(const fy_list_link_t *link)
{
    return link->next != link;
}

/* Mark a link as not on any list (same as fy_list_init: the head is a link too). */
static inline void fy_list_link_init(fy_list_link_t *link)
{
    fy_list_init(link);
}

/* The first link without removing it, or NULL when empty. */
static inline fy_list_link_t *fy_list_peek_head(fy_list_t *list)
{
    return list->next != list ? list->next : NULL;
}

/* Number of links: O(n), for tests and diagnostics. */
static inline size_t fy_list_length(const fy_list_t *list)
{
    size_t n = 0;
    for (const fy_list_link_t *l = list->next; l != list; l = l->next)
        ++n;
    return n;
}

/* Move every link of src to the tail of dst, in order; src is left empty. */
static inline void fy_list_splice_tail(fy_list_t *dst, fy_list_t *src)
{
    if (fy_list_is_empty(src))
        return;
    fy_list_link_t *first = src->next;
    fy_list_link_t *last = src->prev;
    first->prev = dst->prev;
    dst->prev->next = first;
    last->next = dst;
    dst->prev = last;
    fy_list_init(src);
}

/* Called by fy_list_foreach for each link in order; it may remove (and free) that link, but
 * no other. Return true to stop the walk. */
typedef bool (*fy_list_foreach_cb_t)(fy_list_link_t *link, void *arg);

/* Call cb on each link from head to tail. Returns the link at which cb returned true (it may
 * have been removed by then), or NULL after a full walk. */
static inline fy_list_link_t *fy_list_foreach(fy_list_t *list, fy_list_foreach_cb_t cb, void *arg)
{
    for (fy_list_link_t *l = list->next, *next; l != list; l = next) {
        next = l->next;
        if (cb(l, arg))
            return l;
    }
    return NULL;
}

#endif
