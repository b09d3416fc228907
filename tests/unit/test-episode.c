/* SPDX-License-Identifier: MIT */
/*
 * Episode logic on a fake clock: when episodes start, continue and clear,
 * the peak they report, the timer they ask for, and the history ring.
 */
#include "episode.h"
#include "tests.h"

#define MS UINT64_C(1000)
#define SEC UINT64_C(1000000)

/* A fake PSI source: stall accrues at @rate_ppm of wall time. */
typedef struct FakeStall {
        uint64_t now;
        uint64_t total;
        uint32_t rate_ppm;
} FakeStall;

static void advance(FakeStall *f, uint64_t to) {
        ASSERT_TRUE(to >= f->now);
        f->total += (to - f->now) * f->rate_ppm / EPISODE_PPM;
        f->now = to;
}

/* Run the episode timer until @until; return how many times it cleared, and when (last). */
static unsigned run_ticks(Episode *e, FakeStall *f, uint64_t until, EpisodeRecord *ret_last) {
        unsigned cleared = 0;

        for (;;) {
                uint64_t next = episode_next_tick(e);
                EpisodeRecord r;

                if (next == 0 || next > until)
                        break;
                ASSERT_TRUE(next >= f->now);
                advance(f, next);
                if (episode_tick(e, f->now, true, f->total, &r)) {
                        cleared++;
                        if (ret_last)
                                *ret_last = r;
                }
        }
        advance(f, until);
        return cleared;
}

static void test_plain_hold(void) {
        EpisodeParams p = episode_params_plain(2 * SEC);
        EpisodeRecord r = { 0 };
        Episode e;

        episode_init(&e, &p);
        ASSERT_U64_EQ(episode_next_tick(&e), 0);
        ASSERT_TRUE(!episode_tick(&e, 5 * SEC, false, 0, &r));

        ASSERT_TRUE(episode_event(&e, 10 * SEC, 1, false, false, 0));
        ASSERT_U64_EQ(episode_next_tick(&e), 12 * SEC);
        ASSERT_TRUE(!episode_event(&e, 11 * SEC, 2, false, false, 0));
        ASSERT_U64_EQ(episode_next_tick(&e), 13 * SEC);

        /* A tick that comes early (a stale timer) does not clear. */
        ASSERT_TRUE(!episode_tick(&e, 12 * SEC, false, 0, &r));
        ASSERT_TRUE(e.active);
        ASSERT_TRUE(episode_tick(&e, 13 * SEC, false, 0, &r));
        ASSERT_TRUE(!e.active);
        ASSERT_U64_EQ(r.start_us, 10 * SEC);
        ASSERT_U64_EQ(r.end_us, 13 * SEC);
        ASSERT_U64_EQ(r.events, 2);
        ASSERT_EQ(r.peak, 2);
        ASSERT_U64_EQ(episode_next_tick(&e), 0);

        /* Exactly one clear: further ticks do nothing. */
        ASSERT_TRUE(!episode_tick(&e, 20 * SEC, false, 0, &r));

        /* The next event is a new episode with its own count and peak. */
        ASSERT_TRUE(episode_event(&e, 30 * SEC, 0, false, false, 0));
        ASSERT_U64_EQ(e.cur.events, 1);
        ASSERT_EQ(e.cur.peak, 0);
}

static void test_psi_clears_after_load(void) {
        /* some 100ms 2s, ClearRatio 0.5, hold two windows. */
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        FakeStall f = { .now = 100 * SEC, .total = 7 * SEC };
        EpisodeRecord r = { 0 };
        Episode e;
        unsigned n;

        ASSERT_U64_EQ(p.clear_stall_us, 50 * MS);
        episode_init(&e, &p);

        /* Load: 30% stall for 10 s, the kernel firing once per window. */
        f.rate_ppm = 300000;
        ASSERT_TRUE(episode_event(&e, f.now, 0, false, true, f.total));
        for (uint64_t t = 102 * SEC; t <= 110 * SEC; t += 2 * SEC) {
                ASSERT_EQ(run_ticks(&e, &f, t, NULL), 0);
                ASSERT_TRUE(!episode_event(&e, f.now, 0, false, true, f.total));
        }
        ASSERT_EQ(e.cur.events, 5 + 1);
        /* Load stops at 110 s: stall stays below 50 ms per window afterwards. */
        f.rate_ppm = 10000; /* 20 ms per 2 s window */
        n = run_ticks(&e, &f, 130 * SEC, &r);
        ASSERT_EQ(n, 1);
        ASSERT_U64_EQ(r.start_us, 100 * SEC);
        /* Last event at 110 s, last busy window ended at 110 s: hold 4 s. */
        ASSERT_U64_EQ(r.end_us, 114 * SEC);
        ASSERT_U64_EQ(r.events, 6);
        /* The peak is the measured 30%, above the 5% the threshold implies. */
        ASSERT_EQ(r.peak, 300000);
        ASSERT_U64_EQ(episode_next_tick(&e), 0);
}

