/* SPDX-License-Identifier: MIT */
/* The takeover state's encoding: see snapshot.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"
#include "util.h"

static const char snapshot_magic[8] = { 'P', 'R', 'S', 'D', 'S', 'N', 'A', 'P' };

/* Top-level tags. */
enum {
        T_SERIAL = 1,
        T_COMPLETE,
        T_GENERATION,
        T_START_MONOTONIC,
        T_SOCKET_PATH,
        T_PROXY_PATH,
        T_NEXT_CLIENT_ID,
        T_NEXT_PROXY_ID,
        T_NEXT_REGISTRATION_ID,
        T_PSI_UNPRIVILEGED,
        T_COUNTER,
        T_LATENCY,
        T_REGISTRATION,
        T_CLIENT,
        T_PROXY,
        T_RECLAIM,
        T_LIVE_NAME,
        T_CPU_PROXY_PATH,
        T_IO_PROXY_PATH,
        T_PREKILL_PATH,              /* version 2 on */
        T_NEXT_HOOK_ID,
        T_PREKILL_LAST_ID,
        T_PREKILL_COUNTERS,
        T_PREKILL_WARNING,
        T_HOOK,                      /* version 2 only: now T_HOOK_CLIENT */
        T_REPORT_PATH,
        T_HOOK_CLIENT,               /* version 3 on */
};

/* The tag of each resource's proxy socket path (T_PROXY_PATH from before there were others). */
static const uint16_t proxy_path_tags[_RESOURCE_MAX] = {
        [RESOURCE_MEMORY] = T_PROXY_PATH,
        [RESOURCE_CPU] = T_CPU_PROXY_PATH,
        [RESOURCE_IO] = T_IO_PROXY_PATH,
};

/* Tags inside T_REGISTRATION. */
enum {
        R_ID = 1,
        R_TYPE,
        R_CGROUP,
        R_RESOURCE,
        R_REQUESTED,
        R_USED,
        R_VM_LEVEL,
        R_VM_MODE,
        R_ADJUSTED,
        R_DIR_INO,
        R_LAST_EVENT,
        R_LAST_STATE,
        R_TOP,
        R_FAST_CHARGED,
        R_FAST_UID,
        R_EPISODE,
        R_HISTORY,
};

/* Tags inside T_CLIENT, T_PROXY and the subscription. */
enum {
        C_ID = 1,
        C_UID,
        C_GID,
        C_PID,
        C_VIEW_V2,
        C_VIEW_V1,
        C_INPUT,
        C_OUTPUT,
        C_SUBSCRIPTION,
        C_OWES_REEXECUTE,
        C_LEVELS,
        C_REFUSED,
        C_PREKILL_OWED,
};

/* Tags inside C_LEVELS. */
enum { L_CGROUP = 1, L_SEQ, L_MISSED, L_SENT, L_WAITING };

enum {
        S_REGISTRATION = 1,
        S_LEVEL,
        S_EXPLICIT_PSI,
        S_BY_LEVEL,
        S_WAITING,
        S_SEQ,
        S_MISSED,
        S_MIN_INTERVAL,
        S_LAST_SENT,
        S_PENDING,
        S_PENDING_FLAGS,
        S_PENDING_MONOTONIC,
        S_PENDING_COUNT,
        S_WRITTEN_SEQ,
};

enum {
        P_ID = 1,
        P_PID,
        P_UID,
        P_UNIT,
        P_LINE,
        P_LINE_DONE,
        P_REGISTRATION,
        P_SENT,
        P_DROPPED,
        P_DECIDE_BY,
        P_RESOURCE,                  /* absent: memory, as written before cpu and io */
};

/* Small records: a name and a value; a trigger; an episode record; the histogram. */
enum { N_NAME = 1, N_VALUE };
enum { TR_STALL = 1, TR_THRESHOLD, TR_WINDOW };
enum { E_START = 1, E_END, E_EVENTS, E_PEAK, E_PEAK_UNKNOWN };
enum { EP_ACTIVE = 1, EP_CUR, EP_LAST_EVENT, EP_UNQUIET, EP_HAVE_SAMPLE, EP_SAMPLE, EP_SAMPLE_TOTAL };
enum { H_BUCKET = 1, H_COUNT, H_SUM };
enum { O_SEQ = 1, O_BYTES };
enum { RC_CGROUP = 1, RC_RECLAIMED, RC_LAST_STEP };
/* The prekill counters; a warning and each subscriber it warned; a hook connection of version 2. */
enum { K_WARNED = 1, K_ACKNOWLEDGED, K_DEADLINE_REACHED, K_NOBODY };
enum { W_ID = 1, W_VICTIM, W_START, W_REALTIME, W_DEADLINE, W_HOOK, W_WARNED };
enum { WD_CLIENT = 1, WD_UID, WD_PID, WD_STATE };
enum { HK_ID = 1, HK_UID, HK_GID, HK_PID, HK_OWED, HK_REFUSED, HK_INPUT, HK_OUTPUT };

