/* SPDX-License-Identifier: MIT */
/*
 * The thread that writes memory.reclaim, so that the event loop never
 * waits for the kernel's reclaim (a write of a large step can take tens to
 * hundreds of milliseconds: it returns only once the pages are reclaimed
 * or the kernel gave up).
 *
 * The loop submits jobs (cgroup, bytes) into a bounded queue; one thread
 * takes them in order, writes, and puts the result on a done queue; an
 * eventfd wakes the loop, which hands each result to the done callback.
 * The caller keeps at most one job per cgroup in flight, so the queue
 * never holds more jobs than cgroups under control. The thread exists only
 * while the worker does, blocks every signal (they stay the main thread's),
 * and sleeps on a condition variable when idle: no wakeup without work.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct event_base;

typedef struct ReclaimWorker ReclaimWorker;

/* One write and its outcome. */
typedef struct ReclaimJob {
        uint64_t id;         /* the caller's, handed back */
        char *cgroup;        /* "/a/b" */
        uint64_t bytes;
        int result;          /* see reclaim_write() */
        uint64_t usec;       /* how long the write took */
} ReclaimJob;

/* Called on the loop for each finished job; @job is freed afterwards. */
typedef void (*ReclaimDoneFn)(const ReclaimJob *job, void *userdata);

/* The write itself, replaceable for tests: see reclaim_write(). */
typedef int (*ReclaimWriteFn)(int root_fd, const char *cgroup, uint64_t bytes);

/*
 * reclaim_write - ask the kernel to reclaim @bytes from @cgroup: write the
 * number to memory.reclaim of the cgroup below @root_fd, retrying on EINTR
 * (at most RECLAIM_WRITE_EINTR_RETRIES times).
 *
 * Returns 0 when the kernel reclaimed it all; -EAGAIN when it could not
 * reclaim that much; -ESRCH when the cgroup is gone; -EOPNOTSUPP when the
 * cgroup has no memory.reclaim (kernel before 5.19, or no memory
 * controller there); -EINTR when interrupted every time; another negative
 * errno otherwise.
 */
int reclaim_write(int root_fd, const char *cgroup, uint64_t bytes);

#define RECLAIM_WRITE_EINTR_RETRIES 3

/*
 * reclaim_worker_new - start the thread.
 * @base: the loop the results come back on
 * @root_fd: the cgroup2 root (borrowed: it must outlive the worker)
 * @capacity: the most jobs queued or in flight at once
 * @write: the write function (NULL: reclaim_write())
 * @done: called on the loop with each result
 * @ret: the worker
 *
 * Returns 0, -ENOMEM, or the negative errno of eventfd() or pthread_create().
 */
int reclaim_worker_new(struct event_base *base, int root_fd, size_t capacity, ReclaimWriteFn write,
                       ReclaimDoneFn done, void *userdata, ReclaimWorker **ret);

/*
 * reclaim_worker_free - stop the thread (waiting for a write under way to
 * return) and drop the jobs not yet done; NULL-safe, returns NULL.
 */
ReclaimWorker *reclaim_worker_free(ReclaimWorker *w);

/*
 * reclaim_worker_submit - queue a write of @bytes to @cgroup's memory.reclaim.
 * Returns 0, -EBUSY when @capacity jobs are queued or in flight, or -ENOMEM.
 */
int reclaim_worker_submit(ReclaimWorker *w, uint64_t id, const char *cgroup, uint64_t bytes);
