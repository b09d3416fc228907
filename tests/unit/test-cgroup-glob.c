/* SPDX-License-Identifier: MIT */
/*
 * Tests for [Metrics] Cgroups=: pattern parsing, and the pruned and sorted
 * walk that matches them over a fake tree in a temporary directory (MaxCgroups=
 * cut, missing and broken files, a cgroup without files), what a fake v1
 * memory hierarchy adds to it (merged in walk order, kills summed over the
 * subtree, cgroups only in v1), and the
 * per-cgroup exposition byte for byte (escaping, seconds, left-out
 * families, the omitted gauge).
 */
#include <event2/buffer.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "cgroup-glob.h"
#include "fail-inject.h"
#include "metrics-cgroup.h"
#include "test-capture.h"
#include "tests.h"
#include "util.h"

static CgroupGlobs *globs(const char *text) {
        CgroupGlobs *g = NULL;
        const char *why = NULL;

        ASSERT_OK(cgroup_globs_parse(text, &g, &why));
        ASSERT_TRUE(g);
        return g;
}

static void test_parse(void) {
        static const char *const bad[] = {
                "system.slice", "/a /b c", "/a/../b", "/./a", "/a/.", "/a\x01", "/a\n/b",
        };
        CgroupGlobs *g = NULL;
        const char *why = NULL;
        char *many, *deep, *long_component;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                why = NULL;
                ASSERT_EQ(cgroup_globs_parse(bad[i], &g, &why), -EINVAL);
                ASSERT_TRUE(why != NULL);
        }

        g = globs(NULL);
        ASSERT_EQ(cgroup_globs_count(g), 0);
        g = cgroup_globs_free(g);
        g = globs("  \t ");
        ASSERT_EQ(cgroup_globs_count(g), 0);
        g = cgroup_globs_free(g);
        g = globs(" /system.slice/*.service\t/user.slice/user-*.slice / ");
        ASSERT_EQ(cgroup_globs_count(g), 3);
        g = cgroup_globs_free(g);

        /* 64 patterns are fine, 65 are not. */
        many = calloc(65, 4);
        ASSERT_TRUE(many);
        for (int i = 0; i < 64; i++)
                strcat(many, "/a ");
        g = globs(many);
        ASSERT_EQ(cgroup_globs_count(g), 64);
        g = cgroup_globs_free(g);
        strcat(many, "/b");
        ASSERT_EQ(cgroup_globs_parse(many, &g, &why), -EINVAL);
        ASSERT_STREQ(why, "at most 64 patterns are allowed");
        free(many);

        /* 32 components are fine, 33 are not. */
        deep = calloc(34, 2);
        ASSERT_TRUE(deep);
        for (int i = 0; i < 32; i++)
                strcat(deep, "/x");
        g = globs(deep);
        g = cgroup_globs_free(g);
        strcat(deep, "/y");
        ASSERT_EQ(cgroup_globs_parse(deep, &g, &why), -EINVAL);
        free(deep);

        long_component = calloc(1, 258);
        ASSERT_TRUE(long_component);
        long_component[0] = '/';
        memset(long_component + 1, 'c', 255);
        g = globs(long_component);
        g = cgroup_globs_free(g);
        long_component[256] = 'c';
        ASSERT_EQ(cgroup_globs_parse(long_component, &g, &why), -EINVAL);
        free(long_component);
}

/* ---- a fake tree ---- */

static char tree[] = "/tmp/test-cgroup-glob-XXXXXX";

static void put(const char *rel, const char *text) {
        char path[512];
        int fd;

        snprintf(path, sizeof(path), "%s%s", tree, rel);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
}

static void mkcg(const char *rel) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", tree, rel);
        ASSERT_OK(mkdir(path, 0755));
}

#define PSI(some, full) "some avg10=0.00 avg60=0.00 avg300=0.00 total=" some "\n" \
                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=" full "\n"

