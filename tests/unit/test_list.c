/* The intrusive list of src/core/list.h: order, removal anywhere, walking while removing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/list.h"

typedef struct item {
    int value;
    fy_list_link_t link;
} item_t;

static int item_value(fy_list_link_t *link)
{
    return fy_list_entry(link, item_t, link)->value;
}

/* Check that list holds exactly values[0..count) from head to tail, following next and prev. */
static void check_list(fy_list_t *list, const int *values, size_t count)
{
    size_t i = 0;
    for (fy_list_link_t *l = fy_list_first(list), *next; l != fy_list_end(list); l = next) {
        next = l->next;
        assert_true(i < count);
        assert_int_equal(item_value(l), values[i]);
        assert_ptr_equal(l->next->prev, l);
        ++i;
    }
    assert_int_equal(i, count);
    assert_int_equal(fy_list_length(list), count);
    assert_int_equal(fy_list_is_empty(list), count == 0);

    i = count;
    for (fy_list_link_t *l = list->prev; l != list; l = l->prev) {
        assert_true(i > 0);
        assert_int_equal(item_value(l), values[--i]);
    }
    assert_int_equal(i, 0);
}

static void init_items(item_t *items, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        items[i].value = (int)i;
        fy_list_link_init(&items[i].link);
    }
}

/* list holds items[0..count), values 0..count-1, pushed at its tail in that order. */
static void fill_list(fy_list_t *list, item_t *items, size_t count)
{
    fy_list_init(list);
    init_items(items, count);
    for (size_t i = 0; i < count; ++i)
        fy_list_push_tail(list, &items[i].link);
}

static void test_empty(void **state)
{
    (void)state;
    fy_list_t list;
    fy_list_init(&list);
    assert_true(fy_list_is_empty(&list));
    assert_null(fy_list_pop_head(&list));
    assert_null(fy_list_peek_head(&list));
    assert_ptr_equal(fy_list_first(&list), fy_list_end(&list));
    check_list(&list, NULL, 0);
}

static void test_push_tail_is_fifo(void **state)
{
    (void)state;
    item_t items[5];
    fy_list_t list;
    fill_list(&list, items, 5);
    check_list(&list, (const int[]){0, 1, 2, 3, 4}, 5);
    assert_ptr_equal(fy_list_peek_head(&list), &items[0].link);

    for (int i = 0; i < 5; ++i) {
        fy_list_link_t *l = fy_list_pop_head(&list);
        assert_non_null(l);
        assert_int_equal(item_value(l), i);
        assert_false(fy_list_is_linked(l));
    }
    assert_null(fy_list_pop_head(&list));
    assert_true(fy_list_is_empty(&list));
}

static void test_push_head_is_lifo(void **state)
{
    (void)state;
    item_t items[4];
    fy_list_t list;
    fy_list_init(&list);
    init_items(items, 4);
    for (int i = 0; i < 4; ++i)
        fy_list_push_head(&list, &items[i].link);
    check_list(&list, (const int[]){3, 2, 1, 0}, 4);

    /* Mixed: head and tail. */
    fy_list_t mixed;
    fy_list_init(&mixed);
    init_items(items, 4);
    fy_list_push_tail(&mixed, &items[1].link);
    fy_list_push_head(&mixed, &items[0].link);
    fy_list_push_tail(&mixed, &items[2].link);
    fy_list_push_head(&mixed, &items[3].link);
    check_list(&mixed, (const int[]){3, 0, 1, 2}, 4);
}

