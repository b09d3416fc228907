/* SPDX-License-Identifier: MIT */
/*
 * Tests for duration.c: the one duration grammar of the configuration and
 * pressurectl, and the two ways of writing a duration that read back.
 */
#include <errno.h>
#include <stdint.h>

#include "duration.h"
#include "tests.h"
#include "util.h"

static void check_duration(const char *s, uint64_t expected) {
        uint64_t v = 12345;

        ASSERT_OK(parse_duration(s, 1, UINT64_MAX, &v));
        if (v != expected)
                TEST_FAIL("parse_duration(\"%s\") = %" PRIu64 ", expected %" PRIu64, s, v, expected);
}

static void check_duration_fails(const char *s, int err) {
        uint64_t v = 4242;
        int r = parse_duration(s, 1, UINT64_MAX, &v);

        if (r != -err)
                TEST_FAIL("parse_duration(\"%s\") = %d, expected %d", s ? s : "(null)", r, -err);
        ASSERT_U64_EQ(v, 4242); /* untouched on failure */
}

/* A bare number is microseconds: PSI triggers. */
static void test_microseconds(void) {
        check_duration("0", 0);
        check_duration("500", 500);
        check_duration("500us", 500);
        check_duration("500usec", 500);
        check_duration("150ms", 150000);
        check_duration("150msec", 150000);
        check_duration("2s", 2000000);
        check_duration("2sec", 2000000);
        check_duration("1min", 60000000);
        check_duration("1.5s", 1500000);
        check_duration("0.5s", 500000);
        check_duration(".5s", 500000);
        check_duration("1.25ms", 1250);
        check_duration("0.000001s", 1);
        check_duration("0.0000019s", 1);   /* below a microsecond is dropped */
        check_duration("1.9us", 1);
        check_duration("007ms", 7000);
        check_duration("18446744073709551615", UINT64_MAX);
        check_duration("18446744073709s", UINT64_C(18446744073709000000));

        check_duration_fails("", EINVAL);
        check_duration_fails(NULL, EINVAL);
        check_duration_fails("-1s", EINVAL);
        check_duration_fails("+1s", EINVAL);
        check_duration_fails(" 1s", EINVAL);
        check_duration_fails("1s ", EINVAL);
        check_duration_fails("1 s", EINVAL);
        check_duration_fails("1sx", EINVAL);
        check_duration_fails("1h", EINVAL);
        check_duration_fails("ms", EINVAL);
        check_duration_fails(".", EINVAL);
        check_duration_fails("1.", EINVAL);
        check_duration_fails("1.s", EINVAL);
        check_duration_fails("1..5s", EINVAL);
        check_duration_fails("1e3", EINVAL);
        check_duration_fails("0x10", EINVAL);
        check_duration_fails("18446744073709551616", ERANGE);
        check_duration_fails("18446744073710s", ERANGE);
        check_duration_fails("99999999999999999999999999s", ERANGE);
        check_duration_fails("18446744073709551615.9ms", ERANGE);
}

static void check_seconds(const char *s, uint64_t max, uint64_t expected) {
        uint64_t v = 12345;

        ASSERT_OK(parse_seconds(s, max, &v));
        if (v != expected)
                TEST_FAIL("parse_seconds(\"%s\") = %" PRIu64 ", expected %" PRIu64, s, v, expected);
}

static void check_seconds_fail(const char *s, uint64_t max, int err) {
        uint64_t v = 4242;
        int r = parse_seconds(s, max, &v);

        if (r != -err)
                TEST_FAIL("parse_seconds(\"%s\", max %" PRIu64 ") = %d, expected %d",
                          s ? s : "(null)", max, r, -err);
        ASSERT_U64_EQ(v, 4242);
}

