/* SPDX-License-Identifier: MIT */
/*
 * pressurectl notify: a per-user agent that shows memory pressure as
 * desktop notifications (org.freedesktop.Notifications on the session bus,
 * through sd-bus). It watches the user's service manager cgroup and the
 * whole system, one notification per episode, updated in place and rate
 * limited, closed or replaced when the episode clears. It also watches
 * kills in the session (or --cgroup): one notification per kill, under the
 * same minimum interval. A warning before a kill (systemd-oomd's pre-kill
 * hook) is shown at once, critical, and acknowledged; the kill that
 * follows replaces it. The words and the rate limits are in
 * notify-text.c; this file owns the subscriptions, the bus and the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "cli.h"
#include "commands.h"
#include "duration.h"
#include "error-text.h"
#include "notify.h"
#include "notify-text.h"
#include "prekill.h"
#include "util.h"
#include "vocabulary.h"

#define NOTIFY_APP_NAME "pressured"
#define NOTIFY_DEST "org.freedesktop.Notifications"
#define NOTIFY_PATH "/org/freedesktop/Notifications"
#define NOTIFY_IFACE "org.freedesktop.Notifications"
/* A bus call waits at most this long: a stuck server must not stop the watching. */
#define NOTIFY_CALL_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* How long the "cleared" note stays (--on-cleared=replace), milliseconds. */
#define NOTIFY_CLEARED_EXPIRE_MS 5000
#define NOTIFY_DEFAULT_INTERVAL_USEC (10 * USEC_PER_SEC)
#define NOTIFY_MAX_INTERVAL_SEC 3600.0
/* The session cgroup and the whole system, and kills in the session. */
#define NOTIFY_MAX_WATCHES 3
/* Warnings before a kill on screen at once, at most, per watch: a new one closes the oldest. */
#define NOTIFY_MAX_WARNED 8
/* A warning whose kill was not heard is closed this long after its deadline. */
#define NOTIFY_WARNED_LINGER_USEC (60 * USEC_PER_SEC)

#define MIN(a, b) ((a) < (b) ? (a) : (b))

typedef struct Notifier Notifier;

/* A warning before a kill on screen, until its kill replaces it. */
typedef struct Warned {
        char *cgroup;           /* the cgroup about to be killed */
        uint32_t id;            /* the server's id of its notification */
        uint64_t close_at_us;   /* CLOCK_MONOTONIC: closed then if no kill came */
} Warned;

typedef struct Watch {
        Notifier *n;
        char *cgroup;           /* "/" for the whole system */
        bool kills;             /* a kills subscription, not a pressure one */
        bool kills_fallback;    /* its cgroup is the usual path of user@UID.service, not where we run */
        pressure_subscription *sub;
        NotifyEpisode ep;
        NotifyKills pending;    /* kills: those waiting to be shown */
        Warned warned[NOTIFY_MAX_WARNED]; /* kills: warnings on screen, oldest first */
        size_t n_warned;
        uint32_t id;            /* the server's id of the episode's notification; 0 = none */
        uint64_t since_hint_us; /* the active episode a (re)subscription found; 0 = none */
        bool ended;             /* the subscription is over (error, removed) */
        bool subscribed;        /* logged "watching" once */
} Watch;

struct Notifier {
        pressure_client *client;
        sd_bus *bus;
        bool bus_failing;       /* the last bus attempt failed; logged once until one works */
        int markup;             /* the server reads markup in the body: 1, 0, or -1 not asked yet */
        Watch watches[NOTIFY_MAX_WATCHES];
        size_t n_watches;
        TopRoots roots;
        bool have_roots;
        uint64_t min_interval_us;
        bool on_cleared_replace;
        bool dry_run;
        bool json;
        uint32_t dry_id;
};

/* ---- output of --dry-run ------------------------------------------------------------- */

static void dry_print(Notifier *n, const char *action, uint32_t id, const char *cgroup, int urgency,
                      const char *summary, const char *body) {
        if (n->json) {
                json_t *o = json_pack("{s:s, s:I, s:s}", "action", action, "id", (json_int_t) id, "cgroup", cgroup);
                char *text;

                if (!o)
                        return;
                if (urgency >= 0)
                        json_object_set_new(o, "urgency", json_string(notify_urgency_to_string((uint8_t) urgency)));
                if (summary) {
                        json_object_set_new(o, "summary", json_string(summary));
                        json_object_set_new(o, "body", json_string(body));
                }
                text = json_dumps(o, JSON_DUMP_FLAGS | JSON_PRESERVE_ORDER);
                json_decref(o);
                if (text)
                        printf("%s\n", text);
                free(text);
                return;
        }
        printf("%s id=%" PRIu32 " cgroup=%s", action, id, cgroup);
        if (urgency >= 0)
                printf(" urgency=%s", notify_urgency_to_string((uint8_t) urgency));
        if (summary) {
                _cleanup_free_ char *s = notify_quote(summary), *b = notify_quote(body);

                printf(" summary=%s body=%s", strna(s), strna(b));
        }
        printf("\n");
}

