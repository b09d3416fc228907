/* SPDX-License-Identifier: MIT */
/*
 * pressurectl top: the cgroup snapshot it shows, read by top-cgroup.c from
 * the cgroup trees and the system files (as the user running pressurectl,
 * never through the daemon).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A value top could not read (file missing, cgroup gone, not in this hierarchy). */
#define TOP_NONE UINT64_MAX
/* An unlimited setting ("max", or the v1 "no limit" value). */
#define TOP_UNLIMITED (UINT64_MAX - 1)

/* The memory.events counters top shows, as deltas since it first saw the cgroup. */
enum {
        TOP_EV_HIGH,
        TOP_EV_MAX,
        TOP_EV_OOM_KILL,
        _TOP_EV_MAX,
};

/* Files of one hierarchy kept open between refreshes (top-cgroup.c). */
#define TOP_FILES 7
typedef struct TopFileCache {
        uint64_t ino;       /* inode of the directory the fds belong to; 0 = none */
        int dir;            /* the directory itself; -1: not open */
        int fd[TOP_FILES];  /* -1: not open */
} TopFileCache;

typedef struct TopCgroup {
        char *path;        /* "/" or "/a/b", relative to the hierarchy roots */
        const char *name;  /* last component ("/" for the root), points into path */
        unsigned depth;    /* 0 for the root */
        size_t parent;     /* index in TopSnapshot.cgroups; SIZE_MAX for the root */
        bool in_v2, in_v1; /* the directory exists in that hierarchy */
        bool mem_v1;       /* current/high/max come from cgroup v1 files */
        uint64_t current, high, max;   /* bytes, TOP_NONE or TOP_UNLIMITED */
        bool has_psi;      /* memory.pressure was read */
        uint32_t some_avg10, full_avg10; /* hundredths of a percent, as PsiLine (kernfile.h) */
        bool has_cpu_psi, has_io_psi;    /* cpu.pressure, io.pressure were read */
        uint32_t cpu_some_avg10, io_some_avg10; /* their "some" avg10, hundredths of a percent */
        uint64_t ev[_TOP_EV_MAX];      /* counters as read, TOP_NONE if missing */
        uint64_t ev_base[_TOP_EV_MAX]; /* the counters when top first saw them */
        uint64_t emin, elow;           /* from the daemon's GetProtection, TOP_NONE if not asked/known */
        /* The longest active pressure episode of the daemon's registrations on this cgroup, from
         * GetStatus (top.c): ep_since_us is TOP_NONE when there is none. */
        uint64_t ep_since_us;          /* CLOCK_MONOTONIC of its first event, µs (the daemon's clock) */
        uint64_t ep_duration_us;       /* how long it had lasted at the refresh */
        uint64_t ep_events;            /* pressure events in it so far */
        const char *ep_source;         /* "psi" or "vmpressure" (static strings) */
        const char *ep_resource;       /* "memory", "cpu" or "io" (static strings) */
        /* The proactive reclaim controller's entry for this cgroup, from GetStatus (top.c). */
        bool has_reclaim;              /* the controller holds the cgroup */
        const char *rc_state;          /* "probing", "backing-off", "at-floor", "unsupported" or
                                        * "unknown" (static strings) */
        uint64_t rc_reclaimed, rc_last_step, rc_floor; /* bytes */
        bool rc_has_stall, rc_has_io_stall;            /* the daemon had the figures */
        double rc_stall, rc_io_stall;  /* memory and io some stall over its last interval, percent */
        /* The latest kill of the last minute on this cgroup, or below it in a cgroup not in the
         * snapshot (systemd-oomd's kills remove scopes), from top's kills subscription
         * (top-kills.c): kill_at_us is TOP_NONE when there is none. */
        uint64_t kill_at_us;           /* CLOCK_MONOTONIC of the latest, µs (the daemon's clock) */
        uint64_t kill_time_us;         /* its CLOCK_REALTIME, µs */
        uint64_t kills;                /* kills of the last minute here and in such cgroups below */
        const char *kill_cgroup, *kill_by, *kill_reason; /* of the latest; valid until the next refresh */
        bool changed;      /* a shown value differs from the previous refresh */
        TopFileCache files[2]; /* [0] cgroup2, [1] v1; taken over by the next refresh */
        size_t previous;   /* index of the same cgroup in the previous refresh, SIZE_MAX if new */
} TopCgroup;

