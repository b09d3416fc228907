/* SPDX-License-Identifier: MIT */
/*
 * The state one pressured hands to the next: at a restart under systemd
 * (through its file descriptor store), after a crash (the last
 * checkpoint), or at Reexecute. A Snapshot is typed; this module encodes
 * it into a versioned, size-limited byte string and decodes one back,
 * with every count and length bounded before anything is allocated. It
 * does no I/O: the file descriptors the state speaks of travel beside it,
 * named by the ids it holds (server/takeover.h).
 *
 * The encoding: a 32-byte header (magic "PRSDSNAP", the version, the
 * payload's size and its FNV-1a checksum, little-endian), then records of
 * (tag u16, length u32, value), nested where a value is itself a list of
 * records. A reader skips tags it does not know, so a field added later
 * needs no new version; the version changes only when a field changes
 * its meaning, and every reader reads every version from 1 up to its own.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "episode.h"
#include "histogram.h"
#include "kernfile.h"
#include "prekill-book.h"
#include "source-type.h"
#include "trigger.h"

/*
 * The version this daemon writes; it reads 1 to SNAPSHOT_VERSION.
 * 2: pre-kill warnings and the hook's connections. Their ids must never be
 * given twice and the answers owed to systemd-oomd must be given: a reader
 * of version 1 would skip both and hand the next process a state that
 * breaks that promise, so it refuses the state instead.
 * 3: the hook's connections are clients like the varlink socket's
 * (T_HOOK_CLIENT), with the answer each is owed; a reader of version 2
 * would lose them, and refuses the state instead. Version 2's are read
 * into the same form.
 */
#define SNAPSHOT_VERSION 3
#define SNAPSHOT_HEADER_SIZE 32
/* The largest snapshot written or read, header included. */
#define SNAPSHOT_SIZE_MAX (UINT64_C(256) << 20)

/* Bounds the reader enforces, beyond the total size. */
#define SNAPSHOT_ITEMS_MAX 1000000   /* clients, proxied clients, registrations (the configuration's maxima) */
#define SNAPSHOT_OUTPUT_MAX 65536    /* queued messages of one client */
#define SNAPSHOT_HISTORY_MAX 10000   /* episodes in one registration's history */
#define SNAPSHOT_TOPS_MAX 256        /* top-level cgroups of a kills registration on "/" */
#define SNAPSHOT_RECLAIM_MAX 100000  /* cgroups under proactive reclaim */
#define SNAPSHOT_STRING_MAX 4096     /* a path or a name */

typedef struct SnapshotBytes {
        char *data;                  /* NULL when empty */
        size_t size;
} SnapshotBytes;

/* What is left to write of one message a client had queued. */
typedef struct SnapshotOutput {
        uint64_t seq;                /* the event's seq; 0 for a reply */
        SnapshotBytes bytes;
} SnapshotOutput;

/* A client's Subscribe stream. */
typedef struct SnapshotSubscription {
        uint64_t registration;       /* SnapshotRegistration.id */
        Level level;                 /* the level its events carry, or _LEVEL_INVALID */
        bool explicit_psi;
        bool by_level;
        bool waiting;                /* a kills stream whose "subscribed" is not sent yet */
        uint64_t seq;                /* events generated so far */
        uint64_t written_seq;        /* the last one wholly written to the socket */
        uint64_t missed;             /* dropped since the last one queued */
        uint64_t min_interval_usec;
        uint64_t last_sent_usec;     /* CLOCK_MONOTONIC */
        SnapshotBytes pending;       /* a coalesced event's body, waiting for the interval */
        uint32_t pending_flags;
        uint64_t pending_monotonic_us;
        uint64_t pending_count;
} SnapshotSubscription;

/* A client's level stream (Subscribe "levels"). */
typedef struct SnapshotLevels {
        char *cgroup;                /* as the peer named it */
        uint64_t seq;                /* events sent */
        uint64_t missed;             /* changes folded since the last one sent */
        int32_t sent;                /* the level last sent (level-machine.h StreamLevel), -1 none */
        bool waiting;                /* a change waited for the client to read */
} SnapshotLevels;

/* A connection to the varlink socket, or to the pre-kill hook's. */
typedef struct SnapshotClient {
        uint64_t id;
        uint32_t uid, gid;
        int32_t pid;
        char *view_v2;               /* the peer's cgroup namespace roots; NULL: the daemon's view */
        char *view_v1;
        SnapshotBytes input;         /* received and not yet handled */
        SnapshotOutput *output;      /* queued, oldest first */
        size_t n_output;
        bool has_subscription;
        SnapshotSubscription subscription;
        bool has_levels;             /* a level stream; never with a subscription */
        SnapshotLevels levels;
        bool owes_reexecute;         /* its Reexecute call is answered by the next process */
        bool refused;                /* over its socket's bound: its first call is refused */
        uint64_t prekill_owed;       /* the hook's: the warning whose answer it waits for; 0: none */
} SnapshotClient;

