/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: systemd-oomd's configuration text and time spans
 * (daemon/model/oomd-conf.c). What is taken is a value oomd would take: 0,
 * or at least 1 s and finite; every time span that parses parses again the
 * same with blanks around it.
 */
#include <stdlib.h>

#include "fuzz.h"
#include "oomd-conf.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size), *padded = NULL;
        OomdConf conf = {};
        uint64_t a, b;

        if (!text)
                return 0;
        oomd_conf_apply(&conf, text);
        if (conf.prekill_timeout_usec != 0 &&
            (conf.prekill_timeout_usec < USEC_PER_SEC || conf.prekill_timeout_usec == USEC_INFINITY))
                abort();
        if (oomd_timespan_parse(text, &a) < 0)
                return 0;
        if (asprintf(&padded, "  %s \t", text) < 0)
                return 0;
        if (oomd_timespan_parse(padded, &b) < 0 || a != b)
                abort();
        return 0;
}
