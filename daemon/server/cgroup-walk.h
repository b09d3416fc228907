/* SPDX-License-Identifier: MIT */
/*
 * One walk of the cgroup tree for the per-cgroup families of /metrics and
 * of systemd-report's List ([Metrics] Cgroups=), on a thread of its own so
 * that the event loop serves events while it reads (up to [Metrics]
 * MaxCgroups= cgroups, a tenth of a second and more at 10,000).
 *
 * The thread also writes what the caller makes of the cgroups read (the
 * text of /metrics' per-cgroup families, about a megabyte at 10,000
 * cgroups; List's replies, after reading more of each cgroup), so that
 * the loop only sends it.
 *
 * The thread exists only while a walk runs: it is started for the walk,
 * reads with its own duplicate of the root fd and its own patterns (a
 * reload that frees the configuration or the hierarchy does not reach
 * it), wakes the loop through an eventfd when done, and is joined there.
 * Freeing a walk under way waits for it to end (the walk is bounded by
 * MaxCgroups=).
 */
#pragma once

#include <stddef.h>

#include "cgroup-glob.h"

struct event_base;

typedef struct CgroupWalk CgroupWalk;

/*
 * Called on the thread after the walk: write into @out what is made of
 * @s. @userdata is the caller's, used by the thread alone until the walk
 * ended. Returns 0 or a negative errno (then the text is dropped).
 */
typedef int (*CgroupWalkWriteFn)(struct evbuffer *out, const CgroupScrape *s, void *userdata);

/*
 * Called on the loop when the walk ended, with its result (see
 * cgroup_scrape()) and the text written (NULL if the thread ran out of
 * memory for it or the write failed: then the caller writes it from @s, or
 * fails); the walk is freed after it returns: the callback must forget its
 * pointer and not free it.
 */
typedef void (*CgroupWalkDoneFn)(const CgroupScrape *s, struct evbuffer *text, int result, void *userdata);

/*
 * cgroup_walk_start - read the cgroups matching @g below @root_fd, and what
 * the v1 memory hierarchy below @v1_root_fd knows of them
 * (cgroup_scrape_hybrid()), on a thread.
 * @root_fd, @v1_root_fd: duplicated, the caller keeps its own; -1 for a
 *      hierarchy the host does not have
 * @g: taken in every case
 * @max: as for cgroup_scrape()
 * @weigh: as for cgroup_scrape_hybrid() (copied; its userdata used by the thread), or NULL
 * @write: what the thread writes after the walk, with @write_userdata
 * @done: called on the loop after it, with @userdata
 *
 * Returns 0, -ENOMEM, or the negative errno of fcntl(), eventfd() or
 * pthread_create().
 */
int cgroup_walk_start(struct event_base *base, int root_fd, int v1_root_fd, CgroupGlobs *g, size_t max,
                      const CgroupWeigh *weigh, CgroupWalkWriteFn write, void *write_userdata, CgroupWalkDoneFn done,
                      void *userdata, CgroupWalk **ret);

/*
 * cgroup_walk_finish - wait for the thread and call back now, on the loop,
 * as if it had just ended; the walk is freed then. NULL-safe.
 */
void cgroup_walk_finish(CgroupWalk *w);

/* cgroup_walk_free - wait for the thread, drop the result without calling back; NULL-safe, returns NULL. */
CgroupWalk *cgroup_walk_free(CgroupWalk *w);

/*
 * cgroup_walk_log - log what went wrong in a walk for @what ("metrics",
 * "systemd-report"), once: its failure and the files it could not read.
 */
void cgroup_walk_log(const CgroupScrape *s, int result, const char *what);
