/* SPDX-License-Identifier: MIT */
/*
 * Warnings before systemd-oomd kills, and its pre-kill hook: the socket
 * where systemd-oomd (260 and later) calls io.systemd.oom.Prekill.Notify
 * before it kills a cgroup, by default
 * /run/systemd/oomd.prekill.hook/pressured ([Prekill] Socket=). It is
 * served by a ClientServer of its own (client.h: framing, timeouts,
 * output bound as [Limits] sets them) with io.systemd.oom.Prekill and
 * org.varlink.service only (varlink-service.h). A Notify waiting for its
 * answer is its connection's stream: what the connection sends meanwhile
 * waits (RequestTimeoutSec= at most, as on every socket), and the takeover
 * hands the connection over like any client (its start and end are
 * checkpointed here, PrekillHooks).
 * Connections beyond [Prekill] MaxCalls= + 4 are taken and answered
 * LimitExceeded on their first call, as many again; beyond, closed at
 * once; root's and systemd-oom's are never refused so (another user
 * holding connections cannot keep systemd-oomd out).
 *
 * On Notify(cgroup) from root or the user systemd-oom, a "prekill" event
 * to every kills subscription whose subtree holds the victim and to every
 * level stream on the victim or below it, and a pressure byte to every
 * proxied sd-event client inside it; then the answer to systemd-oomd once
 * every warned subscriber acknowledged (io.pressured.AcknowledgePrekill)
 * or went away, or at the deadline ([Prekill] Deadline=, or oomd's own
 * PrekillHookTimeoutSec= less a margin, model/oomd-conf.h); with nobody
 * to warn, at once. The bookkeeping is model/prekill-book.h's; this module
 * finds the subscribers, sends, listens for departures and keeps the
 * deadline's timer. A warning never stops the kill.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "client.h"
#include "config.h"
#include "level-stream.h"
#include "prekill-book.h"
#include "proxy.h"
#include "registration.h"
#include "snapshot.h"

/* The hook socket systemd-oomd finds (CONTRACT), and its FileDescriptorName= in pressured-prekill.socket. */
#define PREKILL_SOCKET_DEFAULT "/run/systemd/oomd.prekill.hook/pressured"
#define PREKILL_FD_NAME "prekill"
/* Connections to the hook socket taken beyond MaxCalls= before any is refused. */
#define PREKILL_EXTRA_CONNECTIONS 4
/* A hook connection's slot in the live page: its id with this bit, apart from the varlink clients'. */
#define PREKILL_LIVE_BIT (UINT64_C(1) << 63)

typedef struct Prekill Prekill;

/* What the warnings reach; the servers are set once they exist. */
typedef struct PrekillEnv {
        struct event_base *base;
        const Config *config;
        Registry *registry;
        LevelStreams *levels;
        const Hierarchy *v2;
        const Hierarchy *v1;
        const char *oomd_root;      /* where systemd-oomd's configuration is read: "/" */
} PrekillEnv;

/* Who keeps the state for a successor (the takeover); every callback is optional. */
typedef struct PrekillHooks {
        /* A warning is about to go out: the state must know it before its subscribers do. */
        void (*checkpoint)(void *userdata);
        /* A warning ended, or a subscriber of one acknowledged. */
        void (*changed)(void *userdata);
} PrekillHooks;

struct Prekill {
        PrekillEnv env;
        PrekillBook book;
        ClientServer *hook;         /* the hook socket's connections; accepts none until prekill_listen() */
        char *hook_path;            /* bound by us, unlinked at the end; NULL: inherited or none */
        Body *answer;               /* Notify's answer, the same for every call */
        ClientServer *clients;      /* the varlink clients, whose streams are warned */
        ProxyServer *proxy;         /* the pressure proxy, or NULL */
        LivePage *live;             /* the takeover's, for the last id given; or NULL */
        struct event *ev_deadline;
        const PrekillHooks *hooks;
        void *hooks_userdata;
        bool stopped;               /* the process ends: departures answer nothing */
};

/* prekill_new - warnings with no socket yet. Returns 0 or -ENOMEM. */
int prekill_new(const PrekillEnv *env, Prekill **ret);

/* prekill_free - close the hook socket and its connections, forget every warning; NULL-safe, returns NULL. */
Prekill *prekill_free(Prekill *p);

/* prekill_stop - the process ends: from now on clients that go away answer no call; NULL-safe. */
void prekill_stop(Prekill *p);

/*
 * prekill_listen - serve the hook on @fd (taken over, closed on failure),
 * bound by us at @path or inherited (@path NULL). Returns 0 or -ENOMEM.
 */
int prekill_listen(Prekill *p, int fd, const char *path);

/* prekill_forget_path - the next process serves the hook socket's file: it is not unlinked. */
void prekill_forget_path(Prekill *p);

/* prekill_set_servers - the varlink clients (whose departures are followed) and the proxy (may be NULL). */
int prekill_set_servers(Prekill *p, ClientServer *clients, ProxyServer *proxy);

/* prekill_set_config - the configuration after a reload (limits and deadline apply to later calls). */
void prekill_set_config(Prekill *p, const Config *config);

/*
 * prekill_acknowledge - AcknowledgePrekill(@id) from a peer of @uid and
 * @pid (prekill_book_acknowledge()); the answer to systemd-oomd goes
 * once nobody is waited for any more. Returns 0, or -ENOENT: no such
 * warning waits for the caller's user.
 */
int prekill_acknowledge(Prekill *p, uint64_t id, uid_t uid, pid_t pid);

/* prekill_owed - the warning whose answer the hook connection @c waits for, or 0. */
uint64_t prekill_owed(const Client *c);

/* prekill_export - the warnings and the counters into @s (the hook's connections are clients). Returns 0 or -ENOMEM. */
int prekill_export(const Prekill *p, Snapshot *s);

/*
 * prekill_adopt - what a previous process described in @s: its counters,
 * the last id given (at least @last_id, what its live page said) and its
 * waiting warnings, each owed to its hook connection if that came back
 * (taken over before, client_adopt()); one owed an answer the warnings do
 * not know is answered. Returns 0 or -ENOMEM.
 */
int prekill_adopt(Prekill *p, const Snapshot *s, uint64_t last_id);

/*
 * prekill_resume - after a takeover, once the clients are back and before
 * they go on: warned subscribers whose stream did not come back went
 * away, warnings nobody is waited for, past their deadline or whose
 * caller did not come back are over.
 */
void prekill_resume(Prekill *p);
