/* SPDX-License-Identifier: MIT */
/*
 * The daemon side of protected-usage tracking: the "protection" source,
 * the RefreshSec timer (armed only while some protection subscription
 * exists), GetProtection, and the protection node attached to pressure
 * events on tracked cgroups.
 */
#pragma once

#include <jansson.h>

#include "manager.h"

/* protection_glue_read - the nodes of @cgroup's subtree, parents first (GetProtection). */
int protection_glue_read(Manager *m, const char *cgroup, json_t **ret_nodes);

/* protection_glue_enrich - add "protection": NODE to @event if @cgroup is tracked. */
void protection_glue_enrich(Manager *m, const char *cgroup, json_t *event);

/* protection_glue_counters - propagation counters since start. */
void protection_glue_counters(Manager *m, uint64_t *ret_applied, uint64_t *ret_skipped);

/* protection_glue_reconfigure - apply RefreshSec= and RecursiveProtection= after a reload. */
void protection_glue_reconfigure(Manager *m);

/* protection_glue_shutdown - drop the reader (at exit). */
void protection_glue_shutdown(Manager *m);