static uint64_t fnv1a(const uint8_t *p, size_t n) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static void put_le(uint8_t *p, uint64_t v, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n) {
        uint64_t v = 0;

        for (size_t i = 0; i < n; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

/* ---- writing ---- */

typedef struct Writer {
        uint8_t *buf;
        size_t size, alloc;
        uint64_t max;
        int error;
} Writer;

static uint8_t *w_room(Writer *w, size_t n) {
        if (w->error)
                return NULL;
        if (n > w->max || w->size > w->max - n) {
                w->error = -E2BIG;
                return NULL;
        }
        if (w->size + n > w->alloc) {
                size_t na = w->alloc ? w->alloc : 4096;
                uint8_t *nb;

                while (na < w->size + n)
                        na *= 2;
                nb = realloc(w->buf, na);
                if (!nb) {
                        w->error = -ENOMEM;
                        return NULL;
                }
                w->buf = nb;
                w->alloc = na;
        }
        w->size += n;
        return w->buf + w->size - n;
}

/* Open a record: returns where its length goes, patched by w_end(). */
static size_t w_begin(Writer *w, uint16_t tag) {
        uint8_t *p = w_room(w, 6);

        if (!p)
                return 0;
        put_le(p, tag, 2);
        return w->size;
}

static void w_end(Writer *w, size_t mark) {
        if (w->error)
                return;
        if (w->size - mark > UINT32_MAX) {
                w->error = -E2BIG;
                return;
        }
        put_le(w->buf + mark - 4, w->size - mark, 4);
}

static void w_bytes(Writer *w, uint16_t tag, const void *data, size_t n) {
        size_t mark = w_begin(w, tag);
        uint8_t *p = w_room(w, n);

        if (p && n > 0)
                memcpy(p, data, n);
        w_end(w, mark);
}

static void w_u64(Writer *w, uint16_t tag, uint64_t v) {
        uint8_t b[8];

        put_le(b, v, 8);
        w_bytes(w, tag, b, 8);
}

/* Zero is the default of every number: it is left out. */
static void w_num(Writer *w, uint16_t tag, uint64_t v) {
        if (v != 0)
                w_u64(w, tag, v);
}

static void w_signed(Writer *w, uint16_t tag, int64_t v) {
        w_u64(w, tag, (uint64_t) v);
}

static void w_str(Writer *w, uint16_t tag, const char *s) {
        if (s)
                w_bytes(w, tag, s, strlen(s));
}

static void w_blob(Writer *w, uint16_t tag, const SnapshotBytes *b) {
        if (b->size > 0)
                w_bytes(w, tag, b->data, b->size);
}

static void w_named(Writer *w, uint16_t tag, const char *name, uint64_t value) {
        size_t mark = w_begin(w, tag);

        w_str(w, N_NAME, name);
        w_u64(w, N_VALUE, value);
        w_end(w, mark);
}

static void w_trigger(Writer *w, uint16_t tag, const PsiTrigger *t) {
        size_t mark = w_begin(w, tag);

        w_u64(w, TR_STALL, (uint64_t) t->stall);
        w_u64(w, TR_THRESHOLD, t->threshold_us);
        w_u64(w, TR_WINDOW, t->window_us);
        w_end(w, mark);
}

static void w_record(Writer *w, uint16_t tag, const EpisodeRecord *r) {
        size_t mark = w_begin(w, tag);

        w_num(w, E_START, r->start_us);
        w_num(w, E_END, r->end_us);
        w_num(w, E_EVENTS, r->events);
        w_num(w, E_PEAK, r->peak);
        w_num(w, E_PEAK_UNKNOWN, !r->peak_known);
        w_end(w, mark);
}

static void w_episode(Writer *w, const Episode *e) {
        size_t mark = w_begin(w, R_EPISODE);

        w_num(w, EP_ACTIVE, e->active);
        w_record(w, EP_CUR, &e->cur);
        w_num(w, EP_LAST_EVENT, e->last_event_us);
        w_num(w, EP_UNQUIET, e->unquiet_us);
        w_num(w, EP_HAVE_SAMPLE, e->have_sample);
        w_num(w, EP_SAMPLE, e->sample_us);
        w_num(w, EP_SAMPLE_TOTAL, e->sample_total_us);
        w_end(w, mark);
}

static void w_registration(Writer *w, const SnapshotRegistration *r) {
        size_t mark = w_begin(w, T_REGISTRATION);

        w_u64(w, R_ID, r->id);
        w_u64(w, R_TYPE, (uint64_t) r->type);
        w_str(w, R_CGROUP, r->cgroup);
        w_u64(w, R_RESOURCE, (uint64_t) r->resource);
        w_trigger(w, R_REQUESTED, &r->requested);
        w_trigger(w, R_USED, &r->used);
        w_signed(w, R_VM_LEVEL, r->vm_level);
        w_signed(w, R_VM_MODE, r->vm_mode);
        w_num(w, R_ADJUSTED, r->adjusted);
        w_num(w, R_DIR_INO, r->dir_ino);
        for (int k = 0; k < _MEMORY_EVENT_MAX; k++)
                if (r->last_events.present & (1u << k))
                        w_named(w, R_LAST_EVENT, memory_event_key_to_string((MemoryEventKey) k),
                                r->last_events.value[k]);
        w_signed(w, R_LAST_STATE, r->last_state);
        for (size_t i = 0; i < r->n_tops; i++)
                w_named(w, R_TOP, r->tops[i].name, r->tops[i].oom_kill);
        w_num(w, R_FAST_CHARGED, r->fast_charged);
        w_num(w, R_FAST_UID, r->fast_uid);
        w_episode(w, &r->episode);
        for (size_t i = 0; i < r->n_history; i++)
                w_record(w, R_HISTORY, &r->history[i]);
        w_end(w, mark);
}

static void w_subscription(Writer *w, const SnapshotSubscription *s) {
        size_t mark = w_begin(w, C_SUBSCRIPTION);

        w_u64(w, S_REGISTRATION, s->registration);
        w_signed(w, S_LEVEL, s->level);
        w_num(w, S_EXPLICIT_PSI, s->explicit_psi);
        w_num(w, S_BY_LEVEL, s->by_level);
        w_num(w, S_WAITING, s->waiting);
        w_num(w, S_SEQ, s->seq);
        w_num(w, S_MISSED, s->missed);
        w_num(w, S_MIN_INTERVAL, s->min_interval_usec);
        w_num(w, S_LAST_SENT, s->last_sent_usec);
        w_blob(w, S_PENDING, &s->pending);
        w_num(w, S_PENDING_FLAGS, s->pending_flags);
        w_num(w, S_PENDING_MONOTONIC, s->pending_monotonic_us);
        w_num(w, S_PENDING_COUNT, s->pending_count);
        w_num(w, S_WRITTEN_SEQ, s->written_seq);
        w_end(w, mark);
}

static void w_levels(Writer *w, const SnapshotLevels *l) {
        size_t mark = w_begin(w, C_LEVELS);

        w_str(w, L_CGROUP, l->cgroup);
        w_num(w, L_SEQ, l->seq);
        w_num(w, L_MISSED, l->missed);
        w_signed(w, L_SENT, l->sent);
        w_num(w, L_WAITING, l->waiting);
        w_end(w, mark);
}

static void w_client(Writer *w, uint16_t tag, const SnapshotClient *c) {
        size_t mark = w_begin(w, tag);

        w_u64(w, C_ID, c->id);
        w_u64(w, C_UID, c->uid);
        w_u64(w, C_GID, c->gid);
        w_signed(w, C_PID, c->pid);
        w_str(w, C_VIEW_V2, c->view_v2);
        w_str(w, C_VIEW_V1, c->view_v1);
        w_blob(w, C_INPUT, &c->input);
        for (size_t i = 0; i < c->n_output; i++) {
                size_t m = w_begin(w, C_OUTPUT);

                w_num(w, O_SEQ, c->output[i].seq);
                w_blob(w, O_BYTES, &c->output[i].bytes);
                w_end(w, m);
        }
        if (c->has_subscription)
                w_subscription(w, &c->subscription);
        if (c->has_levels)
                w_levels(w, &c->levels);
        w_num(w, C_OWES_REEXECUTE, c->owes_reexecute);
        w_num(w, C_REFUSED, c->refused);
        w_num(w, C_PREKILL_OWED, c->prekill_owed);
        w_end(w, mark);
}

static void w_proxy(Writer *w, const SnapshotProxyClient *p) {
        size_t mark = w_begin(w, T_PROXY);

        w_u64(w, P_ID, p->id);
        w_signed(w, P_PID, p->pid);
        w_u64(w, P_UID, p->uid);
        w_str(w, P_UNIT, p->unit);
        w_blob(w, P_LINE, &p->line);
        w_num(w, P_LINE_DONE, p->line_done);
        w_num(w, P_REGISTRATION, p->registration);
        w_num(w, P_SENT, p->sent);
        w_num(w, P_DROPPED, p->dropped);
        w_num(w, P_DECIDE_BY, p->decide_by_usec);
        if (p->resource != RESOURCE_MEMORY)
                w_u64(w, P_RESOURCE, (uint64_t) p->resource);
        w_end(w, mark);
}

static void w_latency(Writer *w, const MetricsHistogram *h) {
        size_t mark = w_begin(w, T_LATENCY);

        for (size_t i = 0; i < ELEMENTSOF(h->buckets); i++)
                w_u64(w, H_BUCKET, h->buckets[i]);
        w_num(w, H_COUNT, h->count);
        w_num(w, H_SUM, h->sum_usec);
        w_end(w, mark);
}

static void w_prekill_counters(Writer *w, const PrekillCounters *c) {
        size_t mark = w_begin(w, T_PREKILL_COUNTERS);

        w_num(w, K_WARNED, c->warned);
        w_num(w, K_ACKNOWLEDGED, c->acknowledged);
        w_num(w, K_DEADLINE_REACHED, c->deadline_reached);
        w_num(w, K_NOBODY, c->nobody);
        w_end(w, mark);
}

static void w_prekill_warning(Writer *w, const SnapshotPrekillWarning *x) {
        size_t mark = w_begin(w, T_PREKILL_WARNING);

        w_u64(w, W_ID, x->id);
        w_str(w, W_VICTIM, x->victim);
        w_num(w, W_START, x->start_us);
        w_num(w, W_REALTIME, x->realtime_us);
        w_num(w, W_DEADLINE, x->deadline_us);
        w_num(w, W_HOOK, x->hook);
        for (size_t i = 0; i < x->n_warned; i++) {
                size_t m = w_begin(w, W_WARNED);

                w_u64(w, WD_CLIENT, x->warned[i].client);
                w_u64(w, WD_UID, x->warned[i].uid);
                w_signed(w, WD_PID, x->warned[i].pid);
                w_num(w, WD_STATE, (uint64_t) x->warned[i].state);
                w_end(w, m);
        }
        w_end(w, mark);
}

/* What version 2 added: the hook socket, its connections (clients from version 3) and the warnings. */
static void w_prekill(Writer *w, const Snapshot *s) {
        w_str(w, T_PREKILL_PATH, s->prekill_path);
        w_num(w, T_NEXT_HOOK_ID, s->next_hook_id);
        w_num(w, T_PREKILL_LAST_ID, s->prekill_last_id);
        w_prekill_counters(w, &s->prekill_counters);
        for (size_t i = 0; i < s->n_prekill_warnings; i++)
                w_prekill_warning(w, &s->prekill_warnings[i]);
        for (size_t i = 0; i < s->n_hook_clients; i++)
                w_client(w, T_HOOK_CLIENT, &s->hook_clients[i]);
}

static void w_payload(Writer *w, const Snapshot *s) {
        w_num(w, T_SERIAL, s->serial);
        w_num(w, T_COMPLETE, s->complete);
        w_num(w, T_GENERATION, s->generation);
        w_num(w, T_START_MONOTONIC, s->start_monotonic_us);
        w_str(w, T_LIVE_NAME, s->live_name);
        w_str(w, T_SOCKET_PATH, s->socket_path);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                w_str(w, proxy_path_tags[r], s->proxy_paths[r]);
        w_str(w, T_REPORT_PATH, s->report_path);
        w_num(w, T_NEXT_CLIENT_ID, s->next_client_id);
        w_num(w, T_NEXT_PROXY_ID, s->next_proxy_id);
        w_num(w, T_NEXT_REGISTRATION_ID, s->next_registration_id);
        w_num(w, T_PSI_UNPRIVILEGED, s->psi_unprivileged);
        for (size_t i = 0; i < s->n_counters; i++)
                w_named(w, T_COUNTER, s->counters[i].name, s->counters[i].value);
        w_latency(w, &s->latency);
        for (size_t i = 0; i < s->n_registrations; i++)
                w_registration(w, &s->registrations[i]);
        for (size_t i = 0; i < s->n_clients; i++)
                w_client(w, T_CLIENT, &s->clients[i]);
        for (size_t i = 0; i < s->n_proxies; i++)
                w_proxy(w, &s->proxies[i]);
        for (size_t i = 0; i < s->n_reclaim; i++) {
                size_t mark = w_begin(w, T_RECLAIM);

                w_str(w, RC_CGROUP, s->reclaim[i].cgroup);
                w_num(w, RC_RECLAIMED, s->reclaim[i].reclaimed);
                w_num(w, RC_LAST_STEP, s->reclaim[i].last_step);
                w_end(w, mark);
        }
        w_prekill(w, s);
}

int snapshot_encode(const Snapshot *s, uint64_t max, char **ret, size_t *ret_size) {
        Writer w = { .max = max < SNAPSHOT_SIZE_MAX ? max : SNAPSHOT_SIZE_MAX };
        uint8_t *h = w_room(&w, SNAPSHOT_HEADER_SIZE);

        if (h)
                memset(h, 0, SNAPSHOT_HEADER_SIZE);
        w_payload(&w, s);
        if (w.error) {
                free(w.buf);
                return w.error;
        }
        memcpy(w.buf, snapshot_magic, sizeof(snapshot_magic));
        put_le(w.buf + 8, SNAPSHOT_VERSION, 4);
        put_le(w.buf + 16, w.size - SNAPSHOT_HEADER_SIZE, 8);
        put_le(w.buf + 24, fnv1a(w.buf + SNAPSHOT_HEADER_SIZE, w.size - SNAPSHOT_HEADER_SIZE), 8);
        *ret = (char *) w.buf;
        *ret_size = w.size;
        return 0;
}

/* ---- reading ---- */

typedef struct Span {
        const uint8_t *p;
        size_t n;
} Span;

/* The next record of @s into @ret_tag and @ret_value: 1, 0 at the end, or -EBADMSG. */
static int r_next(Span *s, uint16_t *ret_tag, Span *ret_value) {
        size_t len;

        if (s->n == 0)
                return 0;
        if (s->n < 6)
                return -EBADMSG;
        len = (size_t) get_le(s->p + 2, 4);
        if (len > s->n - 6)
                return -EBADMSG;
        *ret_tag = (uint16_t) get_le(s->p, 2);
        *ret_value = (Span) { s->p + 6, len };
        s->p += 6 + len;
        s->n -= 6 + len;
        return 1;
}

static int r_u64(const Span *v, uint64_t *ret) {
        if (v->n != 8)
                return -EBADMSG;
        *ret = get_le(v->p, 8);
        return 0;
}

static int r_bool(const Span *v, bool *ret) {
        uint64_t x;
        int k = r_u64(v, &x);

        if (k < 0 || x > 1)
                return -EBADMSG;
        *ret = x;
        return 0;
}

static int r_u32(const Span *v, uint32_t *ret) {
        uint64_t x;
        int k = r_u64(v, &x);

        if (k < 0 || x > UINT32_MAX)
                return -EBADMSG;
        *ret = (uint32_t) x;
        return 0;
}

/* A signed value in [@lo, @hi). */
static int r_ranged(const Span *v, int64_t lo, int64_t hi, int64_t *ret) {
        uint64_t x;
        int k = r_u64(v, &x);

        if (k < 0 || (int64_t) x < lo || (int64_t) x >= hi)
                return -EBADMSG;
        *ret = (int64_t) x;
        return 0;
}

#define R_ENUM(v, lo, hi, dst)                                          \
        ({                                                              \
                int64_t _x = 0;                                         \
                int _k = r_ranged((v), (lo), (hi), &_x);                \
                if (_k >= 0)                                            \
                        (dst) = (__typeof__(dst)) _x;                   \
                _k;                                                     \
        })

static int r_str(const Span *v, char **dst) {
        char *s;

        if (v->n > SNAPSHOT_STRING_MAX || memchr(v->p, 0, v->n))
                return -EBADMSG;
        s = strndup((const char *) v->p, v->n);
        if (!s)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

static int r_blob(const Span *v, SnapshotBytes *dst) {
        free(dst->data);
        *dst = (SnapshotBytes) {};
        return snapshot_bytes_set(dst, v->p, v->n);
}

int snapshot_bytes_set(SnapshotBytes *b, const void *data, size_t size) {
        *b = (SnapshotBytes) {};
        if (size == 0)
                return 0;
        b->data = malloc(size);
        if (!b->data)
                return -ENOMEM;
        memcpy(b->data, data, size);
        b->size = size;
        return 0;
}

/* Make room for one more element of @size bytes in *@array of *@n, at most @max. */
static void *r_grow(void *array_ptr, size_t *n, size_t size, size_t max) {
        void **array = array_ptr;
        void *na;

        if (*n >= max)
                return NULL;
        /* Grow by powers of two: *n is a power of two exactly when the array is full. */
        if (*n == 0 || (*n & (*n - 1)) == 0) {
                na = realloc(*array, (*n ? *n * 2 : 1) * size);
                if (!na)
                        return NULL;
                *array = na;
        }
        na = (char *) *array + *n * size;
        memset(na, 0, size);
        (*n)++;
        return na;
}

#define R_GROW(array, n, max)                                                   \
        ({                                                                      \
                void *_e = ((n) >= (max)) ? NULL : r_grow(&(array), &(n), sizeof(*(array)), (max)); \
                _e;                                                             \
        })

/* A failed grow: over the bound, or out of memory. */
#define GROW_ERROR(n, max) ((n) >= (max) ? -E2BIG : -ENOMEM)

static int r_named(const Span *v, char **ret_name, uint64_t *ret_value) {
        Span s = *v, f;
        uint16_t tag;
        int k;

        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == N_NAME)
                        k = r_str(&f, ret_name);
                else if (tag == N_VALUE)
                        k = r_u64(&f, ret_value);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        return *ret_name ? 0 : -EBADMSG;
}

static int r_trigger(const Span *v, PsiTrigger *t) {
        Span s = *v, f;
        uint16_t tag;
        int k;

        *t = (PsiTrigger) {};
        while ((k = r_next(&s, &tag, &f)) > 0) {
                switch (tag) {
                case TR_STALL:
                        k = R_ENUM(&f, 0, _PSI_STALL_MAX, t->stall);
                        break;
                case TR_THRESHOLD:
                        k = r_u64(&f, &t->threshold_us);
                        break;
                case TR_WINDOW:
                        k = r_u64(&f, &t->window_us);
                        break;
                }
                if (k < 0)
                        return k;
        }
        return k;
}

static int r_record(const Span *v, EpisodeRecord *r) {
        Span s = *v, f;
        bool unknown = false;
        uint16_t tag;
        int k;

        *r = (EpisodeRecord) {};
        while ((k = r_next(&s, &tag, &f)) > 0) {
                switch (tag) {
                case E_START:
                        k = r_u64(&f, &r->start_us);
                        break;
                case E_END:
                        k = r_u64(&f, &r->end_us);
                        break;
                case E_EVENTS:
                        k = r_u64(&f, &r->events);
                        break;
                case E_PEAK:
                        k = r_u32(&f, &r->peak);
                        break;
                case E_PEAK_UNKNOWN:
                        k = r_bool(&f, &unknown);
                        break;
                }
                if (k < 0)
                        return k;
        }
        r->peak_known = !unknown;
        return k;
}

static int r_episode(const Span *v, Episode *e) {
        Span s = *v, f;
        uint16_t tag;
        int k;

        while ((k = r_next(&s, &tag, &f)) > 0) {
                switch (tag) {
                case EP_ACTIVE:
                        k = r_bool(&f, &e->active);
                        break;
                case EP_CUR:
                        k = r_record(&f, &e->cur);
                        break;
                case EP_LAST_EVENT:
                        k = r_u64(&f, &e->last_event_us);
                        break;
                case EP_UNQUIET:
                        k = r_u64(&f, &e->unquiet_us);
                        break;
                case EP_HAVE_SAMPLE:
                        k = r_bool(&f, &e->have_sample);
                        break;
                case EP_SAMPLE:
                        k = r_u64(&f, &e->sample_us);
                        break;
                case EP_SAMPLE_TOTAL:
                        k = r_u64(&f, &e->sample_total_us);
                        break;
                }
                if (k < 0)
                        return k;
        }
        return k;
}

static int r_last_event(const Span *v, MemoryEvents *me) {
        _cleanup_free_ char *name = NULL;
        uint64_t value = 0;
        int k = r_named(v, &name, &value);

        if (k < 0)
                return k;
        /* A counter this daemon does not know is left out. */
        for (int i = 0; i < _MEMORY_EVENT_MAX; i++)
                if (streq(name, memory_event_key_to_string((MemoryEventKey) i))) {
                        me->value[i] = value;
                        me->present |= 1u << i;
                }
        return 0;
}

static int r_top(const Span *v, SnapshotRegistration *r) {
        SnapshotKillsTop *t = R_GROW(r->tops, r->n_tops, SNAPSHOT_TOPS_MAX);

        if (!t)
                return GROW_ERROR(r->n_tops, SNAPSHOT_TOPS_MAX);
        return r_named(v, &t->name, &t->oom_kill);
}

static int r_history(const Span *v, SnapshotRegistration *r) {
        EpisodeRecord *e = R_GROW(r->history, r->n_history, SNAPSHOT_HISTORY_MAX);

        if (!e)
                return GROW_ERROR(r->n_history, SNAPSHOT_HISTORY_MAX);
        return r_record(v, e);
}

static int r_registration_field(uint16_t tag, const Span *f, SnapshotRegistration *r) {
        switch (tag) {
        case R_ID:
                return r_u64(f, &r->id);
        case R_TYPE:
                return R_ENUM(f, 0, _SOURCE_MAX, r->type);
        case R_CGROUP:
                return r_str(f, &r->cgroup);
        case R_RESOURCE:
                return R_ENUM(f, 0, _RESOURCE_MAX, r->resource);
        case R_REQUESTED:
                return r_trigger(f, &r->requested);
        case R_USED:
                return r_trigger(f, &r->used);
        case R_VM_LEVEL:
                return R_ENUM(f, -1, _LEVEL_MAX, r->vm_level);
        case R_VM_MODE:
                return R_ENUM(f, -1, _VMPRESSURE_MODE_MAX, r->vm_mode);
        case R_ADJUSTED:
                return r_bool(f, &r->adjusted);
        case R_DIR_INO:
                return r_u64(f, &r->dir_ino);
        case R_LAST_EVENT:
                return r_last_event(f, &r->last_events);
        case R_LAST_STATE:
                return R_ENUM(f, -1, 16, r->last_state);
        case R_TOP:
                return r_top(f, r);
        case R_FAST_CHARGED:
                return r_bool(f, &r->fast_charged);
        case R_FAST_UID:
                return r_u32(f, &r->fast_uid);
        case R_EPISODE:
                return r_episode(f, &r->episode);
        case R_HISTORY:
                return r_history(f, r);
        }
        return 0;
}

static int r_registration(const Span *v, Snapshot *snap) {
        SnapshotRegistration *r = R_GROW(snap->registrations, snap->n_registrations, SNAPSHOT_ITEMS_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!r)
                return GROW_ERROR(snap->n_registrations, SNAPSHOT_ITEMS_MAX);
        r->vm_level = _LEVEL_INVALID;
        r->vm_mode = _VMPRESSURE_MODE_INVALID;
        r->last_state = -1;
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = r_registration_field(tag, &f, r)) < 0)
                        return k;
        if (k < 0)
                return k;
        return r->id > 0 && r->cgroup && r->cgroup[0] == '/' ? 0 : -EBADMSG;
}

