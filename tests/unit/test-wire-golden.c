/* SPDX-License-Identifier: MIT */
/*
 * What the daemon writes on the wire, frozen as data: every kind of event
 * as a subscriber receives it (the per-subscriber prefix and the shared
 * body, also as a peer in a cgroup namespace sees it), the "subscribed"
 * and "removed" messages, the replies of io.pressured's methods and of
 * org.varlink.service answered through methods_dispatch() on a fake cgroup
 * tree, every error, and systemd-report's List and Describe replies. Each
 * is built by today's code and compared byte for byte with its file in
 * tests/unit/data/wire/ (NAME.json: the messages, each followed by a
 * newline instead of its NUL), so that a rewrite of any of them shows
 * either the same bytes or a reviewed change of the files. A file nothing
 * here writes fails the test too.
 *
 * Values that change from run to run are replaced before the comparison:
 * GetStatus "uptime_us", a past episode's wall-clock "start_time_us" and
 * "end_time_us", the fake tree's temporary folder as GetStatus "v2_root"
 * (/sys/fs/cgroup), and the project's version (VERSION), which changes at
 * every release.
 *
 * Usage: test-wire-golden DIR (compare) | test-wire-golden --write DIR
 */
#include <dirent.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "client.h"
#include "config-build.h"
#include "event.h"
#include "log.h"
#include "methods.h"
#include "metrics-report.h"
#include "registration-episode.h"
#include "registration.h"
#include "source-protection.h"
#include "status.h"
#include "test-registry-fixture.h"
#include "tests.h"
#include "util.h"
#include "varlink-error.h"
#include "varlink.h"

static const char *golden_dir;
static bool writing;

/* The names written or compared, to find files nothing makes any more. */
static char *seen[256];
static size_t n_seen;

static void write_all(const char *path, const char *data, size_t size) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, data, size), (ssize_t) size);
}

/*
 * @data (@size bytes: messages each ended by its NUL) as golden file @name:
 * written with --write, else compared with the file, NULs as newlines.
 */
static void golden(const char *name, const char *data, size_t size) {
        _cleanup_free_ char *path = NULL, *text = malloc(size + 1), *want = NULL;
        size_t n;

        ASSERT_TRUE(text && size > 0 && data[size - 1] == 0);
        for (size_t i = 0; i < n_seen; i++)
                if (streq(seen[i], name))
                        TEST_FAIL("golden file %s made twice", name);
        ASSERT_TRUE(n_seen < ELEMENTSOF(seen));
        seen[n_seen] = strdup(name);
        ASSERT_TRUE(seen[n_seen++]);
        for (size_t i = 0; i < size; i++) {
                ASSERT_TRUE(data[i] != '\n');
                text[i] = data[i] ? data[i] : '\n';
        }
        text[size] = 0;
        ASSERT_TRUE(asprintf(&path, "%s/%s.json", golden_dir, name) > 0);
        if (writing) {
                write_all(path, text, size);
                return;
        }
        if (read_full_file(path, 1 << 20, &want, &n) < 0)
                TEST_FAIL("%s: cannot be read (run test-wire-golden --write DIR to make it)", path);
        if (n != size || memcmp(want, text, size) != 0) {
                size_t i = 0;

                while (i < n && i < size && want[i] == text[i])
                        i++;
                TEST_FAIL("%s differs at byte %zu:\n  file:  %.*s\n  today: %.*s", path, i, (int) (n - i),
                          want + i, (int) (size - i), text + i);
        }
}

/* Every golden file of the folder was made by this run. */
static void check_no_stale(void) {
        DIR *d = opendir(golden_dir);
        struct dirent *de;

        ASSERT_TRUE(d);
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                bool found = false;

                if (len < 6 || !streq(de->d_name + len - 5, ".json"))
                        continue;
                for (size_t i = 0; i < n_seen; i++)
                        if (strlen(seen[i]) == len - 5 && strncmp(seen[i], de->d_name, len - 5) == 0)
                                found = true;
                if (!found)
                        TEST_FAIL("%s/%s: no longer made by the daemon's code; remove it", golden_dir, de->d_name);
        }
        closedir(d);
}

/*
 * Replace the value of every member @key (a number or a string) of the
 * message @text (of *@size bytes with its NUL; reallocated) with @with.
 */
