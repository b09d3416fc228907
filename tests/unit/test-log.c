/* SPDX-License-Identifier: MIT */
/* Log levels and the per-call-site rate limit used against log floods. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "test-capture.h"
#include "tests.h"

static void test_levels(void) {
        ASSERT_EQ(log_level_from_string("debug"), LOG_DEBUG);
        ASSERT_EQ(log_level_from_string("info"), LOG_INFO);
        ASSERT_EQ(log_level_from_string("notice"), LOG_NOTICE);
        ASSERT_EQ(log_level_from_string("warning"), LOG_WARNING);
        ASSERT_EQ(log_level_from_string("err"), LOG_ERR);
        ASSERT_EQ(log_level_from_string("3"), 3);
        ASSERT_ERR(log_level_from_string("loud"), EINVAL);
        ASSERT_ERR(log_level_from_string(NULL), EINVAL);
        ASSERT_STREQ(log_level_to_string(LOG_NOTICE), "notice");
}

static void test_ratelimit(void) {
        RateLimit rl = { .interval_usec = 10 * USEC_PER_SEC, .burst = 3 };
        uint64_t t = 1000;
        int passed = 0;

        for (int i = 0; i < 100; i++)
                passed += ratelimit_test(&rl, t + (uint64_t) i);
        ASSERT_EQ(passed, 3);
        ASSERT_EQ(rl.suppressed, 97);
        /* A new interval lets a burst through again. */
        ASSERT_TRUE(ratelimit_test(&rl, t + 10 * USEC_PER_SEC));
}

static void test_errno_forwarding(void) {
        log_set_max_level(LOG_EMERG); /* keep the test output quiet */
        ASSERT_EQ(log_error_errno(-ENOENT, "x: %m"), -ENOENT);
        ASSERT_EQ(log_error_errno(EACCES, "x: %m"), -EACCES);
        ASSERT_EQ(log_ratelimited(LOG_ERR, -EIO, NULL, 1, 1, "y"), -EIO);
}

/* Outside the journal and systemd, each line says its level after the name. */
static void test_plain_lines(void) {
        char path[64];
        int saved;
        char *text;

        unsetenv("JOURNAL_STREAM");
        unsetenv("INVOCATION_ID");
        log_setup();
        log_set_max_level(LOG_DEBUG);
        saved = stderr_capture(path);
        log_debug("a debug line");
        log_info("an info line");
        log_notice("a notice line");
        log_warning("a warning line");
        log_error_errno(ENOENT, "an error line: %m");
        text = stderr_restore(saved, path);
        ASSERT_STREQ(text, "pressured: debug: a debug line\n"
                           "pressured: info: an info line\n"
                           "pressured: notice: a notice line\n"
                           "pressured: warning: a warning line\n"
                           "pressured: error: an error line: No such file or directory\n");
}

int main(void) {
        test_levels();
        test_ratelimit();
        test_plain_lines();
        test_errno_forwarding();
        return 0;
}
