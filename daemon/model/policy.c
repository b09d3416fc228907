/* SPDX-License-Identifier: MIT */
/* The fast-trigger policy for unprivileged peers (see policy.h). */
#include <stdio.h>

#include "policy.h"

bool psi_trigger_is_fast(const PsiTrigger *t) {
        return t->window_us % PSI_UNPRIV_WINDOW_US != 0;
}

PolicyVerdict policy_decide(const PolicyRequest *req, PsiTrigger *ret_trigger) {
        *ret_trigger = req->trigger;

        /* Only what the kernel would refuse an unprivileged caller, asked
         * for by one, and only when the daemon itself may register it. */
        if (req->uid == 0 || !req->explicit_psi || !req->privileged || !psi_trigger_is_fast(&req->trigger))
                return POLICY_KEEP;
        /* The kernel already polls an identical trigger: joining it is free. */
        if (req->shared)
                return POLICY_KEEP;
        if (req->used < req->quota)
                return POLICY_CHARGE;
        (void) psi_trigger_round_unprivileged(&req->trigger, ret_trigger);
        return POLICY_ROUND;
}

char *policy_reason(const PolicyRequest *req, char *buf, size_t size) {
        if (req->quota == 0)
                snprintf(buf, size,
                         "[Policy] MaxFastTriggersPerUser=0: users other than root get no PSI windows "
                         "that are not multiples of 2 s; the window was rounded up as the kernel requires "
                         "of unprivileged users, the threshold scaled alike");
        else
                snprintf(buf, size,
                         "uid %u already holds %u PSI triggers whose windows are not multiples of 2 s, "
                         "the limit of [Policy] MaxFastTriggersPerUser=%u; the window was rounded up as the "
                         "kernel requires of unprivileged users, the threshold scaled alike",
                         (unsigned) req->uid, req->used, req->quota);
        return buf;
}
