/* SPDX-License-Identifier: MIT */
/*
 * The LowMemoryMonitor service (server/low-memory-monitor.h) without a
 * bus: the bytes of the levels and the names of the states; enabled, the
 * three whole-system registrations of [Levels] held as listeners and a
 * bus user waiting for an unreachable bus (GetStatus's "dbus" and the
 * /metrics families say so), an injected event taken once and not
 * signalled without the name; disabled, nothing left (no registration,
 * no event); out of memory at each step of enabling leaves it off.
 * Needs /proc/pressure/memory and the right to write a trigger there
 * (root); skipped otherwise.
 */
#include <event2/buffer.h>
#include <unistd.h>

#include "event.h"
#include "fail-inject.h"
#include "low-memory-monitor.h"
#include "test-capture.h"
#include "test-registry-fixture.h"
#include "test-body.h"
#include "tests.h"
#include "util.h"

typedef struct Fixture {
        REGISTRY_FIXTURE_FIELDS;
        SystemBus *bus;
        LowMemoryMonitor *m;
} Fixture;

static void fixture_init(Fixture *f) {
        *f = (Fixture) {};
        registry_fixture_init(f);
        /* 2 s windows: what the kernel takes without CAP_SYS_RESOURCE too. */
        f->config->levels[LEVEL_LOW] = (PsiTrigger) { PSI_STALL_SOME, 1800 * USEC_PER_MSEC, 2 * USEC_PER_SEC };
        f->config->levels[LEVEL_MEDIUM] = (PsiTrigger) { PSI_STALL_SOME, 1900 * USEC_PER_MSEC, 2 * USEC_PER_SEC };
        f->config->levels[LEVEL_CRITICAL] = (PsiTrigger) { PSI_STALL_FULL, 1900 * USEC_PER_MSEC, 2 * USEC_PER_SEC };
        ASSERT_OK(system_bus_new(&f->bus, f->base, "unix:path=/nonexistent/bus"));
        f->env.bus = f->bus;
        ASSERT_OK(low_memory_monitor_new(&f->reg, f->bus, &f->m));
}

static void fixture_done(Fixture *f) {
        ASSERT_TRUE(low_memory_monitor_free(f->m) == NULL);
        system_bus_free(f->bus);
        registry_fixture_done(f);
}

static void test_names(void) {
        ASSERT_EQ(low_memory_monitor_level_byte(LEVEL_LOW), 50);
        ASSERT_EQ(low_memory_monitor_level_byte(LEVEL_MEDIUM), 100);
        ASSERT_EQ(low_memory_monitor_level_byte(LEVEL_CRITICAL), 255);
        ASSERT_EQ(low_memory_monitor_level_byte(_LEVEL_INVALID), 0);
        ASSERT_STREQ(low_memory_monitor_state_to_string(LMM_OFF), "off");
        ASSERT_STREQ(low_memory_monitor_state_to_string(LMM_WAITING_FOR_BUS), "waiting-for-bus");
        ASSERT_STREQ(low_memory_monitor_state_to_string(LMM_OWNER), "owner");
        ASSERT_STREQ(low_memory_monitor_state_to_string(LMM_NAME_TAKEN), "name-taken");
        ASSERT_TRUE(low_memory_monitor_state_to_string(_LMM_STATE_MAX) == NULL);
        ASSERT_EQ(low_memory_monitor_state(NULL), LMM_OFF);
        ASSERT_EQ(low_memory_monitor_signals(NULL), 0);
        ASSERT_TRUE(low_memory_monitor_free(NULL) == NULL);
}

static void check_status(Fixture *f, const char *want) {
        json_t *j = low_memory_monitor_status_json(f->m, f->bus);
        char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

        ASSERT_STREQ(text, want);
        free(text);
        json_decref(j);
}

static Body *inject_body(Level level) {
        json_t *ev = event_pressure_new("/", "inject", RESOURCE_MEMORY, NULL, 1, 1);

        ASSERT_TRUE(ev);
        ASSERT_OK(json_object_set_new(ev, "level", json_string(level_to_string(level))));
        return test_body_new(ev, 1, BODY_HAS_LEVEL);
}

