/* SPDX-License-Identifier: MIT */
/*
 * Tests for the proactive reclaim runtime (server/reclaim-controller.h,
 * server/reclaim-worker.h) on a fake cgroup tree in a temporary directory,
 * with a stand-in clock: the write of memory.reclaim (a plain file, a
 * FIFO, missing), the steps written, backoff on stall and on each write
 * result (EAGAIN, EINTR, a vanished cgroup, no memory.reclaim, another
 * error), the floor from memory.min through the protection model, a
 * cgroup without the memory controller, no hierarchy at all, turning it
 * on, changing and off again, the journal lines, GetStatus's entries,
 * /metrics, the worker's bound, and out of memory and a refused timer on
 * every allocation of a start.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "config.h"
#include "fail-inject.h"
#include "log.h"
#include "reclaim-controller.h"
#include "reclaim-worker.h"
#include "test-capture.h"
#include "tests.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/*
 * Wrapped (tests/unit/meson.build links this test with --wrap=write,
 * eventfd and pthread_create): writes to the file with inode wrap_ino
 * fail with wrap_errno wrap_times times (or, with wrap_errno 0, write one
 * byte less); eventfd() and pthread_create() fail while their flags say so.
 */
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_eventfd(unsigned initval, int flags);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

static ino_t wrap_ino;
static int wrap_errno;
static unsigned wrap_times, wrap_calls;
static bool fail_eventfd, fail_pthread_create;

ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n) {
        struct stat st;

        if (wrap_times > 0 && fstat(fd, &st) == 0 && st.st_ino == wrap_ino) {
                wrap_times--;
                wrap_calls++;
                if (wrap_errno == 0)
                        return __real_write(fd, buf, n - 1);
                errno = wrap_errno;
                return -1;
        }
        return __real_write(fd, buf, n);
}

int __wrap_eventfd(unsigned initval, int flags);
int __wrap_eventfd(unsigned initval, int flags) {
        if (fail_eventfd) {
                errno = EMFILE;
                return -1;
        }
        return __real_eventfd(initval, flags);
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
        if (fail_pthread_create)
                return EAGAIN;
        return __real_pthread_create(t, a, fn, arg);
}

static char root[64];
static uint64_t fake_now = 1000 * USEC_PER_SEC;

static uint64_t fake_clock(void *userdata) {
        return fake_now;
}

/* @text as the file @name of the fake @cgroup. */
static void set_text(const char *cgroup, const char *name, const char *text) {
        char dir[512];

        snprintf(dir, sizeof(dir), "%s%s", root, cgroup);
        test_write_file_at(dir, name, text);
}

static char *read_file(const char *cgroup, const char *name) {
        static char buf[256];
        char path[512];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "%s%s/%s", root, cgroup, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        n = read(fd, buf, sizeof(buf) - 1);
        ASSERT_TRUE(n >= 0);
        buf[n] = 0;
        close(fd);
        return buf;
}

static void set_u64(const char *cgroup, const char *name, uint64_t v) {
        char text[32];

        snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
        set_text(cgroup, name, text);
}

/* memory.pressure or io.pressure with this some total. */
static void set_psi(const char *cgroup, const char *name, uint64_t some_us) {
        char text[200];

        snprintf(text, sizeof(text),
                 "some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", some_us);
        set_text(cgroup, name, text);
}

static void make_cgroup(const char *cgroup, uint64_t current, uint64_t min) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", root, cgroup);
        ASSERT_OK(mkdir(path, 0755) < 0 ? -errno : 0);
        set_u64(cgroup, "memory.current", current);
        set_u64(cgroup, "memory.min", min);
        set_u64(cgroup, "memory.low", 0);
        set_psi(cgroup, "memory.pressure", 0);
        set_psi(cgroup, "io.pressure", 0);
        set_text(cgroup, "memory.reclaim", "");
}

static void tree_setup(void) {
        snprintf(root, sizeof(root), "/tmp/test-reclaim-XXXXXX");
        ASSERT_TRUE(mkdtemp(root) != NULL);
        set_u64("", "memory.current", 64 * GIB);
}

static void tree_teardown(void) {
        ASSERT_OK(test_rm_tree(root));
}

static void remove_cgroup(const char *cgroup) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", root, cgroup);
        ASSERT_OK(test_rm_tree(path));
}

/* A controller on the fake tree, with the stand-in clock and @write (NULL: the real one). */
typedef struct Fixture {
        struct event_base *base;
        int root_fd;
        Config *config;
        ReclaimController *rc;
} Fixture;

