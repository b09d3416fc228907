/* SPDX-License-Identifier: MIT */
/* Fuzz target: mountinfo_parse() on arbitrary /proc/self/mountinfo text. */
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
        return 0;
}