static void normalize(char **text, size_t *size, const char *key, const char *with) {
        _cleanup_free_ char *pattern = NULL;
        size_t at = 0;

        ASSERT_TRUE(asprintf(&pattern, "\"%s\":", key) > 0);
        for (;;) {
                char *m = strstr(*text + at, pattern), *v, *end, *out;
                size_t before;

                if (!m)
                        return;
                v = m + strlen(pattern);
                if (*v == '"')
                        end = strchr(v + 1, '"') + 1;
                else
                        for (end = v; *end >= '0' && *end <= '9'; end++)
                                ;
                before = (size_t) (v - *text);
                ASSERT_TRUE(asprintf(&out, "%.*s%s%s", (int) before, *text, with, end) > 0);
                free(*text);
                *text = out;
                *size = strlen(out) + 1;
                at = before + strlen(with);
        }
}

/* ---- events ---- */

static const PsiStats psi_full = {
        .has_some = true, .some = { .avg10 = 1234, .avg60 = 567, .avg300 = 89, .total_us = 123456789 },
        .has_full = true, .full = { .avg10 = 1, .avg60 = 0, .avg300 = 10000, .total_us = 42 },
};
static const PsiStats psi_some = { .has_some = true, .some = { .avg10 = 7, .avg60 = 700, .avg300 = 1, .total_us = 5 } };

/* A protection tree with /machine.slice/ctr/app (usage 300M, min 100M, low unlimited) in it. */
static ProtectionTree *tree;
static ProtectionNode *app;

static void tree_make(void) {
        ProtectionNode *m, *ctr;

        ASSERT_OK(protection_tree_new(true, &tree));
        ASSERT_OK(protection_node_add(tree, protection_tree_root(tree), "machine.slice", &m));
        ASSERT_OK(protection_node_add(tree, m, "ctr", &ctr));
        ASSERT_OK(protection_node_add(tree, ctr, "app", &app));
        (void) protection_node_update(tree, m, UINT64_C(1) << 30, PROTECTION_UNLIMITED, PROTECTION_UNLIMITED);
        (void) protection_node_update(tree, ctr, UINT64_C(600) << 20, PROTECTION_UNLIMITED, UINT64_C(512) << 20);
        (void) protection_node_update(tree, app, UINT64_C(300) << 20, UINT64_C(100) << 20, PROTECTION_UNLIMITED);
        (void) protection_tree_compute(tree, NULL, NULL);
}

/*
 * The message a subscriber with @level, at @seq, @missed and @count, gets
 * for @e: the prefix and the body, as a peer with the cgroup namespace
 * root @root (NULL: none) sees it.
 */
static void event_golden(const char *name, const EventData *e, uint64_t seq, uint64_t missed, uint64_t count,
                         Level level, const char *root) {
        _cleanup_(event_view_done) EventView v = {};
        _cleanup_free_ char *msg = NULL;
        char prefix[OUT_PREFIX_MAX];
        Body *b = event_data_body(e, 7), *seen_as;
        size_t n;

        ASSERT_TRUE(b);
        ASSERT_OK(event_view_init(&v, root));
        seen_as = event_body_view(b, &v);
        ASSERT_TRUE(seen_as);
        n = event_prefix(prefix, seen_as, seq, missed, count, level);
        ASSERT_TRUE(asprintf(&msg, "%.*s%s", (int) n, prefix, seen_as->data) > 0);
        body_unref(seen_as);
        body_unref(b);
        golden(name, msg, strlen(msg) + 1);
}

static void test_pressure(void) {
        EventData e = {
                .kind = EVENT_PRESSURE, .cgroup = "/system.slice/db.service", .realtime_us = 1700000000123456,
                .monotonic_us = 98765432,
                .pressure = { .source = SOURCE_PSI, .resource = RESOURCE_MEMORY, .psi = &psi_full,
                              .level = _LEVEL_INVALID },
        };
        static const char escapes[] = "/a \"q\" b\\s/t\tn\x01\x1f\x7f/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/x\\/y";

        /* An explicit PSI trigger: no level. */
        event_golden("event-pressure-psi", &e, 1, 0, 1, _LEVEL_INVALID, NULL);
        /* A level subscription: the prefix adds its level; the cgroup's node rides along. */
        e.cgroup = "/machine.slice/ctr/app";
        e.pressure.psi = &psi_some;
        e.pressure.resource = RESOURCE_IO;
        e.pressure.protection = app;
        event_golden("event-pressure-level", &e, 12, 3, 4, LEVEL_MEDIUM, NULL);
        /* The same, as a peer whose namespace root is /machine.slice/ctr sees it. */
        event_golden("event-pressure-view", &e, 12, 3, 4, LEVEL_MEDIUM, "/machine.slice/ctr");
        /* vmpressure: the level is the body's. */
        e = (EventData) {
                .kind = EVENT_PRESSURE, .cgroup = "/", .realtime_us = 1, .monotonic_us = 2,
                .pressure = { .source = SOURCE_VMPRESSURE, .resource = RESOURCE_MEMORY, .level = LEVEL_CRITICAL },
        };
        event_golden("event-pressure-vmpressure", &e, UINT64_MAX, UINT64_MAX, 1, LEVEL_LOW, NULL);
        /* Injected: "inject", its level and "synthetic". */
        e.cgroup = "/user.slice";
        e.pressure = (PressureSample) { .source = _SOURCE_INVALID, .resource = RESOURCE_CPU, .level = LEVEL_LOW };
        event_golden("event-pressure-inject", &e, 2, 0, 1, LEVEL_CRITICAL, NULL);
        /* A cgroup name with every kind of character JSON escapes, and UTF-8. */
        e.cgroup = escapes;
        event_golden("event-pressure-escapes", &e, 1, 0, 1, _LEVEL_INVALID, NULL);
}