/* A cgroup with every file: totals derived from @n so each value is distinct. */
static void full_cgroup(const char *rel, int n) {
        char f[512], text[256];

        mkcg(rel);
        snprintf(f, sizeof(f), "%s/memory.pressure", rel);
        snprintf(text, sizeof(text), "some avg10=1.00 avg60=0.00 avg300=0.00 total=%d\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", n * 1000000 + 1, n * 10);
        put(f, text);
        snprintf(f, sizeof(f), "%s/io.pressure", rel);
        put(f, PSI("1500000", "0"));
        snprintf(f, sizeof(f), "%s/cpu.pressure", rel);
        put(f, "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n");
        snprintf(f, sizeof(f), "%s/memory.events", rel);
        snprintf(text, sizeof(text), "low 0\nhigh 0\nmax 0\noom %d\noom_kill %d\n", n, n);
        put(f, text);
        snprintf(f, sizeof(f), "%s/memory.current", rel);
        snprintf(text, sizeof(text), "%d\n", n * 4096);
        put(f, text);
}

/*
 *   /                       memory.current only
 *   /a                      full      /a/x full, /a/x/deep full, /a/y full, /a/.hidden full
 *   /b                      full      /b/z full
 *   /c                      no files (a cgroup already removed)
 *   /d                      memory.pressure garbage, io.pressure a directory,
 *                           cpu.pressure fine, no memory files
 */
static void make_tree(void) {
        ASSERT_TRUE(mkdtemp(tree) != NULL);
        put("/memory.current", "123\n");
        full_cgroup("/a", 1);
        full_cgroup("/a/x", 2);
        full_cgroup("/a/x/deep", 3);
        full_cgroup("/a/y", 4);
        full_cgroup("/a/.hidden", 5);
        full_cgroup("/b", 6);
        full_cgroup("/b/z", 7);
        mkcg("/c");
        mkcg("/d");
        put("/d/memory.pressure", "garbage\n");
        mkcg("/d/io.pressure");
        put("/d/cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n");
        put("/a/not-a-cgroup", "a file\n");
}

static void scrape(const char *patterns, size_t max, CgroupScrape *ret) {
        CgroupGlobs *g = globs(patterns);
        int fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(cgroup_scrape(fd, g, max, ret));
        close(fd);
        cgroup_globs_free(g);
}

static void assert_paths(const CgroupScrape *s, const char *const *want, size_t n) {
        ASSERT_EQ(s->n_samples, n);
        for (size_t i = 0; i < n; i++)
                ASSERT_STREQ(s->samples[i].path, want[i]);
}

static void test_walk(void) {
        static const char *const all_a[] = { "/a/.hidden", "/a/x", "/a/y" };
        static const char *const mixed[] = { "/", "/a", "/a/x", "/a/x/deep", "/a/y", "/b", "/b/z", "/d" };
        CgroupScrape s;

        /* Only /a is listed below the root: /b, /c, /d are pruned, and so is
         * everything below /a's children (no pattern is deeper). */
        scrape("/a/*", 100, &s);
        assert_paths(&s, all_a, ELEMENTSOF(all_a));
        ASSERT_EQ(s.dirs_listed, 2);
        ASSERT_EQ(s.omitted, 0);
        ASSERT_EQ(s.errors.count, 0);
        ASSERT_TRUE(s.samples[1].has_psi[CGROUP_RESOURCE_MEMORY]);
        ASSERT_U64_EQ(s.samples[1].psi[CGROUP_RESOURCE_MEMORY].some.total_us, 2000001);
        ASSERT_U64_EQ(s.samples[1].psi[CGROUP_RESOURCE_MEMORY].full.total_us, 20);
        ASSERT_TRUE(!s.samples[1].psi[CGROUP_RESOURCE_CPU].has_full);
        ASSERT_U64_EQ(s.samples[1].oom_kills, 2);
        ASSERT_U64_EQ(s.samples[1].memory_current, 8192);
        cgroup_scrape_done(&s);

        /* Depth-first, children sorted by name; "/" matches the root, which has
         * memory.current only; /c has no files and is left out; /d's broken
         * files are errors, its missing ones are not. */
        scrape("/ /* /a/*/* /?/?", 100, &s);
        assert_paths(&s, mixed, ELEMENTSOF(mixed));
        ASSERT_TRUE(!s.samples[0].has_psi[CGROUP_RESOURCE_MEMORY]);
        ASSERT_TRUE(s.samples[0].has_memory_current);
        ASSERT_U64_EQ(s.samples[0].memory_current, 123);
        ASSERT_TRUE(!s.samples[7].has_psi[CGROUP_RESOURCE_MEMORY] && !s.samples[7].has_psi[CGROUP_RESOURCE_IO]);
        ASSERT_TRUE(s.samples[7].has_psi[CGROUP_RESOURCE_CPU]);
        ASSERT_U64_EQ(s.samples[7].psi[CGROUP_RESOURCE_CPU].some.total_us, 7);
        ASSERT_TRUE(!s.samples[7].has_oom_kills && !s.samples[7].has_memory_current);
        ASSERT_EQ(s.errors.count, 2);
        ASSERT_EQ(s.errors.first_error, -EBADMSG);
        ASSERT_STREQ(s.errors.first_path, "/d/memory.pressure");
        cgroup_scrape_done(&s);

        /* MaxCgroups= cuts in walk order; the rest is counted, not read. */
        scrape("/ /* /a/*/* /?/?", 3, &s);
        assert_paths(&s, mixed, 3);
        ASSERT_EQ(s.omitted, ELEMENTSOF(mixed) - 3 + 1); /* /c counts: beyond the cut it is not read */
        cgroup_scrape_done(&s);

        /* No pattern: nothing is even opened. */
        scrape("", 100, &s);
        ASSERT_EQ(s.n_samples, 0);
        ASSERT_EQ(s.dirs_listed, 0);
        cgroup_scrape_done(&s);

        /* A pattern that matches nothing lists the root only. */
        scrape("/nothing/*", 100, &s);
        ASSERT_EQ(s.n_samples, 0);
        ASSERT_EQ(s.dirs_listed, 1);
        cgroup_scrape_done(&s);
}

