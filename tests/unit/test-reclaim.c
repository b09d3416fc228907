/* SPDX-License-Identifier: MIT */
/*
 * Tests for the proactive reclaim controller's arithmetic (model/reclaim.h):
 * stall shares, step sizes and their scaling near the target, backoff on
 * memory stall, on io stall and after EAGAIN, the floor from MinSize= and
 * from the protection model, at-floor, the first sample, totals that went
 * backwards, and the states' names.
 */
#include "reclaim.h"
#include "tests.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* The defaults: 0.1% target, 1% step, 100M floor. */
static const ReclaimParams defaults = { .target_ppm = 1000, .max_step_ppm = 10000, .min_size = 100 * MIB };

static const ReclaimSample prev = { .memory_some_us = 5000000, .io_some_us = 7000000, .time_us = 100000000 };

/* One interval of 6 s after @prev with the given stall microseconds. */
static ReclaimDecision decide(const ReclaimParams *p, uint64_t mem_us, uint64_t io_us, uint64_t current,
                              uint64_t protection, bool eagain) {
        ReclaimInput in = {
                .now = { prev.memory_some_us + mem_us, prev.io_some_us + io_us, prev.time_us + 6 * USEC_PER_SEC },
                .memory_current = current,
                .protection = protection,
                .last_eagain = eagain,
        };
        ReclaimDecision d;

        reclaim_decide(p, &prev, &in, &d);
        return d;
}

static void test_states(void) {
        ASSERT_STREQ(reclaim_state_to_string(RECLAIM_STATE_PROBING), "probing");
        ASSERT_STREQ(reclaim_state_to_string(RECLAIM_STATE_BACKING_OFF), "backing-off");
        ASSERT_STREQ(reclaim_state_to_string(RECLAIM_STATE_AT_FLOOR), "at-floor");
        ASSERT_STREQ(reclaim_state_to_string(RECLAIM_STATE_UNSUPPORTED), "unsupported");
        ASSERT_TRUE(reclaim_state_to_string(_RECLAIM_STATE_MAX) == NULL);
        ASSERT_TRUE(reclaim_state_to_string(_RECLAIM_STATE_INVALID) == NULL);
}

static void test_stall_ppm(void) {
        ASSERT_EQ(reclaim_stall_ppm(0, 6000, 6000000), 1000);       /* 0.1% */
        ASSERT_EQ(reclaim_stall_ppm(10, 10, 6000000), 0);
        ASSERT_EQ(reclaim_stall_ppm(0, 12000000, 6000000), 1000000); /* capped at all of the time */
        ASSERT_EQ(reclaim_stall_ppm(100, 50, 6000000), 0);          /* backwards */
        ASSERT_EQ(reclaim_stall_ppm(0, 50, 0), 0);                  /* no time */
        ASSERT_EQ(reclaim_stall_ppm(0, UINT64_MAX, UINT64_MAX), 1000000); /* no overflow */
}

static void test_full_step(void) {
        ReclaimDecision d = decide(&defaults, 0, 0, 10 * GIB, 0, false);

        /* No stall at all: the whole MaxStep=, 1% of 10G, in pages. */
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        ASSERT_TRUE(d.measured);
        ASSERT_EQ(d.stall_ppm, 0);
        ASSERT_EQ(d.io_stall_ppm, 0);
        ASSERT_U64_EQ(d.floor, 100 * MIB);
        ASSERT_U64_EQ(d.step, (10 * GIB / 100) / 4096 * 4096);
        ASSERT_U64_EQ(d.step % RECLAIM_PAGE_SIZE, 0);
}

static void test_scaling(void) {
        ReclaimDecision d;

        /* Half the target (0.05% of 6 s = 3000 us): half the step. */
        d = decide(&defaults, 3000, 0, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 500);
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        ASSERT_U64_EQ(d.step, (4 * GIB / 100 / 2) / 4096 * 4096);
        /* 90% of the target: a tenth. */
        d = decide(&defaults, 5400, 0, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 900);
        ASSERT_U64_EQ(d.step, (4 * GIB / 100 / 10) / 4096 * 4096);
        /* The io stall scales too, the larger of the two counts. */
        d = decide(&defaults, 600, 5400, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 100);
        ASSERT_EQ(d.io_stall_ppm, 900);
        ASSERT_U64_EQ(d.step, (4 * GIB / 100 / 10) / 4096 * 4096);
        /* Just under the target on a small cgroup: less than a page is no step, still probing. */
        d = decide(&defaults, 5994, 0, 200 * MIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 999);
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        ASSERT_U64_EQ(d.step, 0);
}

static void test_backoff(void) {
        ReclaimDecision d;

        /* Memory stall at the target: back off. */
        d = decide(&defaults, 6000, 0, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 1000);
        ASSERT_EQ(d.state, RECLAIM_STATE_BACKING_OFF);
        ASSERT_U64_EQ(d.step, 0);
        /* Far above. */
        d = decide(&defaults, 600000, 0, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 100000);
        ASSERT_EQ(d.state, RECLAIM_STATE_BACKING_OFF);
        ASSERT_U64_EQ(d.step, 0);
        /* io stall above the target alone backs off. */
        d = decide(&defaults, 0, 7000, 4 * GIB, 0, false);
        ASSERT_EQ(d.stall_ppm, 0);
        ASSERT_EQ(d.io_stall_ppm, 1166);
        ASSERT_EQ(d.state, RECLAIM_STATE_BACKING_OFF);
        ASSERT_U64_EQ(d.step, 0);
        /* The kernel could not reclaim the last step: one interval off, whatever the stall. */
        d = decide(&defaults, 0, 0, 4 * GIB, 0, true);
        ASSERT_EQ(d.state, RECLAIM_STATE_BACKING_OFF);
        ASSERT_U64_EQ(d.step, 0);
        /* And the next one without EAGAIN reclaims again. */
        d = decide(&defaults, 0, 0, 4 * GIB, 0, false);
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        ASSERT_TRUE(d.step > 0);
}

