/* SPDX-License-Identifier: MIT */
/*
 * The org.freedesktop.LowMemoryMonitor service (low-memory-monitor.h): the
 * three listeners, the bus object, the name, and the signal.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config-build.h"
#include "event.h"
#include "log.h"
#include "low-memory-monitor.h"
#include "metrics-text.h"
#include "util.h"
#include "varlink-error.h"

typedef struct LevelListener {
        Listener listener;          /* first: the registry hands this back */
        LowMemoryMonitor *owner;
} LevelListener;

struct LowMemoryMonitor {
        Registry *registry;
        SystemBus *bus;
        bool enabled;
        LowMemoryMonitorState state;
        BusUser *user;
        LevelListener levels[_LEVEL_MAX];

        sd_bus_slot *object;        /* the vtable, while connected */
        sd_bus_slot *owner_match;   /* NameOwnerChanged for our name, while connected */
        sd_bus_slot *request;       /* the pending RequestName or GetConnectionUnixProcessID */
        bool taken_logged;          /* one line per time the name is taken */

        Body *last;                 /* the last event signalled: one event reaches all three listeners */
        uint64_t signals;
};

static const char *const state_table[_LMM_STATE_MAX] = {
        [LMM_OFF] = "off",
        [LMM_WAITING_FOR_BUS] = "waiting-for-bus",
        [LMM_OWNER] = "owner",
        [LMM_NAME_TAKEN] = "name-taken",
};

const char *low_memory_monitor_state_to_string(LowMemoryMonitorState s) {
        return s >= 0 && s < _LMM_STATE_MAX ? state_table[s] : NULL;
}

uint8_t low_memory_monitor_level_byte(Level level) {
        switch (level) {
        case LEVEL_LOW:
                return 50;
        case LEVEL_MEDIUM:
                return 100;
        case LEVEL_CRITICAL:
                return 255;
        default:
                return 0;
        }
}

static const sd_bus_vtable lmm_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_SIGNAL_WITH_NAMES("LowMemoryWarning", "y", SD_BUS_PARAM(level), 0),
        SD_BUS_VTABLE_END,
};

/*
 * The level an event stands for: an injected event carries its own; a
 * kernel one is the level of the registration's trigger.
 */
static Level event_level(const Body *body, const Listener *l) {
        if ((body->flags & BODY_HAS_LEVEL) && body->level >= 0 && body->level < _LEVEL_MAX)
                return (Level) body->level;
        return l->level;
}

static bool lmm_deliver(Listener *l, Body *body, uint64_t count) {
        LowMemoryMonitor *m = ((LevelListener *) l)->owner;
        sd_bus *bus = system_bus_get(m->bus);
        Level level = l->level;
        uint8_t byte;
        int k;

        /*
         * A kernel notification comes bare, before the daemon has read the
         * pressure file or built the event: the level is the registration's.
         * An injected event reaches the three registrations with one body:
         * one signal, at the level the body names.
         */
        if (body) {
                if (body == m->last)
                        return false;
                body_unref(m->last);
                m->last = body_ref(body);
                level = event_level(body, l);
        }
        byte = low_memory_monitor_level_byte(level);
        if (m->state != LMM_OWNER || !bus || byte == 0)
                return false;
        k = sd_bus_emit_signal(bus, LOW_MEMORY_MONITOR_PATH, LOW_MEMORY_MONITOR_INTERFACE, "LowMemoryWarning", "y",
                               byte);
        if (k < 0) {
                log_ratelimited(LOG_WARNING, k, NULL, 10, 1, "Failed to send LowMemoryWarning, ignoring: %m");
                return false;
        }
        system_bus_kick(m->bus);
        m->signals++;
        return true;
}

static void lmm_removed(Listener *l, Registration *r) {
        /* "/" is never removed; were it, the level would stay silent until the next enable. */
        log_warning("The whole-system registration of the %s level is gone; LowMemoryWarning will miss it.",
                    level_to_string(l->level));
}

static const ListenerOps lmm_listener_ops = {
        .deliver = lmm_deliver,
        .removed = lmm_removed,
};

/* The registration of [Levels] @level on the whole system, as a Subscribe with "level" would make. */
static void lmm_attach_level(LowMemoryMonitor *m, Level level) {
        Registry *reg = m->registry;
        LevelListener *ll = &m->levels[level];
        _cleanup_(varlink_error_done) VarlinkError e = {};
        SourceFailure f = {};
        RegistrationKey key = { .cgroup = "/", .resource = RESOURCE_MEMORY };
        char reason[POLICY_REASON_MAX];
        Registration *r;
        bool adjusted;
        int k;

        if (access(resource_proc_pressure_file(RESOURCE_MEMORY), R_OK) == 0) {
                key.type = SOURCE_PSI;
                key.psi = reg->config->levels[level];
        } else {
                key.type = SOURCE_VMPRESSURE;
                key.vm_level = level;
                key.vm_mode = reg->config->vmpressure_mode;
        }
        k = registration_acquire_for(reg, &key, -1, 0, false, &r, &adjusted, reason, &f);
        if (k < 0) {
                varlink_error_from_failure(&e, &f, key.cgroup);
                log_warning_errno(k, "Failed to register the %s level on the whole system for LowMemoryWarning (%s), "
                                  "leaving it out: %m", level_to_string(level), strna(e.name));
                return;
        }
        ll->owner = m;
        ll->listener = (Listener) {
                .ops = &lmm_listener_ops,
                .kick = true, /* the signal needs only the level: no wait for the PSI read */
                .by_level = true,
                .level = level,
        };
        listener_attach(&ll->listener, r);
}

