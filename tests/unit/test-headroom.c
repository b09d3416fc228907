/* SPDX-License-Identifier: MIT */
/*
 * Headroom on fake trees in a temporary directory (a cgroup2 tree "v2", a
 * v1 memory tree "v1" and a meminfo file): limits at several depths,
 * memory.high below memory.max, unlimited paths, a limit below the usage,
 * the machine as the outermost bound, missing and garbled files, the
 * namespace stop, the choice of hierarchy and its errors; then the margins
 * and the reclaim target, with their edges.
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fail-inject.h"
#include "headroom.h"
#include "tests.h"

#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)

static char base[] = "/tmp/test-headroom-XXXXXX";
static char meminfo[PATH_MAX];
static Hierarchy v2 = { .fd = -1 }, v1 = { .fd = -1 };

DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* A value in the file: "max" for UINT64_MAX. */
static void write_value(const char *cgroup, const char *file, uint64_t v) {
        char rel[PATH_MAX], text[32];

        snprintf(rel, sizeof(rel), "%s/%s", cgroup, file);
        if (v == UINT64_MAX)
                snprintf(text, sizeof(text), "max\n");
        else
                snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
        test_write_file_at(base, rel, text);
}

static void make_dir(const char *rel) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", base, rel);
        if (mkdir(path, 0755) < 0)
                TEST_FAIL("mkdir %s: %s", path, strerror(errno));
}

/* A cgroup2 cgroup "v2@cg" with its usage, memory.max and memory.high. */
static void make_v2(const char *cg, uint64_t usage, uint64_t max, uint64_t high) {
        char rel[PATH_MAX];

        snprintf(rel, sizeof(rel), "v2%s", cg);
        make_dir(rel);
        write_value(rel, "memory.current", usage);
        write_value(rel, "memory.max", max);
        write_value(rel, "memory.high", high);
}

/* A v1 memory cgroup "v1@cg" with its usage and memory.limit_in_bytes. */
static void make_v1(const char *cg, uint64_t usage, uint64_t limit) {
        char rel[PATH_MAX];

        snprintf(rel, sizeof(rel), "v1%s", cg);
        make_dir(rel);
        write_value(rel, "memory.usage_in_bytes", usage);
        write_value(rel, "memory.limit_in_bytes", limit);
}

static void set_meminfo(uint64_t total_kib, uint64_t available_kib) {
        char text[256];

        snprintf(text, sizeof(text),
                 "MemTotal:       %" PRIu64 " kB\nMemFree:         1000 kB\nMemAvailable:   %" PRIu64 " kB\n"
                 "Buffers:           0 kB\n", total_kib, available_kib);
        test_write_file_at(base, "meminfo", text);
}

