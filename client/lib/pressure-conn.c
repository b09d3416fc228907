/* SPDX-License-Identifier: MIT */
/* Unix socket I/O of the client library; the framing is the shared varlink framer. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "pressure-conn.h"
#include "util.h"

void conn_buffer_done(ConnBuffer *b) {
        varlink_reader_done(&b->reader);
}

int conn_connect(const char *path, int *ret_fd) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n = strlen(path);

        if (n == 0)
                return -EINVAL;
        if (n >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, n);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1)) < 0) {
                /* A Unix socket connects at once or not at all; a full backlog is EAGAIN. */
                if (errno == EINPROGRESS)
                        return -EAGAIN;
                /* No socket and nobody listening are one situation: the daemon does not run.
                 * -ENOENT is NoSuchCgroup's, -EACCES the daemon's PermissionDenied. */
                if (errno == ENOENT)
                        return -ECONNREFUSED;
                if (errno == EACCES)
                        return -EPERM;
                return -errno;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int wait_fd(int fd, short events, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                int timeout_ms, r;

                if (now >= deadline)
                        return -ETIMEDOUT;
                if (deadline == UINT64_MAX)
                        timeout_ms = -1;
                else {
                        uint64_t ms = (deadline - now) / USEC_PER_MSEC + 1;

                        timeout_ms = ms > INT_MAX ? INT_MAX : (int) ms;
                }
                r = poll(&p, 1, timeout_ms);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r > 0)
                        return 0;
        }
}

int conn_send(int fd, const char *msg, uint64_t deadline) {
        /* The message goes out with its terminating NUL. */
        size_t n = strlen(msg) + 1, done = 0;

        while (done < n) {
                ssize_t k = send(fd, msg + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        int r;

                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        if (deadline == 0)
                                return -EAGAIN;
                        r = wait_fd(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                done += (size_t) k;
        }
        return 0;
}

int conn_fill(int fd, ConnBuffer *b) {
        bool got = false;

        /* A zeroed buffer is ready to use: the limit is applied here. */
        b->reader.max_message = CONN_MESSAGE_MAX;
        for (;;) {
                ssize_t k;

                if (varlink_reader_pending(&b->reader) > CONN_MESSAGE_MAX &&
                    !varlink_reader_has_message(&b->reader))
                        return -EMSGSIZE;
                k = varlink_reader_fill(&b->reader, fd);
                /* Report what was read first; end of file and errors show again on the next call. */
                if (k == -EAGAIN || (k < 0 && got))
                        return got;
                if (k < 0)
                        return (int) k;
                if (k == 0)
                        return got ? 1 : -ECONNRESET;
                got = true;
        }
}

bool conn_has_message(ConnBuffer *b) {
        return varlink_reader_has_message(&b->reader);
}

int conn_next(ConnBuffer *b, json_t **ret) {
        json_error_t error;
        const char *msg;
        size_t n;
        json_t *v;
        int r;

        b->reader.max_message = CONN_MESSAGE_MAX;
        r = varlink_reader_next(&b->reader, &msg, &n);
        if (r <= 0)
                return r;
        v = json_loadb(msg, n, JSON_REJECT_DUPLICATES, &error);
        if (!v)
                return -EBADMSG;
        if (!json_is_object(v)) {
                json_decref(v);
                return -EBADMSG;
        }
        *ret = v;
        return 1;
}

int conn_receive(int fd, ConnBuffer *b, uint64_t deadline, json_t **ret) {
        for (;;) {
                int r = conn_next(b, ret);
                if (r != 0)
                        return r < 0 ? r : 0;

                r = conn_fill(fd, b);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = wait_fd(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
        }
}

bool conn_peer_closed(int error) {
        return error == -EPIPE || error == -ECONNRESET;
}

int conn_send_receive(int fd, const char *msg, uint64_t deadline, ConnBuffer *b, json_t **ret) {
        int r, k;

        r = conn_send(fd, msg, deadline);
        if (r < 0 && !conn_peer_closed(r))
                return r;
        k = conn_receive(fd, b, deadline, ret);
        /* Nothing was left for us: the failed send is the better report. */
        return r < 0 && k < 0 ? r : k;
}

bool conn_is_disconnect(int error) {
        switch (-error) {
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case EPIPE:
        case ENOTCONN:
        case EAGAIN:
                return true;
        default:
                return false;
        }
}
