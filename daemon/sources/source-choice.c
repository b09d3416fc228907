/* SPDX-License-Identifier: MIT */
/* The choice of the source that serves a Subscribe request. */
#include "source-choice.h"
#include "util.h"

/*
 * The cgroup must be in a hierarchy that is in use: SourceUnavailable
 * (@missing) without the hierarchy, the failed open of the cgroup
 * without the cgroup.
 */
static int need_hierarchy(bool has, int in, const char *source, const char *missing, SourceFailure *e) {
        if (!has)
                return source_failure_unavailable(e, -EOPNOTSUPP, source, missing);
        if (in < 0)
                return source_failure_open(e, in, source, NULL);
        return 0;
}

int source_error_v1_only(SourceFailure *e, const char *source, const char *v2_root, const char *v1_root) {
        char reason[512];

        snprintf(reason, sizeof(reason),
                 "the cgroup exists only in the cgroup v1 memory hierarchy (%s), and %s needs it in the "
                 "cgroup2 hierarchy (%s)", strna(v1_root), source, strna(v2_root));
        return source_failure_unavailable(e, -EOPNOTSUPP, source, reason);
}

int source_error_v2_only(SourceFailure *e, const char *v2_root, const char *v1_root) {
        char reason[512];

        snprintf(reason, sizeof(reason),
                 "the cgroup exists only in the cgroup2 hierarchy (%s), and vmpressure needs it in the "
                 "cgroup v1 memory hierarchy (%s)", strna(v2_root), strna(v1_root));
        return source_failure_unavailable(e, -EOPNOTSUPP, "vmpressure", reason);
}

/* Opening the cgroup failed for its path: a symlink, an escape, or a file, not a directory. */
static bool path_invalid(int in) {
        return in == -ELOOP || in == -EXDEV || in == -ENOTDIR;
}

/* In the v1 memory hierarchy, not in the cgroup2 one (which is there). */
static bool only_in_v1(const CgroupFacts *f) {
        return f->has_v2 && f->in_v2 == -ENOENT && f->has_v1 && f->in_v1 == 0;
}

