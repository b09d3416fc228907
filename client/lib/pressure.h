/* SPDX-License-Identifier: MIT */
/*
 * libpressure 1: the client library of pressured, the memory-pressure
 * notification daemon.
 *
 * A pressure_client talks to one daemon socket. Each subscription and each
 * asynchronous call gets its own connection; the library hides them behind
 * one file descriptor, so any event loop can drive it (the library owns no
 * loop):
 *
 *     fd = pressure_client_get_fd(c);          watch for pressure_client_get_events(c)
 *     pressure_client_get_timeout(c, &usec);   CLOCK_MONOTONIC time to wake up at
 *     pressure_client_process(c);              when the fd is ready or the time has come
 *
 * pressure_client_wait() does the three in a blocking call. Every call has
 * a blocking form and an asynchronous one (suffix _async) whose answer
 * reaches a callback from pressure_client_process().
 *
 * When the daemon goes away (restart, socket activation, crash) the library
 * reconnects with a backoff of 100 ms doubling up to 1 s and subscribes
 * again; the handler then sees a PRESSURE_EVENT_RECONNECTED event (events
 * may have been missed meanwhile) followed by a fresh
 * PRESSURE_EVENT_SUBSCRIBED.
 *
 * Errors are negative errno values, one per situation (libpressure(3) has
 * the table). Every blocking call also takes an optional pressure_error
 * out-parameter carrying the varlink error name, its parameters and a
 * message; asynchronous calls hand one to their callback.
 *
 * Every type is opaque; objects are read with getters. Objects handed to a
 * callback are valid during the call only unless it takes a reference.
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
typedef struct pressure_call pressure_call;
typedef struct pressure_selector pressure_selector;
typedef struct pressure_event pressure_event;
typedef struct pressure_error pressure_error;
typedef struct pressure_trigger pressure_trigger;
typedef struct pressure_episode pressure_episode;
typedef struct pressure_protection_node pressure_protection_node;
typedef struct pressure_protection pressure_protection;
typedef struct pressure_status pressure_status;
typedef struct pressure_registration pressure_registration;
typedef struct pressure_reclaim pressure_reclaim;
/* libpressure 1.4. */
typedef struct pressure_headroom pressure_headroom;
typedef struct pressure_monitor pressure_monitor;

typedef enum pressure_level {
        PRESSURE_LEVEL_NONE = 0, /* not present */
        /*
         * libpressure 1.4: the "normal" of a level stream (PRESSURE_EVENT_LEVEL,
         * pressure_monitor): no pressure. The same value as NONE, so that
         * NORMAL < LOW < MEDIUM < CRITICAL; pressure_level_to_string() gives
         * it no name (NULL, as ever for NONE).
         */
        PRESSURE_LEVEL_NORMAL = PRESSURE_LEVEL_NONE,
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
        PRESSURE_SOURCE_INJECT,
        /* libpressure 1.2: kills of processes for lack of memory (pressure_selector_set_kills()). */
        PRESSURE_SOURCE_KILLS
} pressure_source;

/* The resource a PSI subscription watches (libpressure 1.1). */
typedef enum pressure_resource {
        PRESSURE_RESOURCE_NONE = 0, /* not present, or unknown to this version */
        PRESSURE_RESOURCE_MEMORY,
        PRESSURE_RESOURCE_CPU,
        PRESSURE_RESOURCE_IO
} pressure_resource;

typedef enum pressure_protection_state {
        PRESSURE_PROTECTION_UNKNOWN = 0, /* not present */
        PRESSURE_PROTECTION_NONE,        /* usage above elow */
        PRESSURE_PROTECTION_LOW,         /* usage <= elow */
        PRESSURE_PROTECTION_MIN          /* usage <= emin */
} pressure_protection_state;

/* What the proactive reclaim controller does with a cgroup (libpressure 1.1). */
typedef enum pressure_reclaim_state {
        PRESSURE_RECLAIM_UNKNOWN = 0,      /* not present, or unknown to this version */
        PRESSURE_RECLAIM_PROBING,          /* stall under the target: reclaiming a step per interval */
        PRESSURE_RECLAIM_BACKING_OFF,      /* memory or io stall above the target: waiting */
        PRESSURE_RECLAIM_AT_FLOOR,         /* down to its floor: nothing more to reclaim */
        PRESSURE_RECLAIM_UNSUPPORTED       /* no memory.reclaim here (kernel < 5.19, cgroup v1) */
} pressure_reclaim_state;

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
        /* The subscription has ended with an error: pressure_event_get_error(). */
        PRESSURE_EVENT_ERROR,
        /* The pressure episode is over: pressure_event_get_episode(). */
        PRESSURE_EVENT_CLEARED,
        /*
         * libpressure 1.2: something in the cgroup was killed for lack of
         * memory: pressure_event_get_killed_by(), pressure_event_get_reason().
         */
        PRESSURE_EVENT_KILLED,
        /*
         * libpressure 1.3: a reload of the daemon's configuration gave the
         * level of a level subscription another trigger; the stream goes on
         * from it: pressure_event_get_trigger(), pressure_event_is_adjusted().
         */
        PRESSURE_EVENT_TRIGGER_CHANGED,
        /*
         * libpressure 1.4: the memory level of a level stream
         * (pressure_selector_set_levels()), first the level now, then one per
         * change: pressure_event_get_level() (NORMAL included),
         * pressure_event_get_headroom_bytes(),
         * pressure_event_get_reclaim_target_bytes(), pressure_event_get_missed().
         */
        PRESSURE_EVENT_LEVEL,
        /*
         * libpressure 1.5: systemd-oomd is about to kill the cgroup
         * (pressure_event_get_cgroup(), the subscribed one or one below it),
         * on a kills subscription or a level stream: save what must be saved,
         * then pressure_client_acknowledge_prekill() with
         * pressure_event_get_prekill_id(), before pressure_event_get_deadline_us().
         * A warning cannot stop the kill.
         */
        PRESSURE_EVENT_PREKILL
} pressure_event_kind;