static void test_floor(void) {
        ReclaimDecision d;

        /* MinSize= cuts the step: 101M with a 100M floor reclaims 1M at most. */
        d = decide(&defaults, 0, 0, 101 * MIB, 0, false);
        ASSERT_U64_EQ(d.floor, 100 * MIB);
        ASSERT_U64_EQ(d.step, 1 * MIB);
        d = decide(&(ReclaimParams) { .target_ppm = 1000, .max_step_ppm = 500000, .min_size = 100 * MIB }, 0, 0,
                   101 * MIB, 0, false);
        ASSERT_U64_EQ(d.step, 1 * MIB);
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        /* A partial page above the floor rounds down. */
        d = decide(&(ReclaimParams) { .target_ppm = 1000, .max_step_ppm = 500000, .min_size = 100 * MIB }, 0, 0,
                   100 * MIB + 6000, 0, false);
        ASSERT_U64_EQ(d.step, 4096);
        /* The protection model's value when it is larger. */
        d = decide(&defaults, 0, 0, 3 * GIB, 2 * GIB + 4096, false);
        ASSERT_U64_EQ(d.floor, 2 * GIB + 4096);
        ASSERT_U64_EQ(d.step, (3 * GIB / 100) / 4096 * 4096);
        d = decide(&(ReclaimParams) { .target_ppm = 1000, .max_step_ppm = 1000000, .min_size = 100 * MIB }, 0, 0,
                   3 * GIB, 2 * GIB + 4096, false);
        ASSERT_U64_EQ(d.step, GIB - 4096);
        ASSERT_U64_EQ(reclaim_floor(100 * MIB, 5 * MIB), 100 * MIB);
        ASSERT_U64_EQ(reclaim_floor(0, 5 * MIB), 5 * MIB);
        ASSERT_U64_EQ(reclaim_floor(0, UINT64_MAX), UINT64_MAX);
}

static void test_at_floor(void) {
        ReclaimDecision d;

        /* At the floor, below it, and under unlimited protection: nothing, whatever the stall. */
        d = decide(&defaults, 0, 0, 100 * MIB, 0, false);
        ASSERT_EQ(d.state, RECLAIM_STATE_AT_FLOOR);
        ASSERT_U64_EQ(d.step, 0);
        d = decide(&defaults, 60000, 0, 50 * MIB, 0, false);
        ASSERT_EQ(d.state, RECLAIM_STATE_AT_FLOOR);
        ASSERT_EQ(d.stall_ppm, 10000);
        ASSERT_U64_EQ(d.step, 0);
        d = decide(&defaults, 0, 0, 50 * GIB, UINT64_MAX, false);
        ASSERT_EQ(d.state, RECLAIM_STATE_AT_FLOOR);
        ASSERT_U64_EQ(d.floor, UINT64_MAX);
        ASSERT_U64_EQ(d.step, 0);
        /* memory.min/low from the model above MinSize=. */
        d = decide(&defaults, 0, 0, 512 * MIB, 512 * MIB, false);
        ASSERT_EQ(d.state, RECLAIM_STATE_AT_FLOOR);
        ASSERT_U64_EQ(d.floor, 512 * MIB);
}

static void test_first_and_backwards(void) {
        ReclaimInput in = { .now = { 10, 10, 1000 }, .memory_current = GIB };
        ReclaimDecision d;

        /* The first interval only takes the sample. */
        reclaim_decide(&defaults, NULL, &in, &d);
        ASSERT_TRUE(!d.measured);
        ASSERT_EQ(d.state, RECLAIM_STATE_PROBING);
        ASSERT_U64_EQ(d.step, 0);
        ASSERT_U64_EQ(d.floor, 100 * MIB);
        /* Totals that went backwards: a new cgroup of that name; measure again. */
        reclaim_decide(&defaults, &prev, &in, &d);
        ASSERT_TRUE(!d.measured);
        ASSERT_U64_EQ(d.step, 0);
        in.now = (ReclaimSample) { prev.memory_some_us, prev.io_some_us - 1, prev.time_us + 1000 };
        reclaim_decide(&defaults, &prev, &in, &d);
        ASSERT_TRUE(!d.measured);
        /* No time passed. */
        in.now = prev;
        reclaim_decide(&defaults, &prev, &in, &d);
        ASSERT_TRUE(!d.measured);
        ASSERT_U64_EQ(d.step, 0);
        /* At the floor even on the first sample. */
        in.memory_current = MIB;
        reclaim_decide(&defaults, NULL, &in, &d);
        ASSERT_EQ(d.state, RECLAIM_STATE_AT_FLOOR);
}

static void test_huge(void) {
        /* 1 PiB with MaxStep=100%: no overflow, the step is everything above the floor. */
        ReclaimParams p = { .target_ppm = 1, .max_step_ppm = 1000000, .min_size = 0 };
        ReclaimDecision d = decide(&p, 0, 0, UINT64_C(1) << 50, 0, false);

        ASSERT_U64_EQ(d.step, UINT64_C(1) << 50);
        d = decide(&p, 0, 0, UINT64_MAX, 0, false);
        ASSERT_U64_EQ(d.step, UINT64_MAX - UINT64_MAX % 4096);
}

int main(void) {
        test_states();
        test_stall_ppm();
        test_full_step();
        test_scaling();
        test_backoff();
        test_floor();
        test_at_floor();
        test_first_and_backwards();
        test_huge();
        return 0;
}