/* A weight per cgroup read: its number in full_cgroup() (the millions of its memory "some" total), else 1. */
static size_t weight_of(const CgroupSample *s, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
        ASSERT_TRUE(s->path && s->path[0] == '/');
        return s->has_psi[CGROUP_RESOURCE_MEMORY] ? s->psi[CGROUP_RESOURCE_MEMORY].some.total_us / 1000000 : 1;
}

static void scrape_weighed(size_t budget, unsigned *calls, CgroupScrape *ret) {
        CgroupGlobs *g = globs("/ /* /a/*/* /?/?");
        int fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
        CgroupWeigh w = { .weight = weight_of, .userdata = calls, .budget = budget };

        ASSERT_TRUE(fd >= 0);
        *calls = 0;
        ASSERT_OK(cgroup_scrape_hybrid(fd, -1, g, 100, &w, ret));
        close(fd);
        cgroup_globs_free(g);
}

/*
 * Within a budget (systemd-report's metrics): whole cgroups in walk order,
 * the first over it dropped and everything after it counted, not read.
 */
static void test_weighed(void) {
        static const char *const mixed[] = { "/", "/a", "/a/x", "/a/x/deep" };
        CgroupScrape s;
        unsigned calls;

        /* 1 + 1 + 2 + 3 fills 7; /a/y (4) would go over: it and /b, /b/z, /c, /d are omitted. */
        scrape_weighed(7, &calls, &s);
        assert_paths(&s, mixed, 4);
        ASSERT_EQ(s.omitted, 5);
        ASSERT_EQ(calls, 5);
        ASSERT_EQ(s.errors.count, 0); /* /d's broken files were not read */
        cgroup_scrape_done(&s);

        /* /a/x/deep goes over 6 and is dropped; /a/y is not even weighed. */
        scrape_weighed(6, &calls, &s);
        assert_paths(&s, mixed, 3);
        ASSERT_EQ(s.omitted, 6);
        ASSERT_EQ(calls, 4);
        cgroup_scrape_done(&s);

        /* Nothing fits: every match is counted, the first one read. */
        scrape_weighed(0, &calls, &s);
        ASSERT_EQ(s.n_samples, 0);
        ASSERT_EQ(s.omitted, 9);
        ASSERT_EQ(calls, 1);
        cgroup_scrape_done(&s);

        /* A budget nothing reaches keeps what cgroup_scrape() does. */
        scrape_weighed(1000, &calls, &s);
        ASSERT_EQ(s.n_samples, 8);
        ASSERT_EQ(s.omitted, 0);
        ASSERT_EQ(calls, 8);
        cgroup_scrape_done(&s);
}

/* ---- what the cgroup v1 memory hierarchy adds (cgroup_scrape_hybrid()) ---- */

static char v1tree[] = "/tmp/test-cgroup-glob-v1-XXXXXX";

