/* SPDX-License-Identifier: MIT */
/* Tests for trigger.c: names, PSI trigger specs, kernel rules and unprivileged rounding. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "tests.h"
#include "trigger.h"

static void test_names(void) {
        ASSERT_EQ(level_from_string("low"), LEVEL_LOW);
        ASSERT_EQ(level_from_string("medium"), LEVEL_MEDIUM);
        ASSERT_EQ(level_from_string("critical"), LEVEL_CRITICAL);
        ASSERT_EQ(level_from_string("Critical"), _LEVEL_INVALID);
        ASSERT_EQ(level_from_string(""), _LEVEL_INVALID);
        ASSERT_EQ(level_from_string(NULL), _LEVEL_INVALID);
        for (int l = 0; l < _LEVEL_MAX; l++)
                ASSERT_EQ(level_from_string(level_to_string((Level) l)), l);
        ASSERT_TRUE(level_to_string(_LEVEL_MAX) == NULL);
        ASSERT_TRUE(level_to_string(_LEVEL_INVALID) == NULL);

        ASSERT_EQ(psi_stall_from_string("some"), PSI_STALL_SOME);
        ASSERT_EQ(psi_stall_from_string("full"), PSI_STALL_FULL);
        ASSERT_EQ(psi_stall_from_string("all"), _PSI_STALL_INVALID);
        ASSERT_STREQ(psi_stall_to_string(PSI_STALL_FULL), "full");
        ASSERT_TRUE(psi_stall_to_string(_PSI_STALL_MAX) == NULL);

        ASSERT_EQ(vmpressure_mode_from_string("default"), VMPRESSURE_MODE_DEFAULT);
        ASSERT_EQ(vmpressure_mode_from_string("hierarchy"), VMPRESSURE_MODE_HIERARCHY);
        ASSERT_EQ(vmpressure_mode_from_string("local"), VMPRESSURE_MODE_LOCAL);
        ASSERT_EQ(vmpressure_mode_from_string("global"), _VMPRESSURE_MODE_INVALID);
        ASSERT_STREQ(vmpressure_mode_to_string(VMPRESSURE_MODE_HIERARCHY), "hierarchy");
        ASSERT_TRUE(vmpressure_mode_to_string(_VMPRESSURE_MODE_INVALID) == NULL);
}

static void check_trigger(const char *s, PsiStall stall, uint64_t thr, uint64_t win) {
        PsiTrigger t;

        ASSERT_OK(psi_trigger_parse(s, &t));
        ASSERT_EQ(t.stall, stall);
        ASSERT_U64_EQ(t.threshold_us, thr);
        ASSERT_U64_EQ(t.window_us, win);
}

static void test_trigger_parse(void) {
        PsiTrigger t = { PSI_STALL_FULL, 1, 2 };

        check_trigger("some 150ms 2s", PSI_STALL_SOME, 150000, 2000000);
        check_trigger("full 100000 1000000", PSI_STALL_FULL, 100000, 1000000);
        check_trigger("  some\t70ms   1.5s \t", PSI_STALL_SOME, 70000, 1500000);

        ASSERT_ERR(psi_trigger_parse("", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse(NULL, &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some 150ms", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some 150ms 2s 3s", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("any 150ms 2s", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some -150ms 2s", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some 150ms 2x", &t), EINVAL);
        ASSERT_ERR(psi_trigger_parse("some 150ms 99999999999999999999s", &t), ERANGE);
        ASSERT_ERR(psi_trigger_parse("some 1234567890123456789012345678901234567890 2s", &t), EINVAL);
        /* untouched on failure */
        ASSERT_EQ(t.stall, PSI_STALL_FULL);
        ASSERT_U64_EQ(t.threshold_us, 1);
        ASSERT_U64_EQ(t.window_us, 2);
}

static void check_rule(PsiStall stall, uint64_t thr, uint64_t win, const char *reason) {
        PsiTrigger t = { stall, thr, win };
        const char *why = NULL;
        int r = psi_trigger_check(&t, &why);

        if (!reason) {
                if (r != 0)
                        TEST_FAIL("trigger %" PRIu64 "/%" PRIu64 " rejected: %s", thr, win, why ? why : "?");
                ASSERT_TRUE(why == NULL);
                return;
        }
        ASSERT_ERR(r, EINVAL);
        ASSERT_STREQ(why, reason);
}