static void fixture_init(Fixture *f, bool with_root, ReclaimWriteFn write) {
        f->base = event_base_new();
        ASSERT_TRUE(f->base);
        f->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(f->root_fd >= 0);
        f->config = config_new_default();
        ASSERT_TRUE(f->config);
        /* Only the test's ticks: the timer never comes due. */
        f->config->reclaim_interval_usec = 3600 * USEC_PER_SEC;
        ASSERT_OK(reclaim_controller_new(f->base, with_root ? root : NULL, f->root_fd, false, &f->rc));
        reclaim_controller_set_clock(f->rc, fake_clock, NULL);
        reclaim_controller_set_write_fn(f->rc, write);
}

static void fixture_done(Fixture *f) {
        f->rc = reclaim_controller_free(f->rc);
        config_free(f->config);
        close(f->root_fd);
        event_base_free(f->base);
}

static int configure(Fixture *f, const char *cgroups) {
        free(f->config->reclaim_cgroups);
        f->config->reclaim_cgroups = cgroups ? strdup(cgroups) : NULL;
        return reclaim_controller_configure(f->rc, f->config, false);
}

/* Wait for every write in flight to come back. */
static void settle(Fixture *f) {
        while (reclaim_controller_in_flight(f->rc) > 0)
                ASSERT_OK(event_base_loop(f->base, EVLOOP_ONCE));
}

/* Six seconds later: one interval, then its writes. */
static void interval(Fixture *f) {
        fake_now += 6 * USEC_PER_SEC;
        reclaim_controller_tick(f->rc);
        settle(f);
}

/* The GetStatus entry of @cgroup (borrowed from a static reply), or NULL. */
static json_t *entry(Fixture *f, const char *cgroup) {
        static json_t *last;
        json_t *e;
        size_t i;

        json_decref(last);
        last = reclaim_controller_status_json(f->rc, NULL);
        ASSERT_TRUE(last);
        json_array_foreach(last, i, e)
                if (streq(json_string_value(json_object_get(e, "cgroup")), cgroup))
                        return e;
        return NULL;
}

static const char *state(Fixture *f, const char *cgroup) {
        json_t *e = entry(f, cgroup);

        if (!e)
                TEST_FAIL("no reclaim entry for %s", cgroup);
        return json_string_value(json_object_get(e, "state"));
}

static long long field(Fixture *f, const char *cgroup, const char *name) {
        json_t *e = entry(f, cgroup);

        if (!e)
                TEST_FAIL("no reclaim entry for %s", cgroup);
        return json_integer_value(json_object_get(e, name));
}

static double field_real(Fixture *f, const char *cgroup, const char *name) {
        return json_real_value(json_object_get(entry(f, cgroup), name));
}

static unsigned count_substr(const char *text, const char *what) {
        unsigned n = 0;

        for (const char *p = text; (p = strstr(p, what)); p++)
                n++;
        return n;
}

static void test_write(void) {
        char fifo[512];
        int rfd, wfd, dfd;

        tree_setup();
        make_cgroup("/a", GIB, 0);
        dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        ASSERT_OK(reclaim_write(dfd, "/a", 1048576));
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "1048576");
        /* The file is rewritten, not appended to. */
        ASSERT_OK(reclaim_write(dfd, "/a", 4096));
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "4096");
        /* The root is "/". */
        set_text("", "memory.reclaim", "");
        ASSERT_OK(reclaim_write(dfd, "/", 8192));
        ASSERT_STREQ(read_file("", "memory.reclaim"), "8192");
        ASSERT_ERR(reclaim_write(dfd, "/gone", 4096), ESRCH);
        /* Not a directory (a cgroup replaced by a file): not a cgroup any more. */
        set_text("", "plain", "x");
        ASSERT_ERR(reclaim_write(dfd, "/plain", 4096), ESRCH);
        /* A path longer than any cgroup2 path can be. */
        {
                char *long_path = malloc(CGROUP_PATH_MAX + 2);

                ASSERT_TRUE(long_path);
                memset(long_path, 'a', CGROUP_PATH_MAX + 1);
                long_path[0] = '/';
                long_path[CGROUP_PATH_MAX + 1] = 0;
                ASSERT_ERR(reclaim_write(dfd, long_path, 4096), ENAMETOOLONG);
                free(long_path);
        }
        remove_cgroup("/a");
        ASSERT_ERR(reclaim_write(dfd, "/a", 4096), ESRCH);
        /* No memory.reclaim: a kernel before 5.19 or no memory controller. */
        make_cgroup("/b", GIB, 0);
        snprintf(fifo, sizeof(fifo), "%s/b/memory.reclaim", root);
        ASSERT_OK(unlink(fifo));
        ASSERT_ERR(reclaim_write(dfd, "/b", 4096), EOPNOTSUPP);
        /* A FIFO nobody reads: ENXIO, passed on. */
        ASSERT_OK(mkfifo(fifo, 0600));
        ASSERT_ERR(reclaim_write(dfd, "/b", 4096), ENXIO);
        /* A full FIFO: the write would block, so EAGAIN, the kernel's "could not reclaim that much". */
        rfd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_TRUE(rfd >= 0);
        wfd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_TRUE(wfd >= 0);
        while (write(wfd, "xxxxxxxxxxxxxxxx", 16) == 16)
                ;
        ASSERT_EQ(errno, EAGAIN);
        ASSERT_ERR(reclaim_write(dfd, "/b", 4096), EAGAIN);
        close(wfd);
        close(rfd);
        ASSERT_OK(unlink(fifo));
        /* A directory in its place. */
        ASSERT_OK(mkdir(fifo, 0755) < 0 ? -errno : 0);
        ASSERT_ERR(reclaim_write(dfd, "/b", 4096), EISDIR);
        close(dfd);
        tree_teardown();
}

