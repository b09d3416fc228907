/* SPDX-License-Identifier: MIT */
/*
 * What the kernel sources share: opening a registration's cgroup
 * directory and files with errors mapped by varlink_error_from_errno(),
 * and publishing a kernel pressure notification. Used by the sources;
 * registrations do not call it.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "cgroup.h"
#include "registration.h"
#include "varlink-error.h"

/*
 * source_open_dir - open @r's cgroup directory in @h and remember
 * its inode, to tell a recreated cgroup from ours later.
 * Returns the fd, or a negative errno with @e filled as
 * varlink_error_from_errno() maps it.
 */
int source_open_dir(Registration *r, const Hierarchy *h, VarlinkError *e);

/*
 * source_open_file - open @file in @r's cgroup directory @dirfd.
 * Returns the fd, or a negative errno with @e filled as
 * varlink_error_from_errno() maps it.
 */
int source_open_file(Registration *r, int dirfd, const char *file, int flags, VarlinkError *e);

/*
 * source_publish_pressure - count one kernel pressure notification
 * of @r and fan out its "pressure" event.
 * @psi: steals; the PSI averages read with it, or NULL
 * @count: notifications it stands for
 *
 * A tracked cgroup's protection node rides along.
 */
void source_publish_pressure(Registration *r, json_t *psi, uint64_t realtime_us, uint64_t monotonic_us,
                             uint64_t count);
