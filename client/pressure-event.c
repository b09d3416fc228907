/* SPDX-License-Identifier: MIT */
/* JSON events to struct pressure_event, and enum names. */
#include <errno.h>
#include <string.h>

#include "pressure-event.h"
#include "util.h"

static const char *const level_names[] = {
        [PRESSURE_LEVEL_LOW] = "low",
        [PRESSURE_LEVEL_MEDIUM] = "medium",
        [PRESSURE_LEVEL_CRITICAL] = "critical",
};

static const char *const source_names[] = {
        [PRESSURE_SOURCE_PSI] = "psi",
        [PRESSURE_SOURCE_VMPRESSURE] = "vmpressure",
        [PRESSURE_SOURCE_MEMORY_EVENTS] = "memory_events",
        [PRESSURE_SOURCE_PROTECTION] = "protection",
        [PRESSURE_SOURCE_INJECT] = "inject",
};

static const char *const kind_names[] = {
        [PRESSURE_EVENT_SUBSCRIBED] = "subscribed",
        [PRESSURE_EVENT_PRESSURE] = "pressure",
        [PRESSURE_EVENT_MEMORY_EVENTS] = "memory_events",
        [PRESSURE_EVENT_PROTECTION] = "protection",
        [PRESSURE_EVENT_REMOVED] = "removed",
        [PRESSURE_EVENT_RECONNECTED] = "reconnected",
        [PRESSURE_EVENT_ERROR] = "error",
        [PRESSURE_EVENT_CLEARED] = "cleared",
};

static const char *const state_names[] = {
        [PRESSURE_PROTECTION_NONE] = "none",
        [PRESSURE_PROTECTION_LOW] = "low",
        [PRESSURE_PROTECTION_MIN] = "min",
};

static const char *const mode_names[] = {
        [PRESSURE_VMPRESSURE_MODE_DEFAULT] = "default",
        [PRESSURE_VMPRESSURE_MODE_HIERARCHY] = "hierarchy",
        [PRESSURE_VMPRESSURE_MODE_LOCAL] = "local",
};

static const char *name_of(const char *const *table, size_t n, unsigned i) {
        return i < n ? table[i] : NULL;
}

static int index_of(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -EINVAL;
}

#define NAME_OF(table, i) name_of((table), ELEMENTSOF(table), (unsigned) (i))
#define INDEX_OF(table, s) index_of((table), ELEMENTSOF(table), (s))

/**
 * pressure_level_to_string - the protocol name of a level, or NULL.
 */
_public_ const char *pressure_level_to_string(pressure_level level) {
        return NAME_OF(level_names, level);
}

/**
 * pressure_level_from_string - parse "low", "medium" or "critical".
 */
_public_ int pressure_level_from_string(const char *s) {
        return INDEX_OF(level_names, s);
}

/**
 * pressure_source_to_string - the protocol name of a source, or NULL.
 */
_public_ const char *pressure_source_to_string(pressure_source source) {
        return NAME_OF(source_names, source);
}

/**
 * pressure_event_kind_to_string - the protocol name of an event kind.
 */
_public_ const char *pressure_event_kind_to_string(pressure_event_kind kind) {
        return NAME_OF(kind_names, kind);
}

/**
 * pressure_protection_state_to_string - "min", "low", "none", or NULL.
 */
_public_ const char *pressure_protection_state_to_string(pressure_protection_state state) {
        return NAME_OF(state_names, state);
}

const char *stall_to_string(pressure_stall stall) {
        return stall == PRESSURE_STALL_FULL ? "full" : stall == PRESSURE_STALL_SOME ? "some" : NULL;
}

const char *vmpressure_mode_to_string(pressure_vmpressure_mode mode) {
        return NAME_OF(mode_names, mode);
}

