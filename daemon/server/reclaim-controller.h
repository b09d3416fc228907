/* SPDX-License-Identifier: MIT */
/*
 * Proactive reclaim ([Reclaim]): the runtime around the controller's
 * arithmetic (model/reclaim.h). Off, it holds nothing but its settings: no
 * timer, no thread, no descriptor. On (Cgroups= matches patterns), one
 * timer at Interval= re-evaluates the patterns over the cgroup2 tree
 * (cgroup-glob.h), reads each matching cgroup's memory.pressure,
 * io.pressure and memory.current, refreshes its own protection tree reader
 * (protection-tree.h) for the floor, decides a step per cgroup and hands
 * the memory.reclaim writes to the worker thread (reclaim-worker.h), at
 * most one in flight per cgroup. Cgroups that vanish or stop matching
 * leave the controller. It answers the "reclaim" list of GetStatus and the
 * pressured_reclaim_* families of /metrics, and logs a cgroup reaching its
 * floor, backing off for over a minute and recovering, not every step.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "reclaim.h"
#include "reclaim-worker.h"
#include "snapshot.h"

struct event_base;
struct evbuffer;

/* The most cgroups under control; further matches are counted and logged. */
#define RECLAIM_MAX_CGROUPS 1000

/* How long a cgroup backs off before the journal hears of it. */
#define RECLAIM_BACKOFF_LOG_USEC (60 * USEC_PER_SEC)

typedef struct ReclaimController ReclaimController;

/*
 * reclaim_controller_new - a controller for the cgroup2 hierarchy at
 * @root_path (open as @root_fd, borrowed; NULL and -1 without one),
 * computing protection recursively or not. Starts off; see
 * reclaim_controller_configure(). Returns 0 or -ENOMEM.
 */
int reclaim_controller_new(struct event_base *base, const char *root_path, int root_fd, bool recursive,
                           ReclaimController **ret);

/* reclaim_controller_free - stop the timer and the thread; NULL-safe, returns NULL. */
ReclaimController *reclaim_controller_free(ReclaimController *rc);

/*
 * reclaim_controller_configure - apply [Reclaim] of @c (at start and after
 * a reload) and the recursive-protection rule: creates or destroys the
 * timer, the thread and the reader as needed; cgroups that no longer match
 * leave at the next interval. A failure to start is logged, leaves the
 * controller off and returns the negative errno.
 */
int reclaim_controller_configure(ReclaimController *rc, const Config *c, bool recursive);

/* reclaim_controller_set_write_fn - replace the memory.reclaim write (tests); before configure. */
void reclaim_controller_set_write_fn(ReclaimController *rc, ReclaimWriteFn fn);

/* reclaim_controller_tick - run one interval now (tests; the timer calls it). */
void reclaim_controller_tick(ReclaimController *rc);

/* A CLOCK_MONOTONIC stand-in for tests, in microseconds. */
typedef uint64_t (*ReclaimClockFn)(void *userdata);

/* reclaim_controller_set_clock - read the time from @fn instead of the clock (tests; NULL: the clock). */
void reclaim_controller_set_clock(ReclaimController *rc, ReclaimClockFn fn, void *userdata);

/* reclaim_controller_in_flight - writes queued or under way whose result has not come back. */
size_t reclaim_controller_in_flight(const ReclaimController *rc);

/* reclaim_controller_active - whether the timer exists. */
bool reclaim_controller_active(const ReclaimController *rc);

/*
 * reclaim_controller_status_json - GetStatus's "reclaim": one ReclaimEntry
 * per cgroup, as a caller whose cgroup namespace has the cgroup2 root
 * @root (NULL or "/" for none) sees it: named relative to @root, those
 * outside it left out.
 */
json_t *reclaim_controller_status_json(const ReclaimController *rc, const char *root);

/*
 * reclaim_controller_export - what the controller did in each cgroup, for
 * a successor. Returns 0 or -ENOMEM.
 */
int reclaim_controller_export(const ReclaimController *rc, SnapshotReclaim **ret, size_t *ret_n);

/*
 * reclaim_controller_restore - go on from what a previous process did
 * (@saved, copied): a cgroup that comes under control again keeps its
 * reclaimed_bytes. Returns 0 or -ENOMEM.
 */
int reclaim_controller_restore(ReclaimController *rc, const SnapshotReclaim *saved, size_t n);

/* reclaim_controller_write_metrics - pressured_reclaim_bytes_total and pressured_reclaim_state. */
void reclaim_controller_write_metrics(struct evbuffer *out, const ReclaimController *rc);
