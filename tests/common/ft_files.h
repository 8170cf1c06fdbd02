/* Nothing left behind: ferry's shared memory is memfd (anonymous) and its sockets live in the
 * abstract namespace, so no ferry process, dead or alive, may leave a file in /dev/shm or
 * /tmp, nor map or hold one open.
 *
 * ft_files_snapshot() lists /dev/shm and /tmp; ft_files_check_new() fails on an entry that
 * appeared since. Call ft_files_snapshot() first thing in main, before forking peers: when it
 * can (root), it moves the process into a mount namespace of its own with a fresh tmpfs on
 * /dev/shm and /tmp (a directory the test maps files from, e.g. a build tree in /tmp, is left
 * alone), so every new entry there is this test's; in the shared directories (other programs
 * and parallel tests write there too) only entries named like ferry's ("ferry") count.
 * ft_files_check_self() looks at this process's own mappings and descriptors, whatever their
 * names: call it in each ferry process while its endpoints are connected. */
#ifndef FT_FILES_H
#define FT_FILES_H

#include <stddef.h>

typedef struct ft_files {
    char **shm;
    size_t shm_count;
    char **tmp;
    size_t tmp_count;
} ft_files_t;

void ft_files_snapshot(ft_files_t *snapshot);
void ft_files_check_new(const ft_files_t *before);
void ft_files_free(ft_files_t *snapshot);

/* Fail if this process maps a file under /dev/shm or /tmp shared, or holds one open (on a
 * descriptor it did not inherit at start-up). */
void ft_files_check_self(void);

#endif
