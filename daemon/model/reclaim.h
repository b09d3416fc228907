/* SPDX-License-Identifier: MIT */
/*
 * The proactive reclaim controller's arithmetic ([Reclaim]): one decision
 * per cgroup and interval, from two samples of its PSI totals, its
 * memory.current and its floor. Pure: no I/O, no clock, no event loop;
 * the runtime (server/reclaim.c) reads the files and writes memory.reclaim.
 *
 * The rule. Over the last interval the cgroup's memory "some" stall is
 * stall = Δ memory.pressure some total / elapsed time, and likewise its
 * io "some" stall. If either is at or above the target, the controller
 * backs off: no reclaim this interval. So it does for one interval after
 * the kernel answered the previous write with EAGAIN (it could not find
 * that much to reclaim). Otherwise it reclaims
 *
 *     step = MaxStep × memory.current × (1 − max(stall, io stall) / target)
 *
 * rounded down to whole pages and cut so that memory.current − step never
 * goes below the floor: the larger of MinSize= and the cgroup's effective
 * protection (the larger of its effective memory.min and memory.low, from
 * the protection model). A cgroup at or below its floor is "at-floor".
 * The first interval only takes the samples; so does an interval whose
 * totals went backwards (the cgroup was replaced by another of that name).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vocabulary.h"

/* Steps are whole pages. */
#define RECLAIM_PAGE_SIZE UINT64_C(4096)

typedef enum ReclaimState {
        RECLAIM_STATE_PROBING = VOC_RECLAIM_STATE_PROBING, /* under the target: reclaiming */
        RECLAIM_STATE_BACKING_OFF = VOC_RECLAIM_STATE_BACKING_OFF, /* a stall at or above the target, or EAGAIN: not reclaiming */
        RECLAIM_STATE_AT_FLOOR = VOC_RECLAIM_STATE_AT_FLOOR, /* memory.current is at or below the floor */
        RECLAIM_STATE_UNSUPPORTED = VOC_RECLAIM_STATE_UNSUPPORTED, /* no memory.reclaim, memory controller or PSI there */
        _RECLAIM_STATE_MAX = _VOC_RECLAIM_STATE_MAX,
        _RECLAIM_STATE_INVALID = -1,
} ReclaimState;

/* reclaim_state_to_string - "probing", "backing-off", "at-floor", "unsupported"; NULL if out of range. */
const char *reclaim_state_to_string(ReclaimState s);

/* The keys of [Reclaim] the arithmetic uses. */
typedef struct ReclaimParams {
        uint32_t target_ppm;    /* TargetStall=, parts per million of wall time, > 0 */
        uint32_t max_step_ppm;  /* MaxStep=, parts per million of memory.current */
        uint64_t min_size;      /* MinSize=, bytes */
} ReclaimParams;

/* One reading of a cgroup. */
typedef struct ReclaimSample {
        uint64_t memory_some_us;  /* memory.pressure some total */
        uint64_t io_some_us;      /* io.pressure some total */
        uint64_t time_us;         /* CLOCK_MONOTONIC when read */
} ReclaimSample;

/* What one interval brings. */
typedef struct ReclaimInput {
        ReclaimSample now;
        uint64_t memory_current;  /* bytes */
        uint64_t protection;      /* max(effective memory.min, effective memory.low), bytes; may be UINT64_MAX */
        bool last_eagain;         /* the previous write failed with EAGAIN */
} ReclaimInput;

/* The decision. */
typedef struct ReclaimDecision {
        uint64_t step;            /* bytes to write to memory.reclaim; 0: none */
        uint64_t floor;           /* max(MinSize=, protection) */
        uint32_t stall_ppm;       /* memory some stall over the interval, ppm of wall time */
        uint32_t io_stall_ppm;    /* io some stall likewise */
        bool measured;            /* false: first sample, or totals went backwards; stalls are 0 */
        ReclaimState state;
} ReclaimDecision;

/* reclaim_floor - max(@min_size, @protection). */
uint64_t reclaim_floor(uint64_t min_size, uint64_t protection);

/*
 * reclaim_stall_ppm - the share of @elapsed_us that the total went up by,
 * in parts per million, at most 1000000; 0 if @elapsed_us is 0 or the
 * total went backwards.
 */
uint32_t reclaim_stall_ppm(uint64_t before_us, uint64_t after_us, uint64_t elapsed_us);

/*
 * reclaim_decide - the step for one interval.
 * @p: the parameters
 * @prev: the previous sample, or NULL for the first interval
 * @in: this interval's readings
 * @ret: the decision
 */
void reclaim_decide(const ReclaimParams *p, const ReclaimSample *prev, const ReclaimInput *in,
                    ReclaimDecision *ret);
