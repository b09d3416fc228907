/* SPDX-License-Identifier: MIT */
/* The fast-trigger policy: who is charged, when a trigger is rounded, and the reason given. */
#include "policy.h"
#include "tests.h"
#include "util.h"

static const PsiTrigger fast = { PSI_STALL_SOME, 100000, 1000000 };     /* some 100ms 1s */
static const PsiTrigger slow = { PSI_STALL_SOME, 200000, 2000000 };     /* some 200ms 2s */

static PolicyRequest request(uid_t uid, const PsiTrigger *t, unsigned used) {
        return (PolicyRequest) {
                .uid = uid,
                .explicit_psi = true,
                .privileged = true,
                .trigger = *t,
                .used = used,
                .quota = POLICY_MAX_FAST_TRIGGERS_DEFAULT,
        };
}

static void expect(const PolicyRequest *req, PolicyVerdict verdict, uint64_t threshold, uint64_t window) {
        PsiTrigger out = { PSI_STALL_FULL, 1, 1 };

        ASSERT_EQ(policy_decide(req, &out), verdict);
        ASSERT_EQ(out.stall, req->trigger.stall);
        ASSERT_U64_EQ(out.threshold_us, threshold);
        ASSERT_U64_EQ(out.window_us, window);
}

static void test_fast(void) {
        const PsiTrigger odd = { PSI_STALL_FULL, 500000, 3000000 };
        const PsiTrigger ten = { PSI_STALL_SOME, 1, 10000000 };

        ASSERT_TRUE(psi_trigger_is_fast(&fast));
        ASSERT_TRUE(psi_trigger_is_fast(&odd));
        ASSERT_TRUE(!psi_trigger_is_fast(&slow));
        ASSERT_TRUE(!psi_trigger_is_fast(&ten));
}

static void test_quota(void) {
        PolicyRequest req;

        /* Within the quota: registered as asked and charged. */
        for (unsigned used = 0; used < POLICY_MAX_FAST_TRIGGERS_DEFAULT; used++) {
                req = request(65534, &fast, used);
                expect(&req, POLICY_CHARGE, 100000, 1000000);
        }
        /* Beyond it: rounded exactly as the kernel wants it, threshold scaled. */
        req = request(65534, &fast, POLICY_MAX_FAST_TRIGGERS_DEFAULT);
        expect(&req, POLICY_ROUND, 200000, 2000000);
        req = request(65534, &fast, 100);
        expect(&req, POLICY_ROUND, 200000, 2000000);
        req = request(1000, &(PsiTrigger) { PSI_STALL_FULL, 150000, 2500000 }, 4);
        expect(&req, POLICY_ROUND, 240000, 4000000);

        /* MaxFastTriggersPerUser=0: none at all. */
        req = request(1000, &fast, 0);
        req.quota = 0;
        expect(&req, POLICY_ROUND, 200000, 2000000);
}

static void test_exempt(void) {
        PolicyRequest req;

        /* Root. */
        req = request(0, &fast, 1000);
        expect(&req, POLICY_KEEP, 100000, 1000000);
        /* [Levels] triggers, chosen by the administrator. */
        req = request(1000, &fast, 4);
        req.explicit_psi = false;
        expect(&req, POLICY_KEEP, 100000, 1000000);
        /* Windows the kernel gives anyone. */
        req = request(1000, &slow, 4);
        expect(&req, POLICY_KEEP, 200000, 2000000);
        /* Joining an existing registration costs nothing, even over the quota. */
        req = request(1000, &fast, 4);
        req.shared = true;
        expect(&req, POLICY_KEEP, 100000, 1000000);
        /* A daemon without CAP_SYS_RESOURCE: the kernel's own rounding applies. */
        req = request(1000, &fast, 0);
        req.privileged = false;
        expect(&req, POLICY_KEEP, 100000, 1000000);
}

static void test_reason(void) {
        char buf[POLICY_REASON_MAX];
        PolicyRequest req = request(65534, &fast, 4);

        policy_reason(&req, buf, sizeof(buf));
        ASSERT_TRUE(strstr(buf, "uid 65534 already holds 4 "));
        ASSERT_TRUE(strstr(buf, "MaxFastTriggersPerUser=4"));
        ASSERT_TRUE(strstr(buf, "multiples of 2 s"));
        req.quota = 0;
        req.used = 0;
        policy_reason(&req, buf, sizeof(buf));
        ASSERT_TRUE(strstr(buf, "MaxFastTriggersPerUser=0"));
        /* The longest one fits. */
        req = request((uid_t) -2, &fast, POLICY_MAX_FAST_TRIGGERS_MAX);
        req.quota = POLICY_MAX_FAST_TRIGGERS_MAX;
        policy_reason(&req, buf, sizeof(buf));
        ASSERT_TRUE(strstr(buf, "the threshold scaled alike"));
}

int main(void) {
        test_fast();
        test_quota();
        test_exempt();
        test_reason();
        return 0;
}