/* A non-negative integer; a float is truncated (the protocol's "int" may arrive as 1.0). */
static int get_u64(json_t *o, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(o, key);

        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v)) {
                json_int_t i = json_integer_value(v);
                if (i < 0)
                        return -EBADMSG;
                *ret = (uint64_t) i;
                return 1;
        }
        if (json_is_real(v) && json_real_value(v) >= 0) {
                *ret = (uint64_t) json_real_value(v);
                return 1;
        }
        return -EBADMSG;
}

typedef enum MemberType {
        MEMBER_NUMBER,
        MEMBER_BOOLEAN,
        MEMBER_STRING,
} MemberType;

/* Member @key of @o: 1 and *ret if it is of @type, 0 if absent or null, -EBADMSG otherwise. */
static int get_member(json_t *o, const char *key, MemberType type, json_t **ret) {
        json_t *v = json_object_get(o, key);
        bool ok;

        if (!v || json_is_null(v))
                return 0;
        switch (type) {
        case MEMBER_NUMBER:
                ok = json_is_number(v);
                break;
        case MEMBER_BOOLEAN:
                ok = json_is_boolean(v);
                break;
        default:
                ok = json_is_string(v);
                break;
        }
        if (!ok)
                return -EBADMSG;
        *ret = v;
        return 1;
}

static int get_double(json_t *o, const char *key, double *ret) {
        json_t *v;
        int r = get_member(o, key, MEMBER_NUMBER, &v);

        if (r > 0)
                *ret = json_number_value(v);
        return r;
}

static int get_bool(json_t *o, const char *key, int *ret) {
        json_t *v;
        int r = get_member(o, key, MEMBER_BOOLEAN, &v);

        if (r > 0)
                *ret = json_is_true(v);
        return r;
}

static int get_string(json_t *o, const char *key, const char **ret) {
        json_t *v;
        int r = get_member(o, key, MEMBER_STRING, &v);

        if (r > 0)
                *ret = json_string_value(v);
        return r;
}

/* An enum given by name; absent leaves *ret alone, an unknown name is an error. */
static int get_enum(json_t *o, const char *key, const char *const *table, size_t n, int *ret) {
        const char *s = NULL;
        int r, i;

        r = get_string(o, key, &s);
        if (r <= 0)
                return r;
        i = index_of(table, n, s);
        if (i < 0)
                return -EBADMSG;
        *ret = i;
        return 1;
}

#define GET_ENUM(o, key, table, ret)                                                  \
        ({                                                                            \
                int _v = (int) *(ret), _r;                                            \
                _r = get_enum((o), (key), (table), ELEMENTSOF(table), &_v);          \
                *(ret) = _v;                                                          \
                _r;                                                                   \
        })

static int psi_parse(json_t *v, pressure_psi *ret) {
        pressure_psi p = { .present = 1 };
        int r = 0;

        if (!json_is_object(v))
                return -EBADMSG;
        if (get_double(v, "some_avg10", &p.some_avg10) < 0 ||
            get_double(v, "some_avg60", &p.some_avg60) < 0 ||
            get_double(v, "some_avg300", &p.some_avg300) < 0 ||
            get_u64(v, "some_total_us", &p.some_total_us) < 0)
                return -EBADMSG;
        r = get_double(v, "full_avg10", &p.full_avg10);
        if (r < 0 ||
            get_double(v, "full_avg60", &p.full_avg60) < 0 ||
            get_double(v, "full_avg300", &p.full_avg300) < 0 ||
            get_u64(v, "full_total_us", &p.full_total_us) < 0)
                return -EBADMSG;
        p.has_full = r > 0 || json_object_get(v, "full_total_us") != NULL;
        *ret = p;
        return 0;
}

static int counters_parse(json_t *v, pressure_memory_events *ret) {
        static const char *const keys[] = { "low", "high", "max", "oom", "oom_kill", "oom_group_kill" };
        pressure_memory_events m = {};
        uint64_t *fields[] = { &m.low, &m.high, &m.max, &m.oom, &m.oom_kill, &m.oom_group_kill };

        if (!json_is_object(v))
                return -EBADMSG;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                int r = get_u64(v, keys[i], fields[i]);
                if (r < 0)
                        return r;
                if (r > 0)
                        m.present |= 1U << i;
        }
        *ret = m;
        return 0;
}

