/* SPDX-License-Identifier: MIT */
/*
 * The system bus connection (system-bus.h). sd-bus does the protocol; this
 * file drives it from libevent: one event on the bus fd with the poll
 * events sd-bus asks for, one timer for sd-bus's own deadline (a method
 * call's timeout, or 0 when messages are already queued), and
 * sd_bus_process() until it has nothing left to do.
 *
 * States: no users, nothing (no connection, no event, no timer); users and
 * a connection that is not yet ready (the Hello reply is pending); users
 * and a ready connection (every user has had connected()); users and no
 * connection, a retry timer with a growing delay. connected() and
 * disconnected() come in pairs: a user that was told the connection is up
 * is told when it goes, and a user added while the connection is up learns
 * it from the loop, never from inside system_bus_add_user().
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "event-util.h"
#include "list.h"
#include "log.h"
#include "system-bus.h"
#include "util.h"

/* The first retry comes soon (a restarting bus is back within a second),
 * then the delay doubles up to a ceiling. A connection that stayed up this
 * long earns a fresh start; one that drops at once keeps backing off. */
#define RETRY_FIRST_USEC (100 * USEC_PER_MSEC)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)
#define STABLE_USEC (60 * USEC_PER_SEC)
/* Messages handled per wakeup before the rest of the loop gets a turn. */
#define PROCESS_BATCH 64

struct BusUser {
        SystemBus *bus;
        const BusUserOps *ops;
        void *userdata;
        bool told;                  /* connected() was called, disconnected() not yet */
        LIST_FIELDS(BusUser, users);
};

struct SystemBus {
        struct event_base *base;
        char *address;              /* NULL: the system bus */
        sd_bus *bus;                /* NULL while there is no connection */
        struct event *io;           /* on sd_bus_get_fd(), while bus exists */
        short io_what;              /* the EV_READ/EV_WRITE io was assigned with */
        struct event *timeout;      /* sd_bus_get_timeout() */
        struct event *retry;        /* pending reconnect */
        struct event *defer;        /* tell users, close when the last left, continue a batch */
        BusUser *users;
        bool ready;                 /* the Hello reply came: users may be told */
        bool processing;            /* inside sd_bus_process(): closing waits */
        bool failed_logged;         /* one warning per outage, then debug */
        int last_error;             /* why the last connection failed or was lost; 0 once ready */
        uint64_t retry_usec;        /* the next retry delay */
        uint64_t ready_since;       /* CLOCK_MONOTONIC of the last ready */
};

static void system_bus_close(SystemBus *b);
static void system_bus_dispatch(SystemBus *b);
static const char *system_bus_address(const SystemBus *b);
static void on_io(evutil_socket_t fd, short what, void *userdata);

