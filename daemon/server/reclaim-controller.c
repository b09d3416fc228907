/* SPDX-License-Identifier: MIT */
/* Proactive reclaim: the timer, the cgroups under control, status and metrics. See reclaim-controller.h. */
#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/resource.h>

#include "cgroup-glob.h"
#include "cgroup-ns.h"
#include "event-util.h"
#include "log.h"
#include "metrics-text.h"
#include "protection-tree.h"
#include "reclaim.h"
#include "reclaim-controller.h"
#include "reclaim-worker.h"

/* One cgroup under control. */
typedef struct ReclaimCgroup {
        char *path;
        uint64_t id;                /* matches worker results to the cgroup */
        ReclaimSample prev;
        bool has_prev;
        bool tracked;               /* by the protection reader */
        bool in_flight;             /* a write is queued or under way */
        bool last_eagain;           /* the last write could not reclaim it all */
        bool no_reclaim_file;       /* the write found no memory.reclaim: unsupported while it stays */
        uint64_t reclaimed, last_step, floor;
        uint32_t stall_ppm, io_stall_ppm;
        ReclaimState state;
        bool floor_logged;          /* the journal heard it reach its floor */
        bool backing_off;
        uint64_t backoff_since;     /* CLOCK_MONOTONIC */
        bool backoff_logged;
} ReclaimCgroup;

struct ReclaimController {
        struct event_base *base;
        char *root_path;            /* NULL: no cgroup2 hierarchy */
        int root_fd;
        bool recursive;
        ReclaimParams params;
        uint64_t interval_usec;
        CgroupGlobs *globs;         /* NULL: off */
        struct event *timer;        /* exists only while on with a hierarchy */
        ReclaimWorker *worker;      /* likewise */
        ProtectionReader *reader;   /* likewise, once a cgroup matched */
        ReclaimWriteFn write_fn;
        ReclaimClockFn clock;
        void *clock_userdata;
        ReclaimCgroup **entries;    /* in walk order */
        size_t n_entries;
        uint64_t next_id;
        bool unsupported_logged, omitted_logged;
        SnapshotReclaim *saved;     /* what a previous process did, until each cgroup is back */
        size_t n_saved;
};

static uint64_t reclaim_now(const ReclaimController *rc) {
        return rc->clock ? rc->clock(rc->clock_userdata) : now_usec(CLOCK_MONOTONIC);
}

static ReclaimCgroup *reclaim_cgroup_free(ReclaimCgroup *e) {
        if (!e)
                return NULL;
        free(e->path);
        free(e);
        return NULL;
}

/* A cgroup back under control takes what a previous process did in it. */
static void reclaim_cgroup_take_saved(ReclaimController *rc, ReclaimCgroup *e) {
        for (size_t i = 0; i < rc->n_saved; i++)
                if (streq(rc->saved[i].cgroup, e->path)) {
                        e->reclaimed = rc->saved[i].reclaimed;
                        e->last_step = rc->saved[i].last_step;
                        free(rc->saved[i].cgroup);
                        rc->saved[i] = rc->saved[--rc->n_saved];
                        return;
                }
}

static ReclaimCgroup *reclaim_cgroup_new(ReclaimController *rc, const char *path, ReclaimState state) {
        ReclaimCgroup *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        e->path = strdup(path);
        if (!e->path)
                return reclaim_cgroup_free(e);
        e->id = ++rc->next_id;
        e->state = state;
        reclaim_cgroup_take_saved(rc, e);
        return e;
}

int reclaim_controller_export(const ReclaimController *rc, SnapshotReclaim **ret, size_t *ret_n) {
        size_t n = rc->n_entries + rc->n_saved, k = 0;
        SnapshotReclaim *out;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        out = calloc(n, sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < rc->n_entries + rc->n_saved; i++) {
                const char *path = i < rc->n_entries ? rc->entries[i]->path : rc->saved[i - rc->n_entries].cgroup;

                /* Without a hierarchy an entry is a pattern, not a cgroup. */
                if (!path || path[0] != '/')
                        continue;
                out[k].cgroup = strdup(path);
                if (!out[k].cgroup) {
                        while (k > 0)
                                free(out[--k].cgroup);
                        free(out);
                        return -ENOMEM;
                }
                out[k].reclaimed = i < rc->n_entries ? rc->entries[i]->reclaimed : rc->saved[i - rc->n_entries].reclaimed;
                out[k].last_step = i < rc->n_entries ? rc->entries[i]->last_step : rc->saved[i - rc->n_entries].last_step;
                k++;
        }
        *ret = out;
        *ret_n = k;
        return 0;
}

