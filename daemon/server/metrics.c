/* SPDX-License-Identifier: MIT */
/*
 * Prometheus endpoint: evhttp server for GET /metrics and the text
 * exposition format 0.0.4 writers.
 *
 * Limits. Every connection gets a read/write timeout, the request line plus
 * headers and the body are capped, and only the methods we answer at all are
 * parsed. libevent 2.1 has no evhttp_set_max_connections() (it arrived in
 * 2.2), so the number of simultaneous HTTP connections is bounded by the
 * listen backlog, the accept rate times the timeout, and RLIMIT_NOFILE; when
 * accept() fails (EMFILE, ENFILE, ENOBUFS...) the listener is paused for a
 * second instead of spinning on the level-triggered listening socket. The
 * endpoint is meant to be bound to a loopback or management address.
 *
 * A scrape that reads the cgroup tree ([Metrics] Cgroups=) is answered
 * later: the walk runs on a thread (cgroup-walk.h) while the loop serves
 * events, and the reply is written on the loop when it ended. Scrapes that
 * arrive during a walk wait for the next one, which they share (their
 * values are read after they asked); at most METRICS_MAX_PENDING_SCRAPES
 * are held. A client that goes away meanwhile is answered into the void:
 * libevent detaches the request from the closed connection and frees it
 * when we reply.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "cgroup-walk.h"
#include "event-util.h"
#include "log.h"
#include "metrics-cgroup.h"
#include "metrics.h"

struct MetricsServer {
        struct event_base *base;
        struct evhttp *http;
        struct evconnlistener *listener; /* owned by @http once bound */
        struct event *resume;            /* re-enables the listener after an accept error */
        int fd;                          /* the listening socket, owned by @listener */
        MetricsWalkFn walk;
        MetricsCollectFn collect;
        void *userdata;
        CgroupWalk *walking;             /* the walk under way */
        struct evhttp_request *batch[METRICS_MAX_PENDING_SCRAPES];   /* answered by it */
        size_t n_batch;
        struct evhttp_request *waiting[METRICS_MAX_PENDING_SCRAPES]; /* by the next */
        size_t n_waiting;
};

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *body) {
        struct evbuffer *buf = evbuffer_new();

        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; charset=utf-8");
        if (buf)
                (void) evbuffer_add_printf(buf, "%s\n", body);
        evhttp_send_reply(req, code, reason, buf);
        if (buf)
                evbuffer_free(buf);
}

/* Answer @req with the exposition text, @cgroups (moved out of it) in its place, or none. */
static void reply_metrics(MetricsServer *s, struct evhttp_request *req, struct evbuffer *cgroups) {
        struct evbuffer *body = evbuffer_new();

        if (!body) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 60, 1, "Failed to answer a metrics scrape: %m");
                return reply_text(req, HTTP_INTERNAL, "Internal Server Error", "Out of memory");
        }
        if (s->collect)
                s->collect(body, cgroups, s->userdata);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4; charset=utf-8");
        evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "no-store");
        evhttp_send_reply(req, HTTP_OK, "OK", body);
        evbuffer_free(body);
}

/* Answer @req with its own copy of @text (the last one takes @text itself). */
static void reply_batch_one(MetricsServer *s, struct evhttp_request *req, struct evbuffer *text, bool last) {
        struct evbuffer *copy;

        if (last)
                return reply_metrics(s, req, text);
        copy = evbuffer_new();
        if (!copy || evbuffer_add(copy, evbuffer_pullup(text, -1), evbuffer_get_length(text)) < 0) {
                if (copy)
                        evbuffer_free(copy);
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 60, 1, "Failed to answer a metrics scrape: %m");
                return reply_text(req, HTTP_INTERNAL, "Internal Server Error", "Out of memory");
        }
        reply_metrics(s, req, copy);
        evbuffer_free(copy);
}

static void walk_next(MetricsServer *s);

