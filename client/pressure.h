/* SPDX-License-Identifier: MIT */
/*
 * libpressure: the client library of pressured, the memory-pressure
 * notification daemon.
 *
 * A pressure_client talks to one daemon socket. Each subscription made with
 * pressure_client_subscribe() gets its own connection (a varlink stream
 * occupies a connection); the library hides that behind one file
 * descriptor, so any event loop can drive it:
 *
 *     fd = pressure_client_get_fd(c);           watch for pressure_client_get_events(c)
 *     pressure_client_get_timeout(c, &usec);    wake up after at most this long
 *     pressure_client_process(c);               when the fd is ready or the time is up
 *
 * pressure_client_wait() does the three in a blocking call.
 *
 * When the daemon goes away (restart, socket activation, crash) the library
 * reconnects with a backoff of 100 ms doubling up to 1 s and subscribes
 * again; the handler then sees a PRESSURE_EVENT_RECONNECTED event (events
 * may have been missed meanwhile) followed by a fresh
 * PRESSURE_EVENT_SUBSCRIBED.
 *
 * Errors are negative errno values. When the daemon answered a call with a
 * varlink error, the error travels with that call: in the
 * PRESSURE_EVENT_ERROR event of a subscription, from
 * pressure_client_call_full(), and for the other blocking calls in
 * pressure_client_last_error_name() and pressure_client_last_error_params().
 *
 * Thread safety: there is no global state. A client and everything made
 * from it must be used by one thread at a time; use one client per thread.
 * The library never logs, never raises SIGPIPE and opens every file
 * descriptor with O_CLOEXEC.
 */
#ifndef PRESSURE_H
#define PRESSURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The value of an unlimited ("max") memory.min/memory.low setting. */
#define PRESSURE_UNLIMITED UINT64_MAX
/* "No timeout" for pressure_client_get_timeout() and pressure_client_wait(). */
#define PRESSURE_TIMEOUT_INFINITE UINT64_MAX

typedef struct pressure_client pressure_client;
typedef struct pressure_subscription pressure_subscription;
typedef struct pressure_selector pressure_selector;

typedef enum pressure_level {
        PRESSURE_LEVEL_NONE = 0, /* not present in the event */
        PRESSURE_LEVEL_LOW,
        PRESSURE_LEVEL_MEDIUM,
        PRESSURE_LEVEL_CRITICAL
} pressure_level;

typedef enum pressure_stall {
        PRESSURE_STALL_SOME = 0,
        PRESSURE_STALL_FULL
} pressure_stall;

typedef enum pressure_vmpressure_mode {
        PRESSURE_VMPRESSURE_MODE_UNSET = 0, /* the kernel's "default" */
        PRESSURE_VMPRESSURE_MODE_DEFAULT,
        PRESSURE_VMPRESSURE_MODE_HIERARCHY,
        PRESSURE_VMPRESSURE_MODE_LOCAL
} pressure_vmpressure_mode;

typedef enum pressure_source {
        PRESSURE_SOURCE_NONE = 0, /* not present, or unknown to this version */
        PRESSURE_SOURCE_PSI,
        PRESSURE_SOURCE_VMPRESSURE,
        PRESSURE_SOURCE_MEMORY_EVENTS,
        PRESSURE_SOURCE_PROTECTION,
        PRESSURE_SOURCE_INJECT
} pressure_source;

typedef enum pressure_protection_state {
        PRESSURE_PROTECTION_UNKNOWN = 0, /* not present */
        PRESSURE_PROTECTION_NONE,        /* usage above elow */
        PRESSURE_PROTECTION_LOW,         /* usage <= elow */
        PRESSURE_PROTECTION_MIN          /* usage <= emin */
} pressure_protection_state;