/* A v1 memory cgroup: memory.usage_in_bytes @usage, memory.oom_control with @kills in oom_kill. */
static void v1_cgroup(const char *rel, int usage, int kills) {
        char path[512], text[128];
        int fd;

        snprintf(path, sizeof(path), "%s%s", v1tree, rel);
        ASSERT_TRUE(streq(rel, "") || mkdir(path, 0755) == 0);
        snprintf(path, sizeof(path), "%s%s/memory.usage_in_bytes", v1tree, rel);
        snprintf(text, sizeof(text), "%d\n", usage);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
        snprintf(path, sizeof(path), "%s%s/memory.oom_control", v1tree, rel);
        snprintf(text, sizeof(text), "oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", kills);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

/*
 *   /            9000   0       /a/v1only    50  2   (only in v1)
 *   /a           100    1       /a/v1only/k   5  4
 *   /a-b         1      0       (only in v1; sorts after all of /a)
 *   /c           70     0       (in the cgroup2 tree without files)
 *   /d           80     3       (cgroup2 has its cpu.pressure only)
 */
static void make_v1_tree(void) {
        ASSERT_TRUE(mkdtemp(v1tree) != NULL);
        v1_cgroup("", 9000, 0);
        v1_cgroup("/a", 100, 1);
        v1_cgroup("/a/v1only", 50, 2);
        v1_cgroup("/a/v1only/k", 5, 4);
        v1_cgroup("/a-b", 1, 0);
        v1_cgroup("/c", 70, 0);
        v1_cgroup("/d", 80, 3);
}

static void scrape_both(const char *patterns, size_t max, bool with_v2, const CgroupWeigh *weigh, CgroupScrape *ret) {
        CgroupGlobs *g = globs(patterns);
        int fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC), v1 = open(v1tree, O_PATH | O_DIRECTORY | O_CLOEXEC);

        ASSERT_TRUE(fd >= 0 && v1 >= 0);
        ASSERT_OK(cgroup_scrape_hybrid(with_v2 ? fd : -1, v1, g, max, weigh, ret));
        close(fd);
        close(v1);
        cgroup_globs_free(g);
}

static void assert_memory(const CgroupSample *s, uint64_t current, uint64_t kills) {
        ASSERT_TRUE(s->has_memory_current && s->has_oom_kills);
        ASSERT_U64_EQ(s->memory_current, current);
        ASSERT_U64_EQ(s->oom_kills, kills);
}

static void test_v1(void) {
        static const char *const merged[] = { "/", "/a", "/a/.hidden", "/a/v1only", "/a/x", "/a/y", "/a-b", "/b",
                                              "/c", "/d" };
        static const char *const only_v1[] = { "/", "/a", "/a/v1only", "/a-b", "/c", "/d" };
        CgroupScrape s;

        make_v1_tree();
        /* One list in walk order; cgroup2's figures stay where it has them (/a), v1 gives what it lacks:
         * the root's kills, summed over the whole v1 tree as memory.events would count them. */
        scrape_both("/ /* /a/*", 100, true, NULL, &s);
        assert_paths(&s, merged, ELEMENTSOF(merged));
        assert_memory(&s.samples[0], 123, 0 + 1 + 2 + 4 + 0 + 0 + 3);
        assert_memory(&s.samples[1], 4096, 1);
        ASSERT_TRUE(s.samples[1].has_psi[CGROUP_RESOURCE_MEMORY]);
        assert_memory(&s.samples[3], 50, 2 + 4);
        ASSERT_TRUE(!s.samples[3].has_psi[CGROUP_RESOURCE_MEMORY] && !s.samples[3].has_psi[CGROUP_RESOURCE_CPU]);
        /* Whose memory.current it is: cgroup2's where it has one (the root, /a), else v1's. */
        ASSERT_TRUE(!s.samples[0].memory_v1 && !s.samples[1].memory_v1);
        ASSERT_TRUE(s.samples[3].memory_v1 && s.samples[6].memory_v1 && s.samples[8].memory_v1 && s.samples[9].memory_v1);
        assert_memory(&s.samples[6], 1, 0);
        assert_memory(&s.samples[8], 70, 0);
        assert_memory(&s.samples[9], 80, 3);
        ASSERT_TRUE(s.samples[9].has_psi[CGROUP_RESOURCE_CPU]);
        ASSERT_U64_EQ(s.samples[9].psi[CGROUP_RESOURCE_CPU].some.total_us, 7);
        ASSERT_EQ(s.omitted, 0);
        cgroup_scrape_done(&s);

        /* MaxCgroups= holds for the merged list; every cgroup left out is counted once, in both hierarchies or not. */
        scrape_both("/ /* /a/*", 4, true, NULL, &s);
        assert_paths(&s, merged, 4);
        ASSERT_EQ(s.omitted, ELEMENTSOF(merged) - 4);
        cgroup_scrape_done(&s);

        /* A host with the v1 memory hierarchy alone. */
        scrape_both("/ /* /a/*", 100, false, NULL, &s);
        assert_paths(&s, only_v1, ELEMENTSOF(only_v1));
        assert_memory(&s.samples[0], 9000, 10);
        cgroup_scrape_done(&s);
}

