/* SPDX-License-Identifier: MIT */
/*
 * Cgroup namespaces: the view a peer has of the cgroup hierarchies. A
 * process in a cgroup namespace names cgroups relative to the root of its
 * namespace; the daemon keeps every cgroup under its real path (its own
 * view) and translates at the edge. Pure: the caller reads the /proc files.
 */
#pragma once

#include <stdbool.h>

/* How a peer's cgroup namespace relates to the daemon's own. */
typedef enum CgroupNsRelation {
        CGROUP_NS_SAME,         /* provably the daemon's: the peer sees what the daemon sees */
        CGROUP_NS_OTHER,        /* provably another one */
        CGROUP_NS_UNKNOWN,      /* not known (no right to look at the peer's namespace) */
} CgroupNsRelation;

/*
 * A peer's roots, in the daemon's view, of the cgroup2 hierarchy and of
 * the cgroup v1 memory hierarchy. NULL stands for "/": the peer sees that
 * hierarchy as the daemon does.
 */
typedef struct CgroupView {
        char *v2_root;
        char *v1_root;
} CgroupView;

/* cgroup_view_done - free the roots of @v and reset it to the daemon's own view. */
void cgroup_view_done(CgroupView *v);

/* cgroup_view_root - the root of @v for the v1 memory hierarchy (@v1) or cgroup2; NULL for "/". NULL @v is "/". */
const char *cgroup_view_root(const CgroupView *v, bool v1);

/*
 * cgroup_view_choose_root - the root of a peer's cgroup namespace in one
 * hierarchy, by the rule of pressured(8):
 *  - CGROUP_NS_SAME, or @own outside the daemon's namespace ("/.."): "/";
 *  - otherwise the shallowest root of the peer's own cgroup mounts of that
 *    hierarchy that is not "/" and is an ancestor-or-self of its cgroup
 *    (mountinfo_cgroup_ns_root());
 *  - failing that, for CGROUP_NS_OTHER the peer's own cgroup @own (exact
 *    for a process that has not moved since the namespace was made,
 *    otherwise narrower), for CGROUP_NS_UNKNOWN "/".
 * @mountinfo: the peer's /proc/PID/mountinfo, as the daemon reads it
 * @v1_memory: the v1 memory hierarchy rather than cgroup2
 * @own: the peer's cgroup in that hierarchy as the daemon reads
 *       /proc/PID/cgroup (any form; it is normalized), or NULL if none
 * @ret: the root, canonical, or NULL for "/"
 *
 * Returns 0, -EBADMSG for an unusable @own or @mountinfo, or -ENOMEM.
 */
int cgroup_view_choose_root(CgroupNsRelation rel, const char *mountinfo, bool v1_memory, const char *own,
                            char **ret);

/*
 * cgroup_view_to_real - the real path of the cgroup a peer with @root
 * (NULL or "/" for none) names @path. @path is validated as
 * cgroup_path_normalize() does, so it cannot climb above @root.
 * Returns 0, -EINVAL (invalid, or too long once joined) or -ENOMEM.
 */
int cgroup_view_to_real(const char *root, const char *path, char **ret);

/*
 * cgroup_view_from_real - the name a peer with @root (NULL or "/" for
 * none) has for the real canonical cgroup path @real: @root itself is "/",
 * a cgroup beneath it loses the prefix. Returns a pointer into @real (or
 * to "/"), or NULL if @real lies outside @root.
 */
const char *cgroup_view_from_real(const char *root, const char *real);
