/* SPDX-License-Identifier: MIT */
/*
 * The arithmetic and checks of the kills source (sources/source-kills.c,
 * sources/oomd-watch.c). Pure: no I/O, no event loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The longest reason accepted from systemd-oomd's Killed signal. */
#define KILLS_REASON_MAX 255

/*
 * kills_rise - the kills between two readings of an oom_kill counter,
 * @last (valid only if @known) and @now: 0 the first time, and when the
 * counter went down (one that restarted is reported from its next rise on).
 */
uint64_t kills_rise(bool known, uint64_t last, uint64_t now);

/*
 * kills_covers - a kills subscription on the canonical cgroup @subscribed
 * hears of a kill in @killed: it is the same cgroup or one below it ("/"
 * covers everything).
 */
bool kills_covers(const char *subscribed, const char *killed);

/*
 * kills_oomd_check - what systemd-oomd's Killed(s cgroup, s reason) says,
 * checked before it goes into events: @path must be a valid cgroup path
 * (its canonical form in *@ret), @reason non-empty and at most
 * KILLS_REASON_MAX bytes. Returns 0, -EINVAL or -ENOMEM.
 */
int kills_oomd_check(const char *path, const char *reason, char **ret);
