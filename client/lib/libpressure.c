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
 * An asynchronous call is a subscription that is not a stream: one
 * connection, one request, one answer to its callback, then it ends; it
 * never reconnects and fails with -ETIMEDOUT at its deadline.
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
#include "cgroup.h"
#include "pressure-conn.h"
#include "pressure-event.h"
#include "pressure.h"
#include "selector.h"
#include "util.h"

#define SYSTEM_SOCKET "/run/pressured/io.pressured"
#define USER_SOCKET_SUFFIX "/pressured/io.pressured"
#define BACKOFF_MIN_USEC (100 * USEC_PER_MSEC)
#define BACKOFF_MAX_USEC (1 * USEC_PER_SEC)
#define CALL_TIMEOUT_DEFAULT_USEC (25 * USEC_PER_SEC)

struct pressure_selector {
        char *cgroup;
        Selector source;
        pressure_level level;
        pressure_stall stall;
        uint64_t threshold_us, window_us;
        pressure_vmpressure_mode mode;
        pressure_resource resource;
        uint64_t min_interval_ms;
};

typedef enum SubscriptionState {
        SUBSCRIPTION_LIVE,
        SUBSCRIPTION_BACKOFF,
        SUBSCRIPTION_PENDING,
        SUBSCRIPTION_ENDED,
} SubscriptionState;

/* Hands the answer of an asynchronous call to its callback: @params on success, else @error. */
typedef int (*CallComplete)(pressure_call *call, json_t *params, const pressure_error *error);

struct pressure_subscription {
        pressure_client *client;
        pressure_subscription *next;
        char *request;
        /* A level stream: its first event is a level event, not a subscribed one. */
        bool levels;
        pressure_event_handler handler;
        void *userdata;
        pressure_destroy_callback destroy;
        /* An asynchronous call: its completion and its typed callback. */
        bool is_call;
        CallComplete complete;
        union {
                pressure_status_handler status;
                pressure_protection_handler protection;
                pressure_headroom_handler headroom;
                pressure_inject_handler inject;
                pressure_reply_handler reply;
        } callback;
        uint64_t deadline;
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

/* An asynchronous call is a subscription with is_call set; the public type keeps them apart. */
struct pressure_call {
        pressure_subscription s;
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
};

static void json_unrefp(json_t **p) {
        if (*p)
                json_decref(*p);
}
#define _cleanup_json_ _cleanup_(json_unrefp)

/* ---- Selectors -------------------------------------------------------------- */

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
        s->resource = PRESSURE_RESOURCE_MEMORY;
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
        if (!s || cgroup_path_check(cgroup) != CGROUP_PATH_OK)
                return -EINVAL;
        return free_and_strdup(&s->cgroup, cgroup);
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
        if (!s || !stall_name(stall) || threshold_us > INT64_MAX || window_us > INT64_MAX)
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
            (mode != PRESSURE_VMPRESSURE_MODE_UNSET && !vmpressure_mode_name(mode)))
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
 * pressure_selector_set_kills - select kills in the cgroup and below it.
 */
_public_ int pressure_selector_set_kills(pressure_selector *s) {
        if (!s)
                return -EINVAL;
        s->source = SELECTOR_KILLS;
        return 0;
}

/**
 * pressure_selector_set_levels - select the cgroup's level stream.
 */