/* ---- the session bus ------------------------------------------------------------------- */

static void bus_drop(Notifier *n) {
        n->bus = sd_bus_flush_close_unref(n->bus);
        n->markup = -1;
}

/* The session bus, connected now if it was not; NULL (logged once) if it cannot be had. */
static sd_bus *bus_get(Notifier *n) {
        sd_bus *bus = NULL;
        int r;

        if (n->bus)
                return n->bus;
        r = sd_bus_open_user(&bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, NOTIFY_CALL_TIMEOUT_USEC);
        if (r < 0) {
                sd_bus_unref(bus);
                if (!n->bus_failing)
                        cli_notice("notify: cannot connect to the session bus: %s; "
                                "will try again at the next notification", strerror(-r));
                n->bus_failing = true;
                return NULL;
        }
        n->bus = bus;
        return bus;
}

/* Log the failure of a bus call once, and drop a broken connection. */
static void bus_failed(Notifier *n, const char *what, int r, const sd_bus_error *error) {
        if (!n->bus_failing) {
                if (sd_bus_error_is_set(error))
                        cli_notice("notify: %s: %s: %s; will try again at the next notification",
                                what, error->name, strna(error->message));
                else
                        cli_notice("notify: %s: %s; will try again at the next notification",
                                what, strerror(-r));
        }
        n->bus_failing = true;
        /* The server that comes next may be another one: ask its capabilities again. */
        n->markup = -1;
        if (!sd_bus_error_is_set(error) || !n->bus || sd_bus_is_open(n->bus) <= 0)
                bus_drop(n);
}

/* Whether the server takes markup in the body (GetCapabilities, asked once per server). */
static bool bus_markup(Notifier *n, sd_bus *bus) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *cap;
        int r;

        if (n->markup >= 0)
                return n->markup;
        r = sd_bus_call_method(bus, NOTIFY_DEST, NOTIFY_PATH, NOTIFY_IFACE, "GetCapabilities", &error, &reply, "");
        if (r < 0)
                return false; /* Notify will fail the same way and say why */
        n->markup = 0;
        r = sd_bus_message_enter_container(reply, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read(reply, "s", &cap)) > 0)
                if (streq(cap, "body-markup"))
                        n->markup = 1;
        sd_bus_message_unref(reply);
        return n->markup;
}

static void bus_worked(Notifier *n) {
        if (n->bus_failing)
                cli_notice("notify: notifications work again");
        n->bus_failing = false;
}

/* Notify(); returns 0 with the server's id in *ret_id, or a negative errno (logged). */
static int bus_notify(Notifier *n, uint32_t replaces, const char *icon, const char *summary, const char *body,
                      uint8_t urgency, int32_t expire_ms, uint32_t *ret_id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        _cleanup_free_ char *escaped = NULL;
        sd_bus *bus = bus_get(n);
        uint32_t id;
        int r;

        if (!bus)
                return -ENOTCONN;
        if (bus_markup(n, bus)) {
                escaped = notify_escape_markup(body);
                if (!escaped)
                        return -ENOMEM;
                body = escaped;
        }
        r = sd_bus_call_method(bus, NOTIFY_DEST, NOTIFY_PATH, NOTIFY_IFACE, "Notify", &error, &reply,
                               "susssasa{sv}i", NOTIFY_APP_NAME, replaces, icon, summary, body,
                               0, 1, "urgency", "y", urgency, expire_ms);
        if (r >= 0) {
                r = sd_bus_message_read(reply, "u", &id);
                sd_bus_message_unref(reply);
                if (r == 0)
                        r = -EBADMSG;
        }
        if (r < 0) {
                bus_failed(n, "cannot show a notification", r, &error);
                return r;
        }
        bus_worked(n);
        *ret_id = id;
        return 0;
}

static int bus_close_notification(Notifier *n, uint32_t id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = bus_get(n);
        int r;

        if (!bus)
                return -ENOTCONN;
        r = sd_bus_call_method(bus, NOTIFY_DEST, NOTIFY_PATH, NOTIFY_IFACE, "CloseNotification", &error, NULL,
                               "u", id);
        if (r < 0) {
                bus_failed(n, "cannot close a notification", r, &error);
                return r;
        }
        bus_worked(n);
        return 0;
}

/* ---- showing an episode ---------------------------------------------------------------- */