static void test_enable_disable(void) {
        struct evbuffer *out = evbuffer_new();
        Fixture f;
        Registration *r;
        Body *b;
        char *text;

        fixture_init(&f);
        check_status(&f, "{\"connected\":false,\"low_memory_monitor\":\"off\",\"low_memory_warnings\":0}");
        ASSERT_OK(low_memory_monitor_set_enabled(f.m, true));
        ASSERT_OK(low_memory_monitor_set_enabled(f.m, true)); /* idempotent */
        ASSERT_EQ(f.reg.n_registrations, 3);
        LIST_FOREACH(registrations, r, f.reg.registrations) {
                ASSERT_EQ(r->src.type, SOURCE_PSI);
                ASSERT_STREQ(r->src.cgroup, "/");
                /* It takes the bare notification, like a proxied client: no varlink subscriber. */
                ASSERT_EQ(r->n_kicked, 1);
                ASSERT_EQ(r->n_subscribers, 0);
        }
        /* Three registrations, and the bus user's retry timer. */
        ASSERT_EQ(event_base_get_num_events(f.base, EVENT_BASE_COUNT_ADDED), 4);
        check_status(&f, "{\"connected\":false,\"low_memory_monitor\":\"waiting-for-bus\",\"low_memory_warnings\":0}");

        /* One injected body reaches the three listeners; nothing is sent without the name. */
        b = inject_body(LEVEL_MEDIUM);
        ASSERT_TRUE(b && (b->flags & BODY_HAS_LEVEL));
        ASSERT_EQ(registry_inject_split(&f.reg, "/", b, "/", b, RESOURCE_MEMORY, LEVEL_MEDIUM, 1), 0);
        body_unref(b);
        ASSERT_EQ(low_memory_monitor_signals(f.m), 0);

        low_memory_monitor_write_metrics(out, f.m, f.bus);
        text = take_string(out);
        ASSERT_TRUE(strstr(text, "# TYPE pressured_dbus_connected gauge\npressured_dbus_connected 0\n"));
        ASSERT_TRUE(strstr(text, "pressured_low_memory_monitor_owner 0\n"));
        ASSERT_TRUE(strstr(text, "# TYPE pressured_low_memory_warnings_total counter\n"
                                 "pressured_low_memory_warnings_total 0\n"));
        free(text);

        ASSERT_OK(low_memory_monitor_set_enabled(f.m, false));
        ASSERT_EQ(f.reg.n_registrations, 0);
        ASSERT_EQ(event_base_get_num_events(f.base, EVENT_BASE_COUNT_ADDED), 0);
        check_status(&f, "{\"connected\":false,\"low_memory_monitor\":\"off\",\"low_memory_warnings\":0}");
        fixture_done(&f);
        evbuffer_free(out);
}

/* Out of memory anywhere in enabling: -ENOMEM or a level left out, never a half-held service. */
static void test_out_of_memory(void) {
        char path[64];
        int saved;

        for (unsigned n = 1;; n++) {
                Fixture f;
                bool injected;
                int r;

                fixture_init(&f);
                saved = stderr_capture(path);
                fail_inject_reset();
                fail_inject_after(FAIL_ALLOC, n);
                r = low_memory_monitor_set_enabled(f.m, true);
                injected = fail_inject_fired(FAIL_ALLOC) > 0;
                fail_inject_reset();
                (void) stderr_restore(saved, path);
                if (r < 0) {
                        ASSERT_ERR(r, ENOMEM);
                        ASSERT_EQ(low_memory_monitor_state(f.m), LMM_OFF);
                        ASSERT_EQ(f.reg.n_registrations, 0);
                } else
                        ASSERT_EQ(low_memory_monitor_state(f.m), LMM_WAITING_FOR_BUS);
                fixture_done(&f);
                if (!injected) {
                        ASSERT_OK(r);
                        break;
                }
        }
}

int main(void) {
        test_names();
        if (access("/proc/pressure/memory", W_OK) < 0) {
                printf("SKIP: cannot write a trigger into /proc/pressure/memory\n");
                return 77;
        }
        test_enable_disable();
        test_out_of_memory();
        return 0;
}
