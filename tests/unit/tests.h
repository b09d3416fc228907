/* SPDX-License-Identifier: MIT */
/*
 * Minimal assertion helpers for unit tests: every failure prints the file,
 * line, the expression and both values, then aborts the test binary.
 */
#pragma once

#include <inttypes.h>
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