int system_bus_new(SystemBus **ret, struct event_base *base, const char *address) {
        SystemBus *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        b->base = base;
        b->retry_usec = RETRY_FIRST_USEC;
        if (address && !(b->address = strdup(address))) {
                free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

SystemBus *system_bus_free(SystemBus *b) {
        if (!b)
                return NULL;
        /* Users should be gone; any left are detached, not told. */
        while (b->users) {
                BusUser *u = b->users;

                LIST_REMOVE(users, b->users, u);
                u->bus = NULL;
        }
        system_bus_close(b);
        event_free_and_null(&b->retry);
        event_free_and_null(&b->defer);
        free(b->address);
        free(b);
        return NULL;
}

const char *system_bus_describe_down(const SystemBus *b, char *buf, size_t size) {
        if (system_bus_is_connected(b))
                return NULL;
        if (!b)
                snprintf(buf, size, "the daemon does not use the system bus");
        else if (b->last_error)
                snprintf(buf, size, "the system bus at %s cannot be reached: %s", system_bus_address(b),
                         strerror(-b->last_error));
        else
                snprintf(buf, size, "the connection to the system bus at %s is not up yet", system_bus_address(b));
        return buf;
}

sd_bus *system_bus_get(SystemBus *b) {
        return system_bus_is_connected(b) ? b->bus : NULL;
}

bool system_bus_is_connected(const SystemBus *b) {
        return b && b->bus && b->ready;
}

/* Run the deferred work on the next loop iteration. */
static void system_bus_defer(SystemBus *b) {
        if (b->defer)
                event_active(b->defer, EV_TIMEOUT, 0);
}

void system_bus_kick(SystemBus *b) {
        if (b && b->bus)
                system_bus_defer(b);
}

/* Drop the connection and its events; users are not told (the caller does). */
static void system_bus_close(SystemBus *b) {
        event_free_and_null(&b->io);
        event_free_and_null(&b->timeout);
        /* Never flush: a stuck bus must not stall the loop. */
        b->bus = sd_bus_close_unref(b->bus);
        b->ready = false;
        b->io_what = 0;
}

/* Follow what sd-bus wants: the fd's events and its deadline. */
static int system_bus_arm(SystemBus *b) {
        uint64_t until = USEC_INFINITY, now;
        short what = EV_READ;
        int events, fd;

        fd = sd_bus_get_fd(b->bus);
        if (fd < 0)
                return fd;
        events = sd_bus_get_events(b->bus);
        if (events < 0)
                return events;
        if (events & POLLOUT)
                what |= EV_WRITE;
        if (what != b->io_what) {
                (void) event_del(b->io);
                if (event_assign(b->io, b->base, fd, what | EV_PERSIST, on_io, b) < 0 ||
                    event_add(b->io, NULL) < 0)
                        return -ENOMEM;
                b->io_what = what;
        }
        if (sd_bus_get_timeout(b->bus, &until) < 0 || until == USEC_INFINITY) {
                (void) event_del(b->timeout);
                return 0;
        }
        now = now_usec(CLOCK_MONOTONIC);
        struct timeval tv = usec_to_timeval(until > now ? until - now : 0);
        return event_add(b->timeout, &tv) < 0 ? -ENOMEM : 0;
}

/* Tell each user once: connected() when up, disconnected() when down.
 * A callback may free any user, so the walk starts over after each call. */
static void system_bus_tell_users(SystemBus *b) {
        for (;;) {
                bool up = system_bus_is_connected(b);
                BusUser *u;

                LIST_FOREACH(users, u, b->users)
                        if (u->told != up)
                                break;
                if (!u)
                        return;
                u->told = up;
                if (up)
                        u->ops->connected(u->userdata, b->bus);
                else
                        u->ops->disconnected(u->userdata);
        }
}

static void system_bus_schedule_retry(SystemBus *b) {
        struct timeval tv = usec_to_timeval(b->retry_usec);

        if (!b->retry || event_add(b->retry, &tv) < 0) {
                log_error("Failed to arm the system bus retry timer; the bus stays disconnected.");
                return;
        }
        b->retry_usec = b->retry_usec * 2 > RETRY_MAX_USEC ? RETRY_MAX_USEC : b->retry_usec * 2;
}

/* The connection is gone: tell the users, and come back while they remain. */
static void system_bus_lost(SystemBus *b, int error) {
        bool was_ready = b->ready;

        if (was_ready && now_usec(CLOCK_MONOTONIC) - b->ready_since >= STABLE_USEC)
                b->retry_usec = RETRY_FIRST_USEC;
        system_bus_close(b);
        b->last_error = error;
        if (was_ready)
                log_warning_errno(error, "Lost the connection to the system bus%s: %m",
                                  b->users ? ", reconnecting" : "");
        system_bus_tell_users(b);
        if (b->users)
                system_bus_schedule_retry(b);
}

static int system_bus_open(SystemBus *b, sd_bus **ret) {
        sd_bus *bus = NULL;
        int k;

        if (!b->address)
                return sd_bus_open_system_with_description(ret, "pressured");
        k = sd_bus_new(&bus);
        if (k < 0)
                return k;
        if ((k = sd_bus_set_address(bus, b->address)) < 0 || (k = sd_bus_set_bus_client(bus, true)) < 0 ||
            (k = sd_bus_set_description(bus, "pressured")) < 0 || (k = sd_bus_start(bus)) < 0) {
                sd_bus_unref(bus);
                return k;
        }
        *ret = bus;
        return 0;
}

static void on_io(evutil_socket_t fd, short what, void *userdata) {
        system_bus_dispatch(userdata);
}

/* Where sd-bus connects, for the log. */
static const char *system_bus_address(const SystemBus *b) {
        return b->address ?: secure_getenv("DBUS_SYSTEM_BUS_ADDRESS") ?: "unix:path=/run/dbus/system_bus_socket";
}

/* Open a connection; on failure, retry later. */
static void system_bus_connect(SystemBus *b) {
        int k;

        if (b->bus || !b->users)
                return;
        k = system_bus_open(b, &b->bus);
        if (k >= 0) {
                b->io = event_new(b->base, -1, 0, on_io, b);
                b->timeout = evtimer_new(b->base, on_io, b);
                if (!b->io || !b->timeout)
                        k = -ENOMEM;
                else
                        k = system_bus_arm(b);
        }
        if (k < 0) {
                system_bus_close(b);
                b->last_error = k;
                if (!b->failed_logged)
                        log_warning_errno(k, "Failed to connect to the system bus at %s, retrying: %m",
                                          system_bus_address(b));
                else
                        log_debug_errno(k, "Failed to connect to the system bus, retrying: %m");
                b->failed_logged = true;
                system_bus_schedule_retry(b);
                return;
        }
        log_debug("Connecting to the system bus at %s.", system_bus_address(b));
}

/* Process what sd-bus has, then follow its new wishes. */
static void system_bus_dispatch(SystemBus *b) {
        int k = 0;

        if (!b->bus)
                return;
        b->processing = true;
        for (unsigned i = 0; i < PROCESS_BATCH && b->bus && b->users; i++) {
                k = sd_bus_process(b->bus, NULL);
                if (k <= 0)
                        break;
        }
        b->processing = false;
        if (!b->users) {
                system_bus_close(b);
                return;
        }
        if (k < 0 || !sd_bus_is_open(b->bus)) {
                system_bus_lost(b, k < 0 ? k : -ECONNRESET);
                return;
        }
        if (!b->ready && sd_bus_is_ready(b->bus) > 0) {
                b->ready = true;
                b->ready_since = now_usec(CLOCK_MONOTONIC);
                b->failed_logged = false;
                b->last_error = 0;
                log_info("Connected to the system bus.");
                system_bus_tell_users(b);
                if (!b->bus)
                        return;
        }
        if (k > 0)
                system_bus_defer(b); /* more to do: after the rest of the loop */
        k = system_bus_arm(b);
        if (k < 0)
                system_bus_lost(b, k);
}

static void on_retry(evutil_socket_t fd, short what, void *userdata) {
        system_bus_connect(userdata);
}

static void on_defer(evutil_socket_t fd, short what, void *userdata) {
        SystemBus *b = userdata;

        if (!b->users) {
                system_bus_close(b);
                return;
        }
        system_bus_tell_users(b);
        system_bus_dispatch(b);
}

int system_bus_add_user(SystemBus *b, const BusUserOps *ops, void *userdata, BusUser **ret) {
        BusUser *u;

        if (!b->retry && !(b->retry = evtimer_new(b->base, on_retry, b)))
                return -ENOMEM;
        if (!b->defer && !(b->defer = event_new(b->base, -1, 0, on_defer, b)))
                return -ENOMEM;
        u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        *u = (BusUser) { .bus = b, .ops = ops, .userdata = userdata };
        LIST_PREPEND(users, b->users, u);
        if (!b->bus && !evtimer_pending(b->retry, NULL))
                system_bus_connect(b);
        else if (system_bus_is_connected(b))
                system_bus_defer(b);
        *ret = u;
        return 0;
}

BusUser *bus_user_free(BusUser *u) {
        SystemBus *b;

        if (!u)
                return NULL;
        b = u->bus;
        if (b) {
                LIST_REMOVE(users, b->users, u);
                if (!b->users) {
                        /* failed_logged stays: a bus still missing for the next user is said once. */
                        (void) event_del(b->retry);
                        b->retry_usec = RETRY_FIRST_USEC;
                        /* Inside sd_bus_process() the connection must outlive the call. */
                        if (b->processing)
                                system_bus_defer(b);
                        else
                                system_bus_close(b);
                }
        }
        free(u);
        return NULL;
}