/* The reply to GetConnectionUnixProcessID of the name's owner: say who holds it. */
static int on_owner_pid(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        LowMemoryMonitor *m = userdata;
        _cleanup_free_ char *comm = NULL;
        char path[64];
        uint32_t pid = 0;

        m->request = sd_bus_slot_unref(m->request);
        if (sd_bus_message_is_method_error(reply, NULL) || sd_bus_message_read(reply, "u", &pid) < 0 || pid == 0) {
                log_warning("The name " LOW_MEMORY_MONITOR_NAME " is owned by another program (likely "
                            "low-memory-monitor); GLib applications hear it, not pressured. Stop and disable it "
                            "for pressured to serve the name; until then pressured waits for the name.");
                return 0;
        }
        snprintf(path, sizeof(path), "/proc/%" PRIu32 "/comm", pid);
        if (read_full_file(path, 256, &comm, NULL) >= 0)
                strip_trailing(comm);
        log_warning("The name " LOW_MEMORY_MONITOR_NAME " is owned by pid %" PRIu32 " (%s); GLib applications hear "
                    "it, not pressured. Stop and disable it (for low-memory-monitor: systemctl disable --now "
                    "low-memory-monitor.service) for pressured to serve the name; until then pressured waits for it.",
                    pid, strna(comm));
        return 0;
}

static void lmm_name_taken(LowMemoryMonitor *m, sd_bus *bus) {
        int k;

        m->state = LMM_NAME_TAKEN;
        if (m->taken_logged)
                return;
        m->taken_logged = true;
        k = sd_bus_call_method_async(bus, &m->request, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionUnixProcessID", on_owner_pid, m, "s",
                                     LOW_MEMORY_MONITOR_NAME);
        if (k < 0)
                log_warning_errno(k, "The name " LOW_MEMORY_MONITOR_NAME " is owned by another program: %m");
}

static int on_request_name(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        LowMemoryMonitor *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t result = 0;

        m->request = sd_bus_slot_unref(m->request);
        if (e) {
                /* Most likely the policy file is not installed: it is our setup, not someone else's name. */
                m->state = LMM_NAME_TAKEN;
                log_error("The system bus refused pressured the name " LOW_MEMORY_MONITOR_NAME " (%s: %s); is "
                          "io.pressured.LowMemoryMonitor.conf installed in " PRESSURED_DBUSPOLICYDIR "/?",
                          e->name, strna(e->message));
                return 0;
        }
        if (sd_bus_message_read(reply, "u", &result) < 0)
                result = 0;
        if (result == 1 || result == 4) { /* primary owner, already owner */
                m->state = LMM_OWNER;
                m->taken_logged = false;
                log_info("Serving " LOW_MEMORY_MONITOR_NAME " on the system bus.");
        } else
                lmm_name_taken(m, sd_bus_message_get_bus(reply));
        return 0;
}

static void lmm_request_name(LowMemoryMonitor *m, sd_bus *bus) {
        int k;

        m->request = sd_bus_slot_unref(m->request);
        m->state = LMM_WAITING_FOR_BUS;
        /* No SD_BUS_NAME_QUEUE: DO_NOT_QUEUE, answered at once. */
        k = sd_bus_request_name_async(bus, &m->request, LOW_MEMORY_MONITOR_NAME, 0, on_request_name, m);
        if (k < 0)
                log_error_errno(k, "Failed to ask for the name " LOW_MEMORY_MONITOR_NAME ": %m");
}

/*
 * The owner of the name changed: take it when it is free. Once ours it
 * stays ours (no SD_BUS_NAME_ALLOW_REPLACEMENT) until we release it.
 */
static int on_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        LowMemoryMonitor *m = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0 || !streq(name, LOW_MEMORY_MONITOR_NAME))
                return 0;
        if (new_owner[0] == 0 && m->state == LMM_NAME_TAKEN) {
                log_info("The name " LOW_MEMORY_MONITOR_NAME " was released; asking for it.");
                lmm_request_name(m, sd_bus_message_get_bus(msg));
        }
        return 0;
}

static void lmm_drop_slots(LowMemoryMonitor *m) {
        m->object = sd_bus_slot_unref(m->object);
        m->owner_match = sd_bus_slot_unref(m->owner_match);
        m->request = sd_bus_slot_unref(m->request);
}

