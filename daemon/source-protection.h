/* SPDX-License-Identifier: MIT */
/*
 * The protection source: the daemon side of protected-usage tracking. It
 * implements source_protection_ops (a cgroup's effective-protection state),
 * owns the protection reader and the RefreshSec timer (both exist only
 * while something needs them), answers GetProtection, and attaches the
 * protection node to pressure events on tracked cgroups.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

typedef struct Manager Manager;

/* source_protection_read - the nodes of @cgroup's subtree, parents first (GetProtection). */
int source_protection_read(Manager *m, const char *cgroup, json_t **ret_nodes);

/* source_protection_enrich - add "protection": NODE to @event if @cgroup is tracked. */
void source_protection_enrich(Manager *m, const char *cgroup, json_t *event);

/* source_protection_counters - propagation counters since start. */
void source_protection_counters(Manager *m, uint64_t *ret_applied, uint64_t *ret_skipped);

/* source_protection_reconfigure - apply RefreshSec= and RecursiveProtection= after a reload. */
void source_protection_reconfigure(Manager *m);

/* source_protection_shutdown - drop the reader (at exit). */
void source_protection_shutdown(Manager *m);
