/* SPDX-License-Identifier: MIT */
/*
 * The pure part of pressurectl notify (client/pressurectl/notify-text.c): the session
 * cgroup found in /proc/self/cgroup text (cgroup2, v1, hybrid, missing,
 * look-alike names), urgency per level, durations, the three largest
 * children of a fake tree, the words of a notification, quoting for
 * --dry-run, the per-episode rate limit, and the kills: their names, their
 * words, and the interval that gathers them.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notify-text.h"
#include "tests.h"

#define M (UINT64_C(1) << 20)
#define S UINT64_C(1000000)

static void test_session_cgroup(void) {
        char *p = NULL;

        /* Pure cgroup2. */
        ASSERT_OK(notify_session_cgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n",
                                        1000, &p));
        ASSERT_STREQ(p, "/user.slice/user-1000.slice/user@1000.service");
        free(p);
        /* The service manager itself, no trailing newline. */
        ASSERT_OK(notify_session_cgroup("0::/user.slice/user-42.slice/user@42.service", 42, &p));
        ASSERT_STREQ(p, "/user.slice/user-42.slice/user@42.service");
        free(p);
        /* Hybrid: the cgroup2 line wins over the v1 memory line. */
        ASSERT_OK(notify_session_cgroup("12:memory:/user.slice/user-7.slice/user@7.service/a\n"
                                        "1:name=systemd:/user.slice\n"
                                        "0::/user.slice/user-7.slice/user@7.service/init.scope\n", 7, &p));
        ASSERT_STREQ(p, "/user.slice/user-7.slice/user@7.service");
        free(p);
        /* cgroup v1 only: the memory controller's line, also when it shares a hierarchy. */
        ASSERT_OK(notify_session_cgroup("4:cpu,memory:/user.slice/user-7.slice/user@7.service/x\n"
                                        "1:name=systemd:/other/user@7.service\n", 7, &p));
        ASSERT_STREQ(p, "/user.slice/user-7.slice/user@7.service");
        free(p);
        /* Another user's manager, a look-alike name, a session scope, garbage: not found. */
        p = NULL;
        ASSERT_ERR(notify_session_cgroup("0::/user.slice/user-1000.slice/user@1000.service\n", 1001, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("0::/user.slice/user-1.slice/user@1.service-x/a\n", 1, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("0::/user.slice/user-1.slice/xuser@1.service\n", 1, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("0::/user.slice/user-1.slice/session-3.scope\n", 1, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("", 1, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("garbage\n::\n0:\n", 1, &p), ENOENT);
        ASSERT_ERR(notify_session_cgroup("3:cpu:/user.slice/user-1.slice/user@1.service\n", 1, &p), ENOENT);
        ASSERT_TRUE(p == NULL);
}

static void test_urgency_duration(void) {
        char buf[32];

        ASSERT_EQ(notify_urgency(PRESSURE_LEVEL_LOW), 0);
        ASSERT_EQ(notify_urgency(PRESSURE_LEVEL_MEDIUM), 1);
        ASSERT_EQ(notify_urgency(PRESSURE_LEVEL_CRITICAL), 2);
        ASSERT_EQ(notify_urgency(PRESSURE_LEVEL_NONE), 1);
        ASSERT_STREQ(notify_urgency_to_string(0), "low");
        ASSERT_STREQ(notify_urgency_to_string(2), "critical");
        ASSERT_STREQ(notify_urgency_to_string(9), "normal");

        ASSERT_STREQ(notify_format_duration(buf, 999999), "less than a second");
        ASSERT_STREQ(notify_format_duration(buf, 45 * S), "45 s");
        ASSERT_STREQ(notify_format_duration(buf, 200 * S), "3 min 20 s");
        ASSERT_STREQ(notify_format_duration(buf, 7500 * S), "2 h 5 min");
        ASSERT_STREQ(notify_format_duration(buf, 273600 * S), "3 d 4 h");
        ASSERT_STREQ(notify_format_duration(buf, UINT64_MAX), "213503982 d 8 h");
}

static void make_cgroup(const char *root, const char *path, const char *current) {
        char dir[512];

        snprintf(dir, sizeof(dir), "%s%s", root, path);
        ASSERT_OK(mkdir(dir, 0755));
        if (current)
                test_write_file_at(dir, "memory.current", current);
}

static void test_children_and_text(void) {
        char root[] = "/tmp/test-notify-text.XXXXXX";
        TopRoots roots = {};
        TopSnapshot snap = {};
        NotifyChild c[NOTIFY_CHILDREN];
        NotifyText text = { .cgroup = "/s", .level = PRESSURE_LEVEL_CRITICAL, .duration_us = 65 * S };
        char *summary, *body;
        size_t n;

        ASSERT_TRUE(mkdtemp(root) != NULL);
        test_write_file_at(root, "memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        make_cgroup(root, "/s", "1000");
        make_cgroup(root, "/s/a", "100");
        make_cgroup(root, "/s/b", "300");
        make_cgroup(root, "/s/c", "200");
        make_cgroup(root, "/s/d", "400");
        make_cgroup(root, "/s/d/big", "399"); /* a grandchild is not a child */
        make_cgroup(root, "/s/e", NULL);       /* no memory.current: left out */
        make_cgroup(root, "/s/f", "max");
        make_cgroup(root, "/t", "9999999");
        roots.v2 = strdup(root);

        ASSERT_OK(top_snapshot_read(&roots, "/s", NULL, &snap));
        n = notify_pick_children(&snap, "/s", c);
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(c[0].name, "d");
        ASSERT_STREQ(c[1].name, "b");
        ASSERT_STREQ(c[2].name, "c");
        ASSERT_U64_EQ(c[0].current, 400);
        /* Fewer children than three, none, and a cgroup not in the snapshot. */
        ASSERT_EQ(notify_pick_children(&snap, "/s/d", c), 1);
        ASSERT_STREQ(c[0].name, "big");
        ASSERT_EQ(notify_pick_children(&snap, "/s/a", c), 0);
        ASSERT_EQ(notify_pick_children(&snap, "/nope", c), 0);

        /* The words, with the children. */
        text.n_children = notify_pick_children(&snap, "/s", text.children);
        ASSERT_OK(notify_format(&text, &summary, &body));
        ASSERT_STREQ(summary, "Memory pressure: critical");
        ASSERT_STREQ(body, "/s, for 1 min 5 s\nLargest: d 400B, b 300B, c 200B");
        free(summary);
        free(body);
        top_snapshot_done(&snap);

        /* Sizes for people, and the whole system without children. */
        text = (NotifyText) { .cgroup = "/", .level = PRESSURE_LEVEL_LOW, .duration_us = 0, .n_children = 1,
                              .children = { { "user.slice", 1536 * M } } };
        ASSERT_OK(notify_format(&text, &summary, &body));
        ASSERT_STREQ(summary, "Memory pressure: low");
        ASSERT_STREQ(body, "The whole system, for less than a second\nLargest: user.slice 1.5G");
        free(summary);
        free(body);
        text.n_children = 0;
        text.level = PRESSURE_LEVEL_NONE;
        ASSERT_OK(notify_format(&text, &summary, &body));
        ASSERT_STREQ(summary, "Memory pressure: unknown");
        ASSERT_STREQ(body, "The whole system, for less than a second");
        free(summary);
        free(body);

        ASSERT_OK(notify_format_cleared("/s", 3 * S, &summary, &body));
        ASSERT_STREQ(summary, "Memory pressure cleared");
        ASSERT_STREQ(body, "/s, after 3 s");
        free(summary);
        free(body);

        top_roots_done(&roots);
        ASSERT_OK(test_rm_tree(root));
}

static void test_quote(void) {
        char *e = notify_escape_markup("a&b<c>d \"e\"");
        char *q = notify_quote("a \"b\"\\\nc\td\x1b");

        ASSERT_STREQ(q, "\"a \\\"b\\\"\\\\\\nc\\td\\x1b\"");
        free(q);
        q = notify_quote("");
        ASSERT_STREQ(q, "\"\"");
        free(q);
        ASSERT_STREQ(e, "a&amp;b&lt;c&gt;d \"e\"");
        free(e);
        e = notify_escape_markup("");
        ASSERT_STREQ(e, "");
        free(e);
}

static void test_rate_limit(void) {
        const uint64_t iv = 10 * S;
        NotifyEpisode e = {};
        uint64_t t = 1000 * S;

        /* Nothing pending on a fresh episode. */
        ASSERT_U64_EQ(notify_episode_deadline(&e, iv), UINT64_MAX);
        ASSERT_EQ(notify_episode_due(&e, t, iv), NOTIFY_NOTHING);
        ASSERT_TRUE(!notify_episode_end(&e));

        /* The first event shows at once and dates the episode. */
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_LOW, t - 5, t, iv), NOTIFY_SHOW);
        ASSERT_U64_EQ(e.start_us, t - 5);
        notify_episode_tried(&e, t, true);
        /* A burst within the interval: deferred to one update at the deadline. */
        for (int i = 1; i <= 1000; i++)
                ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_LOW, t + (uint64_t) i, t + (uint64_t) i, iv),
                          NOTIFY_DEFER);
        ASSERT_U64_EQ(notify_episode_deadline(&e, iv), t + iv);
        ASSERT_EQ(notify_episode_due(&e, t + iv - 1, iv), NOTIFY_NOTHING);
        ASSERT_EQ(notify_episode_due(&e, t + iv, iv), NOTIFY_UPDATE);
        notify_episode_tried(&e, t + iv, true);
        ASSERT_EQ(notify_episode_due(&e, t + 2 * iv, iv), NOTIFY_NOTHING);
        t += iv;

        /* A rising level is shown at once, once per level. */
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_MEDIUM, t + 1, t + 1, iv), NOTIFY_UPDATE);
        notify_episode_tried(&e, t + 1, true);
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_MEDIUM, t + 2, t + 2, iv), NOTIFY_DEFER);
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_CRITICAL, t + 3, t + 3, iv), NOTIFY_UPDATE);
        notify_episode_tried(&e, t + 3, true);
        /* Falling back does not lower what the episode shows. */
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_LOW, t + 4, t + 4, iv), NOTIFY_DEFER);
        ASSERT_EQ(e.level, PRESSURE_LEVEL_CRITICAL);
        /* Past the interval an event updates at once. */
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_LOW, t + 3 + iv, t + 3 + iv, iv), NOTIFY_UPDATE);
        notify_episode_tried(&e, t + 3 + iv, true);

        /* The end: it was shown; the state is reset. */
        ASSERT_TRUE(notify_episode_end(&e));
        ASSERT_TRUE(!e.active && !e.shown && !e.pending);

        /* A failed show is retried under the same limit, as a show. */
        t += 100 * S;
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_CRITICAL, t, t, iv), NOTIFY_SHOW);
        notify_episode_tried(&e, t, false);
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_CRITICAL, t + 1, t + 1, iv), NOTIFY_DEFER);
        ASSERT_EQ(notify_episode_due(&e, t + iv, iv), NOTIFY_SHOW);
        notify_episode_tried(&e, t + iv, false);
        ASSERT_EQ(notify_episode_pressure(&e, PRESSURE_LEVEL_CRITICAL, t + 2 * iv, t + 2 * iv, iv), NOTIFY_SHOW);
        /* Never shown: nothing to close. */
        ASSERT_TRUE(!notify_episode_end(&e));
}