/* Write errors only a kernel gives: EINTR (retried), a short write, ENODEV of a removed cgroup. */
static void test_write_errors(void) {
        char file[512];
        struct stat st;
        int dfd;

        tree_setup();
        make_cgroup("/a", GIB, 0);
        dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(dfd >= 0);
        snprintf(file, sizeof(file), "%s/a/memory.reclaim", root);
        ASSERT_OK(stat(file, &st));
        wrap_ino = st.st_ino;

        /* Interrupted up to RECLAIM_WRITE_EINTR_RETRIES times: retried, and done. */
        wrap_errno = EINTR;
        wrap_times = RECLAIM_WRITE_EINTR_RETRIES;
        wrap_calls = 0;
        ASSERT_OK(reclaim_write(dfd, "/a", 65536));
        ASSERT_EQ(wrap_calls, RECLAIM_WRITE_EINTR_RETRIES);
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "65536");
        /* Once more: given up, -EINTR. */
        wrap_times = RECLAIM_WRITE_EINTR_RETRIES + 1;
        ASSERT_ERR(reclaim_write(dfd, "/a", 65536), EINTR);
        ASSERT_EQ(wrap_times, 0);
        /* The cgroup removed under the open file. */
        wrap_errno = ENODEV;
        wrap_times = 1;
        ASSERT_ERR(reclaim_write(dfd, "/a", 4096), ESRCH);
        /* A short write. */
        wrap_errno = 0;
        wrap_times = 1;
        ASSERT_ERR(reclaim_write(dfd, "/a", 4096), EIO);
        wrap_times = 0;
        close(dfd);
        tree_teardown();
}

/* The worker cannot start: no eventfd, no thread. The controller stays off and says so. */
static void test_start_failures(void) {
        struct event_base *base = event_base_new();
        ReclaimWorker *w = NULL;
        char path[64];
        const char *log;
        Fixture f;
        int saved;

        ASSERT_TRUE(base);
        fail_eventfd = true;
        ASSERT_ERR(reclaim_worker_new(base, -1, 4, NULL, NULL, NULL, &w), EMFILE);
        fail_eventfd = false;
        fail_pthread_create = true;
        ASSERT_ERR(reclaim_worker_new(base, -1, 4, NULL, NULL, NULL, &w), EAGAIN);
        ASSERT_TRUE(w == NULL);
        event_base_free(base);

        tree_setup();
        make_cgroup("/a", GIB, 0);
        fixture_init(&f, true, NULL);
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_ERR(configure(&f, "/a"), EAGAIN);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        fail_pthread_create = false;
        ASSERT_TRUE(strstr(log, "Reclaim: failed to start, the controller stays off: Resource temporarily unavailable"));
        ASSERT_TRUE(!reclaim_controller_active(f.rc));
        ASSERT_TRUE(entry(&f, "/a") == NULL);
        /* The next reload tries again. */
        ASSERT_OK(configure(&f, "/a"));
        ASSERT_TRUE(reclaim_controller_active(f.rc));
        fixture_done(&f);
        tree_teardown();
}