static void test_trigger_check(void) {
        const char *range = "window must be between 500ms and 10s";
        PsiTrigger t = { PSI_STALL_SOME, 0, 0 };

        check_rule(PSI_STALL_SOME, 1, 500000, NULL);
        check_rule(PSI_STALL_SOME, 500000, 500000, NULL);
        check_rule(PSI_STALL_FULL, 10000000, 10000000, NULL);
        check_rule(PSI_STALL_SOME, 150000, 2000000, NULL);
        check_rule(PSI_STALL_SOME, 1, 499999, range);
        check_rule(PSI_STALL_SOME, 1, 10000001, range);
        check_rule(PSI_STALL_SOME, 0, 0, range);
        check_rule(PSI_STALL_SOME, 0, 1000000, "threshold must be greater than 0");
        check_rule(PSI_STALL_SOME, 1000001, 1000000, "threshold must not exceed the window");
        check_rule(_PSI_STALL_INVALID, 1, 1000000, "stall must be \"some\" or \"full\"");
        check_rule(_PSI_STALL_MAX, 1, 1000000, "stall must be \"some\" or \"full\"");
        /* reason pointer optional */
        ASSERT_ERR(psi_trigger_check(&t, NULL), EINVAL);
}

static void test_format_kernel(void) {
        PsiTrigger t = { PSI_STALL_SOME, 150000, 2000000 };
        PsiTrigger big = { PSI_STALL_FULL, UINT64_MAX, UINT64_MAX };
        PsiTrigger bad = { _PSI_STALL_INVALID, 1, 1 };
        char buf[64], small[19], exact[20];

        ASSERT_EQ(psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, buf, sizeof(buf)), 19);
        ASSERT_STREQ(buf, "some 150000 2000000");
        ASSERT_ERR(psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, small, sizeof(small)), ENOBUFS);
        ASSERT_EQ(psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, exact, sizeof(exact)), 19);
        ASSERT_STREQ(exact, "some 150000 2000000");
        ASSERT_EQ(psi_trigger_format(&big, PSI_TRIGGER_FORMAT_KERNEL, buf, sizeof(buf)), 46);
        ASSERT_STREQ(buf, "full 18446744073709551615 18446744073709551615");
        ASSERT_ERR(psi_trigger_format(&bad, PSI_TRIGGER_FORMAT_KERNEL, buf, sizeof(buf)), EINVAL);
        ASSERT_TRUE(46 < PSI_TRIGGER_FORMAT_MAX);
}

static void test_format_config(void) {
        static const struct {
                PsiTrigger t;
                const char *text;
        } table[] = {
                { { PSI_STALL_SOME, 150000, 2000000 }, "some 150ms 2s" },
                { { PSI_STALL_FULL, 100000, 1000000 }, "full 100ms 1s" },
                { { PSI_STALL_SOME, 1500, 1500000 }, "some 1500us 1500ms" },
                { { PSI_STALL_SOME, 0, 7 }, "some 0us 7us" },
                { { PSI_STALL_FULL, UINT64_MAX, UINT64_MAX }, "full 18446744073709551615us 18446744073709551615us" },
        };
        char buf[PSI_TRIGGER_FORMAT_MAX], small[8];

        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                PsiTrigger back;

                ASSERT_EQ(psi_trigger_format(&table[i].t, PSI_TRIGGER_FORMAT_CONFIG, buf, sizeof(buf)),
                          strlen(table[i].text));
                ASSERT_STREQ(buf, table[i].text);
                /* What is printed reads back as the same trigger. */
                ASSERT_OK(psi_trigger_parse(buf, &back));
                ASSERT_TRUE(psi_trigger_equal(&back, &table[i].t));
        }
        ASSERT_ERR(psi_trigger_format(&table[0].t, PSI_TRIGGER_FORMAT_CONFIG, small, sizeof(small)), ENOBUFS);
        ASSERT_EQ(format_duration_us(0, buf, sizeof(buf)), 3);
        ASSERT_STREQ(buf, "0us");
        ASSERT_ERR(format_duration_us(2000000, small, 2), ENOBUFS);
}

static void check_round(uint64_t thr, uint64_t win, uint64_t exp_thr, uint64_t exp_win, bool exp_changed) {
        PsiTrigger t = { PSI_STALL_FULL, thr, win }, out;
        bool changed = psi_trigger_round_unprivileged(&t, &out);

        if (changed != exp_changed || out.threshold_us != exp_thr || out.window_us != exp_win ||
            out.stall != PSI_STALL_FULL)
                TEST_FAIL("round(%" PRIu64 "/%" PRIu64 ") = %" PRIu64 "/%" PRIu64 " changed=%d, "
                          "expected %" PRIu64 "/%" PRIu64 " changed=%d",
                          thr, win, out.threshold_us, out.window_us, changed, exp_thr, exp_win, exp_changed);
}

