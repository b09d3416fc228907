/* SPDX-License-Identifier: MIT */
/*
 * The per-cgroup series of /metrics ([Metrics] Cgroups=), named after
 * cAdvisor's container_* families with pressured_cgroup_ for container_:
 *
 *   pressured_cgroup_pressure_{memory,io,cpu}_waiting_seconds_total   counter, PSI "some" total
 *   pressured_cgroup_pressure_{memory,io,cpu}_stalled_seconds_total   counter, PSI "full" total
 *   pressured_cgroup_memory_oom_kills_total                           counter, memory.events oom_kill
 *                                                                       (v1: memory.oom_control's, subtree sum)
 *   pressured_cgroup_memory_current_bytes                             gauge, memory.current
 *                                                                       (v1: memory.usage_in_bytes)
 *   pressured_cgroup_series_omitted_cgroups                           gauge, matches beyond MaxCgroups=
 *
 * Each labelled cgroup="PATH" (relative to the cgroup2 root, or to the v1
 * memory hierarchy's for a cgroup only there; "/" for the root). A family with no sample (no cgroup has the file) is left out;
 * the cpu stalled family appears only for cgroups whose cpu.pressure has a
 * "full" line.
 */
#pragma once

#include "cgroup-glob.h"

struct evbuffer;

/* The omitted-cgroups gauge's name, for tests and documentation. */
#define METRICS_CGROUP_OMITTED "pressured_cgroup_series_omitted_cgroups"

/*
 * metrics_write_cgroups - write the families above for @s, one block per
 * family, samples in @s's order, and the omitted gauge.
 */
void metrics_write_cgroups(struct evbuffer *out, const CgroupScrape *s);