static void build(void) {
        char path[PATH_MAX];

        ASSERT_TRUE(mkdtemp(base));
        make_dir("v2");
        make_dir("v1");
        test_write_file_at(base, "v2/cgroup.controllers", "cpu io memory pids\n");
        write_value("v1", "memory.usage_in_bytes", 5 * G);
        write_value("v1", "memory.limit_in_bytes", HEADROOM_V1_UNLIMITED);
        snprintf(meminfo, sizeof(meminfo), "%s/meminfo", base);
        set_meminfo(8 * G / 1024, 4 * G / 1024);

        /* /a max 1000M; /a/b high 700M below max 900M; /a/b/c unlimited. */
        make_v2("/a", 600 * M, 1000 * M, UINT64_MAX);
        make_v2("/a/b", 500 * M, 900 * M, 700 * M);
        make_v2("/a/b/c", 100 * M, UINT64_MAX, UINT64_MAX);
        /* /over: a limit below the usage. */
        make_v2("/over", 200 * M, 100 * M, UINT64_MAX);
        /* /free: nothing limited on the path. */
        make_v2("/free", 100 * M, UINT64_MAX, UINT64_MAX);
        /* /nomax/x: the ancestor lacks memory.max. */
        make_v2("/nomax", 300 * M, UINT64_MAX, UINT64_MAX);
        make_v2("/nomax/x", 100 * M, 200 * M, UINT64_MAX);
        snprintf(path, sizeof(path), "%s/v2/nomax/memory.max", base);
        ASSERT_OK(unlink(path) < 0 ? -errno : 0);
        /* /garbled/x: the ancestor's memory.high is no number; /badusage's own usage is not either. */
        make_v2("/garbled", 300 * M, UINT64_MAX, UINT64_MAX);
        test_write_file_at(base, "v2/garbled/memory.high", "lots\n");
        make_v2("/garbled/x", 100 * M, 200 * M, UINT64_MAX);
        make_v2("/badusage", 100 * M, 200 * M, UINT64_MAX);
        test_write_file_at(base, "v2/badusage/memory.current", "\n");
        /* /v1only: in cgroup2 without the memory controller, in v1 with it. */
        make_dir("v2/v1only");
        make_v1("/v1only", 100 * M, HEADROOM_V1_UNLIMITED);
        make_v1("/v1only/q", 100 * M, 512 * M);
        make_v1("/v1only/unlimited4k", 50 * M, UINT64_C(0x7ffffffffffff000));
        make_v1("/v1only/limit", 50 * M, UINT64_C(0x7fffffffffff0000) - 4096);
        /* /nomem: no memory controller anywhere. */
        make_dir("v2/nomem");
        make_dir("v1/nomem");
        snprintf(path, sizeof(path), "%s/v2/a", base);
        ASSERT_OK(symlink(path, strcat(strcpy((char[PATH_MAX]) {}, base), "/v2/link")) < 0 ? -errno : 0);

        snprintf(path, sizeof(path), "%s/v2", base);
        ASSERT_OK(hierarchy_open(&v2, path));
        snprintf(path, sizeof(path), "%s/v1", base);
        ASSERT_OK(hierarchy_open(&v1, path));
}

static int read_h(const char *cg, const char *stop, Headroom *h, SourceFailure *f) {
        HeadroomFiles files = { .v2 = &v2, .v1 = &v1, .meminfo = meminfo };

        return headroom_read(&files, cg, cg, stop, stop, h, f);
}

static void expect(const char *cg, const char *stop, uint64_t usage, const char *limiting, uint64_t limit,
                   bool known, uint64_t headroom, uint64_t margin_base) {
        _cleanup_(headroom_done) Headroom h = {};
        SourceFailure f;

        ASSERT_OK(read_h(cg, stop, &h, &f));
        ASSERT_U64_EQ(h.usage_bytes, usage);
        ASSERT_EQ(h.has_limit, limiting != NULL);
        if (limiting) {
                ASSERT_STREQ(h.limiting_cgroup, limiting);
                ASSERT_U64_EQ(h.limit_bytes, limit);
        } else
                ASSERT_TRUE(!h.limiting_cgroup);
        ASSERT_EQ(h.known, known);
        if (known) {
                ASSERT_U64_EQ(h.headroom_bytes, headroom);
                ASSERT_U64_EQ(h.margin_base_bytes, margin_base);
        }
}

static void test_limits(void) {
        /* The least room: /a/b's high (700M - 500M) beats /a's max (1000M - 600M). */
        expect("/a/b/c", NULL, 100 * M, "/a/b", 700 * M, true, 200 * M, 700 * M);
        expect("/a/b", NULL, 500 * M, "/a/b", 700 * M, true, 200 * M, 700 * M);
        expect("/a", NULL, 600 * M, "/a", 1000 * M, true, 400 * M, 1000 * M);
        /* /a tighter than /a/b now. */
        write_value("v2/a", "memory.current", 950 * M);
        expect("/a/b/c", NULL, 100 * M, "/a", 1000 * M, true, 50 * M, 1000 * M);
        write_value("v2/a", "memory.current", 600 * M);
        /* A limit below the usage: 0, never negative. */
        expect("/over", NULL, 200 * M, "/over", 100 * M, true, 0, 100 * M);
        /* Nothing limited: MemAvailable, margins of MemTotal. */
        expect("/free", NULL, 100 * M, NULL, 0, true, 4 * G, 8 * G);
        /* The whole system: MemTotal - MemAvailable used. */
        expect("/", NULL, 4 * G, NULL, 0, true, 4 * G, 8 * G);
}