/*
 * Within a budget, the cgroups of both hierarchies in walk order (weights
 * as weight_of(): 1, 1, 5, 1, 2, 4, 1, 6, 1, 1 for the ten of test_v1()):
 * whole cgroups, the first over it and everything after it left out,
 * whichever hierarchy it is of, and each counted once.
 */
static void test_v1_weighed(void) {
        static const char *const merged[] = { "/", "/a", "/a/.hidden", "/a/v1only", "/a/x" };
        static const struct {
                size_t budget, kept;
        } cases[] = {
                /* cgroup2's walk stops at /a/x (1 + 1 + 5 + 2 > 8); /a/v1only, before it, fits; /a-b is after the cut. */
                { 8, 4 },
                /* /a/v1only does not fit: the cgroups after it neither, of either hierarchy. */
                { 7, 3 },
                /* cgroup2's walk kept /a/x (9); /a/v1only comes before it and takes its place. */
                { 9, 4 },
                /* Room for all: as without a budget. */
                { 1000, 10 },
        };
        unsigned calls = 0;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CgroupWeigh w = { .weight = weight_of, .userdata = &calls, .budget = cases[i].budget };
                CgroupScrape s;

                scrape_both("/ /* /a/*", 100, true, &w, &s);
                ASSERT_EQ(s.n_samples, cases[i].kept);
                if (cases[i].kept <= ELEMENTSOF(merged))
                        assert_paths(&s, merged, cases[i].kept);
                ASSERT_EQ(s.omitted, 10 - cases[i].kept);
                cgroup_scrape_done(&s);
        }
}

/* Every allocation of parsing and of a walk of both trees fails in turn: -ENOMEM, nothing leaks. */
static void test_out_of_memory(void) {
        int fd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC), v1 = open(v1tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
        unsigned n;

        ASSERT_TRUE(fd >= 0 && v1 >= 0);
        for (n = 1;; n++) {
                CgroupGlobs *g = NULL;
                CgroupScrape s = {};
                bool injected;
                int r;

                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, n);
                r = cgroup_globs_parse("/ /* /a/*/* /?/?", &g, NULL);
                if (r >= 0)
                        r = cgroup_scrape_hybrid(fd, v1, g, 100, NULL, &s);
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        ASSERT_EQ(s.n_samples, 8 + 3); /* and /a/v1only/k, /a-b, /c of v1 */
                        cgroup_scrape_done(&s);
                        cgroup_globs_free(g);
                        break;
                }
                ASSERT_EQ(r, -ENOMEM);
                cgroup_scrape_done(&s);
                cgroup_globs_free(g);
        }
        ASSERT_TRUE(n > 5);
        close(fd);
        close(v1);
}

/* ---- the exposition ---- */

