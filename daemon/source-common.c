/* SPDX-License-Identifier: MIT */
/* Helpers of the kernel sources: cgroup directory and files, pressure events. */
#include <assert.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "counters.h"
#include "event.h"
#include "manager.h"
#include "registration-episode.h"
#include "source-common.h"
#include "source-protection.h"
#include "util.h"

static int source_open_dir(Registration *r, const Hierarchy *h, VarlinkError *e) {
        _cleanup_close_ int fd = hierarchy_open_cgroup(h, r->cgroup);
        struct stat st;

        if (fd < 0)
                return varlink_error_from_errno(e, fd, source_type_to_string(r->type), r->cgroup, NULL);
        if (fstat(fd, &st) < 0)
                return -errno;
        r->dir_ino = st.st_ino;
        return TAKE_FD(fd);
}

static int source_open_file(Registration *r, int dirfd, const char *file, int flags, VarlinkError *e) {
        int fd = openat(dirfd, file, flags | O_CLOEXEC);

        if (fd < 0)
                return varlink_error_from_errno(e, -errno, source_type_to_string(r->type), r->cgroup, file);
        return fd;
}

int source_open_files(Registration *r, const Hierarchy *h, const SourceFile *files, size_t n, int *ret_fds,
                      int *ret_dirfd, VarlinkError *e) {
        _cleanup_close_ int dirfd = -1;
        int fds[SOURCE_FILES_MAX];
        size_t i;

        assert(n <= SOURCE_FILES_MAX);
        dirfd = source_open_dir(r, h, e);
        if (dirfd < 0)
                return dirfd;
        for (i = 0; i < n; i++) {
                fds[i] = source_open_file(r, dirfd, files[i].name, files[i].flags, e);
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

void source_publish_pressure(Registration *r, json_t *psi, uint64_t realtime_us, uint64_t monotonic_us,
                             uint64_t count) {
        json_t *event = event_pressure_new(r->cgroup, source_type_to_string(r->type), psi, realtime_us,
                                           monotonic_us);

        counter_inc(&r->manager->counters, COUNTER_EVENTS_READ);
        registration_episode_event(r, monotonic_us, _LEVEL_INVALID);
        if (event)
                source_protection_enrich(r->manager, r->cgroup, event);
        registration_publish(r, event, monotonic_us, count);
}

