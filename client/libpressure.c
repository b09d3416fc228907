/* SPDX-License-Identifier: MIT */
/*
 * libpressure: clients, subscriptions and selectors.
 *
 * A client owns an epoll fd (the one fd its user watches), a timerfd in
 * that epoll set that fires when a reconnect is due or buffered events wait
 * to be dispatched, and a list of subscriptions. Each subscription owns
 * one connection carrying one Subscribe stream. Its life:
 *
 *   LIVE     connected, subscribed; events are dispatched to the handler
 *   BACKOFF  the connection is gone; try again at retry_at
 *   PENDING  reconnected and asked again; waiting for "subscribed"
 *   ENDED    removed, failed or unsubscribed; no fd, no timer
 *
 * Handlers may free subscriptions; freeing is deferred while the client
 * dispatches, so no handler pulls the list out from under the loop.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include "config-build.h"
#include "pressure-conn.h"
#include "pressure-event.h"
#include "pressure.h"
#include "util.h"

#define SYSTEM_SOCKET "/run/pressured/io.pressured"
#define USER_SOCKET_SUFFIX "/pressured/io.pressured"
#define BACKOFF_MIN_USEC (100 * USEC_PER_MSEC)
#define BACKOFF_MAX_USEC (1 * USEC_PER_SEC)
#define CALL_TIMEOUT_DEFAULT_USEC (25 * USEC_PER_SEC)

typedef enum SelectorSource {
        SELECTOR_LEVEL,
        SELECTOR_PSI,
        SELECTOR_VMPRESSURE,
        SELECTOR_MEMORY_EVENTS,
        SELECTOR_PROTECTION,
} SelectorSource;

struct pressure_selector {
        char *cgroup;
        SelectorSource source;
        pressure_level level;
        pressure_stall stall;
        uint64_t threshold_us, window_us;
        pressure_vmpressure_mode mode;
        uint64_t min_interval_ms;
};

typedef enum SubscriptionState {
        SUBSCRIPTION_LIVE,
        SUBSCRIPTION_BACKOFF,
        SUBSCRIPTION_PENDING,
        SUBSCRIPTION_ENDED,
} SubscriptionState;

struct pressure_subscription {
        pressure_client *client;
        pressure_subscription *next;
        char *request;
        pressure_event_handler handler;
        void *userdata;
        SubscriptionState state;
        int fd;
        ConnBuffer buffer;
        /* The answer to the Subscribe call, not yet dispatched. */
        json_t *first;
        /* The connection failed with this error; handled after buffered messages. */
        int broken;
        /* A subscribed event after this one follows a lost connection. */
        bool reconnecting;
        /* The daemon has confirmed this subscription once; until then, failures end it. */
        bool confirmed;
        bool freed;
        uint64_t backoff_usec;
        uint64_t retry_at;
};

struct pressure_client {
        char *socket_path;
        int epoll_fd;
        int timer_fd;
        bool reconnect;
        bool wait_for_daemon;
        bool dispatching;
        uint64_t call_timeout_usec;
        pressure_subscription *subscriptions;
        char *error_name;
        char *error_params;
};

static void json_unrefp(json_t **p) {
        if (*p)
                json_decref(*p);
}
#define _cleanup_json_ _cleanup_(json_unrefp)

/* ---- Selectors -------------------------------------------------------------- */

/* Replace *@dst with a copy of @src (NULL allowed); on -ENOMEM *@dst is kept. */
static int set_string(char **dst, const char *src) {
        char *copy = NULL;

        if (src) {
                copy = strdup(src);
                if (!copy)
                        return -ENOMEM;
        }
        free(*dst);
        *dst = copy;
        return 0;
}

/**
 * pressure_selector_new - a request for level "low" on the whole system.
 */
