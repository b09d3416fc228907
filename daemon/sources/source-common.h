/* SPDX-License-Identifier: MIT */
/*
 * What the kernel sources share: opening a registration's cgroup
 * directory and files, failing with a SourceFailure that says which,
 * used by the sources only.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cgroup.h"
#include "source.h"
#include "source-failure.h"

/* A file of a cgroup directory to open, and how. */
typedef struct SourceFile {
        const char *name;
        int flags; /* for openat(); O_CLOEXEC is added */
} SourceFile;

#define SOURCE_FILES_MAX 4

/*
 * source_open_files - open @s's cgroup directory in @h, remember its inode
 * (to tell a recreated cgroup from ours later), and open the @n files
 * @files in it.
 * @dirfd: the directory as the caller checked it (reopened through "."),
 *         or -1 to open it by @s's path
 * @ret_fds: the files' fds, in the order of @files
 * @ret_dirfd: the directory's fd, or NULL to close it
 *
 * Returns 0, or a negative errno with @e filled (the failed open of the
 * directory, or of the file named); then nothing is left open and
 * nothing is written to @ret_fds or @ret_dirfd.
 */
int source_open_files(Source *s, const Hierarchy *h, int dirfd, const SourceFile *files, size_t n, int *ret_fds,
                      int *ret_dirfd, SourceFailure *e);

/*
 * source_watch_cgroup - a non-blocking inotify fd that becomes readable
 * when the cgroup of the directory @dirfd may be gone (its entry deleted
 * from or moved out of its parent, the directory deleted), when its
 * cgroup.events changes, and when @file (NULL: none) of the directory is
 * modified. The kernel raises a file-modified event on memory.events
 * whenever a counter changes; the file gets no final event when the
 * cgroup is removed, and an open fd on it pins the directory so that it
 * gets no IN_DELETE_SELF either, hence the watch on the parent (rmdir goes
 * through the VFS, for cgroupfs too). Returns the fd or a negative errno.
 */
int source_watch_cgroup(int dirfd, const char *file);

/*
 * source_drain_check - drain the inotify fd of @s and check that its
 * cgroup is still the directory it opened in @h. If it is gone, @s's
 * removed() callback is called (which may free @s) and false returned.
 */
bool source_drain_check(Source *s, const Hierarchy *h);

/*
 * source_notify - a pressure notification of @s's kernel registration,
 * standing for @count: its listeners that take the bare notification
 * are kicked now; the notification is reported (the averages read, the
 * event built) once every notification of this turn of the loop has been
 * kicked, so that what a kick makes ready runs before any of that.
 * @s must stay until the report; source_close() drops one still pending.
 */
void source_notify(Source *s, uint64_t count);