int reclaim_controller_restore(ReclaimController *rc, const SnapshotReclaim *saved, size_t n) {
        SnapshotReclaim *copy = n ? calloc(n, sizeof(*copy)) : NULL;

        if (n && !copy)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                copy[i] = saved[i];
                copy[i].cgroup = strdup(saved[i].cgroup);
                if (!copy[i].cgroup) {
                        while (i > 0)
                                free(copy[--i].cgroup);
                        free(copy);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < rc->n_saved; i++)
                free(rc->saved[i].cgroup);
        free(rc->saved);
        rc->saved = copy;
        rc->n_saved = n;
        return 0;
}

/* Drop @e: the reader stops tracking it; a write in flight finds no cgroup when it returns. */
static void reclaim_cgroup_drop(ReclaimController *rc, ReclaimCgroup *e) {
        if (e->tracked && rc->reader)
                (void) protection_reader_untrack(rc->reader, e->path);
        if (e->backoff_logged)
                log_struct(LOG_INFO, MESSAGE_ID_RECLAIM, "Reclaim: %s left the controller while backing off.",
                           e->path);
        reclaim_cgroup_free(e);
}

static void reclaim_entries_clear(ReclaimController *rc) {
        for (size_t i = 0; i < rc->n_entries; i++)
                reclaim_cgroup_drop(rc, rc->entries[i]);
        free(rc->entries);
        rc->entries = NULL;
        rc->n_entries = 0;
}

/* Everything but the settings goes: no timer, thread, reader or cgroup is left. */
static void reclaim_stop(ReclaimController *rc) {
        event_free_and_null(&rc->timer);
        rc->worker = reclaim_worker_free(rc->worker);
        reclaim_entries_clear(rc);
        rc->reader = protection_reader_free(rc->reader);
        rc->globs = cgroup_globs_free(rc->globs);
}

/*
 * The entry for @path in the previous array, looked for from *@cursor on
 * (both are in walk order, so this is one step in the common case); with
 * @take it is removed from the array.
 */
static ReclaimCgroup *reclaim_find(ReclaimController *rc, const char *path, size_t *cursor, bool take) {
        for (size_t k = 0; k < rc->n_entries; k++) {
                size_t i = (*cursor + k) % rc->n_entries;
                ReclaimCgroup *e = rc->entries[i];

                if (e && streq(e->path, path)) {
                        if (take)
                                rc->entries[i] = NULL;
                        *cursor = i + 1;
                        return e;
                }
        }
        return NULL;
}

static ReclaimCgroup *reclaim_find_id(const ReclaimController *rc, uint64_t id) {
        for (size_t i = 0; i < rc->n_entries; i++)
                if (rc->entries[i]->id == id)
                        return rc->entries[i];
        return NULL;
}

/* Journal lines: the first time at the floor, over a minute backing off, recovery. */
static void reclaim_cgroup_set_state(ReclaimCgroup *e, ReclaimState s, uint64_t now) {
        if (s == RECLAIM_STATE_AT_FLOOR && !e->floor_logged) {
                log_struct(LOG_INFO, MESSAGE_ID_RECLAIM,
                           "Reclaim: %s reached its floor of %" PRIu64 " bytes (MinSize= or its effective "
                           "memory.min/memory.low); not reclaiming below it.", e->path, e->floor);
                e->floor_logged = true;
        }
        if (s == RECLAIM_STATE_BACKING_OFF) {
                if (!e->backing_off) {
                        e->backing_off = true;
                        e->backoff_since = now;
                } else if (!e->backoff_logged && now - e->backoff_since >= RECLAIM_BACKOFF_LOG_USEC) {
                        log_struct(LOG_NOTICE, MESSAGE_ID_RECLAIM,
                                   "Reclaim: %s has been backing off for over a minute (memory stall %.3f%%, "
                                   "io stall %.3f%% in the last interval).", e->path, e->stall_ppm / 10000.0,
                                   e->io_stall_ppm / 10000.0);
                        e->backoff_logged = true;
                }
        } else if (e->backing_off) {
                if (e->backoff_logged)
                        log_struct(LOG_INFO, MESSAGE_ID_RECLAIM, "Reclaim: %s stopped backing off after %" PRIu64
                                   " s; now %s.", e->path, (now - e->backoff_since) / USEC_PER_SEC,
                                   reclaim_state_to_string(s));
                e->backing_off = e->backoff_logged = false;
        }
        e->state = s;
}