static void test_psi_stall_without_events_keeps_it_active(void) {
        /* Stall between half the threshold and the threshold fires nothing
         * but is not over either. */
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        FakeStall f = { .now = 0, .total = 0 };
        EpisodeRecord r = { 0 };
        Episode e;

        episode_init(&e, &p);
        ASSERT_TRUE(episode_event(&e, 0, 0, false, true, 0));
        f.rate_ppm = 40000; /* 80 ms per window: between 50 and 100 */
        ASSERT_EQ(run_ticks(&e, &f, 60 * SEC, NULL), 0);
        ASSERT_TRUE(e.active);
        /* While active, it ticks once per window and no more. */
        ASSERT_U64_EQ(episode_next_tick(&e), 62 * SEC);

        f.rate_ppm = 0;
        ASSERT_EQ(run_ticks(&e, &f, 80 * SEC, &r), 1);
        ASSERT_U64_EQ(r.end_us, 64 * SEC);
        ASSERT_EQ(r.peak, 50000); /* the threshold's 5%, above the measured 4% */
}

/*
 * Injected events say nothing of the stall: an episode of them alone has
 * no peak (unknown), whatever the windows measured; a kernel event makes it
 * known, with the largest stall measured before it counted. On vmpressure
 * the injected level is the peak.
 */
static void test_injected_peak(void) {
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        EpisodeParams plain = episode_params_plain(2 * SEC);
        FakeStall f = { .now = 0, .total = 0 };
        EpisodeRecord r = { 0 };
        Episode e;

        episode_init(&e, &p);
        ASSERT_TRUE(episode_event(&e, 0, 0, true, true, 0));
        ASSERT_TRUE(!e.cur.peak_known);
        ASSERT_EQ(run_ticks(&e, &f, 60 * SEC, &r), 1);
        ASSERT_U64_EQ(r.events, 1);
        ASSERT_TRUE(!r.peak_known);

        /* Injected, a window at 3% measured, then the kernel fires. */
        ASSERT_TRUE(episode_event(&e, f.now, 0, true, true, f.total));
        f.rate_ppm = 30000;
        ASSERT_EQ(run_ticks(&e, &f, f.now + 2 * SEC, NULL), 0);
        ASSERT_TRUE(!e.cur.peak_known);
        ASSERT_TRUE(!episode_event(&e, f.now, 0, false, true, f.total));
        ASSERT_TRUE(e.cur.peak_known);
        ASSERT_EQ(e.cur.peak, 50000); /* the threshold's 5% */
        f.rate_ppm = 0;
        ASSERT_EQ(run_ticks(&e, &f, f.now + 60 * SEC, &r), 1);
        ASSERT_TRUE(r.peak_known);
        ASSERT_U64_EQ(r.events, 2);

        episode_init(&e, &plain);
        ASSERT_TRUE(episode_event(&e, 0, 3, true, false, 0)); /* critical + 1 */
        ASSERT_EQ(e.cur.peak, 3);
}

static void test_psi_load_again_within_hold(void) {
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        FakeStall f = { 0 };
        EpisodeRecord r = { 0 };
        Episode e;

        episode_init(&e, &p);
        f.rate_ppm = 200000;
        ASSERT_TRUE(episode_event(&e, f.now, 0, false, true, f.total));
        ASSERT_EQ(run_ticks(&e, &f, 2 * SEC, NULL), 0);
        f.rate_ppm = 0;
        ASSERT_EQ(run_ticks(&e, &f, 5 * SEC, NULL), 0);
        /* Load again 3 s after the last busy window: the same episode. */
        f.rate_ppm = 200000;
        ASSERT_TRUE(!episode_event(&e, f.now, 0, false, true, f.total));
        ASSERT_EQ(run_ticks(&e, &f, 7 * SEC, NULL), 0);
        f.rate_ppm = 0;
        ASSERT_EQ(run_ticks(&e, &f, 30 * SEC, &r), 1);
        ASSERT_U64_EQ(r.start_us, 0);
        ASSERT_U64_EQ(r.events, 2);

        /* Load after it cleared: a new episode. */
        f.rate_ppm = 200000;
        advance(&f, 40 * SEC);
        ASSERT_TRUE(episode_event(&e, f.now, 0, false, true, f.total));
        ASSERT_U64_EQ(e.cur.start_us, 40 * SEC);
        ASSERT_U64_EQ(e.cur.events, 1);
}

static void test_psi_unreadable_never_clears(void) {
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        Episode e;

        episode_init(&e, &p);
        ASSERT_TRUE(episode_event(&e, 0, 0, false, false, 0));
        for (uint64_t t = 0; t < 60 * SEC; t = episode_next_tick(&e))
                ASSERT_TRUE(!episode_tick(&e, episode_next_tick(&e), false, 0, NULL));
        ASSERT_TRUE(e.active);

        /* Readable again: it needs a full quiet hold from then. */
        uint64_t t0 = episode_next_tick(&e);
        ASSERT_TRUE(!episode_tick(&e, t0, true, 1000, NULL));
        uint64_t t1 = episode_next_tick(&e);
        ASSERT_U64_EQ(t1, t0 + 2 * SEC);
        ASSERT_TRUE(!episode_tick(&e, t1, true, 1000, NULL));
        ASSERT_TRUE(episode_tick(&e, t1 + 2 * SEC, true, 1000, NULL));
}

