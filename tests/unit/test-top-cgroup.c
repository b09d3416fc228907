/* SPDX-License-Identifier: MIT */
/*
 * The reading side of pressurectl top (client/pressurectl/top-cgroup.c): the
 * hierarchy roots found in mountinfo text (the kernel files themselves are
 * parsed by kernfile.c, see test-kernfile.c), and snapshots of
 * fake cgroup2 and v1 trees: order, values, the union of both hierarchies,
 * event baselines, change marks, cgroups that appear and go, and the files
 * kept open between refreshes; and the kills of the last minute
 * (client/pressurectl/top-kills.c): merged, bounded, expired, and marked on a cgroup or
 * its nearest ancestor in a snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"
#include "top-cgroup.h"
#include "top-kills.h"

#define M (UINT64_C(1) << 20)

static void test_roots(void) {
        TopRoots r = {};

        /* A hybrid host: cgroup2 at unified, v1 memory beside other v1 controllers. */
        ASSERT_OK(top_roots_discover(
                "30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
                "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
                "33 30 0:29 / /sys/fs/cgroup/cpu rw shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
                "34 30 0:30 / /sys/fs/cgroup/memory rw shared:14 - cgroup cgroup rw,memory\n", &r));
        ASSERT_STREQ(r.v2, "/sys/fs/cgroup/unified");
        ASSERT_STREQ(r.v1_memory, "/sys/fs/cgroup/memory");
        top_roots_done(&r);
        ASSERT_TRUE(!r.v2 && !r.v1_memory);

        /* Escaped mount points; a mount of a subdirectory of the hierarchy is not its root. */
        ASSERT_OK(top_roots_discover(
                "40 1 0:40 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"
                "41 1 0:40 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n", &r));
        ASSERT_STREQ(r.v2, "/mnt/my cgroups");
        ASSERT_TRUE(!r.v1_memory);
        top_roots_done(&r);

        /* Nothing, garbage, short lines. */
        ASSERT_OK(top_roots_discover("", &r));
        ASSERT_TRUE(!r.v2 && !r.v1_memory);
        ASSERT_OK(top_roots_discover("garbage\n1 2 3\n- - - - - - - -\n\n", &r));
        ASSERT_TRUE(!r.v2 && !r.v1_memory);
        top_roots_done(NULL);
}

/* ---- fake trees ----------------------------------------------------------------- */

static char tmpdir[] = "/tmp/test-top-cgroup-XXXXXX";

static void put(const char *dir, const char *file, const char *text) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, dir, file);
        f = fopen(path, "w");
        if (!f)
                TEST_FAIL("cannot write %s: %m", path);
        fputs(text, f);
        fclose(f);
}

static void mkd(const char *dir) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", tmpdir, dir);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                TEST_FAIL("mkdir %s: %m", path);
}

static void v2_cgroup(const char *dir, const char *current, const char *high, const char *max, const char *psi,
                      const char *events) {
        mkd(dir);
        put(dir, "memory.current", current);
        put(dir, "memory.high", high);
        put(dir, "memory.max", max);
        put(dir, "memory.pressure", psi);
        put(dir, "memory.events", events);
}

static void rm_tree(const char *dir) {
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", tmpdir, dir);
        (void) test_rm_tree(path);
}

static const char *psi(double some, double full, char buf[static 160]) {
        snprintf(buf, 160, "some avg10=%.2f avg60=0.00 avg300=0.00 total=0\nfull avg10=%.2f avg60=0.00 avg300=0.00 total=0\n",
                 some, full);
        return buf;
}

