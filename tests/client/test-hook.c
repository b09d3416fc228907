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

        ASSERT_OK(rmdir(dir));
        printf("ok\n");
        return 0;
}
