/* SPDX-License-Identifier: MIT */
/*
 * systemd-report's families (protocol/metrics-report.c): List's and
 * Describe's replies from typed values, the names, objects, fields and
 * values, and the bound of [Report] MaxMetrics= that leaves whole cgroups
 * out in walk order.
 */
#include <event2/buffer.h>
#include <jansson.h>
#include <math.h>

#include "metrics-report.h"
#include "tests.h"
#include "util.h"

static void evbuffer_freep(struct evbuffer **b) {
        if (*b)
                evbuffer_free(*b);
}

/* The messages of @out, parsed; every one but the last "continues". */
static json_t *messages(struct evbuffer *out) {
        size_t n = evbuffer_get_length(out), start = 0;
        const char *p = (const char *) evbuffer_pullup(out, -1);
        json_t *list = json_array();

        ASSERT_TRUE(n > 0 && p[n - 1] == 0);
        for (size_t i = 0; i < n; i++) {
                json_t *m;

                if (p[i] != 0)
                        continue;
                m = json_loadb(p + start, i - start, JSON_REJECT_DUPLICATES, NULL);
                ASSERT_TRUE(m);
                ASSERT_EQ(json_is_true(json_object_get(m, "continues")), i + 1 < n);
                ASSERT_EQ(json_object_size(m), i + 1 < n ? 2 : 1);
                ASSERT_TRUE(json_array_append(list, json_object_get(m, "parameters")) == 0);
                json_decref(m);
                start = i + 1;
        }
        return list;
}

/* Whether the messages in @out hold @text. */
static bool has_text(struct evbuffer *out, const char *text) {
        return memmem(evbuffer_pullup(out, -1), evbuffer_get_length(out), text, strlen(text));
}

/* The metric of @list with @name, @object (NULL: none) and @fields (a JSON text, NULL: none), or NULL. */
static json_t *find(json_t *list, const char *name, const char *object, const char *fields) {
        json_t *want = fields ? json_loads(fields, 0, NULL) : NULL, *m, *found = NULL;
        size_t i;

        json_array_foreach(list, i, m) {
                const char *o = json_string_value(json_object_get(m, "object"));
                json_t *f = json_object_get(m, "fields");

                if (streq(json_string_value(json_object_get(m, "name")), name) && streq_ptr(o, object) &&
                    (want ? f && json_equal(f, want) : !f)) {
                        ASSERT_TRUE(!found); /* each metric once */
                        found = m;
                }
        }
        json_decref(want);
        return found;
}

static double value_of(json_t *list, const char *name, const char *object, const char *fields) {
        json_t *m = find(list, name, object, fields);

        if (!m)
                TEST_FAIL("no metric %s of %s with %s", name, strna(object), strna(fields));
        return json_number_value(json_object_get(m, "value"));
}

/* The daemon's own metrics: one per counter, 4 gauges and Takeovers, one per source, the pre-kill hook's 5. */
#define OWN (_COUNTER_MAX + 4 + _SOURCE_MAX + 5)

static CgroupSample samples[3];

static void make_samples(void) {
        CgroupSample *s = &samples[0];

        *s = (CgroupSample) { .path = (char *) "/system.slice/foo.service", .has_events = true,
                              .has_memory_current = true, .memory_current = 123456789 };
        s->has_psi[CGROUP_RESOURCE_MEMORY] = s->has_psi[CGROUP_RESOURCE_CPU] = s->has_psi[CGROUP_RESOURCE_IO] = true;
        s->psi[CGROUP_RESOURCE_MEMORY] = (PsiStats) { .some = { 123, 45, 6, 4750067 },
                                                      .full = { 1, 2, 3, 1000001 }, .has_full = true };
        s->psi[CGROUP_RESOURCE_IO].some = (PsiLine) { 9999, 10000, 0, UINT64_C(18446744073709) };
        s->psi[CGROUP_RESOURCE_CPU] = (PsiStats) { .some = { 1, 1, 1, 1 }, .full = { 0, 0, 0, 0 }, .has_full = true };
        for (MemoryEventKey k = 0; k < _MEMORY_EVENT_MAX; k++) {
                s->events.value[k] = 10 + k;
                s->events.present |= 1u << k;
        }
        /* A slice: no unit of its own, named by its path; PSI only. */
        samples[1] = (CgroupSample) { .path = (char *) "/system.slice" };
        samples[1].has_psi[CGROUP_RESOURCE_CPU] = true;
        samples[1].psi[CGROUP_RESOURCE_CPU].some = (PsiLine) { 10000, 0, 0, 7 };
        /* The root: memory.events without oom_group_kill (older kernels), memory.current. */
        samples[2] = (CgroupSample) { .path = (char *) "/", .has_events = true, .has_memory_current = true,
                                      .memory_current = 5 };
        samples[2].events.present = (1u << MEMORY_EVENT_OOM_KILL) | (1u << MEMORY_EVENT_LOW);
        samples[2].events.value[MEMORY_EVENT_OOM_KILL] = 3;
}

