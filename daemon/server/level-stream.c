/* SPDX-License-Identifier: MIT */
/* Level streams: trackers, their level machine, and the clients' streams (level-stream.h). */
#include <errno.h>
#include <inttypes.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "event-util.h"
#include "event.h"
#include "kills.h"
#include "level-stream.h"
#include "log.h"
#include "util.h"

/* How soon a stream with a waiting change looks again whether its client has read, and the most it waits. */
#define RECHECK_FIRST_USEC (10 * USEC_PER_MSEC)
#define RECHECK_MAX_USEC (500 * USEC_PER_MSEC)

typedef struct TrackerListener {
        Listener listener;          /* first: the registry hands this back */
        LevelTracker *tracker;
} TrackerListener;

struct LevelStreams {
        struct event_base *base;
        Registry *registry;
        Counters *counters;
        LevelHeadroomFn headroom;
        void *headroom_userdata;
        LevelTracker *trackers;
        unsigned n_trackers;
        unsigned n_streams;
        int meminfo_fd;             /* the headroom reader's, closed with the last tracker */
};

struct LevelTracker {
        LevelStreams *owner;
        char *cgroup, *real_v2, *real_v1, *view_v2, *view_v1;
        TrackerListener levels[_LEVEL_MAX];
        LevelMachine machine;
        HeadroomHint headroom_hint; /* which hierarchy its headroom was last read from */
        struct event *settle;       /* settles the events of one loop iteration as one change */
        struct event *step_down;    /* pending while above normal */
        Body *body;                 /* the event of the current level; NULL before the first change */
        LevelStream *streams;
        unsigned n_streams;
        LIST_FIELDS(LevelTracker, trackers);
};

struct LevelStream {
        LevelTracker *tracker;
        Client *client;
        uint64_t seq;               /* events sent */
        uint64_t missed;            /* changes folded since the last event sent */
        StreamLevel sent;           /* the level of the last event sent */
        bool waiting;               /* a change waits for the client to read what it was sent */
        struct event *recheck;      /* pending while waiting */
        uint64_t recheck_usec;
        LIST_FIELDS(LevelStream, streams);
};

static void tracker_free(LevelTracker *t);
static void stream_offer(LevelStream *s);

int level_streams_new(struct event_base *base, Registry *registry, Counters *counters, LevelStreams **ret) {
        LevelStreams *ls = calloc(1, sizeof(*ls));

        if (!ls)
                return -ENOMEM;
        *ls = (LevelStreams) { .base = base, .registry = registry, .counters = counters, .meminfo_fd = -1 };
        *ret = ls;
        return 0;
}

LevelStreams *level_streams_free(LevelStreams *ls) {
        if (!ls)
                return NULL;
        while (ls->trackers)
                tracker_free(ls->trackers);
        free(ls);
        return NULL;
}

void level_streams_set_headroom(LevelStreams *ls, LevelHeadroomFn fn, void *userdata) {
        ls->headroom = fn;
        ls->headroom_userdata = userdata;
}

static LevelTarget tracker_target(const LevelTracker *t) {
        return (LevelTarget) { .cgroup = t->cgroup, .real_v2 = t->real_v2, .real_v1 = t->real_v1,
                               .view_v2 = t->view_v2, .view_v1 = t->view_v1 };
}

LevelTracker *level_streams_find(LevelStreams *ls, const LevelTarget *t) {
        LevelTracker *x;

        LIST_FOREACH(trackers, x, ls->trackers)
                if (streq(x->real_v2, t->real_v2) && streq(x->real_v1, t->real_v1) &&
                    streq_ptr(x->view_v2, t->view_v2) && streq_ptr(x->view_v1, t->view_v1))
                        return x;
        return NULL;
}

int level_streams_level_of(LevelStreams *ls, const char *real_v2) {
        LevelTracker *x;

        LIST_FOREACH(trackers, x, ls ? ls->trackers : NULL)
                if (streq(x->real_v2, real_v2))
                        return (int) x->machine.level;
        return -ENOENT;
}

