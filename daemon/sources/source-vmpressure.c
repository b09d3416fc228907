/* SPDX-License-Identifier: MIT */
/*
 * cgroup v1 vmpressure: an eventfd registered through cgroup.event_control
 * with the cgroup's memory.pressure_level, a level and optionally a mode.
 * The eventfd counter is the number of notifications since the last read.
 * When the cgroup is removed the kernel signals the eventfd once more, so
 * every wakeup first checks that the cgroup still exists.
 */
#include <fcntl.h>
#include <sys/eventfd.h>

#include "event-util.h"
#include "log.h"
#include "source-common.h"

/*
 * vmpressure fires for every reclaim window (a few hundred times a second
 * under a steady load). After each event the eventfd is left alone for this
 * long; it keeps counting meanwhile, so the next read returns every
 * notification of the pause as one event's count. The first notification
 * is never delayed, and the timer exists only while events flow.
 */
#define VMPRESSURE_HOLDOFF_USEC (100 * USEC_PER_MSEC)

static void vmpressure_resume(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        struct timeval tv = usec_to_timeval(VMPRESSURE_HOLDOFF_USEC);

        /* Listen again; if that fails, try again after another pause rather than go deaf. */
        if (event_add(s->ev, NULL) < 0 && evtimer_add(s->holdoff, &tv) < 0)
                log_ratelimited(LOG_ERR, ENOMEM, NULL, 10, 1,
                                "Failed to resume the vmpressure registration on %s, it stays silent: %m", s->cgroup);
}

static void vmpressure_on_ready(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        SourceEnv *env = s->env;
        uint64_t count;

        if (read(s->fd, &count, sizeof(count)) != sizeof(count))
                return;
        if (!cgroup_exists_as(env->v1, s->cgroup, s->dir_ino)) {
                s->cb->removed(s);
                return;
        }
        source_notify(s, count);

        if (!s->holdoff)
                s->holdoff = evtimer_new(env->base, vmpressure_resume, s);
        if (s->holdoff) {
                struct timeval tv = usec_to_timeval(VMPRESSURE_HOLDOFF_USEC);

                /* Pause only when the timer that ends the pause is armed. */
                if (evtimer_add(s->holdoff, &tv) == 0)
                        event_del(s->ev);
        }
}

static void vmpressure_close(Source *s) {
        event_free_and_null(&s->holdoff);
}

static int vmpressure_open(Source *s, int dirfd, SourceFailure *e) {
        SourceEnv *env = s->env;
        static const SourceFile files[] = {
                { "memory.pressure_level", O_RDONLY },
                { "cgroup.event_control", O_WRONLY },
        };
        _cleanup_close_ int levelfd = -1, ctlfd = -1, efd = -1;
        int fds[ELEMENTSOF(files)];
        char buf[96];
        int n;

        n = source_open_files(s, env->v1, dirfd, files, ELEMENTSOF(files), fds, NULL, e);
        if (n < 0)
                return n;
        levelfd = fds[0];
        ctlfd = fds[1];

        efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (efd < 0)
                return -errno;

        if (s->vm_mode == VMPRESSURE_MODE_DEFAULT)
                n = snprintf(buf, sizeof(buf), "%d %d %s", efd, levelfd, level_to_string(s->vm_level));
        else
                n = snprintf(buf, sizeof(buf), "%d %d %s,%s", efd, levelfd, level_to_string(s->vm_level),
                             vmpressure_mode_to_string(s->vm_mode));
        if (write(ctlfd, buf, (size_t) n + 1) < 0)
                return source_failure_open(e, -errno, "vmpressure", "the vmpressure registration");

        /* The kernel keeps what it needs; only the eventfd stays open. */
        s->ev = event_new(env->base, efd, EV_READ | EV_PERSIST, vmpressure_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        s->fd = TAKE_FD(efd);
        return 0;
}

/*
 * The eventfd a previous process registered: the kernel kept counting
 * while nobody read it, so the first read reports every notification of
 * the gap as one event's count; a cgroup removed meanwhile signalled it
 * once more, which the first wakeup finds.
 */
static int vmpressure_adopt(Source *s, int fd, SourceFailure *e) {
        _cleanup_close_ int efd = fd;
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0)
                return -errno;
        (void) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        s->ev = event_new(s->env->base, efd, EV_READ | EV_PERSIST, vmpressure_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        s->fd = TAKE_FD(efd);
        return 0;
}

const SourceOps source_vmpressure_ops = {
        .open = vmpressure_open,
        .close = vmpressure_close,
        .state = NULL,
        .adopt = vmpressure_adopt,
};
