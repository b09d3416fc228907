/* SPDX-License-Identifier: MIT */
/*
 * What the kernel sources share: opening a registration's cgroup
 * directory and files with errors mapped by varlink_error_from_errno(),
 * used by the sources only.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "source.h"
#include "varlink-error.h"

/* A file of a cgroup directory to open, and how. */
typedef struct SourceFile {
        const char *name;
        int flags; /* for openat(); O_CLOEXEC is added */
} SourceFile;

#define SOURCE_FILES_MAX 4

/*
 * source_open_files - open @r's cgroup directory in @h, remember its inode
 * (to tell a recreated cgroup from ours later), and open the @n files
 * @files in it.
 * @ret_fds: the files' fds, in the order of @files
 * @ret_dirfd: the directory's fd, or NULL to close it
 *
 * Returns 0, or a negative errno with @e filled as
 * varlink_error_from_errno() maps it; then nothing is left open and
 * nothing is written to @ret_fds or @ret_dirfd.
 */
int source_open_files(Source *s, const Hierarchy *h, const SourceFile *files, size_t n, int *ret_fds,
                      int *ret_dirfd, VarlinkError *e);
