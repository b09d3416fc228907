/* SPDX-License-Identifier: MIT */
/*
 * The event builders produce the shapes io.pressured.varlink declares:
 * the right "kind", the fields each kind carries and nothing else, and a
 * shared body that a subscriber's prefix turns into one valid message.
 */
#include "event.h"
#include "fail-inject.h"
#include "tests.h"
#include "varlink.h"
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
                Body *b = event_data_body(&(const EventData) {
                        .kind = EVENT_KILLED, .cgroup = "/a", .realtime_us = 1, .monotonic_us = 2,
                        .killed = { .by = "kernel", .reason = "oom_kill" },
                }, 2);

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
        b = event_data_body(&(const EventData) {
                .kind = EVENT_PRESSURE, .cgroup = "/a", .realtime_us = 1, .monotonic_us = 2,
                .pressure = { .source = SOURCE_PSI, .resource = RESOURCE_MEMORY, .level = _LEVEL_INVALID },
        }, 2);
        ASSERT_TRUE(b);
        ASSERT_EQ(b->flags & BODY_HAS_LEVEL, 0);
        ASSERT_U64_EQ(b->monotonic_us, 2);
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
        /* A kind the serializer does not know is no event. */
        ASSERT_TRUE(!event_data_body(&(const EventData) { .kind = _EVENT_KIND_MAX, .cgroup = "/a" }, 0));
}

/* The body of a typed event is its JSON, serialized once, whatever its size. */
static void check_body_is_json(const EventData *e, unsigned flags) {
        _cleanup_free_ char *text = NULL;
        json_t *o = event_data_json(e);
        Body *b = event_data_body(e, 9);
        size_t n;

        ASSERT_TRUE(o && b);
        text = json_dumps(o, VARLINK_JSON_FLAGS);
        json_decref(o);
        n = strlen(text);
        ASSERT_EQ(b->size, n + 2);
        ASSERT_TRUE(memcmp(b->data, text + 1, n - 1) == 0);
        ASSERT_STREQ(b->data + n - 1, "}}");
        ASSERT_EQ(b->flags, flags);
        ASSERT_U64_EQ(b->monotonic_us, 9);
        body_unref(b);
}

/* protocol/ writes the whole envelope: the prefix opens it, the body closes it. */
static void test_prefix(void) {
        char buf[OUT_PREFIX_MAX];
        Body b = { .flags = 0 };

        ASSERT_EQ(event_prefix(buf, &b, 3, 1, 2, _LEVEL_INVALID), strlen(buf));
        ASSERT_STREQ(buf, "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":3,\"missed\":1,\"count\":2,");
        (void) event_prefix(buf, &b, 3, 1, 2, LEVEL_LOW);
        ASSERT_STREQ(buf, "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":3,\"missed\":1,\"count\":2,"
                          "\"level\":\"low\",");
        b.flags = BODY_HAS_LEVEL;
        (void) event_prefix(buf, &b, 3, 1, 2, LEVEL_LOW);
        ASSERT_STREQ(buf, "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":3,\"missed\":1,\"count\":2,");
        b.flags = BODY_NO_COUNT;
        (void) event_prefix(buf, &b, 3, 1, 2, LEVEL_CRITICAL);
        ASSERT_STREQ(buf, "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":3,\"missed\":1,"
                          "\"level\":\"critical\",");
        (void) event_prefix(buf, &b, UINT64_MAX, UINT64_MAX, UINT64_MAX, _LEVEL_INVALID);
        ASSERT_STREQ(buf, "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":18446744073709551615,"
                          "\"missed\":18446744073709551615,");
}

