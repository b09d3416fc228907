/* SPDX-License-Identifier: MIT */
/* A latency histogram with fixed bucket bounds in microseconds. Pure: no I/O. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The bounds; +Inf is implicit. */
#define METRICS_HISTOGRAM_BOUNDS 11
extern const uint64_t metrics_histogram_bounds_usec[METRICS_HISTOGRAM_BOUNDS];

typedef struct MetricsHistogram {
        uint64_t buckets[METRICS_HISTOGRAM_BOUNDS + 1]; /* per bucket, not cumulative; last is +Inf */
        uint64_t count;
        uint64_t sum_usec;
} MetricsHistogram;

/* metrics_histogram_observe - record one latency of @usec microseconds. */
void metrics_histogram_observe(MetricsHistogram *h, uint64_t usec);