/* The counters of memory.events. */
typedef enum pressure_memory_event {
        PRESSURE_MEMORY_EVENT_LOW = 0,
        PRESSURE_MEMORY_EVENT_HIGH,
        PRESSURE_MEMORY_EVENT_MAX,
        PRESSURE_MEMORY_EVENT_OOM,
        PRESSURE_MEMORY_EVENT_OOM_KILL,
        PRESSURE_MEMORY_EVENT_OOM_GROUP_KILL
} pressure_memory_event;

/* The figures of a protection node, in bytes. */
typedef enum pressure_protection_value {
        PRESSURE_PROTECTION_USAGE = 0,
        PRESSURE_PROTECTION_MIN_SETTING,  /* memory.min; PRESSURE_UNLIMITED for "max" */
        PRESSURE_PROTECTION_LOW_SETTING,  /* memory.low; PRESSURE_UNLIMITED for "max" */
        PRESSURE_PROTECTION_EMIN,
        PRESSURE_PROTECTION_ELOW,
        PRESSURE_PROTECTION_MIN_USAGE,
        PRESSURE_PROTECTION_LOW_USAGE,
        PRESSURE_PROTECTION_CHILDREN_MIN_USAGE,
        PRESSURE_PROTECTION_CHILDREN_LOW_USAGE
} pressure_protection_value;

/* Called when a subscription or call is freed, with its userdata. */
typedef void (*pressure_destroy_callback)(void *userdata);

/*
 * Handler of a subscription's events. A negative return value stops
 * pressure_client_process() and is returned by it. The handler may free its
 * own subscription; it must not free the client. @event is valid during
 * the call only.
 */
typedef int (*pressure_event_handler)(pressure_subscription *subscription,
                                      const pressure_event *event, void *userdata);

/*
 * Callbacks of asynchronous calls: called once, from
 * pressure_client_process(), with the result, or with @error (non-NULL
 * exactly when the call failed; the result is then NULL or 0). The objects
 * are valid during the call only (take a reference to keep a result). A
 * negative return value stops pressure_client_process() and is returned.
 */
typedef int (*pressure_status_handler)(pressure_call *call, pressure_status *status,
                                       const pressure_error *error, void *userdata);
typedef int (*pressure_protection_handler)(pressure_call *call, pressure_protection *protection,
                                           const pressure_error *error, void *userdata);
typedef int (*pressure_inject_handler)(pressure_call *call, uint64_t delivered,
                                       const pressure_error *error, void *userdata);
/* Reload() and generic calls: @parameters_json is the reply's parameters, or NULL on error. */
typedef int (*pressure_reply_handler)(pressure_call *call, const char *parameters_json,
                                      const pressure_error *error, void *userdata);
/* libpressure 1.4: GetHeadroom(). */
typedef int (*pressure_headroom_handler)(pressure_call *call, pressure_headroom *headroom,
                                         const pressure_error *error, void *userdata);

/* ---- Subscription selectors ---------------------------------------------- */

/*
 * pressure_selector_new - make a subscription request: the whole system at
 * level "low" until changed. Setting a source (level, psi, vmpressure,
 * memory_events, protection, kills) replaces the previous source.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int pressure_selector_new(pressure_selector **ret);
/* pressure_selector_free - free a selector; accepts NULL, returns NULL. */
pressure_selector *pressure_selector_free(pressure_selector *selector);
void pressure_selector_freep(pressure_selector **p);
/*
 * The cgroup, relative to the hierarchy root ("/system.slice/x.service"); NULL or "/" = whole system.
 * -EINVAL for a path no daemon accepts (PRESSURE_ERROR_INVALID_CGROUP_PATH says which).
 */
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
/*
 * libpressure 1.2: kills in the cgroup and below it (the whole system by
 * default), by the kernel's OOM killer or by systemd-oomd: KILLED events.
 */
int pressure_selector_set_kills(pressure_selector *selector);
/* At most one event per interval (0 = no coalescing). */
int pressure_selector_set_min_interval_ms(pressure_selector *selector, uint64_t interval_ms);
/*
 * libpressure 1.1: what a level or psi selector watches, MEMORY (the
 * default), CPU or IO. Kept when the source changes; the daemon refuses
 * CPU and IO with the other sources.
 */
int pressure_selector_set_resource(pressure_selector *selector, pressure_resource resource);
/*
 * libpressure 1.4: the cgroup's memory level with hysteresis and its
 * headroom, a stream of PRESSURE_EVENT_LEVEL (the first one instead of
 * SUBSCRIBED, the level now), memory only. A daemon before 0.4 refuses
 * it: -EINVAL, the error org.varlink.service.InvalidParameter with the
 * parameter "levels". pressure_monitor_new() does all of this for you.
 */