static void test_snapshots(void) {
        char path_v2[4200], path_v1[4200], b[160];
        TopRoots roots = {};
        TopSnapshot s1 = {}, s2 = {}, s3 = {};
        TopCgroup *cg;

        ASSERT_TRUE(mkdtemp(tmpdir) != NULL);
        mkd("v2");
        put("v2", "memory.current", "1000\n");
        put("v2", "memory.pressure", psi(1, 0.5, b));
        v2_cgroup("v2/b", "2097152\n", "max\n", "4194304\n", psi(2, 1, b), "low 0\nhigh 5\nmax 1\noom 0\noom_kill 0\n");
        v2_cgroup("v2/a", "1048576\n", "max\n", "max\n", psi(0, 0, b), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
        v2_cgroup("v2/a/x", "10\n", "20\n", "30\n", psi(0, 0, b), "high 0\nmax 0\noom_kill 0\n");
        v2_cgroup("v2/a-b", "1\n", "max\n", "max\n", psi(0, 0, b), "high 0\nmax 0\noom_kill 0\n");
        /* cpu and io pressure beside memory's. */
        put("v2/b", "cpu.pressure", psi(25.5, 1, b));
        put("v2/b", "io.pressure", psi(4.25, 2, b));
        /* PSI only, as on a hybrid host's cgroup2 side. */
        mkd("v2/both");
        put("v2/both", "memory.pressure", psi(7, 3, b));
        put("v2/both", "cpu.pressure", psi(0.5, 0, b));
        mkd("v1");
        put("v1", "memory.usage_in_bytes", "5000\n");
        put("v1", "memory.limit_in_bytes", "9223372036854771712\n");
        mkd("v1/both");
        put("v1/both", "memory.usage_in_bytes", "4096\n");
        put("v1/both", "memory.limit_in_bytes", "8192\n");
        put("v1/both", "memory.soft_limit_in_bytes", "9223372036854771712\n");
        put("v1/both", "memory.failcnt", "3\n");
        put("v1/both", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
        mkd("v1/only1");
        put("v1/only1", "memory.usage_in_bytes", "1\n");

        snprintf(path_v2, sizeof(path_v2), "%s/v2", tmpdir);
        snprintf(path_v1, sizeof(path_v1), "%s/v1", tmpdir);
        roots.v2 = path_v2;
        roots.v1_memory = path_v1;
        top_set_fd_budget(1000);

        ASSERT_ERR(top_snapshot_read(&roots, "relative", NULL, &s1), EINVAL);
        ASSERT_ERR(top_snapshot_read(&roots, "/a/../b", NULL, &s1), EINVAL);
        ASSERT_ERR(top_snapshot_read(&roots, "/nowhere", NULL, &s1), ENOENT);

        ASSERT_OK(top_snapshot_read(&roots, "/", NULL, &s1));
        /* Parents before children, siblings by name; "/a/x" before "/a-b". */
        ASSERT_EQ(s1.n_cgroups, 7);
        ASSERT_STREQ(s1.cgroups[0].path, "/");
        ASSERT_STREQ(s1.cgroups[1].path, "/a");
        ASSERT_STREQ(s1.cgroups[2].path, "/a/x");
        ASSERT_STREQ(s1.cgroups[3].path, "/a-b");
        ASSERT_STREQ(s1.cgroups[4].path, "/b");
        ASSERT_STREQ(s1.cgroups[5].path, "/both");
        ASSERT_STREQ(s1.cgroups[6].path, "/only1");
        ASSERT_EQ(s1.cgroups[2].parent, 1);
        ASSERT_EQ(s1.cgroups[2].depth, 2);
        ASSERT_STREQ(s1.cgroups[2].name, "x");
        for (size_t i = 0; i < s1.n_cgroups; i++)
                ASSERT_TRUE(top_snapshot_find(&s1, s1.cgroups[i].path) == &s1.cgroups[i]);
        ASSERT_TRUE(top_snapshot_find(&s1, "/zz") == NULL);

        /* The root: cgroup2's memory.current wins over v1; no limit files there. */
        cg = top_snapshot_find(&s1, "/");
        ASSERT_TRUE(!cg->mem_v1 && cg->current == 1000 && cg->max == TOP_NONE && cg->has_psi);
        cg = top_snapshot_find(&s1, "/b");
        ASSERT_TRUE(cg->current == 2 * M && cg->high == TOP_UNLIMITED && cg->max == 4 * M);
        ASSERT_TRUE(cg->some_avg10 == 200 && cg->full_avg10 == 100);
        ASSERT_TRUE(cg->has_cpu_psi && cg->cpu_some_avg10 == 2550 && cg->has_io_psi && cg->io_some_avg10 == 425);
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_HIGH), 0); /* counts before the first refresh do not show */
        ASSERT_TRUE(!cg->changed);                          /* nothing to compare with yet */
        /* Both hierarchies: v1 numbers, cgroup2 PSI, v1 counters. */
        cg = top_snapshot_find(&s1, "/both");
        ASSERT_TRUE(cg->in_v1 && cg->in_v2 && cg->mem_v1 && cg->current == 4096 && cg->max == 8192);
        ASSERT_TRUE(cg->high == TOP_UNLIMITED && cg->has_psi && cg->some_avg10 == 700);
        ASSERT_TRUE(cg->has_cpu_psi && cg->cpu_some_avg10 == 50 && !cg->has_io_psi);
        ASSERT_U64_EQ(cg->ev[TOP_EV_MAX], 3);
        ASSERT_U64_EQ(cg->ev[TOP_EV_OOM_KILL], 2);
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_HIGH), TOP_NONE);
        cg = top_snapshot_find(&s1, "/only1");
        ASSERT_TRUE(cg->in_v1 && !cg->in_v2 && !cg->has_psi && cg->high == TOP_NONE);

        /* Second refresh: counters move, a cgroup goes, one comes, values change. */
        put("v2/b", "memory.events", "low 0\nhigh 9\nmax 1\noom 0\noom_kill 1\n");
        put("v2/a/x", "memory.current", "11\n");
        rm_tree("v2/a-b");
        v2_cgroup("v2/c", "1\n", "max\n", "max\n", psi(0, 0, b), "high 0\nmax 0\noom_kill 0\n");
        ASSERT_OK(top_snapshot_read(&roots, "/", &s1, &s2));
        top_snapshot_done(&s1);
        ASSERT_TRUE(top_snapshot_find(&s2, "/a-b") == NULL);
        cg = top_snapshot_find(&s2, "/b");
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_HIGH), 4);
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_MAX), 0);
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_OOM_KILL), 1);
        ASSERT_TRUE(cg->changed);
        cg = top_snapshot_find(&s2, "/a/x");
        ASSERT_TRUE(cg->changed && cg->current == 11);
        ASSERT_TRUE(!top_snapshot_find(&s2, "/a")->changed);
        ASSERT_TRUE(top_snapshot_find(&s2, "/c")->changed); /* new */

        /* A counter that went down (made anew) starts a new baseline; deltas persist otherwise. */
        put("v2/b", "memory.events", "low 0\nhigh 2\nmax 1\noom 0\noom_kill 1\n");
        ASSERT_OK(top_snapshot_read(&roots, "/", &s2, &s3));
        top_snapshot_done(&s2);
        cg = top_snapshot_find(&s3, "/b");
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_HIGH), 0);
        ASSERT_U64_EQ(top_event_delta(cg, TOP_EV_OOM_KILL), 1);
        ASSERT_TRUE(!top_snapshot_find(&s3, "/a/x")->changed);
        /* A cpu pressure change alone marks the row. */
        put("v2/b", "cpu.pressure", psi(30, 1, b));
        {
                TopSnapshot s4 = {};

                ASSERT_OK(top_snapshot_read(&roots, "/", &s3, &s4));
                cg = top_snapshot_find(&s4, "/b");
                ASSERT_TRUE(cg->changed && cg->cpu_some_avg10 == 3000 && cg->io_some_avg10 == 425);
                ASSERT_TRUE(!top_snapshot_find(&s4, "/a")->changed);
                top_snapshot_done(&s3);
                s3 = s4;
        }

        /* A subtree only; its root keeps its full path as name. */
        TopSnapshot sub = {};
        ASSERT_OK(top_snapshot_read(&roots, "/a", NULL, &sub));
        ASSERT_EQ(sub.n_cgroups, 2);
        ASSERT_STREQ(sub.cgroups[0].name, "/a");
        ASSERT_STREQ(sub.cgroups[1].path, "/a/x");
        top_snapshot_done(&sub);

        /* No fd budget: the same values, nothing new kept open (what a snapshot took over from the
         * previous one stays; this one starts afresh). */
        top_snapshot_done(&s3);
        top_set_fd_budget(0);
        ASSERT_OK(top_snapshot_read(&roots, "/", NULL, &s1));
        for (size_t i = 0; i < s1.n_cgroups; i++)
                for (unsigned side = 0; side < 2; side++) {
                        ASSERT_EQ(s1.cgroups[i].files[side].dir, -1);
                        for (unsigned k = 0; k < TOP_FILES; k++)
                                ASSERT_EQ(s1.cgroups[i].files[side].fd[k], -1);
                }
        ASSERT_TRUE(top_snapshot_find(&s1, "/a/x")->current == 11);
        top_snapshot_done(&s1);
        top_snapshot_done(NULL);

        rm_tree("");
}