/* The event of @t's current level, with the headroom now; NULL when out of memory. */
static Body *tracker_event(LevelTracker *t) {
        LevelStreams *ls = t->owner;
        LevelTarget target = tracker_target(t);
        uint64_t headroom = 0, reclaim = 0, mono = now_usec(CLOCK_MONOTONIC);
        unsigned known = 0;
        EventData e;

        target.hint = &t->headroom_hint;
        target.meminfo_fd = &ls->meminfo_fd;

        if (ls->headroom)
                known = ls->headroom(ls->headroom_userdata, &target, t->machine.level, &headroom, &reclaim);
        e = (EventData) {
                .kind = EVENT_LEVEL,
                .cgroup = t->cgroup,
                .realtime_us = now_usec(CLOCK_REALTIME),
                .monotonic_us = mono,
                .level_change = {
                        .level = t->machine.level,
                        .headroom = known & 1 ? &headroom : NULL,
                        .reclaim_target = known & 2 ? &reclaim : NULL,
                },
        };
        return event_data_body(&e, mono);
}

/* Wait for the current level's hold to run out; nothing at normal. */
static void tracker_arm_step_down(LevelTracker *t) {
        uint64_t until = level_machine_next_usec(&t->machine), now = now_usec(CLOCK_MONOTONIC);
        struct timeval tv;

        if (until == 0) {
                evtimer_del(t->step_down);
                return;
        }
        tv = usec_to_timeval(until > now ? until - now : 0);
        if (evtimer_add(t->step_down, &tv) < 0)
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to arm the step-down of the level of %s; it steps down at its next event: %m",
                                t->cgroup);
}

/* The level changed: one new event, offered to every stream. */
static void tracker_changed(LevelTracker *t) {
        LevelStream *s, *n;
        Body *b = tracker_event(t);

        log_debug("Level of %s is now %s.", t->cgroup, stream_level_to_string(t->machine.level));
        tracker_arm_step_down(t);
        if (!b) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to make the level event of %s; its streams hear of the next change: %m",
                                t->cgroup);
                return;
        }
        body_unref(t->body);
        t->body = b;
        LIST_FOREACH_SAFE(streams, s, n, t->streams)
                stream_offer(s);
}

static void on_settle(evutil_socket_t fd, short what, void *userdata) {
        LevelTracker *t = userdata;

        if (level_machine_settle(&t->machine, now_usec(CLOCK_MONOTONIC)))
                tracker_changed(t);
}

static void on_step_down(evutil_socket_t fd, short what, void *userdata) {
        LevelTracker *t = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        /* Events of this turn that wait to settle count first: they may hold the level. */
        bool raised = level_machine_settle(&t->machine, now);

        if (level_machine_tick(&t->machine, now) || raised)
                tracker_changed(t);
        else
                tracker_arm_step_down(t);
}

/* How long an event of @r holds its level: StepDownSec=, and a PSI trigger's window on top. */
static uint64_t registration_hold_usec(const Registration *r) {
        uint64_t window = r->src.type == SOURCE_PSI ? r->src.used.window_us : 0;

        return level_machine_hold_usec(r->registry->config->step_down_usec, window);
}

static bool tracker_deliver(Listener *l, Body *body, uint64_t count) {
        LevelTracker *t = ((TrackerListener *) l)->tracker;

        /*
         * A kernel notification comes bare; an injected event reaches the
         * listener of its level and those below with one body. Either way
         * the level is the listener's. What the loop delivered together
         * settles together, at one time: one change, and holds that end
         * together (an injected medium steps down to normal, not by way
         * of low because low heard of it a moment later).
         */
        level_machine_note(&t->machine, l->level, registration_hold_usec(l->reg));
        event_active(t->settle, EV_TIMEOUT, 0);
        return true;
}

/* The end of every stream of @t: "removed", as for a subscription. */
static void stream_removed(LevelStream *s);

