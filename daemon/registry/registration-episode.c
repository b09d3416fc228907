/* SPDX-License-Identifier: MIT */
/* Episodes of registrations in the event loop; see registration-episode.h. */
#include <inttypes.h>

#include "event-util.h"
#include "log.h"
#include "registration-episode.h"

/**
 * registration_has_episodes - whether a registration tracks episodes
 * @r: the registration
 */
bool registration_has_episodes(const Registration *r) {
        return r->src.type == SOURCE_PSI || r->src.type == SOURCE_VMPRESSURE;
}

static EpisodeParams episode_params_of(const Registration *r) {
        const Config *c = r->registry->config;

        if (r->src.type == SOURCE_PSI)
                return episode_params_psi(r->src.used.threshold_us, r->src.used.window_us,
                                          c->clear_ratio_ppm / 1e6,
                                          c->clear_after_usec ?: 2 * r->src.used.window_us);
        return episode_params_plain(c->clear_after_usec ?: EPISODE_VMPRESSURE_HOLD_USEC);
}

/* The stall total of @r's trigger type in @st. */
static bool stall_total_of(const Registration *r, const PsiStats *st, uint64_t *ret) {
        if (r->src.used.stall == PSI_STALL_FULL) {
                if (!st->has_full)
                        return false;
                *ret = st->full.total_us;
        } else
                *ret = st->some.total_us;
        return true;
}

/* The stall total of @r's trigger type, from its own pressure file. */
static bool read_stall_total(const Registration *r, uint64_t *ret) {
        PsiStats st;

        return source_read_psi(&r->src, &st) >= 0 && stall_total_of(r, &st, ret);
}

/**
 * registration_episode_init - start tracking episodes of a registration
 * @r: the registration, opened (its trigger is known)
 */
void registration_episode_init(Registration *r) {
        EpisodeParams p = episode_params_of(r);

        episode_init(&r->episode, &p);
        episode_history_init(&r->history, r->registry->config->history_episodes);
}

/**
 * registration_episode_done - free what tracking episodes holds
 * @r: the registration
 */
void registration_episode_done(Registration *r) {
        event_free_and_null(&r->episode_timer);
        episode_history_done(&r->history);
}

static void on_episode_timer(evutil_socket_t fd, short what, void *userdata);

/* Arm the timer for the next tick, or drop it when no episode is active. */
static void episode_arm(Registration *r) {
        uint64_t next = episode_next_tick(&r->episode), now;
        struct timeval tv;

        if (next == 0) {
                event_free_and_null(&r->episode_timer);
                return;
        }
        if (!r->episode_timer)
                r->episode_timer = evtimer_new(r->registry->env->base, on_episode_timer, r);
        now = now_usec(CLOCK_MONOTONIC);
        tv = usec_to_timeval(next > now ? next - now : 0);
        if (!r->episode_timer || evtimer_add(r->episode_timer, &tv) < 0)
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to arm the episode timer of %s, the episode will end with the next event after its hold period: %m",
                                r->src.cgroup);
}

static void episode_cleared(Registration *r, const EpisodeRecord *rec) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), rt = now_usec(CLOCK_REALTIME);
        Listener *l, *n;
        Body *body;

        if (episode_history_push(&r->history, rec) < 0)
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to record an episode of %s in its history, ignoring: %m", r->src.cgroup);
        log_debug("Pressure episode on %s (%s) cleared after %" PRIu64 " ms, %" PRIu64 " event(s).",
                  r->src.cgroup, source_type_to_string(r->src.type), (rec->end_us - rec->start_us) / USEC_PER_MSEC,
                  rec->events);

        if (r->registry->hooks && r->registry->hooks->changed)
                r->registry->hooks->changed(r->registry->hooks_userdata);
        body = r->registry->serialize(&(const EventData) {
                .kind = EVENT_CLEARED, .cgroup = r->src.cgroup, .realtime_us = rt, .monotonic_us = mono,
                .cleared = { .source = r->src.type, .resource = r->src.resource, .episode = rec },
        }, mono);
        if (!body) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to serialize a cleared event, dropping it: %m");
                return;
        }
        LIST_FOREACH_SAFE(listeners, l, n, r->listeners)
                if (l->ops->cleared)
                        (void) l->ops->cleared(l, body);
        body_unref(body);
}

static void on_episode_timer(evutil_socket_t fd, short what, void *userdata) {
        Registration *r = userdata;
        EpisodeRecord rec;
        uint64_t total = 0;
        bool has_total;

        has_total = read_stall_total(r, &total);
        if (episode_tick(&r->episode, now_usec(CLOCK_MONOTONIC), has_total, total, &rec))
                episode_cleared(r, &rec);
        episode_arm(r);
}