static void test_round_unprivileged(void) {
        /* Already a multiple: unchanged. */
        check_round(150000, 2000000, 150000, 2000000, false);
        check_round(10000000, 10000000, 10000000, 10000000, false);
        check_round(1, 4000000, 1, 4000000, false);
        /* 1 s -> 2 s, threshold doubled. */
        check_round(100000, 1000000, 200000, 2000000, true);
        check_round(70000, 1000000, 140000, 2000000, true);
        /* 500 ms -> 2 s, threshold x4 */
        check_round(500000, 500000, 2000000, 2000000, true);
        /* 1.5 s -> 2 s: 100000 * 4/3 = 133333.33 rounded up */
        check_round(100000, 1500000, 133334, 2000000, true);
        /* 3 s -> 4 s; 2999999/3000000 * 4000000 rounds up to 4000000 - 1 = 3999999 (exact: 3999998.67) */
        check_round(2999999, 3000000, 3999999, 4000000, true);
        /* 9.5 s -> 10 s, threshold equal to window stays equal */
        check_round(9500000, 9500000, 10000000, 10000000, true);
        /* 2000001 us -> 4 s */
        check_round(1, 2000001, 2, 4000000, true);
        /* huge values do not overflow */
        check_round(UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX - UINT64_MAX % 2000000,
                    UINT64_MAX - UINT64_MAX % 2000000, true);
        /* zero window cannot be scaled: left for psi_trigger_check() to reject */
        check_round(5, 0, 5, 0, false);
}

static void test_equal(void) {
        PsiTrigger a = { PSI_STALL_SOME, 1, 2 }, b = a;

        ASSERT_TRUE(psi_trigger_equal(&a, &b));
        b.stall = PSI_STALL_FULL;
        ASSERT_TRUE(!psi_trigger_equal(&a, &b));
        b = a;
        b.threshold_us++;
        ASSERT_TRUE(!psi_trigger_equal(&a, &b));
        b = a;
        b.window_us++;
        ASSERT_TRUE(!psi_trigger_equal(&a, &b));
}

static void test_resources(void) {
        PsiTrigger some = { PSI_STALL_SOME, 100000, 1000000 }, full = { PSI_STALL_FULL, 100000, 1000000 };
        const char *why = NULL;

        ASSERT_EQ(resource_from_string("memory"), RESOURCE_MEMORY);
        ASSERT_EQ(resource_from_string("cpu"), RESOURCE_CPU);
        ASSERT_EQ(resource_from_string("io"), RESOURCE_IO);
        ASSERT_EQ(resource_from_string("irq"), _RESOURCE_INVALID);
        ASSERT_EQ(resource_from_string(""), _RESOURCE_INVALID);
        ASSERT_STREQ(resource_to_string(RESOURCE_IO), "io");
        ASSERT_TRUE(!resource_to_string(_RESOURCE_MAX));
        ASSERT_STREQ(resource_pressure_file(RESOURCE_CPU), "cpu.pressure");
        ASSERT_STREQ(resource_pressure_file(RESOURCE_MEMORY), "memory.pressure");
        ASSERT_STREQ(resource_proc_pressure_file(RESOURCE_IO), "/proc/pressure/io");
        ASSERT_TRUE(!resource_pressure_file(_RESOURCE_INVALID));
        ASSERT_TRUE(!resource_proc_pressure_file(_RESOURCE_MAX));

        /* cpu "full" is refused for the whole system only. */
        ASSERT_ERR(psi_trigger_check_resource(&full, RESOURCE_CPU, true, &why), EINVAL);
        ASSERT_TRUE(why && strstr(why, "cpu \"full\""));
        ASSERT_OK(psi_trigger_check_resource(&full, RESOURCE_CPU, false, NULL));
        ASSERT_OK(psi_trigger_check_resource(&some, RESOURCE_CPU, true, NULL));
        ASSERT_OK(psi_trigger_check_resource(&full, RESOURCE_IO, true, NULL));
        ASSERT_OK(psi_trigger_check_resource(&full, RESOURCE_MEMORY, true, NULL));
}

int main(void) {
        test_resources();
        test_names();
        test_trigger_parse();
        test_trigger_check();
        test_format_kernel();
        test_format_config();
        test_round_unprivileged();
        test_equal();
        return 0;
}
