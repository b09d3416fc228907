/* SPDX-License-Identifier: MIT */
/* Handing the daemon to the next process: see takeover.h. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "event-util.h"
#include "event.h"
#include "log.h"
#include "subscription.h"
#include "takeover.h"
#include "varlink-error.h"

/* Room the queues of a complete snapshot leave for everything else. */
#define TAKEOVER_STRUCTURE_RESERVE (UINT64_C(32) << 20)

struct Takeover {
        TakeoverEnv env;
        bool fdstore;                   /* the service manager keeps our fds */
        LivePage live;                  /* fd -1 without the fd store */
        Snapshot snap;                  /* what is being taken over */
        bool have_snap;
        bool clean;                     /* the snapshot is complete and current */
        LiveSlot *crash_slots;          /* after a crash: the live page as the old process left it */
        size_t n_crash_slots;
        uint64_t serial;                /* of the last snapshot written */
        uint64_t generation;
        char stored[FDSTORE_NAME_MAX];  /* the name of our state in the store */
        char live_name[FDSTORE_NAME_MAX]; /* and of our live page */
        char **stale;                   /* state names in the store from before, dropped after our first */
        size_t n_stale;
        bool detached;
        bool reexec_scheduled;
        struct event *ev_checkpoint;
        struct event *ev_reexec;
        ClientServer *clients;
        ProxyServer *proxy;
        ReclaimController *reclaim;
        MetricsServer *metrics;
        ReportServer *report;
        char *socket_path;              /* bound by this daemon (this process or an earlier one) */
        char *proxy_paths[_RESOURCE_MAX];
        char *prekill_path;
        uint64_t prekill_mark;          /* the last warning id the live pages before said was given */
        char *report_path;
        bool store_listeners;           /* bound by this process: they go to the store */
        char *exe;
        char **argv;
        Registration **adopted;         /* parallel to snap.registrations; NULL where it failed */
        Client **resumed;               /* adopted clients, until takeover_finish() */
        size_t n_resumed;
        TakeoverStats stats;
};

static void name_of(char buf[static FDSTORE_NAME_MAX], char kind, uint64_t id) {
        snprintf(buf, FDSTORE_NAME_MAX, "%c%" PRIu64, kind, id);
}

bool takeover_is_fd_name(const char *name) {
        size_t n = strspn(name + 1, "0123456789");

        if (streq(name, "live") || streq(name, "state") || (strncmp(name, "state-", 6) == 0 && name[6]) ||
            (strncmp(name, "live-", 5) == 0 && name[5]))
                return true;
        return strchr("cprh", name[0]) && name[0] && n > 0 && name[1 + n] == 0;
}

/* ---- keeping the store current ---- */

static void takeover_dirty(Takeover *t) {
        if (t->fdstore && !t->detached && t->ev_checkpoint)
                event_active(t->ev_checkpoint, 0, 0);
}

static void store_add(Takeover *t, int fd, char kind, uint64_t id, bool poll) {
        char name[FDSTORE_NAME_MAX];
        int k;

        if (!t->fdstore || t->detached || fd < 0)
                return;
        name_of(name, kind, id);
        k = fdstore_add(fd, name, poll);
        if (k < 0)
                log_ratelimited(LOG_WARNING, -k, NULL, 60, 1,
                                "Failed to hand %s to the service manager's fd store, a restart will close it: %m", name);
}

static void store_remove(Takeover *t, char kind, uint64_t id) {
        char name[FDSTORE_NAME_MAX];

        if (!t->fdstore || t->detached)
                return;
        name_of(name, kind, id);
        (void) fdstore_remove(name);
}

/* The letter that names the clients of @server in the store: 'c', or 'h' for the pre-kill hook's. */
static char kind_of(const Takeover *t, const ClientServer *server) {
        return server == t->clients ? 'c' : 'h';
}

static void on_client_connected(Client *c, void *userdata) {
        store_add(userdata, c->fd, kind_of(userdata, c->server), c->id, true);
}

static void on_client_disconnected(Client *c, void *userdata) {
        store_remove(userdata, kind_of(userdata, c->server), c->id);
}

/* A stream that begins is in the state before its client hears of it: a crash cannot forget it. */
static void on_client_stream(Client *c, void *userdata) {
        Takeover *t = userdata;

        if (c->stream && t->fdstore && !t->detached)
                client_hold_output(c);
        takeover_dirty(t);
}

/* The varlink socket's clients, and the pre-kill hook's: @i 0 and 1 (NULL: none). */
static ClientServer *server_of(const Takeover *t, int i) {
        return i == 0 ? t->clients : t->env.prekill ? t->env.prekill->hook : NULL;
}

static void release_held(Takeover *t) {
        Client *c;

        if (!t->clients)
                return;
        LIST_FOREACH(clients, c, t->clients->clients)
                if (c->hold_output)
                        client_release_output(c);
}

/* The daemon bound its socket again (its directory was removed): the store holds the new one. */
static void on_client_listener(ClientServer *s, void *userdata) {
        Takeover *t = userdata;

        if (!t->fdstore || t->detached || !t->socket_path)
                return;
        (void) fdstore_remove("varlink");
        if (fdstore_add(s->listen_fd, "varlink", true) < 0)
                log_warning("Failed to hand the varlink socket to the fd store.");
}

static const ClientServerHooks takeover_client_hooks = {
        .connected = on_client_connected,
        .disconnected = on_client_disconnected,
        .stream = on_client_stream,
        .listener = on_client_listener,
};

static void on_proxy_connected(ProxyClient *p, void *userdata) {
        store_add(userdata, p->fd, 'p', p->id, true);
        takeover_dirty(userdata);
}

static void on_proxy_attached(ProxyClient *p, void *userdata) {
        takeover_dirty(userdata);
}

static void on_proxy_disconnected(ProxyClient *p, void *userdata) {
        store_remove(userdata, 'p', p->id);
        takeover_dirty(userdata);
}

static const ProxyHooks takeover_proxy_hooks = {
        .connected = on_proxy_connected,
        .attached = on_proxy_attached,
        .disconnected = on_proxy_disconnected,
};

/* The hook's calls need no stream hook: a warning is in the state before anyone hears of it (PrekillHooks). */
static const ClientServerHooks takeover_hook_hooks = {
        .connected = on_client_connected,
        .disconnected = on_client_disconnected,
};

static void on_checkpoint(evutil_socket_t fd, short what, void *userdata);

/* A warning goes out: the state knows it first, whatever happens after. */
static void on_prekill_checkpoint(void *userdata) {
        on_checkpoint(-1, 0, userdata);
}