static void test_exposition(void) {
        CgroupSample samples[2] = {
                { .path = (char *) "/odd\"name\\with\nnewline",
                  .psi = { [CGROUP_RESOURCE_MEMORY] = { .some.total_us = 1500000, .full.total_us = 1,
                                                        .has_some = true, .has_full = true },
                           [CGROUP_RESOURCE_CPU] = { .some.total_us = 0, .has_some = true } },
                  .has_psi = { [CGROUP_RESOURCE_MEMORY] = true, [CGROUP_RESOURCE_CPU] = true },
                  .oom_kills = 3, .has_oom_kills = true },
                { .path = (char *) "/",
                  .psi = { [CGROUP_RESOURCE_CPU] = { .some.total_us = 12000000, .full.total_us = 123456789,
                                                     .has_some = true, .has_full = true } },
                  .has_psi = { [CGROUP_RESOURCE_CPU] = true },
                  .memory_current = UINT64_C(1) << 50, .has_memory_current = true },
        };
        CgroupScrape s = { .samples = samples, .n_samples = 2, .omitted = 7 };
        struct evbuffer *b = evbuffer_new();
        char *text;

        ASSERT_TRUE(b);
        metrics_write_cgroups(b, &s);
        text = take_string(b);
        ASSERT_STREQ(text,
                "# HELP pressured_cgroup_pressure_memory_waiting_seconds_total Time some tasks of the cgroup waited for memory (PSI some total), in seconds.\n"
                "# TYPE pressured_cgroup_pressure_memory_waiting_seconds_total counter\n"
                "pressured_cgroup_pressure_memory_waiting_seconds_total{cgroup=\"/odd\\\"name\\\\with\\nnewline\"} 1.5\n"
                "# HELP pressured_cgroup_pressure_memory_stalled_seconds_total Time all non-idle tasks of the cgroup stalled on memory at once (PSI full total), in seconds.\n"
                "# TYPE pressured_cgroup_pressure_memory_stalled_seconds_total counter\n"
                "pressured_cgroup_pressure_memory_stalled_seconds_total{cgroup=\"/odd\\\"name\\\\with\\nnewline\"} 0.000001\n"
                "# HELP pressured_cgroup_pressure_cpu_waiting_seconds_total Time some runnable tasks of the cgroup waited for a CPU (PSI some total), in seconds.\n"
                "# TYPE pressured_cgroup_pressure_cpu_waiting_seconds_total counter\n"
                "pressured_cgroup_pressure_cpu_waiting_seconds_total{cgroup=\"/odd\\\"name\\\\with\\nnewline\"} 0\n"
                "pressured_cgroup_pressure_cpu_waiting_seconds_total{cgroup=\"/\"} 12\n"
                "# HELP pressured_cgroup_pressure_cpu_stalled_seconds_total Time all non-idle tasks of the cgroup waited for a CPU at once (PSI full total), in seconds.\n"
                "# TYPE pressured_cgroup_pressure_cpu_stalled_seconds_total counter\n"
                "pressured_cgroup_pressure_cpu_stalled_seconds_total{cgroup=\"/\"} 123.456789\n"
                "# HELP pressured_cgroup_memory_oom_kills_total Processes of the cgroup killed by the kernel's OOM killer (memory.events oom_kill).\n"
                "# TYPE pressured_cgroup_memory_oom_kills_total counter\n"
                "pressured_cgroup_memory_oom_kills_total{cgroup=\"/odd\\\"name\\\\with\\nnewline\"} 3\n"
                "# HELP pressured_cgroup_memory_current_bytes Memory charged to the cgroup and its descendants (memory.current), in bytes.\n"
                "# TYPE pressured_cgroup_memory_current_bytes gauge\n"
                "pressured_cgroup_memory_current_bytes{cgroup=\"/\"} 1125899906842624\n"
                "# HELP pressured_cgroup_series_omitted_cgroups Cgroups matching [Metrics] Cgroups= left out of this scrape because of MaxCgroups=.\n"
                "# TYPE pressured_cgroup_series_omitted_cgroups gauge\n"
                "pressured_cgroup_series_omitted_cgroups 7\n");
        free(text);

        /* Nothing matched: the omitted gauge alone, at 0. */
        s = (CgroupScrape) {};
        metrics_write_cgroups(b, &s);
        text = take_string(b);
        ASSERT_STREQ(text,
                "# HELP pressured_cgroup_series_omitted_cgroups Cgroups matching [Metrics] Cgroups= left out of this scrape because of MaxCgroups=.\n"
                "# TYPE pressured_cgroup_series_omitted_cgroups gauge\n"
                "pressured_cgroup_series_omitted_cgroups 0\n");
        free(text);
        evbuffer_free(b);
}

int main(void) {
        test_parse();
        make_tree();
        test_walk();
        test_weighed();
        test_v1();
        test_v1_weighed();
        test_out_of_memory();
        (void) test_rm_tree(tree);
        (void) test_rm_tree(v1tree);
        test_exposition();
        return 0;
}
