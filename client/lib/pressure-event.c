/* SPDX-License-Identifier: MIT */
/* JSON events to struct pressure_event, and enum names. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "pressure-event.h"
#include "util.h"
#include "vocabulary.h"

/*
 * The public enums onto the protocol's names (vocabulary.h: generated from
 * the interface, or shared with the daemon). The enums keep their values
 * for the ABI, so they map each value to its name rather than follow the
 * interface's order; test-vocabulary checks that every name of the
 * interface has its value and reads back to it.
 */
static const NameRef level_names[] = {
        [PRESSURE_LEVEL_LOW] = NAME_REF(idl_level_table, IDL_LEVEL_LOW),
        [PRESSURE_LEVEL_MEDIUM] = NAME_REF(idl_level_table, IDL_LEVEL_MEDIUM),
        [PRESSURE_LEVEL_CRITICAL] = NAME_REF(idl_level_table, IDL_LEVEL_CRITICAL),
};

/* A level stream's levels: "normal" is NONE, the others are the portable levels' values. */
static const NameRef stream_level_names[] = {
        [PRESSURE_LEVEL_NORMAL] = NAME_REF(idl_stream_level_table, IDL_STREAM_LEVEL_NORMAL),
        [PRESSURE_LEVEL_LOW] = NAME_REF(idl_stream_level_table, IDL_STREAM_LEVEL_LOW),
        [PRESSURE_LEVEL_MEDIUM] = NAME_REF(idl_stream_level_table, IDL_STREAM_LEVEL_MEDIUM),
        [PRESSURE_LEVEL_CRITICAL] = NAME_REF(idl_stream_level_table, IDL_STREAM_LEVEL_CRITICAL),
};

static const NameRef stall_names[] = {
        [PRESSURE_STALL_SOME] = NAME_REF(idl_psi_stall_table, IDL_PSI_STALL_SOME),
        [PRESSURE_STALL_FULL] = NAME_REF(idl_psi_stall_table, IDL_PSI_STALL_FULL),
};

static const NameRef source_names[] = {
        [PRESSURE_SOURCE_PSI] = NAME_REF(idl_source_table, IDL_SOURCE_PSI),
        [PRESSURE_SOURCE_VMPRESSURE] = NAME_REF(idl_source_table, IDL_SOURCE_VMPRESSURE),
        [PRESSURE_SOURCE_MEMORY_EVENTS] = NAME_REF(idl_source_table, IDL_SOURCE_MEMORY_EVENTS),
        [PRESSURE_SOURCE_PROTECTION] = NAME_REF(idl_source_table, IDL_SOURCE_PROTECTION),
        [PRESSURE_SOURCE_INJECT] = NAME_REF(idl_source_table, IDL_SOURCE_INJECT),
        [PRESSURE_SOURCE_KILLS] = NAME_REF(idl_source_table, IDL_SOURCE_KILLS),
};

static const NameRef resource_names[] = {
        [PRESSURE_RESOURCE_MEMORY] = NAME_REF(idl_resource_table, IDL_RESOURCE_MEMORY),
        [PRESSURE_RESOURCE_CPU] = NAME_REF(idl_resource_table, IDL_RESOURCE_CPU),
        [PRESSURE_RESOURCE_IO] = NAME_REF(idl_resource_table, IDL_RESOURCE_IO),
};

static const NameRef kind_names[] = {
        [PRESSURE_EVENT_SUBSCRIBED] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_SUBSCRIBED),
        [PRESSURE_EVENT_PRESSURE] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_PRESSURE),
        [PRESSURE_EVENT_MEMORY_EVENTS] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_MEMORY_EVENTS),
        [PRESSURE_EVENT_PROTECTION] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_PROTECTION),
        [PRESSURE_EVENT_REMOVED] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_REMOVED),
        [PRESSURE_EVENT_RECONNECTED] = NAME_REF(voc_local_event_kind_table, VOC_LOCAL_EVENT_KIND_RECONNECTED),
        [PRESSURE_EVENT_ERROR] = NAME_REF(voc_local_event_kind_table, VOC_LOCAL_EVENT_KIND_ERROR),
        [PRESSURE_EVENT_CLEARED] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_CLEARED),
        [PRESSURE_EVENT_KILLED] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_KILLED),
        [PRESSURE_EVENT_TRIGGER_CHANGED] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_TRIGGER_CHANGED),
        [PRESSURE_EVENT_LEVEL] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_LEVEL),
        [PRESSURE_EVENT_PREKILL] = NAME_REF(idl_event_kind_table, IDL_EVENT_KIND_PREKILL),
};

