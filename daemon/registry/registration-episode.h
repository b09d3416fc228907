/* SPDX-License-Identifier: MIT */
/*
 * The pressure episode of a registration, in the event loop: feeds the
 * pure tracker (episode.h) with the registration's events and the stall
 * total of its pressure file, runs the one timer that detects the end
 * while an episode is active, sends "cleared" to every listener and
 * keeps the history ring. PSI and vmpressure registrations have episodes;
 * memory_events and protection ones do not. Nothing here runs while no
 * episode is active.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "registration.h"
#include "trigger.h"

/* The hold period of vmpressure episodes when ClearAfterSec=0: it has no time window. */
#define EPISODE_VMPRESSURE_HOLD_USEC (2 * USEC_PER_SEC)

/* registration_has_episodes - whether @r's events form episodes (PSI, vmpressure). */
bool registration_has_episodes(const Registration *r);

/* registration_episode_init - set up @r's tracker and history from the configuration, after open. */
void registration_episode_init(Registration *r);

/* registration_episode_done - drop @r's timer and history. */
void registration_episode_done(Registration *r);

/*
 * registration_episode_event - account a pressure event of @r (from the
 * kernel or injected) at @monotonic_us; @level is the event's level, or
 * _LEVEL_INVALID. @sample is what the source read with a kernel event
 * (its stall total is used), NULL to read the total now (an injected
 * event, or none was read). Starts an episode and arms the timer if none
 * is active.
 */
void registration_episode_event(Registration *r, uint64_t monotonic_us, Level level, const PsiStats *sample);

/*
 * registration_episode_reconfigure - apply the current [Levels] ClearAfterSec=,
 * ClearRatio= and [Limits] HistoryEpisodes= to @r (after a reload); an
 * active episode goes on under the new parameters.
 */
void registration_episode_reconfigure(Registration *r);

/*
 * registration_episode_adopt - @to takes over @from's active episode (a
 * reload moved subscriptions to a new trigger), unless it has one itself.
 */
void registration_episode_adopt(Registration *to, const Registration *from);

/* registration_episode_export - @r's episode and history into @ret. Returns 0 or -ENOMEM. */
int registration_episode_export(const Registration *r, SnapshotRegistration *ret);

/* registration_episode_restore - @r's episode and history as @saved has them, after init. */
void registration_episode_restore(Registration *r, const SnapshotRegistration *saved);