/* More matches than RECLAIM_MAX_CGROUPS: the first ones, one log line; unreadable files: logged. */
static void test_limits_and_read_errors(void) {
        char name[32], path[64], dir[512];
        const char *log;
        Fixture f;
        int saved;

        tree_setup();
        for (int i = 0; i <= RECLAIM_MAX_CGROUPS; i++) {
                snprintf(name, sizeof(name), "/c%04d", i);
                snprintf(dir, sizeof(dir), "%s%s", root, name);
                ASSERT_OK(mkdir(dir, 0755) < 0 ? -errno : 0);
                set_u64(name, "memory.current", GIB);
        }
        make_cgroup("/d", GIB, 0);
        snprintf(dir, sizeof(dir), "%s/d/io.pressure", root);
        ASSERT_OK(unlink(dir));
        ASSERT_OK(mkdir(dir, 0755) < 0 ? -errno : 0);
        fixture_init(&f, true, NULL);
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_OK(configure(&f, "/c*"));
        interval(&f);
        ASSERT_OK(configure(&f, NULL));
        ASSERT_OK(configure(&f, "/d"));
        interval(&f);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_EQ(count_substr(log, "Reclaim: Cgroups= matches more than 1000 cgroups; the 1 after the first 1000 in tree order are not controlled."), 1);
        ASSERT_TRUE(strstr(log, "Reclaim: failed to read 1 cgroup file(s), the first /d/io.pressure"));
        /* io.pressure unreadable: the io stall counts as none, memory alone decides. */
        ASSERT_STREQ(state(&f, "/d"), "probing");
        ASSERT_TRUE(field(&f, "/d", "reclaimed_bytes") > 0);
        fixture_done(&f);
        tree_teardown();
}

/* The protection tree cannot be read: nothing is reclaimed, since the floor is not known. */
static void test_protection_unknown(void) {
        char path[64];
        const char *log;
        Fixture f;
        int saved;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        f.base = event_base_new();
        f.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        f.config = config_new_default();
        ASSERT_TRUE(f.base && f.root_fd >= 0 && f.config);
        f.config->reclaim_interval_usec = 3600 * USEC_PER_SEC;
        ASSERT_OK(reclaim_controller_new(f.base, "/nonexistent/cgroup2", f.root_fd, false, &f.rc));
        reclaim_controller_set_clock(f.rc, fake_clock, NULL);
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_OK(configure(&f, "/a"));
        interval(&f);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_TRUE(strstr(log, "Reclaim: failed to open the protection tree of /nonexistent/cgroup2, not reclaiming"));
        ASSERT_TRUE(strstr(log, "Reclaim: the protection of /a is not known; not reclaiming it this interval."));
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 0);
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 0);
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "");
        fixture_done(&f);
        tree_teardown();
}