static int r_subscription_field(uint16_t tag, const Span *f, SnapshotSubscription *s) {
        switch (tag) {
        case S_REGISTRATION:
                return r_u64(f, &s->registration);
        case S_LEVEL:
                return R_ENUM(f, -1, _LEVEL_MAX, s->level);
        case S_EXPLICIT_PSI:
                return r_bool(f, &s->explicit_psi);
        case S_BY_LEVEL:
                return r_bool(f, &s->by_level);
        case S_WAITING:
                return r_bool(f, &s->waiting);
        case S_SEQ:
                return r_u64(f, &s->seq);
        case S_MISSED:
                return r_u64(f, &s->missed);
        case S_MIN_INTERVAL:
                return r_u64(f, &s->min_interval_usec);
        case S_LAST_SENT:
                return r_u64(f, &s->last_sent_usec);
        case S_PENDING:
                return r_blob(f, &s->pending);
        case S_PENDING_FLAGS:
                return r_u32(f, &s->pending_flags);
        case S_PENDING_MONOTONIC:
                return r_u64(f, &s->pending_monotonic_us);
        case S_PENDING_COUNT:
                return r_u64(f, &s->pending_count);
        case S_WRITTEN_SEQ:
                return r_u64(f, &s->written_seq);
        }
        return 0;
}

