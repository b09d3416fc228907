/* SPDX-License-Identifier: MIT */
/*
 * What the daemon reports about itself: the GetStatus reply and the
 * Prometheus text of /metrics. Both read the manager's state and export
 * every counter of the counter table (counters.h), so they agree.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "cgroup-glob.h"
#include "cgroup-ns.h"
#include "cgroup.h"
#include "client.h"
#include "config.h"
#include "counters.h"
#include "low-memory-monitor.h"
#include "prekill-book.h"
#include "proxy.h"
#include "reclaim-controller.h"
#include "registration.h"
#include "metrics-report.h"
#include "source-protection.h"

struct evbuffer;

/* The last takeover, for GetStatus "takeover"; all zero at a fresh start. */
typedef struct TakeoverStats {
        uint64_t connections, proxied_clients, registrations, closed;
        bool clean;
        uint64_t time_us;
} TakeoverStats;

/* What the daemon reports on; filled by the manager, which keeps it current. */
typedef struct StatusContext {
        const Config *config;
        const Registry *registry;
        const ClientServer *clients;        /* NULL before the socket is served */
        const ProxyServer *proxy;           /* NULL when every pressure proxy socket is off */
        const ProtectionSource *protection; /* NULL without a cgroup2 hierarchy */
        const ReclaimController *reclaim;   /* [Reclaim]; NULL before the cgroups are set up */
        const Counters *counters;
        const LowMemoryMonitor *lmm;        /* [DBus] LowMemoryMonitor=, and */
        const SystemBus *bus;               /* the system bus connection, for "dbus" */
        const PrekillBook *prekill;         /* the pre-kill warnings, for "prekill"; NULL: none yet */
        const Hierarchy *v2;
        const Hierarchy *v1;
        bool mount_recursiveprot;           /* the cgroup2 mount's memory_recursiveprot */
        uint64_t start_monotonic;           /* of the first generation */
        uint64_t generation;                /* 0 for a fresh start, +1 per takeover */
        TakeoverStats takeover;
} StatusContext;

/* status_counters - every counter of the table, now; propagations come from the protection source. */
void status_counters(const StatusContext *m, uint64_t ret[static _COUNTER_MAX]);

/*
 * status_json - the GetStatus reply parameters for a caller with @view (its
 * cgroup namespace; NULL or empty: the daemon's): "registrations" lists
 * those beneath the caller's root, named as the caller names them.
 */
json_t *status_json(const StatusContext *m, const CgroupView *view);

/* status_write_metrics - the Prometheus exposition text (a MetricsCollectFn; @userdata is the StatusContext). */
void status_write_metrics(struct evbuffer *out, struct evbuffer *cgroups, void *userdata);

/* status_report_daemon - the daemon's own values systemd-report's List sends, now. */
void status_report_daemon(const StatusContext *m, ReportDaemon *ret);

/* status_metrics_walk - whether a scrape reads the cgroup tree, and how (a MetricsWalkFn). */
bool status_metrics_walk(void *userdata, int *ret_root_fd, int *ret_v1_root_fd, CgroupGlobs **ret_globs,
                         size_t *ret_max);
