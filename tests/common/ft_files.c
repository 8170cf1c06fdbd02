/* Directory snapshots of /dev/shm and /tmp, and a look at /proc/self/{maps,fd}. */
#define _GNU_SOURCE
#include "ft_files.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ft_check.h"

static int ft_files_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ft_files_list(const char *dir, char ***names_p, size_t *count_p)
{
    char **names = NULL;
    size_t count = 0, cap = 0;
    DIR *d = opendir(dir);
    *names_p = NULL;
    *count_p = 0;
    if (d == NULL) {
        ft_note("note: opendir(%s): %s (not checked)", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof(*names));
            FT_CHECK(names != NULL, "out of memory listing %s", dir);
        }
        names[count] = strdup(e->d_name);
        FT_CHECK(names[count] != NULL, "out of memory listing %s", dir);
        count++;
    }
    closedir(d);
    if (count > 0)
        qsort(names, count, sizeof(*names), ft_files_cmp);
    *names_p = names;
    *count_p = count;
}

/* Directories replaced by a fresh tmpfs in this process's own mount namespace: everything
 * that appears there comes from this test's processes. */
static bool ft_files_private_shm, ft_files_private_tmp;

/* Does this process map a file under dir (its executable or libraries, e.g. a build tree in
 * /tmp)? Such a directory is not hidden: sanitizer reports read those files. */
static bool ft_files_maps_under(const char *dir)
{
    char line[PATH_MAX + 256];
    bool found = false;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL)
        return true;
    while (!found && fgets(line, sizeof(line), maps) != NULL) {
        char *path = strchr(line, '/');
        found = path != NULL && strncmp(path, dir, strlen(dir)) == 0;
    }
    fclose(maps);
    return found;
}

/* Once per process, before any peer is forked: a private mount namespace with a fresh tmpfs on
 * /dev/shm and /tmp, so that other programs' files (tests in parallel, benchmarks) cannot be
 * mistaken for this test's, and this test's cannot hide among theirs. Needs CAP_SYS_ADMIN;
 * without it the shared directories are checked by name. */
static void ft_files_isolate(void)
{
    static bool tried;
    if (tried)
        return;
    tried = true;
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return;
    if (!ft_files_maps_under("/dev/shm/") &&
        mount("ft-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0)
        ft_files_private_shm = true;
    if (!ft_files_maps_under("/tmp/") &&
        mount("ft-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0)
        ft_files_private_tmp = true;
}

void ft_files_snapshot(ft_files_t *snapshot)
{
    ft_files_isolate();
    ft_files_list("/dev/shm", &snapshot->shm, &snapshot->shm_count);
    ft_files_list("/tmp", &snapshot->tmp, &snapshot->tmp_count);
}

static void ft_files_free_list(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

void ft_files_free(ft_files_t *snapshot)
{
    ft_files_free_list(snapshot->shm, snapshot->shm_count);
    ft_files_free_list(snapshot->tmp, snapshot->tmp_count);
    snapshot->shm = snapshot->tmp = NULL;
    snapshot->shm_count = snapshot->tmp_count = 0;
}

static int ft_files_ferry_like(const char *name)
{
    return strcasestr(name, "ferry") != NULL || strcasestr(name, "frry") != NULL;
}

/* New entries of dir (now vs before): in a private directory all of them, else ferry-like
 * ones, are counted and printed as failures; others are printed as notes. Returns the count. */
static unsigned ft_files_diff(const char *dir, bool private_dir, char **before, size_t before_count,
                              char **now, size_t now_count)
{
    unsigned bad = 0;
    for (size_t i = 0; i < now_count; i++) {
        if (before_count > 0 &&
            bsearch(&now[i], before, before_count, sizeof(*before), ft_files_cmp) != NULL)
            continue;
        if (private_dir || ft_files_ferry_like(now[i])) {
            ft_note("left behind: %s/%s", dir, now[i]);
            bad++;
        } else if (strcmp(dir, "/dev/shm") == 0) {
            /* (new files in /tmp are too common to mention: compilers, other tests) */
            ft_note("note: %s/%s appeared during the test (not ferry's by its name; another "
                    "program's?)",
                    dir, now[i]);
        }
    }
    return bad;
}

void ft_files_check_new(const ft_files_t *before)
{
    ft_files_t now;
    ft_files_snapshot(&now);
    unsigned bad = ft_files_diff("/dev/shm", ft_files_private_shm, before->shm, before->shm_count,
                                 now.shm, now.shm_count) +
                   ft_files_diff("/tmp", ft_files_private_tmp, before->tmp, before->tmp_count,
                                 now.tmp, now.tmp_count);
    ft_files_free(&now);
    FT_CHECK(bad == 0, "%u file(s) left in /dev/shm or /tmp (listed above; /dev/shm: %s; /tmp: %s)",
             bad,
             ft_files_private_shm ? "a private tmpfs, only this test's processes wrote there"
                                  : "shared, files named like ferry's",
             ft_files_private_tmp ? "a private tmpfs, only this test's processes wrote there"
                                  : "shared (this test runs from it), files named like ferry's");
}

static int ft_files_bad_path(const char *path)
{
    return strncmp(path, "/dev/shm/", 9) == 0 || strncmp(path, "/tmp/", 5) == 0;
}

/* Descriptors open when the program started (inherited from ctest or a shell: their
 * business, not ferry's; a build tree under /tmp is fine too). */
#define FT_FILES_FD_BITS 4096
static unsigned char ft_files_startup_fds[FT_FILES_FD_BITS / 8];

__attribute__((constructor)) static void ft_files_record_startup_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return;
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != self && fd >= 0 && fd < FT_FILES_FD_BITS)
            ft_files_startup_fds[fd / 8] |= (unsigned char)(1u << (fd % 8));
    }
    closedir(d);
}

static int ft_files_startup_fd(int fd)
{
    return fd >= 0 && fd < FT_FILES_FD_BITS && (ft_files_startup_fds[fd / 8] & (1u << (fd % 8)));
}

void ft_files_check_self(void)
{
    char line[PATH_MAX + 256];
    unsigned bad = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    FT_CHECK(maps != NULL, "fopen(/proc/self/maps): %s", strerror(errno));
    while (fgets(line, sizeof(line), maps) != NULL) {
        /* "start-end perms offset dev inode path": shared mappings of files in /dev/shm or
         * /tmp (ferry's own are "/memfd:ferry-... (deleted)") */
        char perms[8] = "";
        char *path = strchr(line, '/');
        if (sscanf(line, "%*s %7s", perms) != 1 || perms[3] != 's' || path == NULL)
            continue;
        if (ft_files_bad_path(path)) {
            ft_note("maps a file shared: %s", line);
            bad++;
        }
    }
    fclose(maps);
    DIR *d = opendir("/proc/self/fd");
    FT_CHECK(d != NULL, "opendir(/proc/self/fd): %s", strerror(errno));
    int self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char link[320], target[PATH_MAX];
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == self || ft_files_startup_fd(fd))
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (ft_files_bad_path(target)) {
            ft_note("holds open fd %s -> %s", e->d_name, target);
            bad++;
        }
    }
    closedir(d);
    FT_CHECK(bad == 0, "this process maps or holds %u file(s) in /dev/shm or /tmp", bad);
}