static void test_other_events(void) {
        MemoryEvents now = { .present = 0x3f, .value = { 1, 2, 3, 4, 5, 6 } };
        MemoryEvents delta = { .present = (1u << MEMORY_EVENT_OOM) | (1u << MEMORY_EVENT_OOM_KILL),
                               .value = { [MEMORY_EVENT_OOM] = 1, [MEMORY_EVENT_OOM_KILL] = 1 } };
        MemoryEvents few = { .present = 1u << MEMORY_EVENT_HIGH, .value = { [MEMORY_EVENT_HIGH] = 9 } };
        EventData e = {
                .kind = EVENT_MEMORY_EVENTS, .cgroup = "/machine.slice/ctr/app", .realtime_us = 11, .monotonic_us = 22,
                .memory_events = { .counters = &now, .delta = &delta },
        };

        event_golden("event-memory-events", &e, 5, 1, 2, _LEVEL_INVALID, NULL);
        e.memory_events = (MemoryEventsSample) { .counters = &few, .delta = &few };
        event_golden("event-memory-events-view", &e, 6, 0, 1, _LEVEL_INVALID, "/machine.slice/ctr/app");
        e.kind = EVENT_PROTECTION;
        e.protection = (ProtectionSample) { .state = PROTECTION_STATE_MIN, .previous = PROTECTION_STATE_NONE,
                                            .node = app };
        event_golden("event-protection", &e, 3, 0, 1, _LEVEL_INVALID, NULL);
        e.protection = (ProtectionSample) { .state = PROTECTION_STATE_NONE, .previous = PROTECTION_STATE_LOW };
        event_golden("event-protection-no-node", &e, 4, 0, 1, _LEVEL_INVALID, NULL);
        e.kind = EVENT_KILLED;
        e.killed = (KillSample) { .by = "kernel", .reason = "oom_kill" };
        event_golden("event-killed-kernel", &e, 1, 0, 3, _LEVEL_INVALID, NULL);
        e.cgroup = "/system.slice/victim.service";
        e.killed = (KillSample) { .by = "systemd-oomd", .reason = "memory-pressure" };
        event_golden("event-killed-oomd", &e, 2, 0, 1, _LEVEL_INVALID, NULL);
        e.kind = EVENT_PREKILL;
        e.prekill = (PrekillSample) { .by = "systemd-oomd", .id = 21, .deadline_us = 755000 };
        event_golden("event-prekill", &e, 1, 0, 0, _LEVEL_INVALID, NULL);
        e.cgroup = "/machine.slice";
        event_golden("event-prekill-view", &e, 2, 1, 0, _LEVEL_INVALID, "/machine.slice/ctr");
}