static void test_machine(void) {
        /* The machine has less than the limit's room: it bounds; the limit is still named. */
        set_meminfo(8 * G / 1024, 100 * M / 1024);
        expect("/a/b/c", NULL, 100 * M, "/a/b", 700 * M, true, 100 * M, 8 * G);
        /* Exactly the limit's room: the limit decides. */
        set_meminfo(8 * G / 1024, 200 * M / 1024);
        expect("/a/b/c", NULL, 100 * M, "/a/b", 700 * M, true, 200 * M, 700 * M);
        /* Without meminfo: the limit's room alone, nothing for an unlimited cgroup, an error for the root. */
        test_write_file_at(base, "meminfo", "MemTotal: 1000 kB\n");
        expect("/a/b/c", NULL, 100 * M, "/a/b", 700 * M, true, 200 * M, 700 * M);
        expect("/free", NULL, 100 * M, NULL, 0, false, 0, 0);
        {
                Headroom h;
                SourceFailure f;

                ASSERT_ERR(read_h("/", NULL, &h, &f), EBADMSG);
                ASSERT_EQ(f.kind, SOURCE_FAILURE_UNAVAILABLE);
                ASSERT_STREQ(f.text, "/proc/meminfo cannot be read");
        }
        test_write_file_at(base, "meminfo", "MemTotal: 1000 kB\nMemAvailable: 12x kB\n");
        expect("/free", NULL, 100 * M, NULL, 0, false, 0, 0);
        test_write_file_at(base, "meminfo", "MemTotal: 18014398509481984 kB\nMemAvailable: 1 kB\n");
        expect("/free", NULL, 100 * M, NULL, 0, false, 0, 0);
        set_meminfo(8 * G / 1024, 4 * G / 1024);
}

static void test_unknown(void) {
        /* An ancestor without memory.max, or with a garbled memory.high: nothing known, the usage still is. */
        expect("/nomax/x", NULL, 100 * M, NULL, 0, false, 0, 0);
        expect("/garbled/x", NULL, 100 * M, NULL, 0, false, 0, 0);
        /* The cgroup's own limit file garbled. */
        test_write_file_at(base, "v2/free/memory.max", "12 34\n");
        expect("/free", NULL, 100 * M, NULL, 0, false, 0, 0);
        write_value("v2/free", "memory.max", UINT64_MAX);
        /* Its own usage garbled: an error. */
        {
                Headroom h;
                SourceFailure f;

                ASSERT_ERR(read_h("/badusage", NULL, &h, &f), EBADMSG);
                ASSERT_EQ(f.kind, SOURCE_FAILURE_UNAVAILABLE);
                ASSERT_STREQ(f.text, "the cgroup's memory usage cannot be read");
        }
}

static void test_stop(void) {
        /* A namespace rooted at /a/b sees /a/b's limit, not /a's. */
        write_value("v2/a", "memory.current", 950 * M);
        expect("/a/b/c", "/a/b", 100 * M, "/a/b", 700 * M, true, 200 * M, 700 * M);
        /* Rooted at the cgroup itself, with no limit of its own: the machine. */
        expect("/a/b/c", "/a/b/c", 100 * M, NULL, 0, true, 4 * G, 8 * G);
        expect("/a/b/c", "/a", 100 * M, "/a", 1000 * M, true, 50 * M, 1000 * M);
        write_value("v2/a", "memory.current", 600 * M);
        /* The namespace root's own garbled ancestor is out of its sight. */
        expect("/garbled/x", "/garbled/x", 100 * M, "/garbled/x", 200 * M, true, 100 * M, 200 * M);
}

static void test_v1(void) {
        /* No memory.current in cgroup2: the v1 hierarchy; its unlimited value is no limit. */
        _cleanup_(headroom_done) Headroom h = {};
        SourceFailure f;

        ASSERT_OK(read_h("/v1only/q", NULL, &h, &f));
        ASSERT_TRUE(h.v1);
        expect("/v1only/q", NULL, 100 * M, "/v1only/q", 512 * M, true, 412 * M, 512 * M);
        expect("/v1only", NULL, 100 * M, NULL, 0, true, 4 * G, 8 * G);
        expect("/v1only/unlimited4k", NULL, 50 * M, NULL, 0, true, 4 * G, 8 * G);
        /* Just below the unlimited threshold: a (huge) limit. */
        expect("/v1only/limit", NULL, 50 * M, "/v1only/limit", UINT64_C(0x7fffffffffff0000) - 4096, true,
               4 * G, 8 * G);
        /* Only in v1: found there even if the cgroup2 path is not given. */
        {
                HeadroomFiles files = { .v2 = &v2, .v1 = &v1, .meminfo = meminfo };
                _cleanup_(headroom_done) Headroom g = {};

                ASSERT_OK(headroom_read(&files, NULL, "/v1only/q", NULL, NULL, &g, &f));
                ASSERT_TRUE(g.v1 && g.known && g.headroom_bytes == 412 * M);
        }
        /* The cgroup2 root has no memory controller: the v1 root serves "/". */
        test_write_file_at(base, "v2/cgroup.controllers", "cpu io pids\n");
        headroom_done(&h);
        ASSERT_OK(read_h("/", NULL, &h, &f));
        ASSERT_TRUE(h.v1 && h.known && h.headroom_bytes == 4 * G && h.usage_bytes == 4 * G);
        test_write_file_at(base, "v2/cgroup.controllers", "cpu io memory pids\n");
}

