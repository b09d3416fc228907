/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: PSI trigger specs and durations. Every accepted trigger is
 * checked, rounded and formatted; the invariants of the rounding are
 * asserted.
 */
#include <inttypes.h>

#include "fuzz.h"
#include "trigger.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        PsiTrigger t, rounded;
        const char *reason = NULL;
        PsiTrigger back;
        char buf[PSI_TRIGGER_FORMAT_MAX];
        uint64_t d;

        if (!text)
                return 0;
        (void) parse_duration(text, 1, UINT64_MAX, &d);
        (void) parse_duration(text, USEC_PER_SEC, UINT64_MAX, &d);
        if (psi_trigger_parse(text, &t) < 0)
                return 0;

        if (psi_trigger_check(&t, &reason) < 0 && !reason)
                abort();
        if (psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, buf, sizeof(buf)) < 0)
                abort();
        /* The config text reads back as the same trigger. */
        if (psi_trigger_format(&t, PSI_TRIGGER_FORMAT_CONFIG, buf, sizeof(buf)) < 0 ||
            psi_trigger_parse(buf, &back) < 0 || !psi_trigger_equal(&back, &t))
                abort();

        (void) psi_trigger_round_unprivileged(&t, &rounded);
        if (psi_trigger_check(&t, NULL) >= 0) {
                /* A valid trigger rounds to a valid one with a 2 s multiple window. */
                if (rounded.window_us % PSI_UNPRIV_WINDOW_US != 0 || rounded.window_us < t.window_us)
                        abort();
                if (psi_trigger_check(&rounded, NULL) < 0)
                        abort();
                if (rounded.threshold_us < t.threshold_us)
                        abort();
        }
        return 0;
}
