/* SPDX-License-Identifier: MIT */
/*
 * The event builders produce the shapes io.pressured.varlink declares:
 * the right "kind", the fields each kind carries and nothing else, and a
 * shared body that a subscriber's prefix turns into one valid message.
 */
#include "event.h"
#include "fail-inject.h"
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
        o = event_subscribed_new("/a", SOURCE_PSI, RESOURCE_MEMORY, t, true, "rounded", NULL);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "trigger", "adjusted", "adjusted_reason", "state");
        ASSERT_STREQ(json_string_value(json_object_get(o, "resource")), "memory");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "subscribed");
        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "psi");
        ASSERT_TRUE(json_is_true(json_object_get(o, "adjusted")));
        ASSERT_STREQ(json_string_value(json_object_get(o, "adjusted_reason")), "rounded");
        json_decref(o);
        /* Without a reason the key is left out. */
        o = event_subscribed_new("/a", SOURCE_PSI, RESOURCE_CPU, event_trigger_new(&psi), false, NULL, NULL);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "trigger", "adjusted", "state");
        ASSERT_STREQ(json_string_value(json_object_get(o, "resource")), "cpu");
        json_decref(o);

        t = event_trigger_new(&vm);
        CHECK_KEYS(t, "vmpressure");
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(t, "vmpressure"), "mode")), "local");
        json_decref(t);

        o = event_pressure_new("/a", "psi", RESOURCE_IO, psi_stats_to_json(&st), 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "time_us", "monotonic_us", "psi");
        ASSERT_STREQ(json_string_value(json_object_get(o, "resource")), "io");
        CHECK_KEYS(json_object_get(o, "psi"), "some_avg10", "some_avg60", "some_avg300", "some_total_us");
        json_decref(o);
        o = event_pressure_new("/", "inject", RESOURCE_MEMORY, NULL, 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "time_us", "monotonic_us");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "pressure");
        json_decref(o);

        o = event_memory_events_new("/a", &now, &delta, 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "counters", "delta");
        CHECK_KEYS(json_object_get(o, "counters"), "oom");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(o, "delta"), "oom")), 1);
        json_decref(o);

        o = event_killed_new("/system.slice/x.service", "systemd-oomd", "memory-pressure", 1, 2);
        CHECK_KEYS(o, "kind", "cgroup", "by", "reason", "time_us", "monotonic_us");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "killed");
        ASSERT_STREQ(json_string_value(json_object_get(o, "by")), "systemd-oomd");
        ASSERT_STREQ(json_string_value(json_object_get(o, "reason")), "memory-pressure");
        json_decref(o);
        /* A reason that is not UTF-8 cannot be an event. */
        ASSERT_TRUE(!event_killed_new("/a", "systemd-oomd", "\xff", 1, 2));
        {
                /* The body carries no count of its own: each subscriber's prefix adds it. */
                Body *b = event_body_new(event_killed_new("/a", "kernel", "oom_kill", 1, 2), 2);

                ASSERT_TRUE(b && !(b->flags & (BODY_NO_COUNT | BODY_HAS_LEVEL)) && !strstr(b->data, "count"));
                body_unref(b);
        }

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
        b = event_body_new(event_pressure_new("/a", "psi", RESOURCE_MEMORY, NULL, 1, 2), 2);
        ASSERT_TRUE(b);
        ASSERT_EQ(b->flags & BODY_HAS_LEVEL, 0);
        ASSERT_EQ(b->size, strlen(b->data) + 1);
        {
                _cleanup_free_ char *whole = NULL;

                ASSERT_TRUE(asprintf(&whole, "{\"parameters\":{\"event\":{\"seq\":1,%s", b->data) > 0);
                o = json_loads(whole, 0, &err);
                CHECK_KEYS(json_object_get(json_object_get(o, "parameters"), "event"),
                           "seq", "kind", "cgroup", "source", "resource", "time_us", "monotonic_us");
                json_decref(o);
        }
        body_unref(b);
        ASSERT_TRUE(!event_body_new(NULL, 0));
}

static void test_episodes(void) {
        EpisodeRecord psi = { .start_us = 1000000, .end_us = 5000000, .events = 3, .peak = 125000,
                              .peak_known = true };
        EpisodeRecord vm = { .start_us = 10, .end_us = 0, .events = 9, .peak = LEVEL_CRITICAL + 1 };
        json_t *o;
        Body *b;

        /* cleared: PSI has the peak in percent, vmpressure the level; no count. */
        o = event_cleared_new("/a", SOURCE_PSI, RESOURCE_CPU, &psi, 7, 5000000);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "time_us", "monotonic_us", "duration_us", "events", "peak");
        ASSERT_STREQ(json_string_value(json_object_get(o, "resource")), "cpu");
        ASSERT_STREQ(json_string_value(json_object_get(o, "kind")), "cleared");
        ASSERT_EQ(json_integer_value(json_object_get(o, "duration_us")), 4000000);
        ASSERT_EQ(json_integer_value(json_object_get(o, "events")), 3);
        ASSERT_TRUE(json_real_value(json_object_get(o, "peak")) == 12.5);
        b = event_body_new(o, 5000000);
        ASSERT_TRUE(b);
        ASSERT_EQ(b->flags & BODY_NO_COUNT, BODY_NO_COUNT);
        body_unref(b);

        vm.end_us = 2000010;
        o = event_cleared_new("/a", SOURCE_VMPRESSURE, RESOURCE_MEMORY, &vm, 7, 2000010);
        CHECK_KEYS(o, "kind", "cgroup", "source", "resource", "time_us", "monotonic_us", "duration_us", "events",
                   "peak_level");
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

        /* Injected events alone: the peak is unknown, null, in all three. */
        psi.peak_known = false;
        o = event_cleared_new("/a", SOURCE_PSI, RESOURCE_MEMORY, &psi, 7, 5000000);
        ASSERT_TRUE(json_is_null(json_object_get(o, "peak")));
        json_decref(o);
        o = event_episode_json(&psi, true, true, 6000000, 1700000000000000);
        ASSERT_TRUE(json_is_null(json_object_get(o, "peak")));
        json_decref(o);
        psi.end_us = 0;
        o = event_episode_json(&psi, true, false, 6000000, 1700000000000000);
        ASSERT_TRUE(json_is_null(json_object_get(o, "peak")));
        json_decref(o);

        /* A pressure event keeps its count. */
        b = event_body_new(event_pressure_new("/a", "psi", RESOURCE_MEMORY, NULL, 1, 2), 2);
        ASSERT_EQ(b->flags & BODY_NO_COUNT, 0);
        body_unref(b);
}