static void test_episode_events(void) {
        EpisodeRecord psi = { .start_us = 1000000, .end_us = 5000000, .events = 3, .peak = 125000, .peak_known = true };
        EpisodeRecord vm = { .start_us = 10, .end_us = 2000010, .events = 9, .peak = LEVEL_CRITICAL + 1 };
        EventTrigger t = { .type = SOURCE_PSI, .psi = { PSI_STALL_SOME, 150000, 2000000 }, .level = LEVEL_LOW };
        uint64_t headroom = UINT64_C(1) << 33, target = 12345;
        EventData e = {
                .kind = EVENT_CLEARED, .cgroup = "/a", .realtime_us = 7, .monotonic_us = 5000000,
                .cleared = { .source = SOURCE_PSI, .resource = RESOURCE_CPU, .episode = &psi },
        };

        event_golden("event-cleared-psi", &e, 9, 0, 0, _LEVEL_INVALID, NULL);
        psi.peak_known = false;
        event_golden("event-cleared-psi-unknown-peak", &e, 9, 0, 0, LEVEL_LOW, NULL);
        e.cleared = (ClearedEpisode) { .source = SOURCE_VMPRESSURE, .resource = RESOURCE_MEMORY, .episode = &vm };
        event_golden("event-cleared-vmpressure", &e, 10, 2, 0, LEVEL_MEDIUM, NULL);

        e.kind = EVENT_TRIGGER_CHANGED;
        e.trigger_changed = (TriggerChange) { .source = SOURCE_PSI, .resource = RESOURCE_MEMORY, .trigger = t,
                                              .adjusted_reason = "the daemon lacks CAP_SYS_RESOURCE" };
        event_golden("event-trigger-changed-psi", &e, 4, 0, 0, LEVEL_LOW, NULL);
        e.trigger_changed = (TriggerChange) {
                .source = SOURCE_VMPRESSURE, .resource = RESOURCE_MEMORY,
                .trigger = { .type = SOURCE_VMPRESSURE, .vm_level = LEVEL_MEDIUM, .vm_mode = VMPRESSURE_MODE_HIERARCHY,
                             .level = LEVEL_MEDIUM },
        };
        event_golden("event-trigger-changed-vmpressure", &e, 5, 0, 0, LEVEL_MEDIUM, NULL);

        e.kind = EVENT_LEVEL;
        e.level_change = (LevelChange) { .level = STREAM_LEVEL_MEDIUM, .headroom = &headroom,
                                         .reclaim_target = &target };
        event_golden("event-level", &e, 1, 0, 0, _LEVEL_INVALID, NULL);
        e.level_change = (LevelChange) { .level = STREAM_LEVEL_NORMAL };
        event_golden("event-level-unknown", &e, 2, 5, 0, _LEVEL_INVALID, NULL);
}

/* The "subscribed" message as methods.c makes it (subscribed_message()). */
static void subscribed_golden(const char *name, const char *cgroup, SourceType source, Resource resource,
                              const EventTrigger *t, const char *reason, const SubscribedState *st) {
        json_t *state = subscribed_state_json(st), *trigger = event_trigger_new(t), *ev;
        size_t n;
        char *msg;

        ASSERT_TRUE(state && trigger);
        ev = event_subscribed_new(cgroup, source, resource, trigger, reason != NULL, reason, state);
        ASSERT_TRUE(ev);
        msg = varlink_reply_new(json_pack("{s:o}", "event", ev), true, &n);
        ASSERT_TRUE(msg);
        golden(name, msg, n);
        free(msg);
}

static void test_subscribed(void) {
        EpisodeRecord psi = { .start_us = 1000000, .events = 3, .peak = 500000, .peak_known = true };
        EpisodeRecord vm = { .start_us = 10, .events = 1, .peak = LEVEL_LOW + 1 };
        EventTrigger t = { .type = SOURCE_PSI, .psi = { PSI_STALL_FULL, 100000, 1000000 }, .level = _LEVEL_INVALID };
        SubscribedState st = { .has_psi = true, .psi = psi_full, .episode = &psi, .episode_psi = true,
                               .now_us = 4000000, .realtime_us = 1700000000000000 };
        MemoryEvents me = { .present = 0x1f, .value = { 0, 10, 0, 2, 1 } };

        subscribed_golden("subscribed-psi", "/a", SOURCE_PSI, RESOURCE_IO, &t, NULL, &st);
        t.psi.window_us = 2000000;
        t.psi.threshold_us = 200000;
        t.level = LEVEL_CRITICAL;
        subscribed_golden("subscribed-level-adjusted", "/", SOURCE_PSI, RESOURCE_MEMORY, &t,
                          "the window was rounded up to a multiple of 2 s", &st);
        t = (EventTrigger) { .type = SOURCE_VMPRESSURE, .vm_level = LEVEL_LOW, .vm_mode = VMPRESSURE_MODE_DEFAULT,
                             .level = _LEVEL_INVALID };
        st = (SubscribedState) { .episode = &vm, .now_us = 20, .realtime_us = 30 };
        subscribed_golden("subscribed-vmpressure", "/a", SOURCE_VMPRESSURE, RESOURCE_MEMORY, &t, NULL, &st);
        t = (EventTrigger) { .type = SOURCE_MEMORY_EVENTS, .level = _LEVEL_INVALID };
        st = (SubscribedState) { .has_counters = true, .counters = me };
        subscribed_golden("subscribed-memory-events", "/a", SOURCE_MEMORY_EVENTS, RESOURCE_MEMORY, &t, NULL, &st);
        t.type = SOURCE_PROTECTION;
        st = (SubscribedState) { .node = app };
        subscribed_golden("subscribed-protection", "/machine.slice/ctr/app", SOURCE_PROTECTION, RESOURCE_MEMORY, &t,
                          NULL, &st);
        t.type = SOURCE_KILLS;
        st = (SubscribedState) { .has_kills = true, .kernel_kills = true,
                                 .oomd_reason = "systemd-oomd is not running (org.freedesktop.oom1 has no owner)" };
        subscribed_golden("subscribed-kills", "/", SOURCE_KILLS, RESOURCE_MEMORY, &t, NULL, &st);
        st = (SubscribedState) { .has_kills = true, .kernel_reason = "no memory.events: \"/a\"",
                                 .oomd_reason = "no system bus" };
        subscribed_golden("subscribed-kills-none", "/a", SOURCE_KILLS, RESOURCE_MEMORY, &t, NULL, &st);
}