static void test_steps(void) {
        Fixture f;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        make_cgroup("/small", 50 * MIB, 0);
        /* A child of the root with memory.min: its effective memory.min is its own. */
        make_cgroup("/prot", 8 * GIB + MIB, 8 * GIB);
        make_cgroup("/other", GIB, 0);
        fixture_init(&f, true, NULL);

        ASSERT_OK(configure(&f, "/a /small /prot"));
        ASSERT_TRUE(reclaim_controller_active(f.rc));
        /* The first interval only samples. */
        ASSERT_STREQ(state(&f, "/a"), "probing");
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 0);
        ASSERT_STREQ(state(&f, "/small"), "at-floor");
        ASSERT_EQ(field(&f, "/small", "floor_bytes"), 100 * MIB);
        ASSERT_EQ(field(&f, "/prot", "floor_bytes"), 8 * GIB);
        ASSERT_TRUE(entry(&f, "/other") == NULL);

        /* No stall: 1% of 10G, in pages; the floor of /prot leaves it 1M. */
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "probing");
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 107372544);
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 107372544);
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "107372544");
        ASSERT_EQ(field(&f, "/prot", "last_step_bytes"), MIB);
        ASSERT_STREQ(read_file("/prot", "memory.reclaim"), "1048576");
        ASSERT_STREQ(read_file("/small", "memory.reclaim"), "");

        /* Half the target: half the step. Totals add up. */
        set_psi("/a", "memory.pressure", 3000);
        set_u64("/prot", "memory.current", 8 * GIB);
        interval(&f);
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 53686272);
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 107372544 + 53686272);
        ASSERT_TRUE(field_real(&f, "/a", "stall_pct") == 0.05);
        ASSERT_STREQ(state(&f, "/prot"), "at-floor");

        /* At the target: backing off, nothing written. */
        set_text("/a", "memory.reclaim", "");
        set_psi("/a", "memory.pressure", 3000 + 6000);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "backing-off");
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 0);
        ASSERT_TRUE(field_real(&f, "/a", "stall_pct") == 0.1);
        ASSERT_STREQ(read_file("/a", "memory.reclaim"), "");

        /* io stall above the target backs off as well. */
        set_psi("/a", "io.pressure", 12000);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "backing-off");
        ASSERT_TRUE(field_real(&f, "/a", "io_stall_pct") == 0.2);
        ASSERT_TRUE(field_real(&f, "/a", "stall_pct") == 0);

        /* Quiet again: probing. */
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "probing");
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 107372544);

        /* A cgroup that vanishes leaves; a new match joins. */
        remove_cgroup("/small");
        ASSERT_OK(configure(&f, "/a /small /prot /other"));
        /* Reconfigured: the change shows at the next interval. */
        ASSERT_TRUE(entry(&f, "/small") != NULL);
        ASSERT_TRUE(entry(&f, "/other") == NULL);
        interval(&f);
        ASSERT_TRUE(entry(&f, "/small") == NULL);
        ASSERT_STREQ(state(&f, "/other"), "probing");
        ASSERT_EQ(field(&f, "/other", "last_step_bytes"), 0);
        /* Reconfiguring keeps the totals. */
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 3 * 107372544 + 53686272);
        /* A pattern that no longer matches: the cgroup leaves. */
        ASSERT_OK(configure(&f, "/o*"));
        interval(&f);
        ASSERT_TRUE(entry(&f, "/a") == NULL);
        ASSERT_TRUE(entry(&f, "/other") != NULL);
        ASSERT_EQ(field(&f, "/other", "last_step_bytes"), 10735616);
        /* A caller in a cgroup namespace sees its own cgroups, named from its root. */
        {
                json_t *inside = reclaim_controller_status_json(f.rc, "/other");
                json_t *outside = reclaim_controller_status_json(f.rc, "/a");

                ASSERT_EQ(json_array_size(inside), 1);
                ASSERT_STREQ(json_string_value(json_object_get(json_array_get(inside, 0), "cgroup")), "/");
                ASSERT_EQ(json_array_size(outside), 0);
                json_decref(inside);
                json_decref(outside);
        }

        /* Off: nothing is left, no timer. */
        ASSERT_OK(configure(&f, NULL));
        ASSERT_TRUE(!reclaim_controller_active(f.rc));
        ASSERT_TRUE(entry(&f, "/other") == NULL);
        {
                json_t *all = reclaim_controller_status_json(f.rc, NULL);

                ASSERT_EQ(json_array_size(all), 0);
                json_decref(all);
        }
        fixture_done(&f);
        tree_teardown();
}

/* The next results of the scripted write, in order; 0 once they run out. */
static int script[8];
static size_t script_n, script_pos;
static uint64_t written_bytes;

static int scripted_write(int root_fd, const char *cgroup, uint64_t bytes) {
        written_bytes = bytes;
        return script_pos < script_n ? script[script_pos++] : 0;
}

static void set_script(const int *results, size_t n) {
        memcpy(script, results, n * sizeof(int));
        script_n = n;
        script_pos = 0;
}

static void test_results(void) {
        static const int results[] = { -EAGAIN, -EINTR, -EIO, -ESRCH, -EOPNOTSUPP };
        char path[64];
        const char *log;
        Fixture f;
        int saved;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        fixture_init(&f, true, scripted_write);
        set_script(results, ELEMENTSOF(results));
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_OK(configure(&f, "/a"));

        /* EAGAIN: nothing counted, the next interval backs off, then it probes again. */
        interval(&f);
        ASSERT_EQ(script_pos, 1);
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 0);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "backing-off");
        ASSERT_EQ(script_pos, 1);
        /* EINTR (every retry): nothing counted, no backoff. */
        interval(&f);
        ASSERT_EQ(script_pos, 2);
        ASSERT_STREQ(state(&f, "/a"), "probing");
        ASSERT_EQ(field(&f, "/a", "reclaimed_bytes"), 0);
        /* Another error: logged, backs off. */
        interval(&f);
        ASSERT_EQ(script_pos, 3);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "backing-off");
        /* The cgroup is gone (as the write saw it): nothing; it leaves when the walk misses it. */
        interval(&f);
        ASSERT_EQ(script_pos, 4);
        ASSERT_STREQ(state(&f, "/a"), "probing");
        /* No memory.reclaim: unsupported, one log line, and no more writes. */
        interval(&f);
        ASSERT_EQ(script_pos, 5);
        ASSERT_STREQ(state(&f, "/a"), "unsupported");
        interval(&f);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "unsupported");
        ASSERT_EQ(script_pos, 5);
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 0);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_TRUE(strstr(log, "Reclaim: failed to write /a/memory.reclaim, backing off: Input/output error"));
        ASSERT_EQ(count_substr(log, "cannot be reclaimed (no memory.reclaim"), 1);
        fixture_done(&f);
        tree_teardown();
}