int pressure_selector_set_levels(pressure_selector *selector);

/* ---- Clients --------------------------------------------------------------- */

/*
 * pressure_client_new - make a client for the socket in $PRESSURED_SOCKET,
 * else the system daemon's /run/pressured/io.pressured. Connects lazily.
 * Returns 0, -ENOMEM, or another negative errno.
 */
int pressure_client_new(pressure_client **ret);
/* pressure_client_free - end all subscriptions and calls and free; accepts NULL, returns NULL. */
pressure_client *pressure_client_free(pressure_client *client);
void pressure_client_freep(pressure_client **p);
/* Use this socket path for new connections. */
int pressure_client_set_socket(pressure_client *client, const char *path);
/* Use the per-user daemon's socket, $XDG_RUNTIME_DIR/pressured/io.pressured (-ENXIO if unset). */
int pressure_client_set_user(pressure_client *client);
/* The socket path in use. */
const char *pressure_client_get_socket(pressure_client *client);
/* Turn reconnect-and-resubscribe on (default) or off. */
int pressure_client_set_reconnect(pressure_client *client, int enable);
/*
 * When on (default off), subscribing while the daemon is not (yet)
 * reachable succeeds and subscribes as soon as the daemon appears.
 */
int pressure_client_set_wait_for_daemon(pressure_client *client, int enable);
/* Timeout of every call, blocking or asynchronous (default 25 s). */
int pressure_client_set_call_timeout(pressure_client *client, uint64_t timeout_usec);

/* ---- Event loop integration ---------------------------------------------- */

/* The one file descriptor to watch (an epoll fd); valid for the client's life. */
int pressure_client_get_fd(pressure_client *client);
/* The poll() events to watch the fd for (POLLIN). */
int pressure_client_get_events(pressure_client *client);
/*
 * pressure_client_get_timeout - the CLOCK_MONOTONIC time (microseconds) at
 * which pressure_client_process() is due even if the fd stays quiet;
 * PRESSURE_TIMEOUT_INFINITE for none, a time in the past for "at once".
 */
int pressure_client_get_timeout(pressure_client *client, uint64_t *ret_usec);
/*
 * pressure_client_process - read what is ready, run handlers and callbacks,
 * time out calls and reconnect what is due. Never blocks. Returns 1 if
 * anything was done, 0 if not, or a negative errno (or the negative value
 * a handler returned).
 */
int pressure_client_process(pressure_client *client);
/*
 * pressure_client_wait - wait up to timeout_usec (relative; or
 * PRESSURE_TIMEOUT_INFINITE) for something to do and do it. Returns 1 if
 * something was processed, 0 on timeout, or a negative errno.
 */
int pressure_client_wait(pressure_client *client, uint64_t timeout_usec);
/* The number of subscriptions that have not ended. */
unsigned pressure_client_get_n_active(pressure_client *client);

/* ---- Subscriptions ------------------------------------------------------------ */

/*
 * pressure_client_subscribe - subscribe and wait for the daemon's answer.
 * @handler: called for every event, starting with PRESSURE_EVENT_SUBSCRIBED,
 *           from pressure_client_process()
 * @ret: optional; the subscription, owned by the client
 * @ret_error: optional; on failure, the error (pressure_error_free() it);
 *             NULL on success
 * Returns 0 or a negative errno (libpressure(3)).
 */
int pressure_client_subscribe(pressure_client *client, const pressure_selector *selector,
                              pressure_event_handler handler, void *userdata,
                              pressure_subscription **ret, pressure_error **ret_error);
/*
 * pressure_client_subscribe_async - subscribe without waiting. The answer
 * reaches @handler: PRESSURE_EVENT_SUBSCRIBED, or PRESSURE_EVENT_ERROR.
 * Returns 0, or -EINVAL / -ENOMEM for bad arguments or no memory.
 */
int pressure_client_subscribe_async(pressure_client *client, const pressure_selector *selector,
                                    pressure_event_handler handler, void *userdata,
                                    pressure_subscription **ret);
/* pressure_subscription_free - unsubscribe (close the connection); accepts NULL, returns NULL. */
pressure_subscription *pressure_subscription_free(pressure_subscription *subscription);
void pressure_subscription_freep(pressure_subscription **p);
/* The client a subscription belongs to. */
pressure_client *pressure_subscription_get_client(pressure_subscription *subscription);
/* The userdata given to pressure_client_subscribe(). */
void *pressure_subscription_get_userdata(pressure_subscription *subscription);
/* Call @destroy(userdata) when the subscription is freed (by the caller or with the client). */
int pressure_subscription_set_destroy_callback(pressure_subscription *subscription,
                                               pressure_destroy_callback destroy);
/* 1 while the subscription is live or reconnecting, 0 once it has ended (removed, error). */
int pressure_subscription_is_active(pressure_subscription *subscription);

/* ---- Calls --------------------------------------------------------------------- */

/*
 * Blocking calls, on one short connection each. On failure they return a
 * negative errno and, if @ret_error is given, store an error object there
 * (NULL on success). Result out-parameters are written on success only.
 */