static int r_subscription(const Span *v, SnapshotClient *c) {
        SnapshotSubscription *sub = &c->subscription;
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (c->has_subscription || c->has_levels)
                return -EBADMSG; /* one stream per connection */
        c->has_subscription = true;
        sub->level = _LEVEL_INVALID;
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = r_subscription_field(tag, &f, sub)) < 0)
                        return k;
        if (k < 0)
                return k;
        return sub->registration > 0 ? 0 : -EBADMSG;
}

static int r_levels_field(uint16_t tag, const Span *f, SnapshotLevels *l) {
        switch (tag) {
        case L_CGROUP:
                return r_str(f, &l->cgroup);
        case L_SEQ:
                return r_u64(f, &l->seq);
        case L_MISSED:
                return r_u64(f, &l->missed);
        case L_SENT:
                return R_ENUM(f, -1, 4, l->sent);
        case L_WAITING:
                return r_bool(f, &l->waiting);
        }
        return 0;
}

static int r_levels(const Span *v, SnapshotClient *c) {
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (c->has_subscription || c->has_levels)
                return -EBADMSG; /* one stream per connection */
        c->has_levels = true;
        c->levels.sent = -1;
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = r_levels_field(tag, &f, &c->levels)) < 0)
                        return k;
        if (k < 0)
                return k;
        return c->levels.cgroup ? 0 : -EBADMSG;
}

