/* SPDX-License-Identifier: MIT */
/*
 * The event builders produce the shapes io.pressured.varlink declares:
 * the right "kind", the fields each kind carries and nothing else, and a
 * shared body that a subscriber's prefix turns into one valid message.
 */
#include "event.h"
#include "tests.h"
#include "util.h"

/* @o has exactly the keys of the NULL-terminated @keys. */
static void check_keys(json_t *o, const char *const *keys) {
        size_t n = 0;

        ASSERT_TRUE(json_is_object(o));
        for (; keys[n]; n++)
                if (!json_object_get(o, keys[n]))
                        TEST_FAIL("event lacks \"%s\"", keys[n]);
        ASSERT_EQ(json_object_size(o), n);
}

#define CHECK_KEYS(o, ...)                                                      \
        do {                                                                    \
                static const char *const _keys[] = { __VA_ARGS__, NULL };       \
                check_keys(o, _keys);                                           \
        } while (0)

static void test_shapes(void) {
        MemoryEvents now = { .present = 1u << MEMORY_EVENT_OOM, .value = { [MEMORY_EVENT_OOM] = 3 } };
        MemoryEvents delta = { .present = 1u << MEMORY_EVENT_OOM, .value = { [MEMORY_EVENT_OOM] = 1 } };
        PsiStats st = { .has_some = true, .some = { .avg10 = 150, .total_us = 42 } };
        EventTrigger psi = { .type = SOURCE_PSI, .psi = { PSI_STALL_SOME, 150000, 2000000 }, .level = LEVEL_MEDIUM };
        EventTrigger vm = { .type = SOURCE_VMPRESSURE, .vm_level = LEVEL_LOW, .vm_mode = VMPRESSURE_MODE_LOCAL,
                            .level = _LEVEL_INVALID };
        json_t *o, *t;

        t = event_trigger_new(&psi);
        CHECK_KEYS(t, "psi", "level");
        CHECK_KEYS(json_object_get(t, "psi"), "stall", "threshold_us", "window_us");
        ASSERT_STREQ(json_string_value(json_object_get(t, "level")), "medium");
        o = event_subscribed_new("/a", SOURCE_PSI, t, true, "rounded", NULL);
        CHECK_KEYS(o, "kind", "cgroup", "source", "trigger", "adjusted", "adjusted_reason", "state");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "subscribed");
        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "psi");
        ASSERT_TRUE(json_is_true(json_object_get(o, "adjusted")));
        ASSERT_STREQ(json_string_value(json_object_get(o, "adjusted_reason")), "rounded");
        json_decref(o);
        /* Without a reason the key is left out. */
        o = event_subscribed_new("/a", SOURCE_PSI, event_trigger_new(&psi), false, NULL, NULL);
        CHECK_KEYS(o, "kind", "cgroup", "source", "trigger", "adjusted", "state");
        json_decref(o);

        t = event_trigger_new(&vm);
        CHECK_KEYS(t, "vmpressure");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(t, "vmpressure"), "mode")), "local");
        json_decref(t);

        o = event_pressure_new("/a", "psi", psi_stats_to_json(&st), 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "psi");
        CHECK_KEYS(json_object_get(o, "psi"), "some_avg10", "some_avg60", "some_avg300", "some_total_us");
        json_decref(o);
        o = event_pressure_new("/", "inject", NULL, 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "pressure");
        json_decref(o);

        o = event_memory_events_new("/a", &now, &delta, 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "counters", "delta");
        CHECK_KEYS(json_object_get(o, "counters"), "oom");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(o, "delta"), "oom")), 1);
        json_decref(o);

        o = event_protection_new("/a", "min", "none", json_object(), 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "state", "previous", "node");
        json_decref(o);
        o = event_protection_new("/a", "low", "min", NULL, 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "state", "previous");
        json_decref(o);
}

