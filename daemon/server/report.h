/* SPDX-License-Identifier: MIT */
/*
 * systemd-report's source: io.systemd.Metrics (List, Describe) and
 * org.varlink.service on the report socket ([Report] Socket=, by default
 * /run/systemd/report/io.pressured), the families of protocol/report.h.
 *
 * Connections. The socket's clients are those of a ClientServer of their
 * own (client.h): the same framing, message size, timeouts and output
 * bound as on the io.pressured socket ([Limits]), at most [Report]
 * MaxConnections= at once (one more is told LimitExceeded and closed).
 * Calls on a connection are answered in order, a List's whole reply
 * before the next call, so a connection has one List at a time. A client
 * that does not read has its calls left unread once its replies exceed
 * [Limits] OutputBufferBytes=, and is closed when a call has waited so
 * for RequestTimeoutSec=.
 *
 * List reads when it is called, never before: the daemon's own values at
 * once, on the loop; the cgroups of [Metrics] Cgroups= (and MaxCgroups=)
 * on a thread (cgroup-walk.h, the walk /metrics makes), each weighed by
 * the metrics it takes so that the walk reads no cgroup beyond [Report]
 * MaxMetrics=; then the thread reads the effective protection (a
 * protection reader of its own, for the cgroups alone, protection-tree.h)
 * and the headroom (headroom.h) of the cgroups kept and writes the whole
 * reply. On
 * the loop that reply, one buffer, is sent to every List that waited for
 * this walk. Lists that arrive during a walk share the next one, so their
 * values are read after they asked. Between calls nothing is read and
 * nothing runs: no timer, no thread; a List without [Metrics] Cgroups=
 * has the daemon's own values only and no thread at all.
 *
 * Restarts. The listening socket is handed to the next process like the
 * other listening sockets (FileDescriptorName= "report"); connections are
 * not: before the process executes anew or stops, the walk under way is
 * waited for and its Lists are answered as far as their sockets take it
 * at once. systemd-report reads a connection that ends early as a source
 * that stopped, keeping what it sent and the other sources' metrics.
 */
#pragma once

#include <event2/event.h>

#include "config.h"
#include "status.h"

typedef struct ReportServer ReportServer;

/* The report socket's FileDescriptorName=, for the service manager and the next process. */
#define REPORT_FD_NAME "report"

/*
 * report_server_new - serve the report protocol on the listening socket
 * @fd (taken over in every case), bound by this daemon at @path (unlinked
 * when the server is freed) or inherited (NULL). @status is the daemon's
 * state: its counters, its hierarchies, its reclaim controller; @config
 * is followed with report_server_set_config(). Returns 0 or a negative
 * errno (logged).
 */
int report_server_new(struct event_base *base, const Config *config, const StatusContext *status, int fd,
                      const char *path, ReportServer **ret);

/* report_server_set_config - the configuration in force after a reload. */
void report_server_set_config(ReportServer *s, const Config *config);

/* report_server_fd - the listening socket, for the next process. */
int report_server_fd(const ReportServer *s);

/* report_server_path - where this daemon bound the socket, or NULL (inherited). */
const char *report_server_path(const ReportServer *s);

/* report_server_forget_path - the next process serves the socket file: do not unlink it. */
void report_server_forget_path(ReportServer *s);

/*
 * report_server_stop_walk - wait for the walk under way, if any, and send
 * its reply to the Lists that waited for it, as far as each socket takes
 * it now: no thread runs after it (before the process executes anew).
 * Lists waiting for a next walk get nothing more. The server serves on.
 */
void report_server_stop_walk(ReportServer *s);

/* report_server_free - stop the walk, close every connection and the socket; NULL-safe, returns NULL. */
ReportServer *report_server_free(ReportServer *s);
