/* SPDX-License-Identifier: MIT */
/*
 * The kills source: who killed what in a cgroup's subtree.
 *
 * The kernel's kills are the oom_kill counter of memory.events, which is
 * hierarchical: a cgroup's counter counts the OOM kills in its whole
 * subtree. On a cgroup, its memory.events is watched like the
 * memory_events source does (source_watch_cgroup()); a cgroup without it
 * (no memory controller there) still hears systemd-oomd and still ends
 * with "removed". The root of cgroup2 has no memory.events: for "/" the
 * memory.events of every top-level cgroup is watched instead, through an
 * inotify watch on each top-level directory (the kernel notifies the
 * directory of a changed memory.events too, and a watch on the directory
 * catches a file made after the directory) and one on the root for
 * top-level cgroups that come and go. At most KILLS_TOPLEVEL_MAX
 * top-level cgroups are watched. A kill in the root cgroup itself (where
 * only kernel threads and the odd unconfined process live) is not seen.
 *
 * A "killed" event by the kernel names the cgroup whose counter rose (for
 * "/": the top-level one), reason "oom_kill", and counts the rise. On a
 * cgroup that is in the cgroup v1 memory hierarchy too, its kills there
 * come from source-kills-v1.c; systemd-oomd's from oomd-watch.c. The
 * "subscribed" state names the killers that can report (kill_sources) and
 * why the others cannot (unavailable_kill_sources).
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "cgroupfs.h"
#include "kills.h"
#include "log.h"
#include "oomd-watch.h"
#include "source-common.h"
#include "source-kills-v1.h"

/* Top-level cgroups watched for "/"; a system has a handful (init.scope, system.slice, user.slice, ...). */
#define KILLS_TOPLEVEL_MAX 256

typedef struct KillsTop {
        int wd;
        bool known;                 /* oom_kill was read at least once */
        uint64_t oom_kill;
        char name[];
} KillsTop;

struct KillsRoot {
        int root_wd;
        bool warned;                /* the limit was logged */
        size_t n;
        KillsTop *tops[KILLS_TOPLEVEL_MAX];
};

/* One "killed" event by the kernel for @count kills in @cgroup. */
static void kills_report(Source *s, const char *cgroup, uint64_t count) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), rt = now_usec(CLOCK_REALTIME);

        counter_add(s->env->counters, COUNTER_KILLS_KERNEL, count);
        s->cb->event(s, &(const EventData) {
                .kind = EVENT_KILLED, .cgroup = cgroup, .realtime_us = rt, .monotonic_us = mono,
                .killed = { .by = "kernel", .reason = "oom_kill" },
        }, count);
}

/* Re-read the oom_kill of top-level cgroup @t and report a rise. */
static void kills_top_check(Source *s, KillsTop *t) {
        char path[NAME_MAX + sizeof("/memory.events")];
        _cleanup_close_ int fd = -1;
        MemoryEvents me;
        uint64_t rise;

        snprintf(path, sizeof(path), "%s/memory.events", t->name);
        fd = openat(s->env->v2->fd, path, O_RDONLY | O_CLOEXEC);
        /* Not (yet) there, or rewritten by hand half-way: wait for the next change. */
        if (fd < 0 || memory_events_read(fd, &me) < 0 || !(me.present & (1u << MEMORY_EVENT_OOM_KILL)))
                return;
        counter_inc(s->env->counters, COUNTER_EVENTS_READ);
        rise = kills_rise(t->known, t->oom_kill, me.value[MEMORY_EVENT_OOM_KILL]);
        t->known = true;
        t->oom_kill = me.value[MEMORY_EVENT_OOM_KILL];
        if (rise > 0) {
                char cgroup[NAME_MAX + 2];

                snprintf(cgroup, sizeof(cgroup), "/%s", t->name);
                kills_report(s, cgroup, rise);
        }
}

static KillsTop *kills_top_find(KillsRoot *r, int wd, const char *name) {
        for (size_t i = 0; i < r->n; i++)
                if (name ? streq(r->tops[i]->name, name) : r->tops[i]->wd == wd)
                        return r->tops[i];
        return NULL;
}