static void test_removed(void) {
        size_t n;
        char *msg = event_removed_message("/system.slice/gone.service", 17, &n);

        ASSERT_TRUE(msg);
        golden("event-removed", msg, n);
        free(msg);
}

/* ---- errors, each constructor ---- */

static void error_golden(const char *name, VarlinkError *e) {
        size_t n;
        char *msg = varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);

        ASSERT_TRUE(msg);
        varlink_error_done(e);
        golden(name, msg, n);
        free(msg);
}

static void test_errors(void) {
        VarlinkError e = {};

        (void) varlink_error_no_such_cgroup(&e, -ENOENT, "/nope");
        error_golden("error-no-such-cgroup", &e);
        (void) varlink_error_invalid_cgroup_path(&e, -EINVAL, "../x");
        error_golden("error-invalid-cgroup-path", &e);
        (void) varlink_error_invalid_cgroup_path(&e, -EINVAL, NULL);
        error_golden("error-invalid-cgroup-path-null", &e);
        (void) varlink_error_permission_denied(&e, "Reload is reserved to root");
        error_golden("error-permission-denied", &e);
        (void) varlink_error_source_unavailable(&e, -EOPNOTSUPP, "vmpressure",
                                                "there is no cgroup v1 memory hierarchy");
        error_golden("error-source-unavailable", &e);
        (void) varlink_error_invalid_trigger(&e, -EINVAL, "the threshold exceeds the window");
        error_golden("error-invalid-trigger", &e);
        (void) varlink_error_limit_exceeded(&e, -EMFILE, "MaxClients", 1024);
        error_golden("error-limit-exceeded", &e);
        (void) varlink_error_limit_exceeded(&e, -EMFILE, "open files", UINT64_MAX);
        error_golden("error-limit-exceeded-clamped", &e);
        (void) varlink_error_configuration_rejected(&e, -EINVAL, "/etc/pressured/pressured.conf:3: unknown key");
        error_golden("error-configuration-rejected", &e);
        (void) varlink_error_internal(&e, -ENOMEM);
        error_golden("error-internal", &e);
        (void) varlink_error_no_such_prekill(&e, 77);
        error_golden("error-no-such-prekill", &e);
        (void) varlink_error_invalid_parameter(&e, "psi.window_us");
        error_golden("error-invalid-parameter", &e);
        (void) varlink_error_method_not_found(&e, "io.pressured.Nope");
        error_golden("error-method-not-found", &e);
        (void) varlink_error_interface_not_found(&e, "com.example.Nope");
        error_golden("error-interface-not-found", &e);
        (void) varlink_error_expected_more(&e);
        error_golden("error-expected-more", &e);
}

/* ---- methods, answered through methods_dispatch() ---- */

typedef struct Fixture {
        char root[64];
        REGISTRY_FIXTURE_FIELDS;
        StatusContext status;
        Methods methods;
        ClientServer *server;
        ProtectionSource *protection;
} Fixture;

static const SourceCallbacks *registry_cb;

static const char *const tree_files[] = {
        "/cgroup.controllers", "/x/memory.events", "/x/memory.current", "/x/memory.min", "/x/memory.low",
        "/x/memory.max", "/x/memory.high", "/x/y/memory.current", "/x/y/memory.min", "/x/y/memory.low",
};

