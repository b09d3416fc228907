/* SPDX-License-Identifier: MIT */
/*
 * Pressure episodes: when a registration's pressure began, how long it has
 * lasted, and when it is over. Pure logic on a caller-supplied monotonic
 * clock: no I/O, no libevent, no allocation but the history ring.
 *
 * An episode starts with the first pressure event of a registration. It
 * clears once, for the hold period, no event has fired and (PSI only) the
 * stall measured over each window stayed below the clearing level. The
 * caller feeds events and timer ticks, reads the stall total from the same
 * pressure file the trigger sits on, and arms one timer at the time
 * episode_next_tick() names; while no episode is active there is nothing to
 * arm.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stall ratios are kept in parts per million of wall time. */
#define EPISODE_PPM UINT32_C(1000000)

typedef struct EpisodeParams {
        uint64_t hold_us;        /* quiet time needed to clear; > 0 */
        uint64_t window_us;      /* PSI window; 0 for sources without a stall total */
        uint64_t threshold_us;   /* PSI threshold within the window */
        uint64_t clear_stall_us; /* PSI: stall per window that still counts as pressure */
} EpisodeParams;

/*
 * episode_params_psi - the parameters for a PSI trigger: clearing needs the
 * stall per window below @threshold_us × @clear_ratio, held for @hold_us.
 */
EpisodeParams episode_params_psi(uint64_t threshold_us, uint64_t window_us,
                                 double clear_ratio, uint64_t hold_us);

/* episode_params_plain - parameters for a source that clears on quiet time alone. */
EpisodeParams episode_params_plain(uint64_t hold_us);

typedef struct EpisodeRecord {
        uint64_t start_us;       /* monotonic time of the first event */
        uint64_t end_us;         /* when it cleared; 0 while active */
        uint64_t events;         /* pressure events in the episode */
        uint32_t peak;           /* PSI: largest stall per window, ppm; otherwise the highest level */
        bool peak_known;         /* PSI: a kernel event came; an episode of injected events alone has no peak */
} EpisodeRecord;

typedef struct Episode {
        EpisodeParams params;
        bool active;
        EpisodeRecord cur;
        uint64_t last_event_us;
        uint64_t unquiet_us;     /* end of the last window whose stall was too high */
        bool have_sample;
        uint64_t sample_us;      /* the last tick (or the start), and the stall total then */
        uint64_t sample_total_us;
} Episode;

void episode_init(Episode *e, const EpisodeParams *p);

/*
 * episode_set_params - apply new parameters (after a reload); an active
 * episode goes on under them.
 */
void episode_set_params(Episode *e, const EpisodeParams *p);

/*
 * episode_event - a pressure event at @now_us. @level is the event's level
 * for sources without a stall total (it feeds the peak), ignored for PSI.
 * @injected: the event was made by Inject(), not by the kernel: for PSI it
 * says nothing of the stall (the peak stays unknown until a kernel event).
 * @has_total/@total_us: the stall total read with the event, if any; it seeds
 * the first window of a new episode.
 * Returns true if the event began a new episode.
 */
bool episode_event(Episode *e, uint64_t now_us, uint32_t level, bool injected, bool has_total, uint64_t total_us);

/*
 * episode_tick - the timer armed for episode_next_tick() fired at @now_us,
 * with the stall total read now (@has_total false if it could not be read,
 * which counts as pressure, so a failing read never clears an episode).
 * Returns true if the episode cleared; then @ret_cleared (may be NULL) gets
 * its record and the episode is inactive.
 */
bool episode_tick(Episode *e, uint64_t now_us, bool has_total, uint64_t total_us,
                  EpisodeRecord *ret_cleared);

/*
 * episode_next_tick - when the caller must call episode_tick() next:
 * a monotonic time in µs, or 0 when no episode is active and nothing is
 * to be armed.
 */
uint64_t episode_next_tick(const Episode *e);

/*
 * A bounded ring of the last cleared episodes, oldest first. The storage is
 * allocated on the first push, so a registration that never clears costs
 * nothing.
 */
typedef struct EpisodeHistory {
        EpisodeRecord *records;
        size_t capacity;
        size_t n;
        size_t head;             /* index of the oldest record */
} EpisodeHistory;

void episode_history_init(EpisodeHistory *h, size_t capacity);
void episode_history_done(EpisodeHistory *h);

/* episode_history_push - keep @r, dropping the oldest when full. -ENOMEM, or 0. */
int episode_history_push(EpisodeHistory *h, const EpisodeRecord *r);

/* episode_history_get - the @i-th oldest record (0 <= @i < h->n). */
const EpisodeRecord *episode_history_get(const EpisodeHistory *h, size_t i);

/*
 * episode_history_resize - change the capacity, keeping the newest records.
 * A capacity of 0 drops them all. -ENOMEM leaves @h unchanged.
 */
int episode_history_resize(EpisodeHistory *h, size_t capacity);