/* "level" for cpu and io: PSI or nothing, as vmpressure knows only memory. */
static int choose_level_psi_only(const CgroupFacts *f, SourceType *ret, SourceFailure *e) {
        char reason[128];

        if (f->system && !f->psi_system) {
                snprintf(reason, sizeof(reason), "%s is not available (PSI disabled?)",
                         resource_proc_pressure_file(f->resource));
                return source_failure_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        if (!f->system && f->has_v2 && path_invalid(f->in_v2))
                return source_failure_invalid_cgroup_path(e, f->in_v2);
        if (!f->system && !(f->has_v2 && f->in_v2 == 0)) {
                if (f->has_v2 && f->in_v2 != -ENOENT)
                        return source_failure_open(e, f->in_v2, "psi", NULL);
                if (only_in_v1(f))
                        return source_error_v1_only(e, "psi", f->v2_root, f->v1_root);
                if (f->has_v2)
                        return source_failure_no_such_cgroup(e, -ENOENT);
                snprintf(reason, sizeof(reason), "%s pressure needs the cgroup in a cgroup2 hierarchy",
                         resource_to_string(f->resource));
                return source_failure_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        if (!f->system && !f->v2_pressure) {
                snprintf(reason, sizeof(reason), "the cgroup has no %s (PSI disabled?)",
                         resource_pressure_file(f->resource));
                return source_failure_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        *ret = SOURCE_PSI;
        return 0;
}

static int choose_level(const CgroupFacts *f, SourceType *ret, SourceFailure *e) {
        bool in_v2 = f->has_v2 && f->in_v2 == 0;

        if (f->resource != RESOURCE_MEMORY)
                return choose_level_psi_only(f, ret, e);

        if (f->system) {
                if (f->psi_system)
                        *ret = SOURCE_PSI;
                else if (f->has_v1)
                        *ret = SOURCE_VMPRESSURE;
                else
                        return source_failure_unavailable(e, -EOPNOTSUPP, "psi",
                                                                "/proc/pressure/memory is not available and there is no cgroup v1 memory hierarchy");
                return 0;
        }
        if (f->has_v2 && path_invalid(f->in_v2))
                return source_failure_invalid_cgroup_path(e, f->in_v2);
        if (in_v2 && f->v2_pressure) {
                *ret = SOURCE_PSI;
                return 0;
        }
        if (!f->has_v1) {
                if (in_v2)
                        return source_failure_unavailable(e, -EOPNOTSUPP, "psi",
                                                                "the cgroup has no memory.pressure (PSI disabled?) and there is no cgroup v1 memory hierarchy");
                return source_failure_no_such_cgroup(e, -ENOENT);
        }
        if (f->in_v1 == -ENOENT && in_v2)
                return source_failure_unavailable(e, -EOPNOTSUPP, "psi",
                                                        "the cgroup has no memory.pressure (PSI disabled?) and is not in the cgroup v1 memory hierarchy");
        if (f->in_v1 < 0)
                return source_failure_open(e, f->in_v1, "vmpressure", NULL);
        *ret = SOURCE_VMPRESSURE;
        return 0;
}

static int choose_v2_only(SourceType type, const CgroupFacts *f, SourceType *ret, SourceFailure *e) {
        const char *name = source_type_to_string(type);
        int k;

        if (only_in_v1(f))
                return source_error_v1_only(e, name, f->v2_root, f->v1_root);
        k = need_hierarchy(f->has_v2, f->in_v2, name, "there is no cgroup2 hierarchy", e);
        if (k < 0)
                return k;
        /* kills needs no file: without memory.events it hears systemd-oomd only. */
        if (type != SOURCE_KILLS && !(type == SOURCE_PROTECTION ? f->v2_current : f->v2_events))
                return source_failure_unavailable(e, -EOPNOTSUPP, name, SOURCE_REASON_NO_MEMORY_CONTROLLER);
        *ret = type;
        return 0;
}

/*
 * The path names a file (or leads out of the hierarchy) in one hierarchy
 * and no cgroup in the other: invalid whatever the selector. Sets *@ret_error.
 */
static bool path_invalid_everywhere(const CgroupFacts *f, int *ret_error) {
        bool in_v2 = f->has_v2 && f->in_v2 == 0, in_v1 = f->has_v1 && f->in_v1 == 0;

        if (f->system)
                return false;
        if (f->has_v2 && path_invalid(f->in_v2) && !in_v1)
                *ret_error = f->in_v2;
        else if (f->has_v1 && path_invalid(f->in_v1) && !in_v2)
                *ret_error = f->in_v1;
        else
                return false;
        return true;
}

int source_choose(Selector selector, const CgroupFacts *f, SourceType *ret, SourceFailure *e) {
        int k;

        if (path_invalid_everywhere(f, &k))
                return source_failure_invalid_cgroup_path(e, k);
        switch (selector) {
        case SELECTOR_LEVEL:
        case SELECTOR_LEVELS: /* each of its three levels as "level" */
                return choose_level(f, ret, e);
        case SELECTOR_PSI:
                if (!f->system && only_in_v1(f))
                        return source_error_v1_only(e, "psi", f->v2_root, f->v1_root);
                k = f->system ? 0 : need_hierarchy(f->has_v2, f->in_v2, "psi", "there is no cgroup2 hierarchy", e);
                if (k < 0)
                        return k;
                *ret = SOURCE_PSI;
                return 0;
        case SELECTOR_VMPRESSURE:
                if (f->has_v1 && f->in_v1 == -ENOENT && f->has_v2 && f->in_v2 == 0)
                        return source_error_v2_only(e, f->v2_root, f->v1_root);
                k = need_hierarchy(f->has_v1, f->in_v1, "vmpressure", "there is no cgroup v1 memory hierarchy", e);
                if (k < 0)
                        return k;
                *ret = SOURCE_VMPRESSURE;
                return 0;
        case SELECTOR_MEMORY_EVENTS:
                return choose_v2_only(SOURCE_MEMORY_EVENTS, f, ret, e);
        case SELECTOR_PROTECTION:
                return choose_v2_only(SOURCE_PROTECTION, f, ret, e);
        case SELECTOR_KILLS:
                if (f->system) {
                        *ret = SOURCE_KILLS;
                        return 0;
                }
                return choose_v2_only(SOURCE_KILLS, f, ret, e);
        }
        return -EINVAL;
}
