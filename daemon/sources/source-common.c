/* SPDX-License-Identifier: MIT */
/* Helpers of the kernel sources: a registration's cgroup directory and files. */
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source-common.h"
#include "util.h"

static int source_open_dir(Source *s, const Hierarchy *h, int given, SourceFailure *e) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        /* A descriptor of its own (its own offset), for the same directory. */
        if (given >= 0) {
                fd = openat(given, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        fd = -errno;
        } else
                fd = hierarchy_open_cgroup(h, s->cgroup);
        if (fd < 0)
                return source_failure_open(e, fd, source_type_to_string(s->type), NULL);
        if (fstat(fd, &st) < 0)
                return -errno;
        s->dir_ino = st.st_ino;
        return TAKE_FD(fd);
}

static int source_open_file(Source *s, int dirfd, const char *file, int flags, SourceFailure *e) {
        int fd = openat(dirfd, file, flags | O_CLOEXEC);

        if (fd < 0)
                return source_failure_open(e, -errno, source_type_to_string(s->type), file);
        return fd;
}

int source_open_files(Source *s, const Hierarchy *h, int given, const SourceFile *files, size_t n, int *ret_fds,
                      int *ret_dirfd, SourceFailure *e) {
        _cleanup_close_ int dirfd = -1;
        int fds[SOURCE_FILES_MAX];
        size_t i;

        assert(n <= SOURCE_FILES_MAX);
        dirfd = source_open_dir(s, h, given, e);
        if (dirfd < 0)
                return dirfd;
        for (i = 0; i < n; i++) {
                fds[i] = source_open_file(s, dirfd, files[i].name, files[i].flags, e);
                if (fds[i] < 0) {
                        int k = fds[i];

                        while (i > 0)
                                (void) safe_close(fds[--i]);
                        return k;
                }
        }
        memcpy(ret_fds, fds, n * sizeof(int));
        if (ret_dirfd)
                *ret_dirfd = TAKE_FD(dirfd);
        return 0;
}

int source_watch_cgroup(int dirfd, const char *file) {
        _cleanup_close_ int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        char path[64 + NAME_MAX];

        if (ifd < 0)
                return -errno;
        /* inotify takes paths; the directory fd is pinned through /proc/self/fd. */
        if (file) {
                snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, file);
                if (inotify_add_watch(ifd, path, IN_MODIFY | IN_DELETE_SELF) < 0)
                        return -errno;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
        if (inotify_add_watch(ifd, path, IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0)
                return -errno;
        snprintf(path, sizeof(path), "/proc/self/fd/%d/..", dirfd);
        if (inotify_add_watch(ifd, path, IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR) < 0)
                return -errno;
        snprintf(path, sizeof(path), "/proc/self/fd/%d/cgroup.events", dirfd);
        (void) inotify_add_watch(ifd, path, IN_MODIFY); /* absent in fake trees */
        return TAKE_FD(ifd);
}

bool source_drain_check(Source *s, const Hierarchy *h) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        /* Drain; which watch fired does not matter, the state is re-read. */
        while (read(s->fd, buf, sizeof(buf)) > 0)
                ;
        if (cgroup_exists_as(h, s->cgroup, s->dir_ino))
                return true;
        s->cb->removed(s);
        return false;
}

static void source_report(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        uint64_t count = s->woke;
        PsiStats stats;

        if (count == 0)
                return;
        s->woke = 0;
        s->cb->pressure(s, source_read_psi(s, &stats) >= 0 ? &stats : NULL, s->woke_realtime_us,
                        s->woke_monotonic_us, count);
}

void source_notify(Source *s, uint64_t count) {
        if (s->woke == 0) {
                s->woke_monotonic_us = now_usec(CLOCK_MONOTONIC);
                s->woke_realtime_us = now_usec(CLOCK_REALTIME);
        }
        s->woke += count;
        if (!s->report)
                s->report = event_new(s->env->base, -1, 0, source_report, s);
        /* Kicked first: what a kick makes ready is queued ahead of the report. */
        s->cb->kick(s);
        if (s->report)
                event_active(s->report, EV_TIMEOUT, 0);
        else
                source_report(-1, 0, s); /* out of memory: reported at once */
}
