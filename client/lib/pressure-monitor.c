/* SPDX-License-Identifier: MIT */
/*
 * pressure_monitor: one cgroup's level stream on a client of its own, the
 * last level and headroom it told, one handler, the warnings before a kill
 * its handler will acknowledge later, and its attachment to an sd-event
 * loop (sd-event-api.h). Reconnecting is the client's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "cgroup.h"
#include "pressure-event.h"
#include "sd-event-api.h"
#include "util.h"
#include "vocabulary.h"

/*
 * Warnings whose acknowledgement the handler put off, at most: the daemon
 * warns of at most [Prekill] MaxCalls= kills at once (16 by default). Past
 * it the oldest is forgotten (its deadline is the nearest).
 */
#define MONITOR_DEFERRED_MAX 64

/* A warning the handler will acknowledge later. */
typedef struct Deferred {
        uint64_t id;
        uint64_t deadline_us;
} Deferred;

struct pressure_monitor {
        unsigned n_ref;
        pressure_client *client;
        pressure_subscription *subscription;
        char *cgroup;
        pressure_monitor_handler handler;
        void *userdata;
        bool started, ended;
        /* Warnings before a kill go to the handler (pressure_monitor_set_prekill()). */
        bool prekill;
        /* The last level event. */
        bool has_level;
        pressure_level level;
        int has_headroom, has_reclaim_target;
        uint64_t headroom_bytes, reclaim_target_bytes;
        uint64_t reconnects;
        /* Warnings to acknowledge with pressure_monitor_acknowledge_prekill(), oldest first. */
        Deferred deferred[MONITOR_DEFERRED_MAX];
        size_t n_deferred;
        /* The sd-event loop it is attached to, or NULL. */
        SdEventApi api;
        struct sd_event *event;
        struct sd_event_source *io;
};

/**
 * pressure_monitor_new - a monitor of @cgroup's level; not started yet.
 */
_public_ int pressure_monitor_new(pressure_monitor **ret, const char *cgroup, pressure_monitor_handler handler,
                                  void *userdata) {
        pressure_monitor *m;
        int r;

        if (!ret || !handler || cgroup_path_check(cgroup) != CGROUP_PATH_OK)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->n_ref = 1;
        m->handler = handler;
        m->userdata = userdata;
        if (cgroup) {
                m->cgroup = strdup(cgroup);
                if (!m->cgroup) {
                        free(m);
                        return -ENOMEM;
                }
        }
        r = pressure_client_new(&m->client);
        if (r < 0) {
                free(m->cgroup);
                free(m);
                return r;
        }
        /* A program may well start before the daemon: wait for it like for its return. */
        (void) pressure_client_set_wait_for_daemon(m->client, 1);
        *ret = m;
        return 0;
}

/**
 * pressure_monitor_ref - take a reference.
 */
_public_ pressure_monitor *pressure_monitor_ref(pressure_monitor *m) {
        if (m)
                m->n_ref++;
        return m;
}

/**
 * pressure_monitor_detach_event - leave the sd-event loop; 0, or -ENXIO if not attached.
 */
_public_ int pressure_monitor_detach_event(pressure_monitor *m) {
        if (!m)
                return -EINVAL;
        if (!m->event)
                return -ENXIO;
        m->io = m->api.source_unref(m->io);
        m->event = m->api.event_unref(m->event);
        return 0;
}

/**
 * pressure_monitor_unref - drop a reference; the last ends the stream. NULL is fine.
 */
_public_ pressure_monitor *pressure_monitor_unref(pressure_monitor *m) {
        if (!m || --m->n_ref > 0)
                return NULL;
        (void) pressure_monitor_detach_event(m);
        pressure_subscription_free(m->subscription);
        pressure_client_free(m->client);
        free(m->cgroup);
        free(m);
        return NULL;
}

/**
 * pressure_monitor_unrefp - pressure_monitor_unref(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_monitor_unrefp(pressure_monitor **p) {
        if (p)
                *p = pressure_monitor_unref(*p);
}

/**
 * pressure_monitor_get_client - the monitor's own client.
 */
_public_ pressure_client *pressure_monitor_get_client(pressure_monitor *m) {
        return m ? m->client : NULL;
}

/* A daemon before 0.4 does not know "levels": it says so with InvalidParameter. */
static bool error_is_old_daemon(const pressure_error *e) {
        return streq_ptr(pressure_error_get_name(e), IDL_ERROR_NAME(VARLINK_INVALID_PARAMETER)) &&
               streq_ptr(pressure_error_get_parameter_string(e, "parameter"), "levels");
}

