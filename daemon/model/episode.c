/* SPDX-License-Identifier: MIT */
/*
 * Pressure episodes and their history ring; see episode.h.
 *
 * Clearing is decided at timer ticks. For PSI the caller ticks once per
 * window while an episode is active and passes the stall total (total= of
 * the trigger's stall type, in µs). The stall over the interval since the
 * previous tick, scaled to one window, is compared with the clearing level;
 * a window above it restarts the quiet period at its end, as an event does.
 * The episode clears when the quiet period reaches the hold time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "episode.h"

static uint64_t max_u64(uint64_t a, uint64_t b) {
        return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

/* a * b / c without overflow for 64-bit a, b; c > 0. Saturates. */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c) {
        unsigned __int128 r = (unsigned __int128) a * b / c;

        return r > UINT64_MAX ? UINT64_MAX : (uint64_t) r;
}

static uint32_t ratio_ppm(uint64_t part, uint64_t whole) {
        uint64_t r;

        if (whole == 0)
                return 0;
        r = mul_div(part, EPISODE_PPM, whole);
        return r > EPISODE_PPM ? EPISODE_PPM : (uint32_t) r;
}

/**
 * episode_params_psi - parameters for a PSI trigger
 * @threshold_us: the trigger's threshold
 * @window_us: the trigger's window (> 0)
 * @clear_ratio: fraction of the threshold below which the stall counts as over
 * @hold_us: how long both conditions must hold
 */
EpisodeParams episode_params_psi(uint64_t threshold_us, uint64_t window_us,
                                 double clear_ratio, uint64_t hold_us) {
        double level = (double) threshold_us * clear_ratio;

        if (level < 0)
                level = 0;
        return (EpisodeParams) {
                .hold_us = hold_us,
                .window_us = window_us,
                .threshold_us = threshold_us,
                .clear_stall_us = level >= (double) UINT64_MAX ? UINT64_MAX : (uint64_t) level,
        };
}

/**
 * episode_params_plain - parameters for a source without a stall total
 * @hold_us: quiet time after the last event before the episode clears
 */
EpisodeParams episode_params_plain(uint64_t hold_us) {
        return (EpisodeParams) { .hold_us = hold_us };
}

/**
 * episode_init - an inactive episode tracker
 * @e: the tracker
 * @p: its parameters
 */
void episode_init(Episode *e, const EpisodeParams *p) {
        *e = (Episode) { .params = *p };
}

/**
 * episode_set_params - replace the parameters; an active episode continues
 * @e: the tracker
 * @p: the new parameters
 */
void episode_set_params(Episode *e, const EpisodeParams *p) {
        if (p->window_us != e->params.window_us)
                e->have_sample = false; /* the old samples were spaced for another window */
        e->params = *p;
}

static void episode_seed(Episode *e, uint64_t now_us, bool has_total, uint64_t total_us) {
        if (e->params.window_us == 0 || e->have_sample || !has_total)
                return;
        e->have_sample = true;
        e->sample_us = now_us;
        e->sample_total_us = total_us;
}

/**
 * episode_event - account one pressure event
 * @e: the tracker
 * @now_us: monotonic time of the event
 * @level: the event's level (sources without a stall total)
 * @injected: made by Inject(): no stall figure (PSI)
 * @has_total: whether @total_us was read with the event
 * @total_us: the stall total at the event (PSI)
 *
 * Returns true if the event began a new episode.
 */
bool episode_event(Episode *e, uint64_t now_us, uint32_t level, bool injected, bool has_total, uint64_t total_us) {
        bool started = !e->active;

        if (started) {
                e->active = true;
                e->cur = (EpisodeRecord) { .start_us = now_us };
                e->unquiet_us = 0;
                e->have_sample = false;
                e->sample_us = now_us;
        }
        episode_seed(e, now_us, has_total, total_us);
        e->cur.events++;
        e->last_event_us = max_u64(e->last_event_us, now_us);

        if (e->params.window_us > 0 && !injected) {
                /* The kernel fired: the stall reached the threshold within a window. */
                e->cur.peak = (uint32_t) max_u64(e->cur.peak, ratio_ppm(e->params.threshold_us, e->params.window_us));
                e->cur.peak_known = true;
        } else if (e->params.window_us == 0)
                e->cur.peak = (uint32_t) max_u64(e->cur.peak, level);
        return started;
}

