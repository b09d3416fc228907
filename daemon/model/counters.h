/* SPDX-License-Identifier: MIT */
/*
 * The daemon's monotonic counters and the one table that names them.
 * GetStatus ("counters") and the Prometheus endpoint
 * (pressured_NAME_total) both export every counter of the table, so the
 * two cannot drift apart. Pure: no I/O, no event loop.
 */
#pragma once

#include <stdint.h>

#include "histogram.h"

typedef enum Counter {
        COUNTER_EVENTS_READ,
        COUNTER_EVENTS_DELIVERED,
        COUNTER_EVENTS_DROPPED,
        COUNTER_EVENTS_INJECTED,
        COUNTER_PROPAGATIONS_APPLIED,   /* kept by the protection source, see manager_counters() */
        COUNTER_PROPAGATIONS_SKIPPED,
        COUNTER_REGISTRATIONS_CREATED,
        COUNTER_REGISTRATIONS_REMOVED,
        COUNTER_PROTECTION_REFRESHES,
        COUNTER_PROXY_CONNECTIONS,      /* the memory-pressure proxy, see proxy.h */
        COUNTER_PROXY_EVENTS_SENT,
        COUNTER_PROXY_EVENTS_DROPPED,
        COUNTER_PROXY_INVALID_REQUESTS,
        COUNTER_KILLS_KERNEL,           /* kills heard, once per kill (not per subscriber), see source-kills.c */
        COUNTER_KILLS_SYSTEMD_OOMD,
        _COUNTER_MAX,
} Counter;

typedef struct CounterInfo {
        const char *name;   /* the GetStatus key; the metric is pressured_<name>_total */
        const char *help;   /* the metric's HELP text */
        /* Counters of one family with a label: the metric is
         * pressured_<family>_total{by="<by>"} instead (the family's
         * counters are adjacent in the table and share the help text). */
        const char *family;
        const char *by;
} CounterInfo;

/* counter_info - the name and help text of @c. */
const CounterInfo *counter_info(Counter c);

typedef struct Counters {
        uint64_t value[_COUNTER_MAX];
        /* from reading a kernel notification to queueing it for a subscriber */
        MetricsHistogram latency;
} Counters;

/* counter_inc - count one more @c. */
static inline void counter_inc(Counters *counters, Counter c) {
        counters->value[c]++;
}

/* counter_add - count @n more @c. */
static inline void counter_add(Counters *counters, Counter c, uint64_t n) {
        counters->value[c] += n;
}
