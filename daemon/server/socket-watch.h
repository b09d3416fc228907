/* SPDX-License-Identifier: MIT */
/*
 * The varlink socket the daemon bound itself (not one the service manager
 * passed): an inotify watch on its directory tells the log at once when
 * the socket or its directory is removed (clients can no longer connect),
 * and socket_watch_rebind(), called on reload, binds it again. The watch
 * wakes the daemon only when something changes in that directory.
 */
#pragma once

#include <event2/event.h>
#include <sys/types.h>

#include "client.h"

typedef struct SocketWatch SocketWatch;

/*
 * socket_watch_new - watch the socket that @server listens on at @path,
 * bound with the modes @mode (the socket) and @dir_mode (its directory).
 * Returns 0, or a negative errno (logged; the daemon serves without it).
 */
int socket_watch_new(struct event_base *base, ClientServer *server, const char *path, mode_t mode, mode_t dir_mode,
                     SocketWatch **ret);

/* socket_watch_free - stop watching; NULL-safe, returns NULL. */
SocketWatch *socket_watch_free(SocketWatch *w);

/*
 * socket_watch_rebind - if the socket file at the watched path is no longer
 * the one the server listens on (removed with or without its directory, or
 * replaced by a stale file), bind a new one there and hand it to the server.
 * A socket that another process serves is left alone. Returns 1 if it bound
 * the socket again, 0 if there was nothing to do, or a negative errno
 * (logged).
 */
int socket_watch_rebind(SocketWatch *w);