static void test_typed(void) {
        _cleanup_free_ char *deep = malloc(3001);
        PsiStats st = { .some = { .avg10 = 1234, .total_us = 5 }, .has_some = true };
        EpisodeRecord rec = { .start_us = 1, .end_us = 4, .events = 2, .peak = LEVEL_LOW + 1 };
        MemoryEvents me = { .present = 1u << MEMORY_EVENT_OOM, .value = { [MEMORY_EVENT_OOM] = 3 } };
        EventData e = {
                .kind = EVENT_PRESSURE, .cgroup = "/a", .realtime_us = 1, .monotonic_us = 2,
                .pressure = { .source = SOURCE_PSI, .resource = RESOURCE_IO, .psi = &st, .level = _LEVEL_INVALID },
        };
        json_t *o;

        check_body_is_json(&e, 0);
        /* Beyond the stack buffer (a deep cgroup): the second pass. */
        ASSERT_TRUE(deep);
        deep[0] = '/';
        memset(deep + 1, 'x', 2999);
        deep[3000] = 0;
        e.cgroup = deep;
        check_body_is_json(&e, 0);
        e.cgroup = "/a";

        /* Injected: "inject", its level and "synthetic", in this order. */
        e.pressure = (PressureSample) { .source = _SOURCE_INVALID, .resource = RESOURCE_MEMORY, .level = LEVEL_MEDIUM };
        o = event_data_json(&e);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "resource", "level", "synthetic");
        ASSERT_STREQ(json_string_value(json_object_get(o, "source")), "inject");
        json_decref(o);
        check_body_is_json(&e, BODY_HAS_LEVEL);

        check_body_is_json(&(const EventData) {
                .kind = EVENT_MEMORY_EVENTS, .cgroup = "/a", .memory_events = { .counters = &me, .delta = &me },
        }, 0);
        check_body_is_json(&(const EventData) {
                .kind = EVENT_PROTECTION, .cgroup = "/a",
                .protection = { .state = PROTECTION_STATE_LOW, .previous = PROTECTION_STATE_NONE },
        }, 0);
        check_body_is_json(&(const EventData) {
                .kind = EVENT_CLEARED, .cgroup = "/a",
                .cleared = { .source = SOURCE_VMPRESSURE, .resource = RESOURCE_MEMORY, .episode = &rec },
        }, BODY_NO_COUNT);
        e = (EventData) {
                .kind = EVENT_TRIGGER_CHANGED, .cgroup = "/a",
                .trigger_changed = {
                        .source = SOURCE_PSI, .resource = RESOURCE_MEMORY,
                        .trigger = { .type = SOURCE_PSI, .psi = { PSI_STALL_SOME, 150000, 2000000 }, .level = LEVEL_LOW },
                        .adjusted_reason = "rounded",
                },
        };
        o = event_data_json(&e);
        CHECK_KEYS(o, "kind", "cgroup", "source", "time_us", "monotonic_us", "resource", "trigger", "adjusted",
                   "adjusted_reason");
        ASSERT_TRUE(json_is_true(json_object_get(o, "adjusted")));
        json_decref(o);
        check_body_is_json(&e, BODY_NO_COUNT);

        /* The "subscribed" state: each part the source has, in order, {} for none. */
        {
                SubscribedState ss = { .has_kills = true, .oomd_kills = true, .kernel_reason = "no memory.events" };
                _cleanup_free_ char *text = NULL;

                o = subscribed_state_json(&ss);
                text = json_dumps(o, JSON_COMPACT);
                ASSERT_STREQ(text, "{\"kill_sources\":[\"systemd-oomd\"],\"unavailable_kill_sources\":"
                                   "[{\"source\":\"kernel\",\"reason\":\"no memory.events\"}]}");
                json_decref(o);
                ss = (SubscribedState) { .has_counters = true, .counters = me, .episode = &rec, .now_us = 5 };
                o = subscribed_state_json(&ss);
                CHECK_KEYS(o, "counters", "episode");
                json_decref(o);
                o = subscribed_state_json(&(const SubscribedState) {});
                ASSERT_EQ(json_object_size(o), 0);
                json_decref(o);
        }
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
        json_decref(o);
        b = event_data_body(&(const EventData) {
                .kind = EVENT_CLEARED, .cgroup = "/a", .realtime_us = 7, .monotonic_us = 5000000,
                .cleared = { .source = SOURCE_PSI, .resource = RESOURCE_CPU, .episode = &psi },
        }, 5000000);
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
        b = event_data_body(&(const EventData) {
                .kind = EVENT_PRESSURE, .cgroup = "/a", .realtime_us = 1, .monotonic_us = 2,
                .pressure = { .source = SOURCE_PSI, .resource = RESOURCE_MEMORY, .level = _LEVEL_INVALID },
        }, 2);
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
        case 9: {
                SubscribedState state = {
                        .has_psi = true, .psi = st, .has_counters = true, .counters = me, .has_kills = true,
                        .oomd_kills = true, .kernel_reason = "no memory.events", .episode = &rec, .now_us = 5,
                        .realtime_us = 6,
                };

                json_decref(stolen);
                return subscribed_state_json(&state);
        }
        case 10:
                json_decref(stolen);
                return event_data_json(&(const EventData) {
                        .kind = EVENT_PRESSURE, .cgroup = "/a", .pressure = {
                                .source = _SOURCE_INVALID, .psi = &st, .level = LEVEL_LOW },
                });
        default:
                json_decref(stolen);
                return event_cleared_new("/a", SOURCE_PSI, RESOURCE_MEMORY, &rec, 1, 2);
        }
}

static void test_out_of_memory(void) {
        for (int which = 0; which <= 11; which++) {
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

        /* The body: each allocation of serializing failing gives NULL, for a small
         * event and for one beyond the stack buffer (its second pass). */
        for (int big = 0; big < 2; big++)
                for (unsigned n = 1;; n++) {
                        char cgroup[3001] = "/a";
                        const EventData ev = {
                                .kind = EVENT_PRESSURE, .cgroup = cgroup, .realtime_us = 1, .monotonic_us = 2,
                                .pressure = { .source = _SOURCE_INVALID, .resource = RESOURCE_MEMORY,
                                              .level = LEVEL_LOW },
                        };
                        bool injected;
                        Body *b;

                        if (big) {
                                memset(cgroup + 1, 'x', sizeof(cgroup) - 2);
                                cgroup[sizeof(cgroup) - 1] = 0;
                        }
                        fail_inject_reset();
                        fail_inject_after(FAIL_ALLOC, n);
                        b = event_data_body(&ev, 2);
                        injected = fail_inject_fired(FAIL_ALLOC) > 0;
                        fail_inject_reset();
                        if (!injected) {
                                ASSERT_TRUE(b && b->size > (big ? 3000u : 2u) && b->data[b->size - 1] == 0);
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
        test_typed();
        test_prefix();
        test_out_of_memory();
        return 0;
}
