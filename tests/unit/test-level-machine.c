/* SPDX-License-Identifier: MIT */
/* Tests for level-machine.c: the level of a level stream, on an injected clock. */
#include <stdint.h>

#include "level-machine.h"
#include "tests.h"
#include "util.h"

#define S USEC_PER_SEC
#define HOLD (2 * S)

/* An event at @level at @now, which must change the level to @want (or not, for -1). */
static void event_at(LevelMachine *m, Level level, uint64_t now, StreamLevel want) {
        bool changed = level_machine_event(m, level, now, HOLD);

        ASSERT_EQ(changed, want >= 0);
        if (want >= 0)
                ASSERT_EQ(m->level, want);
}

static void test_names(void) {
        ASSERT_STREQ(stream_level_to_string(STREAM_LEVEL_NORMAL), "normal");
        ASSERT_STREQ(stream_level_to_string(STREAM_LEVEL_CRITICAL), "critical");
        ASSERT_EQ(stream_level_of(LEVEL_LOW), STREAM_LEVEL_LOW);
}

/* Up at once, at every level; an event at or below the level changes nothing. */
static void test_steps_up(void) {
        LevelMachine m;

        level_machine_init(&m);
        ASSERT_EQ(m.level, STREAM_LEVEL_NORMAL);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 0);
        event_at(&m, LEVEL_LOW, 10 * S, STREAM_LEVEL_LOW);
        event_at(&m, LEVEL_LOW, 10 * S + 1, -1);
        event_at(&m, LEVEL_CRITICAL, 10 * S + 2, STREAM_LEVEL_CRITICAL);
        event_at(&m, LEVEL_MEDIUM, 10 * S + 3, -1);
        ASSERT_EQ(m.level, STREAM_LEVEL_CRITICAL);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 10 * S + 2 + HOLD);
        /* Out-of-range levels are ignored. */
        ASSERT_TRUE(!level_machine_event(&m, _LEVEL_MAX, 11 * S, HOLD));
        ASSERT_TRUE(!level_machine_event(&m, _LEVEL_INVALID, 11 * S, HOLD));
}

/* Down only when the hold ran out, to the highest level still held, then to normal. */
static void test_steps_down(void) {
        LevelMachine m;

        level_machine_init(&m);
        event_at(&m, LEVEL_CRITICAL, 0 * S + 1, STREAM_LEVEL_CRITICAL);
        event_at(&m, LEVEL_LOW, 1 * S, -1);
        /* Not a microsecond early. */
        ASSERT_TRUE(!level_machine_tick(&m, HOLD));
        ASSERT_EQ(m.level, STREAM_LEVEL_CRITICAL);
        ASSERT_TRUE(level_machine_tick(&m, HOLD + 1));
        ASSERT_EQ(m.level, STREAM_LEVEL_LOW); /* medium was never held: straight to low */
        ASSERT_U64_EQ(level_machine_next_usec(&m), 1 * S + HOLD);
        /* An event at the current level renews its hold. */
        event_at(&m, LEVEL_LOW, 2 * S, -1);
        ASSERT_TRUE(!level_machine_tick(&m, 1 * S + HOLD));
        ASSERT_TRUE(level_machine_tick(&m, 2 * S + HOLD));
        ASSERT_EQ(m.level, STREAM_LEVEL_NORMAL);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 0);
        /* At normal, ticks say nothing. */
        ASSERT_TRUE(!level_machine_tick(&m, 100 * S));
}

/* A level that keeps firing within its hold never steps down (the hysteresis). */
static void test_hysteresis(void) {
        LevelMachine m;
        uint64_t now = 5 * S;

        level_machine_init(&m);
        event_at(&m, LEVEL_MEDIUM, now, STREAM_LEVEL_MEDIUM);
        for (int i = 0; i < 100; i++) {
                now += HOLD - 1;
                ASSERT_TRUE(!level_machine_tick(&m, now));
                (void) level_machine_event(&m, LEVEL_MEDIUM, now, HOLD);
        }
        ASSERT_EQ(m.level, STREAM_LEVEL_MEDIUM);
        /* A lower level heard meanwhile is what remains when medium goes quiet. */
        (void) level_machine_event(&m, LEVEL_LOW, now + HOLD / 2, HOLD);
        ASSERT_TRUE(level_machine_tick(&m, now + HOLD));
        ASSERT_EQ(m.level, STREAM_LEVEL_LOW);
}

/* The hold is StepDownSec= plus the trigger's window; a zero hold still holds a microsecond; no overflow. */
static void test_hold(void) {
        LevelMachine m;

        ASSERT_U64_EQ(level_machine_hold_usec(2 * S, 1 * S), 3 * S);
        ASSERT_U64_EQ(level_machine_hold_usec(2 * S, 0), 2 * S);
        ASSERT_U64_EQ(level_machine_hold_usec(UINT64_MAX - 1, 2), UINT64_MAX);
        level_machine_init(&m);
        ASSERT_TRUE(level_machine_event(&m, LEVEL_LOW, 7, 0));
        ASSERT_TRUE(!level_machine_tick(&m, 7));
        ASSERT_TRUE(level_machine_tick(&m, 8));
        ASSERT_TRUE(level_machine_event(&m, LEVEL_CRITICAL, UINT64_MAX - 5, HOLD));
        ASSERT_U64_EQ(level_machine_next_usec(&m), UINT64_MAX);
        ASSERT_TRUE(!level_machine_tick(&m, UINT64_MAX - 1));
}