/* The stream ended with @e: hand the handler the error, as -EOPNOTSUPP if the daemon is too old. */
static int monitor_ended_with_error(pressure_monitor *m, const pressure_event *e) {
        pressure_event ev = *e;
        pressure_error *old;
        int r;

        if (!error_is_old_daemon(e->error))
                return m->handler(m, e, m->userdata);
        old = error_new(-EOPNOTSUPP, e->error->name, e->error->params);
        if (!old)
                return -ENOMEM;
        free(old->message);
        old->message = strdup("pressured is older than 0.4: it has no level streams");
        if (!old->message) {
                pressure_error_free(old);
                return -ENOMEM;
        }
        ev.error = old;
        r = m->handler(m, &ev, m->userdata);
        pressure_error_free(old);
        return r;
}

static void monitor_remember(pressure_monitor *m, const pressure_event *e) {
        m->has_level = true;
        m->level = e->level;
        m->has_headroom = e->has_headroom;
        m->headroom_bytes = e->headroom_bytes;
        m->has_reclaim_target = e->has_reclaim_target;
        m->reclaim_target_bytes = e->reclaim_target_bytes;
}

/* The answer to an acknowledgement: nothing to do, whatever it is (the daemon answers oomd at the deadline). */
static int on_acknowledged(pressure_call *call, const char *parameters_json, const pressure_error *error,
                           void *userdata) {
        (void) call;
        (void) parameters_json;
        (void) error;
        (void) userdata;
        return 0;
}

/* Forget the deferred warnings whose deadline has passed: the daemon has answered for them. */
static void deferred_expire(pressure_monitor *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        size_t k = 0;

        for (size_t i = 0; i < m->n_deferred; i++)
                if (m->deferred[i].deadline_us > now)
                        m->deferred[k++] = m->deferred[i];
        m->n_deferred = k;
}

/* Hand the warning @e to the handler; acknowledge it after, unless the handler will do it later. */
static int monitor_prekill(pressure_monitor *m, const pressure_event *e) {
        int r = m->prekill ? m->handler(m, e, m->userdata) : 0;

        if (r < 0)
                return r;
        if (r == PRESSURE_MONITOR_ACKNOWLEDGE_LATER) {
                deferred_expire(m);
                if (m->n_deferred == MONITOR_DEFERRED_MAX) {
                        memmove(m->deferred, m->deferred + 1, (MONITOR_DEFERRED_MAX - 1) * sizeof(Deferred));
                        m->n_deferred--;
                }
                m->deferred[m->n_deferred++] = (Deferred) { e->prekill_id, e->deadline_us };
                return 0;
        }
        return pressure_client_acknowledge_prekill_async(m->client, e->prekill_id, on_acknowledged, NULL, NULL);
}

/**
 * pressure_monitor_set_prekill - hand the warnings before a kill to the handler, or acknowledge them at once.
 */
_public_ int pressure_monitor_set_prekill(pressure_monitor *m, int enable) {
        if (!m)
                return -EINVAL;
        m->prekill = enable;
        return 0;
}

/**
 * pressure_monitor_acknowledge_prekill - acknowledge a warning whose handler returned
 * PRESSURE_MONITOR_ACKNOWLEDGE_LATER; -ESRCH for one it did not.
 */
_public_ int pressure_monitor_acknowledge_prekill(pressure_monitor *m, uint64_t id) {
        size_t i;
        int r;

        if (!m)
                return -EINVAL;
        deferred_expire(m);
        for (i = 0; i < m->n_deferred && m->deferred[i].id != id; i++)
                ;
        if (i == m->n_deferred)
                return -ESRCH;
        r = pressure_client_acknowledge_prekill_async(m->client, id, on_acknowledged, NULL, NULL);
        if (r < 0)
                return r;
        memmove(m->deferred + i, m->deferred + i + 1, (m->n_deferred - i - 1) * sizeof(Deferred));
        m->n_deferred--;
        return 0;
}

static int on_stream_event(pressure_subscription *s, const pressure_event *e, void *userdata) {
        pressure_monitor *m = userdata;

        (void) s;
        switch (e->kind) {
        case PRESSURE_EVENT_PREKILL:
                return monitor_prekill(m, e);
        case PRESSURE_EVENT_LEVEL:
                monitor_remember(m, e);
                break;
        case PRESSURE_EVENT_RECONNECTED:
                m->reconnects++;
                break;
        case PRESSURE_EVENT_REMOVED:
                m->ended = true;
                break;
        case PRESSURE_EVENT_ERROR:
                m->ended = true;
                return monitor_ended_with_error(m, e);
        default:
                /* The client lets nothing else through on a level stream. */
                return 0;
        }
        return m->handler(m, e, m->userdata);
}

