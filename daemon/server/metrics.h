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

#include "listen-address.h"
#include "metrics-text.h"

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

