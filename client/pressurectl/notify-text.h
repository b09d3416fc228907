/* SPDX-License-Identifier: MIT */
/*
 * pressurectl notify, its pure part (notify-text.c; no I/O, no bus):
 * finding the session cgroup in the text of /proc/self/cgroup, the
 * notification text, the urgency of a level, the per-episode rate limit,
 * and the kills waiting to be shown.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pressure.h"
#include "top-cgroup.h"

/* Urgency hint of org.freedesktop.Notifications (a byte on the bus). */
enum {
        NOTIFY_URGENCY_LOW = 0,
        NOTIFY_URGENCY_NORMAL = 1,
        NOTIFY_URGENCY_CRITICAL = 2,
};

/* How many children of the affected cgroup the text names. */
#define NOTIFY_CHILDREN 3

/* One child cgroup named in the text: its last path component and memory.current. */
typedef struct NotifyChild {
        const char *name;
        uint64_t current;
} NotifyChild;

/* What one notification says. */
typedef struct NotifyText {
        const char *cgroup;     /* "/" for the whole system */
        pressure_level level;   /* the highest level of the episode so far */
        uint64_t duration_us;   /* how long the episode has lasted */
        NotifyChild children[NOTIFY_CHILDREN];
        size_t n_children;
} NotifyText;

/*
 * The state of one watched cgroup's episode as the notifier shows it. All
 * times are CLOCK_MONOTONIC microseconds (the daemon's clock and ours are
 * the same on one machine).
 */
typedef struct NotifyEpisode {
        bool active;            /* an episode is going on */
        uint64_t start_us;      /* its first event */
        pressure_level level;   /* the highest level seen in it */
        bool shown;             /* a notification of it is on screen */
        pressure_level shown_level; /* the level that notification shows */
        uint64_t last_try_us;   /* the last Notify attempt for it; 0 = none yet */
        bool pending;           /* an update waits for the rate limit */
} NotifyEpisode;

typedef enum NotifyAction {
        NOTIFY_NOTHING = 0,
        NOTIFY_SHOW,    /* a new notification */
        NOTIFY_UPDATE,  /* the episode's notification, replaced in place */
        NOTIFY_DEFER,   /* an update is due at notify_episode_deadline() */
} NotifyAction;

/* notify_urgency - the urgency hint of a level: low 0, medium 1, critical 2 (1 if unknown). */
uint8_t notify_urgency(pressure_level level);

/* notify_urgency_to_string - "low", "normal", "critical" (the specification's names). */
const char *notify_urgency_to_string(uint8_t urgency);

/*
 * notify_session_cgroup - the user's service manager cgroup, e.g.
 * "/user.slice/user-1000.slice/user@1000.service", from the text of
 * /proc/self/cgroup: the cgroup2 line ("0::"), else the v1 memory line.
 * @text: the file's contents
 * @uid: the user whose user@UID.service is looked for
 * @ret: the path (free() it)
 *
 * Returns 0, -ENOENT if no line has a user@UID.service component, or -ENOMEM.
 */
int notify_session_cgroup(const char *text, uid_t uid, char **ret);

/*
 * notify_format_duration - "less than a second", "45 s", "3 min 20 s",
 * "2 h 5 min", "3 d 4 h" for a person reading a notification. Returns @buf.
 */
const char *notify_format_duration(char buf[static 32], uint64_t usec);

/*
 * notify_pick_children - the NOTIFY_CHILDREN direct children of @cgroup in
 * @snapshot with the largest memory.current, largest first (names point
 * into @snapshot). Children whose usage could not be read are left out.
 * Returns how many were put in @ret.
 */
size_t notify_pick_children(const TopSnapshot *snapshot, const char *cgroup,
                            NotifyChild ret[static NOTIFY_CHILDREN]);

/*
 * notify_format - the summary and body of a pressure notification.
 * Returns 0 or -ENOMEM; free() both strings.
 */
int notify_format(const NotifyText *text, char **ret_summary, char **ret_body);

/*
 * notify_format_cleared - the short note that replaces the notification
 * when the episode is over (--on-cleared=replace). Returns 0 or -ENOMEM.
 */
int notify_format_cleared(const char *cgroup, uint64_t duration_us, char **ret_summary, char **ret_body);

/*
 * notify_escape_markup - @s with '&', '<' and '>' written as entities, for
 * a server that takes markup in the body (capability "body-markup").
 * Returns NULL on -ENOMEM.
 */
char *notify_escape_markup(const char *s);

/*
 * notify_quote - @s in double quotes for a --dry-run line, with '"', '\\'
 * and control characters escaped ("\n", "\t", "\x1b"). Returns NULL on
 * -ENOMEM.
 */
char *notify_quote(const char *s);