static void reclaim_log_unsupported(ReclaimController *rc, const ReclaimCgroup *e, const char *why) {
        if (rc->unsupported_logged)
                return;
        log_struct(LOG_WARNING, MESSAGE_ID_RECLAIM,
                   "Reclaim: %s cannot be reclaimed (%s); it and any other such cgroup stay \"unsupported\".",
                   e->path, why);
        rc->unsupported_logged = true;
}

/*
 * The protection of @e: max(effective memory.min, effective memory.low).
 * Returns false when the model does not hold the cgroup (not reclaiming then).
 */
static bool reclaim_protection(ReclaimController *rc, const ReclaimCgroup *e, uint64_t *ret) {
        ProtectionNode *node;
        ProtectionValues v;

        if (!rc->reader || !e->tracked)
                return false;
        node = protection_reader_lookup(rc->reader, e->path);
        if (!node)
                return false;
        protection_node_get(node, &v);
        *ret = v.emin > v.elow ? v.emin : v.elow;
        return true;
}

/* Whether @s has what the controller reads: memory.current and memory.pressure. */
static bool reclaim_sample_usable(const CgroupSample *s) {
        return s->has_memory_current && s->has_psi[CGROUP_RESOURCE_MEMORY];
}

/* Decide and submit the step of @e from @s, read at @now. */
static void reclaim_cgroup_update(ReclaimController *rc, ReclaimCgroup *e, const CgroupSample *s, uint64_t now) {
        ReclaimInput in = { .memory_current = s->memory_current, .last_eagain = e->last_eagain };
        ReclaimDecision d;
        bool known;
        int r;

        if (e->no_reclaim_file || !reclaim_sample_usable(s)) {
                reclaim_log_unsupported(rc, e, e->no_reclaim_file ? "no memory.reclaim: kernel before 5.19?"
                                               : !s->has_memory_current ? "no memory controller there"
                                                                        : "no PSI there");
                e->has_prev = false;
                e->last_step = 0;
                reclaim_cgroup_set_state(e, RECLAIM_STATE_UNSUPPORTED, now);
                return;
        }
        in.now = (ReclaimSample) {
                .memory_some_us = s->psi[CGROUP_RESOURCE_MEMORY].some.total_us,
                .io_some_us = s->has_psi[CGROUP_RESOURCE_IO] ? s->psi[CGROUP_RESOURCE_IO].some.total_us : 0,
                .time_us = now,
        };
        known = reclaim_protection(rc, e, &in.protection);
        reclaim_decide(&rc->params, e->has_prev ? &e->prev : NULL, &in, &d);
        e->prev = in.now;
        e->has_prev = true;
        e->last_eagain = false;
        e->stall_ppm = d.stall_ppm;
        e->io_stall_ppm = d.io_stall_ppm;
        e->floor = d.floor;
        e->last_step = 0;
        if (d.step > 0 && !known)
                log_ratelimited(LOG_WARNING, 0, NULL, 60, 1,
                                "Reclaim: the protection of %s is not known; not reclaiming it this interval.",
                                e->path);
        else if (d.step > 0 && !e->in_flight) {
                r = reclaim_worker_submit(rc->worker, e->id, e->path, d.step);
                if (r < 0)
                        log_ratelimited(LOG_WARNING, -r, NULL, 60, 1,
                                        "Reclaim: failed to queue the write for %s, skipping: %m", e->path);
                else {
                        e->in_flight = true;
                        e->last_step = d.step;
                }
        }
        reclaim_cgroup_set_state(e, d.state, now);
}

