/* SPDX-License-Identifier: MIT */
/*
 * Failure injection for unit tests: make the next call of a chosen kind
 * fail, to walk the error paths a test cannot reach otherwise (out of
 * memory, a libevent registration refused).
 *
 * How it works. The test is linked with -Wl,--wrap=SYMBOL for malloc,
 * calloc, realloc, strdup, strndup, event_add, event_new and open64 (the
 * open() of a build with 64-bit file offsets), so every call to those
 * from the test and from the daemon's static library goes through this
 * module first (calls made inside glibc, libevent or jansson themselves
 * are not affected: their references were resolved when those libraries
 * were linked). jansson allocates through its own hooks, which
 * fail_inject_reset() points here with json_set_alloc_funcs().
 *
 * Using it. Add fail_inject_dep to the test's dependencies in
 * tests/unit/meson.build (it carries this file and the link arguments),
 * include "fail-inject.h", then:
 *
 *         fail_inject_reset();                       // nothing fails, counters 0
 *         fail_inject_after(FAIL_EVENT_ADD, 1);      // the next event_add() fails
 *         r = client_start(...);                     // must return -ENOMEM, leak nothing
 *         ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
 *
 * To try every allocation of an operation in turn, fail the n-th one for
 * n = 1, 2, ... until the operation runs without reaching the failure:
 *
 *         for (unsigned n = 1;; n++) {
 *                 fail_inject_reset();
 *                 fail_inject_after(FAIL_ALLOC, n);
 *                 r = thing_new(&t);
 *                 injected = fail_inject_fired(FAIL_ALLOC) > 0;
 *                 fail_inject_reset();               // the checks below allocate freely
 *                 if (!injected) {
 *                         ASSERT_OK(r);              // n is past the last allocation
 *                         break;
 *                 }
 *                 ASSERT_ERR(r, ENOMEM);            // and nothing may leak
 *         }
 *
 * Leaks are found by the suite's setups: the unit tests run under
 * valgrind (--setup=valgrind) and ASan (--setup=sanitize) in CI, and an
 * error path that leaks fails there.
 *
 * A failing event_add() returns -1 like libevent does; a failing
 * event_new() or allocation returns NULL with errno ENOMEM; a failing
 * open() returns -1 with errno EMFILE (out of file descriptors). Not thread-safe; unit tests
 * are single-threaded.
 */
#pragma once

#include <stdbool.h>

typedef enum FailKind {
        FAIL_MALLOC,     /* malloc, calloc, realloc, strdup, strndup */
        FAIL_JSON_ALLOC, /* jansson's allocations (json_object(), json_dumps(), ...) */
        FAIL_ALLOC,      /* either of the two above: one count over both */
        FAIL_EVENT_ADD,  /* libevent's event_add() */
        FAIL_EVENT_NEW,  /* libevent's event_new() (and evtimer_new(), a macro of it) */
        FAIL_OPEN,       /* open() (open64 with 64-bit file offsets, as meson builds): EMFILE */
        _FAIL_KIND_MAX,
} FailKind;

/*
 * fail_inject_after - make the @n-th next call of @kind fail (1: the very
 * next one), once; the calls after it succeed again. 0 turns it off.
 * Counting starts now, independently of the other kinds.
 */
void fail_inject_after(FailKind kind, unsigned n);

/*
 * fail_inject_reset - nothing fails any more; every counter is 0; jansson
 * allocates through this module (so FAIL_JSON_ALLOC works). Call it at
 * the start of each test that injects failures.
 */
void fail_inject_reset(void);

/* fail_inject_calls - calls of @kind seen since the last reset. */
unsigned fail_inject_calls(FailKind kind);

/* fail_inject_fired - calls of @kind made to fail since the last reset. */
unsigned fail_inject_fired(FailKind kind);