static void test_errors(void) {
        HeadroomFiles files = { .v2 = &v2, .v1 = &v1, .meminfo = meminfo };
        Hierarchy none = { .fd = -1 };
        Headroom h;
        SourceFailure f;

        ASSERT_ERR(read_h("/nomem", NULL, &h, &f), EOPNOTSUPP);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_UNAVAILABLE);
        ASSERT_STREQ(f.text, "the cgroup has no memory controller in any hierarchy");
        ASSERT_ERR(read_h("/nothere", NULL, &h, &f), ENOENT);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_NO_SUCH_CGROUP);
        ASSERT_ERR(read_h("/link", NULL, &h, &f), ELOOP);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_INVALID_CGROUP_PATH);
        ASSERT_ERR(read_h("/meminfo", NULL, &h, &f), ENOENT);
        /* A file where a cgroup is named. */
        ASSERT_ERR(read_h("/cgroup.controllers", NULL, &h, &f), ENOTDIR);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_INVALID_CGROUP_PATH);
        /* Not in cgroup2, a symlink in v1. */
        ASSERT_OK(symlink("/tmp", strcat(strcpy((char[PATH_MAX]) {}, base), "/v1/v1link")) < 0 ? -errno : 0);
        ASSERT_ERR(read_h("/v1link", NULL, &h, &f), ELOOP);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_INVALID_CGROUP_PATH);
        /* No hierarchies at all. */
        files.v2 = files.v1 = &none;
        ASSERT_ERR(headroom_read(&files, "/a", "/a", NULL, NULL, &h, &f), ENOENT);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_NO_SUCH_CGROUP);
}

/* A cgroup unreadable for the caller: the open's errno. */
static void expect_unreadable(void) {
        _cleanup_(headroom_done) Headroom h = {};
        SourceFailure f;

        ASSERT_ERR(read_h("/a/b", NULL, &h, &f), EACCES);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_OPEN);
}

static void test_unreadable(void) {
        char a[PATH_MAX];
        int status;
        pid_t pid;

        snprintf(a, sizeof(a), "%s/v2/a", base);
        ASSERT_OK(chmod(a, 0));
        if (geteuid() != 0)
                expect_unreadable();
        else {
                /* Root reads everything: the check runs in a child that dropped to nobody, who may
                 * pass through the test's directory to v2/a. */
                ASSERT_OK(chmod(base, 0711));
                pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                                _exit(3);
                        expect_unreadable();
                        _exit(0);
                }
                ASSERT_EQ(waitpid(pid, &status, 0), pid);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
                        test_skip_part("root could not drop to nobody (65534): the check of an unreadable "
                                       "cgroup did not run");
                else
                        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                ASSERT_OK(chmod(base, 0700));
        }
        ASSERT_OK(chmod(a, 0755));
}

/* What a level tracker reads with: the hierarchy remembered, /proc/meminfo kept open. */
static int read_hinted(const char *cg, const int *meminfo_fd, HeadroomHint *hint, Headroom *h, SourceFailure *f) {
        HeadroomFiles files = { .v2 = &v2, .v1 = &v1, .meminfo = meminfo, .meminfo_fd = meminfo_fd };

        headroom_done(h);
        return headroom_read_hinted(&files, cg, cg, NULL, NULL, hint, h, f);
}