/* Events that arrive late (an older time than one already seen) never shorten a hold. */
static void test_late_event(void) {
        LevelMachine m;

        level_machine_init(&m);
        event_at(&m, LEVEL_MEDIUM, 10 * S, STREAM_LEVEL_MEDIUM);
        (void) level_machine_event(&m, LEVEL_MEDIUM, 9 * S, HOLD);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 10 * S + HOLD);
}

/* The level now from the averages: avg10 (hundredths of a percent) against threshold per window. */
static void test_psi_above(void) {
        PsiStats st = { .has_some = true, .has_full = true };
        PsiTrigger low = { PSI_STALL_SOME, 70000, 1000000 };     /* 7% */
        PsiTrigger crit = { PSI_STALL_FULL, 100000, 1000000 };   /* 10% */
        PsiTrigger zero = { PSI_STALL_SOME, 70000, 0 };

        st.some.avg10 = 699;
        ASSERT_TRUE(!level_psi_above(&st, &low));
        st.some.avg10 = 700;
        ASSERT_TRUE(level_psi_above(&st, &low));
        /* full is its own line. */
        ASSERT_TRUE(!level_psi_above(&st, &crit));
        st.full.avg10 = 1000;
        ASSERT_TRUE(level_psi_above(&st, &crit));
        st.has_full = false; /* a file without a full line (cpu on the system) */
        ASSERT_TRUE(!level_psi_above(&st, &crit));
        ASSERT_TRUE(!level_psi_above(&st, &zero));
        /* No overflow at the extremes. */
        st.some.avg10 = UINT32_MAX;
        ASSERT_TRUE(level_psi_above(&st, &(PsiTrigger) { PSI_STALL_SOME, UINT32_MAX, UINT32_MAX }));
}

/*
 * Events noted in one turn settle at one time: an injected medium that
 * reaches low and medium steps down straight to normal however late the
 * step-down runs, where the same events at two times go by way of low.
 */
static void test_settle(void) {
        LevelMachine m;

        level_machine_init(&m);
        ASSERT_TRUE(!level_machine_settle(&m, 1 * S)); /* nothing noted */
        level_machine_note(&m, LEVEL_LOW, HOLD);
        level_machine_note(&m, LEVEL_MEDIUM, HOLD);
        ASSERT_EQ(m.level, STREAM_LEVEL_NORMAL); /* nothing before the settle */
        ASSERT_TRUE(level_machine_settle(&m, 3 * S));
        ASSERT_EQ(m.level, STREAM_LEVEL_MEDIUM);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 3 * S + HOLD);
        ASSERT_TRUE(!level_machine_settle(&m, 4 * S)); /* a settle applies what was noted once */
        ASSERT_TRUE(level_machine_tick(&m, 3 * S + HOLD));
        ASSERT_EQ(m.level, STREAM_LEVEL_NORMAL);

        /* Delivered a moment apart, low outlives medium by that moment. */
        level_machine_init(&m);
        ASSERT_TRUE(level_machine_event(&m, LEVEL_MEDIUM, 3 * S, HOLD));
        (void) level_machine_event(&m, LEVEL_LOW, 3 * S + 5000, HOLD);
        ASSERT_TRUE(level_machine_tick(&m, 3 * S + HOLD));
        ASSERT_EQ(m.level, STREAM_LEVEL_LOW);

        /* Noted twice, the longer hold counts; a zero hold is a microsecond; out of range is ignored. */
        level_machine_init(&m);
        level_machine_note(&m, LEVEL_CRITICAL, HOLD);
        level_machine_note(&m, LEVEL_CRITICAL, 2 * HOLD);
        level_machine_note(&m, LEVEL_CRITICAL, HOLD);
        level_machine_note(&m, LEVEL_LOW, 0);
        level_machine_note(&m, (Level) _LEVEL_MAX, HOLD);
        level_machine_note(&m, (Level) -1, HOLD);
        ASSERT_TRUE(level_machine_settle(&m, 10 * S));
        ASSERT_EQ(m.level, STREAM_LEVEL_CRITICAL);
        ASSERT_U64_EQ(level_machine_next_usec(&m), 10 * S + 2 * HOLD);
        ASSERT_U64_EQ(m.until_usec[LEVEL_LOW], 10 * S + 1);
        ASSERT_U64_EQ(m.until_usec[LEVEL_MEDIUM], 0);
        /* Noted at a level already held: no change, the hold grows. */
        level_machine_note(&m, LEVEL_CRITICAL, 3 * HOLD);
        ASSERT_TRUE(!level_machine_settle(&m, 10 * S));
        ASSERT_U64_EQ(level_machine_next_usec(&m), 10 * S + 3 * HOLD);
}

int main(void) {
        test_psi_above();
        test_names();
        test_steps_up();
        test_steps_down();
        test_hysteresis();
        test_hold();
        test_late_event();
        test_settle();
        return 0;
}
