/* SPDX-License-Identifier: MIT */
/*
 * The hook of `pressurectl watch --exec CMD [ARG...]`: runs CMD once per
 * event, one run at a time, as the user running pressurectl. Owns the
 * running child (its pid and kill deadline) and the one event waiting
 * for the next run; events that arrive while a run is going on are merged
 * into that waiting one (the latest wins, PRESSURE_COALESCED counts them).
 * A warning before a kill is neither merged nor kept waiting: it runs at
 * once, beside any other run, until it exits or its deadline comes, and
 * then the hook says so (hook_set_prekill_done()) for its acknowledgement.
 *
 * The caller's loop polls hook_get_fd() for POLLIN, wakes up after
 * hook_get_timeout() at the latest, and calls hook_process(). Everything
 * that happens to a run that did not end well (spawn failure, exit status,
 * signal, timeout kill) is reported with cli_notice(); a hook's failure
 * never ends the watch.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "pressure.h"

/* The grace between SIGTERM and SIGKILL of a hook that ran over: its timeout, at most this long. */
#define HOOK_KILL_GRACE_MAX_USEC (5 * UINT64_C(1000000))
/* Runs for warnings before a kill at once, at most: the daemon's [Prekill] MaxCalls= is 16 by default. */
#define HOOK_PREKILL_MAX 16

typedef struct Hook Hook;

/*
 * hook_new - a hook running @argv (NULL-terminated, borrowed: it must outlive
 * the hook; argv[0] is looked up in $PATH). @timeout_usec: SIGTERM a run
 * after this long, SIGKILL it after as long again (at most
 * HOOK_KILL_GRACE_MAX_USEC); 0 = no limit. Blocks SIGCHLD until hook_free().
 * Returns 0 or a negative errno.
 */
int hook_new(char *const *argv, uint64_t timeout_usec, Hook **ret);

/*
 * hook_free - forget the waiting event, kill a run still going on (SIGKILL to
 * its process group) and reap it. Accepts NULL; returns NULL.
 */
Hook *hook_free(Hook *h);
void hook_freep(Hook **h);

/*
 * hook_submit - hand an event to the hook: it runs at once if no run is going
 * on, else it replaces the waiting event. Returns 0, or -ENOMEM (the event
 * is lost, the hook goes on).
 */
int hook_submit(Hook *h, const pressure_event *e);

/*
 * hook_submit_level - hand a level event of a level stream to the hook, as
 * hook_submit() does: $PRESSURE_KIND is "level", $PRESSURE_LEVEL @level
 * ("normal" to "critical"; empty for a name this version does not know),
 * $PRESSURE_SOURCE empty, $PRESSURE_SYNTHETIC 0, $PRESSURE_EVENT @json.
 */
int hook_submit_level(Hook *h, const char *cgroup, const char *level, uint64_t seq, uint64_t missed,
                      const char *json);

/* A warning before a kill (PRESSURE_EVENT_PREKILL), as hook_submit_prekill() takes it. */
typedef struct HookPrekill {
        const char *cgroup, *json;  /* the victim; the event as received */
        uint64_t id, deadline_us;   /* its number, and its CLOCK_MONOTONIC deadline */
        uint64_t seq, missed;
} HookPrekill;

/* The warning @id needs no more of the hook: its run ended, or its deadline came (the run is being killed). */
typedef void (*HookPrekillDone)(uint64_t id, uint64_t deadline_us, void *userdata);

/* hook_set_prekill_done - call @done(@userdata) once for each warning submitted. */
void hook_set_prekill_done(Hook *h, HookPrekillDone done, void *userdata);

/*
 * hook_submit_prekill - run the hook for a warning at once, beside any run
 * going on: $PRESSURE_KIND "prekill", $PRESSURE_DEADLINE_US the deadline
 * (which runs of other events do not have),
 * $PRESSURE_LEVEL and $PRESSURE_SOURCE empty, $PRESSURE_COALESCED 1. At
 * the deadline (or the hook's timeout, if sooner) the run gets SIGTERM,
 * then SIGKILL after as long again as it had (at most
 * HOOK_KILL_GRACE_MAX_USEC). The done callback comes when the run ends or
 * at that first signal, or at once when no run can be made: past the
 * deadline already, HOOK_PREKILL_MAX runs going on, or a spawn that failed
 * (each said with cli_notice()). Returns 0, or -ENOMEM (then too).
 */
int hook_submit_prekill(Hook *h, const HookPrekill *p);

/* An fd readable when the running hook may have ended (a signalfd); -1 when none runs. */
int hook_get_fd(const Hook *h);

/* Microseconds from now until hook_process() has a kill to do; UINT64_MAX for none. */
uint64_t hook_get_timeout(const Hook *h);

/*
 * hook_process - reap a run that ended and report how it ended, signal a run
 * that is over its time, and start the waiting event. Never blocks.
 */
void hook_process(Hook *h);

/* A run is going on (one for a warning included) or an event waits for one. */
bool hook_busy(const Hook *h);

/* Forget the waiting event, if any (the watch is ending without it). */
void hook_drop_pending(Hook *h);

/*
 * hook_drain - block until the running hook (and, unless dropped, the waiting
 * event's run) is over; each run is bounded by the timeout given to
 * hook_new().
 */
void hook_drain(Hook *h);

/*
 * hook_forward_signals - on SIGINT, SIGTERM and SIGHUP (those not ignored),
 * pass the signal to the running hook's process group, then die of it as
 * before. Call once, before the first hook_submit().
 */
void hook_forward_signals(void);