/* Show or update @w's notification (@action NOTIFY_SHOW or NOTIFY_UPDATE). */
static void watch_show(Watch *w, NotifyAction action, uint64_t now) {
        Notifier *n = w->n;
        NotifyText text = {
                .cgroup = w->cgroup,
                .level = w->ep.level,
                .duration_us = now > w->ep.start_us ? now - w->ep.start_us : 0,
        };
        TopSnapshot snap = {};
        _cleanup_free_ char *summary = NULL, *body = NULL;
        uint8_t urgency = notify_urgency(w->ep.level);
        bool ok = false;
        int r;

        /* The children as they are now: what the user may close. Unreadable: the text goes without. */
        if (n->have_roots && top_snapshot_read(&n->roots, w->cgroup, NULL, &snap) >= 0)
                text.n_children = notify_pick_children(&snap, w->cgroup, text.children);
        r = notify_format(&text, &summary, &body);
        top_snapshot_done(&snap);
        if (r < 0) {
                cli_notice("notify: %s", strerror(-r));
                notify_episode_tried(&w->ep, now, false);
                return;
        }
        if (n->dry_run) {
                if (w->id == 0)
                        w->id = ++n->dry_id;
                dry_print(n, action == NOTIFY_SHOW ? "show" : "update", w->id, w->cgroup, urgency, summary, body);
                ok = true;
        } else {
                uint32_t id;

                /* replaces_id 0 asks for a new one; an id the server forgot (restarted) gets a new one too. */
                if (bus_notify(n, w->id, "dialog-warning", summary, body, urgency, -1, &id) >= 0) {
                        w->id = id;
                        ok = true;
                }
        }
        notify_episode_tried(&w->ep, now, ok);
}

/*
 * Show the kills waiting in @w, one new notification (a kill is news of its
 * own: it replaces nothing and is not closed), urgency normal: it is over,
 * nothing is to be done at once. The cgroup of --dry-run is the killed one.
 */
static void watch_show_kills(Watch *w, uint64_t now) {
        Notifier *n = w->n;
        _cleanup_free_ char *summary = NULL, *body = NULL;
        bool ok = false;
        uint32_t id;
        int r;

        r = notify_format_kills(&w->pending, &summary, &body);
        if (r < 0) {
                cli_notice("notify: %s", strerror(-r));
                notify_kills_tried(&w->pending, now, false);
                return;
        }
        if (n->dry_run) {
                bool one = w->pending.n_kills == 1 && w->pending.more_events == 0;

                dry_print(n, "show", ++n->dry_id, one ? w->pending.kills[0].cgroup : w->cgroup, NOTIFY_URGENCY_NORMAL,
                          summary, body);
                ok = true;
        } else
                ok = bus_notify(n, 0, "dialog-warning", summary, body, NOTIFY_URGENCY_NORMAL, -1, &id) >= 0;
        notify_kills_tried(&w->pending, now, ok);
}

/* ---- warnings before a kill ------------------------------------------------------------ */

/* Take the warning @i of @w off the list; with @close, its notification off the screen too. */
static void warned_forget(Watch *w, size_t i, bool close) {
        Notifier *n = w->n;
        Warned *x = &w->warned[i];

        if (close && n->dry_run)
                dry_print(n, "close", x->id, x->cgroup, -1, NULL, NULL);
        else if (close)
                (void) bus_close_notification(n, x->id);
        free(x->cgroup);
        memmove(x, x + 1, (w->n_warned - i - 1) * sizeof(Warned));
        w->n_warned--;
}

/* Show the warning @ev at once, critical, and keep it for its kill to replace. Returns whether it was shown. */
static bool watch_show_prekill(Watch *w, const pressure_event *ev) {
        Notifier *n = w->n;
        _cleanup_free_ char *summary = NULL, *body = NULL, *cgroup = strdup(pressure_event_get_cgroup(ev));
        uint32_t id = 0;

        if (!cgroup || notify_format_prekill(cgroup, pressure_event_get_killed_by(ev), &summary, &body) < 0) {
                cli_notice("notify: %s", strerror(ENOMEM));
                return false;
        }
        if (n->dry_run) {
                id = ++n->dry_id;
                dry_print(n, "show", id, cgroup, NOTIFY_URGENCY_CRITICAL, summary, body);
        } else if (bus_notify(n, 0, "dialog-warning", summary, body, NOTIFY_URGENCY_CRITICAL, -1, &id) < 0)
                return false;
        if (w->n_warned == NOTIFY_MAX_WARNED)
                warned_forget(w, 0, true);
        w->warned[w->n_warned++] = (Warned) { TAKE_PTR(cgroup), id,
                                              pressure_event_get_deadline_us(ev) + NOTIFY_WARNED_LINGER_USEC };
        return true;
}

/* A warning: shown, then acknowledged (a notification saves nothing: systemd-oomd need not wait for it). */
static void watch_prekill(Watch *w, const pressure_event *ev) {
        uint64_t id;

        (void) watch_show_prekill(w, ev);
        if (pressure_event_get_prekill_id(ev, &id) >= 0)
                (void) prekill_send_ack(w->n->client, id, pressure_event_get_deadline_us(ev));
}

