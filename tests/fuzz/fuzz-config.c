/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: configuration text. An accepted configuration must dump to
 * text that reads back to the same dump; a rejected one must come with a
 * message.
 */
#include "config.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size), *error = NULL, *dump = NULL, *dump2 = NULL;
        Config *c = NULL, *d = NULL;
        int r;

        if (!text)
                return 0;
        c = config_new_default();
        if (!c)
                return 0;

        r = config_parse_string(c, "fuzz.conf", text, &error);
        if (r < 0) {
                if (r == -EINVAL && !error)
                        abort();
                config_free(c);
                return 0;
        }

        dump = config_format(c);
        d = config_new_default();
        if (dump && d) {
                if (config_parse_string(d, "dump", dump, NULL) < 0)
                        abort();
                dump2 = config_format(d);
                if (dump2 && !streq(dump, dump2))
                        abort();
        }
        config_free(c);
        config_free(d);
        return 0;
}