/* An optional limit: null (or absent) is unlimited. */
static int get_limit(json_t *o, const char *key, uint64_t *ret) {
        int r = get_u64(o, key, ret);
        if (r == 0)
                *ret = PRESSURE_UNLIMITED;
        return r;
}

int node_parse(json_t *v, pressure_protection_node *ret) {
        pressure_protection_node n = { .present = 1, .cgroup = "/" };
        int state = 0;

        if (!json_is_object(v))
                return -EBADMSG;
        if (get_string(v, "cgroup", &n.cgroup) < 0 ||
            get_u64(v, "usage", &n.usage) < 0 ||
            get_limit(v, "min", &n.min) < 0 ||
            get_limit(v, "low", &n.low) < 0 ||
            get_limit(v, "emin", &n.emin) < 0 ||
            get_limit(v, "elow", &n.elow) < 0 ||
            get_u64(v, "min_usage", &n.min_usage) < 0 ||
            get_u64(v, "low_usage", &n.low_usage) < 0 ||
            get_u64(v, "children_min_usage", &n.children_min_usage) < 0 ||
            get_u64(v, "children_low_usage", &n.children_low_usage) < 0 ||
            get_enum(v, "state", state_names, ELEMENTSOF(state_names), &state) < 0)
                return -EBADMSG;
        n.state = (pressure_protection_state) state;
        *ret = n;
        return 0;
}

static int trigger_parse(json_t *v, pressure_trigger *ret) {
        pressure_trigger t = {};
        json_t *psi, *vm;

        if (!json_is_object(v))
                return -EBADMSG;
        if (GET_ENUM(v, "level", level_names, &t.level) < 0)
                return -EBADMSG;
        psi = json_object_get(v, "psi");
        if (psi && !json_is_null(psi)) {
                const char *stall = NULL;

                if (!json_is_object(psi) ||
                    get_string(psi, "stall", &stall) < 0 ||
                    get_u64(psi, "threshold_us", &t.psi_threshold_us) < 0 ||
                    get_u64(psi, "window_us", &t.psi_window_us) < 0)
                        return -EBADMSG;
                t.has_psi = 1;
                t.psi_stall = streq_ptr(stall, "full") ? PRESSURE_STALL_FULL : PRESSURE_STALL_SOME;
        }
        vm = json_object_get(v, "vmpressure");
        if (vm && !json_is_null(vm)) {
                if (!json_is_object(vm) ||
                    GET_ENUM(vm, "level", level_names, &t.vmpressure_level) < 0 ||
                    GET_ENUM(vm, "mode", mode_names, &t.vmpressure_mode) < 0)
                        return -EBADMSG;
                t.has_vmpressure = 1;
        }
        *ret = t;
        return 0;
}

/* The figures of an episode, from a "cleared" event or a State's "episode". */
static int episode_parse(json_t *v, pressure_episode *ret) {
        pressure_episode ep = {};

        if (!json_is_object(v) ||
            get_u64(v, "active_since_us", &ep.active_since_us) < 0 ||
            get_u64(v, "duration_us", &ep.duration_us) < 0 ||
            get_u64(v, "events", &ep.events) < 0 ||
            (ep.has_peak = get_double(v, "peak", &ep.peak)) < 0 ||
            GET_ENUM(v, "peak_level", level_names, &ep.peak_level) < 0)
                return -EBADMSG;
        *ret = ep;
        return 0;
}

/**
 * pressure_event_get_episode - the episode an event describes
 * @event: the event
 *
 * Returns the episode of a cleared event, or the active one of a subscribed
 * event, or NULL.
 */