static void tracker_removed(Listener *l, Registration *r) {
        LevelTracker *t = ((TrackerListener *) l)->tracker;

        /* The streams end; the tracker goes with its last one. */
        while (t->streams && t->n_streams > 1)
                stream_removed(t->streams);
        if (t->streams)
                stream_removed(t->streams);
}

static const ListenerOps tracker_listener_ops = {
        .deliver = tracker_deliver,
        .removed = tracker_removed,
};

static void tracker_free(LevelTracker *t) {
        LevelStreams *ls = t->owner;

        for (Level l = 0; l < _LEVEL_MAX; l++)
                listener_detach(&t->levels[l].listener);
        event_free_and_null(&t->settle);
        event_free_and_null(&t->step_down);
        body_unref(t->body);
        LIST_REMOVE(trackers, ls->trackers, t);
        ls->n_trackers--;
        if (ls->n_trackers == 0)
                ls->meminfo_fd = safe_close(ls->meminfo_fd);
        free(t->cgroup);
        free(t->real_v2);
        free(t->real_v1);
        free(t->view_v2);
        free(t->view_v1);
        free(t);
}

static int strdup_opt(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return s && !*ret ? -ENOMEM : 0;
}

/*
 * Start @t at the level now: what the registrations' active episodes say
 * (shared with other subscribers), and for PSI what the pressure file's
 * 10 s averages say against each level's trigger, so that a stream that
 * begins under pressure does not start at "normal" until the next window.
 */
static void tracker_seed(LevelTracker *t, uint64_t now) {
        PsiStats st;
        bool have_psi = false;

        for (Level l = 0; l < _LEVEL_MAX; l++) {
                const Registration *r = t->levels[l].listener.reg;

                if (!r)
                        continue;
                if (r->episode.active && r->episode.last_event_us > 0)
                        (void) level_machine_event(&t->machine, l, r->episode.last_event_us,
                                                   registration_hold_usec(r));
                if (r->src.type != SOURCE_PSI)
                        continue;
                if (!have_psi && source_read_psi(&r->src, &st) < 0)
                        continue;
                have_psi = true;
                if (level_psi_above(&st, &r->src.used))
                        (void) level_machine_event(&t->machine, l, now, registration_hold_usec(r));
        }
        (void) level_machine_tick(&t->machine, now);
}

static int tracker_alloc(LevelStreams *ls, const LevelTarget *target, LevelTracker **ret) {
        LevelTracker *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->owner = ls;
        LIST_PREPEND(trackers, ls->trackers, t);
        ls->n_trackers++;
        level_machine_init(&t->machine);
        *ret = t;
        if (strdup_opt(target->cgroup, &t->cgroup) < 0 || strdup_opt(target->real_v2, &t->real_v2) < 0 ||
            strdup_opt(target->real_v1, &t->real_v1) < 0 || strdup_opt(target->view_v2, &t->view_v2) < 0 ||
            strdup_opt(target->view_v1, &t->view_v1) < 0)
                return -ENOMEM;
        t->settle = event_new(ls->base, -1, 0, on_settle, t);
        t->step_down = evtimer_new(ls->base, on_step_down, t);
        return t->settle && t->step_down ? 0 : -ENOMEM;
}

int level_tracker_new(LevelStreams *ls, const LevelTarget *target, Registration *regs[_LEVEL_MAX],
                      LevelTracker **ret) {
        LevelTracker *t = NULL;
        int k = tracker_alloc(ls, target, &t);

        for (Level l = 0; l < _LEVEL_MAX; l++) {
                if (k < 0) {
                        registration_release(regs[l]);
                        continue;
                }
                t->levels[l] = (TrackerListener) {
                        .listener = { .ops = &tracker_listener_ops, .kick = true, .by_level = true, .level = l },
                        .tracker = t,
                };
                listener_attach(&t->levels[l].listener, regs[l]);
        }
        if (k < 0) {
                if (t)
                        tracker_free(t);
                return k;
        }
        tracker_seed(t, now_usec(CLOCK_MONOTONIC));
        tracker_arm_step_down(t);
        *ret = t;
        return 0;
}