typedef enum pressure_event_kind {
        /* First event of every (re)subscription: the trigger in use and the current state. */
        PRESSURE_EVENT_SUBSCRIBED = 0,
        PRESSURE_EVENT_PRESSURE,
        PRESSURE_EVENT_MEMORY_EVENTS,
        PRESSURE_EVENT_PROTECTION,
        /* The cgroup is gone; the subscription has ended. */
        PRESSURE_EVENT_REMOVED,
        /* The connection was lost and re-established; events may have been missed. */
        PRESSURE_EVENT_RECONNECTED,
        /*
         * The subscription has ended with an error: the connection was lost
         * with reconnection turned off, the daemon refused to subscribe
         * again, or pressure_client_subscribe_async() was refused or found
         * no daemon. The error is in pressure_event.error (and error_name).
         */
        PRESSURE_EVENT_ERROR,
        /*
         * The pressure episode is over (since 0.2): no pressure event for the
         * daemon's hold period and, for PSI, the stall below its clearing
         * level. Comes once per episode, after its last PRESSURE event; the
         * figures are in pressure_event_get_episode().
         */
        PRESSURE_EVENT_CLEARED
} pressure_event_kind;

/* Bits of pressure_memory_events.present. */
#define PRESSURE_MEMORY_EVENT_LOW            (1U << 0)
#define PRESSURE_MEMORY_EVENT_HIGH           (1U << 1)
#define PRESSURE_MEMORY_EVENT_MAX            (1U << 2)
#define PRESSURE_MEMORY_EVENT_OOM            (1U << 3)
#define PRESSURE_MEMORY_EVENT_OOM_KILL       (1U << 4)
#define PRESSURE_MEMORY_EVENT_OOM_GROUP_KILL (1U << 5)

/* PSI averages (percent) and totals (microseconds). */
typedef struct pressure_psi {
        int present;
        double some_avg10, some_avg60, some_avg300;
        uint64_t some_total_us;
        int has_full; /* the full_* fields are valid */
        double full_avg10, full_avg60, full_avg300;
        uint64_t full_total_us;
} pressure_psi;

/* memory.events counters; a field is valid when its bit is set in present. */
typedef struct pressure_memory_events {
        unsigned present;
        uint64_t low, high, max, oom, oom_kill, oom_group_kill;
} pressure_memory_events;

/*
 * A cgroup's protection as the daemon models it (bytes). min, low, emin and
 * elow are PRESSURE_UNLIMITED for an unlimited setting.
 */
typedef struct pressure_protection_node {
        int present;
        const char *cgroup;
        uint64_t usage;
        uint64_t min, low, emin, elow;
        uint64_t min_usage, low_usage;
        uint64_t children_min_usage, children_low_usage;
        pressure_protection_state state;
} pressure_protection_node;

/* The kernel registration in use, from a PRESSURE_EVENT_SUBSCRIBED event. */
typedef struct pressure_trigger {
        pressure_level level; /* the portable level asked for, or NONE */
        int has_psi;
        pressure_stall psi_stall;
        uint64_t psi_threshold_us, psi_window_us;
        int has_vmpressure;
        pressure_level vmpressure_level;
        pressure_vmpressure_mode vmpressure_mode;
} pressure_trigger;

/*
 * A pressure episode (since 0.2): from PRESSURE_EVENT_CLEARED the one that
 * ended, from PRESSURE_EVENT_SUBSCRIBED the one going on, if any. Read it
 * with pressure_event_get_episode().
 */
typedef struct pressure_episode {
        uint64_t active_since_us;  /* SUBSCRIBED: CLOCK_MONOTONIC of its first event */
        uint64_t duration_us;      /* from its first event to its end (CLEARED) or now */
        uint64_t events;           /* pressure events in it */
        int has_peak;              /* PSI: peak is valid */
        double peak;               /* PSI: largest stall over one window, percent of wall time */
        pressure_level peak_level; /* vmpressure: the highest level, else NONE */
} pressure_episode;

/*
 * One event. The library owns the struct and every string in it; they are
 * valid during the handler call only. Fields a kind does not carry are zero
 * (present/has_* flags are 0). New fields may be appended in later versions.
 */
