/* SPDX-License-Identifier: MIT */
/* The bookkeeping of pre-kill warnings: see prekill-book.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prekill-book.h"
#include "snapshot.h"
#include "util.h"

uint64_t prekill_deadline_usec(uint64_t configured, uint64_t oomd_timeout) {
        if (configured > 0)
                return configured;
        if (oomd_timeout < PREKILL_OOMD_TIMEOUT_MIN_USEC)
                oomd_timeout = PREKILL_OOMD_TIMEOUT_MIN_USEC;
        return oomd_timeout - PREKILL_MARGIN_USEC;
}

PrekillLimit prekill_book_admit(const PrekillBook *b, unsigned max_calls, unsigned max_warnings, size_t n) {
        if (b->n_pending >= max_calls)
                return PREKILL_LIMIT_MAX_CALLS;
        if (n > max_warnings || b->n_awaited > max_warnings - n)
                return PREKILL_LIMIT_MAX_WARNINGS;
        return PREKILL_LIMIT_NONE;
}

int prekill_warning_new(PrekillBook *b, const char *victim, uint64_t start_us, uint64_t realtime_us,
                        uint64_t deadline_us, uint64_t hook, size_t n_max, PrekillWarning **ret) {
        PrekillWarning *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->victim = strdup(victim);
        w->warned = n_max > 0 ? calloc(n_max, sizeof(PrekillWarned)) : NULL;
        if (!w->victim || (n_max > 0 && !w->warned)) {
                prekill_warning_free(w);
                return -ENOMEM;
        }
        w->id = ++b->last_id;
        w->start_us = start_us;
        w->realtime_us = realtime_us;
        w->deadline_us = deadline_us;
        w->hook = hook;
        *ret = w;
        return 0;
}

PrekillWarning *prekill_warning_free(PrekillWarning *w) {
        if (!w)
                return NULL;
        free(w->victim);
        free(w->warned);
        free(w);
        return NULL;
}

void prekill_warning_add(PrekillWarning *w, uint64_t client, uid_t uid, pid_t pid) {
        w->warned[w->n_warned++] = (PrekillWarned) {
                .client = client, .uid = (uint32_t) uid, .pid = (int32_t) pid, .state = PREKILL_WAITING,
        };
        w->n_waiting++;
}

void prekill_book_add(PrekillBook *b, PrekillWarning *w) {
        LIST_PREPEND(warnings, b->warnings, w);
        b->n_pending++;
        b->n_awaited += w->n_waiting;
        b->counters.warned++;
        if (w->id > b->last_id)
                b->last_id = w->id;
}

void prekill_book_nobody(PrekillBook *b) {
        b->counters.nobody++;
}

PrekillWarning *prekill_book_find(const PrekillBook *b, uint64_t id) {
        PrekillWarning *w;

        LIST_FOREACH(warnings, w, b->warnings)
                if (w->id == id)
                        return w;
        return NULL;
}

/* @w no longer waits for its warned subscriber @i, now in @state. */
static void warned_settle(PrekillBook *b, PrekillWarning *w, size_t i, PrekillWarnedState state) {
        w->warned[i].state = state;
        w->n_waiting--;
        b->n_awaited--;
}

int prekill_book_acknowledge(PrekillBook *b, uint64_t id, uid_t uid, pid_t pid, PrekillWarning **ret) {
        PrekillWarning *w = prekill_book_find(b, id);
        size_t best = SIZE_MAX;

        for (size_t i = 0; w && i < w->n_warned; i++) {
                const PrekillWarned *x = &w->warned[i];

                if (x->state != PREKILL_WAITING || x->uid != (uint32_t) uid)
                        continue;
                if (x->pid == (int32_t) pid) {
                        best = i;
                        break;
                }
                /* Connection ids grow: the smallest is the oldest. */
                if (best == SIZE_MAX || x->client < w->warned[best].client)
                        best = i;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        warned_settle(b, w, best, PREKILL_ACKNOWLEDGED);
        *ret = w;
        return 0;
}

bool prekill_warning_gone(PrekillBook *b, PrekillWarning *w, uint64_t client) {
        bool found = false;

        for (size_t i = 0; i < w->n_warned; i++)
                if (w->warned[i].client == client && w->warned[i].state == PREKILL_WAITING) {
                        warned_settle(b, w, i, PREKILL_GONE);
                        found = true;
                }
        return found;
}

void prekill_book_end(PrekillBook *b, PrekillWarning *w, PrekillOutcome outcome) {
        LIST_REMOVE(warnings, b->warnings, w);
        b->n_pending--;
        b->n_awaited -= w->n_waiting;
        if (outcome == PREKILL_OUTCOME_ACKNOWLEDGED)
                b->counters.acknowledged++;
        else if (outcome == PREKILL_OUTCOME_DEADLINE)
                b->counters.deadline_reached++;
        prekill_warning_free(w);
}

uint64_t prekill_book_next_deadline(const PrekillBook *b) {
        PrekillWarning *w;
        uint64_t next = 0;

        LIST_FOREACH(warnings, w, b->warnings)
                if (next == 0 || w->deadline_us < next)
                        next = w->deadline_us;
        return next;
}

void prekill_book_done(PrekillBook *b) {
        while (b->warnings) {
                PrekillWarning *w = b->warnings;

                LIST_REMOVE(warnings, b->warnings, w);
                prekill_warning_free(w);
        }
        b->n_pending = 0;
        b->n_awaited = 0;
}

int prekill_book_export(const PrekillBook *b, SnapshotPrekillWarning **ret, size_t *ret_n) {
        SnapshotPrekillWarning *out;
        PrekillWarning *w;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;
        if (b->n_pending == 0)
                return 0;
        out = calloc(b->n_pending, sizeof(*out));
        if (!out)
                return -ENOMEM;
        *ret = out;
        LIST_FOREACH(warnings, w, b->warnings) {
                SnapshotPrekillWarning *x = &out[n++];

                *x = (SnapshotPrekillWarning) { .id = w->id, .start_us = w->start_us, .realtime_us = w->realtime_us,
                                                .deadline_us = w->deadline_us, .hook = w->hook };
                *ret_n = n;
                x->victim = strdup(w->victim);
                x->warned = w->n_warned ? malloc(w->n_warned * sizeof(PrekillWarned)) : NULL;
                if (!x->victim || (w->n_warned && !x->warned))
                        return -ENOMEM;
                memcpy(x->warned, w->warned, w->n_warned * sizeof(PrekillWarned));
                x->n_warned = w->n_warned;
        }
        return 0;
}

int prekill_book_adopt(PrekillBook *b, const SnapshotPrekillWarning *s, PrekillWarning **ret) {
        PrekillWarning *w;
        uint64_t last = b->last_id;
        int k = prekill_warning_new(b, s->victim, s->start_us, s->realtime_us, s->deadline_us, s->hook, s->n_warned, &w);

        b->last_id = last; /* its own id, not a new one */
        if (k < 0)
                return k;
        w->id = s->id;
        for (size_t i = 0; i < s->n_warned; i++) {
                w->warned[i] = s->warned[i];
                if (w->warned[i].state == PREKILL_WAITING)
                        w->n_waiting++;
        }
        w->n_warned = s->n_warned;
        prekill_book_add(b, w);
        b->counters.warned--; /* counted by the process that warned */
        *ret = w;
        return 0;
}
