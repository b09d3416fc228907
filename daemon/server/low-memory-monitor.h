/* SPDX-License-Identifier: MIT */
/*
 * The org.freedesktop.LowMemoryMonitor service ([DBus] LowMemoryMonitor=):
 * what the low-memory-monitor daemon offers GLib's GMemoryMonitor, served
 * from the registry. While enabled it holds three whole-system ("/")
 * registrations of [Levels] low, medium and critical as listeners, and a
 * user of the system bus (system-bus.h); on each connection it serves the
 * object /org/freedesktop/LowMemoryMonitor (interface
 * org.freedesktop.LowMemoryMonitor, signal LowMemoryWarning(y),
 * introspectable) and asks for the name, without queueing. Each pressure
 * event of those registrations, injected ones included, becomes one
 * LowMemoryWarning: 50 low, 100 medium, 255 critical, sent while the name
 * is ours. A name owned by someone else is logged once with its owner; the
 * service waits for NameOwnerChanged to release it and then asks again.
 * Disabled, it holds nothing: no registration, no bus user.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "registration.h"
#include "system-bus.h"

struct evbuffer;

#define LOW_MEMORY_MONITOR_NAME "org.freedesktop.LowMemoryMonitor"
#define LOW_MEMORY_MONITOR_PATH "/org/freedesktop/LowMemoryMonitor"
#define LOW_MEMORY_MONITOR_INTERFACE "org.freedesktop.LowMemoryMonitor"

typedef enum LowMemoryMonitorState {
        LMM_OFF,                    /* LowMemoryMonitor=no */
        LMM_WAITING_FOR_BUS,        /* enabled: no connection yet, or the name was asked for */
        LMM_OWNER,                  /* the name is ours: signals are sent */
        LMM_NAME_TAKEN,             /* someone else owns it (or the bus refused it) */
        _LMM_STATE_MAX,
} LowMemoryMonitorState;

typedef struct LowMemoryMonitor LowMemoryMonitor;

/* low_memory_monitor_new - a disabled service over @registry and @bus. Returns 0 or -ENOMEM. */
int low_memory_monitor_new(Registry *registry, SystemBus *bus, LowMemoryMonitor **ret);

/* low_memory_monitor_free - disable and free; NULL-safe, returns NULL. */
LowMemoryMonitor *low_memory_monitor_free(LowMemoryMonitor *m);

/*
 * low_memory_monitor_set_enabled - turn the service on (take the three
 * registrations and a bus user) or off (release the name, drop them).
 * Idempotent. A level whose registration cannot be made is logged and
 * left out. Returns 0 or -ENOMEM (and stays off).
 */
int low_memory_monitor_set_enabled(LowMemoryMonitor *m, bool enabled);

LowMemoryMonitorState low_memory_monitor_state(const LowMemoryMonitor *m);
const char *low_memory_monitor_state_to_string(LowMemoryMonitorState s);

/* low_memory_monitor_signals - LowMemoryWarning signals sent since the start. */
uint64_t low_memory_monitor_signals(const LowMemoryMonitor *m);

/* low_memory_monitor_level_byte - the LowMemoryWarning byte of @level: 50, 100, 255, or 0 if invalid. */
uint8_t low_memory_monitor_level_byte(Level level);

/*
 * low_memory_monitor_status_json - GetStatus's "dbus" object: {"connected":
 * the system bus connection is up (for any user), "low_memory_monitor": the
 * state, "low_memory_warnings": signals sent}; NULL when out of memory.
 */
json_t *low_memory_monitor_status_json(const LowMemoryMonitor *m, const SystemBus *bus);

/* low_memory_monitor_write_metrics - pressured_dbus_connected, pressured_low_memory_monitor_owner, pressured_low_memory_warnings_total. */
void low_memory_monitor_write_metrics(struct evbuffer *out, const LowMemoryMonitor *m, const SystemBus *bus);