static void episode_sample(Episode *e, uint64_t now_us, bool has_total, uint64_t total_us) {
        const uint64_t window = e->params.window_us;

        if (!has_total) {
                /* Not knowing the stall is not knowing it is over. */
                e->unquiet_us = now_us;
                e->have_sample = false;
                e->sample_us = now_us;
                return;
        }
        if (!e->have_sample || now_us <= e->sample_us || total_us < e->sample_total_us) {
                /* Nothing to compare with yet (or the total went backwards:
                 * the file belongs to a new cgroup): start measuring now. */
                e->unquiet_us = now_us;
        } else {
                uint64_t dt = now_us - e->sample_us;
                uint64_t stall = total_us - e->sample_total_us;

                if (mul_div(stall, window, dt) >= e->params.clear_stall_us)
                        e->unquiet_us = now_us;
                /* The peak is a ratio over a window: shorter intervals
                 * (a tick pulled in by the hold deadline) do not count. */
                if (dt * 2 >= window)
                        e->cur.peak = (uint32_t) max_u64(e->cur.peak, ratio_ppm(stall, dt));
        }
        e->have_sample = true;
        e->sample_us = now_us;
        e->sample_total_us = total_us;
}

/**
 * episode_tick - the episode timer fired
 * @e: the tracker
 * @now_us: monotonic time now
 * @has_total: whether @total_us could be read
 * @total_us: the stall total now (PSI)
 * @ret_cleared: the finished episode, if it cleared (may be NULL)
 *
 * Returns true if the episode cleared with this tick.
 */
bool episode_tick(Episode *e, uint64_t now_us, bool has_total, uint64_t total_us,
                  EpisodeRecord *ret_cleared) {
        uint64_t quiet_from;

        if (!e->active)
                return false;
        if (e->params.window_us > 0)
                episode_sample(e, now_us, has_total, total_us);

        quiet_from = max_u64(e->last_event_us, e->unquiet_us);
        if (now_us < quiet_from || now_us - quiet_from < e->params.hold_us)
                return false;

        e->cur.end_us = now_us;
        if (ret_cleared)
                *ret_cleared = e->cur;
        e->active = false;
        e->have_sample = false;
        return true;
}

/**
 * episode_next_tick - when the timer must fire next
 * @e: the tracker
 *
 * Returns a monotonic time in µs, or 0 when no episode is active.
 */
uint64_t episode_next_tick(const Episode *e) {
        uint64_t deadline;

        if (!e->active)
                return 0;
        deadline = max_u64(e->last_event_us, e->unquiet_us) + e->params.hold_us;
        if (e->params.window_us == 0)
                return deadline;
        return min_u64(e->sample_us + e->params.window_us, deadline);
}

/**
 * episode_history_init - an empty ring
 * @h: the ring
 * @capacity: how many records it keeps (0: none)
 */
void episode_history_init(EpisodeHistory *h, size_t capacity) {
        *h = (EpisodeHistory) { .capacity = capacity };
}

/**
 * episode_history_done - free the ring's storage
 * @h: the ring, left empty
 */
void episode_history_done(EpisodeHistory *h) {
        free(h->records);
        *h = (EpisodeHistory) { .capacity = h->capacity };
}

/**
 * episode_history_push - record a cleared episode
 * @h: the ring
 * @r: the record, copied
 *
 * Returns 0, or -ENOMEM (the record is then not kept).
 */
int episode_history_push(EpisodeHistory *h, const EpisodeRecord *r) {
        if (h->capacity == 0)
                return 0;
        if (!h->records) {
                h->records = calloc(h->capacity, sizeof(*h->records));
                if (!h->records)
                        return -ENOMEM;
        }
        if (h->n < h->capacity) {
                h->records[(h->head + h->n) % h->capacity] = *r;
                h->n++;
        } else {
                h->records[h->head] = *r;
                h->head = (h->head + 1) % h->capacity;
        }
        return 0;
}

/**
 * episode_history_get - a kept record
 * @h: the ring
 * @i: 0 for the oldest, h->n - 1 for the newest
 */
const EpisodeRecord *episode_history_get(const EpisodeHistory *h, size_t i) {
        if (i >= h->n)
                return NULL;
        return &h->records[(h->head + i) % h->capacity];
}

/**
 * episode_history_resize - change how many records are kept
 * @h: the ring
 * @capacity: the new capacity; the newest records are kept
 *
 * Returns 0 or -ENOMEM (then @h is unchanged).
 */
int episode_history_resize(EpisodeHistory *h, size_t capacity) {
        EpisodeRecord *records = NULL;
        size_t keep = h->n < capacity ? h->n : capacity;

        if (capacity == h->capacity)
                return 0;
        if (keep > 0) {
                records = calloc(capacity, sizeof(*records));
                if (!records)
                        return -ENOMEM;
                for (size_t i = 0; i < keep; i++)
                        records[i] = *episode_history_get(h, h->n - keep + i);
        }
        free(h->records);
        *h = (EpisodeHistory) { .records = records, .capacity = capacity, .n = keep };
        return 0;
}
