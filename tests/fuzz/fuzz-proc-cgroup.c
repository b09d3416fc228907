/* SPDX-License-Identifier: MIT */
/* Fuzz target: proc_cgroup_parse() on arbitrary /proc/PID/cgroup text. */
#include "fuzz.h"
#include "kernfile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        char *v2 = NULL, *v1 = NULL;

        if (!text)
                return 0;
        if (proc_cgroup_parse(text, &v2, &v1) >= 0) {
                /* Paths found are always absolute. */
                if ((v2 && v2[0] != '/') || (v1 && v1[0] != '/'))
                        abort();
        }
        free(v2);
        free(v1);
        return 0;
}
