/* SPDX-License-Identifier: MIT */
/* The cgroup namespace view of a varlink peer, read from /proc at accept. */
#include <stdio.h>

#include "kernfile.h"
#include "peer-view.h"
#include "socket-util.h"
#include "util.h"

/* /proc/PID/cgroup has a line per hierarchy: a dozen short lines, but paths may be long. */
#define PROC_CGROUP_READ_MAX (64u << 10)

/*
 * A peer's mountinfo is read in the event loop, once per connection: a
 * peer that made more mounts than fit (thousands) is refused rather than
 * making the daemon read megabytes for every connection it opens.
 */
#define PEER_MOUNTINFO_READ_MAX (1u << 20)

int cgroup_ns_id_of(pid_t pid, CgroupNsId *ret) {
        char path[64];
        struct stat st;

        if (pid > 0)
                snprintf(path, sizeof(path), "/proc/%d/ns/cgroup", (int) pid);
        else
                snprintf(path, sizeof(path), "/proc/self/ns/cgroup");
        if (stat(path, &st) < 0)
                return -errno;
        *ret = (CgroupNsId) { .dev = st.st_dev, .ino = st.st_ino, .valid = true };
        return 0;
}

/* How @pid's namespace relates to @own; -ESRCH if @pid is gone. */
static int peer_relation(pid_t pid, const CgroupNsId *own, CgroupNsRelation *ret) {
        CgroupNsId id;
        int k = cgroup_ns_id_of(pid, &id);

        if (k == -ENOENT || k == -ESRCH)
                return -ESRCH;
        if (k < 0 || !own->valid)
                /* Typically EACCES: looking at another process's namespaces
                 * takes ptrace rights the daemon may not have. */
                *ret = CGROUP_NS_UNKNOWN;
        else
                *ret = id.dev == own->dev && id.ino == own->ino ? CGROUP_NS_SAME : CGROUP_NS_OTHER;
        return 0;
}

/* Read /proc/@pid/@name (at most @max bytes); a vanished process is -ESRCH. */
static int read_proc(pid_t pid, const char *name, size_t max, char **ret) {
        char path[64];
        int k;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, name);
        k = read_full_file(path, max, ret, NULL);
        return k == -ENOENT || k == -ESRCH ? -ESRCH : k;
}

int peer_view_read_proc(pid_t pid, const CgroupNsId *own, CgroupView *ret) {
        _cleanup_free_ char *cgroups = NULL, *mountinfo = NULL, *v2 = NULL, *v1 = NULL;
        CgroupView v = {};
        CgroupNsRelation rel;
        int k;

        k = peer_relation(pid, own, &rel);
        if (k < 0)
                return k;
        if (rel == CGROUP_NS_SAME) {
                *ret = v;
                return 0;
        }
        k = read_proc(pid, "cgroup", PROC_CGROUP_READ_MAX, &cgroups);
        if (k >= 0)
                k = proc_cgroup_parse(cgroups, &v2, &v1);
        if (k >= 0)
                k = read_proc(pid, "mountinfo", PEER_MOUNTINFO_READ_MAX, &mountinfo);
        if (k >= 0)
                k = cgroup_view_choose_root(rel, mountinfo, false, v2, &v.v2_root);
        if (k >= 0)
                k = cgroup_view_choose_root(rel, mountinfo, true, v1, &v.v1_root);
        if (k < 0) {
                cgroup_view_done(&v);
                return k;
        }
        *ret = v;
        return 0;
}

int peer_view_read(int fd, pid_t pid, const CgroupNsId *own, CgroupView *ret) {
        _cleanup_close_ int pidfd = -1;
        CgroupView v = {};
        int k;

        k = peer_view_read_proc(pid, own, &v);
        if (k < 0)
                return k;
        if (!v.v2_root && !v.v1_root) {
                *ret = v;
                return 0;
        }
        /* The pid may have been recycled while the files were read: the
         * pidfd names the peer itself, so it tells. */
        pidfd = socket_peer_pidfd(fd, pid);
        if (pidfd < 0 || !pidfd_alive(pidfd)) {
                cgroup_view_done(&v);
                return -ESRCH;
        }
        *ret = v;
        return 0;
}
