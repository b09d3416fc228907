/* SPDX-License-Identifier: MIT */
/* pressurectl top: the kills of the last minute (top-kills.c), marked on a snapshot. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "top-cgroup.h"

/* How long a kill marks its cgroup, and how many kills top remembers (the oldest go first). */
#define TOP_KILL_WINDOW_USEC (60 * UINT64_C(1000000))
#define TOP_KILLS_MAX 256

/* One kill top heard of: merged with later ones of the same cgroup, killer and reason. */
typedef struct TopKill {
        char *cgroup, *by, *reason;
        uint64_t count;
        uint64_t at_us;   /* CLOCK_MONOTONIC of the latest, µs */
        uint64_t time_us; /* CLOCK_REALTIME of the latest, µs */
} TopKill;

/* The kills of the last TOP_KILL_WINDOW_USEC, at most TOP_KILLS_MAX, in no order. */
typedef struct TopKills {
        TopKill kills[TOP_KILLS_MAX];
        size_t n;
} TopKills;

/*
 * top_kills_add - remember a kill (top-kills.c): merged into the one of the
 * same cgroup, killer and reason, else added, evicting the oldest when
 * TOP_KILLS_MAX are held. @at_us 0 (the daemon did not say) or in the future
 * is taken as @now_us. Returns 0 or -ENOMEM.
 */
int top_kills_add(TopKills *k, const char *cgroup, const char *by, const char *reason, uint64_t count,
                  uint64_t at_us, uint64_t time_us, uint64_t now_us);

/* top_kills_expire - forget the kills older than TOP_KILL_WINDOW_USEC at @now_us. */
void top_kills_expire(TopKills *k, uint64_t now_us);

/*
 * top_kills_apply - mark the cgroups of @snapshot with the kills of @k: each
 * kill goes to its cgroup, or to the nearest ancestor in the snapshot; none
 * if neither is in it. Returns how many cgroups it marked.
 */
size_t top_kills_apply(const TopKills *k, TopSnapshot *snapshot);

/* top_kills_done - forget every kill. */
void top_kills_done(TopKills *k);
