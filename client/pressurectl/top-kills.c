/* SPDX-License-Identifier: MIT */
/*
 * The kills pressurectl top shows (see top.h): those its kills subscription
 * reported in the last minute, a bounded set, and the marks they put on the
 * cgroups of a snapshot. No I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "top-kills.h"
#include "util.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

static void kill_clear(TopKill *x) {
        free(x->cgroup);
        free(x->by);
        free(x->reason);
        *x = (TopKill) {};
}

/* The slot for a kill of @cgroup by @by for @reason: the one it merges into, a free one, or the oldest. */
static TopKill *kill_slot(TopKills *k, const char *cgroup, const char *by, const char *reason, bool *ret_merge) {
        TopKill *oldest = NULL;

        for (size_t i = 0; i < k->n; i++) {
                TopKill *x = &k->kills[i];

                if (streq(x->cgroup, cgroup) && streq(x->by, by) && streq(x->reason, reason)) {
                        *ret_merge = true;
                        return x;
                }
                if (!oldest || x->at_us < oldest->at_us)
                        oldest = x;
        }
        *ret_merge = false;
        if (k->n < TOP_KILLS_MAX)
                return &k->kills[k->n++];
        kill_clear(oldest);
        return oldest;
}

int top_kills_add(TopKills *k, const char *cgroup, const char *by, const char *reason, uint64_t count,
                  uint64_t at_us, uint64_t time_us, uint64_t now_us) {
        TopKill *x;
        bool merge;

        cgroup = cgroup ?: "/";
        by = by ?: "unknown";
        reason = reason ?: "unknown";
        if (at_us == 0 || at_us > now_us)
                at_us = now_us;
        x = kill_slot(k, cgroup, by, reason, &merge);
        if (merge) {
                x->count += count;
                x->at_us = MAX(x->at_us, at_us);
                x->time_us = MAX(x->time_us, time_us);
                return 0;
        }
        *x = (TopKill) { strdup(cgroup), strdup(by), strdup(reason), count, at_us, time_us };
        if (!x->cgroup || !x->by || !x->reason) {
                /* Give the slot back: move the last one into it. */
                kill_clear(x);
                *x = k->kills[--k->n];
                k->kills[k->n] = (TopKill) {};
                return -ENOMEM;
        }
        return 0;
}

void top_kills_expire(TopKills *k, uint64_t now_us) {
        for (size_t i = 0; i < k->n;) {
                TopKill *x = &k->kills[i];

                if (now_us - x->at_us <= TOP_KILL_WINDOW_USEC) {
                        i++;
                        continue;
                }
                kill_clear(x);
                *x = k->kills[--k->n];
                k->kills[k->n] = (TopKill) {};
        }
}

/* The cgroup of @path in @snapshot, or of its nearest ancestor there; NULL if none is. */
static TopCgroup *find_or_ancestor(TopSnapshot *snapshot, const char *path) {
        _cleanup_free_ char *p = strdup(path);
        char *slash;

        if (!p)
                return NULL;
        for (;;) {
                TopCgroup *cg = top_snapshot_find(snapshot, p[0] ? p : "/");

                if (cg)
                        return cg;
                slash = strrchr(p, '/');
                if (!slash || !p[0])
                        return NULL;
                *slash = 0;
        }
}

size_t top_kills_apply(const TopKills *k, TopSnapshot *snapshot) {
        size_t marked = 0;

        for (size_t i = 0; i < k->n; i++) {
                const TopKill *x = &k->kills[i];
                TopCgroup *cg = find_or_ancestor(snapshot, x->cgroup);

                if (!cg)
                        continue;
                marked += cg->kill_at_us == TOP_NONE;
                cg->kills += x->count;
                if (cg->kill_at_us != TOP_NONE && cg->kill_at_us >= x->at_us)
                        continue;
                cg->kill_at_us = x->at_us;
                cg->kill_time_us = x->time_us;
                cg->kill_cgroup = x->cgroup;
                cg->kill_by = x->by;
                cg->kill_reason = x->reason;
        }
        return marked;
}

void top_kills_done(TopKills *k) {
        for (size_t i = 0; i < k->n; i++)
                kill_clear(&k->kills[i]);
        k->n = 0;
}