static void test_hinted(void) {
        _cleanup_(headroom_done) Headroom h = {};
        HeadroomHint hint = HEADROOM_HINT_NONE;
        SourceFailure f;
        int fd = open(meminfo, O_RDONLY | O_CLOEXEC), none = -1;
        char path[PATH_MAX];

        ASSERT_TRUE(fd >= 0);
        /* The first read probes and remembers; the next goes straight there, with the same answer. */
        ASSERT_OK(read_hinted("/a/b/c", &fd, &hint, &h, &f));
        ASSERT_EQ(hint, HEADROOM_HINT_V2);
        ASSERT_STREQ(h.limiting_cgroup, "/a/b");
        ASSERT_U64_EQ(h.headroom_bytes, 200 * M);
        ASSERT_OK(read_hinted("/a/b/c", &fd, &hint, &h, &f));
        ASSERT_EQ(hint, HEADROOM_HINT_V2);
        ASSERT_TRUE(!h.v1 && h.known && h.headroom_bytes == 200 * M);
        ASSERT_OK(read_hinted("/v1only/q", &fd, &(HeadroomHint) { HEADROOM_HINT_NONE }, &h, &f));
        ASSERT_TRUE(h.v1 && h.headroom_bytes == 412 * M);

        /* The kept meminfo is read afresh each time (the machine bounds "/free"). */
        ASSERT_OK(read_hinted("/free", &fd, &hint, &h, &f));
        ASSERT_U64_EQ(h.headroom_bytes, 4 * G);
        set_meminfo(8 * G / 1024, 3 * G / 1024);
        ASSERT_OK(read_hinted("/free", &fd, &hint, &h, &f));
        ASSERT_U64_EQ(h.headroom_bytes, 3 * G);
        ASSERT_OK(read_hinted("/", &fd, &hint, &h, &f));
        ASSERT_TRUE(h.known && h.headroom_bytes == 3 * G && h.usage_bytes == 5 * G);
        /* Not kept (-1): the path, as headroom_read() does. */
        ASSERT_OK(read_hinted("/", &none, &hint, &h, &f));
        ASSERT_TRUE(h.known && h.headroom_bytes == 3 * G);
        set_meminfo(8 * G / 1024, 4 * G / 1024);

        /* The hint is stale: the cgroup left cgroup2's memory controller. Probed again, found in v1. */
        make_v1("/moved", 10 * M, 100 * M);
        make_v2("/moved", 20 * M, 200 * M, UINT64_MAX);
        hint = HEADROOM_HINT_NONE;
        ASSERT_OK(read_hinted("/moved", &fd, &hint, &h, &f));
        ASSERT_TRUE(hint == HEADROOM_HINT_V2 && !h.v1 && h.headroom_bytes == 180 * M);
        snprintf(path, sizeof(path), "%s/v2/moved/memory.current", base);
        ASSERT_OK(unlink(path) < 0 ? -errno : 0);
        ASSERT_OK(read_hinted("/moved", &fd, &hint, &h, &f));
        ASSERT_TRUE(hint == HEADROOM_HINT_V1 && h.v1 && h.headroom_bytes == 90 * M);
        /* Gone from both: the error a probe gives, and the hint forgotten. */
        snprintf(path, sizeof(path), "%s/v1/moved/memory.usage_in_bytes", base);
        ASSERT_OK(unlink(path) < 0 ? -errno : 0);
        ASSERT_ERR(read_hinted("/moved", &fd, &hint, &h, &f), EOPNOTSUPP);
        ASSERT_EQ(hint, HEADROOM_HINT_NONE);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_UNAVAILABLE);
        /* A hint to a hierarchy the cgroup is not named in: probed. */
        hint = HEADROOM_HINT_V1;
        {
                HeadroomFiles files = { .v2 = &v2, .v1 = &v1, .meminfo = meminfo, .meminfo_fd = &fd };

                headroom_done(&h);
                ASSERT_OK(headroom_read_hinted(&files, "/a/b", NULL, NULL, NULL, &hint, &h, &f));
                ASSERT_TRUE(hint == HEADROOM_HINT_V2 && h.headroom_bytes == 200 * M);
        }
        /* A kept fd that cannot be read: as an unreadable /proc/meminfo, "/" is not known. */
        close(fd);
        fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_ERR(read_hinted("/", &fd, &hint, &h, &f), EBADMSG);
        ASSERT_EQ(f.kind, SOURCE_FAILURE_UNAVAILABLE);
        close(fd);
}