static void test_kill_names(void) {
        ASSERT_STREQ(notify_kill_name("/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox.scope"),
                     "app-firefox.scope");
        ASSERT_STREQ(notify_kill_name("/user.slice/user-1000.slice/user@1000.service"), "user@1000.service");
        ASSERT_STREQ(notify_kill_name("/system.slice/"), "/system.slice/");
        ASSERT_STREQ(notify_kill_name("no-slash"), "no-slash");
        ASSERT_STREQ(notify_kill_name("/a"), "a");
        ASSERT_STREQ(notify_kill_name("/"), "/");
        ASSERT_STREQ(notify_kill_name(""), "/");
        ASSERT_STREQ(notify_kill_name(NULL), "/");
}

/* The summary and body of what waits in @k. */
static void kills_text(const NotifyKills *k, const char *summary, const char *body) {
        char *s = NULL, *b = NULL;

        ASSERT_OK(notify_format_kills(k, &s, &b));
        ASSERT_STREQ(s, summary);
        ASSERT_STREQ(b, body);
        free(s);
        free(b);
}

#define SCOPE "/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox.scope"
#define MANAGER "/user.slice/user-1000.slice/user@1000.service"

static void test_kill_words(void) {
        NotifyKills k = {};

        ASSERT_EQ(notify_kills_add(&k, SCOPE, "systemd-oomd", "memory-pressure", 1, 100 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "app-firefox.scope was killed",
                   "systemd-oomd killed it: its memory pressure stayed over the limit.\n" SCOPE);
        notify_kills_tried(&k, 100 * S, true);
        ASSERT_EQ(k.n_kills, 0);

        ASSERT_EQ(notify_kills_add(&k, SCOPE, "systemd-oomd", "memory-used", 2, 200 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "app-firefox.scope was killed",
                   "systemd-oomd killed it: too much memory and swap in use, 2 times.\n" SCOPE);
        notify_kills_tried(&k, 200 * S, true);

        ASSERT_EQ(notify_kills_add(&k, MANAGER, "kernel", "oom_kill", 1, 300 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "user@1000.service was killed",
                   "The kernel's OOM killer killed a process in it: out of memory.\n" MANAGER);
        notify_kills_tried(&k, 300 * S, true);

        ASSERT_EQ(notify_kills_add(&k, MANAGER, "kernel", "oom_kill", 3, 400 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "user@1000.service was killed",
                   "The kernel's OOM killer killed 3 processes in it: out of memory.\n" MANAGER);
        notify_kills_tried(&k, 400 * S, true);

        /* A killer or a reason this version does not know: passed on as sent; none at all: "unknown". */
        ASSERT_EQ(notify_kills_add(&k, "/a.scope", "earlyoom", "low-memory", 1, 500 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "a.scope was killed", "earlyoom killed it (low-memory).\n/a.scope");
        notify_kills_tried(&k, 500 * S, true);
        ASSERT_EQ(notify_kills_add(&k, NULL, NULL, NULL, 0, 600 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "/ was killed", "unknown killed it (unknown).\n/");
        notify_kills_done(&k);
}

static void test_kill_interval(void) {
        NotifyKills k = {};
        char name[32];

        /* The first kill is shown at once; the next within the interval waits for its end. */
        ASSERT_U64_EQ(notify_kills_deadline(&k, 10 * S), UINT64_MAX);
        ASSERT_EQ(notify_kills_due(&k, 1 * S, 10 * S), NOTIFY_NOTHING);
        ASSERT_EQ(notify_kills_add(&k, "/s/a.scope", "systemd-oomd", "memory-pressure", 1, 1 * S, 10 * S),
                  NOTIFY_SHOW);
        notify_kills_tried(&k, 1 * S, true);
        ASSERT_U64_EQ(notify_kills_deadline(&k, 10 * S), UINT64_MAX);
        ASSERT_EQ(notify_kills_add(&k, "/s/b.scope", "systemd-oomd", "memory-pressure", 1, 2 * S, 10 * S),
                  NOTIFY_DEFER);
        ASSERT_U64_EQ(notify_kills_deadline(&k, 10 * S), 11 * S);
        ASSERT_EQ(notify_kills_due(&k, 10 * S, 10 * S), NOTIFY_NOTHING);

        /* A storm meanwhile: the same cgroup, killer and reason merge; three names, the rest counted. */
        ASSERT_EQ(notify_kills_add(&k, "/s/b.scope", "systemd-oomd", "memory-pressure", 1, 3 * S, 10 * S),
                  NOTIFY_DEFER);
        ASSERT_EQ(notify_kills_add(&k, "/s", "kernel", "oom_kill", 4, 3 * S, 10 * S), NOTIFY_DEFER);
        ASSERT_EQ(notify_kills_add(&k, "/s/b.scope", "systemd-oomd", "memory-used", 1, 4 * S, 10 * S), NOTIFY_DEFER);
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "/s/c%u.scope", i);
                ASSERT_EQ(notify_kills_add(&k, name, "systemd-oomd", "memory-pressure", 1, 5 * S, 10 * S),
                          NOTIFY_DEFER);
        }
        ASSERT_EQ(k.n_kills, NOTIFY_KILL_NAMES);
        ASSERT_EQ(notify_kills_due(&k, 11 * S, 10 * S), NOTIFY_SHOW);
        kills_text(&k, "1007 kills for lack of memory",
                   "b.scope, by systemd-oomd (memory-pressure, 2 kills)\n"
                   "s, by kernel (oom_kill, 4 kills)\n"
                   "b.scope, by systemd-oomd (memory-used)\n"
                   "and 1000 more");

        /* Not shown (no server): they wait another interval; shown: forgotten. */
        notify_kills_tried(&k, 11 * S, false);
        ASSERT_EQ(k.n_kills, NOTIFY_KILL_NAMES);
        ASSERT_U64_EQ(notify_kills_deadline(&k, 10 * S), 21 * S);
        ASSERT_EQ(notify_kills_due(&k, 20 * S, 10 * S), NOTIFY_NOTHING);
        ASSERT_EQ(notify_kills_due(&k, 21 * S, 10 * S), NOTIFY_SHOW);
        notify_kills_tried(&k, 21 * S, true);
        ASSERT_EQ(k.n_kills, 0);
        ASSERT_U64_EQ(k.more_events, 0);
        ASSERT_U64_EQ(notify_kills_deadline(&k, 10 * S), UINT64_MAX);

        /* Two kills gathered: the plural form without "more". */
        ASSERT_EQ(notify_kills_add(&k, "/s/x.scope", "kernel", "oom_kill", 1, 22 * S, 10 * S), NOTIFY_DEFER);
        ASSERT_EQ(notify_kills_add(&k, "/s/y.scope", "kernel", "oom_kill", 1, 23 * S, 10 * S), NOTIFY_DEFER);
        kills_text(&k, "2 kills for lack of memory",
                   "x.scope, by kernel (oom_kill)\ny.scope, by kernel (oom_kill)");
        notify_kills_done(&k);
        ASSERT_EQ(k.n_kills, 0);
}

/* The warning before a kill names the unit, who is about to kill it, and the whole path. */
static void test_prekill_words(void) {
        char *s = NULL, *b = NULL;

        ASSERT_OK(notify_format_prekill(MANAGER "/app.slice/foo.service", "systemd-oomd", &s, &b));
        ASSERT_STREQ(s, "foo.service will be killed by systemd-oomd");
        ASSERT_STREQ(b, "systemd-oomd is about to kill it to free memory: save your work in it now.\n"
                     MANAGER "/app.slice/foo.service");
        free(s);
        free(b);
        ASSERT_OK(notify_format_prekill(NULL, NULL, &s, &b));
        ASSERT_STREQ(s, "/ will be killed by unknown");
        ASSERT_STREQ(b, "unknown is about to kill it to free memory: save your work in it now.\n/");
        free(s);
        free(b);
}

int main(void) {
        test_session_cgroup();
        test_urgency_duration();
        test_children_and_text();
        test_quote();
        test_rate_limit();
        test_kill_names();
        test_kill_words();
        test_kill_interval();
        test_prekill_words();
        printf("notify-text: ok\n");
        return 0;
}