static int r_output(const Span *v, SnapshotClient *c) {
        SnapshotOutput *o = R_GROW(c->output, c->n_output, SNAPSHOT_OUTPUT_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!o)
                return GROW_ERROR(c->n_output, SNAPSHOT_OUTPUT_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == O_SEQ)
                        k = r_u64(&f, &o->seq);
                else if (tag == O_BYTES)
                        k = r_blob(&f, &o->bytes);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        return o->bytes.size > 0 ? 0 : -EBADMSG;
}

static int r_client_field(uint16_t tag, const Span *f, SnapshotClient *c) {
        switch (tag) {
        case C_ID:
                return r_u64(f, &c->id);
        case C_UID:
                return r_u32(f, &c->uid);
        case C_GID:
                return r_u32(f, &c->gid);
        case C_PID:
                return R_ENUM(f, 0, INT32_MAX, c->pid);
        case C_VIEW_V2:
                return r_str(f, &c->view_v2);
        case C_VIEW_V1:
                return r_str(f, &c->view_v1);
        case C_INPUT:
                return r_blob(f, &c->input);
        case C_OUTPUT:
                return r_output(f, c);
        case C_SUBSCRIPTION:
                return r_subscription(f, c);
        case C_OWES_REEXECUTE:
                return r_bool(f, &c->owes_reexecute);
        case C_LEVELS:
                return r_levels(f, c);
        case C_REFUSED:
                return r_bool(f, &c->refused);
        case C_PREKILL_OWED:
                return r_u64(f, &c->prekill_owed);
        }
        return 0;
}