static void test_psi_total_backwards(void) {
        /* A total that goes backwards (the file now belongs to a recreated
         * cgroup) restarts the measurement instead of wrapping. */
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        Episode e;

        episode_init(&e, &p);
        ASSERT_TRUE(episode_event(&e, 0, 0, false, true, 5 * SEC));
        ASSERT_TRUE(!episode_tick(&e, 2 * SEC, true, 10, NULL));
        ASSERT_U64_EQ(e.unquiet_us, 2 * SEC);
        ASSERT_EQ(e.cur.peak, 50000);
        ASSERT_TRUE(!episode_tick(&e, 4 * SEC, true, 10, NULL));
        ASSERT_TRUE(episode_tick(&e, 6 * SEC, true, 10, NULL));
}

static void test_params_change(void) {
        EpisodeParams p = episode_params_psi(100 * MS, 2 * SEC, 0.5, 4 * SEC);
        EpisodeParams q = episode_params_psi(100 * MS, 1 * SEC, 0.5, 2 * SEC);
        Episode e;

        episode_init(&e, &p);
        ASSERT_TRUE(episode_event(&e, 0, 0, false, true, 0));
        episode_set_params(&e, &q);
        ASSERT_TRUE(e.active);
        /* New window: measuring restarts. */
        ASSERT_TRUE(!e.have_sample);
        ASSERT_U64_EQ(episode_next_tick(&e), 1 * SEC);
        ASSERT_TRUE(!episode_tick(&e, 1 * SEC, true, 0, NULL));
        ASSERT_TRUE(!episode_tick(&e, 2 * SEC, true, 0, NULL));
        ASSERT_TRUE(episode_tick(&e, 3 * SEC, true, 0, NULL));

        /* A ratio of 0 means any stall at all keeps the episode. */
        EpisodeParams z = episode_params_psi(100 * MS, 2 * SEC, 0, 4 * SEC);
        ASSERT_U64_EQ(z.clear_stall_us, 0);
        episode_init(&e, &z);
        ASSERT_TRUE(episode_event(&e, 0, 0, false, true, 0));
        for (uint64_t t = 2 * SEC; t <= 20 * SEC; t += 2 * SEC)
                ASSERT_TRUE(!episode_tick(&e, t, true, t, NULL));
}

static void test_history(void) {
        EpisodeHistory h;
        EpisodeRecord r = { 0 };

        episode_history_init(&h, 16);
        ASSERT_TRUE(h.records == NULL);
        ASSERT_TRUE(episode_history_get(&h, 0) == NULL);
        for (unsigned i = 0; i < 20; i++) {
                r.start_us = i;
                r.events = i + 1;
                ASSERT_OK(episode_history_push(&h, &r));
        }
        ASSERT_EQ(h.n, 16);
        ASSERT_U64_EQ(episode_history_get(&h, 0)->start_us, 4);
        ASSERT_U64_EQ(episode_history_get(&h, 15)->start_us, 19);
        ASSERT_TRUE(episode_history_get(&h, 16) == NULL);

        ASSERT_OK(episode_history_resize(&h, 4));
        ASSERT_EQ(h.n, 4);
        ASSERT_U64_EQ(episode_history_get(&h, 0)->start_us, 16);
        ASSERT_U64_EQ(episode_history_get(&h, 3)->start_us, 19);
        r.start_us = 20;
        ASSERT_OK(episode_history_push(&h, &r));
        ASSERT_U64_EQ(episode_history_get(&h, 0)->start_us, 17);
        ASSERT_U64_EQ(episode_history_get(&h, 3)->start_us, 20);

        ASSERT_OK(episode_history_resize(&h, 32));
        ASSERT_EQ(h.n, 4);
        ASSERT_U64_EQ(episode_history_get(&h, 3)->start_us, 20);

        ASSERT_OK(episode_history_resize(&h, 0));
        ASSERT_EQ(h.n, 0);
        ASSERT_OK(episode_history_push(&h, &r));
        ASSERT_EQ(h.n, 0);
        episode_history_done(&h);

        /* Freed and reusable. */
        episode_history_init(&h, 2);
        ASSERT_OK(episode_history_push(&h, &r));
        episode_history_done(&h);
        ASSERT_EQ(h.n, 0);
        ASSERT_EQ(h.capacity, 2);
}

int main(void) {
        test_plain_hold();
        test_psi_clears_after_load();
        test_psi_stall_without_events_keeps_it_active();
        test_psi_load_again_within_hold();
        test_injected_peak();
        test_psi_unreadable_never_clears();
        test_psi_total_backwards();
        test_params_change();
        test_history();
        return 0;
}
