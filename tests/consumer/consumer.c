/* A program outside the ferry tree: create a context and a worker, print the worker's
 * address length and the library version, clean up. Exit 0 on success. */
#include <stdio.h>

#include <ferry/ferry.h>

int main(void)
{
    ferry_context_t *context;
    ferry_worker_t *worker;
    const void *address;
    size_t length;
    ferry_status_t status;

    status = ferry_context_create(NULL, &context);
    if (status != FERRY_OK) {
        fprintf(stderr, "consumer: ferry_context_create: %s\n", ferry_status_string(status));
        return 1;
    }

    status = ferry_worker_create(context, NULL, &worker);
    if (status != FERRY_OK) {
        fprintf(stderr, "consumer: ferry_worker_create: %s\n", ferry_status_string(status));
        goto err_destroy_context;
    }

    status = ferry_worker_address(worker, &address, &length);
    if (status != FERRY_OK) {
        fprintf(stderr, "consumer: ferry_worker_address: %s\n", ferry_status_string(status));
        goto err_destroy_worker;
    }

    printf("consumer: ferry %s, worker address %zu bytes\n", ferry_version_string(), length);

    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
    return 0;

err_destroy_worker:
    ferry_worker_destroy(worker);
err_destroy_context:
    ferry_context_destroy(context);
    return 1;
}
