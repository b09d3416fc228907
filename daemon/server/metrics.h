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

#include "cgroup-glob.h"
#include "listen-address.h"
#include "metrics-text.h"

struct event_base;
struct evbuffer;

typedef struct MetricsServer MetricsServer;

/*
 * Called once per scrape to append the exposition text to @out, with the
 * per-cgroup families read and written for it (NULL when the walk
 * callback asked for none), to be moved into @out in their place. It runs
 * on the event loop and must not block.
 */
typedef void (*MetricsCollectFn)(struct evbuffer *out, struct evbuffer *cgroups, void *userdata);

/*
 * Called on the loop when a scrape arrives: whether the cgroup tree is to
 * be read for it. If so, *ret_root_fd is the cgroup2 tree and
 * *ret_v1_root_fd the v1 memory hierarchy (either -1 where there is none;
 * both duplicated for the walk), *ret_globs the patterns (taken) and
 * *ret_max the cap.
 */
typedef bool (*MetricsWalkFn)(void *userdata, int *ret_root_fd, int *ret_v1_root_fd, CgroupGlobs **ret_globs,
                              size_t *ret_max);

/* Caps that keep a slow or hostile HTTP client from hurting the daemon. */
#define METRICS_TIMEOUT_SEC 10
#define METRICS_MAX_HEADERS_BYTES 8192
#define METRICS_MAX_BODY_BYTES 4096
#define METRICS_LISTEN_BACKLOG 16
/*
 * Scrapes that read the cgroup tree answered at once: the one walk under
 * way and the scrapes waiting for the next one. Scrapes that arrive while
 * a walk runs share the next walk; beyond this many they get 503.
 */
#define METRICS_MAX_PENDING_SCRAPES 8

/*
 * metrics_server_new - start serving GET /metrics.
 * @base: the daemon's event loop
 * @address: as for metrics_parse_listen()
 * @walk: whether a scrape reads the cgroup tree first, off the loop (NULL: never)
 * @collect: fills the response body on each scrape
 * @userdata: passed to @walk and @collect
 * @ret: the new server
 *
 * Binds and listens at once, so a busy port is reported here. Returns 0,
 * -EINVAL for a bad address, or the negative errno of socket()/bind()/
 * listen() (logged once).
 */
int metrics_server_new(struct event_base *base, const char *address, MetricsWalkFn walk,
                       MetricsCollectFn collect, void *userdata, MetricsServer **ret);

/*
 * metrics_server_stop_walk - wait for the cgroup walk under way, if any,
 * and answer the scrapes waiting for it with 503: no thread runs after
 * it (before the process executes anew). The server serves on.
 */
void metrics_server_stop_walk(MetricsServer *s);

/*
 * metrics_server_free - stop the walk as metrics_server_stop_walk() does,
 * close the socket and all HTTP connections; NULL-safe, returns NULL.
 */
MetricsServer *metrics_server_free(MetricsServer *s);

