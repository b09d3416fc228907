/* SPDX-License-Identifier: MIT */
/* Fuzz target: top_scan_protection(), pressurectl top's reader of GetProtection replies. */
#include "fuzz.h"
#include "top-scan.h"
#include "util.h"

static int on_node(const char *cgroup, uint64_t emin, uint64_t elow, void *userdata) {
        unsigned *n = userdata;

        /* The path is cut to the reader's buffer and always terminated. */
        if (strlen(cgroup) >= 4096)
                abort();
        (void) emin;
        (void) elow;
        /* Stop after a while, to exercise the early return. */
        return ++*n >= 1000 ? -ECANCELED : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        unsigned n = 0;
        int r;

        if (!text)
                return 0;
        r = top_scan_protection(text, on_node, &n);
        if (r < 0 && r != -EBADMSG && r != -ECANCELED)
                abort();
        if (r == 0 && n >= 1000)
                abort();
        return 0;
}