/* A field of version 2's hook connection (T_HOOK), read into the client it is now: its output one reply. */
static int r_hook_field(uint16_t tag, const Span *f, SnapshotClient *c) {
        static const uint16_t as_client[] = { [HK_ID] = C_ID, [HK_UID] = C_UID, [HK_GID] = C_GID, [HK_PID] = C_PID,
                                              [HK_OWED] = C_PREKILL_OWED, [HK_REFUSED] = C_REFUSED,
                                              [HK_INPUT] = C_INPUT };
        SnapshotOutput *o;

        if (tag != HK_OUTPUT)
                return tag < ELEMENTSOF(as_client) && as_client[tag] ? r_client_field(as_client[tag], f, c) : 0;
        o = R_GROW(c->output, c->n_output, SNAPSHOT_OUTPUT_MAX);
        if (!o)
                return GROW_ERROR(c->n_output, SNAPSHOT_OUTPUT_MAX);
        return f->n > 0 ? r_blob(f, &o->bytes) : -EBADMSG;
}

/* A client into *@array (of *@n), its fields read by @field. */
static int r_client(const Span *v, SnapshotClient **array, size_t *n,
                    int (*field)(uint16_t tag, const Span *f, SnapshotClient *c)) {
        SnapshotClient *c = R_GROW(*array, *n, SNAPSHOT_ITEMS_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!c)
                return GROW_ERROR(*n, SNAPSHOT_ITEMS_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = field(tag, &f, c)) < 0)
                        return k;
        if (k < 0)
                return k;
        return c->id > 0 ? 0 : -EBADMSG;
}

static int r_proxy_field(uint16_t tag, const Span *f, SnapshotProxyClient *p) {
        switch (tag) {
        case P_ID:
                return r_u64(f, &p->id);
        case P_PID:
                return R_ENUM(f, 0, INT32_MAX, p->pid);
        case P_UID:
                return r_u32(f, &p->uid);
        case P_UNIT:
                return r_str(f, &p->unit);
        case P_LINE:
                return f->n > SNAPSHOT_STRING_MAX ? -EBADMSG : r_blob(f, &p->line);
        case P_LINE_DONE:
                return r_bool(f, &p->line_done);
        case P_REGISTRATION:
                return r_u64(f, &p->registration);
        case P_SENT:
                return r_u64(f, &p->sent);
        case P_DROPPED:
                return r_u64(f, &p->dropped);
        case P_DECIDE_BY:
                return r_u64(f, &p->decide_by_usec);
        case P_RESOURCE:
                return R_ENUM(f, 0, _RESOURCE_MAX, p->resource);
        }
        return 0;
}

static int r_proxy(const Span *v, Snapshot *snap) {
        SnapshotProxyClient *p = R_GROW(snap->proxies, snap->n_proxies, SNAPSHOT_ITEMS_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!p)
                return GROW_ERROR(snap->n_proxies, SNAPSHOT_ITEMS_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = r_proxy_field(tag, &f, p)) < 0)
                        return k;
        if (k < 0)
                return k;
        return p->id > 0 ? 0 : -EBADMSG;
}

static int r_reclaim(const Span *v, Snapshot *snap) {
        SnapshotReclaim *e = R_GROW(snap->reclaim, snap->n_reclaim, SNAPSHOT_RECLAIM_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!e)
                return GROW_ERROR(snap->n_reclaim, SNAPSHOT_RECLAIM_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == RC_CGROUP)
                        k = r_str(&f, &e->cgroup);
                else if (tag == RC_RECLAIMED)
                        k = r_u64(&f, &e->reclaimed);
                else if (tag == RC_LAST_STEP)
                        k = r_u64(&f, &e->last_step);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        return e->cgroup && e->cgroup[0] == '/' ? 0 : -EBADMSG;
}

static int r_counter(const Span *v, Snapshot *snap) {
        SnapshotCounter *c = R_GROW(snap->counters, snap->n_counters, 256);

        if (!c)
                return GROW_ERROR(snap->n_counters, 256);
        return r_named(v, &c->name, &c->value);
}

static int r_latency(const Span *v, MetricsHistogram *h) {
        MetricsHistogram n = {};
        Span s = *v, f;
        size_t buckets = 0;
        uint16_t tag;
        int k;

        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == H_BUCKET && buckets < ELEMENTSOF(n.buckets))
                        k = r_u64(&f, &n.buckets[buckets++]);
                else if (tag == H_BUCKET)
                        buckets++;
                else if (tag == H_COUNT)
                        k = r_u64(&f, &n.count);
                else if (tag == H_SUM)
                        k = r_u64(&f, &n.sum_usec);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        /* Buckets with other bounds cannot be added to ours: start afresh. */
        if (buckets == ELEMENTSOF(n.buckets))
                *h = n;
        return 0;
}

static int r_prekill_counters(const Span *v, PrekillCounters *c) {
        Span s = *v, f;
        uint16_t tag;
        int k;

        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == K_WARNED)
                        k = r_u64(&f, &c->warned);
                else if (tag == K_ACKNOWLEDGED)
                        k = r_u64(&f, &c->acknowledged);
                else if (tag == K_DEADLINE_REACHED)
                        k = r_u64(&f, &c->deadline_reached);
                else if (tag == K_NOBODY)
                        k = r_u64(&f, &c->nobody);
                if (k < 0)
                        return k;
        }
        return k;
}

