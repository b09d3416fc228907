/* SPDX-License-Identifier: MIT */
/*
 * PSI triggers: /proc/pressure/RESOURCE for the system, RESOURCE.pressure
 * in a cgroup2 directory otherwise, RESOURCE being memory, cpu or io. The trigger text is written with its NUL;
 * the kernel then raises POLLPRI when the threshold is crossed within the
 * window, and POLLERR when the cgroup goes away. libevent cannot wait for
 * POLLPRI, so each trigger sits in a private epoll set whose fd the loop
 * watches for readability.
 *
 * The kernel's PSI poll is one-shot: the poll that reports POLLPRI also
 * clears it. When the loop's epoll checks our epoll set, that check runs the
 * PSI poll and consumes the POLLPRI, so by the time we look into our set it
 * is usually empty. The wakeup itself is therefore the notification; only
 * POLLERR, which the kernel keeps reporting, is looked for explicitly.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "event-util.h"
#include "log.h"
#include "source-common.h"

/* After a trigger's error, how often and how long to look again while the cgroup changes. */
#define PSI_SETTLE_USEC (50 * USEC_PER_MSEC)
#define PSI_SETTLE_TRIES 40

typedef enum PsiCgroupState {
        PSI_CGROUP_GONE,      /* the directory, or cgroup.pressure (removed before it), is gone */
        PSI_CGROUP_DISABLED,  /* cgroup.pressure reads 0 */
        PSI_CGROUP_CHANGING,  /* the pressure file is gone, cgroup.pressure still 1 */
        PSI_CGROUP_THERE,     /* all there, PSI on */
} PsiCgroupState;

/*
 * The cgroup of @s after its trigger reported an error. The kernel removes a cgroup's pressure files,
 * then cgroup.pressure, then the directory; and hides the pressure files of a cgroup whose
 * cgroup.pressure is set to 0 before that file reads 0. Between those steps, the state is CHANGING.
 */