static ReportDaemon daemon_values(void) {
        ReportDaemon d = { .takeovers = 2, .clients = 3, .subscriptions = 4, .proxied_clients = 5 };

        for (Counter c = 0; c < _COUNTER_MAX; c++)
                d.counters[c] = 100 + c;
        for (SourceType t = 0; t < _SOURCE_MAX; t++)
                d.registrations[t] = 200 + t;
        d.prekill = (PrekillCounters) { .warned = 7, .acknowledged = 5, .deadline_reached = 1, .nobody = 9 };
        d.prekill_pending = 1;
        return d;
}

/* Every name of @list is a family Describe declares, once, of a MetricFamilyType; values fit the type. */
static void check_described(json_t *list) {
        _cleanup_(evbuffer_freep) struct evbuffer *out = evbuffer_new();
        json_t *families, *f, *m;
        size_t i, j;

        ASSERT_OK(report_write_describe(out));
        families = messages(out);
        json_array_foreach(families, i, f) {
                const char *name = json_string_value(json_object_get(f, "name")),
                           *type = json_string_value(json_object_get(f, "type"));

                ASSERT_EQ(json_object_size(f), 3);
                ASSERT_TRUE(name && strncmp(name, "io.pressured.", 13) == 0);
                /* io.pressured.<Area>.<Name>, both UpperCamelCase. */
                ASSERT_TRUE(name[13] >= 'A' && name[13] <= 'Z' && strchr(name + 13, '.') &&
                            strchr(name + 13, '.')[1] >= 'A' && strchr(name + 13, '.')[1] <= 'Z');
                ASSERT_TRUE(streq(type, "counter") || streq(type, "gauge") || streq(type, "string"));
                ASSERT_TRUE(strlen(json_string_value(json_object_get(f, "description"))) > 10);
                for (j = 0; j < i; j++)
                        ASSERT_TRUE(!streq(name, json_string_value(json_object_get(json_array_get(families, j),
                                                                                   "name"))));
        }
        json_array_foreach(list, i, m) {
                const char *name = json_string_value(json_object_get(m, "name")), *type = NULL;
                json_t *v = json_object_get(m, "value");

                json_array_foreach(families, j, f)
                        if (streq(json_string_value(json_object_get(f, "name")), name))
                                type = json_string_value(json_object_get(f, "type"));
                if (!type)
                        TEST_FAIL("%s is not described", name);
                ASSERT_TRUE(streq(type, "string") ? json_is_string(v) : json_is_number(v));
                if (json_is_number(v))
                        ASSERT_TRUE(json_number_value(v) >= 0);
        }
        json_decref(families);
}