static int r_warned(const Span *v, SnapshotPrekillWarning *x) {
        PrekillWarned *d = R_GROW(x->warned, x->n_warned, SNAPSHOT_ITEMS_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!d)
                return GROW_ERROR(x->n_warned, SNAPSHOT_ITEMS_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0) {
                if (tag == WD_CLIENT)
                        k = r_u64(&f, &d->client);
                else if (tag == WD_UID)
                        k = r_u32(&f, &d->uid);
                else if (tag == WD_PID)
                        k = R_ENUM(&f, 0, INT32_MAX, d->pid);
                else if (tag == WD_STATE)
                        k = R_ENUM(&f, 0, _PREKILL_WARNED_STATE_MAX, d->state);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        return d->client > 0 ? 0 : -EBADMSG;
}

static int r_prekill_warning_field(uint16_t tag, const Span *f, SnapshotPrekillWarning *x) {
        switch (tag) {
        case W_ID:
                return r_u64(f, &x->id);
        case W_VICTIM:
                return r_str(f, &x->victim);
        case W_START:
                return r_u64(f, &x->start_us);
        case W_REALTIME:
                return r_u64(f, &x->realtime_us);
        case W_DEADLINE:
                return r_u64(f, &x->deadline_us);
        case W_HOOK:
                return r_u64(f, &x->hook);
        case W_WARNED:
                return r_warned(f, x);
        }
        return 0;
}

static int r_prekill_warning(const Span *v, Snapshot *snap) {
        SnapshotPrekillWarning *x = R_GROW(snap->prekill_warnings, snap->n_prekill_warnings, SNAPSHOT_ITEMS_MAX);
        Span s = *v, f;
        uint16_t tag;
        int k;

        if (!x)
                return GROW_ERROR(snap->n_prekill_warnings, SNAPSHOT_ITEMS_MAX);
        while ((k = r_next(&s, &tag, &f)) > 0)
                if ((k = r_prekill_warning_field(tag, &f, x)) < 0)
                        return k;
        if (k < 0)
                return k;
        return x->id > 0 && x->victim && x->victim[0] == '/' ? 0 : -EBADMSG;
}

/* The top-level fields of version 2 and on (0 for a tag that is none of them). */
static int r_prekill_field(uint16_t tag, const Span *f, Snapshot *s) {
        switch (tag) {
        case T_PREKILL_PATH:
                return r_str(f, &s->prekill_path);
        case T_NEXT_HOOK_ID:
                return r_u64(f, &s->next_hook_id);
        case T_PREKILL_LAST_ID:
                return r_u64(f, &s->prekill_last_id);
        case T_PREKILL_COUNTERS:
                return r_prekill_counters(f, &s->prekill_counters);
        case T_PREKILL_WARNING:
                return r_prekill_warning(f, s);
        case T_HOOK:
                return r_client(f, &s->hook_clients, &s->n_hook_clients, r_hook_field);
        case T_HOOK_CLIENT:
                return r_client(f, &s->hook_clients, &s->n_hook_clients, r_client_field);
        }
        return 0;
}

static int r_top_field(uint16_t tag, const Span *f, Snapshot *s) {
        switch (tag) {
        case T_SERIAL:
                return r_u64(f, &s->serial);
        case T_COMPLETE:
                return r_bool(f, &s->complete);
        case T_GENERATION:
                return r_u64(f, &s->generation);
        case T_START_MONOTONIC:
                return r_u64(f, &s->start_monotonic_us);
        case T_LIVE_NAME:
                return r_str(f, &s->live_name);
        case T_SOCKET_PATH:
                return r_str(f, &s->socket_path);
        case T_PROXY_PATH:
                return r_str(f, &s->proxy_paths[RESOURCE_MEMORY]);
        case T_CPU_PROXY_PATH:
                return r_str(f, &s->proxy_paths[RESOURCE_CPU]);
        case T_IO_PROXY_PATH:
                return r_str(f, &s->proxy_paths[RESOURCE_IO]);
        case T_REPORT_PATH:
                return r_str(f, &s->report_path);
        case T_NEXT_CLIENT_ID:
                return r_u64(f, &s->next_client_id);
        case T_NEXT_PROXY_ID:
                return r_u64(f, &s->next_proxy_id);
        case T_NEXT_REGISTRATION_ID:
                return r_u64(f, &s->next_registration_id);
        case T_PSI_UNPRIVILEGED:
                return r_bool(f, &s->psi_unprivileged);
        case T_COUNTER:
                return r_counter(f, s);
        case T_LATENCY:
                return r_latency(f, &s->latency);
        case T_REGISTRATION:
                return r_registration(f, s);
        case T_CLIENT:
                return r_client(f, &s->clients, &s->n_clients, r_client_field);
        case T_PROXY:
                return r_proxy(f, s);
        case T_RECLAIM:
                return r_reclaim(f, s);
        }
        return r_prekill_field(tag, f, s);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The id is the first field of every kind of item. */
_Static_assert(offsetof(SnapshotRegistration, id) == 0, "id first");
_Static_assert(offsetof(SnapshotClient, id) == 0, "id first");
_Static_assert(offsetof(SnapshotProxyClient, id) == 0, "id first");
_Static_assert(offsetof(SnapshotPrekillWarning, id) == 0, "id first");

/* Whether the @n ids at @base (@stride bytes apart) are all different. */
static int ids_unique(const void *base, size_t n, size_t stride) {
        _cleanup_free_ uint64_t *ids = NULL;

        if (n < 2)
                return 0;
        ids = malloc(n * sizeof(uint64_t));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                memcpy(&ids[i], (const char *) base + i * stride, sizeof(uint64_t));
        qsort(ids, n, sizeof(uint64_t), cmp_u64);
        for (size_t i = 1; i < n; i++)
                if (ids[i] == ids[i - 1])
                        return -EBADMSG;
        return 0;
}

static bool registration_exists(const Snapshot *s, const uint64_t *sorted, uint64_t id) {
        return s->n_registrations > 0 &&
               bsearch(&id, sorted, s->n_registrations, sizeof(uint64_t), cmp_u64) != NULL;
}

static const SnapshotClient *hook_find(const Snapshot *s, uint64_t id) {
        for (size_t i = 0; i < s->n_hook_clients; i++)
                if (s->hook_clients[i].id == id)
                        return &s->hook_clients[i];
        return NULL;
}

/* Ids unique, the last id given above each warning's, and a warning and the hook connection it is owed to name each other. */
static int snapshot_check_prekill(const Snapshot *s) {
        int k;

        if ((k = ids_unique(s->prekill_warnings, s->n_prekill_warnings, sizeof(*s->prekill_warnings))) < 0 ||
            (k = ids_unique(s->hook_clients, s->n_hook_clients, sizeof(*s->hook_clients))) < 0)
                return k;
        for (size_t i = 0; i < s->n_prekill_warnings; i++) {
                const SnapshotPrekillWarning *w = &s->prekill_warnings[i];
                const SnapshotClient *h = w->hook ? hook_find(s, w->hook) : NULL;

                if (w->id > s->prekill_last_id || (w->hook && (!h || h->prekill_owed != w->id)))
                        return -EBADMSG;
        }
        for (size_t i = 0; i < s->n_hook_clients; i++) {
                const SnapshotClient *h = &s->hook_clients[i];
                bool found = h->prekill_owed == 0;

                for (size_t j = 0; j < s->n_prekill_warnings && !found; j++)
                        found = s->prekill_warnings[j].id == h->prekill_owed && s->prekill_warnings[j].hook == h->id;
                if (!found)
                        return -EBADMSG;
        }
        return 0;
}

/* Every id unique, and every reference to a registration names one. */
static int snapshot_check_references(const Snapshot *s) {
        _cleanup_free_ uint64_t *regs = NULL;
        int k;

        if ((k = ids_unique(s->registrations, s->n_registrations, sizeof(*s->registrations))) < 0 ||
            (k = ids_unique(s->clients, s->n_clients, sizeof(*s->clients))) < 0 ||
            (k = ids_unique(s->proxies, s->n_proxies, sizeof(*s->proxies))) < 0)
                return k;
        if (s->n_registrations > 0) {
                regs = malloc(s->n_registrations * sizeof(uint64_t));
                if (!regs)
                        return -ENOMEM;
                for (size_t i = 0; i < s->n_registrations; i++)
                        regs[i] = s->registrations[i].id;
                qsort(regs, s->n_registrations, sizeof(uint64_t), cmp_u64);
        }
        for (size_t i = 0; i < s->n_clients; i++)
                if (s->clients[i].has_subscription &&
                    !registration_exists(s, regs, s->clients[i].subscription.registration))
                        return -EBADMSG;
        for (size_t i = 0; i < s->n_proxies; i++)
                if (s->proxies[i].registration && !registration_exists(s, regs, s->proxies[i].registration))
                        return -EBADMSG;
        return snapshot_check_prekill(s);
}

static int snapshot_check_header(const uint8_t *p, size_t size, uint32_t *ret_version) {
        uint64_t payload;
        uint32_t version;

        if (size > SNAPSHOT_SIZE_MAX)
                return -E2BIG;
        if (size < SNAPSHOT_HEADER_SIZE || memcmp(p, snapshot_magic, sizeof(snapshot_magic)) != 0)
                return -EBADMSG;
        version = (uint32_t) get_le(p + 8, 4);
        if (version == 0)
                return -EBADMSG;
        if (version > SNAPSHOT_VERSION)
                return -EPROTONOSUPPORT;
        payload = get_le(p + 16, 8);
        if (get_le(p + 12, 4) != 0 || payload != size - SNAPSHOT_HEADER_SIZE ||
            get_le(p + 24, 8) != fnv1a(p + SNAPSHOT_HEADER_SIZE, (size_t) payload))
                return -EBADMSG;
        *ret_version = version;
        return 0;
}

int snapshot_decode(const void *data, size_t size, Snapshot *ret) {
        _cleanup_(snapshot_done) Snapshot s = {};
        Span all, f;
        uint16_t tag;
        int k;

        k = snapshot_check_header(data, size, &s.version);
        if (k < 0)
                return k;
        all = (Span) { (const uint8_t *) data + SNAPSHOT_HEADER_SIZE, size - SNAPSHOT_HEADER_SIZE };
        while ((k = r_next(&all, &tag, &f)) > 0)
                if ((k = r_top_field(tag, &f, &s)) < 0)
                        return k;
        if (k < 0)
                return k;
        k = snapshot_check_references(&s);
        if (k < 0)
                return k;
        *ret = s;
        s = (Snapshot) {};
        return 0;
}

void snapshot_client_done(SnapshotClient *c) {
        free(c->view_v2);
        free(c->view_v1);
        free(c->input.data);
        for (size_t i = 0; i < c->n_output; i++)
                free(c->output[i].bytes.data);
        free(c->output);
        free(c->subscription.pending.data);
        free(c->levels.cgroup);
        *c = (SnapshotClient) {};
}

void snapshot_prekill_warning_done(SnapshotPrekillWarning *w) {
        free(w->victim);
        free(w->warned);
        *w = (SnapshotPrekillWarning) {};
}

void snapshot_registration_done(SnapshotRegistration *r) {
        free(r->cgroup);
        for (size_t i = 0; i < r->n_tops; i++)
                free(r->tops[i].name);
        free(r->tops);
        free(r->history);
        *r = (SnapshotRegistration) {};
}

void snapshot_done(Snapshot *s) {
        free(s->live_name);
        free(s->socket_path);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                free(s->proxy_paths[r]);
        free(s->report_path);
        for (size_t i = 0; i < s->n_counters; i++)
                free(s->counters[i].name);
        free(s->counters);
        for (size_t i = 0; i < s->n_registrations; i++)
                snapshot_registration_done(&s->registrations[i]);
        free(s->registrations);
        for (size_t i = 0; i < s->n_clients; i++)
                snapshot_client_done(&s->clients[i]);
        free(s->clients);
        for (size_t i = 0; i < s->n_proxies; i++) {
                free(s->proxies[i].unit);
                free(s->proxies[i].line.data);
        }
        free(s->proxies);
        for (size_t i = 0; i < s->n_reclaim; i++)
                free(s->reclaim[i].cgroup);
        free(s->reclaim);
        free(s->prekill_path);
        for (size_t i = 0; i < s->n_prekill_warnings; i++)
                snapshot_prekill_warning_done(&s->prekill_warnings[i]);
        free(s->prekill_warnings);
        for (size_t i = 0; i < s->n_hook_clients; i++)
                snapshot_client_done(&s->hook_clients[i]);
        free(s->hook_clients);
        *s = (Snapshot) {};
}
