/* SPDX-License-Identifier: MIT */
/* Binding AF_UNIX listening sockets; see socket-util.h. */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "socket-util.h"
#include "util.h"

static int socket_is_live(const struct sockaddr_un *sa) {
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) == 0)
                return 1;
        return errno == ECONNREFUSED || errno == ENOENT ? 0 : -errno;
}

int socket_unix_is_live(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        return socket_is_live(&sa);
}

static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = 0;
        for (char *p = dir + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(dir, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int socket_listen_unix(const char *path, mode_t mode, mode_t dir_mode, bool *ret_replaced, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        bool replaced = false;
        mode_t old_umask;
        int k;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        k = mkdir_parents(path, dir_mode);
        if (k < 0)
                return k;
        k = socket_is_live(&sa);
        if (k > 0)
                return -EADDRINUSE;
        if (k == 0 && unlink(path) == 0)
                replaced = true;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Created with no more than @mode, so that a private socket is never open to others, not even
         * until the chmod (which gives a public one what the umask took). */
        old_umask = umask(~mode & 0777);
        k = bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? -errno : 0;
        (void) umask(old_umask);
        if (k < 0)
                return k;
        if (chmod(path, mode) < 0 || listen(fd, SOMAXCONN) < 0) {
                k = -errno;
                (void) unlink(path);
                return k;
        }
        if (ret_replaced)
                *ret_replaced = replaced;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int socket_peer_pidfd(int fd, pid_t pid) {
        socklen_t len;
        int pidfd = -1;

        len = sizeof(pidfd);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
                return pidfd;
#ifdef SYS_pidfd_open
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd >= 0)
                (void) fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        return pidfd;
#else
        return -1;
#endif
}

bool pidfd_alive(int pidfd) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

        if (pidfd < 0)
                return true;
        return poll(&pfd, 1, 0) == 0;
}
