/* SPDX-License-Identifier: MIT */
/*
 * Unit test of pressurectl's hook runner (client/pressurectl/hook.c) without a daemon:
 * made-up events go in, a shell command records what each run got.
 * Coalescing is exact here: a run counts as going on until hook_process()
 * reaps it, so events submitted before that always wait.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hook.h"
/* The event struct behind the opaque pressure_event, to make events by hand. */
#include "pressure-event.h"
#include "tests.h"
#include "util.h"

static char dir[] = "/tmp/test-hook-XXXXXX";
static char record[256];

/* The hook: one line per run with what it was given. */
static char *const record_argv[] = {
        (char *) "sh", (char *) "-c",
        (char *) "printf '%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\\n' \"$PRESSURE_SEQ\" \"$PRESSURE_COALESCED\" "
                 "\"$PRESSURE_KIND\" \"$PRESSURE_LEVEL\" \"$PRESSURE_CGROUP\" \"$PRESSURE_SOURCE\" "
                 "\"$PRESSURE_MISSED\" \"$PRESSURE_SYNTHETIC\" \"$PRESSURE_EVENT\" \"$PRESSURE_LEVELX\" "
                 "\"$(readlink /proc/self/fd/0)\" \"$1\" >> \"$RECORD\"",
        (char *) "sh", (char *) "arg one", NULL,
};

static pressure_event event(uint64_t seq) {
        return (pressure_event) {
                .kind = PRESSURE_EVENT_PRESSURE,
                .cgroup = "/a",
                .source = PRESSURE_SOURCE_INJECT,
                .level = PRESSURE_LEVEL_MEDIUM,
                .seq = seq,
                .missed = seq == 2 ? 4 : 0,
                .synthetic = 1,
                .json = "{\"kind\":\"pressure\"}",
        };
}