int pressure_client_get_status(pressure_client *client, pressure_status **ret_status,
                               pressure_error **ret_error);
int pressure_client_get_protection(pressure_client *client, const char *cgroup,
                                   pressure_protection **ret_protection, pressure_error **ret_error);
int pressure_client_inject(pressure_client *client, const char *cgroup, pressure_level level,
                           uint64_t *ret_delivered, pressure_error **ret_error);
int pressure_client_reload(pressure_client *client, pressure_error **ret_error);
/* libpressure 1.3: Reexecute(); returns once the new process serves. */
int pressure_client_reexecute(pressure_client *client, pressure_error **ret_error);
/* libpressure 1.1: Inject() for the subscriptions of one resource (pressure_client_inject(): MEMORY). */
int pressure_client_inject_resource(pressure_client *client, const char *cgroup, pressure_resource resource,
                                    pressure_level level, uint64_t *ret_delivered, pressure_error **ret_error);
/* Any method; @params_json: the parameters object or NULL; *ret_json: the reply's parameters (free()). */
int pressure_client_call(pressure_client *client, const char *method, const char *params_json,
                         char **ret_json, pressure_error **ret_error);
/*
 * libpressure 1.4: GetHeadroom(cgroup), how far @cgroup (NULL or "/": the
 * whole system) can grow before its nearest memory limit. A daemon before
 * 0.4 answers org.varlink.service.MethodNotFound (-ENXIO).
 */
int pressure_client_get_headroom(pressure_client *client, const char *cgroup, pressure_headroom **ret_headroom,
                                 pressure_error **ret_error);
/*
 * libpressure 1.5: AcknowledgePrekill(id), the warning @id
 * (pressure_event_get_prekill_id() of a PRESSURE_EVENT_PREKILL) was acted
 * on: systemd-oomd is answered once every warned subscriber has
 * acknowledged or gone. On a connection of its own, as every call: the
 * subscription's connection goes on streaming. -ESRCH (the error
 * io.pressured.NoSuchPrekill) when no warning @id waits for an
 * acknowledgement of the caller's user: unknown, answered already (the
 * deadline passed) or not its own; a daemon before 0.5 answers
 * org.varlink.service.MethodNotFound (-ENXIO).
 */
int pressure_client_acknowledge_prekill(pressure_client *client, uint64_t id, pressure_error **ret_error);

/*
 * Asynchronous calls: send the call and return at once; the callback runs
 * from pressure_client_process() when the answer is there, the call timed
 * out or the connection failed. @ret_call (optional) is valid until the
 * callback returns; pressure_call_free() before that cancels the call.
 * Return 0, or -EINVAL / -ENOMEM.
 */
int pressure_client_get_status_async(pressure_client *client, pressure_status_handler callback,
                                     void *userdata, pressure_call **ret_call);
int pressure_client_get_protection_async(pressure_client *client, const char *cgroup,
                                         pressure_protection_handler callback, void *userdata,
                                         pressure_call **ret_call);
int pressure_client_inject_async(pressure_client *client, const char *cgroup, pressure_level level,
                                 pressure_inject_handler callback, void *userdata, pressure_call **ret_call);
/* libpressure 1.1. */
int pressure_client_inject_resource_async(pressure_client *client, const char *cgroup, pressure_resource resource,
                                          pressure_level level, pressure_inject_handler callback, void *userdata,
                                          pressure_call **ret_call);
int pressure_client_reload_async(pressure_client *client, pressure_reply_handler callback, void *userdata,
                                 pressure_call **ret_call);
/* libpressure 1.3. */
int pressure_client_reexecute_async(pressure_client *client, pressure_reply_handler callback, void *userdata,
                                    pressure_call **ret_call);
int pressure_client_call_async(pressure_client *client, const char *method, const char *params_json,
                               pressure_reply_handler callback, void *userdata, pressure_call **ret_call);
/* libpressure 1.4. */
int pressure_client_get_headroom_async(pressure_client *client, const char *cgroup,
                                       pressure_headroom_handler callback, void *userdata,
                                       pressure_call **ret_call);
/* libpressure 1.5: on success @parameters_json is "{}". */
int pressure_client_acknowledge_prekill_async(pressure_client *client, uint64_t id, pressure_reply_handler callback,
                                              void *userdata, pressure_call **ret_call);
/* Cancel a call whose callback has not run; accepts NULL, returns NULL. */
pressure_call *pressure_call_free(pressure_call *call);
pressure_client *pressure_call_get_client(pressure_call *call);
void *pressure_call_get_userdata(pressure_call *call);
/* Call @destroy(userdata) when the call is done (after its callback) or cancelled. */
int pressure_call_set_destroy_callback(pressure_call *call, pressure_destroy_callback destroy);

/* ---- Errors ---------------------------------------------------------------------- */

/*
 * libpressure 1.3: the name of the error of a call or subscription that
 * found no daemon (errno -ECONNREFUSED): nothing listens on the socket,
 * or there is no socket; its parameter "socket" is the path.
 */
#define PRESSURE_ERROR_DAEMON_NOT_RUNNING "libpressure.DaemonNotRunning"
/*
 * libpressure 1.5: the name of the error of a call given a cgroup path
 * that no daemon accepts (errno -EINVAL; nothing is sent): not absolute,
 * longer than 4096 bytes, not valid UTF-8, with a control character, a
 * component over 255 bytes, or a "." or ".." component. Its parameters:
 * "cgroup", the path with such bytes written as \xNN, and "reason".
 */