static void kills_top_drop(Source *s, KillsTop *t, bool rm_watch) {
        KillsRoot *r = s->kills_root;

        for (size_t i = 0; i < r->n; i++)
                if (r->tops[i] == t) {
                        r->tops[i] = r->tops[--r->n];
                        break;
                }
        if (rm_watch)
                (void) inotify_rm_watch(s->fd, t->wd);
        free(t);
}

/* Watch top-level cgroup @name (once); its current oom_kill is the base. -ENOMEM only. */
static int kills_top_add(Source *s, const char *name) {
        KillsRoot *r = s->kills_root;
        char path[64 + NAME_MAX];
        KillsTop *t;
        int wd;

        if (kills_top_find(r, -1, name))
                return 0;
        if (r->n >= KILLS_TOPLEVEL_MAX) {
                if (!r->warned)
                        log_warning("More than %d top-level cgroups: kernel kills in %s and any further ones are not reported on /.",
                                    KILLS_TOPLEVEL_MAX, name);
                r->warned = true;
                return 0;
        }
        /* inotify takes paths; the root's fd is pinned through /proc/self/fd. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", s->env->v2->fd, name);
        wd = inotify_add_watch(s->fd, path, IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd < 0) {
                /* Gone already, or out of inotify watches. */
                log_debug_errno(errno, "Cannot watch top-level cgroup %s for kills: %m", name);
                return 0;
        }
        t = malloc(sizeof(*t) + strlen(name) + 1);
        if (!t) {
                (void) inotify_rm_watch(s->fd, wd);
                return -ENOMEM;
        }
        *t = (KillsTop) { .wd = wd };
        strcpy(t->name, name);
        r->tops[r->n++] = t;
        kills_top_check(s, t);
        log_debug("Watching top-level cgroup /%s for kills.", name);
        return 0;
}

static int kills_root_entry(int dfd _unused_, const char *name, uint64_t ino _unused_, void *userdata) {
        return name[0] == '.' ? 0 : kills_top_add(userdata, name);
}

/* Watch every top-level cgroup there is. */
static int kills_root_scan(Source *s) {
        _cleanup_close_ int fd = openat(s->env->v2->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char buf[8192] __attribute__((aligned(8)));

        if (fd < 0)
                return -errno;
        return cgroupfs_list(fd, buf, sizeof(buf), NULL, kills_root_entry, s);
}

/* One inotify event of the "/" watch. */
static void kills_root_event(Source *s, const struct inotify_event *ev) {
        KillsRoot *r = s->kills_root;
        KillsTop *t;

        if (ev->mask & IN_Q_OVERFLOW) {
                /* Lost events: re-read every counter, look for new cgroups. */
                log_debug("Kills on /: inotify events were lost, re-reading every top-level cgroup.");
                for (size_t i = 0; i < r->n; i++)
                        kills_top_check(s, r->tops[i]);
                (void) kills_root_scan(s);
        } else if (ev->wd == r->root_wd) {
                if (!(ev->mask & IN_ISDIR) || ev->len == 0)
                        return;
                if (ev->mask & (IN_CREATE | IN_MOVED_TO))
                        (void) kills_top_add(s, ev->name);
                else if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) && (t = kills_top_find(r, -1, ev->name)))
                        kills_top_drop(s, t, true);
        } else if ((t = kills_top_find(r, ev->wd, NULL))) {
                if (ev->mask & IN_IGNORED)
                        kills_top_drop(s, t, false); /* the kernel dropped the watch */
                else if (ev->len > 0 && streq(ev->name, "memory.events"))
                        kills_top_check(s, t);
        }
}

