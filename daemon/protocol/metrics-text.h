/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text exposition format 0.0.4 written into an evbuffer:
 * HELP/TYPE headers, samples with escaped labels, latency histograms and
 * the daemon's own process gauges.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "histogram.h"

struct evbuffer;

/* One label of a sample; the name must match [a-zA-Z_][a-zA-Z0-9_]*. */
typedef struct MetricsLabel {
        const char *name;
        const char *value;
} MetricsLabel;

/*
 * metrics_write_header - write the "# HELP" and "# TYPE" lines of a family.
 * @out: destination
 * @name: metric family name, [a-zA-Z_:][a-zA-Z0-9_:]*
 * @type: "counter", "gauge", "histogram", "summary" or "untyped"
 * @help: free text; backslashes and newlines are escaped
 */
void metrics_write_header(struct evbuffer *out, const char *name, const char *type, const char *help);

/*
 * metrics_write_sample - write one sample line with a floating-point value.
 * @out: destination
 * @name: sample name (the family name, or with a _bucket/_sum/_count suffix)
 * @labels: @n_labels labels, values escaped (backslash, double quote, newline)
 * @value: written exactly enough to round-trip; infinities as +Inf/-Inf, NaN as NaN
 */
void metrics_write_sample(struct evbuffer *out, const char *name,
                          const MetricsLabel *labels, size_t n_labels, double value);

/* metrics_write_sample_u64 - like metrics_write_sample() for an exact integer value. */
void metrics_write_sample_u64(struct evbuffer *out, const char *name,
                              const MetricsLabel *labels, size_t n_labels, uint64_t value);

/*
 * metrics_write_sample_seconds - like metrics_write_sample() for a duration
 * of @usec microseconds, written in seconds as an exact decimal ("1.5",
 * "0.000001", "3").
 */
void metrics_write_sample_seconds(struct evbuffer *out, const char *name,
                                  const MetricsLabel *labels, size_t n_labels, uint64_t usec);

/* metrics_write_label_value - append @value escaped for use inside a label's double quotes. */
void metrics_write_label_value(struct evbuffer *out, const char *value);

/*
 * metrics_histogram_write - write a whole histogram family: HELP/TYPE, one
 * cumulative NAME_bucket{le="SECONDS"} per bound plus le="+Inf" (equal to the
 * count), NAME_sum in seconds and NAME_count.
 */
void metrics_histogram_write(struct evbuffer *out, const char *name, const char *help,
                             const MetricsHistogram *h);

/*
 * metrics_write_process - write pressured_resident_memory_bytes (from
 * /proc/self/statm) and pressured_open_fds (entries of /proc/self/fd) as
 * gauges. A value that cannot be read is left out rather than faked.
 */
void metrics_write_process(struct evbuffer *out);