typedef struct pressure_event {
        pressure_event_kind kind;
        const char *cgroup;       /* "/" for the whole system */
        pressure_source source;
        pressure_level level;     /* PRESSURE_EVENT_PRESSURE */
        uint64_t seq;             /* 1, 2, ... per subscription; a gap = lost events */
        uint64_t count;           /* kernel notifications merged into this event */
        uint64_t missed;          /* events this client lost before this one */
        uint64_t time_us;         /* CLOCK_REALTIME */
        uint64_t monotonic_us;    /* CLOCK_MONOTONIC */
        int synthetic;            /* made by Inject() */
        int adjusted;             /* SUBSCRIBED: the daemon changed the trigger */
        pressure_trigger trigger; /* SUBSCRIBED */
        /* PRESSURE (psi source), SUBSCRIBED (state.psi) */
        pressure_psi psi;
        /* MEMORY_EVENTS (counters and delta), SUBSCRIBED (state.counters) */
        pressure_memory_events counters;
        pressure_memory_events delta;
        /* PROTECTION and SUBSCRIBED (state.node); PRESSURE: the cgroup's node if tracked */
        pressure_protection_node node;
        pressure_protection_state state;    /* PROTECTION */
        pressure_protection_state previous; /* PROTECTION */
        int error;                /* PRESSURE_EVENT_ERROR: negative errno */
        /* The event object as received, NUL-terminated JSON; NULL for RECONNECTED and ERROR. */
        const char *json;
        /*
         * PRESSURE_EVENT_ERROR when the daemon answered with an error: its
         * varlink name and its parameters as JSON text; NULL when the failure
         * was local or on the connection. (Since 0.2.)
         */
        const char *error_name;
        const char *error_parameters;
        /* CLEARED, SUBSCRIBED: see pressure_episode (since 0.2); use pressure_event_get_episode(). */
        int has_episode;
        pressure_episode episode;
        /*
         * SUBSCRIBED with adjusted: why the daemon changed the trigger, as it
         * said it; NULL when it gave no reason (since 0.2). Use
         * pressure_event_get_adjusted_reason().
         */
        const char *adjusted_reason;
} pressure_event;

/*
 * Handler of a subscription's events. A negative return value stops
 * pressure_client_process() and is returned by it. The handler may free its
 * own subscription; it must not free the client.
 */
typedef int (*pressure_event_handler)(pressure_subscription *subscription,
                                      const pressure_event *event, void *userdata);

/* ---- Subscription selectors ---------------------------------------------- */

/*
 * pressure_selector_new - make a subscription request: the whole system at
 * level "low" until changed. Setting a source (level, psi, vmpressure,
 * memory_events, protection) replaces the previous source.
 * Returns 0 or -ENOMEM.
 */
int pressure_selector_new(pressure_selector **ret);
/* pressure_selector_free - free a selector; accepts NULL, returns NULL. */
pressure_selector *pressure_selector_free(pressure_selector *selector);
/* The cgroup, relative to the hierarchy root ("/system.slice/x.service"); NULL or "/" = whole system. */
int pressure_selector_set_cgroup(pressure_selector *selector, const char *cgroup);
/* Portable level: the daemon picks PSI or vmpressure and the trigger. */
int pressure_selector_set_level(pressure_selector *selector, pressure_level level);
/* Explicit PSI trigger: stall time threshold_us within window_us. */
int pressure_selector_set_psi(pressure_selector *selector, pressure_stall stall,
                              uint64_t threshold_us, uint64_t window_us);
/* Explicit cgroup v1 vmpressure registration. */
int pressure_selector_set_vmpressure(pressure_selector *selector, pressure_level level,
                                     pressure_vmpressure_mode mode);
/* Changes of the cgroup's memory.events counters. */
int pressure_selector_set_memory_events(pressure_selector *selector);
/* Changes of the cgroup's effective-protection state. */
int pressure_selector_set_protection(pressure_selector *selector);
/* At most one event per interval (0 = no coalescing). */
int pressure_selector_set_min_interval_ms(pressure_selector *selector, uint64_t interval_ms);

/* ---- Clients --------------------------------------------------------------- */

/*
 * pressure_client_new - make a client for the socket in $PRESSURED_SOCKET,
 * else the system daemon's /run/pressured/io.pressured. Connects lazily.
 * Returns 0, -ENOMEM, or another negative errno.
 */
