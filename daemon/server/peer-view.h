/* SPDX-License-Identifier: MIT */
/*
 * The cgroup namespace of a peer of the varlink socket, found once when it
 * connects: whether it is the daemon's own (one stat()), else the roots of
 * the peer's namespace read from its /proc files (cgroup-ns.h has the
 * rule). SO_PEERCRED's pid is in the daemon's pid namespace; no setns().
 */
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include "cgroup-ns.h"

/* The identity of a cgroup namespace: st_dev and st_ino of its /proc/PID/ns/cgroup. */
typedef struct CgroupNsId {
        dev_t dev;
        ino_t ino;
        bool valid;
} CgroupNsId;

/* cgroup_ns_id_of - the cgroup namespace of @pid (0: the daemon itself). Returns 0 or negative errno. */
int cgroup_ns_id_of(pid_t pid, CgroupNsId *ret);

/*
 * peer_view_read - the view of the peer @pid of the connected socket @fd.
 * @own: the daemon's cgroup namespace (!valid if unknown)
 * @ret: the peer's roots; all NULL when its namespace is the daemon's
 *
 * Returns 0; -ESRCH if the peer exited before its files were read (its
 * pid may be another process's by now, so nothing read is trusted); or
 * another negative errno of reading.
 */
int peer_view_read(int fd, pid_t pid, const CgroupNsId *own, CgroupView *ret);

/* peer_view_read_proc - peer_view_read() without the pidfd check: the roots of @pid, as the files say. */
int peer_view_read_proc(pid_t pid, const CgroupNsId *own, CgroupView *ret);