/* The kill @ev of a cgroup whose warning is on screen replaces that warning; returns whether it did. */
static bool watch_kill_replaces_warning(Watch *w, const pressure_event *ev) {
        Notifier *n = w->n;
        const char *cgroup = pressure_event_get_cgroup(ev);
        _cleanup_free_ char *summary = NULL, *body = NULL;
        NotifyKills k = {};
        uint32_t id;
        size_t i;
        int r;

        for (i = 0; i < w->n_warned && !streq(w->warned[i].cgroup, cgroup); i++)
                ;
        if (i == w->n_warned)
                return false;
        r = notify_kills_add(&k, cgroup, pressure_event_get_killed_by(ev), pressure_event_get_reason(ev),
                             pressure_event_get_count(ev), 0, 0);
        if (r >= 0)
                r = notify_format_kills(&k, &summary, &body);
        notify_kills_done(&k);
        if (r < 0)
                return false; /* shown the usual way, then */
        id = w->warned[i].id;
        if (n->dry_run)
                dry_print(n, "replace", id, cgroup, NOTIFY_URGENCY_NORMAL, summary, body);
        else
                (void) bus_notify(n, id, "dialog-warning", summary, body, NOTIFY_URGENCY_NORMAL, -1, &id);
        warned_forget(w, i, false);
        return true;
}

/* Close the warnings whose kill did not come in time. */
static void watch_expire_warnings(Watch *w, uint64_t now) {
        for (size_t i = 0; i < w->n_warned;)
                if (w->warned[i].close_at_us <= now)
                        warned_forget(w, i, true);
                else
                        i++;
}

/* The episode of @w is over: close its notification, or replace it with a short note. */
static void watch_end(Watch *w, uint64_t duration_us) {
        Notifier *n = w->n;
        _cleanup_free_ char *summary = NULL, *body = NULL;
        uint32_t id = w->id;

        w->since_hint_us = 0;
        if (!notify_episode_end(&w->ep) || id == 0)
                return;
        w->id = 0;
        if (n->on_cleared_replace && notify_format_cleared(w->cgroup, duration_us, &summary, &body) < 0) {
                cli_notice("notify: %s", strerror(ENOMEM));
                return;
        }
        if (n->dry_run) {
                if (n->on_cleared_replace)
                        dry_print(n, "replace", id, w->cgroup, NOTIFY_URGENCY_LOW, summary, body);
                else
                        dry_print(n, "close", id, w->cgroup, -1, NULL, NULL);
                return;
        }
        if (n->on_cleared_replace)
                (void) bus_notify(n, id, "dialog-information", summary, body, NOTIFY_URGENCY_LOW,
                                  NOTIFY_CLEARED_EXPIRE_MS, &id);
        else
                (void) bus_close_notification(n, id);
}

static const char *watch_name(const Watch *w) {
        return streq(w->cgroup, "/") ? "the whole system" : w->cgroup;
}

/*
 * Say why the subscription of @w ended with @error (error-text.h): "cannot watch CGROUP: SENTENCE", or
 * with --json the error object with the watch's "cgroup" added.
 */
static void watch_report_error(Watch *w, const pressure_error *error) {
        int exit_code;
        json_t *o = error_describe("notify", pressure_client_get_socket(w->n->client), pressure_error_get_errno(error),
                                   pressure_error_get_name(error), pressure_error_get_parameters(error), &exit_code);
        char *text = NULL;

        if (o && w->n->json) {
                json_object_set_new(o, "cgroup", json_string(w->cgroup));
                text = json_dumps(o, JSON_DUMP_FLAGS);
        }
        if (text)
                fprintf(stderr, "%s\n", text);
        else
                cli_notice("notify: cannot watch %s%s: %s", w->kills ? "kills in " : "", watch_name(w),
                        o ? json_string_value(json_object_get(o, "message")) : strerror(-pressure_error_get_errno(error)));
        free(text);
        json_decref(o);
}

/* "watching kills in CGROUP (by kernel, systemd-oomd)", once. */
static void kills_subscribed(Watch *w, const pressure_event *ev) {
        size_t n = pressure_event_get_n_kill_sources(ev), len = 0;
        char by[128] = "no killer reports yet";

        if (w->subscribed)
                return;
        w->subscribed = true;
        for (size_t i = 0; i < n && len < sizeof(by); i++) {
                int k = snprintf(by + len, sizeof(by) - len, "%s%s", i > 0 ? ", " : "by ",
                                 pressure_event_get_kill_source(ev, i));
                len = k < 0 ? sizeof(by) : len + (size_t) k;
        }
        cli_notice("notify: watching kills in %s (%s)", watch_name(w), by);
}

/*
 * The kills subscription ended with @error. A daemon without kills, and no
 * user@UID.service where it usually is, are said in a line of their own:
 * notify goes on with pressure.
 */
static void kills_failed(Watch *w, const pressure_error *error) {
        const char *name = pressure_error_get_name(error);

        if (streq_ptr(name, IDL_ERROR_NAME(VARLINK_INVALID_PARAMETER)) &&
            streq_ptr(pressure_error_get_parameter_string(error, "parameter"), "kills"))
                cli_notice("notify: the daemon does not report kills (it is older than 0.3); "
                        "not watching them");
        else if (w->kills_fallback && streq_ptr(name, IDL_ERROR_NAME(NO_SUCH_CGROUP)))
                cli_notice("notify: there is no %s; not watching kills", w->cgroup);
        else
                watch_report_error(w, error);
}