_public_ int pressure_selector_set_levels(pressure_selector *s) {
        if (!s)
                return -EINVAL;
        s->source = SELECTOR_LEVELS;
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

/**
 * pressure_selector_set_resource - the resource a level or psi selector watches.
 */
_public_ int pressure_selector_set_resource(pressure_selector *s, pressure_resource resource) {
        if (!s || resource == PRESSURE_RESOURCE_NONE || !pressure_resource_to_string(resource))
                return -EINVAL;
        s->resource = resource;
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
                x = json_pack("{s:s, s:I, s:I}", "stall", stall_name(s->stall),
                              "threshold_us", (json_int_t) s->threshold_us,
                              "window_us", (json_int_t) s->window_us);
                if (json_object_set_new(params, "psi", x) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_VMPRESSURE:
                x = json_pack("{s:s}", "level", pressure_level_to_string(s->level));
                if (x && s->mode != PRESSURE_VMPRESSURE_MODE_UNSET &&
                    json_object_set_new(x, "mode", json_string(vmpressure_mode_name(s->mode))) < 0) {
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
        case SELECTOR_KILLS:
                if (json_object_set_new(params, "kills", json_true()) < 0)
                        return -ENOMEM;
                break;
        case SELECTOR_LEVELS:
                if (json_object_set_new(params, "levels", json_true()) < 0)
                        return -ENOMEM;
                break;
        }
        /* Memory is the default: said only otherwise, so older daemons understand the rest. */
        if (s->resource != PRESSURE_RESOURCE_MEMORY &&
            json_object_set_new(params, "resource", json_string(pressure_resource_to_string(s->resource))) < 0)
                return -ENOMEM;
        if (s->min_interval_ms > 0 &&
            json_object_set_new(params, "min_interval_ms", json_integer((json_int_t) s->min_interval_ms)) < 0)
                return -ENOMEM;

        msg = json_pack("{s:s, s:O, s:b}", "method", "io.pressured.Subscribe", "parameters", params, "more", 1);
        if (!msg)
                return -ENOMEM;
        text = json_dumps(msg, JSON_DUMP_FLAGS);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

/* ---- Client basics ---------------------------------------------------------- */

/*
 * The error of @reply: 0 if it is none, else its errno, with the error
 * object in *@ret (NULL without memory).
 */
static int reply_error(json_t *reply, pressure_error **ret) {
        json_t *name = json_object_get(reply, "error");
        int r;

        if (!name)
                return 0;
        if (!json_is_string(name)) {
                *ret = error_new(-EBADMSG, NULL, NULL);
                return -EBADMSG;
        }
        r = error_name_to_errno(json_string_value(name));
        *ret = error_new(r, json_string_value(name), json_object_get(reply, "parameters"));
        return r;
}

/* Return @r, handing *@ret_error (if given) @e or, without one, a local error for @r. */
static int return_error(int r, pressure_error *e, pressure_error **ret_error) {
        if (ret_error)
                *ret_error = e ? e : error_new(r, NULL, NULL);
        else
                pressure_error_free(e);
        return r;
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
        if (s->destroy)
                s->destroy(s->userdata);
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
        return free_and_strdup(&c->socket_path, path);
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
 * pressure_version - the library's own version (libpressure.pc's, the
 * file's: libpressure.so.1.5.0 says "1.5.0"), not pressured's.
 */
_public_ const char *pressure_version(void) {
        return LIBPRESSURE_VERSION;
}

/* The deadline of a call made now; PRESSURE_TIMEOUT_INFINITE (or anything reaching past the clock's range) is none. */
static uint64_t call_deadline(pressure_client *c) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        return c->call_timeout_usec >= UINT64_MAX - now ? UINT64_MAX : now + c->call_timeout_usec;
}

/* ---- Timer ---------------------------------------------------------------------- */

/* When @s needs process(): 0 = at once, PRESSURE_TIMEOUT_INFINITE = never (CLOCK_MONOTONIC). */
static uint64_t subscription_due(pressure_subscription *s) {
        if (s->freed || s->state == SUBSCRIPTION_ENDED)
                return PRESSURE_TIMEOUT_INFINITE;
        if (s->first || conn_has_message(&s->buffer) || s->broken)
                return 0;
        if (s->state == SUBSCRIPTION_BACKOFF)
                return s->retry_at;
        if (s->is_call)
                return s->deadline;
        return PRESSURE_TIMEOUT_INFINITE;
}

/**
 * pressure_client_get_timeout - the CLOCK_MONOTONIC time process() is due at.
 */
_public_ int pressure_client_get_timeout(pressure_client *c, uint64_t *ret_usec) {
        uint64_t next = PRESSURE_TIMEOUT_INFINITE;

        if (!c || !ret_usec)
                return -EINVAL;
        for (pressure_subscription *s = c->subscriptions; s; s = s->next) {
                uint64_t due = subscription_due(s);
                if (due < next)
                        next = due;
        }
        *ret_usec = next;
        return 0;
}

/* Arm the timerfd so that the epoll fd becomes readable when process() is due. */
static void client_update_timer(pressure_client *c) {
        struct itimerspec its = {};
        uint64_t usec = PRESSURE_TIMEOUT_INFINITE;

        (void) pressure_client_get_timeout(c, &usec);
        if (usec != PRESSURE_TIMEOUT_INFINITE) {
                if (usec == 0)
                        usec = 1; /* an all-zero it_value would disarm; 1 ns is long past */
                its.it_value.tv_sec = (time_t) (usec / USEC_PER_SEC);
                its.it_value.tv_nsec = (long) ((usec % USEC_PER_SEC) * NSEC_PER_USEC);
        }
        (void) timerfd_settime(c->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
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
static int subscription_connect(pressure_subscription *s) {
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
static int subscription_new_unlinked(pressure_client *c, const pressure_selector *selector,
                                     pressure_event_handler handler, void *userdata, pressure_subscription **ret) {
        pressure_subscription *s;
        int r;

        if (!c || !selector || !handler)
                return -EINVAL;
        s = calloc(1, sizeof(pressure_call));
        if (!s)
                return -ENOMEM;
        s->client = c;
        s->fd = -1;
        s->handler = handler;
        s->userdata = userdata;
        s->backoff_usec = BACKOFF_MIN_USEC;
        s->levels = selector->source == SELECTOR_LEVELS;
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

        r = subscription_new_unlinked(c, selector, handler, userdata, &s);
        if (r < 0)
                return r;

        r = subscription_connect(s);
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
                                       pressure_subscription **ret, pressure_error **ret_error) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_close_ int fd = -1;
        pressure_error *error = NULL;
        pressure_subscription *s;
        uint64_t deadline;
        json_t *params;
        int r;

        if (ret_error)
                *ret_error = NULL;
        r = subscription_new_unlinked(c, selector, handler, userdata, &s);
        if (r < 0)
                return return_error(r, NULL, ret_error);

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
                r = reply_error(reply, &error);
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
        return return_error(r, error ?: error_local(r, c->socket_path), ret_error);
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
                n += (unsigned) (!s->is_call && pressure_subscription_is_active(s));
        return n;
}

/* ---- Dispatching ------------------------------------------------------------------- */

static int subscription_emit(pressure_subscription *s, const pressure_event *e) {
        return s->handler(s, e, s->userdata);
}

/* The call @s is over: it is freed once the dispatch loop is done. */
static void call_end(pressure_subscription *s) {
        subscription_close(s);
        s->state = SUBSCRIPTION_ENDED;
        s->freed = true;
}

/* End @s with the error @e (taken over; NULL: a local one for @error); tell the handler or callback. */
static int subscription_fail_with(pressure_subscription *s, int error, pressure_error *e) {
        pressure_event ev = { .kind = PRESSURE_EVENT_ERROR, .cgroup = "/" };
        int r;

        if (!e)
                e = error_local(error, s->client->socket_path);
        if (!e)
                return -ENOMEM;
        subscription_close(s);
        s->state = SUBSCRIPTION_ENDED;
        if (s->is_call) {
                r = s->complete((pressure_call *) s, NULL, e);
                call_end(s);
        } else {
                ev.error = e;
                r = subscription_emit(s, &ev);
        }
        pressure_error_free(e);
        return r;
}

static int subscription_fail(pressure_subscription *s, int error) {
        return subscription_fail_with(s, error, NULL);
}

/* Hand the answer @msg of the call @s to its callback, and end the call. */
static int call_handle(pressure_subscription *s, json_t *msg) {
        pressure_error *e = NULL;
        json_t *params;
        int r;

        r = reply_error(msg, &e);
        if (r < 0)
                return subscription_fail_with(s, r, e);
        params = json_object_get(msg, "parameters");
        if (params && !json_is_object(params))
                return subscription_fail(s, -EBADMSG);
        _cleanup_json_ json_t *p = params ? json_incref(params) : json_object();
        if (!p)
                return subscription_fail(s, -ENOMEM);
        r = s->complete((pressure_call *) s, p, NULL);
        call_end(s);
        return r;
}

/* Hand one message of @s's stream to its handler. */
static int subscription_handle(pressure_subscription *s, json_t *msg) {
        _cleanup_free_ char *text = NULL;
        pressure_error *error = NULL;
        pressure_event e;
        json_t *params, *event, *cont;
        bool last;
        int r;

        if (s->is_call)
                return call_handle(s, msg);
        r = reply_error(msg, &error);
        if (r < 0)
                return subscription_fail_with(s, r, error);

        params = json_object_get(msg, "parameters");
        event = json_object_get(params, "event");
        cont = json_object_get(msg, "continues");
        last = !json_is_true(cont);
        r = event ? event_parse(event, &e) : -EBADMSG;
        /* An event of a kind a later daemon added is not for this version: the stream goes on without it. */
        if (r == -ENOMSG && s->state == SUBSCRIPTION_LIVE && !last)
                return 0;
        if (r < 0)
                return subscription_fail(s, -EBADMSG);
        /* A level stream has level events, warnings and its end only; the first says it is live. */
        if (s->levels && e.kind != PRESSURE_EVENT_LEVEL && e.kind != PRESSURE_EVENT_PREKILL &&
            e.kind != PRESSURE_EVENT_REMOVED)
                return subscription_fail(s, -EBADMSG);
        if (s->state == SUBSCRIPTION_PENDING) {
                if (e.kind != (s->levels ? PRESSURE_EVENT_LEVEL : PRESSURE_EVENT_SUBSCRIBED))
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

        text = json_dumps(event, JSON_DUMP_FLAGS);
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

        if (!c->reconnect || s->is_call)
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
                if (s->freed || !s->is_call || s->state != SUBSCRIPTION_PENDING || s->deadline > now)
                        continue;
                done = 1;
                r = subscription_fail(s, -ETIMEDOUT);
                if (r < 0)
                        return r;
        }
        for (pressure_subscription *s = c->subscriptions; s; s = s->next) {
                if (s->freed || s->state != SUBSCRIPTION_BACKOFF || s->retry_at > now)
                        continue;
                done = 1;
                r = subscription_connect(s);
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
        if (due != PRESSURE_TIMEOUT_INFINITE) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                due = due > now ? due - now : 0;
        }
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

/* ---- Calls ---------------------------------------------------------------------------- */

/* The call message of @method with @params (may be NULL), as text. */
static int call_message(const char *method, json_t *params, char **ret) {
        _cleanup_json_ json_t *msg = json_pack("{s:s}", "method", method);
        char *text;

        if (!msg || (params && json_object_set(msg, "parameters", params) < 0))
                return -ENOMEM;
        text = json_dumps(msg, JSON_DUMP_FLAGS);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

/*
 * One blocking call on its own connection; *ret_params gets the reply's
 * parameters; a failure is returned with its error object in *ret_error.
 */
static int client_call_json(pressure_client *c, const char *method, json_t *params, json_t **ret_params,
                            pressure_error **ret_error) {
        _cleanup_json_ json_t *reply = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        pressure_error *error = NULL;
        ConnBuffer buffer = {};
        json_t *p;
        int r;

        r = call_message(method, params, &text);
        if (r < 0)
                return return_error(r, NULL, ret_error);
        r = conn_connect(c->socket_path, &fd);
        if (r < 0)
                return return_error(r, error_local(r, c->socket_path), ret_error);
        r = conn_send_receive(fd, text, call_deadline(c), &buffer, &reply);
        conn_buffer_done(&buffer);
        if (r < 0)
                return return_error(r, NULL, ret_error);
        r = reply_error(reply, &error);
        if (r < 0)
                return return_error(r, error, ret_error);
        p = json_object_get(reply, "parameters");
        if (p && !json_is_object(p))
                return return_error(-EBADMSG, NULL, ret_error);
        if (ret_params) {
                *ret_params = p ? json_incref(p) : json_object();
                if (!*ret_params)
                        return return_error(-ENOMEM, NULL, ret_error);
        }
        return 0;
}

/* Parameters from JSON object text (NULL: none); -EINVAL if it is no object. */
static int params_from_text(const char *params_json, json_t **ret) {
        json_t *params = NULL;

        if (params_json) {
                params = json_loads(params_json, 0, NULL);
                if (!json_is_object(params)) {
                        if (params)
                                json_decref(params);
                        return -EINVAL;
                }
        }
        *ret = params;
        return 0;
}

/*
 * The parameters of Inject(cgroup, level, resource), or GetProtection(cgroup)
 * with level and resource NONE. Memory, Inject's default, is left out.
 * -EINVAL only for a @cgroup no daemon accepts (cgroup_params_error()).
 */
static int cgroup_params(const char *cgroup, pressure_resource resource, pressure_level level, json_t **ret) {
        _cleanup_json_ json_t *params = NULL;

        if (cgroup_path_check(cgroup) != CGROUP_PATH_OK)
                return -EINVAL;
        params = json_object();
        if (!params)
                return -ENOMEM;
        if (cgroup && json_object_set_new(params, "cgroup", json_string(cgroup)) < 0)
                return -ENOMEM;
        if (level != PRESSURE_LEVEL_NONE &&
            json_object_set_new(params, "level", json_string(pressure_level_to_string(level))) < 0)
                return -ENOMEM;
        if (resource != PRESSURE_RESOURCE_NONE && resource != PRESSURE_RESOURCE_MEMORY &&
            json_object_set_new(params, "resource", json_string(pressure_resource_to_string(resource))) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(params);
        return 0;
}

/* The failure @r of cgroup_params() for @cgroup, with its error object. */
static int cgroup_params_error(int r, const char *cgroup, pressure_error **ret_error) {
        return return_error(r, r == -EINVAL ? error_invalid_cgroup_path(cgroup, cgroup_path_check(cgroup)) : NULL,
                            ret_error);
}

static int delivered_parse(json_t *reply, uint64_t *ret) {
        json_t *d = json_object_get(reply, "delivered");

        if (!json_is_integer(d) || json_integer_value(d) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_integer_value(d);
        return 0;
}

/**
 * pressure_client_call - call any method; the reply parameters as JSON text.
 */
_public_ int pressure_client_call(pressure_client *c, const char *method, const char *params_json,
                                  char **ret_json, pressure_error **ret_error) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        char *text;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c || !method)
                return return_error(-EINVAL, NULL, ret_error);
        r = params_from_text(params_json, &params);
        if (r >= 0)
                r = client_call_json(c, method, params, &reply, ret_error);
        else
                r = return_error(r, NULL, ret_error);
        if (r < 0 || !ret_json)
                return r;
        text = json_dumps(reply, JSON_DUMP_FLAGS);
        if (!text)
                return return_error(-ENOMEM, NULL, ret_error);
        *ret_json = text;
        return 0;
}

/**
 * pressure_client_get_status - GetStatus().
 */
_public_ int pressure_client_get_status(pressure_client *c, pressure_status **ret_status,
                                        pressure_error **ret_error) {
        json_t *reply = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c || !ret_status)
                return return_error(-EINVAL, NULL, ret_error);
        r = client_call_json(c, "io.pressured.GetStatus", NULL, &reply, ret_error);
        if (r < 0)
                return r;
        r = status_new(reply, ret_status);
        return r < 0 ? return_error(r, NULL, ret_error) : 0;
}

/**
 * pressure_client_get_protection - GetProtection(cgroup).
 */
_public_ int pressure_client_get_protection(pressure_client *c, const char *cgroup,
                                            pressure_protection **ret_protection, pressure_error **ret_error) {
        _cleanup_json_ json_t *params = NULL;
        json_t *reply = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c || !ret_protection)
                return return_error(-EINVAL, NULL, ret_error);
        r = cgroup_params(cgroup, PRESSURE_RESOURCE_NONE, PRESSURE_LEVEL_NONE, &params);
        if (r < 0)
                return cgroup_params_error(r, cgroup, ret_error);
        r = client_call_json(c, "io.pressured.GetProtection", params, &reply, ret_error);
        if (r < 0)
                return r;
        r = protection_new(reply, ret_protection);
        return r < 0 ? return_error(r, NULL, ret_error) : 0;
}

/**
 * pressure_client_get_headroom - GetHeadroom(cgroup).
 */
_public_ int pressure_client_get_headroom(pressure_client *c, const char *cgroup, pressure_headroom **ret_headroom,
                                          pressure_error **ret_error) {
        _cleanup_json_ json_t *params = NULL;
        json_t *reply = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c || !ret_headroom)
                return return_error(-EINVAL, NULL, ret_error);
        r = cgroup_params(cgroup, PRESSURE_RESOURCE_NONE, PRESSURE_LEVEL_NONE, &params);
        if (r < 0)
                return cgroup_params_error(r, cgroup, ret_error);
        r = client_call_json(c, "io.pressured.GetHeadroom", params, &reply, ret_error);
        if (r < 0)
                return r;
        r = headroom_new(reply, ret_headroom);
        return r < 0 ? return_error(r, NULL, ret_error) : 0;
}

/* The parameters of AcknowledgePrekill(id); -EINVAL for an id the protocol's int cannot hold. */
static int prekill_params(uint64_t id, json_t **ret) {
        json_t *params;

        if (id > INT64_MAX)
                return -EINVAL;
        params = json_pack("{s:I}", "id", (json_int_t) id);
        if (!params)
                return -ENOMEM;
        *ret = params;
        return 0;
}

/**
 * pressure_client_acknowledge_prekill - AcknowledgePrekill(id).
 */
_public_ int pressure_client_acknowledge_prekill(pressure_client *c, uint64_t id, pressure_error **ret_error) {
        _cleanup_json_ json_t *params = NULL;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c)
                return return_error(-EINVAL, NULL, ret_error);
        r = prekill_params(id, &params);
        if (r < 0)
                return return_error(r, NULL, ret_error);
        return client_call_json(c, "io.pressured.AcknowledgePrekill", params, NULL, ret_error);
}

/**
 * pressure_client_inject - Inject(cgroup, level).
 */
_public_ int pressure_client_inject(pressure_client *c, const char *cgroup, pressure_level level,
                                    uint64_t *ret_delivered, pressure_error **ret_error) {
        return pressure_client_inject_resource(c, cgroup, PRESSURE_RESOURCE_MEMORY, level, ret_delivered, ret_error);
}

static bool resource_valid(pressure_resource resource) {
        return resource != PRESSURE_RESOURCE_NONE && pressure_resource_to_string(resource);
}

/**
 * pressure_client_inject_resource - Inject(cgroup, level, resource).
 */
_public_ int pressure_client_inject_resource(pressure_client *c, const char *cgroup, pressure_resource resource,
                                             pressure_level level, uint64_t *ret_delivered,
                                             pressure_error **ret_error) {
        _cleanup_json_ json_t *params = NULL, *reply = NULL;
        uint64_t delivered;
        int r;

        if (ret_error)
                *ret_error = NULL;
        if (!c || !level_valid(level) || !resource_valid(resource))
                return return_error(-EINVAL, NULL, ret_error);
        r = cgroup_params(cgroup, resource, level, &params);
        if (r < 0)
                return cgroup_params_error(r, cgroup, ret_error);
        r = client_call_json(c, "io.pressured.Inject", params, &reply, ret_error);
        if (r < 0)
                return r;
        r = delivered_parse(reply, &delivered);
        if (r < 0)
                return return_error(r, NULL, ret_error);
        if (ret_delivered)
                *ret_delivered = delivered;
        return 0;
}

/**
 * pressure_client_reload - Reload().
 */
_public_ int pressure_client_reload(pressure_client *c, pressure_error **ret_error) {
        if (ret_error)
                *ret_error = NULL;
        if (!c)
                return return_error(-EINVAL, NULL, ret_error);
        return client_call_json(c, "io.pressured.Reload", NULL, NULL, ret_error);
}

/**
 * pressure_client_reexecute - Reexecute(): the daemon executes its binary
 * anew and answers from the new process.
 */
_public_ int pressure_client_reexecute(pressure_client *c, pressure_error **ret_error) {
        if (ret_error)
                *ret_error = NULL;
        if (!c)
                return return_error(-EINVAL, NULL, ret_error);
        return client_call_json(c, "io.pressured.Reexecute", NULL, NULL, ret_error);
}

/* ---- Asynchronous calls -------------------------------------------------------------- */

/*
 * complete_status(), complete_protection(), complete_headroom(): the reply of
 * GetStatus(), GetProtection() or GetHeadroom() made into its result
 * (type##_new()) for the callback, or the daemon's error.
 */
#define DEFINE_COMPLETE_RESULT(type)                                                                    \
        static int complete_##type(pressure_call *call, json_t *params, const pressure_error *error) { \
                pressure_subscription *s = &call->s;                                                    \
                pressure_##type *result = NULL;                                                         \
                int r;                                                                                  \
                                                                                                        \
                if (error)                                                                              \
                        return s->callback.type(call, NULL, error, s->userdata);                        \
                r = type##_new(json_incref(params), &result);                                           \
                if (r < 0)                                                                              \
                        return subscription_fail(s, r);                                                 \
                r = s->callback.type(call, result, NULL, s->userdata);                                  \
                pressure_##type##_unref(result);                                                        \
                return r;                                                                               \
        }

DEFINE_COMPLETE_RESULT(status)
DEFINE_COMPLETE_RESULT(protection)
DEFINE_COMPLETE_RESULT(headroom)

static int complete_inject(pressure_call *call, json_t *params, const pressure_error *error) {
        pressure_subscription *s = &call->s;
        uint64_t delivered = 0;

        if (error)
                return s->callback.inject(call, 0, error, s->userdata);
        if (delivered_parse(params, &delivered) < 0)
                return subscription_fail(s, -EBADMSG);
        return s->callback.inject(call, delivered, NULL, s->userdata);
}

static int complete_reply(pressure_call *call, json_t *params, const pressure_error *error) {
        pressure_subscription *s = &call->s;
        _cleanup_free_ char *text = NULL;

        if (error)
                return s->callback.reply(call, NULL, error, s->userdata);
        text = json_dumps(params, JSON_DUMP_FLAGS);
        if (!text)
                return subscription_fail(s, -ENOMEM);
        return s->callback.reply(call, text, NULL, s->userdata);
}

/*
 * Start the call of @method with @params (borrowed) on its own connection;
 * the caller sets the callback of *ret. A connection that fails is reported
 * to the callback by the next process().
 */
static int call_start(pressure_client *c, const char *method, json_t *params, CallComplete complete,
                      void *userdata, pressure_call **ret) {
        pressure_call *call;
        pressure_subscription *s;
        int r;

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        s = &call->s;
        s->client = c;
        s->fd = -1;
        s->is_call = true;
        s->complete = complete;
        s->userdata = userdata;
        r = call_message(method, params, &s->request);
        if (r < 0) {
                subscription_destroy(s);
                return r;
        }
        s->deadline = call_deadline(c);
        r = subscription_connect(s);
        if (r < 0) {
                s->state = SUBSCRIPTION_PENDING;
                s->broken = r;
        }
        *ret = call;
        return 0;
}

static void call_link(pressure_client *c, pressure_call *call, pressure_call **ret_call) {
        client_link(c, &call->s);
        if (ret_call)
                *ret_call = call;
}

/**
 * pressure_client_get_status_async - GetStatus() without waiting.
 */
_public_ int pressure_client_get_status_async(pressure_client *c, pressure_status_handler callback,
                                              void *userdata, pressure_call **ret_call) {
        pressure_call *call;
        int r;

        if (!c || !callback)
                return -EINVAL;
        r = call_start(c, "io.pressured.GetStatus", NULL, complete_status, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.status = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_get_protection_async - GetProtection(cgroup) without waiting.
 */
_public_ int pressure_client_get_protection_async(pressure_client *c, const char *cgroup,
                                                  pressure_protection_handler callback, void *userdata,
                                                  pressure_call **ret_call) {
        _cleanup_json_ json_t *params = NULL;
        pressure_call *call;
        int r;

        if (!c || !callback)
                return -EINVAL;
        r = cgroup_params(cgroup, PRESSURE_RESOURCE_NONE, PRESSURE_LEVEL_NONE, &params);
        if (r >= 0)
                r = call_start(c, "io.pressured.GetProtection", params, complete_protection, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.protection = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_get_headroom_async - GetHeadroom(cgroup) without waiting.
 */
_public_ int pressure_client_get_headroom_async(pressure_client *c, const char *cgroup,
                                                pressure_headroom_handler callback, void *userdata,
                                                pressure_call **ret_call) {
        _cleanup_json_ json_t *params = NULL;
        pressure_call *call;
        int r;

        if (!c || !callback)
                return -EINVAL;
        r = cgroup_params(cgroup, PRESSURE_RESOURCE_NONE, PRESSURE_LEVEL_NONE, &params);
        if (r >= 0)
                r = call_start(c, "io.pressured.GetHeadroom", params, complete_headroom, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.headroom = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_acknowledge_prekill_async - AcknowledgePrekill(id) without waiting.
 */
_public_ int pressure_client_acknowledge_prekill_async(pressure_client *c, uint64_t id,
                                                       pressure_reply_handler callback, void *userdata,
                                                       pressure_call **ret_call) {
        _cleanup_json_ json_t *params = NULL;
        pressure_call *call;
        int r;

        if (!c || !callback)
                return -EINVAL;
        r = prekill_params(id, &params);
        if (r >= 0)
                r = call_start(c, "io.pressured.AcknowledgePrekill", params, complete_reply, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.reply = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_inject_async - Inject(cgroup, level) without waiting.
 */
_public_ int pressure_client_inject_async(pressure_client *c, const char *cgroup, pressure_level level,
                                          pressure_inject_handler callback, void *userdata,
                                          pressure_call **ret_call) {
        return pressure_client_inject_resource_async(c, cgroup, PRESSURE_RESOURCE_MEMORY, level, callback, userdata,
                                                     ret_call);
}

/**
 * pressure_client_inject_resource_async - Inject(cgroup, level, resource) without waiting.
 */
_public_ int pressure_client_inject_resource_async(pressure_client *c, const char *cgroup,
                                                   pressure_resource resource, pressure_level level,
                                                   pressure_inject_handler callback, void *userdata,
                                                   pressure_call **ret_call) {
        _cleanup_json_ json_t *params = NULL;
        pressure_call *call;
        int r;

        if (!c || !callback || !level_valid(level) || !resource_valid(resource))
                return -EINVAL;
        r = cgroup_params(cgroup, resource, level, &params);
        if (r >= 0)
                r = call_start(c, "io.pressured.Inject", params, complete_inject, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.inject = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_call_async - call any method without waiting.
 */
_public_ int pressure_client_call_async(pressure_client *c, const char *method, const char *params_json,
                                        pressure_reply_handler callback, void *userdata,
                                        pressure_call **ret_call) {
        _cleanup_json_ json_t *params = NULL;
        pressure_call *call;
        int r;

        if (!c || !method || !callback)
                return -EINVAL;
        r = params_from_text(params_json, &params);
        if (r >= 0)
                r = call_start(c, method, params, complete_reply, userdata, &call);
        if (r < 0)
                return r;
        call->s.callback.reply = callback;
        call_link(c, call, ret_call);
        return 0;
}

/**
 * pressure_client_reload_async - Reload() without waiting.
 */
_public_ int pressure_client_reload_async(pressure_client *c, pressure_reply_handler callback, void *userdata,
                                          pressure_call **ret_call) {
        return pressure_client_call_async(c, "io.pressured.Reload", NULL, callback, userdata, ret_call);
}

/**
 * pressure_client_reexecute_async - Reexecute() without waiting.
 */
_public_ int pressure_client_reexecute_async(pressure_client *c, pressure_reply_handler callback, void *userdata,
                                             pressure_call **ret_call) {
        return pressure_client_call_async(c, "io.pressured.Reexecute", NULL, callback, userdata, ret_call);
}

/**
 * pressure_call_free - cancel a call whose callback has not run; NULL is fine.
 */
_public_ pressure_call *pressure_call_free(pressure_call *call) {
        if (call)
                (void) pressure_subscription_free(&call->s);
        return NULL;
}

/**
 * pressure_call_get_client - the client of a call.
 */
_public_ pressure_client *pressure_call_get_client(pressure_call *call) {
        return call ? call->s.client : NULL;
}

/**
 * pressure_call_get_userdata - the userdata of a call.
 */
_public_ void *pressure_call_get_userdata(pressure_call *call) {
        return call ? call->s.userdata : NULL;
}

/**
 * pressure_call_set_destroy_callback - call @destroy(userdata) when the call is freed.
 */
_public_ int pressure_call_set_destroy_callback(pressure_call *call, pressure_destroy_callback destroy) {
        if (!call)
                return -EINVAL;
        call->s.destroy = destroy;
        return 0;
}

/**
 * pressure_subscription_set_destroy_callback - call @destroy(userdata) when the subscription is freed.
 */
_public_ int pressure_subscription_set_destroy_callback(pressure_subscription *s,
                                                        pressure_destroy_callback destroy) {
        if (!s || s->is_call)
                return -EINVAL;
        s->destroy = destroy;
        return 0;
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