#define PRESSURE_ERROR_INVALID_CGROUP_PATH "libpressure.InvalidCgroupPath"

pressure_error *pressure_error_free(pressure_error *error);
void pressure_error_freep(pressure_error **p);
/* The negative errno of the failure. */
int pressure_error_get_errno(const pressure_error *error);
/*
 * The varlink error name the daemon answered, or for a failure on the
 * client's side PRESSURE_ERROR_DAEMON_NOT_RUNNING (no daemon at the socket);
 * NULL for other local or connection failures.
 */
const char *pressure_error_get_name(const pressure_error *error);
/* The error's parameters as JSON object text ("{}" if none), or NULL when it has no name. */
const char *pressure_error_get_parameters(const pressure_error *error);
/*
 * A one-line message for people, e.g. "No such cgroup: /a", or "pressured
 * is not running: there is no socket /run/pressured/io.pressured". Never NULL: for
 * a NULL error (a failed call could not allocate its error object) it is
 * "Out of memory".
 */
const char *pressure_error_get_message(const pressure_error *error);
/* The string parameter @key (cgroup, reason, source, limit), or NULL. */
const char *pressure_error_get_parameter_string(const pressure_error *error, const char *key);
/* The integer parameter @key (value); 0, or -ENODATA if absent. */
int pressure_error_get_parameter_integer(const pressure_error *error, const char *key, int64_t *ret);

/* ---- Events ------------------------------------------------------------------------ */

pressure_event_kind pressure_event_get_kind(const pressure_event *event);
/* "/" for the whole system. */
const char *pressure_event_get_cgroup(const pressure_event *event);
pressure_source pressure_event_get_source(const pressure_event *event);
/*
 * PRESSURE: the level; CLEARED, TRIGGER_CHANGED: the level of the
 * subscription; LEVEL (1.4): the level now, NORMAL included; else NONE.
 */
pressure_level pressure_event_get_level(const pressure_event *event);
/*
 * libpressure 1.1: the resource of SUBSCRIBED, PRESSURE and CLEARED (MEMORY
 * from a daemon that does not say, and for MEMORY_EVENTS and PROTECTION);
 * NONE for the other kinds.
 */
pressure_resource pressure_event_get_resource(const pressure_event *event);
/* 1, 2, ... per subscription; a gap = lost events. 0 for SUBSCRIBED. */
uint64_t pressure_event_get_seq(const pressure_event *event);
/* Events this client lost before this one. */
uint64_t pressure_event_get_missed(const pressure_event *event);
/* Kernel notifications merged into this event; KILLED: the kills it reports. */
uint64_t pressure_event_get_count(const pressure_event *event);
/* CLOCK_REALTIME and CLOCK_MONOTONIC of the event, microseconds; 0 if absent. */
uint64_t pressure_event_get_time_us(const pressure_event *event);
uint64_t pressure_event_get_monotonic_us(const pressure_event *event);
/* 1 for an event made by Inject(). */
int pressure_event_is_synthetic(const pressure_event *event);
/* SUBSCRIBED, TRIGGER_CHANGED: the kernel registration in use, or NULL. */
const pressure_trigger *pressure_event_get_trigger(const pressure_event *event);
/* SUBSCRIBED, TRIGGER_CHANGED: 1 when the daemon changed the trigger; the reason it gave, or NULL. */
int pressure_event_is_adjusted(const pressure_event *event);
const char *pressure_event_get_adjusted_reason(const pressure_event *event);
/*
 * PSI figures (PRESSURE of a psi source, SUBSCRIBED): the average over
 * @window_sec (10, 60 or 300) in percent, and the total stall in
 * microseconds. Return 0, or -ENODATA when the event has none.
 */
int pressure_event_get_psi_avg(const pressure_event *event, pressure_stall stall, unsigned window_sec,
                               double *ret);
int pressure_event_get_psi_total(const pressure_event *event, pressure_stall stall, uint64_t *ret);
/* MEMORY_EVENTS, SUBSCRIBED: a memory.events counter, and (MEMORY_EVENTS) its change; or -ENODATA. */
int pressure_event_get_memory_event(const pressure_event *event, pressure_memory_event counter,
                                    uint64_t *ret);
int pressure_event_get_memory_event_delta(const pressure_event *event, pressure_memory_event counter,
                                          uint64_t *ret);
/* PROTECTION, SUBSCRIBED, PRESSURE on a tracked cgroup: the cgroup's protection node, or NULL. */
const pressure_protection_node *pressure_event_get_protection_node(const pressure_event *event);
/* PROTECTION: the new and the previous state; else UNKNOWN. */
pressure_protection_state pressure_event_get_protection_state(const pressure_event *event);
pressure_protection_state pressure_event_get_previous_protection_state(const pressure_event *event);
/* CLEARED: the episode that ended; SUBSCRIBED: the active one, if any; else NULL. */
const pressure_episode *pressure_event_get_episode(const pressure_event *event);
/* ERROR: why the subscription ended; else NULL. */
const pressure_error *pressure_event_get_error(const pressure_event *event);
/*
 * libpressure 1.2. KILLED: who killed, "kernel" or "systemd-oomd" (a
 * later daemon may name others), and why, in the killer's words ("oom_kill",
 * "memory-pressure", "memory-used"); NULL for other kinds. PREKILL (1.5):
 * who is about to kill, "systemd-oomd"; its reason is NULL.
 */