static int on_kills_event(pressure_subscription *s, const pressure_event *ev, void *userdata) {
        Watch *w = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        (void) s;
        switch (pressure_event_get_kind(ev)) {
        case PRESSURE_EVENT_SUBSCRIBED:
                kills_subscribed(w, ev);
                break;
        case PRESSURE_EVENT_PREKILL:
                watch_prekill(w, ev);
                break;
        case PRESSURE_EVENT_KILLED:
                if (watch_kill_replaces_warning(w, ev))
                        break;
                r = notify_kills_add(&w->pending, pressure_event_get_cgroup(ev), pressure_event_get_killed_by(ev),
                                     pressure_event_get_reason(ev), pressure_event_get_count(ev), now,
                                     w->n->min_interval_us);
                if (r < 0)
                        cli_notice("notify: %s", strerror(-r));
                else if (r == NOTIFY_SHOW)
                        watch_show_kills(w, now);
                break;
        case PRESSURE_EVENT_REMOVED:
                cli_notice("notify: %s is gone, no longer watching kills in it", watch_name(w));
                w->ended = true;
                break;
        case PRESSURE_EVENT_ERROR:
                kills_failed(w, pressure_event_get_error(ev));
                w->ended = true;
                break;
        default:
                break;
        }
        return 0;
}

static int on_event(pressure_subscription *s, const pressure_event *ev, void *userdata) {
        Watch *w = userdata;
        Notifier *n = w->n;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        const pressure_episode *ep = pressure_event_get_episode(ev);
        NotifyAction a;

        (void) s;
        switch (pressure_event_get_kind(ev)) {
        case PRESSURE_EVENT_SUBSCRIBED:
                /* After a reconnection: the episode shown may have ended while the daemon was away. */
                if (w->ep.active && (!ep || pressure_episode_get_start_us(ep) != w->ep.start_us))
                        watch_end(w, now > w->ep.start_us ? now - w->ep.start_us : 0);
                w->since_hint_us = ep ? pressure_episode_get_start_us(ep) : 0;
                if (!w->subscribed)
                        cli_notice("notify: watching %s", watch_name(w));
                w->subscribed = true;
                break;
        case PRESSURE_EVENT_PRESSURE: {
                /* An episode that began before we subscribed is dated from its start. */
                uint64_t since = !w->ep.active && w->since_hint_us ? w->since_hint_us
                                                                   : pressure_event_get_monotonic_us(ev);

                a = notify_episode_pressure(&w->ep, pressure_event_get_level(ev), since, now, n->min_interval_us);
                if (a == NOTIFY_SHOW || a == NOTIFY_UPDATE)
                        watch_show(w, a, now);
                break;
        }
        case PRESSURE_EVENT_CLEARED:
                watch_end(w, ep ? pressure_episode_get_duration_us(ep) : now > w->ep.start_us ? now - w->ep.start_us : 0);
                break;
        case PRESSURE_EVENT_RECONNECTED:
                cli_notice("notify: reconnected to the daemon, subscribing again to %s",
                        watch_name(w));
                break;
        case PRESSURE_EVENT_REMOVED:
                cli_notice("notify: %s is gone, no longer watching it", watch_name(w));
                watch_end(w, 0);
                w->ended = true;
                break;
        case PRESSURE_EVENT_ERROR:
                watch_report_error(w, pressure_event_get_error(ev));
                watch_end(w, 0);
                w->ended = true;
                break;
        default:
                break;
        }
        return 0;
}

/* ---- setup ------------------------------------------------------------------------------- */

/* The user's service manager cgroup from /proc/self/cgroup, or NULL (said why). */
static char *session_cgroup(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        char buf[16384];
        size_t len;
        char *path = NULL;
        int r;

        if (!f) {
                cli_notice("notify: cannot read /proc/self/cgroup: %m; "
                        "watching the whole system only");
                return NULL;
        }
        len = fread(buf, 1, sizeof(buf) - 1, f);
        buf[len] = 0;
        r = notify_session_cgroup(buf, getuid(), &path);
        if (r < 0) {
                cli_notice("notify: not running in a user@%u.service cgroup (%s); "
                        "watching the whole system only (use --cgroup to name one)",
                        (unsigned) getuid(), r == -ENOENT ? "see /proc/self/cgroup" : strerror(-r));
                return NULL;
        }
        return path;
}

/* Subscribe to pressure at @level on @cgroup, or with @kills to its kills. */
static int watch_add(Notifier *n, const char *cgroup, pressure_level level, bool kills) {
        Watch *w = &n->watches[n->n_watches];
        _cleanup_(pressure_selector_freep) pressure_selector *sel = NULL;
        int r;

        for (size_t i = 0; i < n->n_watches; i++)
                if (streq(n->watches[i].cgroup, cgroup) && n->watches[i].kills == kills)
                        return 0;
        *w = (Watch) { .n = n, .cgroup = strdup(cgroup), .kills = kills };
        if (!w->cgroup)
                return -ENOMEM;
        n->n_watches++;
        r = pressure_selector_new(&sel);
        if (r >= 0)
                r = pressure_selector_set_cgroup(sel, streq(cgroup, "/") ? NULL : cgroup);
        if (r >= 0)
                r = kills ? pressure_selector_set_kills(sel) : pressure_selector_set_level(sel, level);
        if (r >= 0)
                r = pressure_client_subscribe_async(n->client, sel, kills ? on_kills_event : on_event, w, &w->sub);
        return r;
}

