/* SPDX-License-Identifier: MIT */
/* Warnings before systemd-oomd kills, and its pre-kill hook: see prekill.h. */
#include <inttypes.h>
#include <pwd.h>
#include <unistd.h>

#include "event-util.h"
#include "event.h"
#include "io.systemd.oom.Prekill.varlink.h"
#include "kills.h"
#include "log.h"
#include "oomd-conf.h"
#include "prekill.h"
#include "subscription.h"
#include "varlink-service.h"

/* The user systemd-oomd runs as (User= of systemd-oomd.service). */
#define PREKILL_OOMD_USER "systemd-oom"
#define PREKILL_INTERFACE "io.systemd.oom.Prekill"

static const VarlinkInterface prekill_interfaces[] = {
        { PREKILL_INTERFACE, io_systemd_oom_prekill_varlink },
};

static const VarlinkService prekill_service = { prekill_interfaces, ELEMENTSOF(prekill_interfaces) };

/* A Notify waiting for its answer: its hook connection's stream. */
typedef struct PrekillCall {
        Prekill *prekill;
        uint64_t warning;
} PrekillCall;

/* A subscriber a warning goes to: a kills subscription or a level stream. */
typedef struct PrekillTarget {
        Client *client;
        Subscription *sub;
        LevelStream *levels;
        const char *view;           /* its peer's cgroup2 namespace root; NULL: the daemon's view */
} PrekillTarget;

typedef struct PrekillTargets {
        PrekillTarget *items;
        size_t n, alloc;
        int error;                  /* -ENOMEM once an item could not be added */
} PrekillTargets;

/* The event as the peers of one namespace root name the victim. */
typedef struct PrekillBody {
        const char *view;
        Body *body;
} PrekillBody;

/* ---- who may warn, and about what ---- */

/* Whether @uid is root or the user systemd-oomd runs as, looked up now (it may come and go). */
static bool prekill_may_warn(uid_t uid) {
        struct passwd pw, *found = NULL;
        char buf[4096];

        if (uid == 0)
                return true;
        return getpwnam_r(PREKILL_OOMD_USER, &pw, buf, sizeof(buf), &found) == 0 && found && found->pw_uid == uid;
}

/* The canonical path of the victim @given, a cgroup in either hierarchy. */
static int prekill_victim(const Prekill *p, const char *given, char **ret, VarlinkError *e) {
        _cleanup_free_ char *norm = NULL;
        int k, in2, in1;

        if (given[0] != '/')
                return varlink_error_invalid_cgroup_path(e, -EINVAL, given);
        k = cgroup_path_normalize(given, &norm);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return varlink_error_invalid_cgroup_path(e, k, given);
        in2 = hierarchy_stat_cgroup(p->env.v2, norm);
        in1 = in2 == 0 ? 0 : hierarchy_stat_cgroup(p->env.v1, norm);
        if (in2 != 0 && in1 != 0) {
                /* A path that names a file, or does not exist, is no cgroup; a symlink is no valid path. */
                k = in2 != -ENOENT ? in2 : in1;
                if (k == -ENOENT || k == -ENOTDIR)
                        return varlink_error_no_such_cgroup(e, k, given);
                return varlink_error_invalid_cgroup_path(e, k, given);
        }
        *ret = TAKE_PTR(norm);
        return 0;
}

/* ---- whom to warn ---- */

static void targets_add(PrekillTargets *t, PrekillTarget item) {
        if (t->error < 0)
                return;
        if (t->n == t->alloc) {
                size_t n = t->alloc ? t->alloc * 2 : 16;
                PrekillTarget *items = realloc(t->items, n * sizeof(*items));

                if (!items) {
                        t->error = -ENOMEM;
                        return;
                }
                t->items = items;
                t->alloc = n;
        }
        t->items[t->n++] = item;
}

static void targets_add_level_stream(LevelStream *s, Client *c, const char *view, void *userdata) {
        targets_add(userdata, (PrekillTarget) { .client = c, .levels = s, .view = view });
}