const char *pressure_event_get_killed_by(const pressure_event *event);
const char *pressure_event_get_reason(const pressure_event *event);
/*
 * libpressure 1.2. SUBSCRIBED to kills: the killers that could report when
 * the daemon answered ("kernel", "systemd-oomd"); 0 and NULL otherwise.
 */
size_t pressure_event_get_n_kill_sources(const pressure_event *event);
const char *pressure_event_get_kill_source(const pressure_event *event, size_t i);
/*
 * libpressure 1.3. SUBSCRIBED to kills: the killers that could not report
 * when the daemon answered, and why (*ret_reason, optional, e.g. "the
 * system bus at ... cannot be reached: ..."); 0 and NULL otherwise.
 */
size_t pressure_event_get_n_unavailable_kill_sources(const pressure_event *event);
const char *pressure_event_get_unavailable_kill_source(const pressure_event *event, size_t i,
                                                       const char **ret_reason);
/*
 * libpressure 1.4. LEVEL: how far the cgroup can still grow before its
 * nearest limit, and how much to free to get back to the comfort margin of
 * its level (0 at NORMAL), in bytes. Return 0, or -ENODATA when the daemon
 * cannot know (null) and for other kinds.
 */
int pressure_event_get_headroom_bytes(const pressure_event *event, uint64_t *ret);
int pressure_event_get_reclaim_target_bytes(const pressure_event *event, uint64_t *ret);
/*
 * libpressure 1.5. PREKILL: the CLOCK_MONOTONIC time (microseconds) at
 * which the daemon answers systemd-oomd whether or not this subscriber
 * acknowledged; 0 for other kinds. The warning's number, for
 * pressure_client_acknowledge_prekill(): 0, or -ENODATA for other kinds.
 */
uint64_t pressure_event_get_deadline_us(const pressure_event *event);
int pressure_event_get_prekill_id(const pressure_event *event, uint64_t *ret);
/* The event as received, JSON text; NULL for RECONNECTED and ERROR. */
const char *pressure_event_get_json(const pressure_event *event);

/* ---- Triggers, episodes, protection nodes ------------------------------------------ */

/* The portable level asked for, or NONE. */
pressure_level pressure_trigger_get_level(const pressure_trigger *trigger);
/* The PSI trigger; -ENODATA if it is none. Any out-parameter may be NULL. */
int pressure_trigger_get_psi(const pressure_trigger *trigger, pressure_stall *ret_stall,
                             uint64_t *ret_threshold_us, uint64_t *ret_window_us);
/* The vmpressure registration; -ENODATA if it is none. */
int pressure_trigger_get_vmpressure(const pressure_trigger *trigger, pressure_level *ret_level,
                                    pressure_vmpressure_mode *ret_mode);

/* 1 while the episode goes on (SUBSCRIBED, a registration's active one), 0 once it has ended. */
int pressure_episode_is_active(const pressure_episode *episode);
/* CLOCK_MONOTONIC of its first event, microseconds. */
uint64_t pressure_episode_get_start_us(const pressure_episode *episode);
/* Ended episodes of a history: CLOCK_MONOTONIC of the end; 0 otherwise. */
uint64_t pressure_episode_get_end_us(const pressure_episode *episode);
/* History: its start and end as CLOCK_REALTIME; 0 otherwise. */
uint64_t pressure_episode_get_start_time_us(const pressure_episode *episode);
uint64_t pressure_episode_get_end_time_us(const pressure_episode *episode);
uint64_t pressure_episode_get_duration_us(const pressure_episode *episode);
/* Pressure events in it. */
uint64_t pressure_episode_get_events(const pressure_episode *episode);
/* PSI: the largest stall over one window, percent; -ENODATA for vmpressure. */
int pressure_episode_get_peak(const pressure_episode *episode, double *ret);
/* vmpressure: the highest level seen; else NONE. */
pressure_level pressure_episode_get_peak_level(const pressure_episode *episode);

const char *pressure_protection_node_get_cgroup(const pressure_protection_node *node);
pressure_protection_state pressure_protection_node_get_state(const pressure_protection_node *node);
/* A figure in bytes; 0, or -EINVAL for an unknown @value. */
int pressure_protection_node_get_value(const pressure_protection_node *node, pressure_protection_value value,
                                       uint64_t *ret);

/* ---- Results ----------------------------------------------------------------------- */

/* GetProtection(): the nodes of the subtree, parents before children. */
pressure_protection *pressure_protection_ref(pressure_protection *protection);
pressure_protection *pressure_protection_unref(pressure_protection *protection);
void pressure_protection_unrefp(pressure_protection **p);
size_t pressure_protection_get_n_nodes(const pressure_protection *protection);
const pressure_protection_node *pressure_protection_get_node(const pressure_protection *protection, size_t i);