/* A fake cgroup2 tree: /x (memory.events, a 16 KiB room below memory.max) and /x/y, with protection. */
static void fixture_tree(Fixture *f) {
        RegistrationKey key = { .type = SOURCE_MEMORY_EVENTS, .cgroup = "/x" };
        SourceFailure e = {};
        Registration *r;
        char path[128];

        snprintf(f->root, sizeof(f->root), "/tmp/test-wire-golden-XXXXXX");
        ASSERT_TRUE(mkdtemp(f->root));
        snprintf(path, sizeof(path), "%s/x", f->root);
        ASSERT_OK(mkdir(path, 0755));
        snprintf(path, sizeof(path), "%s/x/y", f->root);
        ASSERT_OK(mkdir(path, 0755));
        test_write_file_at(f->root, "/cgroup.controllers", "cpu io memory\n");
        test_write_file_at(f->root, "/x/memory.events", "low 0\nhigh 2\nmax 1\noom 0\noom_kill 0\n");
        test_write_file_at(f->root, "/x/memory.current", "1048576\n");
        test_write_file_at(f->root, "/x/memory.min", "0\n");
        test_write_file_at(f->root, "/x/memory.low", "2097152\n");
        test_write_file_at(f->root, "/x/memory.max", "1064960\n");
        test_write_file_at(f->root, "/x/memory.high", "max\n");
        test_write_file_at(f->root, "/x/y/memory.current", "524288\n");
        test_write_file_at(f->root, "/x/y/memory.min", "max\n");
        test_write_file_at(f->root, "/x/y/memory.low", "0\n");
        ASSERT_OK(hierarchy_open(&f->v2, f->root));

        ASSERT_OK(registration_acquire(&f->reg, &key, -1, &r, &e));
        registry_cb = r->src.cb;
        registration_release(r);
}

static int reload_ok(void *userdata, char **ret_error) {
        return 0;
}

static int reload_rejected(void *userdata, char **ret_error) {
        *ret_error = strdup("pressured.conf:7: [Levels] Low= is not a PSI trigger");
        return *ret_error ? -EINVAL : -ENOMEM;
}

