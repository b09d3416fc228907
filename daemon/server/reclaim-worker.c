/* SPDX-License-Identifier: MIT */
/* The memory.reclaim writer thread and its two queues: see reclaim-worker.h. */
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/eventfd.h>

#include "cgroup.h"
#include "event-util.h"
#include "reclaim-worker.h"
#include "util.h"

/* A ring of jobs. */
typedef struct JobRing {
        ReclaimJob *slots;
        size_t head, n, cap;
} JobRing;

struct ReclaimWorker {
        int root_fd;
        ReclaimWriteFn write;
        ReclaimDoneFn done;
        void *userdata;

        pthread_mutex_t lock;
        pthread_cond_t wake;
        JobRing pending;        /* submitted, not yet taken */
        JobRing finished;       /* written, not yet handed to @done */
        size_t outstanding;     /* submitted and not yet handed back; at most capacity */
        size_t capacity;
        bool stop;

        pthread_t thread;
        bool thread_started;
        int efd;
        struct event *ev;
};

static void ring_push(JobRing *r, const ReclaimJob *j) {
        r->slots[(r->head + r->n) % r->cap] = *j;
        r->n++;
}

static bool ring_pop(JobRing *r, ReclaimJob *ret) {
        if (r->n == 0)
                return false;
        *ret = r->slots[r->head];
        r->head = (r->head + 1) % r->cap;
        r->n--;
        return true;
}

static void ring_drain(JobRing *r) {
        ReclaimJob j;

        while (ring_pop(r, &j))
                free(j.cgroup);
        free(r->slots);
        r->slots = NULL;
}

/*
 * Open memory.reclaim of @cgroup below @root_fd with one openat(); only
 * when that finds nothing is the directory looked at, to tell a cgroup
 * that is gone from one without the file.
 */
static int reclaim_open(int root_fd, const char *cgroup) {
        char path[CGROUP_PATH_MAX + sizeof("/memory.reclaim")];
        struct stat st;
        int fd;

        if (snprintf(path, sizeof(path), "%s/memory.reclaim", cgroup[1] ? cgroup + 1 : ".") >= (int) sizeof(path))
                return -ENAMETOOLONG;
        /* O_NONBLOCK changes nothing on cgroupfs; it keeps a FIFO in a test tree from blocking. */
        fd = openat(root_fd, path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0)
                return fd;
        if (errno == ENODEV || errno == ENOTDIR)
                return -ESRCH; /* removed, or no longer a directory */
        if (errno != ENOENT)
                return -errno;
        if (fstatat(root_fd, cgroup[1] ? cgroup + 1 : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -ESRCH;
        return -EOPNOTSUPP;
}

int reclaim_write(int root_fd, const char *cgroup, uint64_t bytes) {
        _cleanup_close_ int fd = -1;
        char buf[32];
        int len;

        fd = reclaim_open(root_fd, cgroup);
        if (fd < 0)
                return fd;
        len = snprintf(buf, sizeof(buf), "%" PRIu64, bytes);
        for (unsigned i = 0;; i++) {
                ssize_t n = write(fd, buf, (size_t) len);

                if (n == len)
                        return 0;
                if (n >= 0)
                        return -EIO;
                if (errno == EINTR && i < RECLAIM_WRITE_EINTR_RETRIES)
                        continue;
                return errno == ENODEV ? -ESRCH : -errno;
        }
}

static void *worker_main(void *userdata) {
        ReclaimWorker *w = userdata;
        ReclaimJob j;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                uint64_t t0, one = 1;

                while (!w->stop && w->pending.n == 0)
                        pthread_cond_wait(&w->wake, &w->lock);
                if (w->stop)
                        break;
                (void) ring_pop(&w->pending, &j);
                pthread_mutex_unlock(&w->lock);

                t0 = now_usec(CLOCK_MONOTONIC);
                j.result = w->write(w->root_fd, j.cgroup, j.bytes);
                j.usec = now_usec(CLOCK_MONOTONIC) - t0;

                pthread_mutex_lock(&w->lock);
                /*
                 * Wake the loop only for the first result it has not seen:
                 * it drains the ring until empty under the lock, so later
                 * ones are taken in the same pass.
                 */
                if (w->finished.n == 0)
                        (void) !write(w->efd, &one, sizeof(one));
                ring_push(&w->finished, &j);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* On the loop: hand every finished job to the callback. */
static void on_finished(evutil_socket_t fd, short what, void *userdata) {
        ReclaimWorker *w = userdata;
        uint64_t count;
        ReclaimJob j;

        (void) !read(w->efd, &count, sizeof(count));
        for (;;) {
                bool got;

                pthread_mutex_lock(&w->lock);
                got = ring_pop(&w->finished, &j);
                if (got)
                        w->outstanding--;
                pthread_mutex_unlock(&w->lock);
                if (!got)
                        break;
                w->done(&j, w->userdata);
                free(j.cgroup);
        }
}

/* Start the thread with every signal blocked: they belong to the main thread's loop. */
static int worker_start_thread(ReclaimWorker *w) {
        sigset_t all, saved;
        int e;

        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        e = pthread_create(&w->thread, NULL, worker_main, w);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        if (e != 0)
                return -e;
        w->thread_started = true;
        return 0;
}

int reclaim_worker_new(struct event_base *base, int root_fd, size_t capacity, ReclaimWriteFn write,
                       ReclaimDoneFn done, void *userdata, ReclaimWorker **ret) {
        ReclaimWorker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        *w = (ReclaimWorker) {
                .root_fd = root_fd,
                .write = write ?: reclaim_write,
                .done = done,
                .userdata = userdata,
                .capacity = capacity,
                .pending.cap = capacity,
                .finished.cap = capacity,
                .efd = -1,
        };
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->pending.slots = calloc(capacity, sizeof(ReclaimJob));
        w->finished.slots = calloc(capacity, sizeof(ReclaimJob));
        if (!w->pending.slots || !w->finished.slots) {
                reclaim_worker_free(w);
                return -ENOMEM;
        }
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = -errno;
                reclaim_worker_free(w);
                return r;
        }
        w->ev = event_new(base, w->efd, EV_READ | EV_PERSIST, on_finished, w);
        if (!w->ev || event_add(w->ev, NULL) < 0) {
                reclaim_worker_free(w);
                return -ENOMEM;
        }
        r = worker_start_thread(w);
        if (r < 0) {
                reclaim_worker_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

ReclaimWorker *reclaim_worker_free(ReclaimWorker *w) {
        if (!w)
                return NULL;
        if (w->thread_started) {
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                pthread_cond_signal(&w->wake);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
        }
        event_free_and_null(&w->ev);
        safe_close(w->efd);
        ring_drain(&w->pending);
        ring_drain(&w->finished);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int reclaim_worker_submit(ReclaimWorker *w, uint64_t id, const char *cgroup, uint64_t bytes) {
        ReclaimJob j = { .id = id, .bytes = bytes };

        if (w->outstanding >= w->capacity)
                return -EBUSY;
        j.cgroup = strdup(cgroup);
        if (!j.cgroup)
                return -ENOMEM;
        pthread_mutex_lock(&w->lock);
        ring_push(&w->pending, &j);
        w->outstanding++;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        return 0;
}
