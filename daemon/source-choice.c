/* SPDX-License-Identifier: MIT */
/* The choice of the source that serves a Subscribe request. */
#include "source-choice.h"
#include "util.h"

static int choose_level(const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e) {
        bool in_v2 = f->has_v2 && f->in_v2 == 0;

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

        if (!f->has_v2)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, name, "there is no cgroup2 hierarchy");
        if (f->in_v2 == -ENOENT && f->has_v1 && f->in_v1 == 0)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, name,
                                                        "the cgroup exists only in the cgroup v1 hierarchy; this source needs cgroup v2");
        if (f->in_v2 < 0)
                return varlink_error_from_errno(e, f->in_v2, name, cgroup, NULL);
        if (!(type == SOURCE_PROTECTION ? f->v2_current : f->v2_events))
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, name,
                                                        "the cgroup has no memory controller files (memory.current/memory.events)");
        *ret = type;
        return 0;
}

int source_choose(Selector selector, const char *cgroup, const CgroupFacts *f, SourceType *ret, VarlinkError *e) {
        switch (selector) {
        case SELECTOR_LEVEL:
                return choose_level(cgroup, f, ret, e);
        case SELECTOR_PSI:
                if (!f->system) {
                        if (!f->has_v2)
                                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "psi",
                                                                        "there is no cgroup2 hierarchy");
                        if (f->in_v2 < 0)
                                return varlink_error_from_errno(e, f->in_v2, "psi", cgroup, NULL);
                }
                *ret = SOURCE_PSI;
                return 0;
        case SELECTOR_VMPRESSURE:
                if (!f->has_v1)
                        return varlink_error_source_unavailable(e, -EOPNOTSUPP, "vmpressure",
                                                                "there is no cgroup v1 memory hierarchy");
                if (f->in_v1 < 0)
                        return varlink_error_from_errno(e, f->in_v1, "vmpressure", cgroup, NULL);
                *ret = SOURCE_VMPRESSURE;
                return 0;
        case SELECTOR_MEMORY_EVENTS:
                return choose_v2_only(SOURCE_MEMORY_EVENTS, cgroup, f, ret, e);
        case SELECTOR_PROTECTION:
                return choose_v2_only(SOURCE_PROTECTION, cgroup, f, ret, e);
        }
        return -EINVAL;
}