int pressure_client_new(pressure_client **ret);
/* pressure_client_free - close all subscriptions and free; accepts NULL, returns NULL. */
pressure_client *pressure_client_free(pressure_client *client);
/* Use this socket path for new connections. */
int pressure_client_set_socket(pressure_client *client, const char *path);
/* Use the per-user daemon's socket, $XDG_RUNTIME_DIR/pressured/io.pressured (-ENXIO if unset). */
int pressure_client_set_user(pressure_client *client);
/* The socket path in use. */
const char *pressure_client_get_socket(pressure_client *client);
/* Turn reconnect-and-resubscribe on (default) or off. */
int pressure_client_set_reconnect(pressure_client *client, int enable);
/*
 * When on (default off), pressure_client_subscribe() on a daemon that is not
 * (yet) reachable succeeds and subscribes as soon as the daemon appears.
 */
int pressure_client_set_wait_for_daemon(pressure_client *client, int enable);
/* Timeout of blocking calls (default 25 s). */
int pressure_client_set_call_timeout(pressure_client *client, uint64_t timeout_usec);

/*
 * pressure_client_subscribe - subscribe and wait for the daemon's answer.
 * @handler: called for every event, starting with PRESSURE_EVENT_SUBSCRIBED,
 *           from pressure_client_process()
 * @ret: optional; the subscription, owned by the client
 *
 * Returns 0, or a negative errno: -EACCES (PermissionDenied), -ENOENT
 * (NoSuchCgroup, or no socket), -EINVAL (InvalidCgroupPath,
 * InvalidParameter, InvalidTrigger), -EUSERS (LimitExceeded), -EOPNOTSUPP
 * (SourceUnavailable), -ECONNREFUSED, -ETIMEDOUT, -EPROTO (any other
 * daemon error, or a malformed answer).
 */
int pressure_client_subscribe(pressure_client *client, const pressure_selector *selector,
                              pressure_event_handler handler, void *userdata,
                              pressure_subscription **ret);
/*
 * pressure_client_subscribe_async - subscribe without waiting. (Since 0.2.)
 * Returns at once; the daemon's answer reaches @handler from
 * pressure_client_process(): PRESSURE_EVENT_SUBSCRIBED, or
 * PRESSURE_EVENT_ERROR with the errno (mapped as for
 * pressure_client_subscribe()) and, for a daemon error, error_name and
 * error_parameters. An unreachable daemon is reported the same way, unless
 * pressure_client_set_wait_for_daemon() is on.
 * @ret: optional; the subscription, owned by the client
 *
 * Returns 0, or -EINVAL / -ENOMEM for bad arguments or no memory.
 */
int pressure_client_subscribe_async(pressure_client *client, const pressure_selector *selector,
                                    pressure_event_handler handler, void *userdata,
                                    pressure_subscription **ret);
/* pressure_subscription_free - unsubscribe (close the connection); accepts NULL, returns NULL. */
pressure_subscription *pressure_subscription_free(pressure_subscription *subscription);
/* The client a subscription belongs to. */
pressure_client *pressure_subscription_get_client(pressure_subscription *subscription);
/* The userdata given to pressure_client_subscribe(). */
void *pressure_subscription_get_userdata(pressure_subscription *subscription);
/* 1 while the subscription is live or reconnecting, 0 once it has ended (removed, error). */
int pressure_subscription_is_active(pressure_subscription *subscription);

/* ---- Event loop integration ---------------------------------------------- */

/* The one file descriptor to watch (an epoll fd); valid for the client's life. */
int pressure_client_get_fd(pressure_client *client);
/* The poll() events to watch the fd for (POLLIN). */
int pressure_client_get_events(pressure_client *client);
/*
 * pressure_client_get_timeout - how long the caller may wait before calling
 * pressure_client_process() even if the fd stays quiet: microseconds from
 * now, 0 = at once, PRESSURE_TIMEOUT_INFINITE = no limit.
 */
int pressure_client_get_timeout(pressure_client *client, uint64_t *ret_usec);
/*
 * pressure_client_process - read what is ready, run handlers, and reconnect
 * what is due. Never blocks. Returns 1 if anything was done, 0 if not, or a
 * negative errno (or the negative value a handler returned).
 */
int pressure_client_process(pressure_client *client);
/*
 * pressure_client_wait - wait up to timeout_usec for something to do and do
 * it. Returns 1 if events were processed, 0 on timeout, or a negative errno.
 */
