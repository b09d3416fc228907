/* SPDX-License-Identifier: MIT */
/* The proactive reclaim controller's arithmetic: see reclaim.h. */
#include "reclaim.h"
#include "util.h"

#define PPM UINT64_C(1000000)

/* reclaim_state_to_string - the names of vocabulary.c. */
DEFINE_STRING_TABLE_TO_STRING_IN(reclaim_state, ReclaimState, voc_reclaim_state_table)

uint64_t reclaim_floor(uint64_t min_size, uint64_t protection) {
        return protection > min_size ? protection : min_size;
}

uint32_t reclaim_stall_ppm(uint64_t before_us, uint64_t after_us, uint64_t elapsed_us) {
        unsigned __int128 v;

        if (elapsed_us == 0 || after_us < before_us)
                return 0;
        v = (unsigned __int128) (after_us - before_us) * PPM / elapsed_us;
        return v > PPM ? (uint32_t) PPM : (uint32_t) v;
}

/*
 * MaxStep= of @current, scaled by how far @stall is below @target, rounded
 * down to pages. @stall < @target.
 */
static uint64_t reclaim_scaled_step(const ReclaimParams *p, uint64_t current, uint32_t stall) {
        unsigned __int128 v = (unsigned __int128) current * p->max_step_ppm / PPM;

        v = v * (p->target_ppm - stall) / p->target_ppm;
        v -= v % RECLAIM_PAGE_SIZE;
        return (uint64_t) v;
}

/*
 * reclaim_decide - see reclaim.h. The order of the checks: a cgroup at its
 * floor is "at-floor" whatever its stall; then the first sample; then a
 * stall at or above the target or an EAGAIN backs off; then the step.
 */
void reclaim_decide(const ReclaimParams *p, const ReclaimSample *prev, const ReclaimInput *in,
                    ReclaimDecision *ret) {
        ReclaimDecision d = {
                .floor = reclaim_floor(p->min_size, in->protection),
                .state = RECLAIM_STATE_PROBING,
        };
        uint32_t worst;
        uint64_t step;

        if (prev && in->now.time_us > prev->time_us && in->now.memory_some_us >= prev->memory_some_us &&
            in->now.io_some_us >= prev->io_some_us) {
                uint64_t elapsed = in->now.time_us - prev->time_us;

                d.measured = true;
                d.stall_ppm = reclaim_stall_ppm(prev->memory_some_us, in->now.memory_some_us, elapsed);
                d.io_stall_ppm = reclaim_stall_ppm(prev->io_some_us, in->now.io_some_us, elapsed);
        }

        if (in->memory_current <= d.floor) {
                d.state = RECLAIM_STATE_AT_FLOOR;
                *ret = d;
                return;
        }
        if (!d.measured) {
                *ret = d;
                return;
        }
        worst = d.stall_ppm > d.io_stall_ppm ? d.stall_ppm : d.io_stall_ppm;
        if (worst >= p->target_ppm || in->last_eagain) {
                d.state = RECLAIM_STATE_BACKING_OFF;
                *ret = d;
                return;
        }
        step = reclaim_scaled_step(p, in->memory_current, worst);
        d.step = step < in->memory_current - d.floor ? step : in->memory_current - d.floor;
        d.step -= d.step % RECLAIM_PAGE_SIZE;
        *ret = d;
}