/* Every kills subscription whose subtree holds @victim, and every level stream on it or below. */
static int prekill_targets(const Prekill *p, const char *victim, PrekillTargets *ret) {
        Registration *r;
        Listener *l;

        LIST_FOREACH(registrations, r, p->env.registry->registrations) {
                if (r->src.type != SOURCE_KILLS || r->removed || !kills_covers(r->src.cgroup, victim))
                        continue;
                LIST_FOREACH(listeners, l, r->listeners) {
                        Subscription *s = subscription_of_listener(l);

                        if (s && !s->client->dead)
                                targets_add(ret, (PrekillTarget) { .client = s->client, .sub = s,
                                                                   .view = s->view.root });
                }
        }
        level_streams_under(p->env.levels, victim, targets_add_level_stream, ret);
        return ret->error;
}

/* ---- sending ---- */

/* The victim as a peer whose namespace root is @view names it: "/" for a root inside it. */
static const char *victim_for(const char *view, const char *victim) {
        return cgroup_view_from_real(view, victim) ?: "/";
}

/* The event of @w for the peers with root @view, made once per root in @bodies (@n_bodies so far). */
static Body *prekill_body(const PrekillWarning *w, const char *view, PrekillBody *bodies, size_t *n_bodies) {
        EventData e;
        Body *b;

        for (size_t i = 0; i < *n_bodies; i++)
                if (streq_ptr(bodies[i].view, view))
                        return bodies[i].body;
        e = (EventData) {
                .kind = EVENT_PREKILL, .cgroup = victim_for(view, w->victim), .realtime_us = w->realtime_us,
                .monotonic_us = w->start_us,
                .prekill = { .by = PREKILL_BY, .id = w->id, .deadline_us = w->deadline_us },
        };
        b = event_data_body(&e, w->start_us);
        if (b)
                bodies[(*n_bodies)++] = (PrekillBody) { view, b };
        return b;
}

/* Send @w to @t; a subscriber it could not reach is not waited for. Returns how many it reached. */
static size_t prekill_send(Prekill *p, PrekillWarning *w, const PrekillTargets *t) {
        _cleanup_free_ PrekillBody *bodies = calloc(t->n, sizeof(PrekillBody));
        size_t n_bodies = 0, reached = 0;

        for (size_t i = 0; i < t->n; i++) {
                const PrekillTarget *x = &t->items[i];
                Body *b = bodies ? prekill_body(w, x->view, bodies, &n_bodies) : NULL;
                bool ok = b && !x->client->dead &&
                          (x->sub ? subscription_warn(x->sub, b) : level_stream_warn(x->levels, b) >= 0);

                if (ok)
                        reached++;
                else if (prekill_warning_gone(&p->book, w, x->client->id))
                        log_ratelimited(LOG_WARNING, 0, NULL, 10, 3,
                                        "Could not warn client %" PRIu64 " (uid %u) before systemd-oomd kills %s: "
                                        "it is not reading, or out of memory.",
                                        x->client->id, (unsigned) x->client->uid, w->victim);
        }
        for (size_t i = 0; i < n_bodies; i++)
                body_unref(bodies[i].body);
        return reached;
}

/* How long a warning made now waits, and why, in @why. */
static uint64_t prekill_deadline(const Prekill *p, char *why, size_t size) {
        uint64_t configured = p->env.config->prekill_deadline_usec;
        OomdConf conf = {};

        if (configured > 0) {
                snprintf(why, size, "[Prekill] Deadline=");
                return configured;
        }
        if (oomd_conf_read(p->env.oomd_root, &conf) < 0)
                log_warning("Out of memory reading systemd-oomd's configuration; its default timeout is taken.");
        if (conf.prekill_timeout_usec > 0)
                snprintf(why, size, "systemd-oomd's PrekillHookTimeoutSec=%" PRIu64 "ms less %" PRIu64 "ms",
                         conf.prekill_timeout_usec / USEC_PER_MSEC, PREKILL_MARGIN_USEC / USEC_PER_MSEC);
        else
                snprintf(why, size, "systemd-oomd sets no PrekillHookTimeoutSec=: its least, %" PRIu64 "ms, less %" PRIu64 "ms",
                         PREKILL_OOMD_TIMEOUT_MIN_USEC / USEC_PER_MSEC, PREKILL_MARGIN_USEC / USEC_PER_MSEC);
        return prekill_deadline_usec(0, conf.prekill_timeout_usec);
}

/* ---- answering ---- */

