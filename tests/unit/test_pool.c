/* The pool of src/core/pool.h: objects are aligned and distinct, freed ones are reused before
 * new blocks are allocated, and destruction visits exactly the objects still in use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/pool.h"

typedef struct thing {
    uint64_t id;
    char bytes[40];
} thing_t;

#define THINGS 100

static void test_get_put_reuse(void **state)
{
    (void)state;
    fy_pool_t pool;
    thing_t *things[THINGS];

    fy_pool_init(&pool, sizeof(thing_t), 8, "test things");
    for (unsigned i = 0; i < THINGS; i++) {
        things[i] = fy_pool_get(&pool);
        assert_non_null(things[i]);
        assert_int_equal((uintptr_t)things[i] % _Alignof(max_align_t), 0);
        assert_true(fy_pool_in_use(things[i]));
        memset(things[i], (int)i, sizeof(thing_t)); /* the whole object is the caller's */
        things[i]->id = i;
    }
    for (unsigned i = 0; i < THINGS; i++) {
        for (unsigned j = i + 1; j < THINGS; j++)
            assert_ptr_not_equal(things[i], things[j]);
        assert_int_equal(things[i]->id, i); /* no object overlaps another */
    }
    /* the last one given back is the first one handed out again (still in cache) */
    fy_pool_put(&pool, things[17]);
    assert_false(fy_pool_in_use(things[17]));
    fy_pool_put(&pool, things[42]);
    assert_ptr_equal(fy_pool_get(&pool), things[42]);
    assert_ptr_equal(fy_pool_get(&pool), things[17]);
    fy_pool_destroy(&pool, NULL, NULL);
}

static void count_release(void *arg, void *object)
{
    uint64_t *sum = arg;
    *sum += ((thing_t *)object)->id;
    ((thing_t *)object)->id = 0;
}

static void test_destroy_visits_in_use(void **state)
{
    (void)state;
    fy_pool_t pool;
    thing_t *things[THINGS];
    uint64_t expected = 0, sum = 0;

    fy_pool_init(&pool, sizeof(thing_t), 7, "test things");
    for (unsigned i = 0; i < THINGS; i++) {
        things[i] = fy_pool_get(&pool);
        things[i]->id = i + 1;
    }
    for (unsigned i = 0; i < THINGS; i++) {
        if (i % 3 == 0)
            fy_pool_put(&pool, things[i]);
        else
            expected += i + 1;
    }
    fy_pool_destroy(&pool, count_release, &sum);
    assert_int_equal(sum, expected);
    /* the pool may be used again */
    thing_t *again = fy_pool_get(&pool);
    assert_non_null(again);
    fy_pool_destroy(&pool, NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_put_reuse),
        cmocka_unit_test(test_destroy_visits_in_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
