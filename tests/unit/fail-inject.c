/* SPDX-License-Identifier: MIT */
/*
 * Failure injection for unit tests (see fail-inject.h): the --wrap
 * targets of malloc, calloc, realloc, strdup, strndup, event_add and
 * event_new, and
 * the allocator handed to jansson.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "fail-inject.h"

static struct {
        unsigned countdown; /* the call that makes this 0 fails; 0: off */
        unsigned calls;
        unsigned fired;
} state[_FAIL_KIND_MAX];

/* Count one call of @kind; true if it is the one to fail. */
static bool hit(FailKind kind) {
        state[kind].calls++;
        if (state[kind].countdown == 0 || --state[kind].countdown > 0)
                return false;
        state[kind].fired++;
        return true;
}

/* An allocation of @kind (FAIL_MALLOC or FAIL_JSON_ALLOC), also counted as FAIL_ALLOC. */
static bool alloc_fails(FailKind kind) {
        bool own = hit(kind);
        bool any = hit(FAIL_ALLOC);

        if (own || any) {
                errno = ENOMEM;
                return true;
        }
        return false;
}

void fail_inject_after(FailKind kind, unsigned n) {
        if ((unsigned) kind < _FAIL_KIND_MAX)
                state[kind].countdown = n;
}

unsigned fail_inject_calls(FailKind kind) {
        return (unsigned) kind < _FAIL_KIND_MAX ? state[kind].calls : 0;
}

unsigned fail_inject_fired(FailKind kind) {
        return (unsigned) kind < _FAIL_KIND_MAX ? state[kind].fired : 0;
}

/* The real functions, reached through the linker's --wrap. */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_event_add(struct event *ev, const struct timeval *timeout);
struct event *__real_event_new(struct event_base *base, evutil_socket_t fd, short what, event_callback_fn cb,
                               void *arg);
int __real_open64(const char *path, int flags, ...);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_event_add(struct event *ev, const struct timeval *timeout);
struct event *__wrap_event_new(struct event_base *base, evutil_socket_t fd, short what, event_callback_fn cb,
                               void *arg);
int __wrap_open64(const char *path, int flags, ...);

void *__wrap_malloc(size_t size) {
        return alloc_fails(FAIL_MALLOC) ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size) {
        return alloc_fails(FAIL_MALLOC) ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size) {
        return alloc_fails(FAIL_MALLOC) ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s) {
        return alloc_fails(FAIL_MALLOC) ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
        return alloc_fails(FAIL_MALLOC) ? NULL : __real_strndup(s, n);
}

int __wrap_event_add(struct event *ev, const struct timeval *timeout) {
        return hit(FAIL_EVENT_ADD) ? -1 : __real_event_add(ev, timeout);
}

struct event *__wrap_event_new(struct event_base *base, evutil_socket_t fd, short what, event_callback_fn cb,
                               void *arg) {
        if (hit(FAIL_EVENT_NEW)) {
                errno = ENOMEM;
                return NULL;
        }
        return __real_event_new(base, fd, what, cb, arg);
}

int __wrap_open64(const char *path, int flags, ...) {
        mode_t mode = 0;

        if (flags & (O_CREAT | O_TMPFILE)) {
                va_list ap;

                va_start(ap, flags);
                mode = va_arg(ap, mode_t);
                va_end(ap);
        }
        if (hit(FAIL_OPEN)) {
                errno = EMFILE;
                return -1;
        }
        return __real_open64(path, flags, mode);
}

static void *json_malloc(size_t size) {
        return alloc_fails(FAIL_JSON_ALLOC) ? NULL : __real_malloc(size);
}

void fail_inject_reset(void) {
        memset(state, 0, sizeof(state));
        /* Blocks jansson allocated before stay valid: both allocators end in
         * the same malloc and free. */
        json_set_alloc_funcs(json_malloc, free);
}