/* A worker result, on the loop. */
static void reclaim_on_done(const ReclaimJob *job, void *userdata) {
        ReclaimController *rc = userdata;
        ReclaimCgroup *e = reclaim_find_id(rc, job->id);

        if (!e)
                return; /* it left the controller meanwhile */
        e->in_flight = false;
        switch (job->result) {
        case 0:
                e->reclaimed += job->bytes;
                break;
        case -EAGAIN:
                e->last_eagain = true;
                break;
        case -ESRCH:
        case -EINTR:
                break; /* gone: dropped at the next interval; interrupted: tried again then */
        case -EOPNOTSUPP:
                e->no_reclaim_file = true;
                reclaim_log_unsupported(rc, e, "no memory.reclaim: kernel before 5.19?");
                reclaim_cgroup_set_state(e, RECLAIM_STATE_UNSUPPORTED, reclaim_now(rc));
                break;
        default:
                e->last_eagain = true;
                log_ratelimited(LOG_WARNING, -job->result, NULL, 60, 1,
                                "Reclaim: failed to write %s/memory.reclaim, backing off: %m", e->path);
        }
        log_debug("Reclaim: %s: %" PRIu64 " bytes in %" PRIu64 " us: %s", e->path, job->bytes, job->usec,
                  job->result == 0 ? "done" : strerror(-job->result));
}

/*
 * Match this walk's samples with the cgroups under control, in walk order:
 * new ones join, the rest (vanished or no longer matching) leave. Returns
 * 0 or -ENOMEM (nothing changed then).
 */
static int reclaim_merge(ReclaimController *rc, const CgroupScrape *s) {
        ReclaimCgroup **next = calloc(s->n_samples ?: 1, sizeof(ReclaimCgroup *));
        size_t cursor = 0;

        if (!next)
                return -ENOMEM;
        /* First the new ones, so that a failure leaves the old array whole. */
        for (size_t i = 0; i < s->n_samples; i++) {
                if (reclaim_find(rc, s->samples[i].path, &cursor, false))
                        continue;
                next[i] = reclaim_cgroup_new(rc, s->samples[i].path, RECLAIM_STATE_PROBING);
                if (!next[i]) {
                        for (size_t k = 0; k < i; k++)
                                reclaim_cgroup_free(next[k]);
                        free(next);
                        return -ENOMEM;
                }
        }
        cursor = 0;
        for (size_t i = 0; i < s->n_samples; i++)
                if (!next[i])
                        next[i] = reclaim_find(rc, s->samples[i].path, &cursor, true);
        for (size_t i = 0; i < rc->n_entries; i++)
                if (rc->entries[i])
                        reclaim_cgroup_drop(rc, rc->entries[i]);
        free(rc->entries);
        rc->entries = next;
        rc->n_entries = s->n_samples;
        return 0;
}

/* A quarter of the RLIMIT_NOFILE soft limit. */
static unsigned reclaim_fd_budget(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur / 4 > UINT_MAX)
                return 1024;
        return (unsigned) (rl.rlim_cur / 4);
}

/*
 * Track the new cgroups (those that can be reclaimed; @s holds their
 * samples, in the same order) in the protection reader and bring the
 * model up to date.
 */
static void reclaim_sync_protection(ReclaimController *rc, const CgroupScrape *s) {
        int r;

        if (!rc->reader) {
                r = protection_reader_new(rc->root_path, rc->recursive, &rc->reader);
                if (r < 0) {
                        log_ratelimited(LOG_WARNING, -r, NULL, 60, 1,
                                        "Reclaim: failed to open the protection tree of %s, not reclaiming: %m",
                                        rc->root_path);
                        return;
                }
                /* The protection source's reader may take half of the descriptors; this one a quarter. */
                protection_reader_set_fd_budget(rc->reader, reclaim_fd_budget());
        }
        for (size_t i = 0; i < rc->n_entries; i++) {
                ReclaimCgroup *e = rc->entries[i];

                if (e->tracked || e->no_reclaim_file || !reclaim_sample_usable(&s->samples[i]))
                        continue;
                r = protection_reader_track_later(rc->reader, e->path);
                if (r >= 0)
                        e->tracked = true;
                else if (r != -ENOENT)
                        log_ratelimited(LOG_WARNING, -r, NULL, 60, 1,
                                        "Reclaim: failed to read the protection of %s, not reclaiming it: %m",
                                        e->path);
        }
        r = protection_reader_refresh(rc->reader);
        if (r < 0)
                log_ratelimited(LOG_WARNING, -r, NULL, 60, 1, "Reclaim: failed to refresh the protection tree: %m");
}

