/* SPDX-License-Identifier: MIT */
/*
 * Which cgroups /metrics reports on ([Metrics] Cgroups=), and reading them.
 *
 * Patterns. Cgroups= is a space-separated list of shell globs over cgroup
 * paths relative to the cgroup2 root: "/system.slice/ *.service" (without
 * the space), "/user.slice/user-*.slice", "/" for the root itself. A
 * pattern is matched one path component at a time with fnmatch(3), so
 * "*", "?" and "[...]" never match "/" (as fnmatch's FNM_PATHNAME and a
 * shell do) and a pattern only matches paths with as many components as it
 * has. Repeated and trailing slashes are ignored; "." and ".." components,
 * relative patterns and control characters are rejected.
 *
 * The walk. Starting at the root, a directory's subdirectories are listed
 * (getdents64, no stdio), sorted by name, and each is kept only while some
 * pattern's components so far match the path: a subtree that no pattern can
 * match is never opened and nothing deeper than the deepest pattern is
 * listed. Matches come out in that depth-first, name-sorted order. Per
 * matching cgroup, memory.pressure, io.pressure, cpu.pressure,
 * memory.events and memory.current are each opened relative to the
 * cgroup's directory fd and read with one read(). Nothing is kept between
 * walks.
 *
 * Hybrid hosts (cgroup_scrape_hybrid()). The v1 memory hierarchy gives a
 * cgroup what cgroup2 has not (a hybrid host's cgroup2 has no memory
 * controller): memory.usage_in_bytes as memory_current, and the kills of
 * memory.oom_control summed over its subtree (v1_oom_kills_subtree(), as
 * memory.events counts them) as oom_kills. cgroup2's walk reads them as it
 * reads each cgroup, from the same path in v1; then a walk of v1 reads the
 * cgroups only v1 has, and they join the others in walk order. A cgroup
 * is counted once, kept or left out.
 *
 * A weighed walk (systemd-report's List) also stops reading at the first
 * cgroup whose weight would go over a budget, in the walk order of both
 * hierarchies: it and every match after it are only counted, as beyond
 * MaxCgroups=.
 *
 * Errors. A cgroup removed during the walk (ENOENT, ENODEV, or none of its
 * files left to open) is skipped and takes no MaxCgroups= place; a
 * file that does not exist (no memory controller there) or a pressure file
 * the kernel refuses (EOPNOTSUPP: PSI off for that cgroup) leaves its
 * values out. Any other error leaves that value out and is counted in the
 * CgroupScrapeErrors the caller logs once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernfile.h"

/* Limits on [Metrics] Cgroups=: patterns, components per pattern, bytes per component. */
#define CGROUP_GLOBS_MAX 64
#define CGROUP_GLOB_DEPTH_MAX 32
#define CGROUP_GLOB_COMPONENT_MAX 255

typedef struct CgroupGlobs CgroupGlobs;

/*
 * cgroup_globs_parse - parse a Cgroups= value.
 * @text: space-separated patterns; NULL or only blanks: no pattern
 * @ret: the patterns (free with cgroup_globs_free())
 * @ret_reason: optional; on -EINVAL a static sentence saying what is wrong
 *
 * Returns 0, -EINVAL for a bad pattern or too many, or -ENOMEM.
 */
int cgroup_globs_parse(const char *text, CgroupGlobs **ret, const char **ret_reason);

/* cgroup_globs_free - NULL-safe, returns NULL. */
CgroupGlobs *cgroup_globs_free(CgroupGlobs *g);

/* cgroup_globs_count - the number of patterns. */
size_t cgroup_globs_count(const CgroupGlobs *g);


/* The resources whose PSI files are read, in the order of CgroupSample.psi. */
typedef enum CgroupResource {
        CGROUP_RESOURCE_MEMORY,
        CGROUP_RESOURCE_IO,
        CGROUP_RESOURCE_CPU,
        _CGROUP_RESOURCE_MAX,
} CgroupResource;

/* What was read of one matching cgroup. */
typedef struct CgroupSample {
        char *path;                             /* "/" or "/a/b" */
        PsiStats psi[_CGROUP_RESOURCE_MAX];
        bool has_psi[_CGROUP_RESOURCE_MAX];
        uint64_t oom_kills;                     /* memory.events oom_kill */
        bool has_oom_kills;
        MemoryEvents events;                    /* all of memory.events, for systemd-report */
        bool has_events;
        uint64_t memory_current;                /* bytes */
        bool has_memory_current;
        bool memory_v1;                         /* memory_current is the v1 memory hierarchy's */
} CgroupSample;

/* Read errors worth a log line, counted over one walk. */
typedef struct CgroupScrapeErrors {
        unsigned count;
        int first_error;                /* negative errno of the first one */
        char first_path[256];           /* its cgroup and file, possibly truncated */
} CgroupScrapeErrors;

typedef struct CgroupScrape {
        CgroupSample *samples;          /* the first max matches, in walk order */
        size_t n_samples;
        uint64_t omitted;               /* matches beyond max, not read */
        char *cut;                      /* the first of them in walk order, or NULL */
        unsigned dirs_listed;           /* directories whose entries were read (pruning shows here) */
        CgroupScrapeErrors errors;
} CgroupScrape;

/*
 * cgroup_scrape - walk the tree below @root_fd and read every matching cgroup.
 * @root_fd: a directory fd (O_PATH is fine) on the cgroup2 root or a fake tree
 * @g: the patterns; with none, nothing is read
 * @max: at most this many cgroups are read; further matches are only counted
 * @ret: the result; free with cgroup_scrape_done(), also after a failure
 *
 * Returns 0, or -ENOMEM (what was read so far stays in @ret), or the
 * negative errno of opening the root.
 */
int cgroup_scrape(int root_fd, const CgroupGlobs *g, size_t max, CgroupScrape *ret);

/*
 * A bound on what the cgroups kept weigh together (systemd-report's
 * metrics): each cgroup read is weighed; the first that would take the
 * sum over @budget is dropped, and it and every match after it are only
 * counted in "omitted" and not read, as those beyond @max are.
 */
typedef struct CgroupWeigh {
        size_t (*weight)(const CgroupSample *s, void *userdata);
        void *userdata;
        size_t budget;
} CgroupWeigh;

/*
 * cgroup_scrape_hybrid - cgroup_scrape() of the cgroup2 tree below
 * @root_fd with what the v1 memory hierarchy below @v1_root_fd knows of
 * the cgroups matching @g (see "Hybrid hosts" above), within @weigh's
 * budget (NULL: none). Either fd may be -1, for a hierarchy the host does
 * not have. At most @max samples, in walk order.
 *
 * Returns 0, -ENOMEM (what was read so far stays in @ret), or the negative
 * errno of opening a root.
 */
int cgroup_scrape_hybrid(int root_fd, int v1_root_fd, const CgroupGlobs *g, size_t max, const CgroupWeigh *weigh,
                         CgroupScrape *ret);

/* cgroup_scrape_done - free what cgroup_scrape() filled in and zero @s. */
void cgroup_scrape_done(CgroupScrape *s);
