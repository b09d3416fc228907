/* SPDX-License-Identifier: MIT */
/*
 * memory.events of a cgroup2 directory, watched through inotify as
 * source_watch_cgroup() describes; every wakeup checks that the cgroup
 * still exists. Each event carries the counters and their change since the
 * previous event.
 */
#include <fcntl.h>

#include "log.h"
#include "source-common.h"

static void memory_events_on_ready(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        SourceEnv *env = s->env;
        MemoryEvents now, delta = {};
        bool changed = false;
        uint64_t rt, mono;

        if (!source_drain_check(s, env->v2))
                return;
        mono = now_usec(CLOCK_MONOTONIC);
        rt = now_usec(CLOCK_REALTIME);

        /* The kernel replaces the file's contents atomically; an empty or torn
         * read can only come from a file being rewritten by hand. Wait for the
         * next change rather than report a bogus delta. */
        if (memory_events_read(s->aux_fd, &now) < 0 || now.present == 0)
                return;
        counter_inc(env->counters, COUNTER_EVENTS_READ);

        delta.present = now.present;
        for (int k = 0; k < _MEMORY_EVENT_MAX; k++) {
                if (!(now.present & (1u << k)))
                        continue;
                /* Counters only grow; a smaller value means a reset, report it as is. */
                delta.value[k] = now.value[k] >= s->last_events.value[k] ? now.value[k] - s->last_events.value[k]
                                                                          : now.value[k];
                if (now.value[k] != s->last_events.value[k])
                        changed = true;
        }
        s->last_events = now;
        if (!changed)
                return;

        s->cb->event(s, &(const EventData) {
                .kind = EVENT_MEMORY_EVENTS, .cgroup = s->cgroup, .realtime_us = rt, .monotonic_us = mono,
                .memory_events = { .counters = &now, .delta = &delta },
        }, 1);
}

static int memory_events_open(Source *s, int given, SourceFailure *e) {
        SourceEnv *env = s->env;
        _cleanup_close_ int dirfd = -1, evfd = -1, ifd = -1;
        int k;

        k = source_open_files(s, env->v2, given, &(const SourceFile) { "memory.events", O_RDONLY }, 1, &evfd, &dirfd,
                              e);
        if (k < 0)
                return k;

        ifd = source_watch_cgroup(dirfd, "memory.events");
        if (ifd < 0)
                return ifd;

        s->aux_fd = TAKE_FD(evfd);
        k = memory_events_read(s->aux_fd, &s->last_events);
        if (k < 0) {
                s->aux_fd = safe_close(s->aux_fd);
                if (k == -ENOMEM)
                        return k; /* out of memory is not a file that cannot be parsed */
                return source_failure_unavailable(e, k, "memory_events", "memory.events cannot be parsed");
        }
        s->ev = event_new(env->base, ifd, EV_READ | EV_PERSIST, memory_events_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0) {
                s->aux_fd = safe_close(s->aux_fd);
                return -ENOMEM;
        }
        s->fd = TAKE_FD(ifd);
        return 0;
}

static int memory_events_state(Source *s, SubscribedState *ret) {
        ret->has_counters = true;
        ret->counters = s->last_events;
        return 0;
}

/* Counters that rose while nobody watched make one event, as soon as the loop runs. */
static void memory_events_restore(Source *s, const SnapshotRegistration *saved) {
        if (saved->last_events.present == 0)
                return;
        s->last_events = saved->last_events;
        event_active(s->ev, EV_READ, 0);
}

const SourceOps source_memory_events_ops = {
        .open = memory_events_open,
        .state = memory_events_state,
        .restore = memory_events_restore,
};
