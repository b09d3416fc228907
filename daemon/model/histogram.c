/* SPDX-License-Identifier: MIT */
/* The latency histogram; see histogram.h. */
#include "histogram.h"

const uint64_t metrics_histogram_bounds_usec[METRICS_HISTOGRAM_BOUNDS] = {
        10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000,
};

void metrics_histogram_observe(MetricsHistogram *h, uint64_t usec) {
        size_t i = 0;

        while (i < METRICS_HISTOGRAM_BOUNDS && usec > metrics_histogram_bounds_usec[i])
                i++;
        h->buckets[i]++;
        h->count++;
        h->sum_usec += usec;
}
