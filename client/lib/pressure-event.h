/* SPDX-License-Identifier: MIT */
/*
 * The objects of libpressure's public API behind their opaque types:
 * events, errors, triggers, episodes, protection nodes and the results of
 * GetStatus() and GetProtection(); their parsing from the daemon's JSON and
 * the public enums' names. Pure: no I/O.
 */
#pragma once

#include <jansson.h>

#include "pressure.h"

/* Marks a function exported from libpressure.so (the rest is hidden). */
#define _public_ __attribute__((visibility("default")))

/* PSI averages (percent) and totals (microseconds). */
typedef struct EventPsi {
        int present;
        double some_avg10, some_avg60, some_avg300;
        uint64_t some_total_us;
        int has_full; /* the full_* fields are valid */
        double full_avg10, full_avg60, full_avg300;
        uint64_t full_total_us;
} EventPsi;

/* memory.events counters; a field is valid when its bit (1 << pressure_memory_event) is set in present. */
typedef struct EventCounters {
        unsigned present;
        uint64_t low, high, max, oom, oom_kill, oom_group_kill;
} EventCounters;

struct pressure_protection_node {
        int present;
        const char *cgroup;
        uint64_t usage;
        uint64_t min, low, emin, elow;
        uint64_t min_usage, low_usage;
        uint64_t children_min_usage, children_low_usage;
        pressure_protection_state state;
};

struct pressure_trigger {
        int present;
        pressure_level level;
        int has_psi;
        pressure_stall psi_stall;
        uint64_t psi_threshold_us, psi_window_us;
        int has_vmpressure;
        pressure_level vmpressure_level;
        pressure_vmpressure_mode vmpressure_mode;
};

struct pressure_episode {
        int active;
        uint64_t active_since_us;  /* Episode: CLOCK_MONOTONIC of its first event */
        uint64_t start_us, end_us; /* PastEpisode */
        uint64_t start_time_us, end_time_us;
        uint64_t duration_us;
        uint64_t events;
        int has_peak;
        double peak;
        pressure_level peak_level;
};

struct pressure_error {
        int error;        /* negative errno */
        char *name;       /* varlink error name, or NULL */
        char *parameters; /* JSON text, or NULL */
        json_t *params;   /* parsed parameters, or NULL */
        char *message;
};

/* One event; strings point into the JSON it was parsed from. */
struct pressure_event {
        pressure_event_kind kind;
        const char *cgroup;
        pressure_source source;
        pressure_resource resource;
        pressure_level level;
        uint64_t seq, count, missed, time_us, monotonic_us;
        int synthetic;
        int adjusted;
        const char *adjusted_reason;
        pressure_trigger trigger;
        EventPsi psi;
        EventCounters counters, delta;
        pressure_protection_node node;
        pressure_protection_state state, previous;
        int has_episode;
        pressure_episode episode;
        const char *killed_by, *reason; /* KILLED; PREKILL: killed_by only */
        uint64_t deadline_us, prekill_id; /* PREKILL */
        int has_headroom, has_reclaim_target; /* LEVEL: the two below are not null */
        uint64_t headroom_bytes, reclaim_target_bytes;
        json_t *kill_sources;        /* SUBSCRIBED to kills: an array of strings, or NULL */
        json_t *unavailable_kill_sources; /* ... the others: an array of {source, reason}, or NULL */
        const pressure_error *error; /* ERROR */
        const char *json;            /* the event object as received */
};

/*
 * event_parse - fill @ret from the event object @v.
 * Strings in @ret point into @v, which must outlive @ret; ret->json is left
 * for the caller. A kind this version does not know (a newer daemon's)
 * makes -ENOMSG; malformed fields -EBADMSG; unknown extra fields are
 * ignored.
 */
int event_parse(json_t *v, pressure_event *ret);

/* Parsers of the protocol's Trigger, Episode/PastEpisode and ProtectionNode: 0 or -EBADMSG. */
int trigger_parse(json_t *v, pressure_trigger *ret);
int episode_parse(json_t *v, pressure_episode *ret);
int node_parse(json_t *v, pressure_protection_node *ret);
/*
 * member_u64, member_double - member @key of the object @o as a
 * non-negative integer (a float is truncated) or a number: 1 and *@ret,
 * 0 when it is absent or null, -EBADMSG for another type or a negative
 * integer.
 */
int member_u64(json_t *o, const char *key, uint64_t *ret);
int member_double(json_t *o, const char *key, double *ret);
/* A reclaim state by its protocol name; UNKNOWN for NULL or a name this version does not know. */
pressure_reclaim_state reclaim_state_from_string(const char *s);
/* A source by its protocol name, or -EINVAL. */
int source_from_string(const char *s);
/*
 * resource_of - the "resource" member of @v: MEMORY when it is absent (a
 * daemon before 0.3 watched memory only), NONE for a name this version
 * does not know.
 */
pressure_resource resource_of(json_t *v);

/*
 * error_new - an error object for @error (negative errno) and, if the
 * daemon answered with one, its varlink @name and @params (borrowed).
 * Returns NULL only without memory.
 */
pressure_error *error_new(int error, const char *name, json_t *params);

/*
 * error_local - an error object for a failure on the client's side,
 * @error (negative errno) while talking to the daemon at @socket: one that
 * does not run (-ECONNREFUSED) is PRESSURE_ERROR_DAEMON_NOT_RUNNING with
 * the parameter "socket"; anything else has no name. NULL without memory.
 */
pressure_error *error_local(int error, const char *socket);

/*
 * error_invalid_cgroup_path - the error of a call given @cgroup, which
 * breaks the rule @problem (cgroup.h): -EINVAL,
 * PRESSURE_ERROR_INVALID_CGROUP_PATH. NULL if out of memory.
 */
pressure_error *error_invalid_cgroup_path(const char *cgroup, int problem);

/*
 * error_name_to_errno - the errno value for a varlink error name, one per
 * error (the table is in libpressure(3)); an unknown name -EREMOTEIO.
 */
int error_name_to_errno(const char *name);

/* status_new, protection_new - a result from a reply's parameters (taken over); -EBADMSG, -ENOMEM. */
int status_new(json_t *params, pressure_status **ret);
int protection_new(json_t *params, pressure_protection **ret);
/* headroom_new - GetHeadroom()'s result from its reply's parameters (taken over); -EBADMSG, -ENOMEM. */
int headroom_new(json_t *params, pressure_headroom **ret);

/* The protocol name of an enum value, or NULL. */
const char *stall_name(pressure_stall stall);
const char *vmpressure_mode_name(pressure_vmpressure_mode mode);