static int gated_write(int root_fd, const char *cgroup, uint64_t bytes);
static int gate[2];

/* A write that comes back for a cgroup that left meanwhile is dropped. */
static void test_vanish_in_flight(void) {
        Fixture f;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        make_cgroup("/b", 10 * GIB, 0);
        ASSERT_OK(pipe2(gate, O_CLOEXEC));
        fixture_init(&f, true, gated_write);
        ASSERT_OK(configure(&f, "/*"));
        fake_now += 6 * USEC_PER_SEC;
        reclaim_controller_tick(f.rc);
        ASSERT_EQ(reclaim_controller_in_flight(f.rc), 2);
        /* Still in flight at the next interval: no second write for the cgroup. */
        fake_now += 6 * USEC_PER_SEC;
        reclaim_controller_tick(f.rc);
        ASSERT_EQ(reclaim_controller_in_flight(f.rc), 2);
        ASSERT_EQ(field(&f, "/a", "last_step_bytes"), 0);
        remove_cgroup("/a");
        fake_now += 6 * USEC_PER_SEC;
        reclaim_controller_tick(f.rc);
        ASSERT_TRUE(entry(&f, "/a") == NULL);
        ASSERT_EQ(reclaim_controller_in_flight(f.rc), 1);
        ASSERT_EQ(write(gate[1], "xx", 2), 2);
        settle(&f);
        ASSERT_EQ(field(&f, "/b", "reclaimed_bytes"), 107372544);
        /* /a was written first (walk order, one thread): its result came back to nobody before /b's. */
        fixture_done(&f);
        close(gate[0]);
        close(gate[1]);
        tree_teardown();
}

static void test_unsupported(void) {
        char path[64], file[512];
        const char *log;
        Fixture f;
        int saved;

        tree_setup();
        make_cgroup("/nomem", GIB, 0);
        make_cgroup("/nopsi", GIB, 0);
        make_cgroup("/ok", GIB, 0);
        snprintf(file, sizeof(file), "%s/nomem/memory.current", root);
        ASSERT_OK(unlink(file));
        snprintf(file, sizeof(file), "%s/nopsi/memory.pressure", root);
        ASSERT_OK(unlink(file));
        fixture_init(&f, true, NULL);
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_OK(configure(&f, "/*"));
        interval(&f);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_STREQ(state(&f, "/nomem"), "unsupported");
        ASSERT_STREQ(state(&f, "/nopsi"), "unsupported");
        ASSERT_STREQ(state(&f, "/ok"), "probing");
        ASSERT_TRUE(field(&f, "/ok", "reclaimed_bytes") > 0);
        /* One line for all of them. */
        ASSERT_EQ(count_substr(log, "cannot be reclaimed"), 1);
        ASSERT_TRUE(strstr(log, "Reclaim: /nomem cannot be reclaimed (no memory controller there)"));
        fixture_done(&f);

        /* No cgroup2 hierarchy at all: each pattern listed, unsupported, no timer. */
        fixture_init(&f, false, NULL);
        saved = stderr_capture(path);
        log_set_max_level(LOG_INFO);
        ASSERT_OK(configure(&f, "/a/*  /b"));
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_TRUE(!reclaim_controller_active(f.rc));
        ASSERT_STREQ(state(&f, "/a/*"), "unsupported");
        ASSERT_STREQ(state(&f, "/b"), "unsupported");
        ASSERT_TRUE(strstr(log, "Reclaim: no cgroup2 hierarchy"));
        reclaim_controller_tick(f.rc); /* does nothing */
        ASSERT_OK(configure(&f, NULL));
        ASSERT_TRUE(entry(&f, "/b") == NULL);
        fixture_done(&f);
        tree_teardown();
}