#define S UINT64_C(1000000)

static void test_kills(void) {
        char root[4200], name[64];
        TopRoots roots = { .v2 = root };
        TopKills *k = calloc(1, sizeof(TopKills));
        TopSnapshot snap = {};
        TopCgroup *cg;

        ASSERT_TRUE(k != NULL);
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-top-cgroup-XXXXXX");
        ASSERT_TRUE(mkdtemp(tmpdir) != NULL);
        mkd("v2");
        mkd("v2/app.slice");
        mkd("v2/app.slice/web.service");
        mkd("v2/user.slice");
        snprintf(root, sizeof(root), "%s/v2", tmpdir);
        ASSERT_OK(top_snapshot_read(&roots, "/", NULL, &snap));

        /* Merged by cgroup, killer and reason; a time of 0 or in the future is now. */
        ASSERT_OK(top_kills_add(k, "/app.slice/web.service", "kernel", "oom_kill", 2, 100 * S, 1000 * S, 200 * S));
        ASSERT_OK(top_kills_add(k, "/app.slice/web.service", "kernel", "oom_kill", 1, 150 * S, 1050 * S, 200 * S));
        ASSERT_OK(top_kills_add(k, "/user.slice/app-gone.scope", "systemd-oomd", "memory-pressure", 1, 0, 1100 * S,
                                200 * S));
        ASSERT_OK(top_kills_add(k, "/elsewhere/x.scope", "systemd-oomd", "memory-pressure", 1, 900 * S, 1, 200 * S));
        ASSERT_EQ(k->n, 3);
        ASSERT_U64_EQ(k->kills[0].count, 3);
        ASSERT_U64_EQ(k->kills[0].at_us, 150 * S);
        ASSERT_U64_EQ(k->kills[1].at_us, 200 * S);
        ASSERT_U64_EQ(k->kills[2].at_us, 200 * S);

        /* Marks: the cgroup itself; a scope no longer there marks its parent; the root takes what has no
         * nearer ancestor. */
        ASSERT_EQ(top_kills_apply(k, &snap), 3);
        cg = top_snapshot_find(&snap, "/app.slice/web.service");
        ASSERT_U64_EQ(cg->kill_at_us, 150 * S);
        ASSERT_U64_EQ(cg->kill_time_us, 1050 * S);
        ASSERT_U64_EQ(cg->kills, 3);
        ASSERT_STREQ(cg->kill_by, "kernel");
        ASSERT_STREQ(cg->kill_reason, "oom_kill");
        ASSERT_STREQ(cg->kill_cgroup, "/app.slice/web.service");
        cg = top_snapshot_find(&snap, "/user.slice");
        ASSERT_U64_EQ(cg->kills, 1);
        ASSERT_STREQ(cg->kill_cgroup, "/user.slice/app-gone.scope");
        ASSERT_STREQ(cg->kill_by, "systemd-oomd");
        ASSERT_U64_EQ(top_snapshot_find(&snap, "/app.slice")->kill_at_us, TOP_NONE);
        ASSERT_U64_EQ(top_snapshot_find(&snap, "/")->kills, 1);
        top_snapshot_done(&snap);

        /* Only in the subtree shown: a kill outside it marks nothing. */
        ASSERT_OK(top_snapshot_read(&roots, "/app.slice", NULL, &snap));
        ASSERT_EQ(top_kills_apply(k, &snap), 1);
        top_snapshot_done(&snap);

        /* A minute later the first is forgotten, the others a little after. */
        top_kills_expire(k, 150 * S + TOP_KILL_WINDOW_USEC);
        ASSERT_EQ(k->n, 3);
        top_kills_expire(k, 150 * S + TOP_KILL_WINDOW_USEC + 1);
        ASSERT_EQ(k->n, 2);
        top_kills_expire(k, 200 * S + TOP_KILL_WINDOW_USEC + 1);
        ASSERT_EQ(k->n, 0);

        /* A storm of kills in many cgroups: at most TOP_KILLS_MAX held, the oldest go first. */
        for (unsigned i = 0; i < 3 * TOP_KILLS_MAX; i++) {
                snprintf(name, sizeof(name), "/app.slice/s%u.scope", i);
                ASSERT_OK(top_kills_add(k, name, "systemd-oomd", "memory-pressure", 1, 300 * S + i, 1, 400 * S));
        }
        ASSERT_EQ(k->n, TOP_KILLS_MAX);
        for (size_t i = 0; i < k->n; i++)
                ASSERT_TRUE(k->kills[i].at_us >= 300 * S + 2 * TOP_KILLS_MAX);
        ASSERT_OK(top_snapshot_read(&roots, "/", NULL, &snap));
        ASSERT_EQ(top_kills_apply(k, &snap), 1);
        ASSERT_U64_EQ(top_snapshot_find(&snap, "/app.slice")->kills, TOP_KILLS_MAX);
        ASSERT_U64_EQ(top_snapshot_find(&snap, "/app.slice")->kill_at_us, 300 * S + 3 * TOP_KILLS_MAX - 1);
        top_snapshot_done(&snap);
        top_kills_done(k);
        ASSERT_EQ(k->n, 0);
        free(k);
        rm_tree("");
}

int main(void) {
        test_roots();
        test_snapshots();
        test_kills();
        printf("ok\n");
        return 0;
}
