/* SPDX-License-Identifier: MIT */
/*
 * `pressurectl watch --levels`: a level stream (Subscribe with "levels"),
 * the cgroup's memory level now and then one per change. libpressure
 * cannot subscribe to one yet, so this module speaks varlink on the
 * daemon's socket itself: one streaming call, read as JSON, re-made after
 * the daemon went away (the first level after that is the level now).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "hook.h"
#include "pressure.h"

typedef struct LevelWatchOptions {
        const char *cgroup;     /* NULL: the whole system */
        uint64_t count;         /* exit 0 after this many level events; 0 = never */
        uint64_t deadline;      /* CLOCK_MONOTONIC end of --timeout, or PRESSURE_TIMEOUT_INFINITE */
        bool wait_for_daemon;   /* --wait: retry while the daemon is not there at the start */
        Hook *hook;             /* --exec, or NULL */
} LevelWatchOptions;

/*
 * watch_levels_run - follow the level stream of @o->cgroup on the socket of
 * @c (only its socket is used) and print each level event, as text or with
 * --json as sent, until @o->count events, a "removed" event, an error of
 * the daemon or the deadline. Returns the exit status.
 */
int watch_levels_run(pressure_client *c, const LevelWatchOptions *o);
