/* Hand-made shm connections for the INTERNAL tests that play a hostile or broken peer
 * (mp_other_uid, mp_shm_handshake): connect to a worker's listening socket and send a handshake
 * with descriptors, as shm_conn.c does, without its checks. */
#ifndef FERRY_TESTS_MP_SHM_RAW_H
#define FERRY_TESTS_MP_SHM_RAW_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ft.h"
#include "transport/shm/shm.h"

/* Connect to the listener of the shm record (flags: SOCK_NONBLOCK or 0). Returns the socket,
 * or -1 with errno set when connect(2) failed (the socket is closed then). */
static inline int mp_shm_raw_connect(const shm_record_t *record, int flags)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t name_length = strnlen(record->name, sizeof(record->name));
    memcpy(sa.sun_path + 1, record->name, name_length);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);
    FT_CHECK(fd >= 0, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + name_length)) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* n memfds of a region's size (flags: memfd_create's besides MFD_CLOEXEC), into fds. */
static inline void mp_shm_raw_memfds(int *fds, unsigned n, const char *name, unsigned flags)
{
    for (unsigned i = 0; i < n; i++) {
        fds[i] = memfd_create(name, MFD_CLOEXEC | flags);
        FT_CHECK(fds[i] >= 0 && ftruncate(fds[i], SHM_REGION_SIZE) == 0, "memfd: %s",
                 strerror(errno));
    }
}

/* A HELLO that is well-formed for this layout version (a 256-cell ring, worker id 1, sender id
 * 1, no flags): what a test changes one field of, or sends as it is. */
static inline shm_handshake_t mp_shm_raw_hello(void)
{
    return (shm_handshake_t){.magic = SHM_HANDSHAKE_MAGIC,
                             .version = SHM_LAYOUT_VERSION,
                             .type = SHM_HANDSHAKE_HELLO,
                             .pid = (uint32_t)getpid(),
                             .ring_cells = 256,
                             .worker_uuid = 1,
                             .sender_id = 1};
}

/* Send msg with the nfds (at most SHM_HANDSHAKE_FDS) descriptors fds. Returns sendmsg's
 * result (errno set when it failed). */
static inline ssize_t mp_shm_raw_send_handshake(int fd, const shm_handshake_t *msg, const int *fds,
                                                unsigned nfds)
{
    union {
        char buf[CMSG_SPACE(SHM_HANDSHAKE_FDS * sizeof(int))];
        struct cmsghdr align;
    } control;
    FT_CHECK(nfds > 0 && nfds <= SHM_HANDSHAKE_FDS, "%u descriptors", nfds);
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = sizeof(*msg)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = control.buf,
                        .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&mh);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
    return sendmsg(fd, &mh, MSG_NOSIGNAL);
}

#endif
