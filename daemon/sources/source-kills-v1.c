/* SPDX-License-Identifier: MIT */
/*
 * The kernel's kills in the cgroup v1 memory hierarchy, for a kills source
 * on a cgroup that is there too (the hybrid layout, in which systemd makes
 * each cgroup in both hierarchies). v1 has no memory.events: an eventfd is
 * registered through cgroup.event_control on the cgroup's
 * memory.oom_control, which the kernel signals when the cgroup, or one
 * above it, reaches its memory limit and the OOM killer is about to run.
 * The kill itself is counted afterwards, in the oom_kill line of the
 * victim's own cgroup (v1 does not add it up the hierarchy): after each
 * notification the daemon reads the sum over the cgroup's subtree at once
 * and again after 50 ms, 500 ms and 5 s, and reports each rise. The kernel
 * does not notify the cgroup of an OOM under the limit of a cgroup below
 * it, nor of one of the whole machine: those kills are not seen here.
 */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "event-util.h"
#include "kernfile.h"
#include "kills.h"
#include "log.h"
#include "source-kills-v1.h"

static const uint64_t recheck_usec[] = { 50 * USEC_PER_MSEC, 500 * USEC_PER_MSEC, 5 * USEC_PER_SEC };

struct KillsV1 {
        int why;                    /* 0: watching; else why not (-ENOENT: not in v1, -ENODATA: no oom_kill) */
        int dirfd;                  /* the cgroup's v1 directory */
        ino_t ino;
        int efd;                    /* the eventfd on memory.oom_control */
        struct event *ev;
        struct event *recheck;      /* exists while re-reads are due */
        unsigned next_recheck;      /* index into recheck_usec */
        uint64_t oom_kill;          /* the subtree's sum at the last reading */
};

/* Read the subtree's kills and report a rise as one "killed" event by the kernel. */
static void kills_v1_check(Source *s) {
        KillsV1 *v = s->kills_v1;
        uint64_t sum = 0, rise, mono, rt;

        /* Out of memory, no rise now: the next notification or re-read counts it. */
        if (v1_oom_kills_subtree(v->dirfd, &sum) == -ENOMEM)
                return;
        counter_inc(s->env->counters, COUNTER_EVENTS_READ);
        rise = kills_rise(true, v->oom_kill, sum);
        v->oom_kill = sum;
        if (rise == 0)
                return;
        mono = now_usec(CLOCK_MONOTONIC);
        rt = now_usec(CLOCK_REALTIME);
        counter_add(s->env->counters, COUNTER_KILLS_KERNEL, rise);
        s->cb->event(s, &(const EventData) {
                .kind = EVENT_KILLED, .cgroup = s->cgroup, .realtime_us = rt, .monotonic_us = mono,
                .killed = { .by = "kernel", .reason = "oom_kill" },
        }, rise);
}

/* Arm the next re-read, or drop the timer when none is due. */
static void kills_v1_arm(Source *s) {
        KillsV1 *v = s->kills_v1;
        struct timeval tv;

        if (v->next_recheck >= ELEMENTSOF(recheck_usec)) {
                event_free_and_null(&v->recheck);
                return;
        }
        tv = usec_to_timeval(recheck_usec[v->next_recheck] -
                             (v->next_recheck > 0 ? recheck_usec[v->next_recheck - 1] : 0));
        if (!v->recheck || evtimer_add(v->recheck, &tv) < 0)
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to arm the re-read of the kills in %s, a kill counted late may be missed: %m",
                                s->cgroup);
}

static void on_recheck(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;

        s->kills_v1->next_recheck++;
        kills_v1_arm(s); /* first: the report may free the source */
        kills_v1_check(s);
}

static void on_oom(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        KillsV1 *v = s->kills_v1;
        struct stat st;
        uint64_t n;

        if (read(v->efd, &n, sizeof(n)) != sizeof(n))
                return;
        /* The eventfd is signalled once more when the cgroup goes: the cgroup2 watch ends the stream. */
        if (fstat(v->dirfd, &st) < 0 || st.st_nlink == 0 || !cgroup_exists_as(s->env->v1, s->cgroup, v->ino)) {
                event_del(v->ev);
                return;
        }
        if (!v->recheck)
                v->recheck = evtimer_new(s->env->base, on_recheck, s);
        v->next_recheck = 0;
        kills_v1_arm(s);
        kills_v1_check(s);
}

/* Register the eventfd on the memory.oom_control of @v's cgroup. */
static int kills_v1_register(Source *s, KillsV1 *v) {
        _cleanup_close_ int oomfd = -1, ctlfd = -1, efd = -1;
        char buf[64];
        int n;

        oomfd = openat(v->dirfd, "memory.oom_control", O_RDONLY | O_CLOEXEC);
        ctlfd = openat(v->dirfd, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
        efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (oomfd < 0 || ctlfd < 0 || efd < 0)
                return -errno;
        n = snprintf(buf, sizeof(buf), "%d %d", efd, oomfd);
        if (write(ctlfd, buf, (size_t) n + 1) < 0)
                return -errno;
        v->ev = event_new(s->env->base, efd, EV_READ | EV_PERSIST, on_oom, s);
        if (!v->ev || event_add(v->ev, NULL) < 0)
                return -ENOMEM;
        v->efd = TAKE_FD(efd);
        return 0;
}

int kills_v1_open(Source *s) {
        KillsV1 *v;
        struct stat st;
        int k;

        if (!s->env->v1 || s->env->v1->fd < 0 || streq(s->cgroup, "/"))
                return 0;
        v = calloc(1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        *v = (KillsV1) { .dirfd = hierarchy_open_cgroup(s->env->v1, s->cgroup), .efd = -1 };
        s->kills_v1 = v;
        if (v->dirfd < 0) {
                v->why = v->dirfd;
                return 0;
        }
        k = fstat(v->dirfd, &st) < 0 ? 0 : v1_oom_kills_subtree(v->dirfd, &v->oom_kill);
        if (k < 0)
                return k;
        if (k == 0) {
                v->why = -ENODATA;
                return 0;
        }
        v->ino = st.st_ino;
        k = kills_v1_register(s, v);
        if (k == -ENOMEM)
                return k;
        v->why = k;
        if (k < 0)
                log_debug_errno(k, "Cannot hear kills in %s of the cgroup v1 memory hierarchy: %m", s->cgroup);
        return 0;
}

void kills_v1_close(Source *s) {
        KillsV1 *v = s->kills_v1;

        if (!v)
                return;
        event_free_and_null(&v->ev);
        event_free_and_null(&v->recheck);
        safe_close(v->efd);
        safe_close(v->dirfd);
        free(v);
        s->kills_v1 = NULL;
}

bool kills_v1_active(const Source *s) {
        return s->kills_v1 && s->kills_v1->why == 0;
}

int kills_v1_why(const Source *s) {
        if (!s->env->v1 || s->env->v1->fd < 0)
                return -EOPNOTSUPP;
        return s->kills_v1 ? s->kills_v1->why : -ENOENT;
}
