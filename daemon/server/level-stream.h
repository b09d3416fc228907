/* SPDX-License-Identifier: MIT */
/*
 * Level streams (Subscribe "levels"): a cgroup's memory level with
 * hysteresis and its headroom, one event per change.
 *
 * A LevelTracker follows one cgroup as the peers of one cgroup namespace
 * name it. It holds a listener on each of the three [Levels]
 * registrations of the cgroup (shared with every other subscriber, made
 * only while someone follows it), runs the level machine
 * (level-machine.h) on their bare notifications, and on each change
 * builds one event, with the headroom read then, that all its streams
 * share. A tracker lives while a stream follows it; the cgroup's removal
 * ends its streams with "removed".
 *
 * A LevelStream is one client's stream. A change reaches the client at
 * once if it has read everything before; otherwise the change waits, a
 * newer one replaces it ("missed" counts those folded), and the stream
 * looks again, backing off from 10 ms to 500 ms, until the client has
 * read: a slow reader is never sent a queue of stale levels.
 */
#pragma once

#include <event2/event.h>
#include <stdint.h>

#include "client.h"
#include "counters.h"
#include "headroom.h"
#include "level-machine.h"
#include "registration.h"
#include "snapshot.h"

typedef struct LevelStreams LevelStreams;
typedef struct LevelTracker LevelTracker;
typedef struct LevelStream LevelStream;

/* What a tracker follows: a cgroup as the peers of one namespace name it. */
typedef struct LevelTarget {
        const char *cgroup;         /* as the peer names it, canonical */
        const char *real_v2;        /* its path in the cgroup2 hierarchy */
        const char *real_v1;        /* and in the v1 memory one */
        const char *view_v2;        /* the peer's namespace roots; NULL: the daemon's view */
        const char *view_v1;
        HeadroomHint *hint;         /* the tracker's, kept across its events; NULL: probe each time */
        int *meminfo_fd;            /* /proc/meminfo, for the reader to open once and keep while a
                                     * tracker lives (-1: not open); NULL: opened at each read */
} LevelTarget;

/*
 * The headroom of a tracker's cgroup at a level: fills @ret_headroom and
 * @ret_target and returns which of the two are known (bit 0, bit 1).
 */
typedef unsigned (*LevelHeadroomFn)(void *userdata, const LevelTarget *t, StreamLevel level,
                                    uint64_t *ret_headroom, uint64_t *ret_target);

/* level_streams_new - no trackers yet; they use @registry's configuration as it is at each event. */
int level_streams_new(struct event_base *base, Registry *registry, Counters *counters, LevelStreams **ret);

/* level_streams_free - every stream must be gone (their clients are freed first); NULL-safe. */
LevelStreams *level_streams_free(LevelStreams *ls);

/* level_streams_set_headroom - how trackers read the headroom; without it both numbers are null. */
void level_streams_set_headroom(LevelStreams *ls, LevelHeadroomFn fn, void *userdata);

/* level_streams_find - the tracker following @t, or NULL. */
LevelTracker *level_streams_find(LevelStreams *ls, const LevelTarget *t);

/*
 * level_tracker_new - a tracker of @t on @regs, the registrations of
 * [Levels] low, medium and critical of its cgroup (acquired; released on
 * failure). It starts at the level their active episodes say, normal
 * without one. Returns 0 or -ENOMEM.
 */
int level_tracker_new(LevelStreams *ls, const LevelTarget *t, Registration *regs[_LEVEL_MAX], LevelTracker **ret);

/*
 * level_streams_level_of - the level a stream reports now for the cgroup
 * at @real_v2 (its cgroup2 path), or -ENOENT if no stream follows it.
 */
int level_streams_level_of(LevelStreams *ls, const char *real_v2);

/*
 * level_stream_start - client @c follows @t: the first event, the level
 * now, is queued and the stream is @c's active one. A tracker with no
 * stream (the start failed) is freed. Returns 0 or a negative errno.
 */
int level_stream_start(LevelTracker *t, Client *c);

/* level_stream_of_client - @c's active stream if it is a level stream, else NULL. */
LevelStream *level_stream_of_client(const Client *c);

/* Called for each stream level_streams_under() finds, with its client and its peer's cgroup2 namespace root (NULL: none). */
typedef void (*LevelStreamVisitFn)(LevelStream *s, Client *c, const char *view_v2, void *userdata);

/*
 * level_streams_under - @fn for every stream (of a live client) whose
 * cgroup is @victim or below it, in the cgroup2 or the v1 memory hierarchy.
 */
void level_streams_under(LevelStreams *ls, const char *victim, LevelStreamVisitFn fn, void *userdata);

/*
 * level_stream_warn - queue the warning @b (a "prekill" event naming
 * cgroups as @s's peer does) as @s's next event, whatever its client has
 * read; the level last sent stays what it was. Returns 0 or a negative
 * errno (the client is being closed).
 */
int level_stream_warn(LevelStream *s, Body *b);

/* level_stream_export - @s as a snapshot. Returns 0 or -ENOMEM. */
int level_stream_export(const LevelStream *s, SnapshotLevels *ret);

/*
 * level_stream_adopt - a stream a previous process described in @snap, of
 * client @c, on @t: numbered on from where it was, without a first event
 * again; a level that differs from the one the client was last sent is
 * offered as a change. A tracker with no stream is freed on failure.
 * Returns 0 or -ENOMEM.
 */
int level_stream_adopt(LevelTracker *t, Client *c, const SnapshotLevels *snap);
