/* SPDX-License-Identifier: MIT */
/*
 * systemd-oomd's PrekillHookTimeoutSec= as oomd reads it
 * (daemon/model/oomd-conf.c): systemd's time spans; the assignments of one
 * file (sections, comments, continuations, values oomd ignores); and trees
 * of fixture files in tests/unit/data/oomd-conf/ (no file, the main file
 * of highest priority only, drop-ins merged by name across the four
 * directories, masking by an empty file or a link to /dev/null, garbage).
 */
#include <stdlib.h>
#include <string.h>

#include "oomd-conf.h"
#include "tests.h"
#include "util.h"

#define S USEC_PER_SEC
#define MS USEC_PER_MSEC

static void check_span(const char *text, int error, uint64_t want) {
        uint64_t got = 12345;
        int k = oomd_timespan_parse(text, &got);

        if (k != error)
                TEST_FAIL("oomd_timespan_parse(\"%s\") = %d, expected %d", text, k, error);
        if (error == 0 && got != want)
                TEST_FAIL("oomd_timespan_parse(\"%s\") = %llu us, expected %llu", text, (unsigned long long) got,
                          (unsigned long long) want);
        if (error != 0 && got != 12345)
                TEST_FAIL("oomd_timespan_parse(\"%s\") wrote its result on failure", text);
}

static void test_timespans(void) {
        check_span("5", 0, 5 * S);
        check_span("5s", 0, 5 * S);
        check_span("1min 500ms", 0, 60 * S + 500 * MS);
        check_span("1min500ms", 0, 60 * S + 500 * MS);
        check_span("  2 min  30 s ", 0, 150 * S);
        check_span("1.5s", 0, 1500 * MS);
        check_span(".5", 0, 500 * MS);
        check_span("1.", 0, S);
        check_span("1.0000001s", 0, S);
        check_span("250ms", 0, 250 * MS);
        check_span("250msec", 0, 250 * MS);
        check_span("7us", 0, 7);
        check_span("7usec", 0, 7);
        check_span("7\xc2\xb5s", 0, 7);
        check_span("1h", 0, 3600 * S);
        check_span("1hr 1m", 0, 3660 * S);
        check_span("2 hours 3 minutes 4 seconds", 0, 7384 * S);
        check_span("1d", 0, 86400 * S);
        check_span("1w", 0, 7 * 86400 * S);
        check_span("1M", 0, 2629800 * S);
        check_span("1y", 0, 31557600 * S);
        check_span("1min 30", 0, 90 * S);
        check_span("0", 0, 0);
        check_span("infinity", 0, USEC_INFINITY);
        check_span(" infinity ", 0, USEC_INFINITY);
        check_span("", -EINVAL, 0);
        check_span("   ", -EINVAL, 0);
        check_span("s", -EINVAL, 0);
        check_span("-5s", -EINVAL, 0);
        check_span("5x", -EINVAL, 0);
        check_span("5 s x", -EINVAL, 0);
        check_span("infinity 5s", -EINVAL, 0);
        check_span("five", -EINVAL, 0);
        check_span("1e3", -EINVAL, 0);
        check_span("99999999999999999999", -ERANGE, 0);
        check_span("600000y", -ERANGE, 0);
}

static OomdConf apply(const char *text) {
        OomdConf c = {};

        oomd_conf_apply(&c, text);
        return c;
}

static void test_text(void) {
        OomdConf c;

        c = apply("[OOM]\nPrekillHookTimeoutSec=3s\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 3 * S);
        /* Later wins; an empty assignment restores the default, 0. */
        c = apply("[OOM]\nPrekillHookTimeoutSec=3s\nPrekillHookTimeoutSec=4s\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 4 * S);
        c = apply("[OOM]\nPrekillHookTimeoutSec=3s\nPrekillHookTimeoutSec=\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        c = apply("[OOM]\nPrekillHookTimeoutSec=3s\nPrekillHookTimeoutSec=0\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.ignored, 0);
        /* What oomd ignores leaves the value before it. */
        c = apply("[OOM]\nPrekillHookTimeoutSec=3s\nPrekillHookTimeoutSec=999ms\nPrekillHookTimeoutSec=infinity\n"
                  "PrekillHookTimeoutSec=three\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 3 * S);
        ASSERT_EQ(c.ignored, 3);
        c = apply("[OOM]\nPrekillHookTimeoutSec=1s\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, S);
        /* Only in [OOM]; not before any section, nor after a broken header. */
        c = apply("PrekillHookTimeoutSec=2s\n[Other]\nPrekillHookTimeoutSec=3s\n[OOM\nPrekillHookTimeoutSec=4s\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        /* Comments, blanks, CRLF and a continuation. */
        c = apply("# PrekillHookTimeoutSec=1s\r\n; x\r\n\r\n[OOM]\r\n  PrekillHookTimeoutSec =  1min \\\r\n  5s \r\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 65 * S);
        /* Other keys, a key that only starts the same, no "=". */
        c = apply("[OOM]\nSwapUsedLimit=90%\nPrekillHookTimeoutSecs=5s\nPrekillHookTimeoutSec\n");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.ignored, 0);
        /* A backslash on the last line is part of its value. */
        c = apply("[OOM]\nPrekillHookTimeoutSec=2s\\");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.ignored, 1);
}

static OomdConf read_tree(const char *dir, const char *name) {
        _cleanup_free_ char *root = NULL;
        OomdConf c;

        ASSERT_TRUE(asprintf(&root, "%s/%s", dir, name) > 0);
        ASSERT_OK(oomd_conf_read(root, &c));
        return c;
}

static void test_trees(const char *dir) {
        OomdConf c;

        c = read_tree(dir, "none");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.files, 0);
        c = read_tree(dir, "main-only");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 5 * S);
        ASSERT_EQ(c.files, 1);
        /* The first main file found is the only one read, whatever it sets. */
        c = read_tree(dir, "main-first");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.files, 1);
        /* Drop-ins after the main file, by name across /etc, /run, /usr/lib: 60-runtime's last. */
        c = read_tree(dir, "dropins");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 64 * S);
        ASSERT_EQ(c.files, 5);
        /* A link to /dev/null in /etc and an empty file in /run mask what lies below; hidden and
         * backup files are no drop-ins. */
        c = read_tree(dir, "masked");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 6 * S);
        ASSERT_EQ(c.files, 3);
        c = read_tree(dir, "garbage");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 90 * S);
        ASSERT_EQ(c.ignored, 4);
        /* A bad value keeps what came before; a directory named *.conf is skipped. */
        c = read_tree(dir, "garbage2");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 4 * S);
        ASSERT_EQ(c.ignored, 1);
        ASSERT_EQ(c.files, 2);
        /* A root that does not exist is a tree with nothing in it. */
        c = read_tree(dir, "no-such-tree");
        ASSERT_U64_EQ(c.prekill_timeout_usec, 0);
        ASSERT_EQ(c.files, 0);
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s DATA-DIR\n", argv[0]);
                return 2;
        }
        test_timespans();
        test_text();
        test_trees(argv[1]);
        printf("ok\n");
        return 0;
}