static void test_journal(void) {
        char path[64];
        const char *log;
        Fixture f;
        int saved;

        tree_setup();
        make_cgroup("/a", 200 * MIB, 0);
        fixture_init(&f, true, NULL);
        f.config->reclaim_max_step_ppm = 300000; /* 30%: the floor in two steps */
        log_set_max_level(LOG_INFO);
        saved = stderr_capture(path);
        ASSERT_OK(configure(&f, "/a"));
        for (int i = 0; i < 3; i++) {
                interval(&f);
                set_u64("/a", "memory.current", 200 * MIB - (uint64_t) field(&f, "/a", "reclaimed_bytes"));
        }
        ASSERT_STREQ(state(&f, "/a"), "at-floor");
        interval(&f);
        /* Memory comes back, then leaves again: the floor is logged the first time only. */
        set_u64("/a", "memory.current", 200 * MIB);
        interval(&f);
        set_u64("/a", "memory.current", 100 * MIB);
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "at-floor");

        /* Backing off: a line only after a minute, once, and one when it ends. */
        set_u64("/a", "memory.current", GIB);
        for (int i = 1; i <= 12; i++) {
                set_psi("/a", "memory.pressure", (uint64_t) i * 60000);
                interval(&f);
                ASSERT_STREQ(state(&f, "/a"), "backing-off");
        }
        interval(&f);
        ASSERT_STREQ(state(&f, "/a"), "probing");
        /* Backing off for over a minute again, then gone: the journal hears that too. */
        for (int i = 13; i <= 24; i++) {
                set_psi("/a", "memory.pressure", (uint64_t) i * 60000);
                interval(&f);
        }
        remove_cgroup("/a");
        interval(&f);
        ASSERT_TRUE(entry(&f, "/a") == NULL);
        log = stderr_restore(saved, path);
        log_set_max_level(LOG_CRIT);
        ASSERT_EQ(count_substr(log, "Reclaim: /a left the controller while backing off."), 1);
        ASSERT_EQ(count_substr(log, "Reclaim: /a reached its floor of 104857600 bytes"), 1);
        ASSERT_EQ(count_substr(log, "Reclaim: /a has been backing off for over a minute (memory stall 1.000%"), 2);
        ASSERT_EQ(count_substr(log, "Reclaim: /a stopped backing off after 72 s; now probing."), 1);
        ASSERT_EQ(count_substr(log, "Reclaim: "), 1 + 1 + 2 + 1 + 1); /* and "on for /a" */
        fixture_done(&f);
        tree_teardown();
}

static void test_metrics(void) {
        struct evbuffer *out = evbuffer_new();
        char *text;
        Fixture f;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        make_cgroup("/b", 10 * MIB, 0);
        fixture_init(&f, true, NULL);
        reclaim_controller_write_metrics(out, f.rc);
        ASSERT_EQ(evbuffer_get_length(out), 0); /* off: no family at all */
        ASSERT_OK(configure(&f, "/*"));
        interval(&f);
        reclaim_controller_write_metrics(out, f.rc);
        ASSERT_OK(evbuffer_add(out, "", 1));
        text = (char *) evbuffer_pullup(out, -1);
        ASSERT_STREQ(text,
                     "# HELP pressured_reclaim_bytes_total Bytes the kernel reclaimed at the proactive reclaim "
                     "controller's request.\n"
                     "# TYPE pressured_reclaim_bytes_total counter\n"
                     "pressured_reclaim_bytes_total{cgroup=\"/a\"} 107372544\n"
                     "pressured_reclaim_bytes_total{cgroup=\"/b\"} 0\n"
                     "# HELP pressured_reclaim_state 1 for the proactive reclaim controller's current state of "
                     "the cgroup, else 0.\n"
                     "# TYPE pressured_reclaim_state gauge\n"
                     "pressured_reclaim_state{cgroup=\"/a\",state=\"probing\"} 1\n"
                     "pressured_reclaim_state{cgroup=\"/a\",state=\"backing-off\"} 0\n"
                     "pressured_reclaim_state{cgroup=\"/a\",state=\"at-floor\"} 0\n"
                     "pressured_reclaim_state{cgroup=\"/a\",state=\"unsupported\"} 0\n"
                     "pressured_reclaim_state{cgroup=\"/b\",state=\"probing\"} 0\n"
                     "pressured_reclaim_state{cgroup=\"/b\",state=\"backing-off\"} 0\n"
                     "pressured_reclaim_state{cgroup=\"/b\",state=\"at-floor\"} 1\n"
                     "pressured_reclaim_state{cgroup=\"/b\",state=\"unsupported\"} 0\n");
        evbuffer_free(out);
        fixture_done(&f);
        tree_teardown();
}

