/* SPDX-License-Identifier: MIT */
/* Helpers of the kernel sources: a registration's cgroup directory and files. */
#include <assert.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "source-common.h"
#include "util.h"

static int source_open_dir(Source *s, const Hierarchy *h, VarlinkError *e) {
        _cleanup_close_ int fd = hierarchy_open_cgroup(h, s->cgroup);
        struct stat st;

        if (fd < 0)
                return varlink_error_from_errno(e, fd, source_type_to_string(s->type), s->cgroup, NULL);
        if (fstat(fd, &st) < 0)
                return -errno;
        s->dir_ino = st.st_ino;
        return TAKE_FD(fd);
}

static int source_open_file(Source *s, int dirfd, const char *file, int flags, VarlinkError *e) {
        int fd = openat(dirfd, file, flags | O_CLOEXEC);

        if (fd < 0)
                return varlink_error_from_errno(e, -errno, source_type_to_string(s->type), s->cgroup, file);
        return fd;
}

int source_open_files(Source *s, const Hierarchy *h, const SourceFile *files, size_t n, int *ret_fds,
                      int *ret_dirfd, VarlinkError *e) {
        _cleanup_close_ int dirfd = -1;
        int fds[SOURCE_FILES_MAX];
        size_t i;

        assert(n <= SOURCE_FILES_MAX);
        dirfd = source_open_dir(s, h, e);
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