static void prekill_arm(Prekill *p) {
        uint64_t next = prekill_book_next_deadline(&p->book), now = now_usec(CLOCK_MONOTONIC);
        struct timeval tv;

        if (next == 0) {
                evtimer_del(p->ev_deadline);
                return;
        }
        tv = usec_to_timeval(next > now ? next - now : 0);
        if (evtimer_add(p->ev_deadline, &tv) < 0)
                log_error("Failed to arm the deadline of the pre-kill warnings; they are answered as their subscribers acknowledge.");
}

static void prekill_changed(Prekill *p) {
        if (p->hooks && p->hooks->changed)
                p->hooks->changed(p->hooks_userdata);
}

/* The hook connection @id, not closing; NULL: none. */
static Client *hook_client(const Prekill *p, uint64_t id) {
        Client *c;

        LIST_FOREACH(clients, c, id ? p->hook->clients : NULL)
                if (c->id == id && !c->dead)
                        return c;
        return NULL;
}

static void prekill_call_free(void *stream);

uint64_t prekill_owed(const Client *c) {
        return c->stream && c->stream_free == prekill_call_free ? ((const PrekillCall *) c->stream)->warning : 0;
}

/*
 * Answer the Notify of @c that warning @id is for ({}), ending its stream.
 * Numbered by the warning: once it is written the live page says so, and a
 * successor after a crash does not answer again; until then the slot says
 * a message is half-way, and a successor after a crash in between closes
 * the connection rather than answer twice.
 */
static void prekill_answer(Prekill *p, Client *c, uint64_t id) {
        LiveSlot *l = client_live(c);

        if (prekill_owed(c)) {
                free(c->stream);
                client_stream_ended(c);
        }
        if (l)
                l->flags |= LIVE_SLOT_PARTIAL;
        if (client_send_event(c, "", 0, p->answer, id, 0) < 0 && !c->dead)
                client_kill(c);
        else if (l && outqueue_is_empty(&c->out))
                l->flags &= ~LIVE_SLOT_PARTIAL;
}

/* @c waits for the answer of warning @id; the live page says so. Returns 0 or -ENOMEM. */
static int prekill_owe(Prekill *p, Client *c, uint64_t id) {
        PrekillCall *call = malloc(sizeof(*call));
        LiveSlot *l = client_live(c);

        if (!call)
                return -ENOMEM;
        *call = (PrekillCall) { p, id };
        client_stream_start(c, call, prekill_call_free);
        if (l)
                l->seq = id;
        return 0;
}

/* @w is over: systemd-oomd is answered (unless it hung up), the book counts @outcome. */
static void prekill_end(Prekill *p, PrekillWarning *w, PrekillOutcome outcome) {
        Client *c = outcome == PREKILL_OUTCOME_ABANDONED ? NULL : hook_client(p, w->hook);
        uint64_t ms = (now_usec(CLOCK_MONOTONIC) - w->start_us) / USEC_PER_MSEC, id = w->id;

        if (outcome == PREKILL_OUTCOME_ACKNOWLEDGED)
                log_info("Answered systemd-oomd about %s after %" PRIu64 " ms: every warned subscriber acknowledged or went away (warning %" PRIu64 ").",
                         w->victim, ms, w->id);
        else if (outcome == PREKILL_OUTCOME_DEADLINE)
                log_info("Answered systemd-oomd about %s at the deadline, %" PRIu64 " ms after its call: %zu of %zu warned subscriber(s) did not acknowledge (warning %" PRIu64 ").",
                         w->victim, ms, w->n_waiting, w->n_warned, w->id);
        else
                log_notice("systemd-oomd's call about %s closed before its answer, %" PRIu64 " ms after it; %zu of %zu warned subscriber(s) still waited for (warning %" PRIu64 ").",
                           w->victim, ms, w->n_waiting, w->n_warned, w->id);
        prekill_book_end(&p->book, w, outcome);
        if (c)
                prekill_answer(p, c, id);
        prekill_arm(p);
        prekill_changed(p);
}

/*
 * Answer every warning whose deadline has passed. Called by the timer, and
 * before an acknowledgement or a departure is counted: the timer may run a
 * little after its time, and what comes in after the deadline is late, not
 * an acknowledgement.
 */
static void prekill_expire(Prekill *p) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        PrekillWarning *w, *next;

        LIST_FOREACH_SAFE(warnings, w, next, p->book.warnings)
                if (w->deadline_us <= now)
                        prekill_end(p, w, PREKILL_OUTCOME_DEADLINE);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        Prekill *p = userdata;

        prekill_expire(p);
        prekill_arm(p);
}

