/* SPDX-License-Identifier: MIT */
/*
 * Headroom: how far a cgroup can still grow before the nearest memory
 * limit, read from cgroupfs and /proc/meminfo on each call (nothing is
 * registered with the kernel; a caller may keep /proc/meminfo open and
 * remember which hierarchy served a cgroup), and the reclaim target of
 * a pressure level: how much to free to get back to the level's margin.
 *
 * The hierarchy. cgroup2 when the cgroup there has memory.current (or is
 * the root of a hierarchy whose cgroup.controllers lists "memory"), else
 * the v1 memory hierarchy when the cgroup there has memory.usage_in_bytes.
 *
 * The limits. Walking from the cgroup up to @stop (a peer's cgroup
 * namespace root, included; "/" when none): on cgroup2 each level's room
 * is min(memory.high, memory.max) - memory.current, on v1
 * memory.limit_in_bytes - memory.usage_in_bytes; "max" and v1's
 * page-rounded "unlimited" (HEADROOM_V1_UNLIMITED or more) are no limit.
 * A limit below the usage gives a room of 0. The limit with the least
 * room is the nearest one: limit_bytes, limiting_cgroup.
 *
 * The machine. It is the outermost limit: headroom_bytes is the least of
 * the nearest limit's room and MemAvailable. limit_bytes and
 * limiting_cgroup still name the cgroup limit (they describe the cgroup
 * tree); margin_base_bytes tells which bound decided: the limit when its
 * room is the least, MemTotal when the machine's is. A cgroup with no
 * limit on its path has MemAvailable as headroom.
 *
 * Usage. usage_bytes is the cgroup's own memory.current (v2) or
 * memory.usage_in_bytes (v1); for the root of a hierarchy (the whole
 * system) MemTotal - MemAvailable, as the root's own counters are either
 * absent (v2) or count differently (v1).
 *
 * Not known. An ancestor's file that is missing or not a number leaves
 * the walk without a result: headroom is not known, and no limit is
 * claimed. Without a readable /proc/meminfo a limited cgroup still has
 * its limit's room; an unlimited one is not known.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "config.h"
#include "source-failure.h"

/* A v1 memory.limit_in_bytes this large is "unlimited": LONG_MAX rounded down to pages of up to 64 KiB. */
#define HEADROOM_V1_UNLIMITED (UINT64_C(0x7fffffffffffffff) & ~UINT64_C(0xffff))

typedef struct HeadroomFiles {
        const Hierarchy *v2;        /* fd -1: none */
        const Hierarchy *v1;        /* fd -1: none */
        const char *meminfo;        /* "/proc/meminfo" */
        const int *meminfo_fd;      /* open on meminfo, read at offset 0; NULL or -1: open the path */
} HeadroomFiles;

/*
 * Which hierarchy served the last read of a cgroup, for a caller that
 * reads the same cgroup again and again (a level tracker): the next read
 * goes there without probing.
 */
typedef enum HeadroomHint {
        HEADROOM_HINT_NONE,
        HEADROOM_HINT_V2,
        HEADROOM_HINT_V1,
} HeadroomHint;

typedef struct Headroom {
        uint64_t usage_bytes;
        bool v1;                    /* read from the v1 memory hierarchy */
        bool has_limit;
        uint64_t limit_bytes;
        char *limiting_cgroup;      /* real path in the hierarchy read; NULL without a limit */
        bool known;
        uint64_t headroom_bytes;
        uint64_t margin_base_bytes; /* what the margins' percentages are of; known only */
} Headroom;

/*
 * headroom_read - the headroom of a cgroup.
 * @files: the hierarchies and the meminfo file
 * @real_v2, @real_v1: the cgroup's real path in each hierarchy (NULL: not
 *                     there; a peer may name nothing in one of them)
 * @stop_v2, @stop_v1: where the ancestor walk ends (included); NULL: "/"
 * @ret: filled; free with headroom_done()
 * @f: why not
 *
 * Returns 0; -ENOENT (NO_SUCH_CGROUP) when the cgroup is in neither
 * hierarchy; -ELOOP/-EXDEV/-ENOTDIR (INVALID_CGROUP_PATH); -EOPNOTSUPP
 * (UNAVAILABLE) when no hierarchy it is in has the memory controller for
 * it; -EBADMSG (UNAVAILABLE) when its own usage cannot be read or parsed;
 * -ENOMEM; or the errno of opening the cgroup (OPEN).
 */
int headroom_read(const HeadroomFiles *files, const char *real_v2, const char *real_v1, const char *stop_v2,
                  const char *stop_v1, Headroom *ret, SourceFailure *f);

/*
 * headroom_read_hinted - headroom_read() for a cgroup read before: with
 * *@hint set, the hierarchy it names is read without probing which one
 * serves the cgroup (opening it, looking for the usage file, the root's
 * cgroup.controllers); if that read fails, the cgroup is probed and read
 * as headroom_read() does. *@hint is then set to the hierarchy read, or
 * cleared on failure. The controller moves between hierarchies only
 * while no cgroup uses it, so a read that succeeds where the hint points
 * is the one a probe would have made.
 */
int headroom_read_hinted(const HeadroomFiles *files, const char *real_v2, const char *real_v1, const char *stop_v2,
                         const char *stop_v1, HeadroomHint *hint, Headroom *ret, SourceFailure *f);

/* headroom_done - free what @h holds; it may be read again into. */
void headroom_done(Headroom *h);

/*
 * headroom_margin - the margin of @level (LEVEL_LOW .. LEVEL_CRITICAL) of
 * @config in bytes: a size as it is, a percentage of @base (so at most
 * @base). False for a level out of range.
 */
bool headroom_margin(const Config *config, int level, uint64_t base, uint64_t *ret);

/*
 * headroom_reclaim_target - how much to free to get back to the margin
 * of @level (0: normal, 1 low .. 3 critical):
 * max(0, margin - headroom_bytes), 0 at normal. False (no target) when
 * the headroom is not known or @level is out of range.
 */
bool headroom_reclaim_target(const Headroom *h, const Config *config, int level, uint64_t *ret);
