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
 * Why a path is no cgroup path: the rules of cgroup_path_check(), then
 * what the daemon finds when it opens a well-formed one beneath a
 * hierarchy (cgroup_path_problem_from_errno()). The one list of reasons
 * that the daemon's log, pressurectl and libpressure give.
 */
typedef enum CgroupPathProblem {
        CGROUP_PATH_OK,
        CGROUP_PATH_NOT_ABSOLUTE,
        CGROUP_PATH_TOO_LONG,
        CGROUP_PATH_NOT_UTF8,
        CGROUP_PATH_CONTROL_CHARACTER,
        CGROUP_PATH_NAME_TOO_LONG,
        CGROUP_PATH_DOT,
        CGROUP_PATH_DOT_DOT,
        CGROUP_PATH_TOO_LONG_IN_NAMESPACE,
        CGROUP_PATH_FILE,
        CGROUP_PATH_SYMLINK,
        CGROUP_PATH_OTHER_MOUNT,
        _CGROUP_PATH_PROBLEM_MAX,
} CgroupPathProblem;

/*
 * cgroup_path_check - the first rule @path breaks: absolute, at most
 * CGROUP_PATH_MAX bytes, valid UTF-8 (the wire is JSON), no control
 * characters or DEL, components at most 255 bytes, no "." or ".."
 * component. NULL and "" are "/", and fine.
 */
CgroupPathProblem cgroup_path_check(const char *path);

/*
 * cgroup_path_problem_from_errno - what a failed hierarchy_open_cgroup()
 * of a well-formed path says: -ENOTDIR a file, -ELOOP a symlink, -EXDEV
 * another mount, -ENAMETOOLONG too long; -EINVAL too long once joined to
 * a cgroup namespace's root (cgroup_view_to_real()). CGROUP_PATH_OK for
 * any other errno (not a problem of the path).
 */
CgroupPathProblem cgroup_path_problem_from_errno(int error);

/*
 * cgroup_path_problem_to_string - the reason in words, a clause that
 * follows "Invalid cgroup path '...': " ("it names a file, not a cgroup
 * directory"); NULL for CGROUP_PATH_OK.
 */
const char *cgroup_path_problem_to_string(CgroupPathProblem p);

/*
 * cgroup_path_escape - @path for a message or a JSON string: bytes that
 * are control characters, DEL or not part of valid UTF-8 written as \xNN.
 * Returns a new string, or NULL if out of memory.
 */
char *cgroup_path_escape(const char *path);

/*
 * cgroup_path_normalize - validate a client-supplied cgroup path
 * (cgroup_path_check()) and return its canonical form: repeated and
 * trailing slashes removed. NULL or "" means "/". Returns 0, -EINVAL
 * (invalid) or -ENOMEM.
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
 * used up), refusing what hierarchy_open_cgroup() refuses: 0, -ENOENT,
 * -ENOTDIR if it names a file, -ELOOP for a symlink on the way, -EXDEV
 * for another mount on the way, or another negative errno.
 */
int hierarchy_stat_cgroup(const Hierarchy *h, const char *path);

/*
 * cgroup_exists_as - true if @path beneath @h is still the directory with
 * inode @ino (a recreated cgroup of the same name has a new inode).
 */
bool cgroup_exists_as(const Hierarchy *h, const char *path, ino_t ino);

/* The longest unit name systemd accepts, without its NUL. */
#define CGROUP_UNIT_NAME_MAX 255

/*
 * cgroup_path_unit - the systemd unit whose own cgroup @path is, named as
 * systemd's cgroup metrics source (systemd-report, io.systemd.CGroup) names
 * it: @path (canonical, as from cgroup_path_normalize()) is zero or more
 * slices ("/system.slice", "/user.slice/user-1000.slice") and then one unit
 * that is no slice, as its last component: "/system.slice/foo.service" is
 * "foo.service", "/user.slice/user-1000.slice/user@1000.service" is
 * "user@1000.service", "/init.scope" is "init.scope". A component is read
 * as systemd escapes cgroup names (a leading "_" is dropped) and must be a
 * valid unit name: a known unit type after the last dot, only
 * [A-Za-z0-9:_.\-] before it, at most one "@" with text on either side
 * (an instance; a template "foo@.service" has no cgroup), at most
 * CGROUP_UNIT_NAME_MAX bytes. A slice is a component "*.slice" without
 * "@". Everything else ("/", a slice, a cgroup below a unit such as
 * "/system.slice/foo.service/payload") has no unit: NULL.
 *
 * Returns the unit name, pointing into @path, or NULL.
 */
const char *cgroup_path_unit(const char *path);