static void notifier_done(Notifier *n) {
        for (size_t i = 0; i < n->n_watches; i++) {
                free(n->watches[i].cgroup);
                notify_kills_done(&n->watches[i].pending);
                for (size_t j = 0; j < n->watches[i].n_warned; j++)
                        free(n->watches[i].warned[j].cgroup);
        }
        n->client = pressure_client_free(n->client);
        bus_drop(n);
        top_roots_done(&n->roots);
}

/* Close what is on screen when the notifier stops: a stale warning would outlive the watching. */
static void notifier_close_all(Notifier *n) {
        for (size_t i = 0; i < n->n_watches; i++) {
                Watch *w = &n->watches[i];

                if (w->id != 0 && w->ep.shown && !n->dry_run)
                        (void) bus_close_notification(n, w->id);
                for (size_t j = 0; j < w->n_warned && !n->dry_run; j++)
                        (void) bus_close_notification(n, w->warned[j].id);
        }
}

static int poll_timeout_ms(Notifier *n, uint64_t now) {
        uint64_t wait = PRESSURE_TIMEOUT_INFINITE, t;

        if (pressure_client_get_timeout(n->client, &t) >= 0 && t != PRESSURE_TIMEOUT_INFINITE)
                wait = t > now ? t - now : 0;
        for (size_t i = 0; i < n->n_watches; i++) {
                uint64_t d = MIN(notify_episode_deadline(&n->watches[i].ep, n->min_interval_us),
                                 notify_kills_deadline(&n->watches[i].pending, n->min_interval_us));

                for (size_t j = 0; j < n->watches[i].n_warned; j++)
                        d = MIN(d, n->watches[i].warned[j].close_at_us);

                if (d != UINT64_MAX)
                        wait = MIN(wait, d > now ? d - now : 0);
        }
        if (n->bus && sd_bus_get_timeout(n->bus, &t) >= 0 && t != UINT64_MAX)
                wait = MIN(wait, t > now ? t - now : 0);
        if (wait == PRESSURE_TIMEOUT_INFINITE)
                return -1;
        /* Round up: waking before the deadline would only loop. */
        return (int) MIN((wait + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT32_MAX);
}

static int notify_run(Notifier *n, int sigfd) {
        for (;;) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd p[3] = {
                        { .fd = pressure_client_get_fd(n->client), .events = (short) pressure_client_get_events(n->client) },
                        { .fd = sigfd, .events = POLLIN },
                        { .fd = -1 },
                };
                size_t n_active = 0;
                int r;

                if (n->bus) {
                        p[2].fd = sd_bus_get_fd(n->bus);
                        r = sd_bus_get_events(n->bus);
                        p[2].events = (short) (r > 0 ? r : POLLIN);
                }
                r = poll(p, 3, poll_timeout_ms(n, now));
                if (r < 0 && errno != EINTR)
                        return cli_fail("notify", -errno, "poll: %m");
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                return 0;
                }
                r = pressure_client_process(n->client);
                if (r < 0) {
                        (void) error_report(stderr, n->json, "notify", pressure_client_get_socket(n->client), r,
                                            NULL, NULL);
                        return EXIT_DAEMON_ERROR;
                }
                /* Nothing is asked of the bus but calls; drain what it sends (NameAcquired, signals). */
                while (n->bus && (r = sd_bus_process(n->bus, NULL)) > 0)
                        ;
                if (n->bus && r < 0)
                        bus_drop(n);

                now = now_usec(CLOCK_MONOTONIC);
                for (size_t i = 0; i < n->n_watches; i++) {
                        Watch *w = &n->watches[i];
                        NotifyAction a = notify_episode_due(&w->ep, now, n->min_interval_us);

                        if (a != NOTIFY_NOTHING)
                                watch_show(w, a, now);
                        if (notify_kills_due(&w->pending, now, n->min_interval_us) == NOTIFY_SHOW)
                                watch_show_kills(w, now);
                        watch_expire_warnings(w, now);
                        n_active += !w->ended;
                }
                if (n_active == 0)
                        return cli_fail("notify", 0, "nothing left to watch");
        }
}