/* The lines recorded so far, concatenated; "" if none. */
static char *read_record(void) {
        FILE *f = fopen(record, "re");
        char *buf = calloc(1, 4096);
        size_t n;

        ASSERT_TRUE(buf);
        if (!f)
                return buf;
        n = fread(buf, 1, 4095, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void test_environment_and_coalescing(void) {
        _cleanup_free_ char *got = NULL;
        Hook *h = NULL;
        pressure_event e;

        /* An inherited variable of the hook's is replaced; one that only starts like it is kept. */
        ASSERT_OK(setenv("PRESSURE_LEVEL", "inherited", 1));
        ASSERT_OK(setenv("PRESSURE_LEVELX", "kept", 1));
        ASSERT_OK(hook_new(record_argv, 0, &h));
        ASSERT_EQ(hook_get_fd(h), -1);
        ASSERT_TRUE(!hook_busy(h));
        ASSERT_U64_EQ(hook_get_timeout(h), UINT64_MAX);

        for (uint64_t seq = 1; seq <= 5; seq++) {
                e = event(seq);
                ASSERT_OK(hook_submit(h, &e));
                ASSERT_TRUE(hook_busy(h));
                ASSERT_TRUE(hook_get_fd(h) >= 0);
        }
        /* Without an --exec-timeout a run has no deadline. */
        ASSERT_U64_EQ(hook_get_timeout(h), UINT64_MAX);
        hook_drain(h);
        ASSERT_TRUE(!hook_busy(h));
        ASSERT_EQ(hook_get_fd(h), -1);

        got = read_record();
        ASSERT_STREQ(got,
                     "1|1|pressure|medium|/a|inject|0|1|{\"kind\":\"pressure\"}|kept|/dev/null|arg one\n"
                     "5|4|pressure|medium|/a|inject|0|1|{\"kind\":\"pressure\"}|kept|/dev/null|arg one\n");
        h = hook_free(h);
        ASSERT_TRUE(!h);
        unsetenv("PRESSURE_LEVEL");
        unsetenv("PRESSURE_LEVELX");
        ASSERT_OK(unlink(record));
}

static void test_fields_absent(void) {
        _cleanup_free_ char *got = NULL;
        pressure_event e = { .kind = PRESSURE_EVENT_REMOVED, .seq = 9 };
        Hook *h = NULL;

        /* No level, source, cgroup or JSON: empty values, not "(null)". */
        ASSERT_OK(hook_new(record_argv, 0, &h));
        ASSERT_OK(hook_submit(h, &e));
        hook_drain(h);
        got = read_record();
        ASSERT_STREQ(got, "9|1|removed||||0|0|||/dev/null|arg one\n");
        hook_free(h);
        ASSERT_OK(unlink(record));
}

static void test_level_events(void) {
        _cleanup_free_ char *got = NULL;
        pressure_event e = event(3);
        Hook *h = NULL;

        /* A level event of watch --levels: kind "level", no source, not synthetic; a level name this
         * version does not know is left empty; it coalesces with the events before it. */
        ASSERT_OK(hook_new(record_argv, 0, &h));
        ASSERT_OK(hook_submit_level(h, "/b", "normal", 1, 0, "{\"kind\":\"level\"}"));
        ASSERT_OK(hook_submit(h, &e));
        ASSERT_OK(hook_submit_level(h, "/b", "critical", 4, 2, "{\"level\":\"critical\"}"));
        hook_drain(h);
        ASSERT_OK(hook_submit_level(h, "/b", "dire", 5, 0, "{}"));
        hook_drain(h);
        got = read_record();
        ASSERT_STREQ(got,
                     "1|1|level|normal|/b||0|0|{\"kind\":\"level\"}||/dev/null|arg one\n"
                     "4|2|level|critical|/b||2|0|{\"level\":\"critical\"}||/dev/null|arg one\n"
                     "5|1|level||/b||0|0|{}||/dev/null|arg one\n");
        hook_free(h);
        ASSERT_OK(unlink(record));
}

static void test_drop_pending(void) {
        _cleanup_free_ char *got = NULL;
        Hook *h = NULL;
        pressure_event e;

        ASSERT_OK(hook_new(record_argv, 0, &h));
        for (uint64_t seq = 1; seq <= 3; seq++) {
                e = event(seq);
                ASSERT_OK(hook_submit(h, &e));
        }
        hook_drop_pending(h);
        hook_drain(h);
        got = read_record();
        ASSERT_STREQ(got, "1|1|pressure|medium|/a|inject|0|1|{\"kind\":\"pressure\"}||/dev/null|arg one\n");
        hook_free(h);
        ASSERT_OK(unlink(record));
}

static void test_spawn_failure(void) {
        static char *const argv[] = { (char *) "/nonexistent/hook", NULL };
        pressure_event e = event(1);
        Hook *h = NULL;

        /* Reported on stderr; the event is gone and the hook idle. (Under valgrind, whose fork
         * stands in for posix_spawn's vfork, the failure comes as a run that exits 127.) */
        ASSERT_OK(hook_new(argv, 0, &h));
        ASSERT_OK(hook_submit(h, &e));
        hook_drain(h);
        ASSERT_TRUE(!hook_busy(h));
        hook_free(h);
}

static void test_free_kills(void) {
        /* The run writes its pid, then sleeps in a child of its process group. */
        static char *const argv[] = { (char *) "sh", (char *) "-c", (char *) "echo $$ > \"$RECORD.pid\"; sleep 1000; :",
                                      NULL };
        char path[300];
        pressure_event e = event(1);
        Hook *h = NULL;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        long pid = 0;

        ASSERT_OK(hook_new(argv, 60 * USEC_PER_SEC, &h));
        ASSERT_OK(hook_submit(h, &e));
        /* With a timeout, the deadline is ahead. */
        ASSERT_TRUE(hook_get_timeout(h) > 0 && hook_get_timeout(h) <= 60 * USEC_PER_SEC);
        snprintf(path, sizeof(path), "%s.pid", record);
        while (pid <= 0) {
                FILE *f = fopen(path, "re");

                if (f) {
                        if (fscanf(f, "%ld", &pid) != 1)
                                pid = 0;
                        fclose(f);
                }
                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                if (pid <= 0)
                        (void) usleep(10000); /* polling a condition, with a deadline */
        }
        hook_free(h);
        /* Reaped: no such process any more. */
        ASSERT_EQ(kill((pid_t) pid, 0), -1);
        ASSERT_EQ(errno, ESRCH);
        ASSERT_OK(unlink(path));
}

/* ---- warnings before a kill ---- */

typedef struct Done {
        unsigned n;
        uint64_t ids[HOOK_PREKILL_MAX + 4];
        uint64_t at[HOOK_PREKILL_MAX + 4]; /* CLOCK_MONOTONIC of the call */
} Done;

static void on_done(uint64_t id, uint64_t deadline_us, void *userdata) {
        Done *d = userdata;

        ASSERT_TRUE(deadline_us > 0);
        ASSERT_TRUE(d->n < ELEMENTSOF(d->ids));
        d->at[d->n] = now_usec(CLOCK_MONOTONIC);
        d->ids[d->n++] = id;
}

static HookPrekill warning(uint64_t id, uint64_t in_usec) {
        return (HookPrekill) { .cgroup = "/app.service", .json = "{\"kind\":\"prekill\"}", .id = id,
                               .deadline_us = now_usec(CLOCK_MONOTONIC) + in_usec, .seq = 7, .missed = 1 };
}

/* A warning runs at once beside the run going on, with its deadline; done when it exits. */
static void test_prekill_environment(void) {
        static char *const argv[] = {
                (char *) "sh", (char *) "-c",
                (char *) "if [ \"$PRESSURE_KIND\" = prekill ]; then "
                         "printf '%s|%s|%s|%s|%s|%s|%s|%s|%s\\n' \"$PRESSURE_KIND\" \"$PRESSURE_CGROUP\" "
                         "\"$PRESSURE_SEQ\" \"$PRESSURE_MISSED\" \"$PRESSURE_COALESCED\" \"$PRESSURE_LEVEL\" "
                         "\"$PRESSURE_SOURCE\" \"$PRESSURE_EVENT\" \"${PRESSURE_DEADLINE_US:+set}\" >> \"$RECORD\"; "
                         "else sleep 2; echo \"${PRESSURE_DEADLINE_US-unset}\" >> \"$RECORD\"; fi",
                NULL,
        };
        _cleanup_free_ char *got = NULL;
        HookPrekill p = warning(5, 30 * USEC_PER_SEC);
        pressure_event e = event(1);
        Done d = {};
        Hook *h = NULL;

        /* An inherited deadline is not a run's. */
        ASSERT_OK(setenv("PRESSURE_DEADLINE_US", "inherited", 1));
        ASSERT_OK(hook_new(argv, 0, &h));
        hook_set_prekill_done(h, on_done, &d);
        ASSERT_OK(hook_submit(h, &e));
        ASSERT_OK(hook_submit_prekill(h, &p));
        /* The warning's run has its deadline ahead: a timeout to wake up for. */
        ASSERT_TRUE(hook_get_timeout(h) > 0 && hook_get_timeout(h) <= 30 * USEC_PER_SEC);
        hook_drain(h);
        ASSERT_EQ(d.n, 1);
        ASSERT_U64_EQ(d.ids[0], 5);
        got = read_record();
        /* The warning's line first: it did not wait for the two-second run of the event. */
        ASSERT_STREQ(got, "prekill|/app.service|7|1|1|||{\"kind\":\"prekill\"}|set\nunset\n");
        hook_free(h);
        unsetenv("PRESSURE_DEADLINE_US");
        ASSERT_OK(unlink(record));
}

/* A run still going at the deadline is done with then (SIGTERM), or at a timeout that comes first. */
static void test_prekill_deadline(void) {
        static char *const argv[] = { (char *) "sh", (char *) "-c", (char *) "exec sleep 60", NULL };
        HookPrekill p = warning(6, 300 * USEC_PER_MSEC);
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        Done d = {};
        Hook *h = NULL;

        ASSERT_OK(hook_new(argv, 0, &h));
        hook_set_prekill_done(h, on_done, &d);
        ASSERT_OK(hook_submit_prekill(h, &p));
        ASSERT_TRUE(hook_busy(h));
        hook_drain(h);
        ASSERT_EQ(d.n, 1);
        ASSERT_TRUE(d.at[0] >= p.deadline_us);
        hook_free(h);

        /* --exec-timeout 0.2 s before a deadline in 30 s. */
        d = (Done) {};
        p = warning(7, 30 * USEC_PER_SEC);
        start = now_usec(CLOCK_MONOTONIC);
        ASSERT_OK(hook_new(argv, 200 * USEC_PER_MSEC, &h));
        hook_set_prekill_done(h, on_done, &d);
        ASSERT_OK(hook_submit_prekill(h, &p));
        hook_drain(h);
        ASSERT_EQ(d.n, 1);
        ASSERT_TRUE(d.at[0] >= start + 200 * USEC_PER_MSEC && d.at[0] < p.deadline_us);
        hook_free(h);
}

/* No run past the deadline, beyond HOOK_PREKILL_MAX at once, or when it cannot start: done at once. */
static void test_prekill_no_run(void) {
        static char *const sleeper[] = { (char *) "sh", (char *) "-c", (char *) "exec sleep 60", NULL };
        static char *const missing[] = { (char *) "/nonexistent/hook", NULL };
        HookPrekill p = warning(1, 0);
        Done d = {};
        Hook *h = NULL;

        ASSERT_OK(hook_new(sleeper, 0, &h));
        hook_set_prekill_done(h, on_done, &d);
        p.deadline_us = now_usec(CLOCK_MONOTONIC) - 1;
        ASSERT_OK(hook_submit_prekill(h, &p));
        ASSERT_EQ(d.n, 1);
        ASSERT_TRUE(!hook_busy(h));
        for (uint64_t id = 100; id < 100 + HOOK_PREKILL_MAX + 1; id++) {
                p = warning(id, 60 * USEC_PER_SEC);
                ASSERT_OK(hook_submit_prekill(h, &p));
        }
        /* The one over the limit is done with at once; the others run. */
        ASSERT_EQ(d.n, 2);
        ASSERT_U64_EQ(d.ids[1], 100 + HOOK_PREKILL_MAX);
        ASSERT_TRUE(hook_busy(h) && hook_get_fd(h) >= 0);
        /* Freed with the hook: killed and reaped, nothing more to say of them. */
        hook_free(h);
        ASSERT_EQ(d.n, 2);

        /* A hook that cannot start. (Under valgrind: a run that exits 127, done when it ends.) */
        d = (Done) {};
        ASSERT_OK(hook_new(missing, 0, &h));
        hook_set_prekill_done(h, on_done, &d);
        p = warning(9, 60 * USEC_PER_SEC);
        ASSERT_OK(hook_submit_prekill(h, &p));
        hook_drain(h);
        ASSERT_EQ(d.n, 1);
        ASSERT_U64_EQ(d.ids[0], 9);
        hook_free(h);
}

int main(void) {
        ASSERT_TRUE(mkdtemp(dir));
        snprintf(record, sizeof(record), "%s/record", dir);
        ASSERT_OK(setenv("RECORD", record, 1));

        test_environment_and_coalescing();
        test_fields_absent();
        test_level_events();
        test_drop_pending();
        test_spawn_failure();
        test_free_kills();
        test_prekill_environment();
        test_prekill_deadline();
        test_prekill_no_run();

        ASSERT_OK(rmdir(dir));
        printf("ok\n");
        return 0;
}
