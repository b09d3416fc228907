/* SPDX-License-Identifier: MIT */
/*
 * The bookkeeping of pre-kill warnings (daemon/model/prekill-book.c): the
 * deadline derived from [Prekill] Deadline= or oomd's timeout, the two
 * limits, ids never given twice, which warned subscriber an
 * acknowledgement settles (the caller's pid, else the oldest connection
 * of its user; never another user's, never twice), departures, the
 * counters of each outcome, the next deadline, and the state handed to
 * the next process.
 */
#include <stdlib.h>
#include <string.h>

#include "prekill-book.h"
#include "snapshot.h"
#include "tests.h"
#include "util.h"

#define MS USEC_PER_MSEC
#define S USEC_PER_SEC

static void test_deadline(void) {
        ASSERT_U64_EQ(prekill_deadline_usec(1500 * MS, 10 * S), 1500 * MS);
        ASSERT_U64_EQ(prekill_deadline_usec(0, 5 * S), 5 * S - PREKILL_MARGIN_USEC);
        ASSERT_U64_EQ(prekill_deadline_usec(0, 0), PREKILL_OOMD_TIMEOUT_MIN_USEC - PREKILL_MARGIN_USEC);
        ASSERT_U64_EQ(prekill_deadline_usec(0, 1 * S), 750 * MS);
}

/* A warning about @victim of subscribers (client, uid, pid) in @who, in the book. */
static PrekillWarning *warn(PrekillBook *b, const char *victim, uint64_t deadline, uint64_t hook,
                            const uint64_t (*who)[3], size_t n) {
        PrekillWarning *w;

        ASSERT_OK(prekill_warning_new(b, victim, 100, 200, deadline, hook, n, &w));
        for (size_t i = 0; i < n; i++)
                prekill_warning_add(w, who[i][0], (uid_t) who[i][1], (pid_t) who[i][2]);
        prekill_book_add(b, w);
        return w;
}

static void test_limits(void) {
        PrekillBook b = {};
        static const uint64_t who[][3] = { { 1, 1000, 10 }, { 2, 1000, 11 } };

        ASSERT_EQ(prekill_book_admit(&b, 1, 4, 4), PREKILL_LIMIT_NONE);
        ASSERT_EQ(prekill_book_admit(&b, 1, 4, 5), PREKILL_LIMIT_MAX_WARNINGS);
        warn(&b, "/a", 1000, 1, who, 2);
        ASSERT_EQ(b.n_pending, 1);
        ASSERT_U64_EQ(b.n_awaited, 2);
        ASSERT_EQ(prekill_book_admit(&b, 1, 4, 1), PREKILL_LIMIT_MAX_CALLS);
        ASSERT_EQ(prekill_book_admit(&b, 2, 4, 2), PREKILL_LIMIT_NONE);
        ASSERT_EQ(prekill_book_admit(&b, 2, 4, 3), PREKILL_LIMIT_MAX_WARNINGS);
        /* What was acknowledged is waited for no longer: room again. */
        ASSERT_OK(prekill_book_acknowledge(&b, 1, 1000, 10, &(PrekillWarning *) { NULL }));
        ASSERT_EQ(prekill_book_admit(&b, 2, 4, 3), PREKILL_LIMIT_NONE);
        prekill_book_done(&b);
}

static void test_acknowledge(void) {
        PrekillBook b = {};
        static const uint64_t who[][3] = { { 7, 1000, 70 }, { 3, 1000, 30 }, { 5, 1000, 50 }, { 9, 2000, 90 } };
        PrekillWarning *w = warn(&b, "/victim", 1000, 4, who, 4), *got = NULL;

        ASSERT_U64_EQ(w->id, 1);
        /* Unknown id, another user, nobody of that user. */
        ASSERT_ERR(prekill_book_acknowledge(&b, 2, 1000, 70, &got), ENOENT);
        ASSERT_ERR(prekill_book_acknowledge(&b, 1, 3000, 70, &got), ENOENT);
        ASSERT_TRUE(!got);
        /* The caller's own connection first, whatever its age. */
        ASSERT_OK(prekill_book_acknowledge(&b, 1, 1000, 50, &got));
        ASSERT_TRUE(got == w);
        ASSERT_EQ(w->warned[2].state, PREKILL_ACKNOWLEDGED);
        /* A pid of none of them: the oldest connection (the smallest id) of the user. */
        ASSERT_OK(prekill_book_acknowledge(&b, 1, 1000, 12345, &got));
        ASSERT_EQ(w->warned[1].state, PREKILL_ACKNOWLEDGED);
        /* Its pid again: it acknowledged already, the next of the user is taken. */
        ASSERT_OK(prekill_book_acknowledge(&b, 1, 1000, 50, &got));
        ASSERT_EQ(w->warned[0].state, PREKILL_ACKNOWLEDGED);
        ASSERT_ERR(prekill_book_acknowledge(&b, 1, 1000, 70, &got), ENOENT);
        ASSERT_EQ(w->n_waiting, 1);
        ASSERT_U64_EQ(b.n_awaited, 1);
        /* The other user's subscriber goes away: nobody is waited for. */
        ASSERT_TRUE(!prekill_warning_gone(&b, w, 7));
        ASSERT_TRUE(prekill_warning_gone(&b, w, 9));
        ASSERT_EQ(w->warned[3].state, PREKILL_GONE);
        ASSERT_EQ(w->n_waiting, 0);
        ASSERT_ERR(prekill_book_acknowledge(&b, 1, 2000, 90, &got), ENOENT);
        prekill_book_end(&b, w, PREKILL_OUTCOME_ACKNOWLEDGED);
        ASSERT_EQ(b.n_pending, 0);
        ASSERT_U64_EQ(b.n_awaited, 0);
        ASSERT_U64_EQ(b.counters.warned, 1);
        ASSERT_U64_EQ(b.counters.acknowledged, 1);
        /* Answered: its id is no longer known. */
        ASSERT_ERR(prekill_book_acknowledge(&b, 1, 1000, 70, &got), ENOENT);
        prekill_book_done(&b);
}