static void notify_help(void) {
        printf("pressurectl [OPTIONS] notify [--cgroup CGROUP] [--level L] [--on-cleared close|replace]\n"
               "                             [--min-interval SEC] [--no-kills] [--dry-run]\n\n"
               "Show memory pressure on the user's session (the user@UID.service cgroup) and on\n"
               "the whole system as desktop notifications (org.freedesktop.Notifications on the\n"
               "session bus): one per pressure episode, urgency by level, updated in place with\n"
               "how long it has lasted and the three largest child cgroups by memory.current.\n"
               "Also one notification per kill in the session, by the kernel or systemd-oomd:\n"
               "the unit or scope killed, who killed it and why; and a critical one when\n"
               "systemd-oomd is about to kill one (pressured 0.5), replaced by the kill.\n"
               "Waits for the daemon, and for the notification server, when they are not there.\n\n"
               "Options:\n"
               "     --cgroup CGROUP        watch CGROUP instead of the session's (\"/\": the\n"
               "                            whole system only), kills included\n"
               "     --level L              the level subscribed to: low, medium (default), critical\n"
               "     --on-cleared ACTION    when an episode ends: close its notification (default)\n"
               "                            or replace it with a short \"cleared\" note\n"
               "     --min-interval SEC     update an episode's notification at most once per SEC\n"
               "                            seconds (default 10; a rising level is shown at once);\n"
               "                            kills within SEC of the last shown are shown together\n"
               "     --no-kills             do not show kills\n"
               "     --dry-run              print each notification action, one line each (with\n"
               "                            --json, one JSON object), instead of showing it\n"
               "     --cgroup-root DIR      cgroup2 hierarchy to read children from (default: from\n"
               "                            mountinfo)\n"
               "     --cgroup-v1-root DIR   cgroup v1 memory hierarchy to read children from\n");
}

/* What notify's command line asks for besides what it sets in the Notifier. */
typedef struct NotifyArgs {
        const char *cgroup;   /* --cgroup, or NULL for the session's */
        pressure_level level; /* --level */
        bool roots_given;     /* --cgroup-root or --cgroup-v1-root */
        bool no_kills;        /* --no-kills */
        const char *socket;   /* --socket, the global one unless given after the command */
        bool user;            /* --user, likewise */
} NotifyArgs;

enum {
        ARG_CGROUP = 0x100, ARG_LEVEL, ARG_ON_CLEARED, ARG_MIN_INTERVAL, ARG_DRY_RUN, ARG_ROOT, ARG_V1_ROOT, ARG_NO_KILLS,
        ARG_JSON, ARG_SOCKET, ARG_USER,
};

/* Apply one option to @n and @a; returns -1 to go on, or the exit status to end with. */
static int parse_option(Notifier *n, NotifyArgs *a, int opt, const char *arg) {
        int r;

        switch (opt) {
        case 'h':
                notify_help();
                return 0;
        case ARG_CGROUP:
                r = cgroup_arg("notify ", arg, NULL);
                if (r != 0)
                        return r;
                a->cgroup = arg;
                return -1;
        case ARG_LEVEL:
                r = pressure_level_from_string(arg);
                if (r < 0)
                        return usage_error("notify ", "invalid level '%s', expected low, medium or critical", arg);
                a->level = (pressure_level) r;
                return -1;
        case ARG_ON_CLEARED:
                if (streq(arg, "close"))
                        n->on_cleared_replace = false;
                else if (streq(arg, "replace"))
                        n->on_cleared_replace = true;
                else
                        return usage_error("notify ", "invalid --on-cleared '%s', expected close or replace", arg);
                return -1;
        case ARG_MIN_INTERVAL:
                if (parse_seconds(arg, (uint64_t) NOTIFY_MAX_INTERVAL_SEC * USEC_PER_SEC, &n->min_interval_us) < 0 ||
                    n->min_interval_us == 0)
                        return usage_error("notify ", "invalid --min-interval '%s', expected seconds in (0, %.0f]",
                                           arg, NOTIFY_MAX_INTERVAL_SEC);
                return -1;
        case ARG_DRY_RUN:
                n->dry_run = true;
                return -1;
        case ARG_NO_KILLS:
                a->no_kills = true;
                return -1;
        /* The global options may come after the command too. */
        case ARG_JSON:
                n->json = true;
                cli_set_json(true);
                return -1;
        case ARG_SOCKET:
                a->socket = arg;
                return -1;
        case ARG_USER:
                a->user = true;
                return -1;
        case ARG_ROOT:
        case ARG_V1_ROOT: {
                char **dst = opt == ARG_ROOT ? &n->roots.v2 : &n->roots.v1_memory;

                free(*dst);
                *dst = strdup(arg);
                if (!*dst)
                        return cli_fail("notify", -ENOMEM, "%s", strerror(ENOMEM));
                a->roots_given = true;
                return -1;
        }
        default:
                return usage_error("notify ", NULL);
        }
}

