/* SPDX-License-Identifier: MIT */
/*
 * The fast-trigger policy. The kernel lets an unprivileged process
 * register PSI triggers only with windows that are multiples of 2 s;
 * shorter or odd windows make its real-time poller work harder, so they
 * are kept for privileged callers. The daemon has CAP_SYS_RESOURCE and
 * could register them for anyone: this module decides how many it does.
 *
 * A "fast" trigger is a PSI trigger whose window is not a multiple of 2 s.
 * An explicit one asked for by a uid other than 0 is charged to that uid,
 * up to [Policy] MaxFastTriggersPerUser=; beyond it, the window is rounded
 * up as the kernel would require (psi_trigger_round_unprivileged()).
 * [Levels] triggers and root are exempt; joining an existing registration
 * costs nothing. Pure: no I/O, no manager.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "trigger.h"

/* Default of [Policy] MaxFastTriggersPerUser=. */
#define POLICY_MAX_FAST_TRIGGERS_DEFAULT 4U
/* Upper bound accepted for it. */
#define POLICY_MAX_FAST_TRIGGERS_MAX 1000000U

typedef enum PolicyVerdict {
        POLICY_KEEP,            /* register as asked, charge nobody */
        POLICY_CHARGE,          /* register as asked, charge the new registration to the uid */
        POLICY_ROUND,           /* register the rounded trigger instead */
} PolicyVerdict;

typedef struct PolicyRequest {
        uid_t uid;              /* the peer's (SO_PEERCRED) */
        bool explicit_psi;      /* a trigger the peer named; false for [Levels] */
        bool privileged;        /* the kernel accepts fast windows from the daemon */
        bool shared;            /* a registration for this trigger exists already */
        PsiTrigger trigger;
        unsigned used;          /* fast registrations charged to @uid now */
        unsigned quota;         /* [Policy] MaxFastTriggersPerUser= */
} PolicyRequest;

/* psi_trigger_is_fast - true if @t's window is not a multiple of 2 s. */
bool psi_trigger_is_fast(const PsiTrigger *t);

/*
 * policy_decide - what to register for @req.
 * @ret_trigger: the trigger to register: @req->trigger, or for
 *               POLICY_ROUND the rounded one
 */
PolicyVerdict policy_decide(const PolicyRequest *req, PsiTrigger *ret_trigger);

/*
 * policy_reason - the "adjusted_reason" text for a POLICY_ROUND verdict
 * on @req, into @buf. Returns @buf.
 */
char *policy_reason(const PolicyRequest *req, char *buf, size_t size);

/* Why a trigger is rounded when the daemon itself lacks CAP_SYS_RESOURCE. */
#define POLICY_REASON_UNPRIVILEGED \
        "the daemon lacks CAP_SYS_RESOURCE, so the kernel accepts only PSI windows that are multiples of 2 s: " \
        "the window was rounded up and the threshold scaled alike"

/* Room for any policy_reason(). */
#define POLICY_REASON_MAX 320
