/* SPDX-License-Identifier: MIT */
/*
 * Cgroup hierarchies and paths: finding the cgroup2 and v1 memory mounts,
 * validating client-supplied cgroup paths, and opening cgroup directories
 * strictly beneath a hierarchy root (no symlinks, no "..", no other mounts).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define CGROUP_PATH_MAX 4096

typedef struct Hierarchy {
        char *path;  /* mount point (or fake tree) */
        int fd;      /* O_PATH|O_DIRECTORY fd on it, or -1 */
} Hierarchy;

/*
 * cgroup_path_normalize - validate a client-supplied cgroup path and return
 * its canonical form: absolute, no "." or ".." components, no control
 * characters, repeated and trailing slashes removed, at most
 * CGROUP_PATH_MAX bytes, components at most 255 bytes. NULL or "" means
 * "/". Returns 0, -EINVAL (invalid) or -ENOMEM.
 */
int cgroup_path_normalize(const char *path, char **ret);

/*
 * hierarchy_open - open @path as a hierarchy root. Returns 0 or negative errno.
 */
int hierarchy_open(Hierarchy *h, const char *path);
void hierarchy_close(Hierarchy *h);

/*
 * hierarchy_open_cgroup - open the directory of canonical cgroup @path
 * (from cgroup_path_normalize()) beneath @h, as O_DIRECTORY|O_RDONLY.
 * Symlinks anywhere in the path and escapes from the root fail.
 * Returns the fd, -ENOENT if it does not exist, -ELOOP/-EXDEV for a
 * symlink or escape (treat as an invalid path), other negative errno.
 */
int hierarchy_open_cgroup(const Hierarchy *h, const char *path);

/*
 * hierarchy_stat_cgroup - whether canonical cgroup @path exists beneath @h,
 * without taking a file descriptor (a check that must work when they are
 * used up): 0, -ENOENT, -ENOTDIR if it names a file, -ELOOP for a symlink
 * in its last component, or another negative errno.
 */
int hierarchy_stat_cgroup(const Hierarchy *h, const char *path);

/*
 * cgroup_exists_as - true if @path beneath @h is still the directory with
 * inode @ino (a recreated cgroup of the same name has a new inode).
 */
bool cgroup_exists_as(const Hierarchy *h, const char *path, ino_t ino);