/* Parse notify's command line into @n and @a; returns -1 to go on, or the exit status to end with. */
static int notify_parse_argv(Notifier *n, NotifyArgs *a, int argc, char **argv) {
        static const struct option options[] = {
                { "help",           no_argument,       NULL, 'h' },
                { "cgroup",         required_argument, NULL, ARG_CGROUP },
                { "level",          required_argument, NULL, ARG_LEVEL },
                { "on-cleared",     required_argument, NULL, ARG_ON_CLEARED },
                { "min-interval",   required_argument, NULL, ARG_MIN_INTERVAL },
                { "dry-run",        no_argument,       NULL, ARG_DRY_RUN },
                { "no-kills",       no_argument,       NULL, ARG_NO_KILLS },
                { "cgroup-root",    required_argument, NULL, ARG_ROOT },
                { "cgroup-v1-root", required_argument, NULL, ARG_V1_ROOT },
                { "json",           no_argument,       NULL, ARG_JSON },
                { "socket",         required_argument, NULL, ARG_SOCKET },
                { "user",           no_argument,       NULL, ARG_USER },
                {}
        };
        int opt, r;

        while ((opt = getopt_long(argc, argv, "+h", options, NULL)) >= 0) {
                r = parse_option(n, a, opt, optarg);
                if (r >= 0)
                        return r;
        }
        if (optind < argc)
                return usage_error("notify ", "unexpected argument '%s'", argv[optind]);
        /* Without --dry-run nothing is printed: say so rather than ignore it. */
        if (n->json && !n->dry_run)
                return usage_error("notify ", "--json needs --dry-run: notifications go to the desktop, not to stdout");
        return -1;
}

/* Set up the client, waiting for the daemon; returns -1 to go on, or the exit status to end with. */
static int notify_client_open(Notifier *n, const char *socket, bool user) {
        int r;

        r = pressure_client_new(&n->client);
        if (r >= 0 && socket)
                r = pressure_client_set_socket(n->client, socket);
        if (r >= 0 && user)
                r = pressure_client_set_user(n->client);
        if (r >= 0)
                r = pressure_client_set_wait_for_daemon(n->client, 1);
        if (r == -ENXIO)
                return user_socket_error("notify");
        if (r < 0)
                return cli_fail("notify", r, "%s", strerror(-r));
        return -1;
}

/*
 * Watch kills in @cgroup, the one watched for pressure; without one (we do
 * not run in the session) in the usual place of the user's service
 * manager, /user.slice/user-UID.slice/user@UID.service.
 */
static int kills_add(Notifier *n, const char *cgroup) {
        _cleanup_free_ char *fallback = NULL;
        int r;

        if (!cgroup) {
                if (asprintf(&fallback, "/user.slice/user-%u.slice/user@%u.service", (unsigned) getuid(),
                             (unsigned) getuid()) < 0)
                        return -ENOMEM;
                cgroup = fallback;
        }
        r = watch_add(n, cgroup, PRESSURE_LEVEL_NONE, true);
        if (r >= 0 && fallback)
                n->watches[n->n_watches - 1].kills_fallback = true;
        return r;
}

/* Watch @a's cgroup (default: the session's), then the whole system, then kills; returns 0 or a negative errno. */
static int watches_add(Notifier *n, const NotifyArgs *a) {
        _cleanup_free_ char *session = NULL;
        const char *cgroup = a->cgroup;
        int r = 0;

        if (!cgroup)
                cgroup = session = session_cgroup();
        if (cgroup)
                r = watch_add(n, cgroup, a->level, false);
        if (r >= 0)
                r = watch_add(n, "/", a->level, false);
        if (r >= 0 && !a->no_kills)
                r = kills_add(n, cgroup);
        return r;
}

/* Block SIGTERM, SIGINT and SIGHUP and return a signalfd for them, or a negative errno. */
static int signals_open(void) {
        sigset_t mask;
        int fd;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? -errno : fd;
}

/**
 * notify_main - the notify command
 * @argc: arguments from the command name on
 * @argv: likewise
 * @socket: the global --socket, or NULL
 * @user: the global --user
 * @json: the global --json
 */
int notify_main(int argc, char **argv, const char *socket, bool user, bool json) {
        _cleanup_(notifier_done) Notifier n = { .min_interval_us = NOTIFY_DEFAULT_INTERVAL_USEC, .json = json,
                                                .markup = -1 };
        NotifyArgs a = { .level = PRESSURE_LEVEL_MEDIUM, .socket = socket, .user = user };
        _cleanup_close_ int sigfd = -EBADF;
        int r;

        r = notify_parse_argv(&n, &a, argc, argv);
        if (r >= 0)
                return r;

        if (!a.roots_given && top_roots_from_mountinfo(&n.roots) < 0)
                cli_notice("notify: cannot find the cgroup hierarchies, "
                        "notifications will not name child cgroups");
        n.have_roots = n.roots.v2 || n.roots.v1_memory;

        r = notify_client_open(&n, a.socket, a.user);
        if (r >= 0)
                return r;
        r = watches_add(&n, &a);
        if (r < 0) {
                (void) error_report(stderr, n.json, "notify", pressure_client_get_socket(n.client), r, NULL, NULL);
                return EXIT_DAEMON_ERROR;
        }

        sigfd = signals_open();
        if (sigfd < 0)
                return cli_fail("notify", sigfd, "signalfd: %s", strerror(-sigfd));

        r = notify_run(&n, sigfd);
        notifier_close_all(&n);
        return r;
}

int cmd_notify(int argc, char **argv) {
        return notify_main(argc, argv, arg_socket, arg_user, arg_json);
}
