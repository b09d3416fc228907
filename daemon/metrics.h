/* SPDX-License-Identifier: MIT */
/*
 * The optional Prometheus endpoint ([Metrics] Listen=): a small libevent
 * evhttp server answering GET /metrics with the text exposition format
 * 0.0.4, plus the writers that produce that format into an evbuffer
 * (HELP/TYPE headers, samples with escaped labels, latency histograms).
 * What is exported is up to the caller's collect callback; this module
 * owns only the HTTP side and the format.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct event_base;
struct evbuffer;

typedef struct MetricsServer MetricsServer;

/*
 * Called once per scrape to append the exposition text to @out. It runs on
 * the event loop and must not block.
 */
typedef void (*MetricsCollectFn)(struct evbuffer *out, void *userdata);

/* Caps that keep a slow or hostile HTTP client from hurting the daemon. */
#define METRICS_TIMEOUT_SEC 10
#define METRICS_MAX_HEADERS_BYTES 8192
#define METRICS_MAX_BODY_BYTES 4096
#define METRICS_LISTEN_BACKLOG 16

/*
 * metrics_parse_listen - parse a [Metrics] Listen= value.
 * @address: "A.B.C.D:PORT" or "[IPV6]:PORT"; numeric addresses only (no name
 *          resolution), PORT 0..65535 (0 picks a free port, for tests)
 * @ret: the socket address
 * @ret_len: its length
 *
 * Returns 0 or -EINVAL.
 */
int metrics_parse_listen(const char *address, struct sockaddr_storage *ret, socklen_t *ret_len);

/*
 * metrics_server_new - start serving GET /metrics.
 * @base: the daemon's event loop
 * @address: as for metrics_parse_listen()
 * @collect: fills the response body on each scrape
 * @userdata: passed to @collect
 * @ret: the new server
 *
 * Binds and listens at once, so a busy port is reported here. Returns 0,
 * -EINVAL for a bad address, or the negative errno of socket()/bind()/
 * listen() (logged once).
 */
int metrics_server_new(struct event_base *base, const char *address,
                       MetricsCollectFn collect, void *userdata, MetricsServer **ret);

/* metrics_server_free - close the socket and all HTTP connections; NULL-safe, returns NULL. */
MetricsServer *metrics_server_free(MetricsServer *s);

/*
 * metrics_server_get_port - the TCP port actually bound (useful with port 0).
 * @s: the server
 * @ret: the port in host byte order
 *
 * Returns 0 or a negative errno from getsockname().
 */
int metrics_server_get_port(const MetricsServer *s, uint16_t *ret);

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

/* metrics_write_label_value - append @value escaped for use inside a label's double quotes. */
void metrics_write_label_value(struct evbuffer *out, const char *value);

/* Latency histogram with fixed bucket bounds in microseconds; +Inf is implicit. */
#define METRICS_HISTOGRAM_BOUNDS 11
extern const uint64_t metrics_histogram_bounds_usec[METRICS_HISTOGRAM_BOUNDS];

typedef struct MetricsHistogram {
        uint64_t buckets[METRICS_HISTOGRAM_BOUNDS + 1]; /* per bucket, not cumulative; last is +Inf */
        uint64_t count;
        uint64_t sum_usec;
} MetricsHistogram;

/* metrics_histogram_observe - record one latency of @usec microseconds. */
void metrics_histogram_observe(MetricsHistogram *h, uint64_t usec);

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