typedef struct TopSnapshot {
        TopCgroup *cgroups; /* parents before children, siblings by name */
        size_t n_cgroups;
} TopSnapshot;

/* Where top reads cgroups from; either may be NULL. */
typedef struct TopRoots {
        char *v2;        /* a cgroup2 hierarchy (or a fake tree laid out like one) */
        char *v1_memory; /* a cgroup v1 hierarchy with the memory controller */
} TopRoots;

typedef struct TopSystem {
        bool has_psi;
        uint32_t some_avg10, some_avg60, full_avg10, full_avg60; /* hundredths of a percent */
        bool has_cpu_psi, has_io_psi;                  /* /proc/pressure/cpu, io were read */
        uint32_t cpu_some_avg10, io_some_avg10;        /* hundredths of a percent */
        uint64_t mem_available, mem_total; /* bytes, TOP_NONE if unknown */
} TopSystem;

/*
 * top_roots_discover - find the cgroup2 mount and the cgroup v1 memory
 * mount in the text of /proc/self/mountinfo, with mountinfo_parse().
 * @mountinfo: the file's contents
 * @ret: filled with malloc'ed paths (NULL where there is no such mount)
 *
 * Returns 0 or -ENOMEM; @ret is untouched on failure.
 */
int top_roots_discover(const char *mountinfo, TopRoots *ret);

/*
 * top_roots_from_mountinfo - top_roots_discover() on the text of this
 * process's /proc/self/mountinfo. Returns 0 or a negative errno.
 */
int top_roots_from_mountinfo(TopRoots *roots);

/* top_roots_done - free the paths of @roots and reset it; NULL is fine. */
void top_roots_done(TopRoots *roots);

/*
 * top_snapshot_read - read every cgroup below @subtree in both hierarchies.
 * @roots: the hierarchy roots
 * @subtree: "/" or a path such as "/system.slice"
 * @previous: the previous refresh (baselines of the event counters and the
 *            change marks are carried over), or NULL for the first
 * @ret: the new snapshot; free it with top_snapshot_done()
 *
 * A cgroup that disappears while it is read is left out, or keeps the
 * values read before it went. The files read stay open: the next refresh
 * takes them over from @previous and only pread()s them, as long as the
 * directory's inode is the same. Returns 0, -ENOENT if @subtree exists in
 * neither hierarchy, or another negative errno.
 */
int top_snapshot_read(const TopRoots *roots, const char *subtree, const TopSnapshot *previous,
                      TopSnapshot *ret);

/* top_snapshot_done - close the files a snapshot holds, free it and reset it; NULL is fine. */
void top_snapshot_done(TopSnapshot *snapshot);

/*
 * top_set_fd_budget - how many files snapshots may keep open in all (the
 * rest are opened and closed at every refresh). Default 0.
 */
void top_set_fd_budget(unsigned budget);

/*
 * top_snapshot_find - the cgroup with @path, by binary search over the
 * snapshot's order; NULL if absent.
 */
TopCgroup *top_snapshot_find(const TopSnapshot *snapshot, const char *path);

/*
 * top_system_read - system-wide PSI (/proc/pressure/memory, and "some"
 * avg10 of /proc/pressure/cpu and io) and MemAvailable/MemTotal
 * (/proc/meminfo). Missing files leave fields unset.
 */
void top_system_read(TopSystem *ret);

/* top_event_delta - counter @i of @cg since top first saw it; TOP_NONE if unknown. */
uint64_t top_event_delta(const TopCgroup *cg, unsigned i);
