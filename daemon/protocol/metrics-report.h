/* SPDX-License-Identifier: MIT */
/*
 * pressured's io.systemd.Metrics families, for systemd-report(1): the table
 * of families, Describe's replies, and List's replies from what one call
 * read (the daemon's own values, and per cgroup of the [Metrics] Cgroups=
 * walk its PSI, memory.events, memory.current, effective protection,
 * headroom and reclaim). Pure: no I/O; the server reads, this writes.
 *
 * cgroup v1. A cgroup whose memory figures are the v1 memory hierarchy's
 * (a hybrid host, cgroup-glob.h) has them under the same families, as
 * /metrics has them under the same names: memory.usage_in_bytes as
 * Memory.CurrentBytes, the kills of memory.oom_control (its subtree's) as
 * Memory.Events type=oom_kill, and the headroom below its v1 limits; no
 * effective protection (v1 has none).
 *
 * Names. A family is "io.pressured.<Area>.<Name>", both in UpperCamelCase
 * as systemd 262 names its own (io.systemd.Basic.PressureAvg10,
 * io.systemd.CGroup.MemoryUsage, io.systemd.Manager.UnitsByTypeTotal);
 * systemd-report drops every metric whose name does not start with the
 * name of the socket it came from ("io.pressured") and a dot. PSI's
 * metrics carry the fields systemd's io.systemd.Basic.Pressure* carry,
 * "resource" (memory, io, cpu) and "type" (some, full), in the same units
 * (seconds for totals, percent for averages).
 *
 * Objects. A cgroup is named as systemd's own cgroup source
 * (io.systemd.CGroup) names it where that source reports it: by its unit
 * ("foo.service", see cgroup_path_unit()), so that a reader joins the two
 * on "object"; every other cgroup ("/", a slice, a cgroup below a unit)
 * by its path, which starts with "/" and so never looks like a unit. The
 * daemon's own metrics have no object.
 *
 * The bound. A List reply carries at most @max_metrics metrics ([Report]
 * MaxMetrics=). The daemon's own come first and are never cut; then the
 * cgroups in walk order (parents before children, siblings by name), each
 * whole or not at all: the first that does not fit and every one after it
 * are left out, and counted with those beyond [Metrics] MaxCgroups= in
 * io.pressured.Report.CgroupsOmitted, which ends every reply.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-glob.h"
#include "counters.h"
#include "prekill-book.h"
#include "protection.h"
#include "source-type.h"

struct evbuffer;

/* The daemon's own values, read on the loop when List was called. */
typedef struct ReportDaemon {
        uint64_t counters[_COUNTER_MAX];        /* status_counters() */
        uint64_t takeovers;                     /* the generation */
        uint64_t clients, subscriptions, proxied_clients;
        uint64_t registrations[_SOURCE_MAX];
        PrekillCounters prekill;                /* systemd-oomd's pre-kill hook's calls (GetStatus "prekill") */
        uint64_t prekill_pending;
} ReportDaemon;

/* One cgroup of the walk: its sample, and what was read of it beyond. */
typedef struct ReportCgroup {
        const CgroupSample *sample;
        bool has_protection;
        uint64_t effective_min, effective_low;  /* PROTECTION_UNLIMITED is written as the largest integer */
        ProtectionState protection_state;
        bool has_headroom;
        uint64_t headroom_bytes;
        bool has_reclaim;                       /* under [Reclaim] */
        uint64_t reclaimed_bytes;
} ReportCgroup;

/* report_cgroup_wants_memory - whether headroom is read for @s: it has memory.current (or v1's usage). */
bool report_cgroup_wants_memory(const CgroupSample *s);

/* report_cgroup_wants_protection - whether the effective protection is read for @s: it has cgroup2's memory.current. */
bool report_cgroup_wants_protection(const CgroupSample *s);

/*
 * report_cgroup_metrics - how many metrics @c takes in a List reply with
 * every value read: headroom where report_cgroup_wants_memory(), the
 * protection where report_cgroup_wants_protection(), reclaim where
 * has_reclaim is set already. The walk weighs each cgroup so
 * (cgroup_scrape_hybrid()).
 */
size_t report_cgroup_metrics(const ReportCgroup *c);

/*
 * report_cgroup_budget - how many metrics the cgroups of a List reply of
 * at most @max_metrics may take together: what the daemon's own and the
 * omitted count leave (0 when they take it all).
 */
size_t report_cgroup_budget(size_t max_metrics);

/*
 * report_write_list - List's replies into @out: every message with its
 * NUL, "continues" on all but the last (io.pressured.Report.CgroupsOmitted,
 * @omitted and those of @cgroups left out here). @cgroups are those the
 * walk kept within report_cgroup_budget(); one whose path is no UTF-8
 * (JSON cannot name it) is left out and counted. Returns 0 or -ENOMEM (@out then holds part of it).
 */
int report_write_list(struct evbuffer *out, const ReportDaemon *d, const ReportCgroup *cgroups, size_t n,
                      uint64_t omitted);

/* report_write_describe - Describe's replies into @out, as report_write_list(). Returns 0 or -ENOMEM. */
int report_write_describe(struct evbuffer *out);

/* The family that ends each List, for tests and documentation. */
#define REPORT_FAMILY_OMITTED "io.pressured.Report.CgroupsOmitted"