/**
 * pressure_monitor_start - subscribe to the level stream.
 */
_public_ int pressure_monitor_start(pressure_monitor *m) {
        _cleanup_(pressure_selector_freep) pressure_selector *sel = NULL;
        int r;

        if (!m)
                return -EINVAL;
        if (m->started)
                return -EALREADY;
        r = pressure_selector_new(&sel);
        if (r >= 0)
                r = pressure_selector_set_cgroup(sel, m->cgroup);
        if (r >= 0)
                r = pressure_selector_set_levels(sel);
        if (r >= 0)
                r = pressure_client_subscribe_async(m->client, sel, on_stream_event, m, &m->subscription);
        if (r < 0)
                return r;
        m->started = true;
        return 0;
}

/**
 * pressure_monitor_get_fd - the fd to watch for POLLIN.
 */
_public_ int pressure_monitor_get_fd(pressure_monitor *m) {
        return m ? pressure_client_get_fd(m->client) : -EINVAL;
}

/**
 * pressure_monitor_process - do what is ready, without blocking.
 */
_public_ int pressure_monitor_process(pressure_monitor *m) {
        int r;

        if (!m)
                return -EINVAL;
        /* The handler may drop the last reference of the program: free after the client is done. */
        pressure_monitor_ref(m);
        r = pressure_client_process(m->client);
        pressure_monitor_unref(m);
        return r;
}

static int monitor_on_io(struct sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        int r;

        (void) s;
        (void) fd;
        (void) revents;
        r = pressure_monitor_process(userdata);
        return r < 0 ? r : 0;
}

/**
 * pressure_monitor_attach_event - drive the monitor from an sd-event loop, and start it.
 */
_public_ int pressure_monitor_attach_event(pressure_monitor *m, struct sd_event *event, int64_t priority) {
        int r;

        if (!m)
                return -EINVAL;
        if (m->event)
                return -EBUSY;
        r = sd_event_api_resolve(&m->api);
        if (r < 0)
                return r;
        r = event ? (m->event = m->api.event_ref(event), 0) : m->api.event_default(&m->event);
        if (r < 0)
                return r;
        /* The client's timers are inside its fd: one io source covers everything. */
        r = m->api.add_io(m->event, &m->io, pressure_client_get_fd(m->client), EPOLLIN, monitor_on_io, m);
        if (r >= 0)
                r = m->api.source_set_priority(m->io, priority);
        if (r >= 0)
                r = m->api.source_set_description(m->io, "pressure-monitor");
        if (r >= 0 && !m->started)
                r = pressure_monitor_start(m);
        if (r < 0) {
                (void) pressure_monitor_detach_event(m);
                return r;
        }
        return 0;
}

/**
 * pressure_monitor_get_level - the last level; -ENODATA before the first.
 */
_public_ int pressure_monitor_get_level(const pressure_monitor *m, pressure_level *ret) {
        if (!m || !ret)
                return -EINVAL;
        if (!m->has_level)
                return -ENODATA;
        *ret = m->level;
        return 0;
}

/**
 * pressure_monitor_get_headroom_bytes - the last headroom; -ENODATA before the first or for null.
 */
_public_ int pressure_monitor_get_headroom_bytes(const pressure_monitor *m, uint64_t *ret) {
        if (!m || !ret)
                return -EINVAL;
        if (!m->has_level || !m->has_headroom)
                return -ENODATA;
        *ret = m->headroom_bytes;
        return 0;
}

/**
 * pressure_monitor_get_reclaim_target_bytes - the last reclaim target; -ENODATA before the first or for null.
 */
_public_ int pressure_monitor_get_reclaim_target_bytes(const pressure_monitor *m, uint64_t *ret) {
        if (!m || !ret)
                return -EINVAL;
        if (!m->has_level || !m->has_reclaim_target)
                return -ENODATA;
        *ret = m->reclaim_target_bytes;
        return 0;
}

/**
 * pressure_monitor_get_reconnects - how often the stream came back after the daemon went away.
 */
_public_ uint64_t pressure_monitor_get_reconnects(const pressure_monitor *m) {
        return m ? m->reconnects : 0;
}

/**
 * pressure_monitor_is_active - 1 until the stream has ended.
 */
_public_ int pressure_monitor_is_active(const pressure_monitor *m) {
        return m && !m->ended;
}