/* ---- Streams ---- */

static void stream_unlink(LevelStream *s) {
        LevelTracker *t = s->tracker;

        event_free_and_null(&s->recheck);
        LIST_REMOVE(streams, t->streams, s);
        t->n_streams--;
        t->owner->n_streams--;
        free(s);
        if (t->n_streams == 0)
                tracker_free(t);
}

static void stream_free(void *stream) {
        stream_unlink(stream);
}

LevelStream *level_stream_of_client(const Client *c) {
        return c->stream && c->stream_free == stream_free ? c->stream : NULL;
}

/* Whether @c has not yet read everything it was sent: queued here, or unread in its socket. */
static bool client_behind(Client *c) {
        int unread = 0;

        if (!outqueue_is_empty(&c->out) || c->write_armed)
                return true;
        return ioctl(c->fd, SIOCOUTQ, &unread) == 0 && unread > 0;
}

/* Queue @b for @s as its next event. */
static int stream_send(LevelStream *s, Body *b, StreamLevel level) {
        LevelStreams *ls = s->tracker->owner;
        char prefix[OUT_PREFIX_MAX];
        size_t n = event_prefix(prefix, b, s->seq + 1, s->missed, 0, _LEVEL_INVALID);
        LiveSlot *l = client_live(s->client);
        int k;

        /* Noted before the write: a successor after a crash never numbers another event the same. */
        if (l)
                l->seq = s->seq + 1;
        /* At most one level event is ever queued: no limit but the one. */
        k = client_send_event(s->client, prefix, n, b, s->seq + 1, 0);
        if (k < 0) {
                if (l)
                        l->seq = s->seq;
                return k;
        }
        s->seq++;
        s->missed = 0;
        s->sent = level;
        counter_inc(ls->counters, COUNTER_EVENTS_DELIVERED);
        return 0;
}

static void on_recheck(evutil_socket_t fd, short what, void *userdata) {
        LevelStream *s = userdata;

        /* Still "waiting": if the client has not read yet, the next look is later. */
        stream_offer(s);
}

/* Look again in a while whether the client has read; each time later, up to RECHECK_MAX_USEC. */
static void stream_wait(LevelStream *s) {
        struct timeval tv;

        if (!s->recheck)
                s->recheck = evtimer_new(s->tracker->owner->base, on_recheck, s);
        s->recheck_usec = !s->waiting ? RECHECK_FIRST_USEC :
                          s->recheck_usec >= RECHECK_MAX_USEC / 2 ? RECHECK_MAX_USEC : s->recheck_usec * 2;
        tv = usec_to_timeval(s->recheck_usec);
        if (!s->recheck || evtimer_add(s->recheck, &tv) < 0) {
                /* Without a timer the change waits for the next one. */
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to wait for client %" PRIu64 " to read its level; it hears of the next change: %m",
                                s->client->id);
                return;
        }
        s->waiting = true;
}

/*
 * The tracker's level changed, or @s looks again: send it if the client
 * has read what it was sent, else fold it into the change already waiting.
 */
static void stream_offer(LevelStream *s) {
        LevelTracker *t = s->tracker;
        bool was_waiting = s->waiting && evtimer_pending(s->recheck, NULL);

        if (s->client->dead || !t->body)
                return;
        if (was_waiting) {
                /* The change that waited is replaced by this one. */
                s->missed++;
                return;
        }
        if (t->machine.level == s->sent) {
                /* Back where the client was told it is: nothing to say. */
                s->waiting = false;
                return;
        }
        if (client_behind(s->client)) {
                stream_wait(s);
                return;
        }
        s->waiting = false;
        if (stream_send(s, t->body, t->machine.level) < 0)
                log_ratelimited(LOG_WARNING, 0, NULL, 10, 1, "Failed to send client %" PRIu64 " its level.",
                                s->client->id);
}

