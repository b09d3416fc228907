/* SPDX-License-Identifier: MIT */
/* The /metrics cgroup walk on its own thread: see cgroup-walk.h. */
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>

#include "cgroup-walk.h"
#include "event-util.h"
#include "log.h"
#include "util.h"

struct CgroupWalk {
        int root_fd;            /* our duplicate of the cgroup2 root, or -1 */
        int v1_root_fd;         /* likewise of the v1 memory hierarchy, or -1 */
        CgroupGlobs *globs;
        size_t max;
        CgroupWeigh weigh;
        bool weighed;
        CgroupScrape scrape;    /* written by the thread, read after the join */
        struct evbuffer *text;  /* likewise: the families written from @scrape */
        int result;
        CgroupWalkWriteFn write;
        void *write_userdata;
        CgroupWalkDoneFn done;
        void *userdata;

        pthread_t thread;
        bool thread_started;
        int efd;
        struct event *ev;
};

static void *walk_main(void *userdata) {
        CgroupWalk *w = userdata;
        uint64_t one = 1;

        w->result = cgroup_scrape_hybrid(w->root_fd, w->v1_root_fd, w->globs, w->max, w->weighed ? &w->weigh : NULL,
                                         &w->scrape);
        /* Used by this thread alone until the loop has joined it. */
        w->text = evbuffer_new();
        if (w->text && w->write(w->text, &w->scrape, w->write_userdata) < 0) {
                evbuffer_free(w->text);
                w->text = NULL;
        }
        (void) !write(w->efd, &one, sizeof(one));
        return NULL;
}

void cgroup_walk_finish(CgroupWalk *w) {
        if (!w)
                return;
        pthread_join(w->thread, NULL);
        w->thread_started = false;
        w->done(&w->scrape, w->text, w->result, w->userdata);
        cgroup_walk_free(w);
}

/* On the loop: the thread wrote the eventfd as its last act. */
static void on_walk_done(evutil_socket_t fd, short what, void *userdata) {
        cgroup_walk_finish(userdata);
}

void cgroup_walk_log(const CgroupScrape *s, int result, const char *what) {
        if (result < 0)
                log_warning_errno(result, "Failed to walk the cgroup tree for %s, ignoring: %m", what);
        if (s->errors.count > 0)
                log_warning_errno(s->errors.first_error,
                                  "Failed to read %u cgroup file(s) for %s, the first %s, ignoring: %m",
                                  s->errors.count, what, s->errors.first_path);
}

/* Start the thread with every signal blocked: they belong to the main thread's loop. */
static int walk_start_thread(CgroupWalk *w) {
        sigset_t all, saved;
        int e;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        e = pthread_create(&w->thread, NULL, walk_main, w);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (e != 0)
                return -e;
        w->thread_started = true;
        return 0;
}

/* A duplicate of @fd, or -1 for -1. Returns 0 or a negative errno. */
static int dup_root(int fd, int *ret) {
        *ret = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
        return fd >= 0 && *ret < 0 ? -errno : 0;
}

int cgroup_walk_start(struct event_base *base, int root_fd, int v1_root_fd, CgroupGlobs *g, size_t max,
                      const CgroupWeigh *weigh, CgroupWalkWriteFn write, void *write_userdata, CgroupWalkDoneFn done,
                      void *userdata, CgroupWalk **ret) {
        CgroupWalk *w = calloc(1, sizeof(*w));
        int r;

        if (!w) {
                cgroup_globs_free(g);
                return -ENOMEM;
        }
        *w = (CgroupWalk) { .globs = g, .max = max, .weigh = weigh ? *weigh : (CgroupWeigh) {}, .weighed = weigh,
                            .write = write, .write_userdata = write_userdata, .done = done, .userdata = userdata,
                            .efd = -1, .root_fd = -1, .v1_root_fd = -1 };
        r = dup_root(root_fd, &w->root_fd);
        if (r >= 0)
                r = dup_root(v1_root_fd, &w->v1_root_fd);
        if (r < 0) {
                cgroup_walk_free(w);
                return r;
        }
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = -errno;
                cgroup_walk_free(w);
                return r;
        }
        w->ev = event_new(base, w->efd, EV_READ, on_walk_done, w);
        if (!w->ev || event_add(w->ev, NULL) < 0) {
                cgroup_walk_free(w);
                return -ENOMEM;
        }
        r = walk_start_thread(w);
        if (r < 0) {
                cgroup_walk_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

CgroupWalk *cgroup_walk_free(CgroupWalk *w) {
        if (!w)
                return NULL;
        if (w->thread_started)
                pthread_join(w->thread, NULL);
        event_free_and_null(&w->ev);
        safe_close(w->efd);
        safe_close(w->root_fd);
        safe_close(w->v1_root_fd);
        if (w->text)
                evbuffer_free(w->text);
        cgroup_scrape_done(&w->scrape);
        cgroup_globs_free(w->globs);
        free(w);
        return NULL;
}