int pressure_client_wait(pressure_client *client, uint64_t timeout_usec);
/* The number of subscriptions that have not ended. */
unsigned pressure_client_get_n_active(pressure_client *client);

/* ---- Simple calls (blocking, one short connection each) ------------------ */

/* GetStatus(): the reply parameters as JSON text in *ret_json (free() it). */
int pressure_client_get_status(pressure_client *client, char **ret_json);
/* GetProtection(cgroup): the reply parameters ({"nodes": [...]}) as JSON text. */
int pressure_client_get_protection(pressure_client *client, const char *cgroup, char **ret_json);
/* Inject(cgroup, level): a synthetic event; *ret_delivered (optional) = subscribers reached. */
int pressure_client_inject(pressure_client *client, const char *cgroup, pressure_level level,
                           uint64_t *ret_delivered);
/* Reload(): make the daemon re-read its configuration. */
int pressure_client_reload(pressure_client *client);
/*
 * pressure_client_call - call any method.
 * @params_json: the parameters object as JSON text, or NULL for none
 * @ret_json: optional; the reply parameters as JSON text (free() it)
 */
int pressure_client_call(pressure_client *client, const char *method, const char *params_json,
                         char **ret_json);

/*
 * pressure_client_call_full - pressure_client_call() that returns the
 * daemon's error with the call. (Since 0.2.)
 * @ret_error_name: optional; on every return, the varlink error name the
 *                  daemon answered (free() it), or NULL
 * @ret_error_params: optional; likewise its parameters as JSON text
 */
int pressure_client_call_full(pressure_client *client, const char *method, const char *params_json,
                              char **ret_json, char **ret_error_name, char **ret_error_params);

/*
 * The varlink error name of the last daemon error (e.g. "io.pressured.NoSuchCgroup")
 * answering a blocking call of this client, or NULL. Subscriptions failing
 * later (in pressure_client_process()) do not change it: their error comes
 * with the PRESSURE_EVENT_ERROR event.
 */
const char *pressure_client_last_error_name(pressure_client *client);
/* Its parameters as JSON text ("{}" if none), or NULL. */
const char *pressure_client_last_error_params(pressure_client *client);

/*
 * Cleanup helpers (since 0.2): free *p, for
 *     __attribute__((cleanup(pressure_client_freep))) pressure_client *c = NULL;
 */
void pressure_client_freep(pressure_client **p);
void pressure_selector_freep(pressure_selector **p);
void pressure_subscription_freep(pressure_subscription **p);

/*
 * pressure_event_get_episode - the episode of a PRESSURE_EVENT_CLEARED event,
 * or of a PRESSURE_EVENT_SUBSCRIBED event that found one active; NULL
 * otherwise. Valid as long as @event (since 0.2). Use it rather than the
 * struct fields: linking against it makes sure the library in use fills them.
 */
const pressure_episode *pressure_event_get_episode(const pressure_event *event);

/*
 * pressure_event_get_adjusted_reason - why the daemon changed the trigger of
 * a PRESSURE_EVENT_SUBSCRIBED event with adjusted set, e.g. it lacks
 * CAP_SYS_RESOURCE or the caller's quota of fast PSI triggers is used up;
 * NULL when the event carries no reason (other kinds, not adjusted, or a
 * daemon older than 0.2). Valid as long as @event (since 0.2). Use it
 * rather than the struct field, for the same reason as
 * pressure_event_get_episode().
 */
const char *pressure_event_get_adjusted_reason(const pressure_event *event);

/* ---- Names ----------------------------------------------------------------- */

/* "low", "medium", "critical", or NULL. */
const char *pressure_level_to_string(pressure_level level);
/* Parse a level name; returns the level or -EINVAL. */
int pressure_level_from_string(const char *s);
const char *pressure_source_to_string(pressure_source source);
const char *pressure_event_kind_to_string(pressure_event_kind kind);
/* "min", "low", "none", or NULL. */
const char *pressure_protection_state_to_string(pressure_protection_state state);
/* The library version, e.g. "0.1.0". */
const char *pressure_version(void);

#ifdef __cplusplus
}
#endif

#endif
