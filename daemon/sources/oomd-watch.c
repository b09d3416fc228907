/* SPDX-License-Identifier: MIT */
/* The shared match on systemd-oomd's Killed signal. */
#include <stdlib.h>

#include "kills.h"
#include "log.h"
#include "oomd-watch.h"
#include "util.h"

#define OOMD_NAME "org.freedesktop.oom1"
#define OOMD_PATH "/org/freedesktop/oom1"
#define OOMD_INTERFACE "org.freedesktop.oom1.Manager"

#define DBUS_NAME "org.freedesktop.DBus"
#define DBUS_PATH "/org/freedesktop/DBus"

struct OomdWatch {
        SystemBus *bus;
        Counters *counters;
        BusUser *user;              /* while there are sources */
        sd_bus_slot *killed;        /* the Killed match, while connected */
        sd_bus_slot *owner_changed; /* NameOwnerChanged of org.freedesktop.oom1 */
        sd_bus_slot *get_owner;     /* the GetNameOwner call in flight */
        bool installed;             /* the bus confirmed the Killed match */
        bool owned;                 /* org.freedesktop.oom1 has an owner */
        bool settled;               /* the owner is known on this connection */
        void (*settled_fn)(void *userdata);
        void *settled_userdata;
        Source *sources;
};

int oomd_watch_new(SystemBus *bus, Counters *counters, OomdWatch **ret) {
        OomdWatch *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->bus = bus;
        w->counters = counters;
        *ret = w;
        return 0;
}

/* Forget everything added on the connection. */
static void oomd_watch_drop_slots(OomdWatch *w) {
        w->killed = sd_bus_slot_unref(w->killed);
        w->owner_changed = sd_bus_slot_unref(w->owner_changed);
        w->get_owner = sd_bus_slot_unref(w->get_owner);
        w->installed = false;
        w->owned = false;
        w->settled = false;
}

OomdWatch *oomd_watch_free(OomdWatch *w) {
        if (!w)
                return NULL;
        oomd_watch_drop_slots(w);
        w->user = bus_user_free(w->user);
        free(w);
        return NULL;
}

const char *oomd_watch_describe_inactive(const OomdWatch *w, char *buf, size_t size) {
        if (oomd_watch_active(w))
                return NULL;
        if (!w || !w->bus)
                snprintf(buf, size, "the daemon does not use the system bus");
        else if (system_bus_describe_down(w->bus, buf, size))
                ;
        else if (!w->installed)
                snprintf(buf, size, "the match on its Killed signal is not installed on the system bus");
        else
                snprintf(buf, size, "nobody owns %s on the system bus: systemd-oomd is not running", OOMD_NAME);
        return buf;
}

bool oomd_watch_active(const OomdWatch *w) {
        return w && w->installed && w->owned;
}

bool oomd_watch_settling(const OomdWatch *w) {
        return w && w->user && !w->settled;
}

void oomd_watch_give_up(OomdWatch *w) {
        if (w)
                w->settled = true;
}

void oomd_watch_set_settled(OomdWatch *w, void (*fn)(void *userdata), void *userdata) {
        w->settled_fn = fn;
        w->settled_userdata = userdata;
}

/* The picture is complete (or as complete as it gets on this connection). */
static void oomd_watch_settle(OomdWatch *w) {
        if (w->settled)
                return;
        w->settled = true;
        if (w->settled_fn)
                w->settled_fn(w->settled_userdata);
}

/* Hand one kill to every source at or above the killed cgroup. */
static void oomd_watch_deliver(OomdWatch *w, const char *cgroup, const char *reason) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), rt = now_usec(CLOCK_REALTIME);
        const EventData event = {
                .kind = EVENT_KILLED, .cgroup = cgroup, .realtime_us = rt, .monotonic_us = mono,
                .killed = { .by = "systemd-oomd", .reason = reason },
        };
        Source *s, *n;

        counter_inc(w->counters, COUNTER_KILLS_SYSTEMD_OOMD);
        log_info("systemd-oomd killed %s (%s).", cgroup, reason);
        /* Subscribers that stop reading are freed from the loop, not here. */
        LIST_FOREACH_SAFE(tracked, s, n, w->sources)
                if (kills_covers(s->cgroup, cgroup))
                        s->cb->event(s, &event, 1);
}