_public_ const pressure_episode *pressure_event_get_episode(const pressure_event *event) {
        return event && event->has_episode ? &event->episode : NULL;
}

int event_parse(json_t *v, pressure_event *ret) {
        pressure_event e = { .cgroup = "/" };
        json_t *x;
        int kind = -1;

        if (!json_is_object(v))
                return -EBADMSG;
        if (get_enum(v, "kind", kind_names, ELEMENTSOF(kind_names), &kind) <= 0 ||
            kind == PRESSURE_EVENT_RECONNECTED || kind == PRESSURE_EVENT_ERROR)
                return -EBADMSG;
        e.kind = (pressure_event_kind) kind;

        if (get_string(v, "cgroup", &e.cgroup) < 0 ||
            GET_ENUM(v, "source", source_names, &e.source) < 0 ||
            GET_ENUM(v, "level", level_names, &e.level) < 0 ||
            get_u64(v, "seq", &e.seq) < 0 ||
            get_u64(v, "count", &e.count) < 0 ||
            get_u64(v, "missed", &e.missed) < 0 ||
            get_u64(v, "time_us", &e.time_us) < 0 ||
            get_u64(v, "monotonic_us", &e.monotonic_us) < 0 ||
            get_bool(v, "synthetic", &e.synthetic) < 0 ||
            get_bool(v, "adjusted", &e.adjusted) < 0)
                return -EBADMSG;

        x = json_object_get(v, "trigger");
        if (x && !json_is_null(x) && trigger_parse(x, &e.trigger) < 0)
                return -EBADMSG;
        x = json_object_get(v, "psi");
        if (x && !json_is_null(x) && psi_parse(x, &e.psi) < 0)
                return -EBADMSG;
        x = json_object_get(v, "counters");
        if (x && !json_is_null(x) && counters_parse(x, &e.counters) < 0)
                return -EBADMSG;
        x = json_object_get(v, "delta");
        if (x && !json_is_null(x) && counters_parse(x, &e.delta) < 0)
                return -EBADMSG;
        x = json_object_get(v, "node");
        if (x && !json_is_null(x) && node_parse(x, &e.node) < 0)
                return -EBADMSG;
        /* A pressure event on a tracked cgroup carries its node as "protection". */
        x = json_object_get(v, "protection");
        if (x && !json_is_null(x) && !e.node.present && node_parse(x, &e.node) < 0)
                return -EBADMSG;
        if (GET_ENUM(v, "previous", state_names, &e.previous) < 0)
                return -EBADMSG;

        /* "state" is the new state string for protection, the State object for subscribed. */
        x = json_object_get(v, "state");
        if (json_is_string(x)) {
                if (GET_ENUM(v, "state", state_names, &e.state) < 0)
                        return -EBADMSG;
        } else if (json_is_object(x)) {
                json_t *y = json_object_get(x, "psi");
                if (y && !json_is_null(y) && psi_parse(y, &e.psi) < 0)
                        return -EBADMSG;
                y = json_object_get(x, "counters");
                if (y && !json_is_null(y) && counters_parse(y, &e.counters) < 0)
                        return -EBADMSG;
                y = json_object_get(x, "node");
                if (y && !json_is_null(y) && node_parse(y, &e.node) < 0)
                        return -EBADMSG;
                y = json_object_get(x, "episode");
                if (y && !json_is_null(y)) {
                        if (episode_parse(y, &e.episode) < 0)
                                return -EBADMSG;
                        e.has_episode = 1;
                }
        } else if (x && !json_is_null(x))
                return -EBADMSG;

        if (e.kind == PRESSURE_EVENT_CLEARED) {
                if (episode_parse(v, &e.episode) < 0)
                        return -EBADMSG;
                e.has_episode = 1;
        }
        if (e.kind == PRESSURE_EVENT_PROTECTION && e.state == PRESSURE_PROTECTION_UNKNOWN && e.node.present)
                e.state = e.node.state;

        *ret = e;
        return 0;
}
