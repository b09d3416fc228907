/* SPDX-License-Identifier: MIT */
/* The memory-pressure proxy's pure parts: the trigger line and the vmpressure level mapping. */
#include "proxy.h"
#include "tests.h"
#include "util.h"

static void expect_trigger(const char *line, PsiStall stall, uint64_t threshold, uint64_t window) {
        PsiTrigger t;

        ASSERT_OK(proxy_parse_request(line, strlen(line), &t, NULL));
        ASSERT_EQ(t.stall, stall);
        ASSERT_EQ(t.threshold_us, threshold);
        ASSERT_EQ(t.window_us, window);
}

static void expect_default(const char *line, size_t len) {
        const char *reason = NULL;
        PsiTrigger t = { PSI_STALL_FULL, 1, 1 };

        ASSERT_TRUE(proxy_parse_request(line, len, &t, &reason) == -EINVAL);
        ASSERT_TRUE(reason && reason[0]);
        ASSERT_EQ(t.stall, PSI_STALL_SOME);
        ASSERT_EQ(t.threshold_us, 200000);
        ASSERT_EQ(t.window_us, 2000000);
}

int main(void) {
        const PsiTrigger levels[_LEVEL_MAX] = {
                [LEVEL_LOW] = { PSI_STALL_SOME, 70000, 1000000 },
                [LEVEL_MEDIUM] = { PSI_STALL_SOME, 100000, 1000000 },
                [LEVEL_CRITICAL] = { PSI_STALL_FULL, 100000, 1000000 },
        };
        char big[PROXY_LINE_MAX + 10];

        /* What systemd writes, and the config spelling. */
        expect_trigger("some 200000 2000000", PSI_STALL_SOME, 200000, 2000000);
        expect_trigger("full 150000 1000000", PSI_STALL_FULL, 150000, 1000000);
        expect_trigger("some 150ms 1s", PSI_STALL_SOME, 150000, 1000000);

        /* Anything else: the default, with a reason. */
        expect_default("", 0);
        expect_default("hello", 5);
        expect_default("some 200000", 11);
        expect_default("some 3000000 2000000", 20);   /* threshold above the window */
        expect_default("some 100 100", 12);           /* window below 500 ms */
        expect_default("some \x01 2", 8);
        memset(big, 'a', sizeof(big));
        expect_default(big, sizeof(big));

        /* vmpressure level by stall/window ratio against [Levels]. */
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_SOME, 200000, 2000000 }, levels), LEVEL_MEDIUM);
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_SOME, 150000, 2000000 }, levels), LEVEL_LOW);
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_SOME, 10000, 2000000 }, levels), LEVEL_LOW);
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_SOME, 500000, 1000000 }, levels), LEVEL_MEDIUM);
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_FULL, 100000, 1000000 }, levels), LEVEL_CRITICAL);
        ASSERT_EQ(proxy_vmpressure_level(&(PsiTrigger) { PSI_STALL_FULL, 50000, 1000000 }, levels), LEVEL_LOW);
        return 0;
}