/**
 * registration_episode_event - account a pressure event
 * @r: the registration
 * @monotonic_us: when it was read (or injected)
 * @level: the level of an injected event, or _LEVEL_INVALID for a kernel one
 * @sample: the stats read with a kernel event, or NULL
 */
void registration_episode_event(Registration *r, uint64_t monotonic_us, Level level, const PsiStats *sample) {
        uint64_t total = 0;
        bool has_total, injected;
        uint32_t lv;

        if (!registration_has_episodes(r) || r->removed)
                return;
        injected = level >= 0 && level < _LEVEL_MAX;
        if (!injected)
                level = r->src.type == SOURCE_VMPRESSURE ? r->src.vm_level : _LEVEL_INVALID;
        /* The peak of a level-based episode is the level + 1, 0 meaning none. */
        lv = level >= 0 ? (uint32_t) level + 1 : 0;
        if (sample && r->src.type == SOURCE_PSI)
                has_total = stall_total_of(r, sample, &total);
        else
                has_total = read_stall_total(r, &total);
        if (episode_event(&r->episode, monotonic_us, lv, injected, has_total, total)) {
                log_debug("Pressure episode on %s (%s) began.", r->src.cgroup, source_type_to_string(r->src.type));
                if (r->registry->hooks && r->registry->hooks->changed)
                        r->registry->hooks->changed(r->registry->hooks_userdata);
        }
        episode_arm(r);
}

/**
 * registration_episode_reconfigure - apply a reloaded configuration
 * @r: the registration
 */
void registration_episode_reconfigure(Registration *r) {
        EpisodeParams p = episode_params_of(r);

        episode_set_params(&r->episode, &p);
        if (episode_history_resize(&r->history, r->registry->config->history_episodes) < 0)
                log_warning("Failed to resize the episode history of %s, keeping %zu entries.",
                            r->src.cgroup, r->history.capacity);
        if (r->episode.active)
                episode_arm(r);
}

/**
 * registration_episode_adopt - carry an active episode over to a new registration
 * @to: the registration subscriptions move to
 * @from: the one they leave
 */
/* @r goes on with the active episode @from: its record and quiet time; the stall sample is taken afresh. */
static void episode_continue(Registration *r, const Episode *from) {
        r->episode.active = true;
        r->episode.cur = from->cur;
        r->episode.last_event_us = from->last_event_us;
        r->episode.unquiet_us = from->unquiet_us;
        r->episode.have_sample = false;
        r->episode.sample_us = now_usec(CLOCK_MONOTONIC);
}

void registration_episode_adopt(Registration *to, const Registration *from) {
        if (!registration_has_episodes(to) || !from->episode.active || to->episode.active)
                return;
        episode_continue(to, &from->episode);
        if ((to->src.type != SOURCE_PSI && from->src.type == SOURCE_PSI) ||
            (to->src.type == SOURCE_PSI && from->src.type != SOURCE_PSI)) {
                /* A stall ratio is not a level, nor the other way round. */
                to->episode.cur.peak = 0;
                to->episode.cur.peak_known = false;
        }
        episode_arm(to);
}

/**
 * registration_episode_export - the episode and history of a registration, for a successor
 * @r: the registration
 * @ret: the snapshot to fill in (its episode and history)
 *
 * Returns 0 or -ENOMEM.
 */
int registration_episode_export(const Registration *r, SnapshotRegistration *ret) {
        ret->episode = r->episode;
        if (r->history.n == 0)
                return 0;
        ret->history = calloc(r->history.n, sizeof(EpisodeRecord));
        if (!ret->history)
                return -ENOMEM;
        for (size_t i = 0; i < r->history.n; i++)
                ret->history[i] = *episode_history_get(&r->history, i);
        ret->n_history = r->history.n;
        return 0;
}

/**
 * registration_episode_restore - take over a previous process's episode and history
 * @r: the registration, its tracking initialized from the configuration
 * @saved: what the previous process had
 *
 * An active episode goes on (its timer armed again) and clears as it
 * would have; the stall sample is taken afresh. A history that does not
 * fit in HistoryEpisodes= keeps its newest entries.
 */
void registration_episode_restore(Registration *r, const SnapshotRegistration *saved) {
        if (!registration_has_episodes(r))
                return;
        for (size_t i = 0; i < saved->n_history; i++)
                if (episode_history_push(&r->history, &saved->history[i]) < 0)
                        break;
        if (!saved->episode.active)
                return;
        episode_continue(r, &saved->episode);
        episode_arm(r);
}
