/* SPDX-License-Identifier: MIT */
/* pressurectl top: a reader of the GetProtection reply that builds no JSON tree (top-scan.c). */
#pragma once

#include <stdint.h>

#include "top-cgroup.h" /* TOP_NONE, TOP_UNLIMITED */

/* Called by top_scan_protection() for each node; a negative return stops the scan. */
typedef int (*TopProtectionNodeFn)(const char *cgroup, uint64_t emin, uint64_t elow, void *userdata);

/*
 * top_scan_protection - read the text of a GetProtection reply
 * ({"nodes": [...]}) without building a JSON tree (top-scan.c): @fn gets
 * each node's cgroup, emin and elow (TOP_UNLIMITED for null, TOP_NONE if
 * missing). Returns 0, -EBADMSG for other text, or what @fn returned.
 */
int top_scan_protection(const char *text, TopProtectionNodeFn fn, void *userdata);