static const NameRef state_names[] = {
        [PRESSURE_PROTECTION_NONE] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_NONE),
        [PRESSURE_PROTECTION_LOW] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_LOW),
        [PRESSURE_PROTECTION_MIN] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_MIN),
};

static const NameRef reclaim_state_names[] = {
        [PRESSURE_RECLAIM_PROBING] = NAME_REF(voc_reclaim_state_table, VOC_RECLAIM_STATE_PROBING),
        [PRESSURE_RECLAIM_BACKING_OFF] = NAME_REF(voc_reclaim_state_table, VOC_RECLAIM_STATE_BACKING_OFF),
        [PRESSURE_RECLAIM_AT_FLOOR] = NAME_REF(voc_reclaim_state_table, VOC_RECLAIM_STATE_AT_FLOOR),
        [PRESSURE_RECLAIM_UNSUPPORTED] = NAME_REF(voc_reclaim_state_table, VOC_RECLAIM_STATE_UNSUPPORTED),
};

static const NameRef mode_names[] = {
        [PRESSURE_VMPRESSURE_MODE_DEFAULT] = NAME_REF(idl_vmpressure_mode_table, IDL_VMPRESSURE_MODE_DEFAULT),
        [PRESSURE_VMPRESSURE_MODE_HIERARCHY] = NAME_REF(idl_vmpressure_mode_table, IDL_VMPRESSURE_MODE_HIERARCHY),
        [PRESSURE_VMPRESSURE_MODE_LOCAL] = NAME_REF(idl_vmpressure_mode_table, IDL_VMPRESSURE_MODE_LOCAL),
};

#define NAME_OF(table, i) name_ref_to_string((table), ELEMENTSOF(table), (int) (i))
#define INDEX_OF(table, s) name_ref_from_string((table), ELEMENTSOF(table), (s))

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
 * pressure_resource_to_string - "memory", "cpu", "io", or NULL.
 */
_public_ const char *pressure_resource_to_string(pressure_resource resource) {
        return NAME_OF(resource_names, resource);
}

/**
 * pressure_resource_from_string - parse "memory", "cpu" or "io".
 */
_public_ int pressure_resource_from_string(const char *s) {
        return INDEX_OF(resource_names, s);
}