void reclaim_controller_tick(ReclaimController *rc) {
        CgroupScrape s;
        uint64_t now;
        int r;

        if (!rc->globs || rc->root_fd < 0)
                return;
        r = cgroup_scrape(rc->root_fd, rc->globs, RECLAIM_MAX_CGROUPS, &s);
        now = reclaim_now(rc);
        if (r >= 0)
                r = reclaim_merge(rc, &s);
        if (r < 0) {
                log_ratelimited(LOG_WARNING, -r, NULL, 60, 1, "Reclaim: failed to walk the cgroup tree, skipping an interval: %m");
                cgroup_scrape_done(&s);
                return;
        }
        if (s.omitted > 0 && !rc->omitted_logged) {
                log_warning("Reclaim: Cgroups= matches more than %d cgroups; the %" PRIu64 " after the first %d "
                            "in tree order are not controlled.", RECLAIM_MAX_CGROUPS, s.omitted, RECLAIM_MAX_CGROUPS);
                rc->omitted_logged = true;
        }
        if (s.errors.count > 0)
                log_ratelimited(LOG_WARNING, -s.errors.first_error, NULL, 60, 1,
                                "Reclaim: failed to read %u cgroup file(s), the first %s: %m", s.errors.count,
                                s.errors.first_path);
        if (rc->n_entries > 0)
                reclaim_sync_protection(rc, &s);
        for (size_t i = 0; i < rc->n_entries; i++)
                reclaim_cgroup_update(rc, rc->entries[i], &s.samples[i], now);
        cgroup_scrape_done(&s);
}

static void reclaim_on_timer(evutil_socket_t fd, short what, void *userdata) {
        reclaim_controller_tick(userdata);
}

int reclaim_controller_new(struct event_base *base, const char *root_path, int root_fd, bool recursive,
                           ReclaimController **ret) {
        ReclaimController *rc = calloc(1, sizeof(*rc));

        if (!rc)
                return -ENOMEM;
        rc->base = base;
        rc->root_fd = root_path ? root_fd : -1;
        rc->recursive = recursive;
        if (root_path && !(rc->root_path = strdup(root_path))) {
                free(rc);
                return -ENOMEM;
        }
        *ret = rc;
        return 0;
}

ReclaimController *reclaim_controller_free(ReclaimController *rc) {
        if (!rc)
                return NULL;
        (void) reclaim_controller_restore(rc, NULL, 0);
        reclaim_stop(rc);
        free(rc->root_path);
        free(rc);
        return NULL;
}

void reclaim_controller_set_write_fn(ReclaimController *rc, ReclaimWriteFn fn) {
        rc->write_fn = fn;
}

void reclaim_controller_set_clock(ReclaimController *rc, ReclaimClockFn fn, void *userdata) {
        rc->clock = fn;
        rc->clock_userdata = userdata;
}

size_t reclaim_controller_in_flight(const ReclaimController *rc) {
        size_t n = 0;

        for (size_t i = 0; i < rc->n_entries; i++)
                n += rc->entries[i]->in_flight;
        return n;
}

bool reclaim_controller_active(const ReclaimController *rc) {
        return rc && rc->timer;
}

/*
 * Without a cgroup2 hierarchy nothing can be matched: each pattern is
 * listed as it is written, "unsupported", so that GetStatus says why
 * nothing happens. Returns 0 or -ENOMEM.
 */
static int reclaim_list_patterns(ReclaimController *rc, const char *text) {
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                ReclaimCgroup **p = realloc(rc->entries, (rc->n_entries + 1) * sizeof(ReclaimCgroup *));
                ReclaimCgroup *e;

                if (!p)
                        return -ENOMEM;
                rc->entries = p;
                e = reclaim_cgroup_new(rc, w, RECLAIM_STATE_UNSUPPORTED);
                if (!e)
                        return -ENOMEM;
                rc->entries[rc->n_entries++] = e;
        }
        if (!rc->unsupported_logged)
                log_warning("Reclaim: no cgroup2 hierarchy, so [Reclaim] Cgroups= can match nothing; "
                            "the controller stays off.");
        rc->unsupported_logged = true;
        return 0;
}

/* Start the thread and the timer (or re-arm it at a new interval). */
static int reclaim_start(ReclaimController *rc) {
        struct timeval tv = usec_to_timeval(rc->interval_usec);
        int r;

        if (!rc->worker) {
                r = reclaim_worker_new(rc->base, rc->root_fd, RECLAIM_MAX_CGROUPS, rc->write_fn, reclaim_on_done,
                                       rc, &rc->worker);
                if (r < 0)
                        return r;
        }
        if (!rc->timer) {
                rc->timer = event_new(rc->base, -1, EV_PERSIST, reclaim_on_timer, rc);
                if (!rc->timer)
                        return -ENOMEM;
        }
        if (event_add(rc->timer, &tv) < 0)
                return -ENOMEM;
        return 0;
}