/* GetStatus(). */
pressure_status *pressure_status_ref(pressure_status *status);
pressure_status *pressure_status_unref(pressure_status *status);
void pressure_status_unrefp(pressure_status **p);
const char *pressure_status_get_version(const pressure_status *status);
uint64_t pressure_status_get_uptime_us(const pressure_status *status);
/* libpressure 1.3: 0 for a fresh start, one more per takeover (restart, crash, Reexecute). */
uint64_t pressure_status_get_generation(const pressure_status *status);
uint64_t pressure_status_get_clients(const pressure_status *status);
uint64_t pressure_status_get_subscriptions(const pressure_status *status);
/* A counter by its protocol name ("events_read", ...); 0, or -ENODATA. */
int pressure_status_get_counter(const pressure_status *status, const char *name, uint64_t *ret);
size_t pressure_status_get_n_registrations(const pressure_status *status);
const pressure_registration *pressure_status_get_registration(const pressure_status *status, size_t i);
/* The reply's parameters as JSON text, for what this version has no getter for. */
const char *pressure_status_get_json(const pressure_status *status);

const char *pressure_registration_get_cgroup(const pressure_registration *registration);
pressure_source pressure_registration_get_source(const pressure_registration *registration);
/* libpressure 1.1: MEMORY, CPU or IO (MEMORY from a daemon that does not say). */
pressure_resource pressure_registration_get_resource(const pressure_registration *registration);
const pressure_trigger *pressure_registration_get_trigger(const pressure_registration *registration);
uint64_t pressure_registration_get_subscribers(const pressure_registration *registration);
/* The active episode, or NULL. */
const pressure_episode *pressure_registration_get_episode(const pressure_registration *registration);
/* The history: ended episodes, oldest first. */
size_t pressure_registration_get_n_history(const pressure_registration *registration);
const pressure_episode *pressure_registration_get_history(const pressure_registration *registration, size_t i);

/*
 * libpressure 1.1: the cgroups of the proactive reclaim controller, one
 * entry each, in the daemon's order; none when the controller is off
 * ([Reclaim] Cgroups= empty) or the daemon predates it.
 */
size_t pressure_status_get_n_reclaim(const pressure_status *status);
const pressure_reclaim *pressure_status_get_reclaim(const pressure_status *status, size_t i);
const char *pressure_reclaim_get_cgroup(const pressure_reclaim *reclaim);
pressure_reclaim_state pressure_reclaim_get_state(const pressure_reclaim *reclaim);
/* Bytes reclaimed since the controller took the cgroup on, and by its last step. */
uint64_t pressure_reclaim_get_reclaimed_bytes(const pressure_reclaim *reclaim);
uint64_t pressure_reclaim_get_last_step_bytes(const pressure_reclaim *reclaim);
/* The larger of [Reclaim] MinSize= and the cgroup's effective protection, bytes. */
uint64_t pressure_reclaim_get_floor_bytes(const pressure_reclaim *reclaim);
/*
 * The memory and the io "some" stall over the last interval, percent of
 * wall time; 0, or -ENODATA when the reply has no figure (absent or null).
 */
int pressure_reclaim_get_stall_pct(const pressure_reclaim *reclaim, double *ret);
int pressure_reclaim_get_io_stall_pct(const pressure_reclaim *reclaim, double *ret);

/*
 * libpressure 1.4: GetHeadroom(). The cgroup's memory use; the limit with
 * the least room (memory.max or memory.high of it or an ancestor) and the
 * cgroup that sets it; the headroom (that room, at most the machine's
 * MemAvailable) and the reclaim target (to get back to the margin of the
 * cgroup's level). The integer getters return 0, or -ENODATA where the
 * daemon answered null (no limit on the path; the cgroup is NULL then).
 */
pressure_headroom *pressure_headroom_ref(pressure_headroom *headroom);
pressure_headroom *pressure_headroom_unref(pressure_headroom *headroom);
void pressure_headroom_unrefp(pressure_headroom **p);
uint64_t pressure_headroom_get_usage_bytes(const pressure_headroom *headroom);
int pressure_headroom_get_limit_bytes(const pressure_headroom *headroom, uint64_t *ret);
const char *pressure_headroom_get_limiting_cgroup(const pressure_headroom *headroom);
int pressure_headroom_get_headroom_bytes(const pressure_headroom *headroom, uint64_t *ret);
int pressure_headroom_get_reclaim_target_bytes(const pressure_headroom *headroom, uint64_t *ret);
/* The reply's parameters as JSON text. */
const char *pressure_headroom_get_json(const pressure_headroom *headroom);

/* ---- Monitors (libpressure 1.4) ------------------------------------------------ */

/*
 * A pressure_monitor follows one cgroup's memory level and headroom (a
 * level stream) on a client of its own and calls one handler: with
 * PRESSURE_EVENT_LEVEL for the level now, then for every change; with
 * PRESSURE_EVENT_RECONNECTED when the daemon came back after it went away
 * (a LEVEL event with the level then follows); and last with
 * PRESSURE_EVENT_REMOVED (the cgroup is gone) or PRESSURE_EVENT_ERROR
 * (pressure_event_get_error(); -EOPNOTSUPP from a daemon before 0.4).
 * While the daemon is away the monitor retries with the client's backoff
 * and the program's loop sleeps in between. A negative return value of the
 * handler is returned by pressure_monitor_process().
 *
 * libpressure 1.5, after pressure_monitor_set_prekill(): with
 * PRESSURE_EVENT_PREKILL when systemd-oomd is about to kill the cgroup (or
 * one below it). A handler that returns 0 has done what it must: the
 * monitor acknowledges the warning right after it. One that returns
 * PRESSURE_MONITOR_ACKNOWLEDGE_LATER goes on with work of its own (saving
 * state asynchronously) and calls pressure_monitor_acknowledge_prekill()
 * with the event's pressure_event_get_prekill_id() when it is done.
 */