/* On the walk's thread: the per-cgroup families' text. */
static int write_cgroups(struct evbuffer *out, const CgroupScrape *cgroups, void *userdata) {
        metrics_write_cgroups(out, cgroups);
        return 0;
}

static void on_walk_done(const CgroupScrape *cgroups, struct evbuffer *text, int result, void *userdata) {
        MetricsServer *s = userdata;
        struct evbuffer *own = NULL;

        s->walking = NULL; /* freed by the walk after we return */
        cgroup_walk_log(cgroups, result, "metrics");
        if (!text) { /* the thread had no memory for it: write it here */
                text = own = evbuffer_new();
                if (own)
                        metrics_write_cgroups(own, cgroups);
        }
        for (size_t i = 0; i < s->n_batch; i++)
                if (text)
                        reply_batch_one(s, s->batch[i], text, i + 1 == s->n_batch);
                else
                        reply_text(s->batch[i], HTTP_INTERNAL, "Internal Server Error", "Out of memory");
        s->n_batch = 0;
        if (own)
                evbuffer_free(own);
        walk_next(s);
}

/* The scrapes waiting become the batch of a new walk, or are answered without one. */
static void walk_next(MetricsServer *s) {
        CgroupGlobs *g = NULL;
        size_t max = 0;
        int root_fd = -1, v1_root_fd = -1, r;

        if (s->walking || s->n_waiting == 0)
                return;
        memcpy(s->batch, s->waiting, s->n_waiting * sizeof(s->waiting[0]));
        s->n_batch = s->n_waiting;
        s->n_waiting = 0;
        if (s->walk && s->walk(s->userdata, &root_fd, &v1_root_fd, &g, &max)) {
                r = cgroup_walk_start(s->base, root_fd, v1_root_fd, g, max, NULL, write_cgroups, NULL, on_walk_done,
                                      s, &s->walking);
                if (r >= 0)
                        return;
                log_ratelimited(LOG_WARNING, -r, NULL, 60, 1,
                                "Failed to start the cgroup walk for metrics, scraping without it: %m");
        }
        for (size_t i = 0; i < s->n_batch; i++)
                reply_metrics(s, s->batch[i], NULL);
        s->n_batch = 0;
}

static void metrics_handle_request(struct evhttp_request *req, void *userdata) {
        MetricsServer *s = userdata;
        const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
        const char *path = uri ? evhttp_uri_get_path(uri) : NULL;

        if (!path || !streq(path, "/metrics"))
                return reply_text(req, HTTP_NOTFOUND, "Not Found", "Not Found: try /metrics");

        if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
                return reply_text(req, 405, "Method Not Allowed", "Method Not Allowed");
        }

        if (s->n_batch + s->n_waiting >= METRICS_MAX_PENDING_SCRAPES)
                return reply_text(req, HTTP_SERVUNAVAIL, "Service Unavailable",
                                  "Service Unavailable: too many scrapes at once, try again");
        s->waiting[s->n_waiting++] = req;
        walk_next(s);
}

static void metrics_resume_cb(evutil_socket_t fd, short what, void *userdata) {
        MetricsServer *s = userdata;

        (void) evconnlistener_enable(s->listener);
}

static void metrics_accept_error_cb(struct evconnlistener *listener, void *userdata) {
        MetricsServer *s = userdata;
        int err = EVUTIL_SOCKET_ERROR();
        struct timeval tv = { .tv_sec = 1 };

        log_ratelimited(LOG_WARNING, err, NULL, 60, 1,
                        "Failed to accept a metrics connection, pausing the listener for 1s: %m");
        (void) evconnlistener_disable(listener);
        if (event_add(s->resume, &tv) < 0)
                (void) evconnlistener_enable(listener); /* never pause without a way back */
}

