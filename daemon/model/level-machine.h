/* SPDX-License-Identifier: MIT */
/*
 * The level of a cgroup as a level stream reports it (Subscribe "levels"):
 * normal, low, medium or critical, from the events of the three [Levels]
 * registrations, with hysteresis. Pure: the caller passes the time.
 *
 * An event at a level holds that level until its hold runs out: the
 * hold is [Levels] StepDownSec= after the event, plus the trigger's
 * window for a PSI trigger (which fires at most once per window, so a
 * pressure that goes on is heard again only a window later). The level is
 * the highest one still held, normal when none is: it steps up at once
 * and down only when the higher level has been quiet for its hold, to
 * whatever lower level is still held (pressured(8), LEVEL STREAM).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kernfile.h"
#include "trigger.h"

/* The levels of a level stream: normal and the three of [Levels]. */
typedef enum StreamLevel {
        STREAM_LEVEL_NORMAL,
        STREAM_LEVEL_LOW,
        STREAM_LEVEL_MEDIUM,
        STREAM_LEVEL_CRITICAL,
        _STREAM_LEVEL_MAX,
        _STREAM_LEVEL_INVALID = -1,
} StreamLevel;

/* stream_level_of - the stream level of the [Levels] level @l. */
static inline StreamLevel stream_level_of(Level l) {
        return (StreamLevel) (l + 1);
}

const char *stream_level_to_string(StreamLevel l);

typedef struct LevelMachine {
        StreamLevel level;              /* the current one */
        uint64_t until_usec[_LEVEL_MAX];/* CLOCK_MONOTONIC end of each level's hold; 0 never held */
        uint64_t noted_usec[_LEVEL_MAX];/* the hold of each level's event noted since the last settle; 0 none */
} LevelMachine;

/* level_machine_init - a machine at normal. */
void level_machine_init(LevelMachine *m);

/*
 * level_machine_event - an event at @level at @now_usec, held for
 * @hold_usec. Returns true if the level changed (it can only rise).
 */
bool level_machine_event(LevelMachine *m, Level level, uint64_t now_usec, uint64_t hold_usec);

/*
 * level_machine_note - an event at @level, held for @hold_usec, that takes
 * its time from the next level_machine_settle(): the events read in one
 * turn of the caller's loop are one change at one time, so levels that
 * heard of one pressure together (an injected level reaches its own and
 * those below) end their holds together and step down together.
 */
void level_machine_note(LevelMachine *m, Level level, uint64_t hold_usec);

/*
 * level_machine_settle - every event noted since the last settle, at
 * @now_usec (level_machine_event()). Returns true if the level changed.
 */
bool level_machine_settle(LevelMachine *m, uint64_t now_usec);

/*
 * level_machine_tick - the level at @now_usec: steps down when holds ran
 * out. Returns true if it changed.
 */
bool level_machine_tick(LevelMachine *m, uint64_t now_usec);

/*
 * level_machine_next_usec - when the current level's hold runs out (call
 * level_machine_tick() then), or 0 at normal: nothing to wait for.
 */
uint64_t level_machine_next_usec(const LevelMachine *m);

/*
 * level_machine_hold_usec - how long an event holds its level: @step_down_usec
 * plus @window_usec (the PSI trigger's window; 0 for vmpressure), saturating.
 */
uint64_t level_machine_hold_usec(uint64_t step_down_usec, uint64_t window_usec);

/*
 * level_psi_above - whether the PSI averages @st say the stall of @trigger
 * is above its threshold now: the 10 s average against threshold per
 * window. How a new tracker learns the level before the trigger fires.
 */
bool level_psi_above(const PsiStats *st, const PsiTrigger *trigger);