static void test_remove_anywhere(void **state)
{
    (void)state;
    item_t items[5];
    fy_list_t list;
    fill_list(&list, items, 5);
    assert_true(fy_list_is_linked(&items[2].link));

    fy_list_remove(&items[2].link); /* middle */
    assert_false(fy_list_is_linked(&items[2].link));
    check_list(&list, (const int[]){0, 1, 3, 4}, 4);
    fy_list_remove(&items[0].link); /* head */
    check_list(&list, (const int[]){1, 3, 4}, 3);
    fy_list_remove(&items[4].link); /* tail */
    check_list(&list, (const int[]){1, 3}, 2);

    fy_list_remove(&items[4].link); /* a second remove is harmless */
    check_list(&list, (const int[]){1, 3}, 2);

    /* A removed link can be pushed again. */
    fy_list_push_tail(&list, &items[2].link);
    check_list(&list, (const int[]){1, 3, 2}, 3);

    fy_list_remove(&items[1].link);
    fy_list_remove(&items[3].link);
    fy_list_remove(&items[2].link);
    check_list(&list, NULL, 0);
}

static void test_walk_and_remove(void **state)
{
    (void)state;
    item_t items[10];
    fy_list_t list;
    fill_list(&list, items, 10);

    /* The documented idiom: remove the odd values while walking. */
    for (fy_list_link_t *l = fy_list_first(&list), *next; l != fy_list_end(&list); l = next) {
        next = l->next;
        if (item_value(l) % 2 != 0)
            fy_list_remove(l);
    }
    check_list(&list, (const int[]){0, 2, 4, 6, 8}, 5);
}

static bool remove_multiples_of_4(fy_list_link_t *link, void *arg)
{
    int *visited = arg;
    ++*visited;
    if (item_value(link) % 4 == 0)
        fy_list_remove(link);
    return false;
}

static bool stop_at_6(fy_list_link_t *link, void *arg)
{
    (void)arg;
    return item_value(link) == 6;
}

static void test_foreach(void **state)
{
    (void)state;
    item_t items[10];
    fy_list_t list;
    fill_list(&list, items, 10);

    int visited = 0;
    assert_null(fy_list_foreach(&list, remove_multiples_of_4, &visited));
    assert_int_equal(visited, 10);
    check_list(&list, (const int[]){1, 2, 3, 5, 6, 7, 9}, 7);

    assert_ptr_equal(fy_list_foreach(&list, stop_at_6, NULL), &items[6].link);
    fy_list_remove(&items[6].link);
    assert_null(fy_list_foreach(&list, stop_at_6, NULL));

    fy_list_t empty;
    fy_list_init(&empty);
    visited = 0;
    assert_null(fy_list_foreach(&empty, remove_multiples_of_4, &visited));
    assert_int_equal(visited, 0);
}

static void test_splice(void **state)
{
    (void)state;
    item_t items[6];
    fy_list_t a, b;
    fy_list_init(&a);
    fy_list_init(&b);
    init_items(items, 6);

    fy_list_splice_tail(&a, &b); /* empty into empty */
    check_list(&a, NULL, 0);
    check_list(&b, NULL, 0);

    for (int i = 0; i < 3; ++i)
        fy_list_push_tail(&b, &items[i].link);
    fy_list_splice_tail(&a, &b); /* into empty */
    check_list(&a, (const int[]){0, 1, 2}, 3);
    check_list(&b, NULL, 0);

    for (int i = 3; i < 6; ++i)
        fy_list_push_tail(&b, &items[i].link);
    fy_list_splice_tail(&a, &b); /* into non-empty */
    check_list(&a, (const int[]){0, 1, 2, 3, 4, 5}, 6);
    check_list(&b, NULL, 0);

    fy_list_splice_tail(&a, &b); /* empty into non-empty */
    check_list(&a, (const int[]){0, 1, 2, 3, 4, 5}, 6);
}

static void test_entry(void **state)
{
    (void)state;
    item_t item = {.value = 42};
    fy_list_link_init(&item.link);
    assert_false(fy_list_is_linked(&item.link));
    assert_ptr_equal(fy_list_entry(&item.link, item_t, link), &item);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_push_tail_is_fifo),
        cmocka_unit_test(test_push_head_is_lifo),
        cmocka_unit_test(test_remove_anywhere),
        cmocka_unit_test(test_walk_and_remove),
        cmocka_unit_test(test_foreach),
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
