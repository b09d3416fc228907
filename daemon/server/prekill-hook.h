/* SPDX-License-Identifier: MIT */
/*
 * The pre-kill hook socket: where systemd-oomd (260 and later) calls
 * io.systemd.oom.Prekill.Notify before it kills a cgroup, by default
 * /run/systemd/oomd.prekill.hook/pressured ([Prekill] Socket=). It serves
 * that interface and org.varlink.service (GetInfo, and
 * GetInterfaceDescription of both), and nothing else. Accepting, framing,
 * answering in order, timeouts and the connection limit live here; what a
 * Notify does is its owner's (prekill.h), who answers it now or later
 * (hook_conn_answer()). A connection waits for one answer at a time:
 * what it sends meanwhile waits.
 *
 * Connections beyond [Prekill] MaxCalls= + 4 are accepted, answered
 * LimitExceeded on their first call and closed; one that sends nothing is
 * closed after RequestTimeoutSec=. As many again are taken so; beyond
 * that a connection is closed at once. Connections of the callers the
 * owner trusts (root, systemd-oomd's user) are never refused so: another
 * user holding connections cannot keep systemd-oomd out.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "fdstore.h"
#include "list.h"
#include "outqueue.h"
#include "snapshot.h"
#include "varlink-error.h"
#include "varlink-framer.h"

/* Connections taken beyond MaxCalls= before any is refused. */
#define HOOK_EXTRA_CONNECTIONS 4
/* A hook connection's slot in the live page: its id with this bit, apart from the varlink clients'. */
#define HOOK_LIVE_ID_BIT (UINT64_C(1) << 63)

typedef struct HookServer HookServer;
typedef struct HookConn HookConn;

struct HookConn {
        HookServer *server;
        uint64_t id;
        int fd;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        VarlinkReader in;
        OutQueue out;
        struct event *ev_read;
        struct event *ev_write;
        struct event *ev_timer;
        uint64_t owed;              /* the warning whose answer it waits for; 0: none */
        uint64_t answering;         /* the warning whose answer is queued, not wholly written; 0: none */
        bool refused;               /* over the limit: its first call is answered LimitExceeded */
        bool closing;               /* closed once its output is written */
        bool dead;
        bool write_armed;
        int live_slot;              /* -1: none */
        uint64_t partial_since;     /* CLOCK_MONOTONIC the unfinished message began, 0: none */
        uint64_t last_activity;
        LIST_FIELDS(HookConn, conns);
        LIST_FIELDS(HookConn, dead);
};

/* What the owner does with the calls. */
typedef struct HookOps {
        /*
         * @h called Notify(@cgroup) (@oneway: no answer is wanted). Returns 1
         * to have it answered now ({}), 0 when it will be (hook_conn_owe(),
         * then hook_conn_answer()) or needs no answer, or a negative errno
         * with @e filled: the error is the answer.
         */
        int (*notify)(HookConn *h, const char *cgroup, bool oneway, VarlinkError *e, void *userdata);
        /* @h closes while it is owed the answer of warning h->owed. */
        void (*abandoned)(HookConn *h, void *userdata);
        /* Whether a peer of @uid may call Notify: its connections are never refused for their number. */
        bool (*trusted)(uid_t uid, void *userdata);
} HookOps;

/* Who is told as connections come and go, and change (the takeover); every callback is optional. */
typedef struct HookHooks {
        void (*connected)(HookConn *h, void *userdata);
        void (*disconnected)(HookConn *h, void *userdata);
} HookHooks;

struct HookServer {
        struct event_base *base;
        const Config *config;
        int fd;                     /* the listening socket; -1: none */
        char *path;                 /* bound by us and unlinked when it stops, or NULL */
        struct event *ev_accept;
        struct event *ev_reap;
        HookConn *conns;
        HookConn *dead;
        unsigned n_conns;
        unsigned n_refused;         /* of them, over the limit */
        uint64_t next_id;
        LivePage *live;             /* the takeover's, or NULL */
        const HookOps *ops;
        void *ops_userdata;
        const HookHooks *hooks;
        void *hooks_userdata;
};

/*
 * hook_server_new - a hook server serving no socket yet; calls go to
 * @ops. @config is followed with hook_server_set_config(). Returns 0 or
 * -ENOMEM.
 */
int hook_server_new(struct event_base *base, const Config *config, const HookOps *ops, void *userdata,
                    HookServer **ret);

/* hook_server_free - close every connection and the socket (unlinked if ours); NULL-safe, returns NULL. */
HookServer *hook_server_free(HookServer *s);

/*
 * hook_server_listen - accept on @fd (taken over, closed on failure),
 * bound by us at @path or inherited (@path NULL). Returns 0 or -ENOMEM.
 */
int hook_server_listen(HookServer *s, int fd, const char *path);

/* hook_server_set_config - the configuration after a reload. */
void hook_server_set_config(HookServer *s, const Config *config);

/* hook_server_forget_path - the socket file belongs to the next process: it is not unlinked. */
void hook_server_forget_path(HookServer *s);

/* hook_server_reap - free the connections closed meanwhile, now. */
void hook_server_reap(HookServer *s);

/*
 * hook_conn_owe - @h waits for the answer of warning @id: no further call
 * of it is read until hook_conn_answer(), and the live page says so.
 */
void hook_conn_owe(HookConn *h, uint64_t id);

/*
 * hook_conn_answer - answer the Notify @h is owed ({}); what it sent
 * meanwhile is handled from the loop, after the caller returns.
 */
void hook_conn_answer(HookConn *h);

/* hook_conn_find - the live connection @id, or NULL. */
HookConn *hook_conn_find(const HookServer *s, uint64_t id);

/* hook_conn_export - @h as a snapshot (its unread input and unwritten output with @complete). Returns 0 or -ENOMEM. */
int hook_conn_export(const HookConn *h, bool complete, SnapshotHook *ret);

/*
 * hook_conn_adopt - the connection a previous process described in @snap,
 * on @fd (taken over, closed on failure); its calls are handled with
 * hook_conn_resume(). Returns 0 or a negative errno.
 */
int hook_conn_adopt(HookServer *s, int fd, const SnapshotHook *snap, HookConn **ret);

/* hook_conn_resume - write what an adopted @h was owed, and handle what it had sent. */
void hook_conn_resume(HookConn *h);
