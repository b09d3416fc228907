/* SPDX-License-Identifier: MIT */
/* The daemon's own varlink socket: told when it goes, bound again on reload; see socket-watch.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "event-util.h"
#include "log.h"
#include "socket-util.h"
#include "socket-watch.h"
#include "util.h"

struct SocketWatch {
        ClientServer *server;
        char *path;
        char *dir;
        const char *name;           /* the last component of path */
        mode_t mode, dir_mode;
        dev_t dev;                  /* the socket file bound, to tell it from another */
        ino_t ino;
        int ifd;
        int wd;                     /* on dir; -1 once the kernel dropped it */
        struct event *ev;
        bool told;                  /* its removal was logged */
};

/* Remember which file the socket is; watch its directory again. */
static void socket_watch_arm(SocketWatch *w) {
        struct stat st;

        if (stat(w->path, &st) == 0) {
                w->dev = st.st_dev;
                w->ino = st.st_ino;
        }
        if (w->wd >= 0)
                (void) inotify_rm_watch(w->ifd, w->wd);
        w->wd = inotify_add_watch(w->ifd, w->dir, IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF |
                                  IN_ONLYDIR);
        if (w->wd < 0)
                log_debug_errno(errno, "Cannot watch %s for the removal of the socket: %m", w->dir);
}

static void socket_watch_gone(SocketWatch *w, const char *why) {
        if (w->told)
                return;
        w->told = true;
        log_warning("The socket %s is gone (%s): clients cannot connect. A reload (systemctl reload pressured, "
                    "or SIGHUP) binds it again.", w->path, why);
}

static void socket_watch_event(SocketWatch *w, const struct inotify_event *ev) {
        if (ev->wd != w->wd)
                return;
        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
                socket_watch_gone(w, "its directory was removed");
        else if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && ev->len > 0 && streq(ev->name, w->name))
                socket_watch_gone(w, "it was removed");
        if (ev->mask & IN_IGNORED)
                w->wd = -1;
}

static void on_inotify(evutil_socket_t fd, short what, void *userdata) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        SocketWatch *w = userdata;
        ssize_t n;

        while ((n = read(w->ifd, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        socket_watch_event(w, ev);
                        p += sizeof(*ev) + ev->len;
                }
}

int socket_watch_new(struct event_base *base, ClientServer *server, const char *path, mode_t mode, mode_t dir_mode,
                     SocketWatch **ret) {
        SocketWatch *w = calloc(1, sizeof(*w));
        const char *slash = strrchr(path, '/');

        if (!w)
                return log_error_errno(ENOMEM, "Out of memory.");
        *w = (SocketWatch) { .server = server, .mode = mode, .dir_mode = dir_mode, .wd = -1,
                             .ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC) };
        w->path = strdup(path);
        w->dir = slash && slash != path ? strndup(path, (size_t) (slash - path)) : strdup(slash ? "/" : ".");
        if (!w->path || !w->dir || w->ifd < 0) {
                int k = w->ifd < 0 ? -errno : -ENOMEM;

                socket_watch_free(w);
                return log_warning_errno(k, "Cannot watch the socket %s, its removal will go unnoticed: %m", path);
        }
        w->name = w->path + (slash ? (size_t) (slash - path) + 1 : 0);
        w->ev = event_new(base, w->ifd, EV_READ | EV_PERSIST, on_inotify, w);
        if (!w->ev || event_add(w->ev, NULL) < 0) {
                socket_watch_free(w);
                return log_warning_errno(ENOMEM, "Cannot watch the socket %s, its removal will go unnoticed: %m",
                                         path);
        }
        socket_watch_arm(w);
        *ret = w;
        return 0;
}

SocketWatch *socket_watch_free(SocketWatch *w) {
        if (!w)
                return NULL;
        event_free_and_null(&w->ev);
        safe_close(w->ifd);
        free(w->path);
        free(w->dir);
        free(w);
        return NULL;
}

int socket_watch_rebind(SocketWatch *w) {
        struct stat st;
        int fd, k;

        if (!w || (stat(w->path, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino))
                return 0;
        if (socket_unix_is_live(w->path) > 0) {
                log_warning("Another process serves %s now; not binding it again.", w->path);
                return 0;
        }
        k = socket_listen_unix(w->path, w->mode, w->dir_mode, NULL, &fd);
        if (k < 0)
                return log_error_errno(k, "Failed to listen on %s again: %m", w->path);
        k = client_server_set_listener(w->server, fd);
        if (k < 0)
                return log_error_errno(k, "Failed to serve %s again: %m", w->path);
        w->told = false;
        socket_watch_arm(w);
        log_info("Listening on %s again.", w->path);
        return 1;
}
