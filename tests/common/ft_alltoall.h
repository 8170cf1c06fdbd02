/* The bootstrap's job for the tests (mp_bootstrap_tcp, mpirun_pmix): every rank allgathers
 * its worker address, creates an endpoint to every other rank, sends each one active message
 * per size (0 B, 1 B, 100 B, 5000 B, 200 KiB) whose bytes are ft_pattern(sender, receiver,
 * size), checks every byte it receives, meets the others in a barrier, and closes. Only
 * processes linked with libferry_bootstrap call it. */
#ifndef FT_ALLTOALL_H
#define FT_ALLTOALL_H

#include <ferry/bootstrap.h>

/* Run the job on bs (from ferry_bootstrap_init); fails the test on any error. */
void ft_bootstrap_alltoall(ferry_bootstrap_t *bs);

#endif
