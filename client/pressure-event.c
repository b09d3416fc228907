/* SPDX-License-Identifier: MIT */
/* JSON events to struct pressure_event, and enum names. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
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

/* An optional limit: null (or absent) is unlimited. */
static int get_limit(json_t *o, const char *key, uint64_t *ret) {
        int r = get_u64(o, key, ret);
        if (r == 0)
                *ret = PRESSURE_UNLIMITED;
        return r;
}

typedef enum FieldType {
        FIELD_U64,
        FIELD_LIMIT,
        FIELD_DOUBLE,
        FIELD_BOOL,
        FIELD_STRING,
        FIELD_ENUM,
} FieldType;

/* One member of a JSON object and where it goes in a struct. */
typedef struct Field {
        const char *key;
        FieldType type;
        size_t offset;
        const char *const *names; /* FIELD_ENUM: the names, by value */
        size_t n_names;
} Field;

#define FIELD_KEY(key, type, s, m) { (key), (type), offsetof(s, m), NULL, 0 }
/* A member whose key is its field's name. */
#define FIELD(type, s, m) FIELD_KEY(#m, type, s, m)
/* An enum member given by name; the field must have the size of an int. */
#define ENUM_FIELD_KEY(key, s, m, table) { (key), FIELD_ENUM, offsetof(s, m), (table), ELEMENTSOF(table) }
#define ENUM_FIELD(s, m, table) ENUM_FIELD_KEY(#m, s, m, table)

_Static_assert(sizeof(pressure_level) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(pressure_source) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(pressure_event_kind) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(pressure_protection_state) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(pressure_vmpressure_mode) == sizeof(int), "enum fields are stored as int");

static int parse_field(json_t *o, const Field *f, void *base) {
        void *p = (char *) base + f->offset;

        switch (f->type) {
        case FIELD_U64:
                return get_u64(o, f->key, p);
        case FIELD_LIMIT:
                return get_limit(o, f->key, p);
        case FIELD_DOUBLE:
                return get_double(o, f->key, p);
        case FIELD_BOOL:
                return get_bool(o, f->key, p);
        case FIELD_STRING:
                return get_string(o, f->key, p);
        case FIELD_ENUM:
                return get_enum(o, f->key, f->names, f->n_names, p);
        }
        return -EINVAL;
}

/*
 * Fill the members of @base that @fields describe from the object @o.
 * Returns the mask of the members present (bit i for fields[i]), or -EBADMSG
 * if @o is no object or a member is malformed. Absent members leave their
 * field alone (a limit becomes unlimited).
 */
static int parse_fields(json_t *o, const Field *fields, size_t n, void *base) {
        unsigned mask = 0;

        assert(n < 31);
        if (!json_is_object(o))
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                int r = parse_field(o, &fields[i], base);
                if (r < 0)
                        return -EBADMSG;
                if (r > 0)
                        mask |= 1U << i;
        }
        return (int) mask;
}

#define PARSE_FIELDS(o, fields, base) parse_fields((o), (fields), ELEMENTSOF(fields), (base))

/* Member @key of @o, or NULL if it is absent or null. */
static json_t *get_present(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_null(v) ? NULL : v;
}

/* An optional sub-object parsed by @parse: 1 if parsed, 0 if absent or null, -EBADMSG. */
#define PARSE_OPTIONAL(o, key, parse, ret)                                            \
        ({                                                                            \
                json_t *_m = get_present((o), (key));                                 \
                !_m ? 0 : parse(_m, (ret)) < 0 ? -EBADMSG : 1;                        \
        })

enum { PSI_FULL_AVG10 = 4 }; /* its index in psi_fields */

static const Field psi_fields[] = {
        FIELD(FIELD_DOUBLE, pressure_psi, some_avg10),
        FIELD(FIELD_DOUBLE, pressure_psi, some_avg60),
        FIELD(FIELD_DOUBLE, pressure_psi, some_avg300),
        FIELD(FIELD_U64, pressure_psi, some_total_us),
        [PSI_FULL_AVG10] = FIELD(FIELD_DOUBLE, pressure_psi, full_avg10),
        FIELD(FIELD_DOUBLE, pressure_psi, full_avg60),
        FIELD(FIELD_DOUBLE, pressure_psi, full_avg300),
        FIELD(FIELD_U64, pressure_psi, full_total_us),
};

