/* SPDX-License-Identifier: MIT */
/* The protection source: tracked cgroups, the refresh timer, GetProtection, enrichment. */
#include "event-util.h"
#include "log.h"
#include "protection-tree.h"
#include "source.h"
#include "source-protection.h"

struct ProtectionSource {
        struct event_base *base;
        Counters *counters;
        char *root;                 /* the cgroup2 hierarchy, or NULL */
        bool recursive;
        uint64_t refresh_usec;
        ProtectionReader *reader;   /* exists only while something is tracked or read */
        struct event *ev_refresh;   /* exists only while something is tracked */
        bool refreshing;
        Source *tracked;            /* the SOURCE_PROTECTION sources */
        /* counters of readers already freed, so totals stay monotonic */
        uint64_t applied_base, skipped_base;
};

static void on_change(ProtectionReader *reader, const ProtectionChange *change, void *userdata) {
        ProtectionSource *p = userdata;
        Source *s, *n;

        LIST_FOREACH_SAFE(tracked, s, n, p->tracked) {
                uint64_t rt, mono;

                if (!streq(s->cgroup, change->cgroup))
                        continue;
                if (change->removed) {
                        s->cb->removed(s);
                        continue;
                }
                if ((int) change->state == s->last_state)
                        continue;
                s->last_state = (int) change->state;

                mono = now_usec(CLOCK_MONOTONIC);
                rt = now_usec(CLOCK_REALTIME);
                counter_inc(p->counters, COUNTER_EVENTS_READ);
                s->cb->event(s, &(const EventData) {
                        .kind = EVENT_PROTECTION, .cgroup = s->cgroup, .realtime_us = rt, .monotonic_us = mono,
                        .protection = { .state = change->state, .previous = change->previous, .node = change->node },
                }, 1);
        }
}

static void fold_counters(ProtectionSource *p) {
        ProtectionCounters c;

        if (!p->reader)
                return;
        protection_tree_get_counters(protection_reader_get_tree(p->reader), &c);
        p->applied_base += c.propagations_applied;
        p->skipped_base += c.propagations_skipped;
}

static void reader_drop_if_unused(ProtectionSource *p) {
        if (!p->reader || protection_reader_n_tracked(p->reader) > 0)
                return;
        fold_counters(p);
        p->reader = protection_reader_free(p->reader);
        event_free_and_null(&p->ev_refresh);
}

static void on_refresh(evutil_socket_t fd, short what, void *userdata) {
        ProtectionSource *p = userdata;
        int k;

        p->refreshing = true;
        k = protection_reader_refresh(p->reader);
        p->refreshing = false;
        counter_inc(p->counters, COUNTER_PROTECTION_REFRESHES);
        if (k < 0)
                log_ratelimited(LOG_WARNING, k, NULL, 60, 1, "Failed to refresh the protection tree, continuing: %m");
        reader_drop_if_unused(p);
}

static int reader_ensure(ProtectionSource *p) {
        int k;

        if (p->reader)
                return 0;
        if (!p->root)
                return -EOPNOTSUPP;
        k = protection_reader_new(p->root, p->recursive, &p->reader);
        if (k < 0)
                return k;
        protection_reader_set_callback(p->reader, on_change, p);
        return 0;
}

static int refresh_timer_ensure(ProtectionSource *p) {
        struct timeval tv = usec_to_timeval(p->refresh_usec);

        if (!p->ev_refresh) {
                p->ev_refresh = event_new(p->base, -1, EV_PERSIST, on_refresh, p);
                if (!p->ev_refresh)
                        return -ENOMEM;
        }
        if (event_add(p->ev_refresh, &tv) < 0)
                return -ENOMEM;
        return 0;
}

