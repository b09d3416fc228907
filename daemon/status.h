/* SPDX-License-Identifier: MIT */
/*
 * What the daemon reports about itself: the GetStatus reply and the
 * Prometheus text of /metrics. Both read the manager's state and export
 * every counter of the counter table (counters.h), so they agree.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "counters.h"

typedef struct Manager Manager;
struct evbuffer;

/* status_counters - every counter of the table, now; propagations come from the protection source. */
void status_counters(Manager *m, uint64_t ret[static _COUNTER_MAX]);

/* status_json - the GetStatus reply parameters. */
json_t *status_json(Manager *m);

/* status_write_metrics - the Prometheus exposition text (a MetricsCollectFn; @userdata is the Manager). */
void status_write_metrics(struct evbuffer *out, void *userdata);