static void test_removed_and_body(void) {
        json_error_t err;
        size_t size;
        char *msg = event_removed_message("/a", 7, &size);
        json_t *o;
        Body *b;

        ASSERT_TRUE(msg);
        ASSERT_EQ(strlen(msg) + 1, size);
        o = json_loads(msg, 0, &err);
        CHECK_KEYS(o, "parameters");
        CHECK_KEYS(json_object_get(json_object_get(o, "parameters"), "event"), "kind", "cgroup", "seq");
        json_decref(o);
        free(msg);

        /* The body is the event without its opening brace, closed by "}}". */
        b = event_body_new(event_pressure_new("/a", "psi", NULL, 1, 2), 2);
        ASSERT_TRUE(b);
        ASSERT_EQ(b->flags & BODY_HAS_LEVEL, 0);
        ASSERT_EQ(b->size, strlen(b->data) + 1);
        {
                _cleanup_free_ char *whole = NULL;

                ASSERT_TRUE(asprintf(&whole, "{\"parameters\":{\"event\":{\"seq\":1,%s", b->data) > 0);
                o = json_loads(whole, 0, &err);
                CHECK_KEYS(json_object_get(json_object_get(o, "parameters"), "event"),
                           "seq", "kind", "cgroup", "source", "time_us", "monotonic_us");
                json_decref(o);
        }
        body_unref(b);
        ASSERT_TRUE(!event_body_new(NULL, 0));
}

static void test_episodes(void) {
        EpisodeRecord psi = { .start_us = 1000000, .end_us = 5000000, .events = 3, .peak = 125000 };
        EpisodeRecord vm = { .start_us = 10, .end_us = 0, .events = 9, .peak = LEVEL_CRITICAL + 1 };
        json_t *o;
        Body *b;

        /* cleared: PSI has the peak in percent, vmpressure the level; no count. */
        o = event_cleared_new("/a", SOURCE_PSI, &psi, 7, 5000000);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "duration_us", "events", "peak");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "cleared");
        ASSERT_EQ(json_integer_value(json_object_get(o, "duration_us")), 4000000);
        ASSERT_EQ(json_integer_value(json_object_get(o, "events")), 3);
        ASSERT_TRUE(json_real_value(json_object_get(o, "peak")) == 12.5);
        b = event_body_new(o, 5000000);
        ASSERT_TRUE(b);
        ASSERT_EQ(b->flags & BODY_NO_COUNT, BODY_NO_COUNT);
        body_unref(b);

        vm.end_us = 2000010;
        o = event_cleared_new("/a", SOURCE_VMPRESSURE, &vm, 7, 2000010);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "duration_us", "events", "peak_level");
        ASSERT_STREQ(json_string_value(json_object_get(o, "peak_level")), "critical");
        json_decref(o);

        /* An active episode: since when and how long so far. */
        vm.end_us = 0;
        o = event_episode_json(&vm, false, false, 1000010, 0);
        CHECK_KEYS(o, "active_since_us", "duration_us", "events", "peak_level");
        ASSERT_EQ(json_integer_value(json_object_get(o, "duration_us")), 1000000);
        json_decref(o);

        /* A past one: both clocks, the wall clock derived from "now". */
        o = event_episode_json(&psi, true, true, 6000000, 1700000000000000);
        CHECK_KEYS(o, "start_us", "end_us", "start_time_us", "end_time_us", "duration_us", "events", "peak");
        ASSERT_EQ(json_integer_value(json_object_get(o, "start_time_us")), 1700000000000000 - 5000000);
        ASSERT_EQ(json_integer_value(json_object_get(o, "end_time_us")), 1700000000000000 - 1000000);
        json_decref(o);

        /* A pressure event keeps its count. */
        b = event_body_new(event_pressure_new("/a", "psi", NULL, 1, 2), 2);
        ASSERT_EQ(b->flags & BODY_NO_COUNT, 0);
        body_unref(b);
}

int main(void) {
        test_shapes();
        test_episodes();
        test_removed_and_body();
        return 0;
}