static int psi_parse(json_t *v, pressure_psi *ret) {
        pressure_psi p = { .present = 1 };
        int mask = PARSE_FIELDS(v, psi_fields, &p);

        if (mask < 0)
                return mask;
        p.has_full = (mask & (1 << PSI_FULL_AVG10)) || json_object_get(v, "full_total_us") != NULL;
        *ret = p;
        return 0;
}

/* In the order of the bits of pressure_memory_events.present. */
static const Field counters_fields[] = {
        FIELD(FIELD_U64, pressure_memory_events, low),
        FIELD(FIELD_U64, pressure_memory_events, high),
        FIELD(FIELD_U64, pressure_memory_events, max),
        FIELD(FIELD_U64, pressure_memory_events, oom),
        FIELD(FIELD_U64, pressure_memory_events, oom_kill),
        FIELD(FIELD_U64, pressure_memory_events, oom_group_kill),
};

static int counters_parse(json_t *v, pressure_memory_events *ret) {
        pressure_memory_events m = {};
        int mask = PARSE_FIELDS(v, counters_fields, &m);

        if (mask < 0)
                return mask;
        m.present = (unsigned) mask;
        *ret = m;
        return 0;
}

static const Field node_fields[] = {
        FIELD(FIELD_STRING, pressure_protection_node, cgroup),
        FIELD(FIELD_U64, pressure_protection_node, usage),
        FIELD(FIELD_LIMIT, pressure_protection_node, min),
        FIELD(FIELD_LIMIT, pressure_protection_node, low),
        FIELD(FIELD_LIMIT, pressure_protection_node, emin),
        FIELD(FIELD_LIMIT, pressure_protection_node, elow),
        FIELD(FIELD_U64, pressure_protection_node, min_usage),
        FIELD(FIELD_U64, pressure_protection_node, low_usage),
        FIELD(FIELD_U64, pressure_protection_node, children_min_usage),
        FIELD(FIELD_U64, pressure_protection_node, children_low_usage),
        ENUM_FIELD(pressure_protection_node, state, state_names),
};

int node_parse(json_t *v, pressure_protection_node *ret) {
        pressure_protection_node n = { .present = 1, .cgroup = "/" };

        if (PARSE_FIELDS(v, node_fields, &n) < 0)
                return -EBADMSG;
        *ret = n;
        return 0;
}

static const Field trigger_fields[] = {
        ENUM_FIELD(pressure_trigger, level, level_names),
};

/* The members of a trigger's "psi" object, but for "stall". */
static const Field trigger_psi_fields[] = {
        FIELD_KEY("threshold_us", FIELD_U64, pressure_trigger, psi_threshold_us),
        FIELD_KEY("window_us", FIELD_U64, pressure_trigger, psi_window_us),
};

static const Field trigger_vmpressure_fields[] = {
        ENUM_FIELD_KEY("level", pressure_trigger, vmpressure_level, level_names),
        ENUM_FIELD_KEY("mode", pressure_trigger, vmpressure_mode, mode_names),
};

static int trigger_parse(json_t *v, pressure_trigger *ret) {
        pressure_trigger t = {};
        json_t *psi, *vm;

        if (PARSE_FIELDS(v, trigger_fields, &t) < 0)
                return -EBADMSG;
        psi = get_present(v, "psi");
        if (psi) {
                const char *stall = NULL;

                if (PARSE_FIELDS(psi, trigger_psi_fields, &t) < 0 || get_string(psi, "stall", &stall) < 0)
                        return -EBADMSG;
                t.has_psi = 1;
                t.psi_stall = streq_ptr(stall, "full") ? PRESSURE_STALL_FULL : PRESSURE_STALL_SOME;
        }
        vm = get_present(v, "vmpressure");
        if (vm) {
                if (PARSE_FIELDS(vm, trigger_vmpressure_fields, &t) < 0)
                        return -EBADMSG;
                t.has_vmpressure = 1;
        }
        *ret = t;
        return 0;
}

