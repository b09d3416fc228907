/* SPDX-License-Identifier: MIT */
/* Binding the daemon's AF_UNIX listening sockets, and telling who is behind a connection. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* socket_unix_is_live - whether something accepts connections at @path: 1 yes, 0 no (stale or absent), or a negative errno. */
int socket_unix_is_live(const char *path);

/*
 * socket_listen_unix - a non-blocking, close-on-exec listening AF_UNIX
 * stream socket at @path. The missing directories above it are made (the
 * last one with @dir_mode, the others 0755). A socket file that nobody
 * serves is replaced; one that answers is left alone.
 * @mode: the socket file's mode, which it never exceeds (bound under a
 *        umask of its complement)
 * @ret_replaced: optional; whether a stale socket file was removed
 * @ret_fd: the socket
 *
 * Returns 0; -ENAMETOOLONG; -EADDRINUSE if another process serves @path;
 * or the negative errno of the step that failed (nothing is left open).
 */
int socket_listen_unix(const char *path, mode_t mode, mode_t dir_mode, bool *ret_replaced, int *ret_fd);

/*
 * socket_peer_pidfd - a pidfd (close-on-exec) for the process at the other
 * end of the connected AF_UNIX socket @fd: SO_PEERPIDFD, or pidfd_open()
 * of @pid (from SO_PEERCRED) on kernels without it. Returns the fd or -1.
 */
int socket_peer_pidfd(int fd, pid_t pid);

/*
 * pidfd_alive - whether the process behind @pidfd still runs (true for
 * -1: nothing to check). A pidfd polls readable once it has exited; poll()
 * needs no permission over the process, unlike a signal 0, which a daemon
 * without CAP_KILL may not send to other users.
 */
bool pidfd_alive(int pidfd);
