/* SPDX-License-Identifier: MIT */
/* Fuzz target: mountinfo_parse() and mountinfo_cgroup_ns_root() on arbitrary mountinfo text. */
#include "fuzz.h"
#include "kernfile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        CgroupMounts m = {};

        if (!text)
                return 0;
        if (mountinfo_parse(text, &m) >= 0) {
                /* Results are real strings no longer than the input. */
                if (m.v2_root && strlen(m.v2_root) > size)
                        abort();
                if (m.v1_memory_root && strlen(m.v1_memory_root) > size)
                        abort();
                if (!m.v2_root && m.v2_recursive_prot)
                        abort();
        }
        cgroup_mounts_done(&m);

        /* A peer's namespace root: an ancestor-or-self of its cgroup, or none. */
        for (int v1 = 0; v1 < 2; v1++) {
                _cleanup_free_ char *root = NULL;
                const char *cg = "/pod/ctr";

                if (mountinfo_cgroup_ns_root(text, v1, cg, &root) < 0)
                        continue;
                if (root && !(streq(root, "/pod") || streq(root, cg)))
                        abort();
        }
        return 0;
}