typedef int (*pressure_monitor_handler)(pressure_monitor *monitor, const pressure_event *event, void *userdata);

/* libpressure 1.5: the handler's return value for "I will acknowledge this warning later". */
#define PRESSURE_MONITOR_ACKNOWLEDGE_LATER 1

/* sd-event's loop, from <systemd/sd-event.h>; libpressure does not link libsystemd. */
struct sd_event;

/*
 * pressure_monitor_new - a monitor of @cgroup (NULL or "/": the whole
 * system). It starts with pressure_monitor_start() or when attached.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int pressure_monitor_new(pressure_monitor **ret, const char *cgroup, pressure_monitor_handler handler,
                         void *userdata);
pressure_monitor *pressure_monitor_ref(pressure_monitor *monitor);
/* Ends the stream and detaches from the loop with the last reference; accepts NULL, returns NULL. */
pressure_monitor *pressure_monitor_unref(pressure_monitor *monitor);
void pressure_monitor_unrefp(pressure_monitor **p);
/* The monitor's own client: set its socket (or reconnect) before the monitor starts. */
pressure_client *pressure_monitor_get_client(pressure_monitor *monitor);
/* Subscribe (waiting for the daemon if it does not run yet); -EALREADY the second time. */
int pressure_monitor_start(pressure_monitor *monitor);
/*
 * Attach to an sd-event loop (NULL: the thread's default) at @priority,
 * and start. libpressure finds sd-event in the program (it does not link
 * libsystemd): -EOPNOTSUPP when the program has no libsystemd. -EBUSY if
 * attached already.
 */
int pressure_monitor_attach_event(pressure_monitor *monitor, struct sd_event *event, int64_t priority);
int pressure_monitor_detach_event(pressure_monitor *monitor);
/* Other loops: watch pressure_monitor_get_fd() for POLLIN and call pressure_monitor_process(). */
int pressure_monitor_get_fd(pressure_monitor *monitor);
int pressure_monitor_process(pressure_monitor *monitor);
/* The last level; -ENODATA until the first LEVEL event. */
int pressure_monitor_get_level(const pressure_monitor *monitor, pressure_level *ret);
/* The last headroom and reclaim target; -ENODATA until the first LEVEL event and where it said null. */
int pressure_monitor_get_headroom_bytes(const pressure_monitor *monitor, uint64_t *ret);
int pressure_monitor_get_reclaim_target_bytes(const pressure_monitor *monitor, uint64_t *ret);
/* How often the stream was re-established after the daemon went away. */
uint64_t pressure_monitor_get_reconnects(const pressure_monitor *monitor);
/* 1 until the stream has ended (REMOVED, ERROR), 0 after. */
int pressure_monitor_is_active(const pressure_monitor *monitor);
/*
 * libpressure 1.5: hand the warnings before a kill to the handler (@enable
 * 1), or not (0, the default: the monitor acknowledges each at once, as a
 * handler returning 0 would, so that a handler written before 1.5, which
 * knows no more kinds than those above, never sees one).
 */
int pressure_monitor_set_prekill(pressure_monitor *monitor, int enable);
/*
 * libpressure 1.5: acknowledge the warning @id whose handler returned
 * PRESSURE_MONITOR_ACKNOWLEDGE_LATER. Sent at once on a connection of its
 * own and answered without the program's attention: returns 0, or -EINVAL
 * / -ENOMEM; -ESRCH for an @id the monitor was not warned with or has
 * acknowledged already. What the daemon answers is not reported (past the
 * deadline it has answered systemd-oomd by itself); call
 * pressure_client_acknowledge_prekill() on pressure_monitor_get_client()
 * to see it.
 */
int pressure_monitor_acknowledge_prekill(pressure_monitor *monitor, uint64_t id);

/* ---- Names ----------------------------------------------------------------- */

/* "low", "medium", "critical", or NULL. */
const char *pressure_level_to_string(pressure_level level);
/* Parse a level name; returns the level or -EINVAL. */
int pressure_level_from_string(const char *s);
const char *pressure_source_to_string(pressure_source source);
const char *pressure_event_kind_to_string(pressure_event_kind kind);
/* "min", "low", "none", or NULL. */
const char *pressure_protection_state_to_string(pressure_protection_state state);
/* libpressure 1.1: "memory", "cpu", "io", or NULL; and back (the resource, or -EINVAL). */
const char *pressure_resource_to_string(pressure_resource resource);
int pressure_resource_from_string(const char *s);
/* libpressure 1.1: "probing", "backing-off", "at-floor", "unsupported", or NULL. */
const char *pressure_reclaim_state_to_string(pressure_reclaim_state state);
/* The library version, e.g. "1.0.0". */
const char *pressure_version(void);

#ifdef __cplusplus
}
#endif

#endif
