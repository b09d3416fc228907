/* SPDX-License-Identifier: MIT */
/* Fuzz target: psi_stats_parse() on arbitrary pressure-file text. */
#include "fuzz.h"
#include "kernfile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        PsiStats s;

        if (!text)
                return 0;
        if (psi_stats_parse(text, &s) >= 0) {
                /* A success always has the some line; full is optional. */
                if (!s.has_some)
                        abort();
                if (!s.has_full && (s.full.avg10 | s.full.avg60 | s.full.avg300 | s.full.total_us))
                        abort();
        }
        return 0;
}