static int protection_open(Source *s, int dirfd, SourceFailure *e) {
        ProtectionSource *p = s->env->protection;
        ProtectionNode *node;
        int k;

        k = p ? reader_ensure(p) : -EOPNOTSUPP;
        if (k >= 0)
                k = protection_reader_track(p->reader, s->cgroup);
        if (k >= 0) {
                k = refresh_timer_ensure(p);
                if (k < 0)
                        (void) protection_reader_untrack(p->reader, s->cgroup);
        }
        if (k < 0) {
                if (p)
                        reader_drop_if_unused(p);
                if (k == -ENOMEM)
                        return k;
                return source_failure_open(e, k, "protection", NULL);
        }
        node = protection_reader_lookup(p->reader, s->cgroup);
        if (node)
                s->last_state = (int) protection_node_state(node);
        LIST_PREPEND(tracked, p->tracked, s);
        return 0;
}

static void protection_close(Source *s) {
        ProtectionSource *p = s->env->protection;

        LIST_REMOVE(tracked, p->tracked, s);
        if (!p->reader)
                return;
        (void) protection_reader_untrack(p->reader, s->cgroup);
        if (!p->refreshing)
                reader_drop_if_unused(p);
}

static int protection_state(Source *s, SubscribedState *ret) {
        ret->node = protection_source_lookup(s->env->protection, s->cgroup);
        return 0;
}

/* A state that changed while nobody watched is reported as a change from the one last reported. */
static void protection_restore(Source *s, const SnapshotRegistration *saved) {
        ProtectionSource *p = s->env->protection;
        ProtectionNode *node = p->reader ? protection_reader_lookup(p->reader, s->cgroup) : NULL;
        ProtectionChange change;

        if (!node || saved->last_state < 0 || saved->last_state == s->last_state)
                return;
        change = (ProtectionChange) {
                .cgroup = s->cgroup,
                .state = (ProtectionState) s->last_state,
                .previous = (ProtectionState) saved->last_state,
                .node = node,
        };
        s->last_state = saved->last_state;
        on_change(p->reader, &change, p);
}

const SourceOps source_protection_ops = {
        .open = protection_open,
        .close = protection_close,
        .state = protection_state,
        .restore = protection_restore,
};

int protection_source_new(struct event_base *base, Counters *counters, const char *root, bool recursive,
                          uint64_t refresh_usec, ProtectionSource **ret) {
        ProtectionSource *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        *p = (ProtectionSource) {
                .base = base,
                .counters = counters,
                .recursive = recursive,
                .refresh_usec = refresh_usec,
        };
        if (root && !(p->root = strdup(root))) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

ProtectionSource *protection_source_free(ProtectionSource *p) {
        if (!p)
                return NULL;
        p->reader = protection_reader_free(p->reader);
        event_free_and_null(&p->ev_refresh);
        free(p->root);
        free(p);
        return NULL;
}

void protection_source_configure(ProtectionSource *p, bool recursive, uint64_t refresh_usec) {
        p->recursive = recursive;
        p->refresh_usec = refresh_usec;
        if (!p->reader)
                return;
        protection_reader_set_recursive(p->reader, recursive);
        if (p->ev_refresh && refresh_timer_ensure(p) < 0)
                log_warning("Failed to re-arm the protection refresh timer; the tree is refreshed on the next change.");
}

int protection_source_read(ProtectionSource *p, const char *cgroup, ProtectionNodeFn fn, void *userdata) {
        int k;

        k = reader_ensure(p);
        if (k < 0)
                return k;
        k = protection_reader_foreach(p->reader, cgroup, fn, userdata);
        reader_drop_if_unused(p);
        return k;
}

const ProtectionNode *protection_source_lookup(ProtectionSource *p, const char *cgroup) {
        return p && p->reader ? protection_reader_lookup(p->reader, cgroup) : NULL;
}

void protection_source_counters(const ProtectionSource *p, uint64_t *ret_applied, uint64_t *ret_skipped) {
        ProtectionCounters c = {};

        if (p && p->reader)
                protection_tree_get_counters(protection_reader_get_tree(p->reader), &c);
        *ret_applied = (p ? p->applied_base : 0) + c.propagations_applied;
        *ret_skipped = (p ? p->skipped_base : 0) + c.propagations_skipped;
}
