/* SPDX-License-Identifier: MIT */
/*
 * Minimal assertion helpers for unit tests: every failure prints the file,
 * line, the expression and both values, then aborts the test binary. And
 * what tests of files and trees share: writing a file, removing a tree.
 */
#pragma once

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_FAIL(fmt, ...)                                                         \
        do {                                                                        \
                fprintf(stderr, "%s:%d: FAIL: " fmt "\n", __FILE__, __LINE__,       \
                        __VA_ARGS__);                                               \
                abort();                                                            \
        } while (0)

#define ASSERT_TRUE(e)                                                              \
        do {                                                                        \
                if (!(e))                                                           \
                        TEST_FAIL("%s is false", #e);                               \
        } while (0)

#define ASSERT_EQ(a, b)                                                             \
        do {                                                                        \
                long long _a = (long long) (a), _b = (long long) (b);               \
                if (_a != _b)                                                       \
                        TEST_FAIL("%s == %s: %lld != %lld", #a, #b, _a, _b);        \
        } while (0)

#define ASSERT_U64_EQ(a, b)                                                         \
        do {                                                                        \
                uint64_t _a = (uint64_t) (a), _b = (uint64_t) (b);                  \
                if (_a != _b)                                                       \
                        TEST_FAIL("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, _a, _b); \
        } while (0)

#define ASSERT_STREQ(a, b)                                                          \
        do {                                                                        \
                const char *_a = (a), *_b = (b);                                    \
                if (!_a || !_b || strcmp(_a, _b) != 0)                              \
                        TEST_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b,             \
                                  _a ? _a : "(null)", _b ? _b : "(null)");          \
        } while (0)

#define ASSERT_OK(e)                                                                \
        do {                                                                        \
                long long _r = (long long) (e);                                     \
                if (_r < 0)                                                         \
                        TEST_FAIL("%s failed: %lld (%s)", #e, _r, strerror((int) -_r)); \
        } while (0)

#define ASSERT_ERR(e, err)                                                          \
        do {                                                                        \
                long long _r = (long long) (e);                                     \
                if (_r != -(long long) (err))                                       \
                        TEST_FAIL("%s: expected -%s, got %lld", #e, #err, _r);     \
        } while (0)

/*
 * A part of a test that cannot run here (a program or a kernel feature is
 * missing), as the Python harness's skip_part(): test_skip_part() says
 * "SKIP: REASON" and the test goes on with the rest; test_finish(), what
 * main() returns, is then 77, so that meson reports the test skipped, not
 * passed, with a last line naming what was left out.
 */
static inline char *test_left_out(void) {
        static char reasons[1024];

        return reasons;
}

static inline void test_skip_part(const char *reason) {
        char *r = test_left_out();
        size_t n = strlen(r);

        printf("SKIP: %s\n", reason);
        fflush(stdout);
        snprintf(r + n, 1024 - n, "%s%s", n ? "; " : "", reason);
}

static inline int test_finish(void) {
        if (!*test_left_out())
                return 0;
        printf("SKIP: the rest passed; left out: %s\n", test_left_out());
        fflush(stdout);
        return 77;
}

/*
 * test_write_file - @text as the whole content of the file @path, created
 * or truncated in place (as the kernel's files change under descriptors
 * open on them). Through stdio, so that a test's wrapped open() or write()
 * (fail-inject.h) does not see it. Fails the test on any error.
 */
static inline void test_write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "we");

        if (!f)
                TEST_FAIL("cannot create %s: %s", path, strerror(errno));
        if (fputs(text, f) < 0 || fflush(f) != 0)
                TEST_FAIL("cannot write %s: %s", path, strerror(errno));
        if (fclose(f) != 0)
                TEST_FAIL("cannot close %s: %s", path, strerror(errno));
}

/* test_write_file_at - test_write_file() of @rel in the directory @dir: "/x/y" or "x/y" below it. */
static inline void test_write_file_at(const char *dir, const char *rel, const char *text) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof(path), "%s%s%s", dir, rel[0] == '/' ? "" : "/", rel);

        if (n < 0 || (size_t) n >= sizeof(path))
                TEST_FAIL("path too long: %s/%s", dir, rel);
        test_write_file(path, text);
}

static inline int test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/*
 * test_rm_tree - remove @path and everything below it, without following
 * symbolic links. Returns 0 or a negative errno (-ENOENT if it is not there).
 */
static inline int test_rm_tree(const char *path) {
        return nftw(path, test_rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : errno > 0 ? -errno : -EIO;
}