static PsiCgroupState psi_cgroup_state(Source *s) {
        _cleanup_close_ int dirfd = -1, fd = -1;
        _cleanup_free_ char *on = NULL;
        struct stat st;

        dirfd = hierarchy_open_cgroup(s->env->v2, s->cgroup);
        if (dirfd < 0 || fstat(dirfd, &st) < 0 || st.st_ino != s->dir_ino)
                return PSI_CGROUP_GONE;
        fd = openat(dirfd, "cgroup.pressure", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return PSI_CGROUP_GONE;
        if (read_full_fd(fd, 16, &on, NULL) >= 0 && on[0] == '0')
                return PSI_CGROUP_DISABLED;
        if (fstatat(dirfd, resource_pressure_file(s->resource), &st, 0) < 0)
                return PSI_CGROUP_CHANGING;
        return PSI_CGROUP_THERE;
}

/* Decide why the trigger of @s failed once its cgroup settled, or look again a moment later. */
static void psi_settle(evutil_socket_t fd, short what, void *userdata) {
        static const struct timeval tv = { .tv_usec = PSI_SETTLE_USEC };
        Source *s = userdata;
        PsiCgroupState state = psi_cgroup_state(s);

        if (state == PSI_CGROUP_CHANGING && s->settle_tries++ < PSI_SETTLE_TRIES && s->holdoff &&
            evtimer_add(s->holdoff, &tv) == 0)
                return;
        /* The registration says it once: the cgroup is gone, or why its streams end while it stays. */
        s->ended_why = state == PSI_CGROUP_DISABLED ? "PSI was disabled for it (cgroup.pressure=0)" :
                       state == PSI_CGROUP_CHANGING ? "its pressure file went away while the cgroup stays" :
                       state == PSI_CGROUP_THERE ? "the kernel reports an error on the trigger while the "
                                                   "cgroup and its pressure file are there" : NULL;
        s->cb->removed(s);
}

static void psi_on_ready(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        struct epoll_event ev;
        int n;

        n = epoll_wait(s->aux_fd, &ev, 1, 0);
        if (n > 0 && (ev.events & EPOLLERR)) {
                if (streq(s->cgroup, "/")) {
                        s->ended_why = "the kernel reports an error on the trigger of the whole system";
                        s->cb->removed(s);
                        return;
                }
                /* The error stays: watch no more, and see what became of the cgroup. */
                (void) event_del(s->ev);
                if (!s->holdoff)
                        s->holdoff = evtimer_new(s->env->base, psi_settle, s);
                psi_settle(-1, 0, s);
                return;
        }
        source_notify(s, 1);
}

static void psi_close(Source *s) {
        event_free_and_null(&s->holdoff);
}

static int psi_write_trigger(int fd, const PsiTrigger *t) {
        char buf[PSI_TRIGGER_FORMAT_MAX];
        int n = psi_trigger_format(t, PSI_TRIGGER_FORMAT_KERNEL, buf, sizeof(buf));

        if (n < 0)
                return n;
        /* The kernel wants the trailing NUL as part of the write. */
        if (write(fd, buf, (size_t) n + 1) < 0)
                return -errno;
        return 0;
}

static int psi_open(Source *s, int dirfd, SourceFailure *e) {
        SourceEnv *env = s->env;
        _cleanup_close_ int fd = -1, epfd = -1;
        struct epoll_event ev = { .events = EPOLLPRI };
        const char *file = resource_pressure_file(s->resource);
        struct statfs sfs;
        char reason[64];
        int k;

        if (!file)
                return -EINVAL;
        if (streq(s->cgroup, "/")) {
                file = resource_proc_pressure_file(s->resource);
                fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0)
                        return source_failure_open(e, -errno, "psi", file);
        } else {
                k = source_open_files(s, env->v2, dirfd, &(const SourceFile) { file, O_RDWR | O_NONBLOCK }, 1, &fd, NULL,
                                      e);
                if (k < 0)
                        return k;
                if (fstatfs(fd, &sfs) < 0)
                        return -errno;
                snprintf(reason, sizeof(reason), "%s is not a kernel cgroup2 file", file);
                if (sfs.f_type != CGROUP2_SUPER_MAGIC)
                        return source_failure_unavailable(e, -EOPNOTSUPP, "psi", reason);
        }

        k = psi_write_trigger(fd, &s->requested);
        s->used = s->requested;
        if (k == -EINVAL) {
                PsiTrigger rounded;

                /* Without CAP_SYS_RESOURCE the kernel only accepts windows that are
                 * multiples of 2 s: round up, scale the threshold, and say so. */
                if (psi_trigger_round_unprivileged(&s->requested, &rounded)) {
                        k = psi_write_trigger(fd, &rounded);
                        if (k >= 0) {
                                s->used = rounded;
                                s->adjusted = true;
                                if (!env->psi_unprivileged)
                                        log_notice("The kernel accepts only PSI windows that are multiples of 2 s from this process (no CAP_SYS_RESOURCE); triggers are rounded up.");
                                env->psi_unprivileged = true;
                        }
                }
        }
        if (k < 0) {
                char text[PSI_TRIGGER_FORMAT_MAX], what[PSI_TRIGGER_FORMAT_MAX + 32];

                (void) psi_trigger_format(&s->requested, PSI_TRIGGER_FORMAT_CONFIG, text, sizeof(text));
                snprintf(what, sizeof(what), "the PSI trigger \"%s\"", text);
                return source_failure_open(e, k, "psi", what);
        }

        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
                return -errno;
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        s->ev = event_new(env->base, epfd, EV_READ | EV_PERSIST, psi_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        s->fd = TAKE_FD(fd);
        s->aux_fd = TAKE_FD(epfd);
        return 0;
}

/*
 * A trigger a previous process wrote. One that fired while no process
 * watched still has its event pending; the first poll of the file
 * reports and clears it, and that includes the one epoll makes when the
 * file joins a set. So the file is polled here first, and a pending event
 * becomes a wakeup of the new watch. A file whose cgroup went away polls
 * POLLERR, which the watch reports as for a registration of our own.
 */
static int psi_adopt(Source *s, int fd, SourceFailure *e) {
        _cleanup_close_ int tfd = fd, epfd = -1;
        struct epoll_event ev = { .events = EPOLLPRI };
        struct pollfd pfd = { .fd = fd, .events = POLLPRI };
        struct statfs sfs;
        bool pending;

        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != CGROUP2_SUPER_MAGIC && sfs.f_type != PROC_SUPER_MAGIC)
                return source_failure_unavailable(e, -EBADF, "psi", "the inherited fd is not a pressure file");
        pending = poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLPRI) && !(pfd.revents & POLLERR);

        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
                return -errno;
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &ev) < 0)
                return -errno;
        s->ev = event_new(s->env->base, epfd, EV_READ | EV_PERSIST, psi_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        log_debug("Took over the PSI trigger on %s%s.", s->cgroup, pending ? ", which fired meanwhile" : "");
        if (pending)
                event_active(s->ev, EV_READ, 0);
        s->fd = TAKE_FD(tfd);
        s->aux_fd = TAKE_FD(epfd);
        return 0;
}

static int psi_state(Source *s, SubscribedState *ret) {
        int k = psi_stats_read(s->fd, &ret->psi);

        if (k == -ENOMEM)
                return k;
        ret->has_psi = k >= 0; /* else nothing to show */
        return 0;
}

const SourceOps source_psi_ops = {
        .open = psi_open,
        .close = psi_close,
        .state = psi_state,
        .adopt = psi_adopt,
};