static void lmm_connected(void *userdata, sd_bus *bus) {
        LowMemoryMonitor *m = userdata;
        int k;

        lmm_drop_slots(m);
        k = sd_bus_add_object_vtable(bus, &m->object, LOW_MEMORY_MONITOR_PATH, LOW_MEMORY_MONITOR_INTERFACE,
                                     lmm_vtable, m);
        if (k >= 0)
                /* Before the request, so that a release after it cannot be missed. */
                k = sd_bus_add_match_async(bus, &m->owner_match,
                                           "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                                           "interface='org.freedesktop.DBus',member='NameOwnerChanged',"
                                           "arg0='" LOW_MEMORY_MONITOR_NAME "'",
                                           on_owner_changed, NULL, m);
        if (k < 0) {
                log_error_errno(k, "Failed to set up " LOW_MEMORY_MONITOR_PATH " on the system bus: %m");
                lmm_drop_slots(m);
                return;
        }
        lmm_request_name(m, bus);
}

static void lmm_disconnected(void *userdata) {
        LowMemoryMonitor *m = userdata;

        lmm_drop_slots(m);
        m->state = LMM_WAITING_FOR_BUS;
        m->taken_logged = false;
}

static const BusUserOps lmm_bus_ops = {
        .connected = lmm_connected,
        .disconnected = lmm_disconnected,
};

static void lmm_disable(LowMemoryMonitor *m) {
        sd_bus *bus = system_bus_get(m->bus);

        /* Another user may keep the connection: give the name back explicitly. */
        if (bus && m->state == LMM_OWNER) {
                (void) sd_bus_release_name_async(bus, NULL, LOW_MEMORY_MONITOR_NAME, NULL, NULL);
                system_bus_kick(m->bus);
        }
        lmm_drop_slots(m);
        m->user = bus_user_free(m->user);
        for (Level l = 0; l < _LEVEL_MAX; l++)
                listener_detach(&m->levels[l].listener);
        m->last = body_unref(m->last);
        /* Only a name we own is one we stop serving: one that was never ours is just no longer asked for. */
        if (m->enabled && m->state == LMM_OWNER)
                log_info("Stopped serving " LOW_MEMORY_MONITOR_NAME ".");
        else if (m->enabled)
                log_info("[DBus] LowMemoryMonitor=no: releasing the level registrations of the whole system; "
                         "the name " LOW_MEMORY_MONITOR_NAME " was not ours (%s).",
                         low_memory_monitor_state_to_string(m->state));
        m->enabled = false;
        m->state = LMM_OFF;
}

int low_memory_monitor_set_enabled(LowMemoryMonitor *m, bool enabled) {
        int k;

        if (enabled == m->enabled)
                return 0;
        if (!enabled) {
                lmm_disable(m);
                return 0;
        }
        m->enabled = true;
        m->state = LMM_WAITING_FOR_BUS;
        m->taken_logged = false;
        for (Level l = 0; l < _LEVEL_MAX; l++)
                lmm_attach_level(m, l);
        k = system_bus_add_user(m->bus, &lmm_bus_ops, m, &m->user);
        if (k < 0) {
                lmm_disable(m);
                return log_error_errno(k, "Failed to enable [DBus] LowMemoryMonitor=: %m");
        }
        log_info("[DBus] LowMemoryMonitor=yes: holding the low, medium and critical registrations of the whole "
                 "system, connecting to the system bus.");
        return 0;
}

int low_memory_monitor_new(Registry *registry, SystemBus *bus, LowMemoryMonitor **ret) {
        LowMemoryMonitor *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->registry = registry;
        m->bus = bus;
        m->state = LMM_OFF;
        *ret = m;
        return 0;
}

LowMemoryMonitor *low_memory_monitor_free(LowMemoryMonitor *m) {
        if (!m)
                return NULL;
        lmm_disable(m);
        free(m);
        return NULL;
}

LowMemoryMonitorState low_memory_monitor_state(const LowMemoryMonitor *m) {
        return m ? m->state : LMM_OFF;
}

uint64_t low_memory_monitor_signals(const LowMemoryMonitor *m) {
        return m ? m->signals : 0;
}

json_t *low_memory_monitor_status_json(const LowMemoryMonitor *m, const SystemBus *bus) {
        return json_pack("{s:b, s:s, s:I}", "connected", system_bus_is_connected(bus), "low_memory_monitor",
                         low_memory_monitor_state_to_string(low_memory_monitor_state(m)), "low_memory_warnings",
                         (json_int_t) low_memory_monitor_signals(m));
}

void low_memory_monitor_write_metrics(struct evbuffer *out, const LowMemoryMonitor *m, const SystemBus *bus) {
        metrics_write_header(out, "pressured_dbus_connected", "gauge", "1 while the system bus connection is up.");
        metrics_write_sample_u64(out, "pressured_dbus_connected", NULL, 0, system_bus_is_connected(bus));
        metrics_write_header(out, "pressured_low_memory_monitor_owner", "gauge",
                             "1 while pressured owns org.freedesktop.LowMemoryMonitor.");
        metrics_write_sample_u64(out, "pressured_low_memory_monitor_owner", NULL, 0,
                                 low_memory_monitor_state(m) == LMM_OWNER);
        metrics_write_header(out, "pressured_low_memory_warnings_total", "counter",
                             "LowMemoryWarning signals sent on the system bus.");
        metrics_write_sample_u64(out, "pressured_low_memory_warnings_total", NULL, 0, low_memory_monitor_signals(m));
}
