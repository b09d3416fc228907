/* SPDX-License-Identifier: MIT */
/* The choice of the source that serves a Subscribe request. */
#include "source-choice.h"
#include "util.h"

/*
 * The cgroup must be in a hierarchy that is in use: SourceUnavailable
 * (@missing) without the hierarchy, the mapped open error without the
 * cgroup.
 */
static int need_hierarchy(bool has, int in, const char *source, const char *missing, const char *cgroup,
                          VarlinkError *e) {
        if (!has)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, source, missing);
        if (in < 0)
                return varlink_error_from_errno(e, in, source, cgroup, NULL);
        return 0;
}

/* "level" for cpu and io: PSI or nothing, as vmpressure knows only memory. */
static int choose_level_psi_only(const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e) {
        char reason[128];

        if (f->system && !f->psi_system) {
                snprintf(reason, sizeof(reason), "%s is not available (PSI disabled?)",
                         resource_proc_pressure_file(f->resource));
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        if (!f->system && f->has_v2 && (f->in_v2 == -ELOOP || f->in_v2 == -EXDEV))
                return varlink_error_invalid_cgroup_path(e, f->in_v2, cgroup);
        if (!f->system && !(f->has_v2 && f->in_v2 == 0)) {
                if (f->has_v2 && f->in_v2 != -ENOENT)
                        return varlink_error_from_errno(e, f->in_v2, "psi", cgroup, NULL);
                if (f->has_v2 && !(f->has_v1 && f->in_v1 == 0))
                        return varlink_error_no_such_cgroup(e, -ENOENT, cgroup);
                snprintf(reason, sizeof(reason), "%s pressure needs the cgroup in a cgroup2 hierarchy",
                         resource_to_string(f->resource));
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        if (!f->system && !f->v2_pressure) {
                snprintf(reason, sizeof(reason), "the cgroup has no %s (PSI disabled?)",
                         resource_pressure_file(f->resource));
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }
        *ret = SOURCE_PSI;
        return 0;
}

static int choose_level(const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e) {
        bool in_v2 = f->has_v2 && f->in_v2 == 0;

        if (f->resource != RESOURCE_MEMORY)
                return choose_level_psi_only(cgroup, f, ret, e);

        if (f->system) {
                if (f->psi_system)
                        *ret = SOURCE_PSI;
                else if (f->has_v1)
                        *ret = SOURCE_VMPRESSURE;
                else
                        return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi",
                                                                "/proc/pressure/memory is not available and there is no cgroup v1 memory hierarchy");
                return 0;
        }
        if (f->has_v2 && (f->in_v2 == -ELOOP || f->in_v2 == -EXDEV))
                return varlink_error_invalid_cgroup_path(e, f->in_v2, cgroup);
        if (in_v2 && f->v2_pressure) {
                *ret = SOURCE_PSI;
                return 0;
        }
        if (!f->has_v1) {
                if (in_v2)
                        return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi",
                                                                "the cgroup has no memory.pressure (PSI disabled?) and there is no cgroup v1 memory hierarchy");
                return varlink_error_no_such_cgroup(e, -ENOENT, cgroup);
        }
        if (f->in_v1 == -ENOENT && in_v2)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi",
                                                        "the cgroup has no memory.pressure (PSI disabled?) and is not in the cgroup v1 memory hierarchy");
        if (f->in_v1 < 0)
                return varlink_error_from_errno(e, f->in_v1, "vmpressure", cgroup, NULL);
        *ret = SOURCE_VMPRESSURE;
        return 0;
}

static int choose_v2_only(SourceType type, const char *cgroup, const CgroupFacts *f, SourceType *ret,
                          VarlinkError *e) {
        const char *name = source_type_to_string(type);
        int k;

        if (f->has_v2 && f->in_v2 == -ENOENT && f->has_v1 && f->in_v1 == 0)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, name,
                                                        "the cgroup exists only in the cgroup v1 hierarchy; this source needs cgroup v2");
        k = need_hierarchy(f->has_v2, f->in_v2, name, "there is no cgroup2 hierarchy", cgroup, e);
        if (k < 0)
                return k;
        /* kills needs no file: without memory.events it hears systemd-oomd only. */
        if (type != SOURCE_KILLS && !(type == SOURCE_PROTECTION ? f->v2_current : f->v2_events))
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, name,
                                                        "the cgroup has no memory controller files (memory.current/memory.events)");
        *ret = type;
        return 0;
}

int source_choose(Selector selector, const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e) {
        int k;

        switch (selector) {
        case SELECTOR_LEVEL:
                return choose_level(cgroup, f, ret, e);
        case SELECTOR_PSI:
                k = f->system ? 0 : need_hierarchy(f->has_v2, f->in_v2, "psi", "there is no cgroup2 hierarchy",
                                                   cgroup, e);
                if (k < 0)
                        return k;
                *ret = SOURCE_PSI;
                return 0;
        case SELECTOR_VMPRESSURE:
                k = need_hierarchy(f->has_v1, f->in_v1, "vmpressure", "there is no cgroup v1 memory hierarchy",
                                   cgroup, e);
                if (k < 0)
                        return k;
                *ret = SOURCE_VMPRESSURE;
                return 0;
        case SELECTOR_MEMORY_EVENTS:
                return choose_v2_only(SOURCE_MEMORY_EVENTS, cgroup, f, ret, e);
        case SELECTOR_PROTECTION:
                return choose_v2_only(SOURCE_PROTECTION, cgroup, f, ret, e);
        case SELECTOR_KILLS:
                if (f->system) {
                        *ret = SOURCE_KILLS;
                        return 0;
                }
                return choose_v2_only(SOURCE_KILLS, cgroup, f, ret, e);
        }
        return -EINVAL;
}