static void test_list(void) {
        _cleanup_(evbuffer_freep) struct evbuffer *out = evbuffer_new();
        ReportDaemon d = daemon_values();
        ReportCgroup c[3] = {
                { .sample = &samples[0], .has_protection = true, .effective_min = PROTECTION_UNLIMITED,
                  .effective_low = 1024, .protection_state = PROTECTION_STATE_MIN, .has_headroom = true,
                  .headroom_bytes = 77, .has_reclaim = true, .reclaimed_bytes = 4096 },
                { .sample = &samples[1] },
                { .sample = &samples[2] },
        };
        json_t *list;

        ASSERT_OK(report_write_list(out, &d, c, 3, 42));
        /* Reals as the kernel's files write them, not the 17 digits of their doubles. */
        ASSERT_TRUE(has_text(out, "\"value\":4.750067}"));
        ASSERT_TRUE(has_text(out, "\"value\":1.23}"));
        ASSERT_TRUE(has_text(out, "\"value\":18446744.073709}"));
        list = messages(out);
        /* The daemon's: one per counter, the gauges, one registration count per source; the cgroups'; the end. */
        ASSERT_EQ(json_array_size(list), OWN + (20 + 6 + 1 + 3 + 1 + 1) + 4 + (2 + 1) + 1);
        ASSERT_TRUE(streq(json_string_value(json_object_get(json_array_get(list, json_array_size(list) - 1), "name")),
                          REPORT_FAMILY_OMITTED));
        ASSERT_EQ(value_of(list, REPORT_FAMILY_OMITTED, NULL, NULL), 42);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.EventsRead", NULL, NULL), 100 + COUNTER_EVENTS_READ);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Kills", NULL, "{\"by\":\"systemd-oomd\"}"),
                  100 + COUNTER_KILLS_SYSTEMD_OOMD);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Registrations", NULL, "{\"source\":\"kills\"}"),
                  200 + SOURCE_KILLS);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Takeovers", NULL, NULL), 2);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.ProxiedClients", NULL, NULL), 5);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Prekill", NULL, "{\"type\":\"acknowledged\"}"), 5);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Prekill", NULL, "{\"type\":\"deadline\"}"), 1);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.Prekill", NULL, "{\"type\":\"nobody\"}"), 9);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.PrekillWarned", NULL, NULL), 7);
        ASSERT_EQ(value_of(list, "io.pressured.Daemon.PrekillPending", NULL, NULL), 1);

        /* A unit's cgroup is named by the unit, as systemd's io.systemd.CGroup names it. */
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.StallSeconds", "foo.service",
                             "{\"resource\":\"memory\",\"type\":\"some\"}") == 4750067 / 1e6);
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.StallSeconds", "foo.service",
                             "{\"resource\":\"io\",\"type\":\"some\"}") == 18446744073709 / 1e6);
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.Avg10", "foo.service",
                             "{\"resource\":\"memory\",\"type\":\"some\"}") == 1.23);
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.Avg60", "foo.service",
                             "{\"resource\":\"memory\",\"type\":\"full\"}") == 0.02);
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.Avg300", "foo.service",
                             "{\"resource\":\"memory\",\"type\":\"some\"}") == 0.06);
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.Avg60", "foo.service",
                             "{\"resource\":\"io\",\"type\":\"some\"}") == 100.0);
        ASSERT_TRUE(!find(list, "io.pressured.Pressure.Avg10", "foo.service", "{\"resource\":\"io\",\"type\":\"full\"}"));
        ASSERT_TRUE(find(list, "io.pressured.Pressure.Avg10", "foo.service", "{\"resource\":\"cpu\",\"type\":\"full\"}"));
        ASSERT_EQ(value_of(list, "io.pressured.Memory.Events", "foo.service", "{\"type\":\"oom_group_kill\"}"),
                  10 + MEMORY_EVENT_OOM_GROUP_KILL);
        ASSERT_EQ(value_of(list, "io.pressured.Memory.CurrentBytes", "foo.service", NULL), 123456789);
        /* Unlimited ("max" from the root down) as the largest integer. */
        ASSERT_TRUE(json_integer_value(json_object_get(find(list, "io.pressured.Protection.EffectiveMinBytes",
                                                            "foo.service", NULL), "value")) == INT64_MAX);
        ASSERT_EQ(value_of(list, "io.pressured.Protection.EffectiveLowBytes", "foo.service", NULL), 1024);
        ASSERT_STREQ(json_string_value(json_object_get(find(list, "io.pressured.Protection.State", "foo.service", NULL),
                                                       "value")), "min");
        ASSERT_EQ(value_of(list, "io.pressured.Headroom.Bytes", "foo.service", NULL), 77);
        ASSERT_EQ(value_of(list, "io.pressured.Reclaim.ReclaimedBytes", "foo.service", NULL), 4096);

        /* A slice and the root by their paths; what was not read is left out. */
        ASSERT_TRUE(value_of(list, "io.pressured.Pressure.Avg10", "/system.slice",
                             "{\"resource\":\"cpu\",\"type\":\"some\"}") == 100.0);
        ASSERT_TRUE(!find(list, "io.pressured.Memory.CurrentBytes", "/system.slice", NULL));
        ASSERT_EQ(value_of(list, "io.pressured.Memory.Events", "/", "{\"type\":\"oom_kill\"}"), 3);
        ASSERT_TRUE(!find(list, "io.pressured.Memory.Events", "/", "{\"type\":\"oom_group_kill\"}"));
        ASSERT_TRUE(!find(list, "io.pressured.Protection.State", "/", NULL));
        ASSERT_TRUE(!find(list, "io.pressured.Headroom.Bytes", "/", NULL));
        check_described(list);
        json_decref(list);
}

/* A cgroup whose name is no UTF-8 cannot be an object: it is left out and counted. */
static void test_not_utf8(void) {
        _cleanup_(evbuffer_freep) struct evbuffer *out = evbuffer_new();
        ReportDaemon d = daemon_values();
        CgroupSample bad = samples[1];
        ReportCgroup c[2] = { { .sample = &bad }, { .sample = &samples[1] } };
        json_t *list;

        bad.path = (char *) "/system.slice/caf\xe9";
        ASSERT_OK(report_write_list(out, &d, c, 2, 5));
        list = messages(out);
        ASSERT_EQ(value_of(list, REPORT_FAMILY_OMITTED, NULL, NULL), 6);
        ASSERT_TRUE(find(list, "io.pressured.Pressure.Avg10", "/system.slice", "{\"resource\":\"cpu\",\"type\":\"some\"}"));
        ASSERT_EQ(json_array_size(list), OWN + 4 + 1);
        json_decref(list);
}