int reclaim_controller_configure(ReclaimController *rc, const Config *c, bool recursive) {
        CgroupGlobs *g = NULL;
        bool was_on = rc->timer != NULL;
        int r;

        rc->params = (ReclaimParams) {
                .target_ppm = c->reclaim_target_ppm,
                .max_step_ppm = c->reclaim_max_step_ppm,
                .min_size = c->reclaim_min_size,
        };
        rc->interval_usec = c->reclaim_interval_usec;
        rc->recursive = recursive;
        if (rc->reader)
                protection_reader_set_recursive(rc->reader, recursive);
        if (!c->reclaim_cgroups || rc->root_fd < 0) {
                reclaim_stop(rc);
                if (was_on)
                        log_info("Reclaim: off.");
                if (!c->reclaim_cgroups)
                        return 0;
                r = reclaim_list_patterns(rc, c->reclaim_cgroups);
                if (r < 0)
                        reclaim_stop(rc);
                return r < 0 ? log_error_errno(r, "Reclaim: out of memory.") : 0;
        }
        /* The cgroups under control stay with their totals; those that no longer match leave at the tick. */
        r = cgroup_globs_parse(c->reclaim_cgroups, &g, NULL);
        if (r >= 0) {
                cgroup_globs_free(rc->globs);
                rc->globs = g;
                r = reclaim_start(rc);
        }
        if (r < 0) {
                reclaim_stop(rc);
                return log_error_errno(r, "Reclaim: failed to start, the controller stays off: %m");
        }
        log_info("Reclaim: on for %s, every %.1f s, target stall %.4g%%.", c->reclaim_cgroups,
                 rc->interval_usec / 1e6, rc->params.target_ppm / 10000.0);
        /* Turned on: the first samples now, the first steps one interval later. */
        if (!was_on)
                reclaim_controller_tick(rc);
        return 0;
}

/* Bytes as a JSON integer: a floor of "max" protection is shown as the largest one. */
static json_int_t json_bytes(uint64_t v) {
        return v > (uint64_t) INT64_MAX ? (json_int_t) INT64_MAX : (json_int_t) v;
}

json_t *reclaim_controller_status_json(const ReclaimController *rc, const char *root) {
        json_t *a = json_array();

        for (size_t i = 0; a && rc && i < rc->n_entries; i++) {
                const ReclaimCgroup *e = rc->entries[i];
                const char *name = cgroup_view_from_real(root, e->path);

                if (!name)
                        continue;
                if (json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:f, s:f, s:I, s:s}", "cgroup", name,
                                                       "reclaimed_bytes", json_bytes(e->reclaimed),
                                                       "last_step_bytes", json_bytes(e->last_step),
                                                       "stall_pct", e->stall_ppm / 10000.0,
                                                       "io_stall_pct", e->io_stall_ppm / 10000.0,
                                                       "floor_bytes", json_bytes(e->floor),
                                                       "state", reclaim_state_to_string(e->state))) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

void reclaim_controller_write_metrics(struct evbuffer *out, const ReclaimController *rc) {
        if (!rc || rc->n_entries == 0)
                return;
        metrics_write_header(out, "pressured_reclaim_bytes_total", "counter",
                             "Bytes the kernel reclaimed at the proactive reclaim controller's request.");
        for (size_t i = 0; i < rc->n_entries; i++) {
                MetricsLabel l = { "cgroup", rc->entries[i]->path };

                metrics_write_sample_u64(out, "pressured_reclaim_bytes_total", &l, 1, rc->entries[i]->reclaimed);
        }
        metrics_write_header(out, "pressured_reclaim_state", "gauge",
                             "1 for the proactive reclaim controller's current state of the cgroup, else 0.");
        for (size_t i = 0; i < rc->n_entries; i++)
                for (ReclaimState st = 0; st < _RECLAIM_STATE_MAX; st++) {
                        MetricsLabel l[2] = { { "cgroup", rc->entries[i]->path },
                                              { "state", reclaim_state_to_string(st) } };

                        metrics_write_sample_u64(out, "pressured_reclaim_state", l, 2, rc->entries[i]->state == st);
                }
}
