/* SPDX-License-Identifier: MIT */
/*
 * Which kernel source serves a Subscribe request, decided from facts about
 * the cgroup hierarchies that the caller gathered (which hierarchies
 * exist, whether the cgroup is in them, which files its cgroup2 directory
 * has). Pure: no I/O, so every combination is unit-tested.
 */
#pragma once

#include <stdbool.h>

#include "source.h"
#include "subscribe.h"
#include "varlink-error.h"

typedef struct CgroupFacts {
        Resource resource;       /* the resource asked for; vmpressure serves memory only */
        bool system;             /* the request is for "/", the whole system */
        bool psi_system;         /* /proc/pressure/RESOURCE is readable */
        bool has_v2;             /* a cgroup2 hierarchy is in use */
        bool has_v1;             /* a cgroup v1 memory hierarchy is in use */
        int in_v2;               /* 0: the cgroup is in the cgroup2 hierarchy; else the negative errno of opening it */
        int in_v1;               /* likewise for the v1 memory hierarchy */
        bool v2_pressure;        /* its cgroup2 directory has RESOURCE.pressure */
        bool v2_current;         /* ... memory.current */
        bool v2_events;          /* ... memory.events */
} CgroupFacts;

/*
 * source_choose - the source that serves @selector on @cgroup.
 * @selector: what the request asked for
 * @cgroup: the canonical cgroup path, named in errors
 * @f: the facts about @cgroup
 * @ret: the source
 * @e: filled on failure
 *
 * "level": on "/", PSI if /proc/pressure/memory is there, else vmpressure
 * on the v1 root; on a cgroup, PSI if its cgroup2 directory has
 * memory.pressure, else vmpressure if it is in the v1 hierarchy. For the
 * resources cpu and io there is no vmpressure to fall back to: without
 * the pressure file "level" is SourceUnavailable.
 * "psi" needs the cgroup in cgroup2 (not for "/"), "vmpressure" in v1,
 * "memory_events" and "protection" in cgroup2 with the memory
 * controller's files. "kills" serves "/" always and a cgroup in cgroup2
 * (with memory.events or without: then systemd-oomd alone reports on it).
 * Returns 0, or a negative errno with @e filled
 * (SourceUnavailable, NoSuchCgroup, InvalidCgroupPath, LimitExceeded, as
 * varlink_error_from_errno() maps a failed open).
 */
int source_choose(Selector selector, const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e);