int metrics_server_new(struct event_base *base, const char *address, MetricsWalkFn walk,
                       MetricsCollectFn collect, void *userdata, MetricsServer **ret) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_storage ss;
        MetricsServer *s;
        socklen_t len;
        int r, one = 1;

        r = metrics_parse_listen(address, &ss, &len);
        if (r < 0)
                return log_error_errno(r, "Invalid metrics listen address '%s', expected ADDRESS:PORT or [ADDRESS]:PORT.",
                                       strna(address));

        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create metrics socket: %m");
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return log_error_errno(errno, "Failed to set SO_REUSEADDR on metrics socket: %m");
        /* Inherited by accepted sockets: a reply written in several pieces
         * must not wait for a delayed ACK on a kept-alive connection (40 ms
         * per scrape of a 64 KiB body otherwise). */
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
                return log_error_errno(errno, "Failed to set TCP_NODELAY on metrics socket: %m");
        if (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
                return log_error_errno(errno, "Failed to set IPV6_V6ONLY on metrics socket: %m");
        if (bind(fd, (struct sockaddr *) &ss, len) < 0)
                return log_error_errno(errno, "Failed to bind metrics endpoint to %s: %m", address);
        if (listen(fd, METRICS_LISTEN_BACKLOG) < 0)
                return log_error_errno(errno, "Failed to listen on metrics endpoint %s: %m", address);

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_error_errno(ENOMEM, "Failed to allocate metrics server: %m");
        s->base = base;
        s->walk = walk;
        s->collect = collect;
        s->userdata = userdata;
        s->fd = -1;

        s->http = evhttp_new(base);
        s->resume = evtimer_new(base, metrics_resume_cb, s);
        if (!s->http || !s->resume) {
                metrics_server_free(s);
                return log_error_errno(ENOMEM, "Failed to allocate metrics server: %m");
        }

        evhttp_set_timeout(s->http, METRICS_TIMEOUT_SEC);
        evhttp_set_max_headers_size(s->http, METRICS_MAX_HEADERS_BYTES);
        evhttp_set_max_body_size(s->http, METRICS_MAX_BODY_BYTES);
        /* Methods outside this set are refused by libevent with 501 before any
         * callback; the ones inside get a proper 405 from us. */
        evhttp_set_allowed_methods(s->http,
                                   EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                   EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
        evhttp_set_gencb(s->http, metrics_handle_request, s);

        /* Our own listener so accepted sockets get SOCK_CLOEXEC (accept4) and
         * accept errors are handled; evhttp takes the listener over. */
        s->listener = evconnlistener_new(base, NULL, NULL,
                                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
                                         0, fd);
        if (!s->listener) {
                metrics_server_free(s);
                return log_error_errno(ENOMEM, "Failed to set up metrics listener: %m");
        }
        s->fd = TAKE_FD(fd);
        evconnlistener_set_error_cb(s->listener, metrics_accept_error_cb);

        if (!evhttp_bind_listener(s->http, s->listener)) {
                evconnlistener_free(s->listener);
                s->listener = NULL;
                metrics_server_free(s);
                return log_error_errno(ENOMEM, "Failed to attach metrics listener: %m");
        }

        *ret = s;
        return 0;
}

void metrics_server_stop_walk(MetricsServer *s) {
        if (!s)
                return;
        s->walking = cgroup_walk_free(s->walking);
        for (size_t i = 0; i < s->n_batch; i++)
                reply_text(s->batch[i], HTTP_SERVUNAVAIL, "Service Unavailable",
                           "Service Unavailable: the metrics endpoint is restarting, try again");
        for (size_t i = 0; i < s->n_waiting; i++)
                reply_text(s->waiting[i], HTTP_SERVUNAVAIL, "Service Unavailable",
                           "Service Unavailable: the metrics endpoint is restarting, try again");
        s->n_batch = s->n_waiting = 0;
}

MetricsServer *metrics_server_free(MetricsServer *s) {
        if (!s)
                return NULL;
        metrics_server_stop_walk(s);
        event_free_and_null(&s->resume);
        /* Frees the bound listener (closing the socket) and every connection. */
        if (s->http)
                evhttp_free(s->http);
        free(s);
        return NULL;
}
