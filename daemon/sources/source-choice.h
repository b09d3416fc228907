/* SPDX-License-Identifier: MIT */
/*
 * Which kernel source serves a Subscribe request, decided from facts about
 * the cgroup hierarchies that the caller gathered (which hierarchies
 * exist, whether the cgroup is in them, which files its cgroup2 directory
 * has). Pure: no I/O, so every combination is unit-tested.
 */
#pragma once

#include <stdbool.h>

#include "selector.h"
#include "source-failure.h"
#include "source.h"

typedef struct CgroupFacts {
        const char *v2_root;     /* where the hierarchies in use are, named in errors; NULL: none */
        const char *v1_root;
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
 * @f: the facts about @cgroup
 * @ret: the source
 * @e: filled on failure; the caller names the cgroup when it maps it for
 *     the wire (varlink_error_from_failure())
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
 * Returns 0, or a negative errno with @e filled: the source unavailable,
 * no such cgroup, an invalid cgroup path, or the failed open of the
 * cgroup directory (whose errno decides the error the server answers). A cgroup that exists only
 * in the v1 memory hierarchy gets the same SourceUnavailable from every
 * source that needs cgroup2 (source_error_v1_only()), one only in cgroup2
 * the like from vmpressure: NoSuchCgroup means that the cgroup is in none of
 * the hierarchies in use.
 */
int source_choose(Selector selector, const CgroupFacts *f, SourceType *ret, SourceFailure *e);

/* What SourceUnavailable says of a cgroup2 directory without the memory controller's files. */
#define SOURCE_REASON_NO_MEMORY_CONTROLLER \
        "the cgroup has no memory controller files (memory.current/memory.events): " \
        "the memory controller is not enabled for it in the cgroup2 hierarchy"

/*
 * source_error_v1_only - @source unavailable on a cgroup that
 * exists in the cgroup v1 memory hierarchy at @v1_root but not in the
 * cgroup2 one at @v2_root, which @source needs. Returns -EOPNOTSUPP.
 */
int source_error_v1_only(SourceFailure *e, const char *source, const char *v2_root, const char *v1_root);

/* source_error_v2_only - the same for vmpressure on a cgroup only in the cgroup2 hierarchy. */
int source_error_v2_only(SourceFailure *e, const char *v2_root, const char *v1_root);