_public_ int pressure_selector_new(pressure_selector **ret) {
        pressure_selector *s;

        if (!ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->source = SELECTOR_LEVEL;
        s->level = PRESSURE_LEVEL_LOW;
        *ret = s;
        return 0;
}

/**
 * pressure_selector_free - free a selector; NULL is fine.
 */
_public_ pressure_selector *pressure_selector_free(pressure_selector *s) {
        if (s) {
                free(s->cgroup);
                free(s);
        }
        return NULL;
}

/**
 * pressure_selector_set_cgroup - the cgroup to watch; NULL for the whole system.
 */
_public_ int pressure_selector_set_cgroup(pressure_selector *s, const char *cgroup) {
        if (!s)
                return -EINVAL;
        return set_string(&s->cgroup, cgroup);
}

static bool level_valid(pressure_level level) {
        return level >= PRESSURE_LEVEL_LOW && level <= PRESSURE_LEVEL_CRITICAL;
}

/**
 * pressure_selector_set_level - select the portable level source.
 */
_public_ int pressure_selector_set_level(pressure_selector *s, pressure_level level) {
        if (!s || !level_valid(level))
                return -EINVAL;
        s->source = SELECTOR_LEVEL;
        s->level = level;
        return 0;
}

/**
 * pressure_selector_set_psi - select an explicit PSI trigger.
 */
_public_ int pressure_selector_set_psi(pressure_selector *s, pressure_stall stall,
                                       uint64_t threshold_us, uint64_t window_us) {
        if (!s || !stall_to_string(stall) || threshold_us > INT64_MAX || window_us > INT64_MAX)
                return -EINVAL;
        s->source = SELECTOR_PSI;
        s->stall = stall;
        s->threshold_us = threshold_us;
        s->window_us = window_us;
        return 0;
}

/**
 * pressure_selector_set_vmpressure - select a cgroup v1 vmpressure registration.
 */
_public_ int pressure_selector_set_vmpressure(pressure_selector *s, pressure_level level,
                                              pressure_vmpressure_mode mode) {
        if (!s || !level_valid(level) ||
            (mode != PRESSURE_VMPRESSURE_MODE_UNSET && !vmpressure_mode_to_string(mode)))
                return -EINVAL;
        s->source = SELECTOR_VMPRESSURE;
        s->level = level;
        s->mode = mode;
        return 0;
}

/**
 * pressure_selector_set_memory_events - select memory.events changes.
 */
_public_ int pressure_selector_set_memory_events(pressure_selector *s) {
        if (!s)
                return -EINVAL;
        s->source = SELECTOR_MEMORY_EVENTS;
        return 0;
}

/**
 * pressure_selector_set_protection - select effective-protection changes.
 */
_public_ int pressure_selector_set_protection(pressure_selector *s) {
        if (!s)
                return -EINVAL;
        s->source = SELECTOR_PROTECTION;
        return 0;
}

/**
 * pressure_selector_set_min_interval_ms - coalesce events; 0 turns it off.
 */
_public_ int pressure_selector_set_min_interval_ms(pressure_selector *s, uint64_t interval_ms) {
        if (!s || interval_ms > INT64_MAX)
                return -EINVAL;
        s->min_interval_ms = interval_ms;
        return 0;
}

/* The Subscribe call for @s, as message text. */
static int selector_to_request(const pressure_selector *s, char **ret) {
        _cleanup_json_ json_t *params = json_object(), *msg = NULL;
        json_t *x = NULL;
        char *text;

        if (!params)
                return -ENOMEM;
        if (s->cgroup && json_object_set_new(params, "cgroup", json_string(s->cgroup)) < 0)
                return -EINVAL;

        switch (s->source) {
        case SELECTOR_LEVEL:
                x = json_string(pressure_level_to_string(s->level));
                if (json_object_set_new(params, "level", x) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_PSI:
                x = json_pack("{s:s, s:I, s:I}", "stall", stall_to_string(s->stall),
                              "threshold_us", (json_int_t) s->threshold_us,
                              "window_us", (json_int_t) s->window_us);
                if (json_object_set_new(params, "psi", x) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_VMPRESSURE:
                x = json_pack("{s:s}", "level", pressure_level_to_string(s->level));
                if (x && s->mode != PRESSURE_VMPRESSURE_MODE_UNSET &&
                    json_object_set_new(x, "mode", json_string(vmpressure_mode_to_string(s->mode))) < 0) {
                        json_decref(x);
                        return -ENOMEM;
                }
                if (json_object_set_new(params, "vmpressure", x) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_MEMORY_EVENTS:
                if (json_object_set_new(params, "memory_events", json_true()) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_PROTECTION:
                if (json_object_set_new(params, "protection", json_true()) < 0)
                        return -ENOMEM;
                break;
        }
        if (s->min_interval_ms > 0 &&
            json_object_set_new(params, "min_interval_ms", json_integer((json_int_t) s->min_interval_ms)) < 0)
                return -ENOMEM;

        msg = json_pack("{s:s, s:O, s:b}", "method", "io.pressured.Subscribe", "parameters", params, "more", 1);
        if (!msg)
                return -ENOMEM;
        text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

/* ---- Client basics ---------------------------------------------------------- */

static void client_clear_error(pressure_client *c) {
        free(c->error_name);
        free(c->error_params);
        c->error_name = c->error_params = NULL;
}

/*
 * The error of @reply: its errno (0 if @reply is no error), and its name and
 * parameters as new strings in *ret_name and *ret_params (left NULL when
 * the reply is no error or malformed).
 */
static int reply_error(json_t *reply, char **ret_name, char **ret_params) {
        json_t *name = json_object_get(reply, "error"), *params;
        _cleanup_free_ char *n = NULL, *p = NULL;

        if (!name)
                return 0;
        if (!json_is_string(name))
                return -EBADMSG;
        n = strdup(json_string_value(name));
        params = json_object_get(reply, "parameters");
        p = params ? json_dumps(params, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("{}");
        if (!n || !p)
                return -ENOMEM;
        *ret_name = TAKE_PTR(n);
        *ret_params = TAKE_PTR(p);
        return conn_error_to_errno(json_string_value(name));
}

/* Remember the error of @reply as the client's last error and return its errno, or 0 if it is no error. */
static int client_take_error(pressure_client *c, json_t *reply) {
        if (!json_object_get(reply, "error"))
                return 0;
        client_clear_error(c);
        return reply_error(reply, &c->error_name, &c->error_params);
}

/**
 * pressure_client_new - a client for $PRESSURED_SOCKET or the system socket.
 */
_public_ int pressure_client_new(pressure_client **ret) {
        pressure_client *c;
        const char *path;

        if (!ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->epoll_fd = c->timer_fd = -1;
        c->reconnect = true;
        c->call_timeout_usec = CALL_TIMEOUT_DEFAULT_USEC;

        path = secure_getenv("PRESSURED_SOCKET");
        c->socket_path = strdup(path && *path ? path : SYSTEM_SOCKET);
        if (!c->socket_path)
                goto fail_nomem;

        c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (c->epoll_fd < 0)
                goto fail;
        c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (c->timer_fd < 0)
                goto fail;
        if (epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->timer_fd,
                      &(struct epoll_event) { .events = EPOLLIN, .data.ptr = NULL }) < 0)
                goto fail;

        *ret = c;
        return 0;

fail_nomem:
        errno = ENOMEM;
fail:;
        int r = -errno;
        pressure_client_free(c);
        return r;
}

static void subscription_close(pressure_subscription *s) {
        if (s->fd >= 0) {
                (void) epoll_ctl(s->client->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
                s->fd = safe_close(s->fd);
        }
        conn_buffer_done(&s->buffer);
        s->broken = 0;
}

static void subscription_destroy(pressure_subscription *s) {
        subscription_close(s);
        if (s->first)
                json_decref(s->first);
        free(s->request);
        free(s);
}

/**
 * pressure_client_free - close every subscription and free the client.
 */
_public_ pressure_client *pressure_client_free(pressure_client *c) {
        if (!c)
                return NULL;
        while (c->subscriptions) {
                pressure_subscription *s = c->subscriptions;
                c->subscriptions = s->next;
                subscription_destroy(s);
        }
        safe_close(c->timer_fd);
        safe_close(c->epoll_fd);
        client_clear_error(c);
        free(c->socket_path);
        free(c);
        return NULL;
}

/**
 * pressure_client_set_socket - connect to @path from now on.
 */
_public_ int pressure_client_set_socket(pressure_client *c, const char *path) {
        if (!c || !path || !*path)
                return -EINVAL;
        return set_string(&c->socket_path, path);
}

/**
 * pressure_client_set_user - connect to the per-user daemon.
 */
_public_ int pressure_client_set_user(pressure_client *c) {
        const char *dir;
        char *p;

        if (!c)
                return -EINVAL;
        dir = secure_getenv("XDG_RUNTIME_DIR");
        if (!dir || dir[0] != '/')
                return -ENXIO;
        if (asprintf(&p, "%s%s", dir, USER_SOCKET_SUFFIX) < 0)
                return -ENOMEM;
        free(c->socket_path);
        c->socket_path = p;
        return 0;
}

/**
 * pressure_client_get_socket - the socket path in use.
 */
_public_ const char *pressure_client_get_socket(pressure_client *c) {
        return c ? c->socket_path : NULL;
}

/**
 * pressure_client_set_reconnect - turn reconnecting on or off.
 */
_public_ int pressure_client_set_reconnect(pressure_client *c, int enable) {
        if (!c)
                return -EINVAL;
        c->reconnect = enable;
        return 0;
}

/**
 * pressure_client_set_wait_for_daemon - let subscribe() wait for an absent daemon.
 */
_public_ int pressure_client_set_wait_for_daemon(pressure_client *c, int enable) {
        if (!c)
                return -EINVAL;
        c->wait_for_daemon = enable;
        return 0;
}

/**
 * pressure_client_set_call_timeout - timeout of the blocking calls.
 */
_public_ int pressure_client_set_call_timeout(pressure_client *c, uint64_t timeout_usec) {
        if (!c || timeout_usec == 0)
                return -EINVAL;
        c->call_timeout_usec = timeout_usec;
        return 0;
}

/**
 * pressure_client_last_error_name - the varlink name of the last daemon error.
 */
_public_ const char *pressure_client_last_error_name(pressure_client *c) {
        return c ? c->error_name : NULL;
}

/**
 * pressure_client_last_error_params - the last daemon error's parameters as JSON.
 */
_public_ const char *pressure_client_last_error_params(pressure_client *c) {
        return c ? c->error_params : NULL;
}

/**
 * pressure_version - the library version.
 */
_public_ const char *pressure_version(void) {
        return PACKAGE_VERSION;
}

static uint64_t call_deadline(pressure_client *c) {
        return now_usec(CLOCK_MONOTONIC) + c->call_timeout_usec;
}

/* ---- Timer ---------------------------------------------------------------------- */

/**
 * pressure_client_get_timeout - microseconds until process() is due.
 */
_public_ int pressure_client_get_timeout(pressure_client *c, uint64_t *ret_usec) {
        uint64_t now, next = PRESSURE_TIMEOUT_INFINITE;

        if (!c || !ret_usec)
                return -EINVAL;
        now = now_usec(CLOCK_MONOTONIC);
        for (pressure_subscription *s = c->subscriptions; s; s = s->next) {
                if (s->freed || s->state == SUBSCRIPTION_ENDED)
                        continue;
                if (s->first || conn_has_message(&s->buffer) || s->broken) {
                        next = 0;
                        break;
                }
                if (s->state == SUBSCRIPTION_BACKOFF && s->retry_at < next)
                        next = s->retry_at;
        }
        if (next == PRESSURE_TIMEOUT_INFINITE)
                *ret_usec = PRESSURE_TIMEOUT_INFINITE;
        else
                *ret_usec = next > now ? next - now : 0;
        return 0;
}

/* Arm the timerfd so that the epoll fd becomes readable when process() is due. */
static void client_update_timer(pressure_client *c) {
        struct itimerspec its = {};
        uint64_t usec = PRESSURE_TIMEOUT_INFINITE;

        (void) pressure_client_get_timeout(c, &usec);
        if (usec != PRESSURE_TIMEOUT_INFINITE) {
                if (usec == 0)
                        usec = 1; /* an all-zero it_value would disarm */
                its.it_value.tv_sec = (time_t) (usec / USEC_PER_SEC);
                its.it_value.tv_nsec = (long) ((usec % USEC_PER_SEC) * NSEC_PER_USEC);
        }
        (void) timerfd_settime(c->timer_fd, 0, &its, NULL);
}

/**
 * pressure_client_get_fd - the fd to watch.
 */
_public_ int pressure_client_get_fd(pressure_client *c) {
        return c ? c->epoll_fd : -EINVAL;
}

/**
 * pressure_client_get_events - the poll events to watch the fd for.
 */
_public_ int pressure_client_get_events(pressure_client *c) {
        return c ? POLLIN : -EINVAL;
}

/* ---- Subscriptions --------------------------------------------------------------- */

static int subscription_watch(pressure_subscription *s) {
        if (epoll_ctl(s->client->epoll_fd, EPOLL_CTL_ADD, s->fd,
                      &(struct epoll_event) { .events = EPOLLIN, .data.ptr = s }) < 0)
                return -errno;
        return 0;
}

static void subscription_schedule_retry(pressure_subscription *s, bool immediately) {
        subscription_close(s);
        s->state = SUBSCRIPTION_BACKOFF;
        if (immediately) {
                s->retry_at = now_usec(CLOCK_MONOTONIC);
                s->backoff_usec = BACKOFF_MIN_USEC;
        } else {
                s->retry_at = now_usec(CLOCK_MONOTONIC) + s->backoff_usec;
                s->backoff_usec = s->backoff_usec * 2 > BACKOFF_MAX_USEC ? BACKOFF_MAX_USEC : s->backoff_usec * 2;
        }
}

/* Connect and send the Subscribe call without waiting for the answer. */
static int subscription_start(pressure_subscription *s) {
        _cleanup_close_ int fd = -1;
        int r;

        r = conn_connect(s->client->socket_path, &fd);
        if (r < 0)
                return r;
        /* A fresh socket's buffer takes a small request whole; if not, retry
         * later. A daemon that refused us may have answered and closed before
         * the request went out: its answer is read like any other. */
        r = conn_send(fd, s->request, 0);
        if (r < 0 && !conn_peer_closed(r))
                return r;
        s->fd = TAKE_FD(fd);
        r = subscription_watch(s);
        if (r < 0) {
                s->fd = safe_close(s->fd);
                return r;
        }
        s->state = SUBSCRIPTION_PENDING;
        return 0;
}

/* A new subscription of @c for @selector, not yet linked into the client; -EINVAL for a missing argument. */
static int subscription_new(pressure_client *c, const pressure_selector *selector,
                            pressure_event_handler handler, void *userdata, pressure_subscription **ret) {
        pressure_subscription *s;
        int r;

        if (!c || !selector || !handler)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->client = c;
        s->fd = -1;
        s->handler = handler;
        s->userdata = userdata;
        s->backoff_usec = BACKOFF_MIN_USEC;
        r = selector_to_request(selector, &s->request);
        if (r < 0) {
                subscription_destroy(s);
                return r;
        }
        *ret = s;
        return 0;
}

static void client_link(pressure_client *c, pressure_subscription *s) {
        s->next = c->subscriptions;
        c->subscriptions = s;
        client_update_timer(c);
}

/**
 * pressure_client_subscribe_async - subscribe; the answer comes to the handler.
 */
_public_ int pressure_client_subscribe_async(pressure_client *c, const pressure_selector *selector,
                                             pressure_event_handler handler, void *userdata,
                                             pressure_subscription **ret) {
        pressure_subscription *s;
        int r;

        r = subscription_new(c, selector, handler, userdata, &s);
        if (r < 0)
                return r;

        r = subscription_start(s);
        if (r < 0) {
                if (c->wait_for_daemon && c->reconnect && conn_is_disconnect(r))
                        subscription_schedule_retry(s, false);
                else {
                        /* Reported to the handler by the next process(), like a daemon error. */
                        s->state = SUBSCRIPTION_PENDING;
                        s->broken = r;
                }
        }
        client_link(c, s);
        if (ret)
                *ret = s;
        return 0;
}

/**
 * pressure_client_subscribe - subscribe and wait for the daemon to confirm.
 */
_public_ int pressure_client_subscribe(pressure_client *c, const pressure_selector *selector,
                                       pressure_event_handler handler, void *userdata,
                                       pressure_subscription **ret) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_close_ int fd = -1;
        pressure_subscription *s;
        uint64_t deadline;
        json_t *params;
        int r;

        r = subscription_new(c, selector, handler, userdata, &s);
        if (r < 0)
                return r;

        client_clear_error(c);
        deadline = call_deadline(c);
        r = conn_connect(c->socket_path, &fd);
        if (r >= 0)
                r = conn_send_receive(fd, s->request, deadline, &s->buffer, &reply);
        if (r < 0) {
                if (!c->wait_for_daemon || !c->reconnect || !conn_is_disconnect(r))
                        goto fail;
                /* The daemon is not there yet: subscribe when it appears. */
                subscription_schedule_retry(s, false);
        } else {
                r = client_take_error(c, reply);
                if (r < 0)
                        goto fail;
                params = json_object_get(reply, "parameters");
                if (!json_is_object(params) || !json_is_object(json_object_get(params, "event"))) {
                        r = -EBADMSG;
                        goto fail;
                }
                /* process() hands the answer to the handler, before anything read after it. */
                s->first = TAKE_PTR(reply);
                s->fd = TAKE_FD(fd);
                r = subscription_watch(s);
                if (r < 0)
                        goto fail;
                s->state = SUBSCRIPTION_PENDING;
        }

        client_link(c, s);
        if (ret)
                *ret = s;
        return 0;

fail:
        subscription_destroy(s);
        return r;
}

static void client_unlink(pressure_client *c, pressure_subscription *s) {
        for (pressure_subscription **p = &c->subscriptions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        return;
                }
}

/**
 * pressure_subscription_free - unsubscribe and free; NULL is fine.
 */
_public_ pressure_subscription *pressure_subscription_free(pressure_subscription *s) {
        pressure_client *c;

        if (!s || s->freed)
                return NULL;
        c = s->client;
        subscription_close(s);
        s->state = SUBSCRIPTION_ENDED;
        if (c->dispatching) {
                s->freed = true; /* unlinked when the dispatch loop is done */
                return NULL;
        }
        client_unlink(c, s);
        subscription_destroy(s);
        client_update_timer(c);
        return NULL;
}

/**
 * pressure_subscription_get_client - the owning client.
 */
_public_ pressure_client *pressure_subscription_get_client(pressure_subscription *s) {
        return s ? s->client : NULL;
}

/**
 * pressure_subscription_get_userdata - the handler's userdata.
 */
_public_ void *pressure_subscription_get_userdata(pressure_subscription *s) {
        return s ? s->userdata : NULL;
}

/**
 * pressure_subscription_is_active - 1 until the subscription has ended.
 */
_public_ int pressure_subscription_is_active(pressure_subscription *s) {
        return s && !s->freed && s->state != SUBSCRIPTION_ENDED;
}

/**
 * pressure_client_get_n_active - subscriptions that have not ended.
 */
_public_ unsigned pressure_client_get_n_active(pressure_client *c) {
        unsigned n = 0;

        if (!c)
                return 0;
        for (pressure_subscription *s = c->subscriptions; s; s = s->next)
                n += (unsigned) pressure_subscription_is_active(s);
        return n;
}

/* ---- Dispatching ------------------------------------------------------------------- */

static int subscription_emit(pressure_subscription *s, const pressure_event *e) {
        return s->handler(s, e, s->userdata);
}

/* End @s with @error and, if the daemon sent one, its error @name and @params; tell the handler. */
static int subscription_fail_with(pressure_subscription *s, int error, const char *name, const char *params) {
        pressure_event e = { .kind = PRESSURE_EVENT_ERROR, .cgroup = "/", .error = error,
                             .error_name = name, .error_parameters = params };

        subscription_close(s);
        s->state = SUBSCRIPTION_ENDED;
        return subscription_emit(s, &e);
}

static int subscription_fail(pressure_subscription *s, int error) {
        return subscription_fail_with(s, error, NULL, NULL);
}

/* Hand one message of @s's stream to its handler. */
static int subscription_handle(pressure_subscription *s, json_t *msg) {
        _cleanup_free_ char *text = NULL, *error_name = NULL, *error_params = NULL;
        pressure_event e;
        json_t *params, *event, *cont;
        bool last;
        int r;

        /* The error belongs to this subscription; the client's last error stays the caller's. */
        r = reply_error(msg, &error_name, &error_params);
        if (r < 0)
                return subscription_fail_with(s, r, error_name, error_params);

        params = json_object_get(msg, "parameters");
        event = json_object_get(params, "event");
        cont = json_object_get(msg, "continues");
        last = !json_is_true(cont);
        if (!event || event_parse(event, &e) < 0)
                return subscription_fail(s, -EBADMSG);
        if (s->state == SUBSCRIPTION_PENDING) {
                if (e.kind != PRESSURE_EVENT_SUBSCRIBED)
                        return subscription_fail(s, -EBADMSG);
                s->state = SUBSCRIPTION_LIVE;
                s->confirmed = true;
                s->backoff_usec = BACKOFF_MIN_USEC;
                if (s->reconnecting) {
                        pressure_event rc = { .kind = PRESSURE_EVENT_RECONNECTED, .cgroup = e.cgroup };

                        s->reconnecting = false;
                        r = subscription_emit(s, &rc);
                        if (r < 0 || s->freed)
                                return r;
                }
        }

        text = json_dumps(event, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        e.json = text;
        if (last) {
                /* The stream is over (removed): no reconnect. */
                subscription_close(s);
                s->state = SUBSCRIPTION_ENDED;
        }
        return subscription_emit(s, &e);
}

/* The connection of @s is gone: reconnect, or end it. */
static int subscription_lost(pressure_subscription *s, int error) {
        pressure_client *c = s->client;

        if (!c->reconnect)
                return subscription_fail(s, error);
        /* Never confirmed (subscribe_async()): an absent daemon is waited for only if asked to. */
        if (!s->confirmed && !(c->wait_for_daemon && conn_is_disconnect(error)))
                return subscription_fail(s, error);
        if (s->state == SUBSCRIPTION_LIVE)
                s->reconnecting = true;
        /* The first retry after a live connection drops is immediate (socket activation). */
        subscription_schedule_retry(s, s->state == SUBSCRIPTION_LIVE);
        return 0;
}

static int subscription_dispatch(pressure_subscription *s) {
        int done = 0;

        while (!s->freed && s->state != SUBSCRIPTION_ENDED && s->state != SUBSCRIPTION_BACKOFF) {
                _cleanup_json_ json_t *msg = TAKE_PTR(s->first);
                int r = msg ? 1 : conn_next(&s->buffer, &msg);
                if (r < 0) {
                        r = subscription_fail(s, r);
                        return r < 0 ? r : 1;
                }
                if (r == 0)
                        break;
                done = 1;
                r = subscription_handle(s, msg);
                if (r < 0)
                        return r;
        }
        if (!s->freed && s->broken && s->state != SUBSCRIPTION_ENDED && s->state != SUBSCRIPTION_BACKOFF) {
                int r = subscription_lost(s, s->broken);
                if (r < 0)
                        return r;
                done = 1;
        }
        return done;
}

static int client_process_inner(pressure_client *c) {
        struct epoll_event events[16];
        uint64_t now, expirations;
        int n, r, done = 0;

        (void) !read(c->timer_fd, &expirations, sizeof(expirations));

        /* Read what the sockets have; react to it below, in list order. */
        n = epoll_wait(c->epoll_fd, events, (int) ELEMENTSOF(events), 0);
        if (n < 0 && errno != EINTR)
                return -errno;
        for (int i = 0; i < n; i++) {
                pressure_subscription *s = events[i].data.ptr;

                if (!s || s->fd < 0 || s->broken)
                        continue;
                r = conn_fill(s->fd, &s->buffer);
                if (r < 0)
                        s->broken = r;
                done = 1;
        }

        for (pressure_subscription *s = c->subscriptions; s; s = s->next) {
                if (s->freed)
                        continue;
                r = subscription_dispatch(s);
                if (r < 0)
                        return r;
                done |= r;
        }

        now = now_usec(CLOCK_MONOTONIC);
        for (pressure_subscription *s = c->subscriptions; s; s = s->next) {
                if (s->freed || s->state != SUBSCRIPTION_BACKOFF || s->retry_at > now)
                        continue;
                done = 1;
                r = subscription_start(s);
                if (r >= 0)
                        continue;
                if (conn_is_disconnect(r)) {
                        subscription_schedule_retry(s, false);
                        continue;
                }
                r = subscription_fail(s, r);
                if (r < 0)
                        return r;
        }
        return done;
}

/**
 * pressure_client_process - do what is ready, without blocking.
 */
_public_ int pressure_client_process(pressure_client *c) {
        pressure_subscription **p;
        int r;

        if (!c)
                return -EINVAL;
        if (c->dispatching)
                return -EBUSY;

        c->dispatching = true;
        r = client_process_inner(c);
        c->dispatching = false;

        p = &c->subscriptions;
        while (*p) {
                pressure_subscription *s = *p;
                if (s->freed) {
                        *p = s->next;
                        subscription_destroy(s);
                } else
                        p = &s->next;
        }
        client_update_timer(c);
        return r;
}

/**
 * pressure_client_wait - block up to @timeout_usec, then process.
 */
_public_ int pressure_client_wait(pressure_client *c, uint64_t timeout_usec) {
        uint64_t due;
        int r, timeout_ms;

        if (!c)
                return -EINVAL;
        r = pressure_client_get_timeout(c, &due);
        if (r < 0)
                return r;
        if (due < timeout_usec)
                timeout_usec = due;

        if (timeout_usec == PRESSURE_TIMEOUT_INFINITE)
                timeout_ms = -1;
        else if (timeout_usec / USEC_PER_MSEC >= INT32_MAX)
                timeout_ms = INT32_MAX;
        else
                timeout_ms = (int) ((timeout_usec + USEC_PER_MSEC - 1) / USEC_PER_MSEC);

        struct pollfd p = { .fd = c->epoll_fd, .events = POLLIN };
        r = poll(&p, 1, timeout_ms);
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        return pressure_client_process(c);
}

/* ---- Simple calls -------------------------------------------------------------------- */

/*
 * One call on its own connection; *ret_params gets the reply's parameters.
 * A daemon error is the client's last error, and is also copied to
 * *ret_error_name and *ret_error_params if given.
 */
static int client_call_json_full(pressure_client *c, const char *method, json_t *params, json_t **ret_params,
                                 char **ret_error_name, char **ret_error_params) {
        _cleanup_json_ json_t *msg = NULL, *reply = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        ConnBuffer buffer = {};
        uint64_t deadline;
        json_t *p;
        int r;

        client_clear_error(c);
        msg = json_pack("{s:s}", "method", method);
        if (!msg)
                return -ENOMEM;
        if (params && json_object_set(msg, "parameters", params) < 0)
                return -ENOMEM;
        text = json_dumps(msg, JSON_COMPACT);
        if (!text)
                return -ENOMEM;

        deadline = call_deadline(c);
        r = conn_connect(c->socket_path, &fd);
        if (r < 0)
                return r;
        r = conn_send_receive(fd, text, deadline, &buffer, &reply);
        conn_buffer_done(&buffer);
        if (r < 0)
                return r;
        r = client_take_error(c, reply);
        if (r < 0) {
                if (ret_error_name && c->error_name && !(*ret_error_name = strdup(c->error_name)))
                        return -ENOMEM;
                if (ret_error_params && c->error_params && !(*ret_error_params = strdup(c->error_params)))
                        return -ENOMEM;
                return r;
        }
        p = json_object_get(reply, "parameters");
        if (p && !json_is_object(p))
                return -EBADMSG;
        if (ret_params)
                *ret_params = p ? json_incref(p) : json_object();
        return 0;
}

static int client_call_json(pressure_client *c, const char *method, json_t *params, json_t **ret_params) {
        return client_call_json_full(c, method, params, ret_params, NULL, NULL);
}

static int dump_params(json_t *params, char **ret_json) {
        char *text = json_dumps(params, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        *ret_json = text;
        return 0;
}

/**
 * pressure_client_call_full - call any method; the reply parameters, or the
 * daemon's error, as JSON text.
 */
_public_ int pressure_client_call_full(pressure_client *c, const char *method, const char *params_json,
                                       char **ret_json, char **ret_error_name, char **ret_error_params) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        int r;

        if (ret_error_name)
                *ret_error_name = NULL;
        if (ret_error_params)
                *ret_error_params = NULL;
        if (!c || !method)
                return -EINVAL;
        if (params_json) {
                params = json_loads(params_json, 0, NULL);
                if (!json_is_object(params))
                        return -EINVAL;
        }
        r = client_call_json_full(c, method, params, &reply, ret_error_name, ret_error_params);
        if (r < 0)
                return r;
        return ret_json ? dump_params(reply, ret_json) : 0;
}

/**
 * pressure_client_call - call any method; the reply parameters as JSON text.
 */
_public_ int pressure_client_call(pressure_client *c, const char *method, const char *params_json,
                                  char **ret_json) {
        return pressure_client_call_full(c, method, params_json, ret_json, NULL, NULL);
}

/**
 * pressure_client_get_status - GetStatus() as JSON text.
 */
_public_ int pressure_client_get_status(pressure_client *c, char **ret_json) {
        if (!ret_json)
                return -EINVAL;
        return pressure_client_call(c, "io.pressured.GetStatus", NULL, ret_json);
}

/**
 * pressure_client_get_protection - GetProtection(cgroup) as JSON text.
 */
_public_ int pressure_client_get_protection(pressure_client *c, const char *cgroup, char **ret_json) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        int r;

        if (!c || !ret_json)
                return -EINVAL;
        params = cgroup ? json_pack("{s:s}", "cgroup", cgroup) : json_object();
        if (!params)
                return cgroup ? -EINVAL : -ENOMEM;
        r = client_call_json(c, "io.pressured.GetProtection", params, &reply);
        if (r < 0)
                return r;
        return dump_params(reply, ret_json);
}

/**
 * pressure_client_inject - Inject(cgroup, level).
 */
_public_ int pressure_client_inject(pressure_client *c, const char *cgroup, pressure_level level,
                                    uint64_t *ret_delivered) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        json_t *d;
        int r;

        if (!c || !level_valid(level))
                return -EINVAL;
        params = json_pack("{s:s}", "level", pressure_level_to_string(level));
        if (!params)
                return -ENOMEM;
        if (cgroup && json_object_set_new(params, "cgroup", json_string(cgroup)) < 0)
                return -EINVAL;
        r = client_call_json(c, "io.pressured.Inject", params, &reply);
        if (r < 0)
                return r;
        d = json_object_get(reply, "delivered");
        if (!json_is_integer(d) || json_integer_value(d) < 0)
                return -EBADMSG;
        if (ret_delivered)
                *ret_delivered = (uint64_t) json_integer_value(d);
        return 0;
}

/**
 * pressure_client_reload - Reload().
 */
_public_ int pressure_client_reload(pressure_client *c) {
        if (!c)
                return -EINVAL;
        return client_call_json(c, "io.pressured.Reload", NULL, NULL);
}

/* ---- Cleanup helpers ------------------------------------------------------------------- */

/**
 * pressure_client_freep - pressure_client_free(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_client_freep(pressure_client **p) {
        if (p)
                *p = pressure_client_free(*p);
}

/**
 * pressure_selector_freep - pressure_selector_free(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_selector_freep(pressure_selector **p) {
        if (p)
                *p = pressure_selector_free(*p);
}

/**
 * pressure_subscription_freep - pressure_subscription_free(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_subscription_freep(pressure_subscription **p) {
        if (p)
                *p = pressure_subscription_free(*p);
}