static void on_prekill_changed(void *userdata) {
        takeover_dirty(userdata);
}

static const PrekillHooks takeover_prekill_hooks = {
        .checkpoint = on_prekill_checkpoint,
        .changed = on_prekill_changed,
};

/* A PSI trigger must not be polled by anyone else: the poll that sees an event clears it. */
static void on_registration_added(Registration *r, void *userdata) {
        store_add(userdata, source_store_fd(&r->src), 'r', r->id, false);
        takeover_dirty(userdata);
}

static void on_registration_removed(Registration *r, void *userdata) {
        if (source_store_fd(&r->src) >= 0)
                store_remove(userdata, 'r', r->id);
        takeover_dirty(userdata);
}

static void on_registry_changed(void *userdata) {
        takeover_dirty(userdata);
}

static const RegistryHooks takeover_registry_hooks = {
        .added = on_registration_added,
        .removed = on_registration_removed,
        .changed = on_registry_changed,
};

/* ---- building a snapshot ---- */

static int build_counters(Takeover *t, Snapshot *s) {
        s->counters = calloc(_COUNTER_MAX, sizeof(*s->counters));
        if (!s->counters)
                return -ENOMEM;
        for (Counter c = 0; c < _COUNTER_MAX; c++) {
                s->counters[c].name = strdup(counter_info(c)->name);
                if (!s->counters[c].name)
                        return -ENOMEM;
                s->counters[c].value = t->env.counters->value[c];
                s->n_counters++;
        }
        s->latency = t->env.counters->latency;
        return 0;
}

static int build_registrations(Takeover *t, Snapshot *s) {
        Registration *r;
        size_t n = 0;

        LIST_FOREACH(registrations, r, t->env.registry->registrations)
                n++;
        if (n == 0)
                return 0;
        s->registrations = calloc(n, sizeof(*s->registrations));
        if (!s->registrations)
                return -ENOMEM;
        LIST_FOREACH(registrations, r, t->env.registry->registrations) {
                if (r->removed)
                        continue;
                if (registration_export(r, &s->registrations[s->n_registrations]) < 0)
                        return -ENOMEM;
                s->n_registrations++;
        }
        return 0;
}

/* One client: its queues within what is left of @budget, its stream with what the queues left out. */
static int build_client(Client *c, bool complete, uint64_t *budget, SnapshotClient *ret) {
        Subscription *sub = subscription_of_client(c);
        LevelStream *ls = level_stream_of_client(c);
        uint64_t dropped = 0;
        int k;

        k = client_export(c, complete, *budget, ret, &dropped);
        if (k < 0)
                return k;
        ret->prekill_owed = prekill_owed(c);
        for (size_t i = 0; i < ret->n_output; i++)
                *budget -= ret->output[i].bytes.size < *budget ? ret->output[i].bytes.size : *budget;
        if (ls) {
                k = level_stream_export(ls, &ret->levels);
                if (k < 0)
                        return k;
                ret->has_levels = true;
                ret->levels.missed += dropped;
                return 0;
        }
        if (!sub || !sub->listener.reg || sub->listener.reg->removed)
                return 0;
        k = subscription_export(sub, &ret->subscription);
        if (k < 0)
                return k;
        ret->has_subscription = true;
        ret->subscription.missed += dropped;
        return 0;
}

/* The clients of @server into *@ret (*@ret_n of them), their queues within what is left of @budget. */
static int build_clients(const ClientServer *server, bool complete, uint64_t *budget, SnapshotClient **ret,
                         size_t *ret_n) {
        Client *c;

        if (!server || server->n_clients == 0)
                return 0;
        *ret = calloc(server->n_clients, sizeof(**ret));
        if (!*ret)
                return -ENOMEM;
        LIST_FOREACH(clients, c, server->clients) {
                if (c->dead)
                        continue;
                if (build_client(c, complete, budget, &(*ret)[*ret_n]) < 0)
                        return -ENOMEM;
                (*ret_n)++;
        }
        return 0;
}

static int build_proxies(Takeover *t, Snapshot *s) {
        ProxyClient *p;

        if (!t->proxy || t->proxy->n_clients == 0)
                return 0;
        s->proxies = calloc(t->proxy->n_clients, sizeof(*s->proxies));
        if (!s->proxies)
                return -ENOMEM;
        LIST_FOREACH(all, p, t->proxy->clients) {
                if (proxy_client_export(p, &s->proxies[s->n_proxies]) < 0)
                        return -ENOMEM;
                s->n_proxies++;
        }
        return 0;
}

static int strdup_opt(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return !s || *ret ? 0 : -ENOMEM;
}

static int takeover_build(Takeover *t, bool complete, Snapshot *s) {
        uint64_t budget = SNAPSHOT_SIZE_MAX - TAKEOVER_STRUCTURE_RESERVE;
        int k;

        *s = (Snapshot) {
                .serial = ++t->serial,
                .complete = complete,
                .generation = t->generation,
                .start_monotonic_us = t->env.status->start_monotonic,
                .next_client_id = t->clients ? t->clients->next_client_id : 0,
                .next_proxy_id = t->proxy ? t->proxy->next_id : 0,
                .next_registration_id = t->env.registry->next_id,
                .psi_unprivileged = t->env.registry->env->psi_unprivileged,
        };
        if ((k = strdup_opt(t->live.fd >= 0 ? t->live_name : NULL, &s->live_name)) < 0 ||
            (k = strdup_opt(t->socket_path, &s->socket_path)) < 0 ||
            (k = strdup_opt(t->prekill_path, &s->prekill_path)) < 0 ||
            (t->env.prekill && (k = prekill_export(t->env.prekill, s)) < 0) ||
            (k = strdup_opt(t->proxy_paths[RESOURCE_MEMORY], &s->proxy_paths[RESOURCE_MEMORY])) < 0 ||
            (k = strdup_opt(t->proxy_paths[RESOURCE_CPU], &s->proxy_paths[RESOURCE_CPU])) < 0 ||
            (k = strdup_opt(t->proxy_paths[RESOURCE_IO], &s->proxy_paths[RESOURCE_IO])) < 0 ||
            (k = strdup_opt(t->report_path, &s->report_path)) < 0 ||
            (k = build_counters(t, s)) < 0 || (k = build_registrations(t, s)) < 0 ||
            /* The hook's first: an answer owed to systemd-oomd is never left out for want of room. */
            (k = build_clients(server_of(t, 1), complete, &budget, &s->hook_clients, &s->n_hook_clients)) < 0 ||
            (k = build_clients(t->clients, complete, &budget, &s->clients, &s->n_clients)) < 0 ||
            (k = build_proxies(t, s)) < 0 ||
            (t->reclaim && (k = reclaim_controller_export(t->reclaim, &s->reclaim, &s->n_reclaim)) < 0)) {
                snapshot_done(s);
                return k;
        }
        return 0;
}