/*
 * Out of memory: with each allocation of a builder failing in turn, it
 * returns NULL (never an event missing a field), releases what it steals,
 * and leaks nothing (valgrind, ASan).
 */
/* @stolen and @other are made before the failures start: the builder takes both. */
static json_t *build(int which, json_t *stolen, json_t *other) {
        static const MemoryEvents me = { .present = 3, .value = { 1, 2 } };
        static const PsiStats st = { .has_some = true, .has_full = true };
        static const EventTrigger psi = { .type = SOURCE_PSI, .psi = { PSI_STALL_SOME, 1, 2 }, .level = LEVEL_LOW };
        static const EpisodeRecord rec = { .start_us = 1, .end_us = 3, .events = 2, .peak = 1 };

        if (which > 1)
                json_decref(other);
        switch (which) {
        case 0:
                return event_subscribed_new("/a", SOURCE_PSI, RESOURCE_MEMORY, stolen, true, "why", other);
        case 1:
                return event_subscribed_new("/a", SOURCE_PSI, RESOURCE_MEMORY, other, false, NULL, stolen);
        case 2:
                return event_pressure_new("/a", "psi", RESOURCE_MEMORY, stolen, 1, 2);
        case 3:
                return event_protection_new("/a", "low", "none", stolen, 1, 2);
        case 4:
                json_decref(stolen);
                return event_memory_events_new("/a", &me, &me, 1, 2);
        case 5:
                json_decref(stolen);
                return event_trigger_new(&psi);
        case 6:
                json_decref(stolen);
                return psi_stats_to_json(&st);
        case 7:
                json_decref(stolen);
                return event_episode_json(&rec, false, true, 5, 6);
        case 8:
                json_decref(stolen);
                return event_killed_new("/a", "kernel", "oom_kill", 1, 2);
        default:
                json_decref(stolen);
                return event_cleared_new("/a", SOURCE_PSI, RESOURCE_MEMORY, &rec, 1, 2);
        }
}

static void test_out_of_memory(void) {
        for (int which = 0; which <= 9; which++) {
                _cleanup_free_ char *full = NULL;

                for (unsigned n = 1;; n++) {
                        json_t *stolen = json_object(), *other = json_object(), *o;
                        bool injected;

                        ASSERT_TRUE(stolen && other);
                        json_incref(stolen);
                        fail_inject_reset();
                        fail_inject_after(FAIL_ALLOC, n);
                        o = build(which, stolen, other);
                        injected = fail_inject_fired(FAIL_ALLOC) > 0;
                        fail_inject_reset();
                        if (injected && o)
                                TEST_FAIL("builder %d, allocation %u failing: returned %s", which, n,
                                          (full = json_dumps(o, JSON_COMPACT)));
                        if (!injected)
                                ASSERT_TRUE(o);
                        json_decref(o);
                        if (stolen->refcount != 1)
                                TEST_FAIL("builder %d, allocation %u failing: the stolen argument has %zu references",
                                          which, n, (size_t) stolen->refcount);
                        json_decref(stolen);
                        if (!injected)
                                break;
                }
        }

        /* The body: each allocation of serializing failing gives NULL, the event released. */
        for (unsigned n = 1;; n++) {
                json_t *ev = event_pressure_new("/a", "inject", RESOURCE_MEMORY, NULL, 1, 2);
                bool injected;
                Body *b;

                ASSERT_TRUE(ev);
                json_incref(ev);
                fail_inject_reset();
                fail_inject_after(FAIL_ALLOC, n);
                b = event_body_new(ev, 2);
                injected = fail_inject_fired(FAIL_ALLOC) > 0;
                fail_inject_reset();
                ASSERT_EQ(ev->refcount, 1);
                json_decref(ev);
                if (!injected) {
                        ASSERT_TRUE(b && b->size > 2 && b->data[b->size - 1] == 0);
                        body_unref(b);
                        break;
                }
                ASSERT_TRUE(b == NULL);
        }

        for (unsigned n = 1;; n++) {
                size_t size = 7;
                char *m;

                fail_inject_reset();
                fail_inject_after(FAIL_ALLOC, n);
                m = event_removed_message("/a", 3, &size);
                if (!fail_inject_fired(FAIL_ALLOC)) {
                        ASSERT_STREQ(m, "{\"parameters\":{\"event\":{\"kind\":\"removed\",\"cgroup\":\"/a\",\"seq\":3}}}");
                        free(m);
                        break;
                }
                ASSERT_TRUE(m == NULL);
                ASSERT_EQ(size, 7);
        }
        fail_inject_reset();
}

int main(void) {
        test_shapes();
        test_episodes();
        test_removed_and_body();
        test_out_of_memory();
        return 0;
}