static void fixture_init(Fixture *f) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        *f = (Fixture) {};
        registry_fixture_init(f);
        fixture_tree(f);
        ASSERT_OK(protection_source_new(f->base, &f->counters, f->root, true, 60 * USEC_PER_SEC, &f->protection));
        f->status = (StatusContext) {
                .config = f->config, .registry = &f->reg, .counters = &f->counters, .protection = f->protection,
                .v2 = &f->v2, .v1 = &f->v1, .start_monotonic = now_usec(CLOCK_MONOTONIC),
        };
        f->methods = (Methods) {
                .config = f->config, .registry = &f->reg, .v2 = &f->v2, .v1 = &f->v1, .protection = f->protection,
                .counters = &f->counters, .status = &f->status, .reload = reload_ok,
        };
        ASSERT_TRUE(lfd >= 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/varlink", f->root);
        ASSERT_OK(bind(lfd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(listen(lfd, 1));
        ASSERT_OK(client_server_new(f->base, f->config, lfd, methods_dispatch, &f->methods, &f->server));
        f->status.clients = f->server;
}

static void fixture_done(Fixture *f) {
        char path[128];

        f->server = client_server_free(f->server);
        f->protection = protection_source_free(f->protection);
        registry_fixture_done(f);
        for (size_t i = ELEMENTSOF(tree_files); i > 0; i--) {
                snprintf(path, sizeof(path), "%s%s", f->root, tree_files[i - 1]);
                ASSERT_OK(unlink(path));
        }
        snprintf(path, sizeof(path), "%s/x/y", f->root);
        ASSERT_OK(rmdir(path));
        snprintf(path, sizeof(path), "%s/x", f->root);
        ASSERT_OK(rmdir(path));
        snprintf(path, sizeof(path), "%s/varlink", f->root);
        ASSERT_OK(unlink(path));
        ASSERT_OK(rmdir(f->root));
}

typedef struct Peer {
        Client *client;
        int fd;
} Peer;

static void peer_open(Fixture *f, Peer *p, uid_t uid) {
        struct ucred cred = { .pid = getpid(), .uid = uid, .gid = uid };
        int sv[2];

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
        p->fd = sv[1];
        ASSERT_OK(client_new(f->server, sv[0], &cred, &p->client));
}

static void peer_close(Peer *p) {
        p->client = client_free(p->client);
        close(p->fd);
}

/* Dispatch @call to @p's client and return the one message it is answered with (malloc'ed, with its NUL). */
static char *call(Fixture *f, Peer *p, const char *text, size_t *ret_size) {
        VarlinkCall vc = {};
        char buf[1 << 16], *msg;
        size_t size = 0;
        ssize_t n;

        ASSERT_OK(varlink_call_parse(text, strlen(text), &vc));
        methods_dispatch(p->client, &vc, &f->methods);
        varlink_call_done(&vc);
        for (int i = 0; i < 5000 && (size == 0 || buf[size - 1] != 0); i++) {
                ASSERT_OK(event_base_loop(f->base, EVLOOP_NONBLOCK));
                n = read(p->fd, buf + size, sizeof(buf) - size);
                if (n > 0)
                        size += (size_t) n;
                else
                        (void) usleep(1000);
                ASSERT_TRUE(size < sizeof(buf));
        }
        ASSERT_TRUE(size > 0 && buf[size - 1] == 0 && memchr(buf, 0, size) == buf + size - 1);
        *ret_size = size;
        msg = malloc(size);
        ASSERT_TRUE(msg);
        return memcpy(msg, buf, size);
}

/* @text's answer as golden file @name, with the version and uptime that change made constant. */
static void call_golden(Fixture *f, Peer *p, const char *name, const char *text) {
        size_t n;
        char *msg = call(f, p, text, &n);

        normalize(&msg, &n, "version", "\"VERSION\"");
        normalize(&msg, &n, "uptime_us", "0");
        normalize(&msg, &n, "start_time_us", "0");
        normalize(&msg, &n, "end_time_us", "0");
        normalize(&msg, &n, "v2_root", "\"/sys/fs/cgroup\"");
        golden(name, msg, n);
        free(msg);
}

/* A vmpressure registration made in memory with two past episodes, like test-error-paths' own. */
static void registration_with_history(Fixture *f) {
        static const EpisodeRecord past[] = {
                { .start_us = 1000, .end_us = 3001000, .events = 2, .peak = LEVEL_MEDIUM + 1 },
                { .start_us = 9000000, .end_us = 9500000, .events = 1, .peak = LEVEL_LOW + 1 },
        };
        Registration *r = calloc(1, sizeof(*r));

        ASSERT_TRUE(r);
        r->registry = &f->reg;
        r->src = (Source) {
                .env = &f->env, .cb = registry_cb, .type = SOURCE_VMPRESSURE, .cgroup = strdup("/x/y"),
                .vm_level = LEVEL_MEDIUM, .vm_mode = VMPRESSURE_MODE_LOCAL, .fd = -1, .aux_fd = -1, .last_state = -1,
        };
        ASSERT_TRUE(r->src.cgroup);
        registration_episode_init(r);
        for (size_t i = 0; i < ELEMENTSOF(past); i++)
                ASSERT_OK(episode_history_push(&r->history, &past[i]));
        LIST_PREPEND(registrations, f->reg.registrations, r);
        f->reg.n_registrations++;
}

#define CALL(method, params) "{\"method\":\"" method "\",\"parameters\":" params "}"

static void test_methods(void) {
        Fixture fx;
        Peer p, other, sub;
        Registration *r;

        fixture_init(&fx);
        peer_open(&fx, &p, 0);
        peer_open(&fx, &other, 1000);
        peer_open(&fx, &sub, 0);

        call_golden(&fx, &p, "reply-get-info", CALL("org.varlink.service.GetInfo", "{}"));
        call_golden(&fx, &p, "reply-get-interface-description",
                    CALL("org.varlink.service.GetInterfaceDescription", "{\"interface\":\"org.varlink.service\"}"));
        call_golden(&fx, &sub, "reply-subscribe",
                    "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
                    "\"parameters\":{\"memory_events\":true,\"cgroup\":\"/x\"}}");
        registration_with_history(&fx);
        call_golden(&fx, &p, "reply-get-status", CALL("io.pressured.GetStatus", "{}"));
        call_golden(&fx, &other, "reply-get-status-unprivileged", CALL("io.pressured.GetStatus", "{}"));
        call_golden(&fx, &p, "reply-get-protection", CALL("io.pressured.GetProtection", "{\"cgroup\":\"/x\"}"));
        call_golden(&fx, &p, "reply-get-headroom", CALL("io.pressured.GetHeadroom", "{\"cgroup\":\"/x\"}"));
        /* /x/y has no memory.max to read: its limits are unknown. */
        call_golden(&fx, &p, "reply-get-headroom-unknown",
                    CALL("io.pressured.GetHeadroom", "{\"cgroup\":\"/x/y\"}"));
        call_golden(&fx, &p, "reply-inject", CALL("io.pressured.Inject", "{\"cgroup\":\"/x\",\"level\":\"low\"}"));
        call_golden(&fx, &p, "reply-reload", CALL("io.pressured.Reload", "{}"));

        call_golden(&fx, &p, "answer-method-not-found", CALL("io.pressured.Nope", "{}"));
        call_golden(&fx, &p, "answer-interface-not-found", CALL("com.example.Nope", "{}"));
        call_golden(&fx, &p, "answer-invalid-parameter", CALL("io.pressured.GetStatus", "{\"bogus\":1}"));
        call_golden(&fx, &other, "answer-permission-denied", CALL("io.pressured.Reload", "{}"));
        call_golden(&fx, &p, "answer-no-such-cgroup",
                    "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
                    "\"parameters\":{\"memory_events\":true,\"cgroup\":\"/nope\"}}");
        call_golden(&fx, &p, "answer-invalid-cgroup-path",
                    CALL("io.pressured.GetHeadroom", "{\"cgroup\":\"/a/../b\"}"));
        call_golden(&fx, &p, "answer-source-unavailable",
                    "{\"method\":\"io.pressured.Subscribe\",\"more\":true,"
                    "\"parameters\":{\"vmpressure\":{\"level\":\"low\"},\"cgroup\":\"/x\"}}");
        call_golden(&fx, &p, "answer-expected-more", CALL("io.pressured.Subscribe", "{\"memory_events\":true}"));
        call_golden(&fx, &p, "answer-invalid-trigger",
                    "{\"method\":\"io.pressured.Subscribe\",\"more\":true,\"parameters\":{\"psi\":"
                    "{\"stall\":\"some\",\"threshold_us\":3000000,\"window_us\":2000000}}}");
        call_golden(&fx, &p, "answer-no-such-prekill", CALL("io.pressured.AcknowledgePrekill", "{\"id\":0}"));
        fx.methods.reload = reload_rejected;
        call_golden(&fx, &p, "answer-configuration-rejected", CALL("io.pressured.Reload", "{}"));

        peer_close(&sub);
        peer_close(&other);
        peer_close(&p);
        /* The in-memory registration is the only one left. */
        r = fx.reg.registrations;
        ASSERT_TRUE(r && !r->registrations_next && fx.reg.n_registrations == 1);
        LIST_REMOVE(registrations, fx.reg.registrations, r);
        fx.reg.n_registrations--;
        registration_episode_done(r);
        free(r->src.cgroup);
        free(r);
        fixture_done(&fx);
}

/* ---- systemd-report: List and Describe ---- */

static void evbuffer_golden(const char *name, struct evbuffer *out) {
        size_t n = evbuffer_get_length(out);

        golden(name, (const char *) evbuffer_pullup(out, -1), n);
}

static void test_report(void) {
        CgroupSample sample = {
                .path = (char *) "/system.slice/db.service",
                .has_oom_kills = true, .oom_kills = 2,
                .has_events = true, .events = { .present = 0x3f, .value = { 1, 2, 3, 4, 5, 6 } },
                .has_memory_current = true, .memory_current = 123456789,
        };
        ReportDaemon d = { .takeovers = 3, .clients = 4, .subscriptions = 5, .proxied_clients = 6,
                           .prekill = { .warned = 7, .acknowledged = 8, .deadline_reached = 9, .nobody = 10 },
                           .prekill_pending = 11 };
        ReportCgroup c[2] = {
                { .sample = &sample, .has_protection = true, .effective_min = 1 << 20,
                  .effective_low = PROTECTION_UNLIMITED, .protection_state = PROTECTION_STATE_LOW,
                  .has_headroom = true, .headroom_bytes = 4096, .has_reclaim = true, .reclaimed_bytes = 65536 },
        };
        CgroupSample other = { .path = (char *) "/user.slice/user-1000.slice/app" };
        struct evbuffer *out = evbuffer_new();

        ASSERT_TRUE(out);
        for (Counter k = 0; k < _COUNTER_MAX; k++)
                d.counters[k] = 100 + k;
        for (int s = 0; s < _SOURCE_MAX; s++)
                d.registrations[s] = (uint64_t) s;
        sample.has_psi[CGROUP_RESOURCE_MEMORY] = true;
        sample.psi[CGROUP_RESOURCE_MEMORY] = psi_full;
        sample.has_psi[CGROUP_RESOURCE_CPU] = true;
        sample.psi[CGROUP_RESOURCE_CPU] = psi_some;
        c[1] = (ReportCgroup) { .sample = &other };
        ASSERT_OK(report_write_list(out, &d, c, 2, 5));
        evbuffer_golden("report-list", out);
        ASSERT_OK(evbuffer_drain(out, evbuffer_get_length(out)));
        ASSERT_OK(report_write_describe(out));
        evbuffer_golden("report-describe", out);
        evbuffer_free(out);
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "--write")) {
                writing = true;
                golden_dir = argv[2];
        } else if (argc == 2)
                golden_dir = argv[1];
        else {
                fprintf(stderr, "usage: %s DIR | --write DIR\n", argv[0]);
                return 2;
        }
        log_set_max_level(LOG_CRIT);
        tree_make();
        test_pressure();
        test_other_events();
        test_episode_events();
        test_subscribed();
        test_removed();
        test_errors();
        test_methods();
        test_report();
        if (!writing)
                check_no_stale();
        for (size_t i = 0; i < n_seen; i++)
                free(seen[i]);
        protection_tree_free(tree);
        printf("%s %zu golden files\n", writing ? "wrote" : "compared", n_seen);
        return 0;
}