/* The hook connection closes while it waits for the answer (unless the process ends): the call is over. */
static void prekill_call_free(void *stream) {
        PrekillCall *call = stream;
        Prekill *p = call->prekill;
        PrekillWarning *w = p->stopped ? NULL : prekill_book_find(&p->book, call->warning);

        free(call);
        if (!w)
                return;
        w->hook = 0;
        prekill_end(p, w, PREKILL_OUTCOME_ABANDONED);
}

/* ---- the calls ---- */

/* A warning about @victim to @t (not empty), owed to @c (NULL: a oneway call). */
static int prekill_warn(Prekill *p, Client *c, const char *victim, const PrekillTargets *t) {
        uint64_t start = now_usec(CLOCK_MONOTONIC), after, reached;
        char why[160];
        PrekillWarning *w;
        unsigned proxied;
        int k;

        after = prekill_deadline(p, why, sizeof(why));
        k = prekill_warning_new(&p->book, victim, start, now_usec(CLOCK_REALTIME), start + after, c ? c->id : 0,
                                t->n, &w);
        if (k >= 0 && c && (k = prekill_owe(p, c, w->id)) < 0)
                prekill_warning_free(w);
        if (k < 0)
                return k;
        for (size_t i = 0; i < t->n; i++)
                prekill_warning_add(w, t->items[i].client->id, t->items[i].client->uid, t->items[i].client->pid);
        prekill_book_add(&p->book, w);
        /* Its id is never given again, also after a crash, and the state knows it before anyone hears of it. */
        live_page_set_mark(p->live, p->book.last_id);
        if (p->hooks && p->hooks->checkpoint)
                p->hooks->checkpoint(p->hooks_userdata);
        reached = prekill_send(p, w, t);
        proxied = proxy_warn_under(p->proxy, victim);
        log_info("systemd-oomd is about to kill %s: warned %" PRIu64 " subscriber(s) and %u proxied client(s); answering within %" PRIu64 " ms (%s; warning %" PRIu64 ").",
                 victim, reached, proxied, after / USEC_PER_MSEC, why, w->id);
        if (w->n_waiting == 0)
                prekill_end(p, w, PREKILL_OUTCOME_ACKNOWLEDGED);
        else
                prekill_arm(p);
        return 0;
}

static int prekill_limit_error(const Prekill *p, PrekillLimit limit, VarlinkError *e) {
        const Config *c = p->env.config;
        bool calls = limit == PREKILL_LIMIT_MAX_CALLS;

        log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                        "Limit [Prekill] %s=%u reached, refusing systemd-oomd's call: nobody is warned.",
                        calls ? "MaxCalls" : "MaxWarnings", calls ? c->prekill_max_calls : c->prekill_max_warnings);
        return varlink_error_limit_exceeded(e, -EUSERS, calls ? "MaxCalls" : "MaxWarnings",
                                            calls ? c->prekill_max_calls : c->prekill_max_warnings);
}

/* Notify(@cgroup) from @c: 1 to be answered now, 0 later (or never: @oneway), or the error. */
static int prekill_on_notify(Prekill *p, Client *c, const char *cgroup, bool oneway, VarlinkError *e) {
        _cleanup_free_ char *victim = NULL;
        PrekillTargets t = {};
        PrekillLimit limit;
        int k;

        if (!prekill_may_warn(c->uid)) {
                log_ratelimited(LOG_NOTICE, 0, NULL, 10, 5,
                                "Refused a pre-kill warning about %s from pid %d (uid %u): only root and %s may warn.",
                                cgroup, (int) c->pid, (unsigned) c->uid, PREKILL_OOMD_USER);
                return varlink_error_permission_denied(e, "only systemd-oomd (root or the user " PREKILL_OOMD_USER ") may warn");
        }
        k = prekill_victim(p, cgroup, &victim, e);
        if (k >= 0)
                k = prekill_targets(p, victim, &t);
        if (k >= 0 && (limit = prekill_book_admit(&p->book, p->env.config->prekill_max_calls,
                                                  p->env.config->prekill_max_warnings, t.n)) != PREKILL_LIMIT_NONE)
                k = prekill_limit_error(p, limit, e);
        if (k >= 0 && t.n > 0)
                k = prekill_warn(p, oneway ? NULL : c, victim, &t);
        else if (k >= 0) {
                unsigned proxied = proxy_warn_under(p->proxy, victim);

                prekill_book_nobody(&p->book);
                prekill_changed(p);
                log_info("systemd-oomd is about to kill %s: no subscriber to warn (%u proxied client(s) woken), answered at once.",
                         victim, proxied);
                k = 1;
        }
        free(t.items);
        return k;
}

