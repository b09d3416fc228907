/* SPDX-License-Identifier: MIT */
/*
 * The bookkeeping of pre-kill warnings (systemd-oomd's hook; the server
 * side is server/prekill.c): which calls of the hook wait for their answer,
 * whom each one warned, who acknowledged or went away, the deadlines, the
 * limits ([Prekill] MaxCalls=, MaxWarnings=), the counters of GetStatus
 * "prekill" and /metrics, and the deadline itself. Pure: no I/O, no event
 * loop; the server says what happened, the book says what follows.
 *
 * A warning is one call of io.systemd.oom.Prekill.Notify that warned at
 * least one subscriber. Each warned subscriber is named by its varlink
 * connection's id, with the uid and pid of its peer; it is waited for
 * until it acknowledges (AcknowledgePrekill) or goes away. A warning ends
 * when nobody is waited for any more ("acknowledged"), at its deadline
 * ("deadline"), or when the connection owed the answer closes first
 * ("abandoned").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "list.h"

/* Who is about to kill, as the warning names it. */
#define PREKILL_BY "systemd-oomd"

/* What is taken off systemd-oomd's PrekillHookTimeoutSec= for the deadline: the time its call and our answer
 * travel (at most 72 ms over 42 kills by oomd 262 under TCG: tests/bench/bench-prekill-oomd.py), and room for a
 * daemon slowed by the memory pressure that made oomd act. */
#define PREKILL_MARGIN_USEC (250 * UINT64_C(1000))
/* oomd's smallest PrekillHookTimeoutSec=, taken when it has none (a stand-in may call anyway). */
#define PREKILL_OOMD_TIMEOUT_MIN_USEC (1000 * UINT64_C(1000))

typedef enum PrekillWarnedState {
        PREKILL_WAITING,            /* warned, neither acknowledged nor gone */
        PREKILL_ACKNOWLEDGED,
        PREKILL_GONE,               /* disconnected, unsubscribed, its cgroup removed, or never reached */
        _PREKILL_WARNED_STATE_MAX,
} PrekillWarnedState;

typedef struct PrekillWarned {
        uint64_t client;            /* the varlink connection of the stream that was warned */
        uint32_t uid;
        int32_t pid;
        PrekillWarnedState state;
} PrekillWarned;

typedef enum PrekillOutcome {
        PREKILL_OUTCOME_ACKNOWLEDGED, /* everyone warned acknowledged or went away */
        PREKILL_OUTCOME_DEADLINE,
        PREKILL_OUTCOME_ABANDONED,    /* the connection owed the answer closed */
        _PREKILL_OUTCOME_MAX,
} PrekillOutcome;

typedef struct PrekillWarning PrekillWarning;
struct PrekillWarning {
        uint64_t id;                /* > 0, never given twice */
        char *victim;               /* the cgroup2 path systemd-oomd named */
        uint64_t start_us;          /* CLOCK_MONOTONIC when the call was read */
        uint64_t realtime_us;       /* CLOCK_REALTIME then */
        uint64_t deadline_us;       /* CLOCK_MONOTONIC */
        uint64_t hook;              /* the hook connection owed the answer; 0: none any more */
        PrekillWarned *warned;
        size_t n_warned;
        size_t n_waiting;           /* of them, PREKILL_WAITING */
        LIST_FIELDS(PrekillWarning, warnings);
};

/* What the counters count (GetStatus "prekill", pressured_prekill_total{outcome=}). */
typedef struct PrekillCounters {
        uint64_t warned;            /* calls that warned at least one subscriber */
        uint64_t acknowledged;      /* of those, answered because nobody was waited for any more */
        uint64_t deadline_reached;  /* of those, answered at the deadline */
        uint64_t nobody;            /* calls answered at once: nobody to warn */
} PrekillCounters;

typedef struct PrekillBook {
        PrekillWarning *warnings;   /* waiting for their answer, newest first */
        unsigned n_pending;
        uint64_t n_awaited;         /* warned subscribers waited for, over every warning */
        uint64_t last_id;           /* the last id given */
        PrekillCounters counters;
} PrekillBook;

/* A limit a new call would go over. */
typedef enum PrekillLimit {
        PREKILL_LIMIT_NONE,
        PREKILL_LIMIT_MAX_CALLS,
        PREKILL_LIMIT_MAX_WARNINGS,
} PrekillLimit;

