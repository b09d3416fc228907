/* SPDX-License-Identifier: MIT */
/*
 * Parsers for the kernel files pressured reads: PSI pressure files,
 * memory.events, memory.current-style single values, flat-keyed files such
 * as memory.oom_control, /proc/self/mountinfo
 * and /proc/PID/cgroup. They take text, never paths, so tests and fuzzers
 * feed them fixtures; they never crash on truncated or garbage input.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct PsiLine {
        /* Averages in hundredths of a percent: "avg10=1.23" -> 123. */
        uint32_t avg10, avg60, avg300;
        uint64_t total_us;
} PsiLine;

typedef struct PsiStats {
        PsiLine some;
        PsiLine full;
        bool has_some;
        bool has_full;
} PsiStats;

/*
 * psi_stats_parse - parse the contents of a pressure file:
 *   some avg10=0.00 avg60=0.00 avg300=0.00 total=0
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
 * At least the "some" line must be present and well formed (-EBADMSG).
 */
int psi_stats_parse(const char *text, PsiStats *ret);

/* Largest pressure or memory.events file read. */
#define KERNFILE_READ_MAX 4096

/*
 * psi_stats_read - read an open pressure file from its start and parse it.
 * Returns 0, -EBADMSG, or the negative errno of reading.
 */
int psi_stats_read(int fd, PsiStats *ret);

typedef enum MemoryEventKey {
        MEMORY_EVENT_LOW,
        MEMORY_EVENT_HIGH,
        MEMORY_EVENT_MAX,
        MEMORY_EVENT_OOM,
        MEMORY_EVENT_OOM_KILL,
        MEMORY_EVENT_OOM_GROUP_KILL,
        _MEMORY_EVENT_MAX,
} MemoryEventKey;

typedef struct MemoryEvents {
        uint64_t value[_MEMORY_EVENT_MAX];
        unsigned present; /* bit (1u << key) set for each key found */
} MemoryEvents;

const char *memory_event_key_to_string(MemoryEventKey k);

/*
 * memory_events_parse - parse "low 0\nhigh 3\n..." (memory.events). Unknown
 * keys are ignored (newer kernels add some); a malformed line is -EBADMSG.
 */
int memory_events_parse(const char *text, MemoryEvents *ret);

/* memory_events_read - read an open memory.events file from its start and parse it. */
int memory_events_read(int fd, MemoryEvents *ret);

/*
 * parse_memory_value - parse a memory.min / memory.low / memory.current
 * file: a decimal byte count, or "max" (reported as UINT64_MAX). Trailing
 * newline allowed. -EBADMSG otherwise.
 */
int parse_memory_value(const char *text, uint64_t *ret);

/*
 * flat_keyed_value - the value of @key in a flat-keyed file ("KEY VALUE"
 * lines, such as cgroup v1's memory.oom_control). Only @key's line is
 * checked. Returns 0, -ENOENT if @key is absent, -EBADMSG if its value is
 * not a decimal uint64.
 */
int flat_keyed_value(const char *text, const char *key, uint64_t *ret);

/* Largest /proc/self/mountinfo read (thousands of mounts in containers). */
#define MOUNTINFO_READ_MAX (16u << 20)

typedef struct CgroupMounts {
        char *v2_root;          /* mount point of the cgroup2 fs, or NULL */
        char *v1_memory_root;   /* mount point of the v1 "memory" controller, or NULL */
        bool v2_recursive_prot; /* cgroup2 mounted with memory_recursiveprot */
} CgroupMounts;

/*
 * mountinfo_parse - find the cgroup mounts in /proc/self/mountinfo text.
 * Handles pure v2 (/sys/fs/cgroup), hybrid (/sys/fs/cgroup/unified) and
 * v1 layouts; octal escapes (\040) in mount points are decoded. Only the
 * first mount of each kind whose root field is "/" counts. Returns 0 even
 * if nothing was found (fields NULL); -ENOMEM on allocation failure.
 */
int mountinfo_parse(const char *text, CgroupMounts *ret);
void cgroup_mounts_done(CgroupMounts *m);

/*
 * mountinfo_cgroup_ns_root - the root of a peer's cgroup namespace as its
 * mounts show it: among the cgroup2 mounts (@v1_memory false) or the v1
 * mounts with the memory controller (@v1_memory true) in the peer's
 * /proc/PID/mountinfo @text, the shallowest root field that is not "/"
 * and is @cgroup (the peer's own cgroup, canonical, as the reader sees
 * it) or one of its ancestors. A cgroup mount made inside a cgroup
 * namespace shows the namespace's root there, in the reader's view.
 * @ret: the root, canonical, or NULL if no mount qualifies
 *
 * Malformed lines and roots that are not valid cgroup paths are skipped.
 * Returns 0, -EBADMSG for NULL input or -ENOMEM.
 */
int mountinfo_cgroup_ns_root(const char *text, bool v1_memory, const char *cgroup, char **ret);

/*
 * proc_cgroup_parse - parse /proc/PID/cgroup: the v2 path ("0::/x") and the
 * v1 memory controller path ("N:memory:/y" or "N:...,memory,...:/y"). Either
 * output may be NULL if absent. Returns 0, -EBADMSG or -ENOMEM.
 */
int proc_cgroup_parse(const char *text, char **ret_v2_path, char **ret_v1_memory_path);

/* The cgroups below one that v1_oom_kills_subtree() reads at most, and how deep. */
#define V1_OOM_SUBTREE_MAX 1024
#define V1_OOM_DEPTH_MAX 16

/**
 * v1_oom_kills_subtree - the kernel's OOM kills in a cgroup of the v1
 * memory hierarchy and below it: the sum of the oom_kill lines of their
 * memory.oom_control. v1 counts a kill only in the victim's own cgroup,
 * where cgroup2's memory.events adds it up the tree; the sum says the same
 * as memory.events would.
 * @dirfd: the cgroup's directory
 * @ret: the sum; at most V1_OOM_SUBTREE_MAX cgroups below it are
 *       read
 *
 * Returns 1; 0 if the cgroup's own memory.oom_control has no oom_kill
 * line (not a v1 memory cgroup, or a kernel before 4.13); or -ENOMEM. @ret
 * is untouched unless 1 is returned.
 */
int v1_oom_kills_subtree(int dirfd, uint64_t *ret);