static int prekill_notify(Prekill *p, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", NULL };
        json_t *v = json_object_get(call->parameters, "cgroup");
        int k = service_check_params(call->parameters, allowed, e);

        if (k < 0)
                return k;
        if (!json_is_string(v))
                return varlink_error_invalid_parameter(e, "cgroup");
        k = prekill_on_notify(p, c, json_string_value(v), call->oneway, e);
        return k > 0 ? service_reply(c, call, json_object(), true) : k;
}

/* A call on the hook socket (its ClientDispatchFn): Notify, and org.varlink.service. */
static void prekill_dispatch(Client *c, VarlinkCall *call, void *userdata) {
        VarlinkError e = {};
        int k = streq(call->method, PREKILL_INTERFACE ".Notify") ? prekill_notify(userdata, c, call, &e) : 1;

        service_finish(&prekill_service, c, call, k, &e);
}

/* ---- acknowledgements and departures ---- */

int prekill_acknowledge(Prekill *p, uint64_t id, uid_t uid, pid_t pid) {
        PrekillWarning *w;
        int k;

        prekill_expire(p);
        k = prekill_book_acknowledge(&p->book, id, uid, pid, &w);
        if (k < 0)
                return k;
        log_debug("Warning %" PRIu64 " about %s acknowledged by pid %d (uid %u); %zu subscriber(s) still waited for.",
                  id, w->victim, (int) pid, (unsigned) uid, w->n_waiting);
        if (w->n_waiting == 0)
                prekill_end(p, w, PREKILL_OUTCOME_ACKNOWLEDGED);
        else
                prekill_changed(p);
        return 0;
}

/* The stream of client @id went away: no warning waits for it any more. */
static void prekill_gone(Prekill *p, uint64_t id) {
        PrekillWarning *w, *next;

        prekill_expire(p);
        LIST_FOREACH_SAFE(warnings, w, next, p->book.warnings)
                if (prekill_warning_gone(&p->book, w, id) && w->n_waiting == 0)
                        prekill_end(p, w, PREKILL_OUTCOME_ACKNOWLEDGED);
}

static void on_client_disconnected(Client *c, void *userdata) {
        Prekill *p = userdata;

        if (!p->stopped)
                prekill_gone(p, c->id);
}

/* A stream that ended (unsubscribed, or its cgroup removed) went away too. */
static void on_client_stream(Client *c, void *userdata) {
        Prekill *p = userdata;

        if (!c->stream && !p->stopped)
                prekill_gone(p, c->id);
}

static const ClientServerHooks prekill_client_hooks = {
        .disconnected = on_client_disconnected,
        .stream = on_client_stream,
};

/* ---- the object ---- */

/* The hook socket's bound: MaxCalls= + 4 connections, refused on their first call; never root's or oomd's. */
static void prekill_hook_limits(Prekill *p, const Config *config) {
        p->hook->config = config;
        p->hook->max_clients = config->prekill_max_calls + PREKILL_EXTRA_CONNECTIONS;
        p->hook->max_clients_key = "MaxCalls";
        p->hook->limit_value = config->prekill_max_calls;
}

int prekill_new(const PrekillEnv *env, Prekill **ret) {
        static const char answer[] = "{\"parameters\":{}}";
        Prekill *p = calloc(1, sizeof(*p));
        int k;

        if (!p)
                return -ENOMEM;
        p->env = *env;
        p->ev_deadline = evtimer_new(env->base, on_deadline, p);
        p->answer = body_new(answer, sizeof(answer));
        k = p->ev_deadline && p->answer ? client_server_new(env->base, env->config, -1, prekill_dispatch, p, &p->hook)
                                        : -ENOMEM;
        if (k < 0) {
                prekill_free(p);
                return k;
        }
        prekill_hook_limits(p, env->config);
        p->hook->refuse_late = true;
        p->hook->exempt = prekill_may_warn;
        p->hook->views = false;
        p->hook->live_bit = PREKILL_LIVE_BIT;
        *ret = p;
        return 0;
}

