/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what libpressure makes of a daemon's JSON, as an event
 * (level events and every other kind) and as GetHeadroom's answer. Every
 * getter is called on what parses; the level of a level event is one of
 * the four, and a figure is either there or -ENODATA.
 */
#include <errno.h>

#include <jansson.h>

#include "fuzz.h"
#include "pressure-event.h"

static void check_figure(int r) {
        if (r != 0 && r != -ENODATA)
                abort();
}

static void fuzz_event(json_t *v) {
        pressure_event e;
        uint64_t x;

        if (event_parse(v, &e) < 0)
                return;
        if (!pressure_event_get_cgroup(&e) || !pressure_event_kind_to_string(pressure_event_get_kind(&e)))
                abort();
        check_figure(pressure_event_get_headroom_bytes(&e, &x));
        check_figure(pressure_event_get_reclaim_target_bytes(&e, &x));
        if (pressure_event_get_kind(&e) == PRESSURE_EVENT_LEVEL &&
            pressure_event_get_level(&e) > PRESSURE_LEVEL_CRITICAL)
                abort();
        if (pressure_event_get_kind(&e) != PRESSURE_EVENT_LEVEL &&
            pressure_event_get_headroom_bytes(&e, &x) != -ENODATA)
                abort();
        (void) pressure_event_get_trigger(&e);
        (void) pressure_event_get_episode(&e);
        (void) pressure_event_get_protection_node(&e);
        (void) pressure_event_get_killed_by(&e);
}

static void fuzz_headroom(json_t *v) {
        pressure_headroom *h = NULL;
        uint64_t x;

        if (headroom_new(json_incref(v), &h) < 0)
                return;
        (void) pressure_headroom_get_usage_bytes(h);
        check_figure(pressure_headroom_get_limit_bytes(h, &x));
        check_figure(pressure_headroom_get_headroom_bytes(h, &x));
        check_figure(pressure_headroom_get_reclaim_target_bytes(h, &x));
        (void) pressure_headroom_get_limiting_cgroup(h);
        if (!pressure_headroom_get_json(h))
                abort();
        pressure_headroom_unref(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *v;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        v = json_loadb((const char *) data, size, JSON_DECODE_ANY, NULL);
        if (!v)
                return 0;
        fuzz_event(v);
        fuzz_headroom(v);
        json_decref(v);
        return 0;
}
