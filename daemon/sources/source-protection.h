/* SPDX-License-Identifier: MIT */
/*
 * The protection source: the one reader of the cgroup2 protection tree
 * (protection-tree.h) and its RefreshSec= timer, both existing only while
 * a cgroup is tracked or read. It implements source_protection_ops (each
 * Source of type SOURCE_PROTECTION tracks its cgroup and hears of changes
 * of its effective-protection state), answers GetProtection, and adds the
 * protection node to pressure events on tracked cgroups.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "protection-tree.h"

typedef struct ProtectionSource ProtectionSource;

/*
 * protection_source_new - a protection source for the cgroup2 hierarchy
 * at @root (NULL: none, every use fails with -EOPNOTSUPP), refreshing
 * every @refresh_usec, counting in @counters. Returns 0 or -ENOMEM.
 */
int protection_source_new(struct event_base *base, Counters *counters, const char *root, bool recursive,
                          uint64_t refresh_usec, ProtectionSource **ret);

/* protection_source_free - drop the reader and the timer; NULL-safe, returns NULL. */
ProtectionSource *protection_source_free(ProtectionSource *p);

/* protection_source_configure - apply RefreshSec= and RecursiveProtection= (after a reload). */
void protection_source_configure(ProtectionSource *p, bool recursive, uint64_t refresh_usec);

/*
 * protection_source_read - call @fn for each node of @cgroup's subtree,
 * parents first (GetProtection); errors as protection_reader_foreach().
 */
int protection_source_read(ProtectionSource *p, const char *cgroup, ProtectionNodeFn fn, void *userdata);

/* protection_source_lookup - the node of @cgroup if it is tracked (valid until the next refresh), or NULL. */
const ProtectionNode *protection_source_lookup(ProtectionSource *p, const char *cgroup);

/* protection_source_counters - propagation counters since start. */
void protection_source_counters(const ProtectionSource *p, uint64_t *ret_applied, uint64_t *ret_skipped);