/* What a cgroup weighs in the walk, and the budget the daemon's own metrics leave. */
static void test_budget(void) {
        size_t own = OWN + 1;
        ReportCgroup c[3] = { { .sample = &samples[0], .has_reclaim = true }, { .sample = &samples[1] },
                              { .sample = &samples[2] } };

        /* With everything read: 20 PSI (io has no full line), 6 events, current, protection (3), headroom, reclaim. */
        ASSERT_EQ(report_cgroup_metrics(&c[0]), 20 + 6 + 1 + 3 + 1 + 1);
        ASSERT_EQ(report_cgroup_metrics(&c[1]), 4);
        ASSERT_EQ(report_cgroup_metrics(&c[2]), 2 + 5);
        ASSERT_EQ(report_cgroup_budget(1024), 1024 - own);
        ASSERT_EQ(report_cgroup_budget(16384), 16384 - own);
        /* The daemon's own are never cut: too small a bound leaves the cgroups nothing. */
        ASSERT_EQ(report_cgroup_budget(own), 0);
        ASSERT_EQ(report_cgroup_budget(1), 0);
        ASSERT_TRUE(report_cgroup_wants_memory(&samples[0]) && !report_cgroup_wants_memory(&samples[1]));
}

/* What a cgroup weighs is what report_write_list() writes for it with everything read. */
static void test_weight_matches_list(void) {
        _cleanup_(evbuffer_freep) struct evbuffer *out = evbuffer_new();
        ReportDaemon d = daemon_values();
        ReportCgroup c[3] = {
                { .sample = &samples[0], .has_protection = true, .has_headroom = true, .has_reclaim = true },
                { .sample = &samples[1] },
                { .sample = &samples[2], .has_protection = true, .has_headroom = true },
        };
        json_t *list;

        ASSERT_OK(report_write_list(out, &d, c, 3, 0));
        list = messages(out);
        ASSERT_EQ(json_array_size(list), 1024 - report_cgroup_budget(1024) + report_cgroup_metrics(&c[0]) +
                  report_cgroup_metrics(&c[1]) + report_cgroup_metrics(&c[2]));
        json_decref(list);
}

/*
 * A cgroup whose memory figures are the v1 memory hierarchy's (a hybrid
 * host): memory.usage_in_bytes and memory.oom_control's kills under the
 * families cgroup2's would have, its headroom, no effective protection;
 * weighed as written. cgroup2's memory.events, where there, is not doubled.
 */
static void test_v1(void) {
        _cleanup_(evbuffer_freep) struct evbuffer *out = evbuffer_new();
        ReportDaemon d = daemon_values();
        CgroupSample v1 = { .path = (char *) "/legacy.slice/app.service", .has_memory_current = true,
                            .memory_current = 4096, .memory_v1 = true, .has_oom_kills = true, .oom_kills = 2 };
        ReportCgroup c[2] = { { .sample = &v1, .has_headroom = true, .headroom_bytes = 777 },
                              { .sample = &samples[2], .has_protection = true, .has_headroom = true } };
        json_t *list;

        v1.has_psi[CGROUP_RESOURCE_CPU] = true;
        v1.psi[CGROUP_RESOURCE_CPU].some = (PsiLine) { 0, 0, 0, 5 };
        samples[2].has_oom_kills = true; /* memory.events' own, not written again */
        samples[2].oom_kills = 3;
        ASSERT_TRUE(report_cgroup_wants_memory(&v1) && !report_cgroup_wants_protection(&v1));
        ASSERT_TRUE(report_cgroup_wants_protection(&samples[2]));
        ASSERT_EQ(report_cgroup_metrics(&c[0]), 4 + 1 + 1 + 1);
        ASSERT_OK(report_write_list(out, &d, c, 2, 0));
        list = messages(out);
        check_described(list);
        ASSERT_EQ(value_of(list, "io.pressured.Memory.CurrentBytes", "app.service", NULL), 4096);
        ASSERT_EQ(value_of(list, "io.pressured.Memory.Events", "app.service", "{\"type\":\"oom_kill\"}"), 2);
        ASSERT_EQ(value_of(list, "io.pressured.Headroom.Bytes", "app.service", NULL), 777);
        ASSERT_TRUE(!find(list, "io.pressured.Protection.State", "app.service", NULL));
        ASSERT_EQ(value_of(list, "io.pressured.Memory.Events", "/", "{\"type\":\"oom_kill\"}"), 3);
        ASSERT_EQ(json_array_size(list), OWN + 1 + report_cgroup_metrics(&c[0]) + report_cgroup_metrics(&c[1]));
        json_decref(list);
        samples[2].has_oom_kills = false;
}

int main(void) {
        make_samples();
        test_list();
        test_budget();
        test_weight_matches_list();
        test_not_utf8();
        test_v1();
        return 0;
}