static int on_killed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        OomdWatch *w = userdata;
        _cleanup_free_ char *cgroup = NULL;
        const char *path, *reason;
        int k;

        k = sd_bus_message_read(m, "ss", &path, &reason);
        if (k < 0) {
                log_ratelimited(LOG_WARNING, -k, NULL, 10, 3,
                                "Ignoring a Killed signal of systemd-oomd that is not (ss): %m");
                return 0;
        }
        /* The name can be owned only as the bus policy allows; still, what it
         * says goes into events: a cgroup path as a client would give it, a
         * reason of reasonable length. */
        k = kills_oomd_check(path, reason, &cgroup);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                log_ratelimited(LOG_WARNING, 0, NULL, 10, 3,
                                "Ignoring a Killed signal of systemd-oomd with an invalid cgroup or reason.");
                return 0;
        }
        oomd_watch_deliver(w, cgroup, reason);
        return 0;
}

static int on_killed_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        OomdWatch *w = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e) {
                log_warning("The system bus refused the match on systemd-oomd's Killed signal (%s), its kills will not be reported.",
                            strna(e->message));
                return 0;
        }
        w->installed = true;
        log_debug("Listening to systemd-oomd's Killed signal.");
        return 0;
}

static void oomd_watch_set_owned(OomdWatch *w, bool owned) {
        if (owned != w->owned)
                log_debug("%s %s.", OOMD_NAME, owned ? "has an owner" : "has no owner");
        w->owned = owned;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || !streq(name, OOMD_NAME))
                return 0;
        oomd_watch_set_owned(userdata, new_owner[0] != 0);
        return 0;
}

static int on_get_owner(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        OomdWatch *w = userdata;

        w->get_owner = sd_bus_slot_unref(w->get_owner);
        /* NameHasNoOwner, or anything else: nobody to hear from yet. The
         * reply comes after those of the AddMatch calls sent before it. */
        oomd_watch_set_owned(w, !sd_bus_message_is_method_error(m, NULL));
        oomd_watch_settle(w);
        return 0;
}

/* The matches first, then the question: whatever changes after the answer is signalled. */
static void oomd_watch_connected(void *userdata, sd_bus *bus) {
        OomdWatch *w = userdata;
        int k;

        oomd_watch_drop_slots(w);
        k = sd_bus_match_signal_async(bus, &w->killed, OOMD_NAME, OOMD_PATH, OOMD_INTERFACE, "Killed", on_killed,
                                      on_killed_installed, w);
        if (k >= 0)
                k = sd_bus_add_match_async(bus, &w->owner_changed,
                                           "type='signal',sender='" DBUS_NAME "',path='" DBUS_PATH "',"
                                           "interface='" DBUS_NAME "',member='NameOwnerChanged',"
                                           "arg0='" OOMD_NAME "'",
                                           on_owner_changed, NULL, w);
        if (k >= 0)
                k = sd_bus_call_method_async(bus, &w->get_owner, DBUS_NAME, DBUS_PATH, DBUS_NAME, "GetNameOwner",
                                             on_get_owner, w, "s", OOMD_NAME);
        if (k < 0) {
                log_warning_errno(-k, "Failed to listen to systemd-oomd on the system bus: %m");
                oomd_watch_drop_slots(w);
                oomd_watch_settle(w);
        }
}

static void oomd_watch_disconnected(void *userdata) {
        oomd_watch_drop_slots(userdata);
}

static const BusUserOps oomd_watch_bus_ops = {
        .connected = oomd_watch_connected,
        .disconnected = oomd_watch_disconnected,
};

int oomd_watch_add(OomdWatch *w, Source *s) {
        if (!w)
                return 0;
        if (!w->sources && w->bus) {
                int k = system_bus_add_user(w->bus, &oomd_watch_bus_ops, w, &w->user);

                if (k < 0)
                        return k;
        }
        LIST_PREPEND(tracked, w->sources, s);
        return 0;
}

void oomd_watch_remove(OomdWatch *w, Source *s) {
        if (!w)
                return;
        LIST_REMOVE(tracked, w->sources, s);
        if (w->sources)
                return;
        /* The last kills source: no match, no bus connection for us. */
        oomd_watch_drop_slots(w);
        w->user = bus_user_free(w->user);
}