/* Every allocation of a read fails in turn: -ENOMEM, nothing leaked. */
static void test_out_of_memory(void) {
        for (unsigned n = 1;; n++) {
                _cleanup_(headroom_done) Headroom h = {};
                SourceFailure f;
                bool injected;
                int r;

                fail_inject_reset();
                fail_inject_after(FAIL_ALLOC, n);
                r = read_h("/a/b/c", NULL, &h, &f);
                injected = fail_inject_fired(FAIL_ALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        ASSERT_STREQ(h.limiting_cgroup, "/a/b");
                        ASSERT_TRUE(n > 2);
                        break;
                }
                ASSERT_ERR(r, ENOMEM);
        }
}

static void test_margins(void) {
        _cleanup_(config_freep) Config *c = config_new_default();
        Headroom h = { .known = true, .headroom_bytes = 30 * M, .margin_base_bytes = 1000 * M };
        uint64_t t;

        ASSERT_TRUE(c);
        /* Defaults 5%, 10%, 20% of 1000M against 30M of headroom. */
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 0, &t));
        ASSERT_U64_EQ(t, 0);
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 1, &t));
        ASSERT_U64_EQ(t, 50 * M - 30 * M);
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 2, &t));
        ASSERT_U64_EQ(t, 100 * M - 30 * M);
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 3, &t));
        ASSERT_U64_EQ(t, 200 * M - 30 * M);
        /* Above the margin: 0; exactly at it: 0. */
        h.headroom_bytes = 50 * M;
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 1, &t));
        ASSERT_U64_EQ(t, 0);
        h.headroom_bytes = 900 * M;
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 3, &t));
        ASSERT_U64_EQ(t, 0);
        /* Out of range, not known. */
        ASSERT_TRUE(!headroom_reclaim_target(&h, c, 4, &t));
        ASSERT_TRUE(!headroom_reclaim_target(&h, c, -1, &t));
        ASSERT_TRUE(!headroom_margin(c, _LEVEL_MAX, 1, &t));
        ASSERT_TRUE(!headroom_margin(c, -1, 1, &t));
        h.known = false;
        ASSERT_TRUE(!headroom_reclaim_target(&h, c, 0, &t));
        ASSERT_TRUE(!headroom_reclaim_target(&h, c, 2, &t));
        /* Sizes are sizes, whatever the base; 0 headroom asks for the whole margin. */
        ASSERT_OK(config_parse_string(c, "x", "[Levels]\nMarginLow=256M\nMarginCritical=100%\nMarginMedium=0\n",
                                      NULL));
        h = (Headroom) { .known = true, .headroom_bytes = 0, .margin_base_bytes = 1 };
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 1, &t));
        ASSERT_U64_EQ(t, 256 * M);
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 2, &t));
        ASSERT_U64_EQ(t, 0);
        /* 100% of the largest base, and of a base whose product overflows 64 bits. */
        h.margin_base_bytes = UINT64_MAX;
        ASSERT_TRUE(headroom_reclaim_target(&h, c, 3, &t));
        ASSERT_U64_EQ(t, UINT64_MAX);
        ASSERT_OK(config_parse_string(c, "x", "[Levels]\nMarginCritical=99.9999%\n", NULL));
        ASSERT_TRUE(headroom_margin(c, LEVEL_CRITICAL, UINT64_MAX, &t));
        ASSERT_U64_EQ(t, (uint64_t) ((unsigned __int128) UINT64_MAX * 999999 / 1000000));
        ASSERT_TRUE(headroom_margin(c, LEVEL_CRITICAL, 1000000, &t));
        ASSERT_U64_EQ(t, 999999);
        ASSERT_TRUE(headroom_margin(c, LEVEL_CRITICAL, 999, &t));
        ASSERT_U64_EQ(t, 998);
}

int main(void) {
        build();
        test_limits();
        test_machine();
        test_unknown();
        test_stop();
        test_v1();
        test_errors();
        test_unreadable();
        test_hinted();
        test_out_of_memory();
        test_margins();
        hierarchy_close(&v2);
        hierarchy_close(&v1);
        ASSERT_OK(test_rm_tree(base));
        return test_finish();
}