static int stream_new(LevelTracker *t, Client *c, LevelStream **ret) {
        LevelStream *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->tracker = t;
        s->client = c;
        s->sent = _STREAM_LEVEL_INVALID;
        LIST_PREPEND(streams, t->streams, s);
        t->n_streams++;
        t->owner->n_streams++;
        *ret = s;
        return 0;
}

int level_stream_start(LevelTracker *t, Client *c) {
        /* The level now, with the headroom now: the subscriber's own event. */
        Body *first = tracker_event(t);
        LevelStream *s;
        int k;

        k = first ? stream_new(t, c, &s) : -ENOMEM;
        if (k < 0) {
                body_unref(first);
                if (t->n_streams == 0)
                        tracker_free(t);
                return k;
        }
        /* The stream first: whoever keeps the state for a successor hears of it before the client does. */
        client_stream_start(c, s, stream_free);
        k = stream_send(s, first, t->machine.level);
        body_unref(first);
        if (k < 0 && !c->dead)
                client_kill(c); /* the stream cannot begin as it should; its end frees it */
        return 0;
}

static void stream_removed(LevelStream *s) {
        Client *c = s->client;
        LevelTracker *t = s->tracker;
        char *msg;
        size_t size;

        msg = event_removed_message(t->cgroup, s->seq + 1, &size);
        /* The stream is no longer the client's before the client hears it ended. */
        stream_unlink(s);
        client_stream_end(c, msg, size);
}

int level_stream_export(const LevelStream *s, SnapshotLevels *ret) {
        *ret = (SnapshotLevels) { .seq = s->seq, .missed = s->missed, .sent = s->sent,
                                  .waiting = s->waiting };
        ret->cgroup = strdup(s->tracker->cgroup);
        return ret->cgroup ? 0 : -ENOMEM;
}

int level_stream_adopt(LevelTracker *t, Client *c, const SnapshotLevels *snap) {
        LevelStream *s;
        LiveSlot *l;
        int k = stream_new(t, c, &s);

        if (k < 0) {
                if (t->n_streams == 0)
                        tracker_free(t);
                return k;
        }
        s->seq = snap->seq;
        s->missed = snap->missed;
        s->sent = snap->sent >= 0 && snap->sent < _STREAM_LEVEL_MAX ? (StreamLevel) snap->sent : _STREAM_LEVEL_INVALID;
        /* The live page of this process starts at what was sent: a crash before the next event numbers on. */
        l = client_live(c);
        if (l) {
                l->seq = s->seq;
                if (outqueue_is_empty(&c->out))
                        l->written_seq = s->seq; /* else the restored queue notes it once written */
        }
        client_stream_start(c, s, stream_free);
        /* What the previous process knew of the level is gone: the level now is the news, if it is news. */
        if (!t->body)
                t->body = tracker_event(t);
        stream_offer(s);
        return 0;
}

void level_streams_under(LevelStreams *ls, const char *victim, LevelStreamVisitFn fn, void *userdata) {
        LevelTracker *t;
        LevelStream *s;

        LIST_FOREACH(trackers, t, ls->trackers) {
                if (!kills_covers(victim, t->real_v2) && !kills_covers(victim, t->real_v1))
                        continue;
                LIST_FOREACH(streams, s, t->streams)
                        if (!s->client->dead)
                                fn(s, s->client, t->view_v2, userdata);
        }
}

int level_stream_warn(LevelStream *s, Body *b) {
        char prefix[OUT_PREFIX_MAX];
        /* Numbered in the stream; what it folded is the next level event's to say. */
        size_t n = event_prefix(prefix, b, s->seq + 1, 0, 0, _LEVEL_INVALID);
        LiveSlot *l = client_live(s->client);
        int k;

        if (l)
                l->seq = s->seq + 1;
        k = client_send_event(s->client, prefix, n, b, s->seq + 1, 0);
        if (k < 0) {
                if (l)
                        l->seq = s->seq;
                return k;
        }
        s->seq++;
        counter_inc(s->tracker->owner->counters, COUNTER_EVENTS_DELIVERED);
        return 0;
}