static void kills_root_on_ready(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n;

        while ((n = read(s->fd, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;

                        kills_root_event(s, ev);
                        p += sizeof(*ev) + ev->len;
                }
}

/* "/": the top-level cgroups of the cgroup2 hierarchy, if there is one. */
static int kills_open_root(Source *s) {
        SourceEnv *env = s->env;
        _cleanup_close_ int ifd = -1;
        int k;

        if (!env->v2 || env->v2->fd < 0)
                return 0; /* no cgroup2: systemd-oomd only (which needs cgroup2 too) */
        s->kills_root = calloc(1, sizeof(KillsRoot));
        ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (!s->kills_root || ifd < 0)
                return s->kills_root ? -errno : -ENOMEM;
        s->kills_root->root_wd = inotify_add_watch(ifd, env->v2->path,
                                                   IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR);
        if (s->kills_root->root_wd < 0)
                return -errno;
        s->fd = TAKE_FD(ifd);
        k = kills_root_scan(s);
        if (k < 0)
                return k;
        s->ev = event_new(env->base, s->fd, EV_READ | EV_PERSIST, kills_root_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        return 0;
}

/* A cgroup: its oom_kill, and whether the cgroup is still there. */
static void kills_on_ready(evutil_socket_t fd, short what, void *userdata) {
        Source *s = userdata;
        MemoryEvents now;
        uint64_t rise;

        if (!source_drain_check(s, s->env->v2) || !s->kernel_kills)
                return;
        if (memory_events_read(s->aux_fd, &now) < 0 || !(now.present & (1u << MEMORY_EVENT_OOM_KILL)))
                return;
        counter_inc(s->env->counters, COUNTER_EVENTS_READ);
        rise = kills_rise(true, s->last_events.value[MEMORY_EVENT_OOM_KILL], now.value[MEMORY_EVENT_OOM_KILL]);
        s->last_events = now;
        if (rise > 0)
                kills_report(s, s->cgroup, rise);
}

static int kills_open_cgroup(Source *s, int given, SourceFailure *e) {
        _cleanup_close_ int dirfd = -1, evfd = -1, ifd = -1;
        int none[1], k;

        k = source_open_files(s, s->env->v2, given, NULL, 0, none, &dirfd, e);
        if (k < 0)
                return k;
        /* No memory.events (no memory controller): systemd-oomd only. */
        evfd = openat(dirfd, "memory.events", O_RDONLY | O_CLOEXEC);
        if (evfd >= 0 && memory_events_read(evfd, &s->last_events) == -ENOMEM)
                return -ENOMEM;
        s->kernel_kills = evfd >= 0 && (s->last_events.present & (1u << MEMORY_EVENT_OOM_KILL));
        ifd = source_watch_cgroup(dirfd, s->kernel_kills ? "memory.events" : NULL);
        if (ifd < 0)
                return ifd;
        s->ev = event_new(s->env->base, ifd, EV_READ | EV_PERSIST, kills_on_ready, s);
        if (!s->ev || event_add(s->ev, NULL) < 0)
                return -ENOMEM;
        s->fd = TAKE_FD(ifd);
        if (s->kernel_kills)
                s->aux_fd = TAKE_FD(evfd);
        /* Without memory.events, the same cgroup in the v1 memory hierarchy may tell. */
        return s->kernel_kills ? 0 : kills_v1_open(s);
}

static void kills_root_free(Source *s) {
        KillsRoot *r = s->kills_root;

        for (size_t i = 0; r && i < r->n; i++)
                free(r->tops[i]);
        free(r);
        s->kills_root = NULL;
}

static int kills_open(Source *s, int dirfd, SourceFailure *e) {
        int k = streq(s->cgroup, "/") ? kills_open_root(s) : kills_open_cgroup(s, dirfd, e);

        /* Last: a source in the oomd watch is one that opened, which close() takes out. */
        if (k >= 0)
                k = oomd_watch_add(s->env->oomd, s);
        if (k < 0) {
                kills_root_free(s); /* the fds and the event go with source_close() */
                kills_v1_close(s);
        }
        return k;
}

static void kills_close(Source *s) {
        oomd_watch_remove(s->env->oomd, s);
        kills_root_free(s);
        kills_v1_close(s);
}

static bool kills_kernel_active(const Source *s) {
        if (!s->kills_root)
                return s->kernel_kills || kills_v1_active(s);
        for (size_t i = 0; i < s->kills_root->n; i++)
                if (s->kills_root->tops[i]->known)
                        return true;
        return false;
}

/* What the v1 memory hierarchy adds to why the kernel cannot report on @s. */
static void kills_v1_reason(const Source *s, char *buf, size_t size) {
        const char *v1 = s->env->v1->path;
        int why = kills_v1_why(s);

        if (streq(s->cgroup, "/"))
                snprintf(buf, size, "; in the cgroup v1 memory hierarchy (%s) the kernel tells of an OOM only the "
                         "cgroup whose memory limit was reached and those below it: subscribe to that cgroup", v1);
        else if (why == -ENOENT)
                snprintf(buf, size, ", and it is not in the cgroup v1 memory hierarchy (%s)", v1);
        else if (why == -ENODATA)
                snprintf(buf, size, ", and its memory.oom_control in the cgroup v1 memory hierarchy (%s) has no "
                         "oom_kill counter (Linux before 4.13)", v1);
        else
                snprintf(buf, size, ", and its memory.oom_control in the cgroup v1 memory hierarchy (%s) cannot "
                         "be watched: %s", v1, strerror(-why));
}

/* Why the kernel's kills cannot be reported on @s, in words. */
static const char *kills_kernel_reason(const Source *s, char *buf, size_t size) {
        const Hierarchy *v2 = s->env->v2, *v1 = s->env->v1;
        int n;

        if (!v2 || v2->fd < 0)
                n = snprintf(buf, size, "there is no cgroup2 hierarchy");
        else if (streq(s->cgroup, "/"))
                n = snprintf(buf, size, "no top-level cgroup of the cgroup2 hierarchy (%s) has memory.events: the "
                             "memory controller is not enabled there", v2->path);
        else
                n = snprintf(buf, size, "the cgroup has no memory.events in the cgroup2 hierarchy (%s): the memory "
                             "controller is not enabled for it", v2->path);
        if (n > 0 && (size_t) n < size && v1 && v1->fd >= 0)
                kills_v1_reason(s, buf + n, size - (size_t) n);
        return buf;
}

static int kills_state(Source *s, SubscribedState *ret) {
        ret->has_kills = true;
        ret->kernel_kills = kills_kernel_active(s);
        if (!ret->kernel_kills)
                (void) kills_kernel_reason(s, ret->kernel_reason, sizeof(ret->kernel_reason));
        ret->oomd_kills = oomd_watch_active(s->env->oomd);
        if (!ret->oomd_kills)
                (void) oomd_watch_describe_inactive(s->env->oomd, ret->oomd_reason, sizeof(ret->oomd_reason));
        return 0;
}

/* Kills while nobody watched: counted from the oom_kill a previous process last read. */
static void kills_restore(Source *s, const SnapshotRegistration *saved) {
        KillsRoot *r = s->kills_root;

        if (!r) {
                if (s->kernel_kills && (saved->last_events.present & (1u << MEMORY_EVENT_OOM_KILL))) {
                        s->last_events.value[MEMORY_EVENT_OOM_KILL] = saved->last_events.value[MEMORY_EVENT_OOM_KILL];
                        event_active(s->ev, EV_READ, 0);
                }
                return;
        }
        for (size_t i = 0; i < saved->n_tops; i++) {
                KillsTop *t = kills_top_find(r, -1, saved->tops[i].name);

                if (!t || !t->known)
                        continue;
                t->oom_kill = saved->tops[i].oom_kill;
                kills_top_check(s, t);
        }
}

static int kills_export(const Source *s, SnapshotRegistration *ret) {
        const KillsRoot *r = s->kills_root;

        if (!r || r->n == 0)
                return 0;
        ret->tops = calloc(r->n, sizeof(*ret->tops));
        if (!ret->tops)
                return -ENOMEM;
        for (size_t i = 0; i < r->n; i++) {
                if (!r->tops[i]->known)
                        continue;
                ret->tops[ret->n_tops].name = strdup(r->tops[i]->name);
                if (!ret->tops[ret->n_tops].name)
                        return -ENOMEM;
                ret->tops[ret->n_tops++].oom_kill = r->tops[i]->oom_kill;
        }
        return 0;
}

const SourceOps source_kills_ops = {
        .open = kills_open,
        .close = kills_close,
        .state = kills_state,
        .restore = kills_restore,
        .export = kills_export,
};
