/* SPDX-License-Identifier: MIT */
/*
 * The daemon's one connection to the system bus (sd-bus), driven from the
 * libevent loop: an event on the bus fd and a timer for sd-bus's own
 * deadline, no thread, no polling. The connection exists only while some
 * BusUser holds it: the first user connects, the last one to leave
 * disconnects, so a daemon that needs no bus holds no bus connection.
 *
 * A lost connection (the bus restarted, or went away) is reported through
 * disconnected() to every user that had connected() (the two come in
 * pairs; a user that leaves is told neither); while users remain, the SystemBus retries
 * with a backoff timer and calls connected() again once it is back, and the
 * users add their matches, objects and names anew. Without users there is
 * no timer.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

typedef struct SystemBus SystemBus;
typedef struct BusUser BusUser;

typedef struct BusUserOps {
        /* The connection is up, the first time or after a reconnect. */
        void (*connected)(void *userdata, sd_bus *bus);
        /* The connection is gone; everything added on it is gone with it. */
        void (*disconnected)(void *userdata);
} BusUserOps;

/* Nothing connects here. @address NULL: the system bus
 * ($DBUS_SYSTEM_BUS_ADDRESS or the default socket). */
int system_bus_new(SystemBus **ret, struct event_base *base, const char *address);
SystemBus *system_bus_free(SystemBus *b);

/* Add a user; connects if it is the first. connected() is called from the
 * loop once the connection is up, never from inside this call (so *ret is
 * set by then). Fails only on out of memory: a bus that cannot be reached
 * is retried. */
int system_bus_add_user(SystemBus *b, const BusUserOps *ops, void *userdata, BusUser **ret);
/* Remove a user; the last one closes the connection. Returns NULL. */
BusUser *bus_user_free(BusUser *u);

/* After sending outside a bus callback (a signal emitted on a pressure
 * event): let the loop write whatever sd-bus could not write at once. */
void system_bus_kick(SystemBus *b);

/* The connection, or NULL while there is none (or it is not ready yet). */
sd_bus *system_bus_get(SystemBus *b);
bool system_bus_is_connected(const SystemBus *b);

/*
 * system_bus_describe_down - why there is no connection, in words for a
 * reason ("the system bus at ADDRESS cannot be reached: ERROR"), written
 * to @buf; NULL while connected.
 */
const char *system_bus_describe_down(const SystemBus *b, char *buf, size_t size);