static void test_outcomes_and_deadlines(void) {
        PrekillBook b = {};
        static const uint64_t who[][3] = { { 1, 0, 1 } };
        PrekillWarning *a = warn(&b, "/a", 3000, 10, who, 1), *c = warn(&b, "/b", 2000, 11, who, 1),
                       *d = warn(&b, "/c", 2500, 0, who, 1);

        ASSERT_U64_EQ(d->id, 3);
        ASSERT_TRUE(prekill_book_find(&b, 2) == c);
        ASSERT_U64_EQ(a->hook, 10);
        ASSERT_U64_EQ(prekill_book_next_deadline(&b), 2000);
        prekill_book_end(&b, c, PREKILL_OUTCOME_DEADLINE);
        ASSERT_U64_EQ(prekill_book_next_deadline(&b), 2500);
        prekill_book_end(&b, d, PREKILL_OUTCOME_ABANDONED);
        prekill_book_nobody(&b);
        prekill_book_nobody(&b);
        /* One subscriber gone from every warning at once: the one left ends. */
        ASSERT_TRUE(prekill_warning_gone(&b, a, 1));
        prekill_book_end(&b, a, PREKILL_OUTCOME_ACKNOWLEDGED);
        ASSERT_U64_EQ(prekill_book_next_deadline(&b), 0);
        ASSERT_U64_EQ(b.counters.warned, 3);
        ASSERT_U64_EQ(b.counters.acknowledged, 1);
        ASSERT_U64_EQ(b.counters.deadline_reached, 1);
        ASSERT_U64_EQ(b.counters.nobody, 2);
        ASSERT_EQ(b.n_pending, 0);
        /* Ids go on from the last one given. */
        a = warn(&b, "/d", 1, 0, who, 1);
        ASSERT_U64_EQ(a->id, 4);
        prekill_book_done(&b);
}

/* What the next process gets back: the same warnings, ids and states, counted once. */
static void test_export_adopt(void) {
        PrekillBook b = {}, n = {};
        static const uint64_t who[][3] = { { 1, 1000, 10 }, { 2, 1000, 11 }, { 3, 0, 12 } };
        PrekillWarning *w = warn(&b, "/oom.slice/victim.service", 9000, 6, who, 3), *x = NULL;
        SnapshotPrekillWarning *s = NULL;
        size_t n_s = 0;

        warn(&b, "/other", 8000, 7, who, 1);
        ASSERT_OK(prekill_book_acknowledge(&b, w->id, 1000, 11, &x));
        ASSERT_TRUE(prekill_warning_gone(&b, w, 3));
        ASSERT_OK(prekill_book_export(&b, &s, &n_s));
        ASSERT_EQ(n_s, 2);
        n.counters = b.counters;
        n.last_id = 5;
        for (size_t i = 0; i < n_s; i++)
                ASSERT_OK(prekill_book_adopt(&n, &s[i], &x));
        ASSERT_U64_EQ(n.counters.warned, 2);
        ASSERT_EQ(n.n_pending, 2);
        ASSERT_U64_EQ(n.n_awaited, b.n_awaited);
        x = prekill_book_find(&n, 1);
        ASSERT_TRUE(x);
        ASSERT_STREQ(x->victim, "/oom.slice/victim.service");
        ASSERT_U64_EQ(x->deadline_us, 9000);
        ASSERT_U64_EQ(x->hook, 6);
        ASSERT_EQ(x->n_waiting, 1);
        ASSERT_EQ(x->warned[1].state, PREKILL_ACKNOWLEDGED);
        ASSERT_EQ(x->warned[2].state, PREKILL_GONE);
        /* The last id given stays the larger one: no id is given twice. */
        ASSERT_U64_EQ(n.last_id, 5);
        for (size_t i = 0; i < n_s; i++)
                snapshot_prekill_warning_done(&s[i]);
        free(s);
        prekill_book_done(&b);
        prekill_book_done(&n);
        /* Nothing waits: nothing exported. */
        ASSERT_OK(prekill_book_export(&b, &s, &n_s));
        ASSERT_TRUE(!s && n_s == 0);
}

int main(void) {
        test_deadline();
        test_limits();
        test_acknowledge();
        test_outcomes_and_deadlines();
        test_export_adopt();
        printf("ok\n");
        return 0;
}
