/* SPDX-License-Identifier: MIT */
/* The level of a level stream, with hysteresis (level-machine.h). */
#include "level-machine.h"
#include "util.h"
#include "vocabulary-idl.h"

_Static_assert((int) STREAM_LEVEL_NORMAL == (int) IDL_STREAM_LEVEL_NORMAL &&
               (int) STREAM_LEVEL_LOW == (int) IDL_STREAM_LEVEL_LOW &&
               (int) STREAM_LEVEL_MEDIUM == (int) IDL_STREAM_LEVEL_MEDIUM &&
               (int) STREAM_LEVEL_CRITICAL == (int) IDL_STREAM_LEVEL_CRITICAL &&
               (int) _STREAM_LEVEL_MAX == (int) _IDL_STREAM_LEVEL_MAX,
               "the stream levels are the interface's");
_Static_assert((int) STREAM_LEVEL_LOW == (int) LEVEL_LOW + 1 && (int) STREAM_LEVEL_CRITICAL == (int) LEVEL_CRITICAL + 1,
               "a stream level is its [Levels] level plus one");

const char *stream_level_to_string(StreamLevel l) {
        return idl_stream_level_to_string((IdlStreamLevel) l);
}

void level_machine_init(LevelMachine *m) {
        *m = (LevelMachine) { .level = STREAM_LEVEL_NORMAL };
}

/* The highest level still held at @now, or normal. */
static StreamLevel held_level(const LevelMachine *m, uint64_t now_usec) {
        for (int l = _LEVEL_MAX - 1; l >= 0; l--)
                if (m->until_usec[l] > now_usec)
                        return stream_level_of((Level) l);
        return STREAM_LEVEL_NORMAL;
}

uint64_t level_machine_hold_usec(uint64_t step_down_usec, uint64_t window_usec) {
        return step_down_usec > UINT64_MAX - window_usec ? UINT64_MAX : step_down_usec + window_usec;
}

bool level_machine_event(LevelMachine *m, Level level, uint64_t now_usec, uint64_t hold_usec) {
        uint64_t until;

        if (level < 0 || level >= _LEVEL_MAX)
                return false;
        /* An event holds at least until the next microsecond, whatever its hold. */
        if (hold_usec == 0)
                hold_usec = 1;
        until = now_usec > UINT64_MAX - hold_usec ? UINT64_MAX : now_usec + hold_usec;
        if (until > m->until_usec[level])
                m->until_usec[level] = until;
        if (stream_level_of(level) <= m->level)
                return false;
        m->level = stream_level_of(level);
        return true;
}

void level_machine_note(LevelMachine *m, Level level, uint64_t hold_usec) {
        if (level < 0 || level >= _LEVEL_MAX)
                return;
        /* 0 means none noted: a hold of 0 is the microsecond level_machine_event() makes of it. */
        if (hold_usec == 0)
                hold_usec = 1;
        if (hold_usec > m->noted_usec[level])
                m->noted_usec[level] = hold_usec;
}

bool level_machine_settle(LevelMachine *m, uint64_t now_usec) {
        bool changed = false;

        for (Level l = 0; l < _LEVEL_MAX; l++) {
                if (m->noted_usec[l] == 0)
                        continue;
                changed |= level_machine_event(m, l, now_usec, m->noted_usec[l]);
                m->noted_usec[l] = 0;
        }
        return changed;
}

bool level_machine_tick(LevelMachine *m, uint64_t now_usec) {
        StreamLevel l;

        if (m->level == STREAM_LEVEL_NORMAL || m->until_usec[m->level - 1] > now_usec)
                return false;
        l = held_level(m, now_usec);
        for (int i = 0; i < _LEVEL_MAX; i++)
                if (m->until_usec[i] <= now_usec)
                        m->until_usec[i] = 0;
        m->level = l;
        return true;
}

uint64_t level_machine_next_usec(const LevelMachine *m) {
        return m->level == STREAM_LEVEL_NORMAL ? 0 : m->until_usec[m->level - 1];
}

bool level_psi_above(const PsiStats *st, const PsiTrigger *trigger) {
        const PsiLine *line = trigger->stall == PSI_STALL_FULL ? &st->full : &st->some;
        bool has = trigger->stall == PSI_STALL_FULL ? st->has_full : st->has_some;

        /* avg10 is in hundredths of a percent. */
        return has && trigger->window_us > 0 &&
               (uint64_t) line->avg10 * trigger->window_us >= (uint64_t) trigger->threshold_us * 10000;
}
