/* SPDX-License-Identifier: MIT */
/*
 * systemd-oomd's kills for the kills sources: one BusUser of the system
 * bus and one match on org.freedesktop.oom1.Manager's Killed(s cgroup,
 * s reason) signal, however many kills sources there are, and only while
 * there is at least one (the first source connects, the last one leaves
 * the bus). Whether org.freedesktop.oom1 has an owner is followed through
 * NameOwnerChanged and one GetNameOwner call per connection.
 *
 * A Killed signal is counted once (COUNTER_KILLS_SYSTEMD_OOMD) and handed,
 * as a "killed" event with count 1, to every kills source whose cgroup is
 * the killed cgroup or an ancestor of it; one that kills_oomd_check()
 * refuses is dropped with a log line.
 */
#pragma once

#include <stdbool.h>

#include "counters.h"
#include "source.h"
#include "system-bus.h"

/*
 * oomd_watch_new - a watch over @bus (NULL: no bus, nothing is ever heard),
 * counting in @counters. Nothing connects here. Returns 0 or -ENOMEM.
 */
int oomd_watch_new(SystemBus *bus, Counters *counters, OomdWatch **ret);

/* oomd_watch_free - every source must be gone already; NULL-safe, returns NULL. */
OomdWatch *oomd_watch_free(OomdWatch *w);

/* oomd_watch_add - @s (SOURCE_KILLS) hears systemd-oomd's kills from now on. Returns 0 or -ENOMEM. */
int oomd_watch_add(OomdWatch *w, Source *s);

/* oomd_watch_remove - @s (added before) hears no more; the last one leaves the bus. */
void oomd_watch_remove(OomdWatch *w, Source *s);

/* oomd_watch_active - the match is installed and org.freedesktop.oom1 has an owner. */
bool oomd_watch_active(const OomdWatch *w);

/*
 * oomd_watch_describe_inactive - why systemd-oomd's kills cannot be heard
 * now, in words for a reason, written to @buf; NULL while they can.
 */
const char *oomd_watch_describe_inactive(const OomdWatch *w, char *buf, size_t size);

/*
 * oomd_watch_settling - the watch is on its way to the bus (connecting,
 * installing the match, asking who owns the name) and cannot yet say
 * whether systemd-oomd can report: the first kills subscription's
 * "subscribed" waits for that (see methods.c). False without sources, once
 * the owner is known, and without a bus.
 */
bool oomd_watch_settling(const OomdWatch *w);

/*
 * oomd_watch_give_up - stop settling without the picture (the bus did not
 * answer in time): later subscriptions do not wait either, until the next
 * connection to the bus.
 */
void oomd_watch_give_up(OomdWatch *w);

/* oomd_watch_set_settled - call @fn(@userdata) each time the watch stops settling with the picture. */
void oomd_watch_set_settled(OomdWatch *w, void (*fn)(void *userdata), void *userdata);