/*
 * prekill_deadline_usec - how long after a call its warning waits:
 * @configured ([Prekill] Deadline=) if set, else @oomd_timeout
 * (PrekillHookTimeoutSec=; PREKILL_OOMD_TIMEOUT_MIN_USEC for 0) less
 * PREKILL_MARGIN_USEC.
 */
uint64_t prekill_deadline_usec(uint64_t configured, uint64_t oomd_timeout);

/*
 * prekill_book_admit - whether a call that would warn @n subscribers fits
 * under @max_calls waiting calls and @max_warnings subscribers waited for.
 * Returns the limit it would go over (PREKILL_LIMIT_NONE: it fits).
 */
PrekillLimit prekill_book_admit(const PrekillBook *b, unsigned max_calls, unsigned max_warnings, size_t n);

/*
 * prekill_warning_new - a warning of the call read at @start_us
 * (@realtime_us) about @victim, numbered after the last id, with room for
 * @n_max warned subscribers, owed to the hook connection @hook; not in
 * the book yet (prekill_book_add()). Returns 0 or -ENOMEM.
 */
int prekill_warning_new(PrekillBook *b, const char *victim, uint64_t start_us, uint64_t realtime_us,
                        uint64_t deadline_us, uint64_t hook, size_t n_max, PrekillWarning **ret);

/* prekill_warning_free - a warning not in the book (or taken out); NULL-safe, returns NULL. */
PrekillWarning *prekill_warning_free(PrekillWarning *w);

/* prekill_warning_add - @w warns the stream of connection @client (peer @uid, @pid): waited for. */
void prekill_warning_add(PrekillWarning *w, uint64_t client, uid_t uid, pid_t pid);

/*
 * prekill_book_add - @w waits for its answer: in the book, counted as
 * warned and pending. A warning that waits for nobody (n_waiting 0) is
 * still added; the caller ends it (prekill_book_end()).
 */
void prekill_book_add(PrekillBook *b, PrekillWarning *w);

/* prekill_book_nobody - a call answered at once, with nobody to warn. */
void prekill_book_nobody(PrekillBook *b);

/* prekill_book_find - the waiting warning @id, or NULL. */
PrekillWarning *prekill_book_find(const PrekillBook *b, uint64_t id);

/*
 * prekill_book_acknowledge - the acknowledgement of warning @id by a peer
 * of @uid, @pid: one warned subscriber of @uid still waited for, the one
 * whose connection has @pid if there is one, else the oldest connection.
 * Returns 0 with *@ret the warning (done if its n_waiting is 0), or
 * -ENOENT: no such warning waits for an acknowledgement of @uid.
 */
int prekill_book_acknowledge(PrekillBook *b, uint64_t id, uid_t uid, pid_t pid, PrekillWarning **ret);

/*
 * prekill_warning_gone - the stream of connection @client went away:
 * @w no longer waits for it. Returns true if @w waited for it.
 */
bool prekill_warning_gone(PrekillBook *b, PrekillWarning *w, uint64_t client);

/*
 * prekill_book_end - @w is answered (or abandoned): out of the book,
 * counted by @outcome, freed.
 */
void prekill_book_end(PrekillBook *b, PrekillWarning *w, PrekillOutcome outcome);

/* prekill_book_next_deadline - the earliest deadline of a waiting warning, 0 for none. */
uint64_t prekill_book_next_deadline(const PrekillBook *b);

/* The state of a warning handed to the next process (snapshot.h). */
typedef struct SnapshotPrekillWarning SnapshotPrekillWarning;

/*
 * prekill_book_export - every waiting warning as a snapshot, in *@ret
 * (*@ret_n of them; free with snapshot_prekill_warning_done() each).
 * Returns 0 or -ENOMEM.
 */
int prekill_book_export(const PrekillBook *b, SnapshotPrekillWarning **ret, size_t *ret_n);

/*
 * prekill_book_adopt - the warning a previous process described in @s,
 * in the book as it was: not counted again (the counters come with the
 * state), its ids kept. Returns 0 with *@ret, or -ENOMEM.
 */
int prekill_book_adopt(PrekillBook *b, const SnapshotPrekillWarning *s, PrekillWarning **ret);

/* prekill_book_done - free every warning (nothing is counted). */
void prekill_book_done(PrekillBook *b);