/*
 * notify_episode_pressure - a pressure event of @level for the episode @e.
 * @event_us: the event's CLOCK_MONOTONIC time (starts an episode)
 * @now_us: now
 * @min_interval_us: at most one Notify per this interval per episode
 *
 * The first event of an episode is shown at once (NOTIFY_SHOW). Later ones
 * update the notification (NOTIFY_UPDATE) when @min_interval_us has passed
 * since the last attempt, or at once when the level rose above the one
 * shown (at most twice per episode: low to medium to critical); otherwise
 * the update is deferred (NOTIFY_DEFER) to notify_episode_deadline(). A
 * notification that could not be shown is tried again under the same limit.
 */
NotifyAction notify_episode_pressure(NotifyEpisode *e, pressure_level level, uint64_t event_us, uint64_t now_us,
                                     uint64_t min_interval_us);

/*
 * notify_episode_due - the deferred update whose deadline has come:
 * NOTIFY_SHOW if nothing is on screen yet, NOTIFY_UPDATE, or NOTIFY_NOTHING
 * if none is pending or it is not yet time.
 */
NotifyAction notify_episode_due(const NotifyEpisode *e, uint64_t now_us, uint64_t min_interval_us);

/* notify_episode_deadline - when a deferred update is due; UINT64_MAX if none. */
uint64_t notify_episode_deadline(const NotifyEpisode *e, uint64_t min_interval_us);

/* notify_episode_tried - record a Notify attempt at @now_us that succeeded (@ok) or not. */
void notify_episode_tried(NotifyEpisode *e, uint64_t now_us, bool ok);

/*
 * notify_episode_end - the episode is over (a cleared event, or a
 * resubscription that found none). Returns whether a notification of it
 * was on screen (then it is to be closed or replaced); @e is reset.
 */
bool notify_episode_end(NotifyEpisode *e);

/* ---- kills ---------------------------------------------------------------------------- */

/* How many kills one notification names; more are counted ("and 3 more"). */
#define NOTIFY_KILL_NAMES 3

/* One killed cgroup as a notification names it. */
typedef struct NotifyKill {
        char *cgroup;   /* the path the daemon sent */
        char *by;       /* "kernel", "systemd-oomd", ... */
        char *reason;   /* "oom_kill", "memory-pressure", "memory-used", ... */
        uint64_t count; /* kills (the kernel's count; merged events) */
} NotifyKill;

/*
 * The kills of one watch waiting to be shown. At most one notification per
 * minimum interval: a kill that comes sooner after the last one waits, and
 * the kills that gather meanwhile are shown together (the first
 * NOTIFY_KILL_NAMES by name, the rest counted), so the memory held does
 * not grow with a storm of kills.
 */
typedef struct NotifyKills {
        NotifyKill kills[NOTIFY_KILL_NAMES];
        size_t n_kills;
        uint64_t more_events;   /* kill events beyond kills[] */
        uint64_t more_kills;    /* and the kills they report */
        uint64_t last_try_us;   /* the last Notify attempt; 0 = none yet */
} NotifyKills;

/*
 * notify_kill_name - the name a person recognizes in a killed cgroup's
 * path: its last component, the unit or scope ("app-firefox.scope",
 * "user@1000.service"), as it is: an app scope's decoration ("app-",
 * a launcher's name, a number, ".scope") varies too much to strip it
 * safely. "/" for the root. Points into @cgroup (or is static).
 */
const char *notify_kill_name(const char *cgroup);

/*
 * notify_kills_add - a killed event for @k: NOTIFY_SHOW when it may be
 * shown now (at least @min_interval_us after the last attempt), else
 * NOTIFY_DEFER to notify_kills_deadline(). Returns -ENOMEM (and drops the
 * kill) without memory.
 */
int notify_kills_add(NotifyKills *k, const char *cgroup, const char *by, const char *reason, uint64_t count,
                     uint64_t now_us, uint64_t min_interval_us);

/* notify_kills_deadline - when waiting kills may be shown; UINT64_MAX if none wait. */
uint64_t notify_kills_deadline(const NotifyKills *k, uint64_t min_interval_us);

/* notify_kills_due - NOTIFY_SHOW if kills wait and their time has come, else NOTIFY_NOTHING. */
NotifyAction notify_kills_due(const NotifyKills *k, uint64_t now_us, uint64_t min_interval_us);

/*
 * notify_kills_tried - record a Notify attempt at @now_us: when it worked
 * (@ok) the kills shown are forgotten; when not they wait for the next
 * interval.
 */
void notify_kills_tried(NotifyKills *k, uint64_t now_us, bool ok);

/* notify_kills_done - free what @k holds. */
void notify_kills_done(NotifyKills *k);

/*
 * notify_format_kills - the summary and body of the notification of the
 * kills waiting in @k (at least one). Returns 0 or -ENOMEM.
 */
int notify_format_kills(const NotifyKills *k, char **ret_summary, char **ret_body);

/*
 * notify_format_prekill - the summary and body of the warning that @by
 * ("systemd-oomd") is about to kill @cgroup: "foo.service will be killed
 * by systemd-oomd", the unit named as notify_kill_name() names it. Returns
 * 0 or -ENOMEM.
 */
int notify_format_prekill(const char *cgroup, const char *by, char **ret_summary, char **ret_body);
