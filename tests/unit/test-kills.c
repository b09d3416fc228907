/* SPDX-License-Identifier: MIT */
/*
 * The kills source's arithmetic and checks: the rise of an oom_kill
 * counter, which subscriptions hear of a kill, and what is accepted from
 * systemd-oomd's Killed signal.
 */
#include <errno.h>
#include <string.h>

#include "kills.h"
#include "tests.h"
#include "util.h"

static void test_rise(void) {
        ASSERT_EQ(kills_rise(false, 0, 5), 0);      /* the first reading is the base */
        ASSERT_EQ(kills_rise(true, 0, 5), 5);
        ASSERT_EQ(kills_rise(true, 5, 5), 0);       /* another counter changed */
        ASSERT_EQ(kills_rise(true, 5, 7), 2);
        ASSERT_EQ(kills_rise(true, 7, 1), 0);       /* restarted: from its next rise on */
        ASSERT_EQ(kills_rise(true, 0, UINT64_MAX), UINT64_MAX);
}

static void test_covers(void) {
        ASSERT_TRUE(kills_covers("/", "/system.slice/x.service"));
        ASSERT_TRUE(kills_covers("/", "/"));
        ASSERT_TRUE(kills_covers("/system.slice", "/system.slice/x.service"));
        ASSERT_TRUE(kills_covers("/system.slice", "/system.slice"));
        ASSERT_TRUE(kills_covers("/system.slice/x.service", "/system.slice/x.service"));
        ASSERT_TRUE(!kills_covers("/system.slice/x.service", "/system.slice"));
        ASSERT_TRUE(!kills_covers("/user.slice", "/system.slice/x.service"));
        /* A name that only starts like the subscribed cgroup is not below it. */
        ASSERT_TRUE(!kills_covers("/system.slice", "/system.slice2/x.service"));
        ASSERT_TRUE(!kills_covers("/system", "/system.slice"));
}

static void expect_refused(const char *path, const char *reason) {
        char *cg = NULL;

        ASSERT_EQ(kills_oomd_check(path, reason, &cg), -EINVAL);
        ASSERT_TRUE(!cg);
}

static void test_oomd_check(void) {
        char reason[KILLS_REASON_MAX + 2];
        char *cg = NULL;

        ASSERT_OK(kills_oomd_check("/system.slice/x.service", "memory-pressure", &cg));
        ASSERT_STREQ(cg, "/system.slice/x.service");
        free(cg);
        /* The canonical form, as a subscriber's cgroup is compared with it. */
        ASSERT_OK(kills_oomd_check("/user.slice//app.scope/", "memory-used", &cg));
        ASSERT_STREQ(cg, "/user.slice/app.scope");
        free(cg);

        expect_refused("relative/path", "memory-used");
        expect_refused("/a/../b", "memory-used");
        expect_refused("/a\001b", "memory-used");
        expect_refused("/a", "");
        expect_refused(NULL, "memory-used");
        expect_refused("/a", NULL);
        memset(reason, 'x', KILLS_REASON_MAX);
        reason[KILLS_REASON_MAX] = 0;
        ASSERT_OK(kills_oomd_check("/a", reason, &cg));
        free(cg);
        reason[KILLS_REASON_MAX] = 'x';
        reason[KILLS_REASON_MAX + 1] = 0;
        expect_refused("/a", reason);
}

int main(void) {
        test_rise();
        test_covers();
        test_oomd_check();
        return 0;
}
