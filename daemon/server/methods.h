/* SPDX-License-Identifier: MIT */
/*
 * The varlink methods: org.varlink.service (GetInfo,
 * GetInterfaceDescription) and io.pressured (Subscribe, GetStatus,
 * GetProtection, GetHeadroom, Inject, Reload, Reexecute,
 * AcknowledgePrekill), with the authorization rules of the
 * contract. The manager installs methods_dispatch() as the clients'
 * dispatch callback, and hands in what lies outside this layer (reloading
 * the configuration) as a callback too.
 */
#pragma once

#include "cgroup.h"
#include "client.h"
#include "config.h"
#include "level-stream.h"
#include "counters.h"
#include "prekill.h"
#include "registration.h"
#include "source-protection.h"
#include "status.h"
#include "varlink.h"

typedef struct Methods {
        const Config *config;
        Registry *registry;
        LevelStreams *levels;
        ProtectionSource *protection;   /* NULL without a cgroup2 hierarchy */
        const Hierarchy *v2;
        const Hierarchy *v1;
        Counters *counters;
        const StatusContext *status;
        Prekill *prekill;               /* warnings before systemd-oomd kills (AcknowledgePrekill) */
        /* Re-read the configuration (Reload); @ret_error: why it was rejected. */
        int (*reload)(void *userdata, char **ret_error);
        /* Execute the binary anew (Reexecute), soon, from the loop; @c owes the
         * answer to the new process. Returns 0 or why it cannot. */
        int (*reexecute)(void *userdata, Client *c);
        void *userdata;
        /* kills subscriptions whose "subscribed" waits for systemd-oomd's
         * picture (methods_kills_settled()), and the timer that bounds the wait. */
        struct Subscription *kills_waiting;
        struct event *kills_timer;
} Methods;

/* How long a kills subscription's "subscribed" may wait for the system bus. */
#define METHODS_KILLS_WAIT_USEC (250 * USEC_PER_MSEC)

/*
 * methods_kills_settled - the oomd watch knows whether systemd-oomd can
 * report (an oomd_watch_set_settled() callback, @userdata the Methods):
 * the waiting kills subscriptions get their "subscribed".
 */
void methods_kills_settled(void *userdata);

/*
 * methods_kills_adopt - a kills stream a previous process had not sent
 * "subscribed" to yet: it waits for systemd-oomd's picture again, or is
 * started now if that is known. Returns 0 or -ENOMEM.
 */
int methods_kills_adopt(Methods *ms, struct Subscription *s);

/*
 * methods_levels_adopt - the level stream a previous process described in
 * @snap for client @c: its cgroup resolved and checked again as Subscribe
 * does, on the registrations taken over. Returns 0, or a negative errno
 * when it cannot go on (the cgroup is gone: the caller ends the stream).
 */
int methods_levels_adopt(Methods *ms, Client *c, const SnapshotLevels *snap);

/*
 * methods_level_headroom - the headroom of a level stream's cgroup as
 * GetHeadroom reads it, and the reclaim target at @level (a
 * LevelHeadroomFn; @userdata is the Methods).
 */
unsigned methods_level_headroom(void *userdata, const LevelTarget *t, StreamLevel level, uint64_t *ret_headroom,
                                uint64_t *ret_target);

/* methods_done - free what the methods hold beyond the clients (which must be gone). */
void methods_done(Methods *ms);

/*
 * methods_dispatch - answer @call from @c (a ClientDispatchFn; @userdata
 * is the Methods): run the method, or send the declared error. When the
 * answer cannot be queued the client is closed.
 */
void methods_dispatch(Client *c, VarlinkCall *call, void *userdata);
