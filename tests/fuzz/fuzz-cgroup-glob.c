/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: [Metrics] Cgroups= patterns. The input is the patterns
 * (anything after a first newline is ignored: older corpus files carry
 * cgroup paths there). Parsing either fails with a reason or yields at most
 * CGROUP_GLOBS_MAX patterns. A rejected value must come with its reason.
 */
#include "cgroup-glob.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        CgroupGlobs *g = NULL;
        const char *reason = NULL;
        char *rest;
        int r;

        if (!text)
                return 0;
        rest = strchr(text, '\n');
        if (rest)
                *rest = 0;

        r = cgroup_globs_parse(text, &g, &reason);
        if (r == -EINVAL && !reason)
                abort();
        if (r < 0)
                return 0;
        if (cgroup_globs_count(g) > CGROUP_GLOBS_MAX)
                abort();
        cgroup_globs_free(g);
        return 0;
}
