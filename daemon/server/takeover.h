/* SPDX-License-Identifier: MIT */
/*
 * Handing the daemon to the next process without anyone noticing: at a
 * restart under systemd (its file descriptor store), after a crash
 * (Restart=on-failure), and at Reexecute (execve() of the binary in the
 * same process, the path without a service manager).
 *
 * Under systemd (fdstore_enabled()) every varlink and pressure proxy
 * connection (of every resource), every connection of the pre-kill hook
 * and every kernel registration fd (PSI trigger, vmpressure eventfd) is
 * handed to the store as it is made and taken out as it ends, named
 * "c<id>", "p<id>", "h<id>", "r<id>"; a checkpoint of the state (a sealed
 * memfd, "state-<serial>") follows every change of what streams exist,
 * and the live page ("live") says what each stream was last told; a
 * pre-kill warning is in a checkpoint before its subscribers hear of it,
 * so that its answer to systemd-oomd is given whatever happens. At
 * SIGTERM a complete snapshot (what was queued for each client
 * included) replaces the checkpoint. The next process finds it all among
 * its inherited fds, takes everything over and carries on: seq goes on,
 * episodes go on, a trigger that fired meanwhile is delivered. After a
 * crash it goes on from the checkpoint and the live page: a connection
 * the old process was half-way through writing to, or answering, is
 * closed (its client reconnects); every other stream goes on with a gap
 * in seq and the same number in "missed" for what was lost.
 *
 * What cannot be carried is made again: inotify watches, timers, the bus
 * connection (and with it the LowMemoryMonitor name), the reclaim thread.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>

#include "client.h"
#include "counters.h"
#include "fdstore.h"
#include "methods.h"
#include "metrics.h"
#include "prekill.h"
#include "proxy.h"
#include "reclaim-controller.h"
#include "registration.h"
#include "report.h"
#include "status.h"

typedef struct Takeover Takeover;

/* What the takeover reaches; owned by the manager. */
typedef struct TakeoverEnv {
        struct event_base *base;
        Registry *registry;
        Counters *counters;
        Methods *methods;
        StatusContext *status;
        Prekill *prekill;
} TakeoverEnv;

/* takeover_new - the takeover bookkeeping of a daemon; nothing happens until takeover_inherit(). */
int takeover_new(const TakeoverEnv *env, Takeover **ret);

/* takeover_free - NULL-safe, returns NULL. */
Takeover *takeover_free(Takeover *t);

/*
 * takeover_inherit - take the state ("state", "state-<serial>") and the
 * live page out of the inherited @fds and read them; with the fd store,
 * make a live page if none came. Returns 1 if there is a state to take
 * over, 0 for a fresh start (a state that cannot be read is logged once:
 * the connections that came with it are then closed), or -ENOMEM.
 */
int takeover_inherit(Takeover *t, NamedFds *fds);

/* takeover_is_fd_name - whether @name is one of the takeover's fds (state, live, connections, registrations). */
bool takeover_is_fd_name(const char *name);

/*
 * takeover_set_servers - the servers, once they listen: hooks for the fd
 * store, the live page for the clients. @socket_path / @proxy_paths (one
 * per resource): the sockets the daemon bound itself (NULL: inherited), which go to the fd
 * store so that a restart without socket units finds them; @prekill_path
 * the same for the pre-kill hook socket.
 */
void takeover_set_servers(Takeover *t, ClientServer *clients, ProxyServer *proxy, ReclaimController *reclaim,
                          const char *socket_path, const char *const proxy_paths[static _RESOURCE_MAX],
                          const char *prekill_path);

/*
 * takeover_restore - take over the registrations, pressure proxy clients
 * and varlink clients of the state, from @fds; what is left in @fds of
 * the takeover's names is closed (and dropped from the store). Before the
 * LowMemoryMonitor service starts, so that it finds its registrations.
 */
void takeover_restore(Takeover *t, NamedFds *fds);

/*
 * takeover_finish - after everything else started: registrations nobody
 * took back are closed, what happened while nobody watched is reported,
 * clients are answered and written to, and the journal hears of it.
 */
void takeover_finish(Takeover *t);

/* takeover_generation - 0 for a fresh start, one more per takeover. */
uint64_t takeover_generation(const Takeover *t);

/* takeover_socket_paths - the sockets a previous process bound itself (to unlink at a final stop), or NULL. */
const char *takeover_socket_path(const Takeover *t);
const char *takeover_proxy_path(const Takeover *t, Resource r);
const char *takeover_prekill_path(const Takeover *t);
const char *takeover_report_path(const Takeover *t);

/*
 * takeover_handover - SIGTERM with the fd store: a complete snapshot
 * replaces the checkpoint, and from now on nothing leaves the store as the
 * process tears down. Returns true if the state was handed over (the
 * caller then keeps its socket files).
 */
bool takeover_handover(Takeover *t);

/* takeover_detached - whether the state was handed over. */
bool takeover_detached(const Takeover *t);

/*
 * takeover_set_metrics - the metrics endpoint (NULL: none), whose cgroup
 * walk is stopped before the process executes anew: no thread is left
 * running into execve(). Set again each time the endpoint is made anew.
 */
void takeover_set_metrics(Takeover *t, MetricsServer *metrics);

/*
 * takeover_set_report - the report socket's server (NULL: none): its
 * listening socket goes to the next process (and to the fd store when
 * this process @bound it), its walk is finished before the process
 * executes anew. Set after takeover_set_servers().
 */
void takeover_set_report(Takeover *t, ReportServer *report, bool bound);

/*
 * takeover_set_exec - what Reexecute executes: @exe with @argv (both
 * copied); NULL: Reexecute is refused.
 */
int takeover_set_exec(Takeover *t, const char *exe, char *const *argv);

/*
 * takeover_schedule_reexec - execute the binary anew from the loop, soon.
 * Returns 0, -EOPNOTSUPP (no binary known), or -EBUSY (one is under way).
 */
int takeover_schedule_reexec(Takeover *t);
