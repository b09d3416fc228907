/* SPDX-License-Identifier: MIT */
/*
 * One walk of the cgroup tree for the per-cgroup families of /metrics
 * ([Metrics] Cgroups=), on a thread of its own so that the event loop
 * serves events while it reads (up to [Metrics] MaxCgroups= cgroups, a
 * tenth of a second and more at 10,000).
 *
 * The thread also writes the per-cgroup families' text (metrics-cgroup.h),
 * about a megabyte at 10,000 cgroups, so that the loop only appends it.
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
 * Called on the loop when the walk ended, with its result (see
 * cgroup_scrape()) and the text of the families (NULL if the thread ran
 * out of memory for it: then the caller writes it from @s); the walk is
 * freed after it returns: the callback must forget its pointer and not
 * free it.
 */
typedef void (*CgroupWalkDoneFn)(const CgroupScrape *s, struct evbuffer *text, int result, void *userdata);

/*
 * cgroup_walk_start - read the cgroups matching @g below @root_fd, and what
 * the v1 memory hierarchy below @v1_root_fd knows of them
 * (cgroup_scrape_v1()), on a thread.
 * @root_fd, @v1_root_fd: duplicated, the caller keeps its own; -1 for a
 *      hierarchy the host does not have
 * @g: taken in every case
 * @max: as for cgroup_scrape()
 *
 * Returns 0, -ENOMEM, or the negative errno of fcntl(), eventfd() or
 * pthread_create().
 */
int cgroup_walk_start(struct event_base *base, int root_fd, int v1_root_fd, CgroupGlobs *g, size_t max,
                      CgroupWalkDoneFn done, void *userdata, CgroupWalk **ret);

/* cgroup_walk_free - wait for the thread, drop the result without calling back; NULL-safe, returns NULL. */
CgroupWalk *cgroup_walk_free(CgroupWalk *w);