/* The state as a sealed memfd; -E2BIG if it does not fit. */
static int takeover_write(Takeover *t, bool complete) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int k;

        k = takeover_build(t, complete, &s);
        if (k >= 0)
                k = snapshot_encode(&s, SNAPSHOT_SIZE_MAX, &buf, &n);
        if (k < 0)
                return k;
        return memfd_new_sealed("pressured-state", buf, n);
}

/* Drop the state names of before from the store, once ours is there. */
static void takeover_drop_stale(Takeover *t) {
        for (size_t i = 0; i < t->n_stale; i++) {
                if (!streq(t->stale[i], t->stored))
                        (void) fdstore_remove(t->stale[i]);
                free(t->stale[i]);
        }
        free(t->stale);
        t->stale = NULL;
        t->n_stale = 0;
}

/* Hand the state memfd @fd to the store in place of the one before. */
static int takeover_store_state(Takeover *t, int fd) {
        char name[FDSTORE_NAME_MAX];
        int k;

        snprintf(name, sizeof(name), "state-%" PRIu64, t->serial);
        k = fdstore_add(fd, name, false);
        if (k < 0)
                return k;
        if (t->stored[0])
                (void) fdstore_remove(t->stored);
        memcpy(t->stored, name, sizeof(name));
        takeover_drop_stale(t);
        return 0;
}

static void on_checkpoint(evutil_socket_t fd, short what, void *userdata) {
        Takeover *t = userdata;
        _cleanup_close_ int mfd = -1;
        int k;

        if (!t->fdstore || t->detached)
                return;
        mfd = takeover_write(t, false);
        k = mfd < 0 ? mfd : takeover_store_state(t, mfd);
        if (k < 0)
                log_ratelimited(LOG_WARNING, -k, NULL, 60, 1,
                                "Failed to write the state to the fd store; after a crash the next process would take over an older one: %m");
        /* Written or not, the streams go on. */
        release_held(t);
}

/* ---- reading what was inherited ---- */

/* The newer of two decoded snapshots in @best; @cand is consumed. */
static void snapshot_pick(Snapshot *best, bool *have, Snapshot *cand) {
        if (*have && (best->serial > cand->serial || (best->serial == cand->serial && best->complete))) {
                snapshot_done(cand);
                return;
        }
        if (*have)
                snapshot_done(best);
        *best = *cand;
        *cand = (Snapshot) {};
        *have = true;
}

/* Read one state fd (closed); returns 0, or the decoder's negative errno. */
static int takeover_read_state(Takeover *t, int fd, const char *name) {
        _cleanup_close_ _unused_ int owned = fd;
        _cleanup_free_ char *buf = NULL;
        Snapshot s = {};
        size_t n;
        int k;

        k = memfd_read_all(fd, SNAPSHOT_SIZE_MAX, &buf, &n);
        if (k >= 0)
                k = snapshot_decode(buf, n, &s);
        if (k < 0) {
                log_error_errno(k, "The state %s left by the previous process cannot be read (%s); its connections are closed: %m",
                                name, k == -EPROTONOSUPPORT ? "written by a newer version" : "truncated or damaged");
                return k;
        }
        snapshot_pick(&t->snap, &t->have_snap, &s);
        return 0;
}

static int stale_add(Takeover *t, const char *name) {
        char **n = realloc(t->stale, (t->n_stale + 1) * sizeof(char *));

        if (!n)
                return -ENOMEM;
        t->stale = n;
        t->stale[t->n_stale] = strdup(name);
        if (!t->stale[t->n_stale])
                return -ENOMEM;
        t->n_stale++;
        return 0;
}

/* Every state fd of @fds: read, and remembered for removal from the store. */
static int takeover_read_states(Takeover *t, NamedFds *fds) {
        bool failed = false;
        uint64_t serial;

        for (size_t i = 0; i < fds->n;) {
                NamedFd f = fds->fds[i];

                if (!streq(f.name, "state") && strncmp(f.name, "state-", 6) != 0) {
                        i++;
                        continue;
                }
                fds->fds[i] = fds->fds[--fds->n];
                if (strncmp(f.name, "state-", 6) == 0 && safe_atou64(f.name + 6, &serial) >= 0 && serial > t->serial)
                        t->serial = serial; /* ours count on from there: a name is never used twice */
                if (takeover_read_state(t, f.fd, f.name) < 0)
                        failed = true;
                if (strncmp(f.name, "state-", 6) == 0 && stale_add(t, f.name) < 0)
                        return -ENOMEM;
        }
        if (failed && t->have_snap) {
                /* One state could not be read: the other may be older than what the fds are. */
                snapshot_done(&t->snap);
                t->have_snap = false;
        }
        return 0;
}

/* What the old process's live page says, copied aside: whether it stopped cleanly, and after a crash its slots. */
static int takeover_read_live(Takeover *t, int fd) {
        LivePage old = { .fd = -1 };
        int k;

        if (fd < 0)
                return 0;
        k = live_page_adopt(fd, &old);
        if (k < 0) {
                log_warning_errno(k, "The live page of the previous process cannot be read, ignoring it: %m");
                return 0;
        }
        t->clean = t->snap.complete && live_page_clean(&old) == t->snap.serial;
        if (live_page_mark(&old) > t->prekill_mark)
                t->prekill_mark = live_page_mark(&old);
        if (!t->clean) {
                t->crash_slots = malloc(old.n_slots * sizeof(LiveSlot));
                if (!t->crash_slots) {
                        live_page_done(&old);
                        return -ENOMEM;
                }
                memcpy(t->crash_slots, old.slots, old.n_slots * sizeof(LiveSlot));
                t->n_crash_slots = old.n_slots;
        }
        /* The page stays as it is in the store until our own state is there: a crash meanwhile finds it intact. */
        live_page_done(&old);
        return 0;
}

/* The last warning id a live page that goes with no state says was given (@fd closed): never given again. */
static void stale_mark(Takeover *t, int fd) {
        LivePage old = { .fd = -1 };

        if (live_page_adopt(fd, &old) < 0)
                return;
        if (live_page_mark(&old) > t->prekill_mark)
                t->prekill_mark = live_page_mark(&old);
        live_page_done(&old);
}