/* A bare number is seconds: the configuration's *Sec= keys and pressurectl's options. */
static void test_seconds(void) {
        check_seconds("0", UINT64_MAX, 0);
        check_seconds("10", UINT64_MAX, 10 * USEC_PER_SEC);
        check_seconds("0.5", UINT64_MAX, 500000);
        check_seconds(".25", UINT64_MAX, 250000);
        check_seconds("1.0000005", UINT64_MAX, 1000000); /* below a microsecond is dropped */
        check_seconds("500ms", UINT64_MAX, 500000);
        check_seconds("2min", UINT64_MAX, 120 * USEC_PER_SEC);
        check_seconds("250us", UINT64_MAX, 250);
        check_seconds("3sec", UINT64_MAX, 3 * USEC_PER_SEC);
        check_seconds("18446744073709", UINT64_MAX, UINT64_C(18446744073709000000));
        check_seconds("18446744073709.551615", UINT64_MAX, UINT64_MAX);

        /* max: reached exactly, passed by one microsecond, in every unit */
        check_seconds("3600", 3600 * USEC_PER_SEC, 3600 * USEC_PER_SEC);
        check_seconds("60min", 3600 * USEC_PER_SEC, 3600 * USEC_PER_SEC);
        check_seconds_fail("3600.000001", 3600 * USEC_PER_SEC, ERANGE);
        check_seconds_fail("3600000001us", 3600 * USEC_PER_SEC, ERANGE);
        check_seconds_fail("61min", 3600 * USEC_PER_SEC, ERANGE);
        check_seconds("0", 0, 0);
        check_seconds_fail("1us", 0, ERANGE);

        /* overflow of 64 bits */
        check_seconds_fail("18446744073710", UINT64_MAX, ERANGE);
        check_seconds_fail("18446744073709.551616", UINT64_MAX, ERANGE);
        check_seconds_fail("307445734561826min", UINT64_MAX, ERANGE);
        check_seconds_fail("99999999999999999999999", UINT64_MAX, ERANGE);

        /* missing number */
        check_seconds_fail("", UINT64_MAX, EINVAL);
        check_seconds_fail(NULL, UINT64_MAX, EINVAL);
        check_seconds_fail("s", UINT64_MAX, EINVAL);
        check_seconds_fail(".", UINT64_MAX, EINVAL);
        check_seconds_fail(".ms", UINT64_MAX, EINVAL);

        /* unknown unit, trailing text */
        check_seconds_fail("1h", UINT64_MAX, EINVAL);
        check_seconds_fail("1m", UINT64_MAX, EINVAL);
        check_seconds_fail("1S", UINT64_MAX, EINVAL);
        check_seconds_fail("1 s", UINT64_MAX, EINVAL);
        check_seconds_fail("1s ", UINT64_MAX, EINVAL);
        check_seconds_fail("1ss", UINT64_MAX, EINVAL);

        /* negative, signs, the forms of strtod() that were never meant */
        check_seconds_fail("-1", UINT64_MAX, EINVAL);
        check_seconds_fail("-0.5s", UINT64_MAX, EINVAL);
        check_seconds_fail("+1", UINT64_MAX, EINVAL);
        check_seconds_fail(" 1", UINT64_MAX, EINVAL);
        check_seconds_fail("1e3", UINT64_MAX, EINVAL);
        check_seconds_fail("0x10", UINT64_MAX, EINVAL);
        check_seconds_fail("inf", UINT64_MAX, EINVAL);
        check_seconds_fail("nan", UINT64_MAX, EINVAL);

        /* a default unit of 0 is the caller's mistake */
        {
                uint64_t v = 7;
                ASSERT_ERR(parse_duration("1", 0, UINT64_MAX, &v), EINVAL);
                ASSERT_U64_EQ(v, 7);
        }
}

/* @usec written by format_seconds() as @text, which parse_seconds() reads back as @usec. */
static void check_format_seconds(uint64_t usec, const char *text) {
        char buf[32];
        uint64_t back = 0;

        ASSERT_EQ(format_seconds(usec, buf, sizeof(buf)), strlen(text));
        ASSERT_STREQ(buf, text);
        ASSERT_OK(parse_seconds(buf, UINT64_MAX, &back));
        ASSERT_U64_EQ(back, usec);
}

/* @usec written by format_duration_us() as @text, which parse_duration() reads back as @usec. */
static void check_format_duration(uint64_t usec, const char *text) {
        char buf[32];
        uint64_t back = 0;

        ASSERT_EQ(format_duration_us(usec, buf, sizeof(buf)), strlen(text));
        ASSERT_STREQ(buf, text);
        ASSERT_OK(parse_duration(buf, 1, UINT64_MAX, &back));
        ASSERT_U64_EQ(back, usec);
}

static void test_format(void) {
        char small[4];

        check_format_seconds(0, "0");
        check_format_seconds(USEC_PER_SEC, "1");
        check_format_seconds(500000, "0.5");
        check_format_seconds(1, "0.000001");
        check_format_seconds(10 * USEC_PER_SEC + 250000, "10.25");
        check_format_seconds(1234567, "1.234567");
        check_format_seconds(3600 * USEC_PER_SEC, "3600");
        check_format_seconds(UINT64_MAX, "18446744073709.551615");

        check_format_duration(0, "0us");
        check_format_duration(7, "7us");
        check_format_duration(1500, "1500us");
        check_format_duration(150 * USEC_PER_MSEC, "150ms");
        check_format_duration(1500 * USEC_PER_MSEC, "1500ms");
        check_format_duration(2 * USEC_PER_SEC, "2s");
        check_format_duration(120 * USEC_PER_SEC, "120s");
        check_format_duration(UINT64_MAX, "18446744073709551615us");

        /* Room for the text and its NUL, or -ENOBUFS. */
        ASSERT_EQ(format_seconds(100 * USEC_PER_SEC, small, sizeof(small)), 3);
        ASSERT_STREQ(small, "100");
        ASSERT_ERR(format_seconds(1000 * USEC_PER_SEC, small, sizeof(small)), ENOBUFS);
        ASSERT_ERR(format_seconds(1234567, small, sizeof(small)), ENOBUFS);
        ASSERT_EQ(format_duration_us(2 * USEC_PER_SEC, small, 3), 2);
        ASSERT_ERR(format_duration_us(2 * USEC_PER_SEC, small, 2), ENOBUFS);
}

int main(void) {
        test_microseconds();
        test_seconds();
        test_format();
        return 0;
}