/* A connection to a pressure proxy socket. */
typedef struct SnapshotProxyClient {
        uint64_t id;
        Resource resource;           /* of the socket it came through; memory in older states */
        int32_t pid;
        uint32_t uid;
        char *unit;
        SnapshotBytes line;          /* what it wrote of its trigger line */
        bool line_done;
        uint64_t decide_by_usec;     /* CLOCK_MONOTONIC; while !line_done, when the request is judged as it is */
        uint64_t registration;       /* 0: not attached (silent) */
        uint64_t sent, dropped;
} SnapshotProxyClient;

/* A pre-kill warning waiting for its answer (prekill-book.h). */
typedef struct SnapshotPrekillWarning {
        uint64_t id;                 /* > 0 */
        char *victim;
        uint64_t start_us, realtime_us, deadline_us;
        uint64_t hook;               /* the hook connection owed the answer; 0: none */
        PrekillWarned *warned;
        size_t n_warned;
} SnapshotPrekillWarning;

/* A top-level cgroup watched by a kills registration on "/". */
typedef struct SnapshotKillsTop {
        char *name;
        uint64_t oom_kill;
} SnapshotKillsTop;

/* A kernel registration. */
typedef struct SnapshotRegistration {
        uint64_t id;                 /* > 0; names its fd */
        SourceType type;
        char *cgroup;
        Resource resource;
        PsiTrigger requested, used;
        Level vm_level;
        VmpressureMode vm_mode;
        bool adjusted;
        uint64_t dir_ino;
        MemoryEvents last_events;
        int32_t last_state;
        SnapshotKillsTop *tops;
        size_t n_tops;
        bool fast_charged;
        uint32_t fast_uid;
        Episode episode;             /* its params are not kept: they follow the configuration */
        EpisodeRecord *history;      /* oldest first */
        size_t n_history;
} SnapshotRegistration;

/* What proactive reclaim has done in one cgroup. */
typedef struct SnapshotReclaim {
        char *cgroup;
        uint64_t reclaimed;
        uint64_t last_step;
} SnapshotReclaim;

/* A counter, by its GetStatus name so that a new daemon's table may differ. */
typedef struct SnapshotCounter {
        char *name;
        uint64_t value;
} SnapshotCounter;

typedef struct Snapshot {
        uint32_t version;            /* set by snapshot_decode() */
        uint64_t serial;             /* counts up within a process: of two snapshots, the larger is newer */
        bool complete;               /* written at the end (queues included), not a checkpoint */
        uint64_t generation;         /* of the process that wrote it */
        uint64_t start_monotonic_us; /* when the first generation started */
        char *live_name;             /* the fd name of the live page that goes with this state, or NULL */
        char *socket_path;           /* sockets the daemon bound itself and unlinks at its final stop */
        char *proxy_paths[_RESOURCE_MAX]; /* of each resource's proxy socket */
        char *report_path;           /* of the report socket (systemd-report) */
        uint64_t next_client_id, next_proxy_id, next_registration_id;
        bool psi_unprivileged;
        SnapshotCounter *counters;
        size_t n_counters;
        MetricsHistogram latency;
        SnapshotRegistration *registrations;
        size_t n_registrations;
        SnapshotClient *clients;
        size_t n_clients;
        SnapshotProxyClient *proxies;
        size_t n_proxies;
        SnapshotReclaim *reclaim;
        size_t n_reclaim;
        char *prekill_path;          /* the hook socket the daemon bound itself */
        uint64_t next_hook_id;
        uint64_t prekill_last_id;    /* the last warning id given */
        PrekillCounters prekill_counters;
        SnapshotPrekillWarning *prekill_warnings;
        size_t n_prekill_warnings;
        SnapshotClient *hook_clients; /* the hook socket's connections */
        size_t n_hook_clients;
} Snapshot;

/* snapshot_registration_done - free what @r holds and zero it. */
void snapshot_registration_done(SnapshotRegistration *r);

/* snapshot_client_done - free what @c holds and zero it. */
void snapshot_client_done(SnapshotClient *c);

/* snapshot_prekill_warning_done - free what @w holds and zero it. */
void snapshot_prekill_warning_done(SnapshotPrekillWarning *w);

/* snapshot_done - free everything @s holds and zero it. */
void snapshot_done(Snapshot *s);

/*
 * snapshot_encode - the bytes of @s, header included.
 * @max: the most that may be written (at most SNAPSHOT_SIZE_MAX)
 *
 * Returns 0 with @ret (malloc'ed) and @ret_size, -E2BIG if @s does not
 * fit in @max, or -ENOMEM.
 */
int snapshot_encode(const Snapshot *s, uint64_t max, char **ret, size_t *ret_size);

/*
 * snapshot_decode - the snapshot in @data (@size bytes).
 *
 * Returns 0 with @ret filled (snapshot_done() frees it); -EBADMSG if
 * @data is not a snapshot (no magic, truncated, bad checksum, a malformed
 * or out-of-range field); -EPROTONOSUPPORT for a version newer than
 * SNAPSHOT_VERSION; -E2BIG over SNAPSHOT_SIZE_MAX or a bound above; or
 * -ENOMEM. On failure @ret is untouched.
 */
int snapshot_decode(const void *data, size_t size, Snapshot *ret);

/* snapshot_bytes_set - @b holds a copy of @data (@size bytes). Returns 0 or -ENOMEM. */
int snapshot_bytes_set(SnapshotBytes *b, const void *data, size_t size);
