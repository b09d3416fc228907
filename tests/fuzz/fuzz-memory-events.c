/* SPDX-License-Identifier: MIT */
/* Fuzz target: memory_events_parse(), parse_memory_value() and flat_keyed_value(). */
#include "fuzz.h"
#include "kernfile.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_text(data, size);
        MemoryEvents e;
        uint64_t v;
        int r;

        if (!text)
                return 0;
        if (memory_events_parse(text, &e) >= 0) {
                if (e.present >> _MEMORY_EVENT_MAX)
                        abort();
                for (unsigned k = 0; k < _MEMORY_EVENT_MAX; k++)
                        if (!(e.present & (1u << k)) && e.value[k] != 0)
                                abort();
        }
        (void) parse_memory_value(text, &v);
        /* The same text as cgroup v1's memory.oom_control: other lines are never looked at. */
        r = flat_keyed_value(text, "oom_kill", &v);
        if (r < 0 && r != -ENOENT && r != -EBADMSG)
                abort();
        return 0;
}