/* Every live page among @fds: closed, its name dropped from the store once our state is there. */
static int takeover_stale_lives(Takeover *t, NamedFds *fds) {
        uint64_t serial;

        for (size_t i = 0; i < fds->n;) {
                NamedFd f = fds->fds[i];

                if (!streq(f.name, "live") && strncmp(f.name, "live-", 5) != 0) {
                        i++;
                        continue;
                }
                fds->fds[i] = fds->fds[--fds->n];
                stale_mark(t, f.fd);
                /* A page stored by a process that crashed before its first state: our name is above it. */
                if (strncmp(f.name, "live-", 5) == 0 && safe_atou64(f.name + 5, &serial) >= 0 && serial > t->serial)
                        t->serial = serial;
                if (stale_add(t, f.name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Our own live page, named after the serial of the first state that will go with it. */
static int takeover_new_live(Takeover *t) {
        int k;

        if (!t->fdstore)
                return 0;
        k = live_page_new(256, &t->live);
        if (k < 0)
                return log_error_errno(k, "Failed to make the live page: %m");
        snprintf(t->live_name, sizeof(t->live_name), "live-%" PRIu64, t->serial + 1);
        if (fdstore_add(t->live.fd, t->live_name, false) < 0)
                log_warning("Failed to hand the live page to the fd store; after a crash every stream would be closed.");
        return 0;
}

int takeover_inherit(Takeover *t, NamedFds *fds) {
        int k;

        k = takeover_read_states(t, fds);
        if (k >= 0 && t->have_snap) {
                int old = named_fds_take(fds, t->snap.live_name ?: "live");

                k = takeover_read_live(t, old);
                if (k >= 0 && old >= 0)
                        k = stale_add(t, t->snap.live_name ?: "live");
                /* Without the fd store (Reexecute alone) no page is kept: the complete state is all. */
                if (k >= 0 && old < 0 && !t->fdstore)
                        t->clean = t->snap.complete;
        }
        if (k >= 0)
                k = takeover_stale_lives(t, fds);
        if (t->have_snap && t->snap.serial > t->serial)
                t->serial = t->snap.serial;
        if (k >= 0)
                k = takeover_new_live(t);
        if (k < 0)
                return k;
        if (!t->have_snap)
                return 0;
        t->generation = t->snap.generation + 1;
        if (t->snap.socket_path && !(t->socket_path = strdup(t->snap.socket_path)))
                return -ENOMEM;
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                if (t->snap.proxy_paths[r] && !(t->proxy_paths[r] = strdup(t->snap.proxy_paths[r])))
                        return -ENOMEM;
        if (t->snap.prekill_path && !(t->prekill_path = strdup(t->snap.prekill_path)))
                return -ENOMEM;
        if (t->snap.report_path && !(t->report_path = strdup(t->snap.report_path)))
                return -ENOMEM;
        return 1;
}

/* ---- taking over ---- */

static int take_fd(NamedFds *fds, char kind, uint64_t id) {
        char name[FDSTORE_NAME_MAX];

        name_of(name, kind, id);
        return named_fds_take(fds, name);
}

static Registration *adopted_find(const Takeover *t, uint64_t id) {
        for (size_t i = 0; id && i < t->snap.n_registrations; i++)
                if (t->snap.registrations[i].id == id)
                        return t->adopted[i];
        return NULL;
}

static void restore_registrations(Takeover *t, NamedFds *fds) {
        for (size_t i = 0; i < t->snap.n_registrations; i++) {
                const SnapshotRegistration *sr = &t->snap.registrations[i];
                _cleanup_(varlink_error_done) VarlinkError e = {};
                SourceFailure f = {};
                int k;

                k = registration_adopt(t->env.registry, sr, take_fd(fds, 'r', sr->id), &t->adopted[i], &f);
                if (k < 0) {
                        varlink_error_from_failure(&e, &f, sr->cgroup);
                        t->adopted[i] = NULL;
                        store_remove(t, 'r', sr->id);
                        log_warning_errno(k, "The %s registration on %s could not be taken over (%s); its streams end: %m",
                                          source_type_to_string(sr->type), sr->cgroup, strna(e.name));
                        continue;
                }
                t->stats.registrations++;
        }
}

static void restore_proxies(Takeover *t, NamedFds *fds) {
        for (size_t i = 0; t->proxy && i < t->snap.n_proxies; i++) {
                const SnapshotProxyClient *sp = &t->snap.proxies[i];
                int fd = take_fd(fds, 'p', sp->id);

                if (fd < 0)
                        continue; /* gone while nobody watched */
                if (proxy_adopt_client(t->proxy, fd, sp, adopted_find(t, sp->registration)) < 0) {
                        log_warning("Out of memory taking over %s client %" PRIu64 ", closing it.",
                                    proxy_fd_name(sp->resource), sp->id);
                        store_remove(t, 'p', sp->id);
                        t->stats.closed++;
                        continue;
                }
                t->stats.proxied_clients++;
        }
}

static const LiveSlot *crash_slot(const Takeover *t, uint64_t id) {
        for (size_t i = 0; i < t->n_crash_slots; i++)
                if (t->crash_slots[i].id == id)
                        return &t->crash_slots[i];
        return NULL;
}

/*
 * After a crash: what the live page says replaces what the checkpoint
 * says of the stream. False if the connection cannot go on (a message
 * half-written, a call half-answered, or nothing known of it).
 */
static bool crash_adjust(const Takeover *t, SnapshotClient *sc) {
        const LiveSlot *l = crash_slot(t, sc->id);
        SnapshotSubscription *s = &sc->subscription;

        if (!l || (l->flags & (LIVE_SLOT_PARTIAL | LIVE_SLOT_INPUT)))
                return false;
        sc->owes_reexecute = false;
        if (sc->has_levels) {
                /* What it was last sent is not known: the level now goes to it as news. */
                sc->levels.seq = l->seq;
                /* An event lost with the process counts as missed; what was folded before is in the news. */
                sc->levels.missed = l->seq > l->written_seq ? l->seq - l->written_seq : 0;
                sc->levels.sent = -1;
                sc->levels.waiting = false;
                return true;
        }
        if (!sc->has_subscription)
                return true;
        s->seq = l->seq;
        s->written_seq = l->written_seq;
        free(s->pending.data);
        s->pending = (SnapshotBytes) {};
        s->pending_count = 0;
        if (l->flags & LIVE_SLOT_HELD)
                s->seq++; /* the event it held is lost: a number of its own makes the gap */
        s->missed = s->seq - s->written_seq;
        return true;
}

static const SnapshotRegistration *saved_find(const Takeover *t, uint64_t id) {
        for (size_t i = 0; i < t->snap.n_registrations; i++)
                if (t->snap.registrations[i].id == id)
                        return &t->snap.registrations[i];
        return NULL;
}

/* The stream's registration could not be taken over: end it as for a cgroup that is gone. */
static void restore_removed(Takeover *t, Client *c, const SnapshotClient *sc) {
        const SnapshotRegistration *sr = saved_find(t, sc->subscription.registration);
        const char *real = sr ? sr->cgroup : "/", *name;
        size_t size;
        char *msg;

        name = cgroup_view_from_real(cgroup_view_root(&c->view, sr && sr->type == SOURCE_VMPRESSURE), real);
        msg = event_removed_message(name ?: real, sc->subscription.seq + 1, &size);
        if (!msg || client_send_owned(c, msg, size) < 0)
                client_kill(c);
}

static int resumed_add(Takeover *t, Client *c) {
        Client **n = realloc(t->resumed, (t->n_resumed + 1) * sizeof(Client *));

        if (!n)
                return -ENOMEM;
        t->resumed = n;
        t->resumed[t->n_resumed++] = c;
        return 0;
}

/* A level stream: followed again, or ended as for a cgroup that is gone. */
static void restore_levels(Takeover *t, Client *c, const SnapshotClient *sc) {
        size_t size;
        char *msg;

        if (methods_levels_adopt(t->env.methods, c, &sc->levels) >= 0)
                return;
        msg = event_removed_message(sc->levels.cgroup, sc->levels.seq + 1, &size);
        if (!msg || client_send_owned(c, msg, size) < 0)
                client_kill(c);
}

/* One client of @server and its stream. */
static void restore_client(Takeover *t, ClientServer *server, int fd, SnapshotClient *sc) {
        Registration *r = sc->has_subscription ? adopted_find(t, sc->subscription.registration) : NULL;
        Subscription *sub;
        Client *c;
        int k;

        k = client_adopt(server, fd, sc, &c);
        if (k < 0) {
                log_warning_errno(k, "Client %" PRIu64 " could not be taken over, closing it: %m", sc->id);
                store_remove(t, kind_of(t, server), sc->id);
                t->stats.closed++;
                return;
        }
        if (resumed_add(t, c) < 0) {
                client_free(c);
                t->stats.closed++;
                return;
        }
        t->stats.connections++;
        if (sc->has_levels) {
                restore_levels(t, c, sc);
                return;
        }
        if (!sc->has_subscription)
                return;
        if (!r) {
                restore_removed(t, c, sc);
                return;
        }
        k = subscription_adopt(c, t->env.counters, r, &sc->subscription, &sub);
        if (k >= 0 && sc->subscription.waiting)
                k = methods_kills_adopt(t->env.methods, sub);
        if (k < 0)
                client_kill(c); /* the stream cannot go on as it was */
}

/*
 * After a crash: what the live page says of a hook connection. False if
 * it cannot go on (a message half-written, a call half-read, an answer
 * queued that the state does not owe, or nothing known of it); an answer
 * it was owed and wholly written is not owed any more, and its warning
 * owes it nobody.
 */
static bool crash_adjust_hook(Takeover *t, SnapshotClient *sc) {
        const LiveSlot *l = crash_slot(t, sc->id | PREKILL_LIVE_BIT);

        if (!l || (l->flags & (LIVE_SLOT_PARTIAL | LIVE_SLOT_INPUT)) ||
            (l->seq > l->written_seq && l->seq != sc->prekill_owed))
                return false;
        if (sc->prekill_owed && l->written_seq >= sc->prekill_owed) {
                for (size_t i = 0; i < t->snap.n_prekill_warnings; i++)
                        if (t->snap.prekill_warnings[i].hook == sc->id)
                                t->snap.prekill_warnings[i].hook = 0;
                sc->prekill_owed = 0;
        }
        return true;
}

/* The @n clients @scs of @server (the varlink socket's, or the hook's), as the live page allows after a crash. */
static void restore_clients(Takeover *t, NamedFds *fds, ClientServer *server, SnapshotClient *scs, size_t n) {
        char kind = kind_of(t, server);

        for (size_t i = 0; server && i < n; i++) {
                SnapshotClient *sc = &scs[i];
                int fd = take_fd(fds, kind, sc->id);

                if (fd < 0)
                        continue; /* it hung up while nobody watched */
                if (!t->clean && !(kind == 'c' ? crash_adjust(t, sc) : crash_adjust_hook(t, sc))) {
                        log_debug("Client %" PRIu64 " was half-way through a message when the previous process ended, closing it.",
                                  sc->id);
                        safe_close(fd);
                        store_remove(t, kind, sc->id);
                        t->stats.closed++;
                        continue;
                }
                restore_client(t, server, fd, sc);
        }
}

/* New ids start above @name's, so that a name in the store is never used twice. */
static void ids_above(Takeover *t, const char *name) {
        uint64_t id;

        if (!strchr("cprh", name[0]) || safe_atou64(name + 1, &id) < 0)
                return;
        if (name[0] == 'h' && server_of(t, 1) && id > server_of(t, 1)->next_client_id)
                server_of(t, 1)->next_client_id = id;
        if (name[0] == 'c' && t->clients && id > t->clients->next_client_id)
                t->clients->next_client_id = id;
        else if (name[0] == 'p' && t->proxy && id > t->proxy->next_id)
                t->proxy->next_id = id;
        else if (name[0] == 'r' && id > t->env.registry->next_id)
                t->env.registry->next_id = id;
}

/*
 * A proxied connection the state does not know (it came after the last
 * checkpoint, or the state could not be read): closing it would make its
 * sd-event client spin, so it is taken as a new one whose request the
 * old process read, and gets the default trigger at once, for the
 * resource of the socket its address names.
 */
static bool adopt_unknown_proxy(Takeover *t, const NamedFd *f) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        SnapshotProxyClient sp = { .decide_by_usec = now_usec(CLOCK_MONOTONIC) };

        if (!t->proxy || f->name[0] != 'p' || safe_atou64(f->name + 1, &sp.id) < 0 || sp.id == 0 ||
            getsockopt(f->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return false;
        sp.pid = cred.pid;
        sp.uid = cred.uid;
        sp.resource = proxy_resource_of_fd(t->proxy, f->fd);
        if (proxy_adopt_client(t->proxy, f->fd, &sp, NULL) < 0)
                return true; /* closed by the attempt */
        t->stats.proxied_clients++;
        return true;
}

/* What is left of the takeover's fds belonged to nobody the state knows: closed, and out of the store. */
static void drop_leftovers(Takeover *t, NamedFds *fds) {
        for (size_t i = 0; i < fds->n;) {
                NamedFd f = fds->fds[i];

                if (!takeover_is_fd_name(f.name)) {
                        i++;
                        continue;
                }
                fds->fds[i] = fds->fds[--fds->n];
                ids_above(t, f.name);
                if (adopt_unknown_proxy(t, &f))
                        continue;
                safe_close(f.fd);
                if (t->fdstore)
                        (void) fdstore_remove(f.name);
                if (f.name[0] == 'c' || f.name[0] == 'p' || f.name[0] == 'h')
                        t->stats.closed++;
        }
}

static void restore_counters(Takeover *t) {
        for (size_t i = 0; i < t->snap.n_counters; i++)
                for (Counter c = 0; c < _COUNTER_MAX; c++)
                        if (streq(counter_info(c)->name, t->snap.counters[i].name))
                                t->env.counters->value[c] = t->snap.counters[i].value;
        t->env.counters->latency = t->snap.latency;
}

void takeover_restore(Takeover *t, NamedFds *fds) {
        if (t->have_snap) {
                t->adopted = calloc(t->snap.n_registrations ?: 1, sizeof(Registration *));
                if (!t->adopted) {
                        log_error("Out of memory taking over; the connections of the previous process are closed.");
                        snapshot_done(&t->snap);
                        t->have_snap = false;
                }
        }
        if (t->have_snap) {
                restore_counters(t);
                t->env.registry->env->psi_unprivileged = t->snap.psi_unprivileged;
                if (t->snap.next_registration_id > t->env.registry->next_id)
                        t->env.registry->next_id = t->snap.next_registration_id;
                if (t->clients && t->snap.next_client_id > t->clients->next_client_id)
                        t->clients->next_client_id = t->snap.next_client_id;
                if (t->proxy && t->snap.next_proxy_id > t->proxy->next_id)
                        t->proxy->next_id = t->snap.next_proxy_id;
                restore_registrations(t, fds);
                restore_proxies(t, fds);
                restore_clients(t, fds, t->clients, t->snap.clients, t->snap.n_clients);
                /* The hook's connections, then the warnings whose answers they may be owed. */
                restore_clients(t, fds, server_of(t, 1), t->snap.hook_clients, t->snap.n_hook_clients);
                if (t->env.prekill && prekill_adopt(t->env.prekill, &t->snap, t->prekill_mark) < 0)
                        log_error("Out of memory taking over the pre-kill warnings; systemd-oomd's calls are answered now.");
                if (t->reclaim && reclaim_controller_restore(t->reclaim, t->snap.reclaim, t->snap.n_reclaim) < 0)
                        log_warning("Out of memory taking over the reclaim totals, they start from zero.");
        }
        drop_leftovers(t, fds);
}

/* The answer a Reexecute caller was owed: the new process serves. */
static void reply_reexecuted(Client *c) {
        static const char msg[] = "{\"parameters\":{}}";
        char *copy;

        if (!c->owes_reexecute || c->dead)
                return;
        c->owes_reexecute = false;
        copy = malloc(sizeof(msg));
        if (!copy || client_send_owned(c, memcpy(copy, msg, sizeof(msg)), sizeof(msg)) < 0)
                client_kill(c);
}

static void finish_registrations(Takeover *t) {
        for (size_t i = 0; i < t->snap.n_registrations; i++)
                if (t->adopted[i])
                        registration_adopted(t->adopted[i], &t->snap.registrations[i]);
        /* Those nobody came back to (a client that left meanwhile, a service turned off). */
        for (size_t i = 0; i < t->snap.n_registrations; i++)
                if (t->adopted[i] && !t->adopted[i]->listeners)
                        registration_release(t->adopted[i]);
}

static void finish_log(Takeover *t) {
        TakeoverStats *s = &t->stats;

        log_struct(LOG_INFO, MESSAGE_ID_TAKEOVER,
                   "Took over %" PRIu64 " connection(s), %" PRIu64 " pressure proxy connection(s) and %" PRIu64
                   " kernel registration(s) from generation %" PRIu64 "%s; %" PRIu64 " connection(s) closed.",
                   s->connections, s->proxied_clients, s->registrations, t->generation - 1,
                   t->clean ? "" : ", which ended without handing over (the state is its last checkpoint)", s->closed);
}

void takeover_finish(Takeover *t) {
        if (t->have_snap) {
                finish_registrations(t);
                /* What GetStatus says is in place before the first call is answered. */
                t->stats.clean = t->clean;
                t->stats.time_us = now_usec(CLOCK_REALTIME);
                t->env.status->generation = t->generation;
                t->env.status->takeover = t->stats;
                if (t->snap.start_monotonic_us && t->snap.start_monotonic_us <= now_usec(CLOCK_MONOTONIC))
                        t->env.status->start_monotonic = t->snap.start_monotonic_us;
                finish_log(t);
                for (size_t i = 0; i < t->n_resumed; i++)
                        reply_reexecuted(t->resumed[i]);
                /* Once the streams are back, before anyone goes on: a warned subscriber that is not went away. */
                if (t->env.prekill)
                        prekill_resume(t->env.prekill);
                for (size_t i = 0; i < t->n_resumed; i++)
                        client_resume(t->resumed[i]);
        }
        free(t->resumed);
        t->resumed = NULL;
        t->n_resumed = 0;
        free(t->adopted);
        t->adopted = NULL;
        free(t->crash_slots);
        t->crash_slots = NULL;
        t->n_crash_slots = 0;
        snapshot_done(&t->snap);
        t->have_snap = false;
        if (t->store_listeners) {
                if (t->clients && fdstore_add(t->clients->listen_fd, "varlink", true) < 0)
                        log_warning("Failed to hand the varlink socket to the fd store.");
                for (Resource r = 0; t->proxy && r < _RESOURCE_MAX; r++)
                        if (t->proxy->sockets[r].fd >= 0 &&
                            fdstore_add(t->proxy->sockets[r].fd, proxy_fd_name(r), true) < 0)
                                log_warning("Failed to hand the %s socket to the fd store.", proxy_fd_name(r));
                if (t->prekill_path && server_of(t, 1) && server_of(t, 1)->listen_fd >= 0 &&
                    fdstore_add(server_of(t, 1)->listen_fd, PREKILL_FD_NAME, true) < 0)
                        log_warning("Failed to hand the pre-kill hook socket to the fd store.");
                if (t->report_path && t->report && fdstore_add(report_server_fd(t->report), REPORT_FD_NAME, true) < 0)
                        log_warning("Failed to hand the %s socket to the fd store.", REPORT_FD_NAME);
        }
        if (t->fdstore)
                on_checkpoint(-1, 0, t);
}

/* ---- handing over ---- */

/* Free the clients closed meanwhile: they are not handed over. */
static void takeover_reap(Takeover *t) {
        for (int i = 0; i < 2; i++)
                if (server_of(t, i))
                        client_server_reap(server_of(t, i));
}

bool takeover_handover(Takeover *t) {
        _cleanup_close_ int fd = -1;
        int k;

        if (!t->fdstore || t->detached)
                return false;
        takeover_reap(t);
        fd = takeover_write(t, true);
        k = fd < 0 ? fd : takeover_store_state(t, fd);
        if (k < 0)
                log_error_errno(k, "Failed to hand the complete state to the fd store, the next process takes over the last checkpoint: %m");
        else
                live_page_set_clean(&t->live, t->serial);
        log_info("Handing %u connection(s), %u pressure proxy connection(s) and %u kernel registration(s) to the next process.",
                 (t->clients ? t->clients->n_clients : 0) + (server_of(t, 1) ? server_of(t, 1)->n_clients : 0),
                 t->proxy ? t->proxy->n_clients : 0,
                 t->env.registry->n_registrations);
        t->detached = true;
        return true;
}

bool takeover_detached(const Takeover *t) {
        return t->detached;
}

uint64_t takeover_generation(const Takeover *t) {
        return t->generation;
}

const char *takeover_socket_path(const Takeover *t) {
        return t->socket_path;
}

const char *takeover_proxy_path(const Takeover *t, Resource r) {
        return t->proxy_paths[r];
}

const char *takeover_prekill_path(const Takeover *t) {
        return t->prekill_path;
}

const char *takeover_report_path(const Takeover *t) {
        return t->report_path;
}

/* ---- Reexecute ---- */

void takeover_set_metrics(Takeover *t, MetricsServer *metrics) {
        t->metrics = metrics;
}

void takeover_set_report(Takeover *t, ReportServer *report, bool bound) {
        const char *path = report && bound ? report_server_path(report) : NULL;

        t->report = report;
        if (path) {
                free(t->report_path);
                t->report_path = strdup(path);
                t->store_listeners = t->fdstore;
        }
}

static int exec_fds_add(NamedFds *fds, char kind, uint64_t id, int fd) {
        char name[FDSTORE_NAME_MAX];

        if (fd < 0)
                return 0;
        name_of(name, kind, id);
        return named_fds_add(fds, name, fd);
}

/*
 * Every fd the new process takes over, named; @state is the complete
 * snapshot's memfd, under the name the store holds it by (the new process
 * drops that from the store once its own state is there).
 */
static int exec_fds_collect(Takeover *t, int state, NamedFds *fds) {
        Registration *r;
        Client *c;
        ProxyClient *p;
        int k = named_fds_add(fds, t->fdstore && t->stored[0] ? t->stored : "state", state);

        if (k >= 0 && t->live.fd >= 0)
                k = named_fds_add(fds, t->live_name, t->live.fd);
        if (k >= 0 && t->clients)
                k = named_fds_add(fds, "varlink", t->clients->listen_fd);
        for (Resource res = 0; t->proxy && res < _RESOURCE_MAX; res++)
                if (k >= 0 && t->proxy->sockets[res].fd >= 0)
                        k = named_fds_add(fds, proxy_fd_name(res), t->proxy->sockets[res].fd);
        if (k >= 0 && server_of(t, 1) && server_of(t, 1)->listen_fd >= 0)
                k = named_fds_add(fds, PREKILL_FD_NAME, server_of(t, 1)->listen_fd);
        if (k >= 0 && t->report)
                k = named_fds_add(fds, REPORT_FD_NAME, report_server_fd(t->report));
        LIST_FOREACH(registrations, r, t->env.registry->registrations)
                if (k >= 0 && !r->removed)
                        k = exec_fds_add(fds, 'r', r->id, source_store_fd(&r->src));
        for (int i = 0; i < 2; i++)
                LIST_FOREACH(clients, c, server_of(t, i) ? server_of(t, i)->clients : NULL)
                        if (k >= 0 && !c->dead)
                                k = exec_fds_add(fds, kind_of(t, c->server), c->id, c->fd);
        if (t->proxy)
                LIST_FOREACH(all, p, t->proxy->clients)
                        if (k >= 0)
                                k = exec_fds_add(fds, 'p', p->id, p->fd);
        return k;
}

/* The list only: its fds are the daemon's own. */
static void exec_fds_free(NamedFds *fds) {
        free(fds->fds);
}

/* "NAME=FD NAME=FD ...", the fds inherited across exec with @cloexec cleared, or set again. */
static char *exec_fds_prepare(const NamedFds *fds, bool cloexec) {
        size_t size = 1, n = 0;
        char *list;

        for (size_t i = 0; i < fds->n; i++) {
                (void) fcntl(fds->fds[i].fd, F_SETFD, cloexec ? FD_CLOEXEC : 0);
                size += strlen(fds->fds[i].name) + 13;
        }
        if (cloexec)
                return NULL;
        list = malloc(size);
        if (!list)
                return NULL;
        list[0] = 0;
        for (size_t i = 0; i < fds->n; i++)
                n += (size_t) snprintf(list + n, size - n, "%s%s=%d", i ? " " : "", fds->fds[i].name, fds->fds[i].fd);
        return list;
}

/* execve() with every fd of @fds inherited; returns only on failure, with the fds as they were. */
static int takeover_exec(Takeover *t, const NamedFds *fds) {
        _cleanup_free_ char *list = exec_fds_prepare(fds, false);
        int k;

        if (!list) {
                (void) exec_fds_prepare(fds, true);
                return -ENOMEM;
        }
        if (setenv(FDSTORE_REEXEC_ENV, list, 1) < 0)
                k = -errno;
        else {
                (void) sd_notifyf(0, "RELOADING=1\nSTATUS=Executing %s anew.\nMONOTONIC_USEC=%" PRIu64, t->exe,
                                  now_usec(CLOCK_MONOTONIC));
                log_info("Executing %s anew, handing it %zu fd(s).", t->exe, fds->n);
                execv(t->exe, t->argv);
                k = -errno;
        }
        (void) unsetenv(FDSTORE_REEXEC_ENV);
        (void) exec_fds_prepare(fds, true);
        return k;
}

/* Reexecute failed and the old process serves on: the callers hear why. */
static void reexec_failed(Takeover *t, int error) {
        Client *c;

        log_error_errno(error, "Failed to execute %s anew, serving on: %m", strna(t->exe));
        (void) sd_notify(0, "READY=1\nSTATUS=Serving (Reexecute failed).");
        live_page_set_clean(&t->live, 0);
        if (!t->clients)
                return;
        LIST_FOREACH(clients, c, t->clients->clients) {
                VarlinkError e = {};
                size_t n;
                char *msg;

                if (!c->owes_reexecute || c->dead)
                        continue;
                c->owes_reexecute = false;
                varlink_error_internal(&e, error);
                msg = varlink_error_new(e.name, TAKE_PTR(e.parameters), &n);
                varlink_error_done(&e);
                if (!msg || client_send_owned(c, msg, n) < 0)
                        client_kill(c);
                else
                        client_resume(c); /* the calls it sent after Reexecute */
        }
}

/* Whether a kernel notification was kicked and its report is still queued in this turn of the loop. */
static bool reports_pending(const Takeover *t) {
        Registration *r;

        LIST_FOREACH(registrations, r, t->env.registry->registrations)
                if (r->src.woke > 0)
                        return true;
        return false;
}

static void on_reexec(evutil_socket_t fd, short what, void *userdata) {
        Takeover *t = userdata;
        _cleanup_(exec_fds_free) NamedFds fds = {};
        _cleanup_close_ int state = -1;
        int k;

        /* The kernel will not tell the next process again: go behind the queued reports (and what they begin). */
        if (reports_pending(t)) {
                event_active(t->ev_reexec, 0, 0);
                return;
        }
        t->reexec_scheduled = false;
        takeover_reap(t);
        state = takeover_write(t, true);
        if (state < 0) {
                reexec_failed(t, state);
                return;
        }
        /* With the fd store, it also holds the state: a new binary that crashes is restarted from it. */
        if (t->fdstore && takeover_store_state(t, state) < 0)
                log_warning("Failed to hand the state to the fd store before executing anew.");
        live_page_set_clean(&t->live, t->serial);
        k = exec_fds_collect(t, state, &fds);
        if (k >= 0) {
                metrics_server_stop_walk(t->metrics);
                report_server_stop_walk(t->report);
                k = takeover_exec(t, &fds);
        }
        reexec_failed(t, k);
}

int takeover_set_exec(Takeover *t, const char *exe, char *const *argv) {
        size_t n = 0;

        while (argv && argv[n])
                n++;
        t->exe = exe ? strdup(exe) : NULL;
        t->argv = calloc(n + 1, sizeof(char *));
        if ((exe && !t->exe) || !t->argv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(t->argv[i] = strdup(argv[i])))
                        return -ENOMEM;
        return 0;
}

int takeover_schedule_reexec(Takeover *t) {
        if (!t->exe || !t->argv || !t->argv[0])
                return -EOPNOTSUPP;
        if (t->reexec_scheduled || t->detached)
                return -EBUSY;
        if (access(t->exe, X_OK) < 0)
                return log_warning_errno(errno, "Cannot execute %s anew: %m", t->exe);
        t->reexec_scheduled = true;
        event_active(t->ev_reexec, 0, 0);
        return 0;
}

/* ---- the object ---- */

int takeover_new(const TakeoverEnv *env, Takeover **ret) {
        Takeover *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->env = *env;
        t->live.fd = -1;
        t->fdstore = fdstore_enabled();
        t->ev_checkpoint = event_new(env->base, -1, 0, on_checkpoint, t);
        t->ev_reexec = event_new(env->base, -1, 0, on_reexec, t);
        if (!t->ev_checkpoint || !t->ev_reexec) {
                takeover_free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

/* The pre-kill warnings: the live page for their ids and connections, and the store's hooks. */
static void takeover_set_prekill(Takeover *t, const char *prekill_path) {
        Prekill *p = t->env.prekill;

        if (!p)
                return;
        if (prekill_path) {
                free(t->prekill_path);
                t->prekill_path = strdup(prekill_path);
        }
        if (t->live.fd >= 0) {
                p->live = &t->live;
                p->hook->live = &t->live;
        }
        if (!t->fdstore)
                return;
        (void) client_server_add_hooks(p->hook, &takeover_hook_hooks, t);
        p->hooks = &takeover_prekill_hooks;
        p->hooks_userdata = t;
}

void takeover_set_servers(Takeover *t, ClientServer *clients, ProxyServer *proxy, ReclaimController *reclaim,
                          const char *socket_path, const char *const proxy_paths[static _RESOURCE_MAX],
                          const char *prekill_path) {
        bool bound = socket_path || prekill_path;

        t->clients = clients;
        t->proxy = proxy;
        t->reclaim = reclaim;
        if (socket_path) {
                free(t->socket_path);
                t->socket_path = strdup(socket_path);
        }
        for (Resource r = 0; r < _RESOURCE_MAX; r++) {
                if (!proxy_paths[r])
                        continue;
                free(t->proxy_paths[r]);
                t->proxy_paths[r] = strdup(proxy_paths[r]);
                bound = true;
        }
        t->store_listeners = t->fdstore && bound;
        takeover_set_prekill(t, prekill_path);
        if (clients && t->live.fd >= 0)
                clients->live = &t->live;
        if (!t->fdstore)
                return;
        if (clients)
                (void) client_server_add_hooks(clients, &takeover_client_hooks, t);
        if (proxy) {
                proxy->hooks = &takeover_proxy_hooks;
                proxy->hooks_userdata = t;
        }
        t->env.registry->hooks = &takeover_registry_hooks;
        t->env.registry->hooks_userdata = t;
}

Takeover *takeover_free(Takeover *t) {
        if (!t)
                return NULL;
        /* The servers and the registry are gone already: they used the hooks and the live page to the end. */
        event_free_and_null(&t->ev_checkpoint);
        event_free_and_null(&t->ev_reexec);
        live_page_done(&t->live);
        snapshot_done(&t->snap);
        for (size_t i = 0; i < t->n_stale; i++)
                free(t->stale[i]);
        free(t->stale);
        free(t->crash_slots);
        free(t->adopted);
        free(t->resumed);
        free(t->socket_path);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                free(t->proxy_paths[r]);
        free(t->prekill_path);
        free(t->report_path);
        free(t->exe);
        for (size_t i = 0; t->argv && t->argv[i]; i++)
                free(t->argv[i]);
        free(t->argv);
        free(t);
        return NULL;
}