Prekill *prekill_free(Prekill *p) {
        if (!p)
                return NULL;
        /* The process ends: nothing is abandoned (a successor, if any, answers). */
        p->stopped = true;
        p->hook = client_server_free(p->hook);
        if (p->hook_path) {
                (void) unlink(p->hook_path);
                free(p->hook_path);
        }
        prekill_book_done(&p->book);
        body_unref(p->answer);
        event_free_and_null(&p->ev_deadline);
        free(p);
        return NULL;
}

void prekill_stop(Prekill *p) {
        if (!p)
                return;
        p->stopped = true;
        evtimer_del(p->ev_deadline);
}

int prekill_listen(Prekill *p, int fd, const char *path) {
        if (path && !(p->hook_path = strdup(path))) {
                safe_close(fd);
                return -ENOMEM;
        }
        return client_server_set_listener(p->hook, fd);
}

void prekill_forget_path(Prekill *p) {
        if (!p)
                return;
        free(p->hook_path);
        p->hook_path = NULL;
}

int prekill_set_servers(Prekill *p, ClientServer *clients, ProxyServer *proxy) {
        p->proxy = proxy;
        if (p->clients == clients)
                return 0;
        p->clients = clients;
        return clients ? client_server_add_hooks(clients, &prekill_client_hooks, p) : 0;
}

void prekill_set_config(Prekill *p, const Config *config) {
        if (!p)
                return;
        p->env.config = config;
        prekill_hook_limits(p, config);
}

/* ---- handing over ---- */

int prekill_export(const Prekill *p, Snapshot *s) {
        s->next_hook_id = p->hook->next_client_id;
        s->prekill_last_id = p->book.last_id;
        s->prekill_counters = p->book.counters;
        return prekill_book_export(&p->book, &s->prekill_warnings, &s->n_prekill_warnings);
}

int prekill_adopt(Prekill *p, const Snapshot *s, uint64_t last_id) {
        PrekillWarning *w;
        int k = 0;

        p->book.counters = s->prekill_counters;
        p->book.last_id = s->prekill_last_id > last_id ? s->prekill_last_id : last_id;
        if (s->next_hook_id > p->hook->next_client_id)
                p->hook->next_client_id = s->next_hook_id;
        for (size_t i = 0; i < s->n_prekill_warnings; i++)
                if (prekill_book_adopt(&p->book, &s->prekill_warnings[i], &w) < 0)
                        k = -ENOMEM;
        live_page_set_mark(p->live, p->book.last_id);
        for (size_t i = 0; i < s->n_hook_clients; i++) {
                uint64_t id = s->hook_clients[i].prekill_owed;
                Client *c = id ? hook_client(p, s->hook_clients[i].id) : NULL;

                /* Owed an answer the warnings do not know (it came after the last checkpoint): given now. */
                if (c && (!prekill_book_find(&p->book, id) || prekill_owe(p, c, id) < 0))
                        prekill_answer(p, c, id);
        }
        return k;
}

/* Whether client @id is back with a stream. */
static bool prekill_client_back(const Prekill *p, uint64_t id) {
        Client *c;

        LIST_FOREACH(clients, c, p->clients ? p->clients->clients : NULL)
                if (c->id == id)
                        return !c->dead && c->stream;
        return false;
}

void prekill_resume(Prekill *p) {
        PrekillWarning *w, *next;

        LIST_FOREACH_SAFE(warnings, w, next, p->book.warnings) {
                Client *c = hook_client(p, w->hook);

                for (size_t i = 0; i < w->n_warned; i++)
                        if (w->warned[i].state == PREKILL_WAITING && !prekill_client_back(p, w->warned[i].client))
                                (void) prekill_warning_gone(&p->book, w, w->warned[i].client);
                /* Its caller hung up while nobody watched: the call is over. */
                if (w->hook && (!c || prekill_owed(c) != w->id)) {
                        w->hook = 0;
                        prekill_end(p, w, PREKILL_OUTCOME_ABANDONED);
                } else if (w->n_waiting == 0)
                        prekill_end(p, w, PREKILL_OUTCOME_ACKNOWLEDGED);
        }
        prekill_arm(p);
}
