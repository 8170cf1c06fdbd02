/* A program outside the ferry tree: create a context and a worker, print the worker's
 * address length, the library version and which transport an endpoint to that address would
 * use (the installed ferry/info.h), clean up. Exit 0 on success. */
#include <stdio.h>

#include <ferry/ferry.h>
#include <ferry/info.h>

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

    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    status = ferry_ep_choose(worker, address, length, &choice);
    if (status != FERRY_OK || choice.status != FERRY_OK) {
        fprintf(stderr, "consumer: ferry_ep_choose: %s (%s)\n", ferry_status_string(status),
                choice.reason);
        goto err_destroy_worker;
    }

    printf("consumer: ferry %s, worker address %zu bytes, %zu transports, to itself over %s\n",
           ferry_version_string(), length, ferry_transport_count(), choice.transport);

    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
    return 0;

err_destroy_worker:
    ferry_worker_destroy(worker);
err_destroy_context:
    ferry_context_destroy(context);
    return 1;
}
