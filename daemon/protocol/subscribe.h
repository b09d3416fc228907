/* SPDX-License-Identifier: MIT */
/*
 * Validation of Subscribe parameters into a SubscribeRequest. Pure: no
 * I/O, no event loop; the varlink error to answer is filled on failure.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "selector.h"
#include "trigger.h"
#include "varlink-error.h"

typedef struct SubscribeRequest {
        char *cgroup;               /* canonical, "/" for the system */
        Selector selector;
        Resource resource;          /* SELECTOR_LEVEL, SELECTOR_PSI; else RESOURCE_MEMORY */
        Level level;                /* SELECTOR_LEVEL */
        PsiTrigger psi;             /* SELECTOR_PSI */
        Level vm_level;             /* SELECTOR_VMPRESSURE */
        VmpressureMode vm_mode;
        uint64_t min_interval_usec;
} SubscribeRequest;

/* Upper bound of min_interval_ms: one hour. */
#define SUBSCRIBE_MIN_INTERVAL_MAX_MS 3600000

/*
 * subscribe_request_parse - check every selector and modifier of a
 * Subscribe call. Exactly one selector (level, levels, psi, vmpressure,
 * memory_events, protection, kills) must be given; unknown parameters and wrong
 * types are InvalidParameter naming the parameter; "resource" ("memory",
 * the default, "cpu" or "io") other than "memory" goes with "level" and
 * "psi" only (not with vmpressure, memory_events, protection or
 * kills), else it is InvalidParameter "resource"; "levels" with a
 * min_interval_ms other than 0 is InvalidParameter "min_interval_ms"; a bad cgroup path is
 * InvalidCgroupPath; a PSI trigger outside the kernel's rules is
 * InvalidTrigger. Returns 0 or a negative errno with @e filled.
 */
int subscribe_request_parse(json_t *params, SubscribeRequest *ret, VarlinkError *e);
/* subscribe_request_done - free what a parsed request holds. */
void subscribe_request_done(SubscribeRequest *r);