enum { EPISODE_PEAK = 3 }; /* its index in episode_fields */

static const Field episode_fields[] = {
        FIELD(FIELD_U64, pressure_episode, active_since_us),
        FIELD(FIELD_U64, pressure_episode, duration_us),
        FIELD(FIELD_U64, pressure_episode, events),
        [EPISODE_PEAK] = FIELD(FIELD_DOUBLE, pressure_episode, peak),
        ENUM_FIELD(pressure_episode, peak_level, level_names),
};

/* The figures of an episode, from a "cleared" event or a State's "episode". */
static int episode_parse(json_t *v, pressure_episode *ret) {
        pressure_episode ep = {};
        int mask = PARSE_FIELDS(v, episode_fields, &ep);

        if (mask < 0)
                return mask;
        ep.has_peak = !!(mask & (1 << EPISODE_PEAK));
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

/**
 * pressure_event_get_adjusted_reason - why the daemon changed the trigger
 * @event: the event
 *
 * Returns the daemon's adjusted_reason of a subscribed event, or NULL.
 */
_public_ const char *pressure_event_get_adjusted_reason(const pressure_event *event) {
        return event ? event->adjusted_reason : NULL;
}

enum { EVENT_KIND = 0 }; /* its index in event_fields */

static const Field event_fields[] = {
        [EVENT_KIND] = ENUM_FIELD(pressure_event, kind, kind_names),
        FIELD(FIELD_STRING, pressure_event, cgroup),
        ENUM_FIELD(pressure_event, source, source_names),
        ENUM_FIELD(pressure_event, level, level_names),
        FIELD(FIELD_U64, pressure_event, seq),
        FIELD(FIELD_U64, pressure_event, count),
        FIELD(FIELD_U64, pressure_event, missed),
        FIELD(FIELD_U64, pressure_event, time_us),
        FIELD(FIELD_U64, pressure_event, monotonic_us),
        FIELD(FIELD_BOOL, pressure_event, synthetic),
        FIELD(FIELD_BOOL, pressure_event, adjusted),
        FIELD(FIELD_STRING, pressure_event, adjusted_reason),
        ENUM_FIELD(pressure_event, previous, state_names),
};

int event_parse(json_t *v, pressure_event *ret) {
        pressure_event e = { .cgroup = "/" };
        json_t *x;
        int mask;

        mask = PARSE_FIELDS(v, event_fields, &e);
        if (mask < 0 || !(mask & (1 << EVENT_KIND)) ||
            e.kind == PRESSURE_EVENT_RECONNECTED || e.kind == PRESSURE_EVENT_ERROR)
                return -EBADMSG;

        if (PARSE_OPTIONAL(v, "trigger", trigger_parse, &e.trigger) < 0 ||
            PARSE_OPTIONAL(v, "psi", psi_parse, &e.psi) < 0 ||
            PARSE_OPTIONAL(v, "counters", counters_parse, &e.counters) < 0 ||
            PARSE_OPTIONAL(v, "delta", counters_parse, &e.delta) < 0 ||
            PARSE_OPTIONAL(v, "node", node_parse, &e.node) < 0)
                return -EBADMSG;
        /* A pressure event on a tracked cgroup carries its node as "protection". */
        if (!e.node.present && PARSE_OPTIONAL(v, "protection", node_parse, &e.node) < 0)
                return -EBADMSG;

        /* "state" is the new state string for protection, the State object for subscribed. */
        x = get_present(v, "state");
        if (json_is_string(x)) {
                if (get_enum(v, "state", state_names, ELEMENTSOF(state_names), (int *) &e.state) < 0)
                        return -EBADMSG;
        } else if (json_is_object(x)) {
                if (PARSE_OPTIONAL(x, "psi", psi_parse, &e.psi) < 0 ||
                    PARSE_OPTIONAL(x, "counters", counters_parse, &e.counters) < 0 ||
                    PARSE_OPTIONAL(x, "node", node_parse, &e.node) < 0 ||
                    (e.has_episode = PARSE_OPTIONAL(x, "episode", episode_parse, &e.episode)) < 0)
                        return -EBADMSG;
        } else if (x)
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