/* A write that waits until the test lets it go. */
static int gated_write(int root_fd, const char *cgroup, uint64_t bytes) {
        char c;

        (void) !read(gate[0], &c, 1);
        return 0;
}

static uint64_t done_bytes;
static unsigned done_n;

static void on_done(const ReclaimJob *job, void *userdata) {
        done_bytes += job->bytes;
        done_n++;
        ASSERT_EQ(job->result, 0);
        ASSERT_STREQ(job->cgroup, "/x");
}

static void test_worker_bound(void) {
        struct event_base *base = event_base_new();
        ReclaimWorker *w = NULL;

        ASSERT_TRUE(base);
        ASSERT_OK(pipe2(gate, O_CLOEXEC));
        ASSERT_OK(reclaim_worker_new(base, -1, 2, gated_write, on_done, NULL, &w));
        ASSERT_OK(reclaim_worker_submit(w, 1, "/x", 4096));
        ASSERT_OK(reclaim_worker_submit(w, 2, "/x", 8192));
        /* Two in flight: the bound. */
        ASSERT_ERR(reclaim_worker_submit(w, 3, "/x", 4096), EBUSY);
        ASSERT_EQ(write(gate[1], "xx", 2), 2);
        while (done_n < 2)
                ASSERT_OK(event_base_loop(base, EVLOOP_ONCE));
        ASSERT_U64_EQ(done_bytes, 12288);
        ASSERT_OK(reclaim_worker_submit(w, 3, "/x", 4096));
        /* Freed with jobs queued or under way: it waits for the write under way and drops the rest. */
        ASSERT_OK(reclaim_worker_submit(w, 4, "/x", 4096));
        ASSERT_EQ(write(gate[1], "xx", 2), 2);
        w = reclaim_worker_free(w);
        ASSERT_TRUE(reclaim_worker_free(NULL) == NULL);
        close(gate[0]);
        close(gate[1]);
        event_base_free(base);
}

/* Every allocation and the timer of a start, each failing in turn: off, logged, nothing leaks. */
static void test_out_of_memory(void) {
        Fixture f;

        tree_setup();
        make_cgroup("/a", 10 * GIB, 0);
        make_cgroup("/b", 10 * GIB, 0);
        static const FailKind kinds[] = { FAIL_MALLOC, FAIL_EVENT_ADD };

        for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
                FailKind kind = kinds[k];

                for (unsigned n = 1;; n++) {
                        bool injected;
                        int r;

                        fixture_init(&f, true, NULL);
                        fail_inject_reset();
                        fail_inject_after(kind, n);
                        r = configure(&f, "/*");
                        if (r >= 0)
                                interval(&f);
                        injected = fail_inject_fired(kind) > 0;
                        fail_inject_reset();
                        if (!injected) {
                                ASSERT_OK(r);
                                ASSERT_STREQ(state(&f, "/a"), "probing");
                                fixture_done(&f);
                                break;
                        }
                        /* Either the start failed and it is off, or an interval was skipped. */
                        if (r < 0) {
                                ASSERT_EQ(r, -ENOMEM);
                                ASSERT_TRUE(!reclaim_controller_active(f.rc));
                        }
                        fixture_done(&f);
                }
        }
        /* Without a hierarchy: the pattern list. */
        for (unsigned n = 1;; n++) {
                bool injected;
                int r;

                fixture_init(&f, false, NULL);
                f.config->reclaim_cgroups = strdup("/a /b/* /c");
                ASSERT_TRUE(f.config->reclaim_cgroups);
                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, n);
                r = reclaim_controller_configure(f.rc, f.config, false);
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        ASSERT_STREQ(state(&f, "/b/*"), "unsupported");
                        fixture_done(&f);
                        break;
                }
                ASSERT_ERR(r, ENOMEM);
                ASSERT_TRUE(entry(&f, "/a") == NULL);
                fixture_done(&f);
        }
        tree_teardown();
}

int main(void) {
        log_set_max_level(LOG_CRIT);
        test_write();
        test_write_errors();
        test_start_failures();
        test_limits_and_read_errors();
        test_protection_unknown();
        test_steps();
        test_results();
        test_vanish_in_flight();
        test_unsupported();
        test_journal();
        test_metrics();
        test_worker_bound();
        test_out_of_memory();
        return 0;
}