pressure_resource resource_of(json_t *v) {
        json_t *x = json_object_get(v, "resource");
        int i;

        if (!x || json_is_null(x))
                return PRESSURE_RESOURCE_MEMORY;
        i = INDEX_OF(resource_names, json_string_value(x));
        return i < 0 ? PRESSURE_RESOURCE_NONE : (pressure_resource) i;
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

/**
 * pressure_reclaim_state_to_string - "probing", "backing-off", "at-floor", "unsupported", or NULL.
 */
_public_ const char *pressure_reclaim_state_to_string(pressure_reclaim_state state) {
        return NAME_OF(reclaim_state_names, state);
}

pressure_reclaim_state reclaim_state_from_string(const char *s) {
        int i = INDEX_OF(reclaim_state_names, s);

        return i < 0 ? PRESSURE_RECLAIM_UNKNOWN : (pressure_reclaim_state) i;
}

const char *stall_name(pressure_stall stall) {
        return NAME_OF(stall_names, stall);
}

const char *vmpressure_mode_name(pressure_vmpressure_mode mode) {
        return NAME_OF(mode_names, mode);
}

int source_from_string(const char *s) {
        return INDEX_OF(source_names, s);
}

/* 2^64: the first float a uint64_t cannot hold. */
#define U64_LIMIT_DOUBLE 18446744073709551616.0

/*
 * A non-negative integer; a float is truncated (the protocol's "int" may
 * arrive as 1.0), one too large for 64 bits is malformed.
 */
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
        if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < U64_LIMIT_DOUBLE) {
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

int member_u64(json_t *o, const char *key, uint64_t *ret) {
        return get_u64(o, key, ret);
}

int member_double(json_t *o, const char *key, double *ret) {
        return get_double(o, key, ret);
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
static int get_enum(json_t *o, const char *key, const NameRef *table, size_t n, int *ret) {
        const char *s = NULL;
        int r, i;

        r = get_string(o, key, &s);
        if (r <= 0)
                return r;
        i = name_ref_from_string(table, n, s);
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
        const NameRef *names; /* FIELD_ENUM: the names, by value */
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
        FIELD(FIELD_DOUBLE, EventPsi, some_avg10),
        FIELD(FIELD_DOUBLE, EventPsi, some_avg60),
        FIELD(FIELD_DOUBLE, EventPsi, some_avg300),
        FIELD(FIELD_U64, EventPsi, some_total_us),
        [PSI_FULL_AVG10] = FIELD(FIELD_DOUBLE, EventPsi, full_avg10),
        FIELD(FIELD_DOUBLE, EventPsi, full_avg60),
        FIELD(FIELD_DOUBLE, EventPsi, full_avg300),
        FIELD(FIELD_U64, EventPsi, full_total_us),
};

static int psi_parse(json_t *v, EventPsi *ret) {
        EventPsi p = { .present = 1 };
        int mask = PARSE_FIELDS(v, psi_fields, &p);

        if (mask < 0)
                return mask;
        p.has_full = (mask & (1 << PSI_FULL_AVG10)) || json_object_get(v, "full_total_us") != NULL;
        *ret = p;
        return 0;
}

/* In the order of pressure_memory_event, the bits of EventCounters.present. */
static const Field counters_fields[] = {
        FIELD(FIELD_U64, EventCounters, low),
        FIELD(FIELD_U64, EventCounters, high),
        FIELD(FIELD_U64, EventCounters, max),
        FIELD(FIELD_U64, EventCounters, oom),
        FIELD(FIELD_U64, EventCounters, oom_kill),
        FIELD(FIELD_U64, EventCounters, oom_group_kill),
};

static int counters_parse(json_t *v, EventCounters *ret) {
        EventCounters m = {};
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

int trigger_parse(json_t *v, pressure_trigger *ret) {
        pressure_trigger t = { .present = 1 };
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

enum { EPISODE_PEAK = 7 }; /* its index in episode_fields */

static const Field episode_fields[] = {
        FIELD(FIELD_U64, pressure_episode, active_since_us),
        FIELD(FIELD_U64, pressure_episode, start_us),
        FIELD(FIELD_U64, pressure_episode, end_us),
        FIELD(FIELD_U64, pressure_episode, start_time_us),
        FIELD(FIELD_U64, pressure_episode, end_time_us),
        FIELD(FIELD_U64, pressure_episode, duration_us),
        FIELD(FIELD_U64, pressure_episode, events),
        [EPISODE_PEAK] = FIELD(FIELD_DOUBLE, pressure_episode, peak),
        ENUM_FIELD(pressure_episode, peak_level, level_names),
};

/* The figures of an episode, from a "cleared" event or a State's "episode". */
int episode_parse(json_t *v, pressure_episode *ret) {
        pressure_episode ep = {};
        int mask = PARSE_FIELDS(v, episode_fields, &ep);

        if (mask < 0)
                return mask;
        ep.has_peak = !!(mask & (1 << EPISODE_PEAK));
        *ret = ep;
        return 0;
}

/* The "kill_sources" of a State (borrowed into *@ret): absent, null, or an array of strings; 0 or -EBADMSG. */
static int kill_sources_parse(json_t *state, json_t **ret) {
        json_t *a = get_present(state, "kill_sources"), *x;
        size_t i;

        if (!a)
                return 0;
        if (!json_is_array(a))
                return -EBADMSG;
        json_array_foreach(a, i, x)
                if (!json_is_string(x))
                        return -EBADMSG;
        *ret = a;
        return 0;
}

/*
 * The "unavailable_kill_sources" of a State (borrowed into *@ret): absent,
 * null, or an array of objects with the strings "source" and "reason"; 0 or -EBADMSG.
 */
static int unavailable_kill_sources_parse(json_t *state, json_t **ret) {
        json_t *a = get_present(state, "unavailable_kill_sources"), *x;
        size_t i;

        if (!a)
                return 0;
        if (!json_is_array(a))
                return -EBADMSG;
        json_array_foreach(a, i, x)
                if (!json_is_string(json_object_get(x, "source")) || !json_is_string(json_object_get(x, "reason")))
                        return -EBADMSG;
        *ret = a;
        return 0;
}

enum { EVENT_KIND = 0, EVENT_CGROUP = 1, EVENT_ID = 2, EVENT_DEADLINE = 3 }; /* their indexes in event_fields */

static const Field event_fields[] = {
        [EVENT_KIND] = ENUM_FIELD(pressure_event, kind, kind_names),
        [EVENT_CGROUP] = FIELD(FIELD_STRING, pressure_event, cgroup),
        [EVENT_ID] = FIELD_KEY("id", FIELD_U64, pressure_event, prekill_id),
        [EVENT_DEADLINE] = FIELD(FIELD_U64, pressure_event, deadline_us),
        ENUM_FIELD(pressure_event, source, source_names),
        FIELD(FIELD_U64, pressure_event, seq),
        FIELD(FIELD_U64, pressure_event, count),
        FIELD(FIELD_U64, pressure_event, missed),
        FIELD(FIELD_U64, pressure_event, time_us),
        FIELD(FIELD_U64, pressure_event, monotonic_us),
        FIELD(FIELD_BOOL, pressure_event, synthetic),
        FIELD(FIELD_BOOL, pressure_event, adjusted),
        FIELD(FIELD_STRING, pressure_event, adjusted_reason),
        ENUM_FIELD(pressure_event, previous, state_names),
        FIELD_KEY("by", FIELD_STRING, pressure_event, killed_by),
        FIELD(FIELD_STRING, pressure_event, reason),
};

/*
 * The "level" of @e, by the names of its kind: a level stream's include
 * "normal" and must be there with the cgroup (its headroom and reclaim
 * target may be null); 0 or -EBADMSG.
 */
static int level_parse(json_t *v, pressure_event *e, int mask) {
        int r;

        if (e->kind != PRESSURE_EVENT_LEVEL)
                return get_enum(v, "level", level_names, ELEMENTSOF(level_names), (int *) &e->level) < 0 ? -EBADMSG : 0;
        r = get_enum(v, "level", stream_level_names, ELEMENTSOF(stream_level_names), (int *) &e->level);
        if (r <= 0 || !(mask & (1 << EVENT_CGROUP)))
                return -EBADMSG;
        r = get_u64(v, "headroom_bytes", &e->headroom_bytes);
        if (r < 0)
                return -EBADMSG;
        e->has_headroom = r;
        r = get_u64(v, "reclaim_target_bytes", &e->reclaim_target_bytes);
        if (r < 0)
                return -EBADMSG;
        e->has_reclaim_target = r;
        return 0;
}

/*
 * A warning says what is to be killed, by whom, its number and its deadline; the
 * fields of the other kinds are not its own.
 */
static int prekill_check(pressure_event *e, int mask) {
        unsigned need = (1U << EVENT_CGROUP) | (1U << EVENT_ID) | (1U << EVENT_DEADLINE);

        if (e->kind != PRESSURE_EVENT_PREKILL) {
                e->prekill_id = e->deadline_us = 0;
                return 0;
        }
        return ((unsigned) mask & need) == need && e->killed_by ? 0 : -EBADMSG;
}

int event_parse(json_t *v, pressure_event *ret) {
        pressure_event e = { .cgroup = "/" };
        json_t *x;
        int mask;

        /* A kind of a later daemon: not malformed, only not this version's to read. */
        x = json_object_get(v, "kind");
        if (json_is_string(x) && INDEX_OF(kind_names, json_string_value(x)) < 0)
                return -ENOMSG;
        mask = PARSE_FIELDS(v, event_fields, &e);
        if (mask < 0 || !(mask & (1 << EVENT_KIND)) ||
            e.kind == PRESSURE_EVENT_RECONNECTED || e.kind == PRESSURE_EVENT_ERROR ||
            level_parse(v, &e, mask) < 0)
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
                    (e.has_episode = PARSE_OPTIONAL(x, "episode", episode_parse, &e.episode)) < 0 ||
                    kill_sources_parse(x, &e.kill_sources) < 0 ||
                    unavailable_kill_sources_parse(x, &e.unavailable_kill_sources) < 0)
                        return -EBADMSG;
                e.episode.active = e.has_episode;
        } else if (x)
                return -EBADMSG;

        if (e.kind == PRESSURE_EVENT_CLEARED) {
                if (episode_parse(v, &e.episode) < 0)
                        return -EBADMSG;
                e.has_episode = 1;
        }
        /* A kill says who and why; its source goes without saying. A warning says who. */
        if (e.kind == PRESSURE_EVENT_KILLED) {
                if (!e.killed_by || !e.reason)
                        return -EBADMSG;
                if (e.source == PRESSURE_SOURCE_NONE)
                        e.source = PRESSURE_SOURCE_KILLS;
        } else if (e.kind == PRESSURE_EVENT_PREKILL)
                e.reason = NULL;
        else
                e.killed_by = e.reason = NULL;
        if (prekill_check(&e, mask) < 0)
                return -EBADMSG;
        if (e.kind == PRESSURE_EVENT_PROTECTION && e.state == PRESSURE_PROTECTION_UNKNOWN && e.node.present)
                e.state = e.node.state;
        /* Events about pressure say their resource; memory.events and protection are memory's. */
        if (e.kind != PRESSURE_EVENT_REMOVED)
                e.resource = resource_of(v);

        *ret = e;
        return 0;
}

/* ---- Event getters ------------------------------------------------------------ */

/**
 * pressure_event_get_kind - what the event is.
 */
_public_ pressure_event_kind pressure_event_get_kind(const pressure_event *e) {
        return e ? e->kind : PRESSURE_EVENT_ERROR;
}

/**
 * pressure_event_get_cgroup - the cgroup the event is about; "/" for the system.
 */
_public_ const char *pressure_event_get_cgroup(const pressure_event *e) {
        return e ? e->cgroup : NULL;
}

/**
 * pressure_event_get_source - the source of the subscription or event.
 */
_public_ pressure_source pressure_event_get_source(const pressure_event *e) {
        return e ? e->source : PRESSURE_SOURCE_NONE;
}

/**
 * pressure_event_get_resource - the resource of the event.
 */
_public_ pressure_resource pressure_event_get_resource(const pressure_event *e) {
        return e ? e->resource : PRESSURE_RESOURCE_NONE;
}

/**
 * pressure_event_get_level - the level of a pressure, cleared or level event.
 */
_public_ pressure_level pressure_event_get_level(const pressure_event *e) {
        return e ? e->level : PRESSURE_LEVEL_NONE;
}

/**
 * pressure_event_get_seq - the event's number in its subscription.
 */
_public_ uint64_t pressure_event_get_seq(const pressure_event *e) {
        return e ? e->seq : 0;
}

/**
 * pressure_event_get_missed - events lost before this one.
 */
_public_ uint64_t pressure_event_get_missed(const pressure_event *e) {
        return e ? e->missed : 0;
}

/**
 * pressure_event_get_count - kernel notifications merged into the event.
 */
_public_ uint64_t pressure_event_get_count(const pressure_event *e) {
        return e ? e->count : 0;
}

/**
 * pressure_event_get_time_us - CLOCK_REALTIME of the event.
 */
_public_ uint64_t pressure_event_get_time_us(const pressure_event *e) {
        return e ? e->time_us : 0;
}

/**
 * pressure_event_get_monotonic_us - CLOCK_MONOTONIC of the event.
 */
_public_ uint64_t pressure_event_get_monotonic_us(const pressure_event *e) {
        return e ? e->monotonic_us : 0;
}

/**
 * pressure_event_is_synthetic - whether Inject() made the event.
 */
_public_ int pressure_event_is_synthetic(const pressure_event *e) {
        return e ? e->synthetic : 0;
}

/**
 * pressure_event_get_trigger - the kernel registration of a subscribed event.
 */
_public_ const pressure_trigger *pressure_event_get_trigger(const pressure_event *e) {
        return e && e->trigger.present ? &e->trigger : NULL;
}

/**
 * pressure_event_is_adjusted - whether the daemon changed the trigger.
 */
_public_ int pressure_event_is_adjusted(const pressure_event *e) {
        return e ? e->adjusted : 0;
}

/**
 * pressure_event_get_adjusted_reason - why the daemon changed the trigger, or NULL.
 */
_public_ const char *pressure_event_get_adjusted_reason(const pressure_event *e) {
        return e ? e->adjusted_reason : NULL;
}

/**
 * pressure_event_get_psi_avg - a PSI average of the event, in percent.
 */
_public_ int pressure_event_get_psi_avg(const pressure_event *e, pressure_stall stall, unsigned window_sec,
                                        double *ret) {
        const double *avg;

        if (!e || !ret || !stall_name(stall) || (window_sec != 10 && window_sec != 60 && window_sec != 300))
                return -EINVAL;
        if (!e->psi.present || (stall == PRESSURE_STALL_FULL && !e->psi.has_full))
                return -ENODATA;
        avg = stall == PRESSURE_STALL_FULL ? &e->psi.full_avg10 : &e->psi.some_avg10;
        *ret = avg[window_sec == 10 ? 0 : window_sec == 60 ? 1 : 2];
        return 0;
}

/**
 * pressure_event_get_psi_total - the PSI total stall of the event, in microseconds.
 */
_public_ int pressure_event_get_psi_total(const pressure_event *e, pressure_stall stall, uint64_t *ret) {
        if (!e || !ret || !stall_name(stall))
                return -EINVAL;
        if (!e->psi.present || (stall == PRESSURE_STALL_FULL && !e->psi.has_full))
                return -ENODATA;
        *ret = stall == PRESSURE_STALL_FULL ? e->psi.full_total_us : e->psi.some_total_us;
        return 0;
}

static int counter_get(const EventCounters *m, pressure_memory_event counter, uint64_t *ret) {
        const uint64_t *values = &m->low;

        if (!ret || (unsigned) counter > PRESSURE_MEMORY_EVENT_OOM_GROUP_KILL)
                return -EINVAL;
        if (!(m->present & (1U << counter)))
                return -ENODATA;
        *ret = values[counter];
        return 0;
}

/**
 * pressure_event_get_memory_event - a memory.events counter of the event.
 */
_public_ int pressure_event_get_memory_event(const pressure_event *e, pressure_memory_event counter,
                                             uint64_t *ret) {
        return e ? counter_get(&e->counters, counter, ret) : -EINVAL;
}

/**
 * pressure_event_get_memory_event_delta - the change of a memory.events counter.
 */
_public_ int pressure_event_get_memory_event_delta(const pressure_event *e, pressure_memory_event counter,
                                                   uint64_t *ret) {
        return e ? counter_get(&e->delta, counter, ret) : -EINVAL;
}

/**
 * pressure_event_get_protection_node - the cgroup's protection node, or NULL.
 */
_public_ const pressure_protection_node *pressure_event_get_protection_node(const pressure_event *e) {
        return e && e->node.present ? &e->node : NULL;
}

/**
 * pressure_event_get_protection_state - the new state of a protection event.
 */
_public_ pressure_protection_state pressure_event_get_protection_state(const pressure_event *e) {
        return e ? e->state : PRESSURE_PROTECTION_UNKNOWN;
}

/**
 * pressure_event_get_previous_protection_state - the state before a protection event.
 */
_public_ pressure_protection_state pressure_event_get_previous_protection_state(const pressure_event *e) {
        return e ? e->previous : PRESSURE_PROTECTION_UNKNOWN;
}

/**
 * pressure_event_get_episode - the episode of a cleared or subscribed event, or NULL.
 */
_public_ const pressure_episode *pressure_event_get_episode(const pressure_event *e) {
        return e && e->has_episode ? &e->episode : NULL;
}

/**
 * pressure_event_get_error - the error that ended a subscription, or NULL.
 */
_public_ const pressure_error *pressure_event_get_error(const pressure_event *e) {
        return e ? e->error : NULL;
}

/**
 * pressure_event_get_killed_by - who killed, in a killed event: "kernel", "systemd-oomd".
 */
_public_ const char *pressure_event_get_killed_by(const pressure_event *e) {
        return e ? e->killed_by : NULL;
}

/**
 * pressure_event_get_reason - why, in a killed event: the killer's word for it.
 */
_public_ const char *pressure_event_get_reason(const pressure_event *e) {
        return e ? e->reason : NULL;
}

/**
 * pressure_event_get_n_kill_sources - how many killers a kills subscription hears.
 */
_public_ size_t pressure_event_get_n_kill_sources(const pressure_event *e) {
        return e && e->kill_sources ? json_array_size(e->kill_sources) : 0;
}

/**
 * pressure_event_get_kill_source - killer @i of a kills subscription, or NULL.
 */
_public_ const char *pressure_event_get_kill_source(const pressure_event *e, size_t i) {
        return e && e->kill_sources ? json_string_value(json_array_get(e->kill_sources, i)) : NULL;
}

/**
 * pressure_event_get_n_unavailable_kill_sources - how many killers cannot report on a kills subscription.
 */
_public_ size_t pressure_event_get_n_unavailable_kill_sources(const pressure_event *e) {
        return e && e->unavailable_kill_sources ? json_array_size(e->unavailable_kill_sources) : 0;
}

/**
 * pressure_event_get_unavailable_kill_source - killer @i that cannot report, and why; NULL past the end.
 */
_public_ const char *pressure_event_get_unavailable_kill_source(const pressure_event *e, size_t i,
                                                               const char **ret_reason) {
        json_t *x = e && e->unavailable_kill_sources ? json_array_get(e->unavailable_kill_sources, i) : NULL;

        if (!x)
                return NULL;
        if (ret_reason)
                *ret_reason = json_string_value(json_object_get(x, "reason"));
        return json_string_value(json_object_get(x, "source"));
}

/**
 * pressure_event_get_headroom_bytes - a level event's headroom; -ENODATA for null and other kinds.
 */
_public_ int pressure_event_get_headroom_bytes(const pressure_event *e, uint64_t *ret) {
        if (!e || !ret)
                return -EINVAL;
        if (e->kind != PRESSURE_EVENT_LEVEL || !e->has_headroom)
                return -ENODATA;
        *ret = e->headroom_bytes;
        return 0;
}

/**
 * pressure_event_get_reclaim_target_bytes - a level event's reclaim target; -ENODATA for null and other kinds.
 */
_public_ int pressure_event_get_reclaim_target_bytes(const pressure_event *e, uint64_t *ret) {
        if (!e || !ret)
                return -EINVAL;
        if (e->kind != PRESSURE_EVENT_LEVEL || !e->has_reclaim_target)
                return -ENODATA;
        *ret = e->reclaim_target_bytes;
        return 0;
}

/**
 * pressure_event_get_deadline_us - when the daemon answers systemd-oomd for a warning; 0 for other kinds.
 */
_public_ uint64_t pressure_event_get_deadline_us(const pressure_event *e) {
        return e && e->kind == PRESSURE_EVENT_PREKILL ? e->deadline_us : 0;
}

/**
 * pressure_event_get_prekill_id - a warning's number, for its acknowledgement; -ENODATA for other kinds.
 */
_public_ int pressure_event_get_prekill_id(const pressure_event *e, uint64_t *ret) {
        if (!e || !ret)
                return -EINVAL;
        if (e->kind != PRESSURE_EVENT_PREKILL)
                return -ENODATA;
        *ret = e->prekill_id;
        return 0;
}

/**
 * pressure_event_get_json - the event as received, JSON text.
 */
_public_ const char *pressure_event_get_json(const pressure_event *e) {
        return e ? e->json : NULL;
}

/* ---- Triggers, episodes, nodes ------------------------------------------------------ */

/**
 * pressure_trigger_get_level - the portable level of a trigger, or NONE.
 */
_public_ pressure_level pressure_trigger_get_level(const pressure_trigger *t) {
        return t ? t->level : PRESSURE_LEVEL_NONE;
}

/**
 * pressure_trigger_get_psi - the PSI trigger in use.
 */
_public_ int pressure_trigger_get_psi(const pressure_trigger *t, pressure_stall *ret_stall,
                                      uint64_t *ret_threshold_us, uint64_t *ret_window_us) {
        if (!t)
                return -EINVAL;
        if (!t->has_psi)
                return -ENODATA;
        if (ret_stall)
                *ret_stall = t->psi_stall;
        if (ret_threshold_us)
                *ret_threshold_us = t->psi_threshold_us;
        if (ret_window_us)
                *ret_window_us = t->psi_window_us;
        return 0;
}

/**
 * pressure_trigger_get_vmpressure - the vmpressure registration in use.
 */
_public_ int pressure_trigger_get_vmpressure(const pressure_trigger *t, pressure_level *ret_level,
                                             pressure_vmpressure_mode *ret_mode) {
        if (!t)
                return -EINVAL;
        if (!t->has_vmpressure)
                return -ENODATA;
        if (ret_level)
                *ret_level = t->vmpressure_level;
        if (ret_mode)
                *ret_mode = t->vmpressure_mode;
        return 0;
}

/**
 * pressure_episode_is_active - whether the episode goes on.
 */
_public_ int pressure_episode_is_active(const pressure_episode *ep) {
        return ep ? ep->active : 0;
}

/**
 * pressure_episode_get_start_us - CLOCK_MONOTONIC of the episode's first event.
 */
_public_ uint64_t pressure_episode_get_start_us(const pressure_episode *ep) {
        return !ep ? 0 : ep->active ? ep->active_since_us : ep->start_us;
}

/**
 * pressure_episode_get_end_us - CLOCK_MONOTONIC of a past episode's end.
 */
_public_ uint64_t pressure_episode_get_end_us(const pressure_episode *ep) {
        return ep ? ep->end_us : 0;
}

/**
 * pressure_episode_get_start_time_us - CLOCK_REALTIME of a past episode's start.
 */
_public_ uint64_t pressure_episode_get_start_time_us(const pressure_episode *ep) {
        return ep ? ep->start_time_us : 0;
}

/**
 * pressure_episode_get_end_time_us - CLOCK_REALTIME of a past episode's end.
 */
_public_ uint64_t pressure_episode_get_end_time_us(const pressure_episode *ep) {
        return ep ? ep->end_time_us : 0;
}

/**
 * pressure_episode_get_duration_us - how long the episode lasted (so far).
 */
_public_ uint64_t pressure_episode_get_duration_us(const pressure_episode *ep) {
        return ep ? ep->duration_us : 0;
}

/**
 * pressure_episode_get_events - pressure events in the episode.
 */
_public_ uint64_t pressure_episode_get_events(const pressure_episode *ep) {
        return ep ? ep->events : 0;
}

/**
 * pressure_episode_get_peak - the PSI peak of the episode, percent.
 */
_public_ int pressure_episode_get_peak(const pressure_episode *ep, double *ret) {
        if (!ep || !ret)
                return -EINVAL;
        if (!ep->has_peak)
                return -ENODATA;
        *ret = ep->peak;
        return 0;
}

/**
 * pressure_episode_get_peak_level - the highest vmpressure level of the episode.
 */
_public_ pressure_level pressure_episode_get_peak_level(const pressure_episode *ep) {
        return ep ? ep->peak_level : PRESSURE_LEVEL_NONE;
}

/**
 * pressure_protection_node_get_cgroup - the node's cgroup.
 */
_public_ const char *pressure_protection_node_get_cgroup(const pressure_protection_node *n) {
        return n ? n->cgroup : NULL;
}

/**
 * pressure_protection_node_get_state - min, low or none.
 */
_public_ pressure_protection_state pressure_protection_node_get_state(const pressure_protection_node *n) {
        return n ? n->state : PRESSURE_PROTECTION_UNKNOWN;
}

/**
 * pressure_protection_node_get_value - one of the node's figures, in bytes.
 */
_public_ int pressure_protection_node_get_value(const pressure_protection_node *n, pressure_protection_value value,
                                               uint64_t *ret) {
        const uint64_t values[] = {
                [PRESSURE_PROTECTION_USAGE] = n ? n->usage : 0,
                [PRESSURE_PROTECTION_MIN_SETTING] = n ? n->min : 0,
                [PRESSURE_PROTECTION_LOW_SETTING] = n ? n->low : 0,
                [PRESSURE_PROTECTION_EMIN] = n ? n->emin : 0,
                [PRESSURE_PROTECTION_ELOW] = n ? n->elow : 0,
                [PRESSURE_PROTECTION_MIN_USAGE] = n ? n->min_usage : 0,
                [PRESSURE_PROTECTION_LOW_USAGE] = n ? n->low_usage : 0,
                [PRESSURE_PROTECTION_CHILDREN_MIN_USAGE] = n ? n->children_min_usage : 0,
                [PRESSURE_PROTECTION_CHILDREN_LOW_USAGE] = n ? n->children_low_usage : 0,
        };

        if (!n || !ret || (unsigned) value >= ELEMENTSOF(values))
                return -EINVAL;
        *ret = values[value];
        return 0;
}
