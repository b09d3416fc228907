/* SPDX-License-Identifier: MIT */
/*
 * Validation of Subscribe parameters into a SubscribeRequest. Pure: no
 * I/O, no event loop; the varlink error to answer is filled on failure.
 */
#pragma once

#include <jansson.h>

#include "manager.h"

/* Upper bound of min_interval_ms: one hour. */
#define SUBSCRIBE_MIN_INTERVAL_MAX_MS 3600000

/*
 * subscribe_request_parse - check every selector and modifier of a
 * Subscribe call. Exactly one selector (level, psi, vmpressure,
 * memory_events, protection) must be given; unknown parameters and wrong
 * types are InvalidParameter naming the parameter; a bad cgroup path is
 * InvalidCgroupPath; a PSI trigger outside the kernel's rules is
 * InvalidTrigger. Returns 0 or a negative errno with @e filled.
 */
int subscribe_request_parse(json_t *params, SubscribeRequest *ret, VarlinkError *e);
void subscribe_request_done(SubscribeRequest *r);
