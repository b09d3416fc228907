/* SPDX-License-Identifier: MIT */
/*
 * The error objects of libpressure and the typed results of GetStatus()
 * and GetProtection(), parsed from the daemon's reply. Pure: no I/O.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgroup.h"
#include "pressure-event.h"
#include "util.h"
#include "vocabulary.h"

/* ---- Errors ------------------------------------------------------------------- */

/* What libpressure makes of each error of the interface (vocabulary.h). */
static const struct {
        int error;          /* the errno of pressure_error_get_errno(), positive; 0: EREMOTEIO */
        const char *text;   /* the message for people */
        const char *param;  /* the parameter the message quotes, or NULL */
} error_table[_IDL_ERROR_MAX] = {
        [IDL_ERROR_PERMISSION_DENIED] =           { EACCES,        "Permission denied",            "reason" },
        [IDL_ERROR_NO_SUCH_CGROUP] =              { ENOENT,        "No such cgroup",               "cgroup" },
        [IDL_ERROR_INVALID_CGROUP_PATH] =         { EBADR,         "Invalid cgroup path",          "cgroup" },
        [IDL_ERROR_INVALID_TRIGGER] =             { EDOM,          "Invalid trigger",              "reason" },
        [IDL_ERROR_CONFIGURATION_REJECTED] =      { EBADE,         "Configuration rejected",       "reason" },
        [IDL_ERROR_LIMIT_EXCEEDED] =              { EUSERS,        "Limit exceeded",               "limit" },
        [IDL_ERROR_SOURCE_UNAVAILABLE] =          { EOPNOTSUPP,    "Source unavailable",           "reason" },
        [IDL_ERROR_INTERNAL_ERROR] =              { EIO,           "Internal error of the daemon", "reason" },
        [IDL_ERROR_NO_SUCH_PREKILL] =             { ESRCH,         "No such warning before a kill", "id" },
        [IDL_ERROR_VARLINK_INVALID_PARAMETER] =   { EINVAL,        "Invalid parameter",            "parameter" },
        [IDL_ERROR_VARLINK_METHOD_NOT_FOUND] =    { ENXIO,         "Method not found",             "method" },
        [IDL_ERROR_VARLINK_INTERFACE_NOT_FOUND] = { EADDRNOTAVAIL, "Interface not found",          "interface" },
        [IDL_ERROR_VARLINK_EXPECTED_MORE] =       { EPROTO,        "Expected more",                NULL },
};

int error_name_to_errno(const char *name) {
        IdlError i = idl_error_from_string(name);

        return i >= 0 && error_table[i].error ? -error_table[i].error : -EREMOTEIO;
}

/* A message for people: the daemon's error in words, with its main parameter. */
static char *error_message(int error, const char *name, json_t *params) {
        const char *socket, *p;
        char *m = NULL;
        IdlError i;

        if (!name)
                return strdup(strerror(-error));
        if (streq(name, PRESSURE_ERROR_DAEMON_NOT_RUNNING)) {
                socket = json_string_value(json_object_get(params, "socket"));
                if (asprintf(&m, "pressured is not running: %s %s", socket && access(socket, F_OK) < 0 ?
                             "there is no socket" : "nothing listens on", strna(socket)) < 0)
                        return NULL;
                return m;
        }
        i = idl_error_from_string(name);
        if (i >= 0 && error_table[i].text) {
                json_t *v = error_table[i].param ? json_object_get(params, error_table[i].param) : NULL;

                p = json_string_value(v);
                if (json_is_integer(v) && asprintf(&m, "%s: %" JSON_INTEGER_FORMAT, error_table[i].text,
                                                   json_integer_value(v)) < 0)
                        return NULL;
                if (!m && asprintf(&m, p ? "%s: %s" : "%s", error_table[i].text, p) < 0)
                        return NULL;
                return m;
        }
        if (asprintf(&m, "The daemon answered %s", name) < 0)
                return NULL;
        return m;
}

pressure_error *error_new(int error, const char *name, json_t *params) {
        pressure_error *e = calloc(1, sizeof(*e));

        if (!e)
                return NULL;
        e->error = error < 0 ? error : -EIO;
        if (name) {
                e->params = json_is_object(params) ? json_incref(params) : json_object();
                e->name = strdup(name);
                e->parameters = e->params ? json_dumps(e->params, JSON_DUMP_FLAGS) : NULL;
                if (!e->name || !e->parameters)
                        return pressure_error_free(e);
        }
        e->message = error_message(e->error, name, params);
        if (!e->message)
                return pressure_error_free(e);
        return e;
}

pressure_error *error_local(int error, const char *socket) {
        _cleanup_(json_decrefp) json_t *params = NULL;

        if (error != -ECONNREFUSED || !socket)
                return error_new(error, NULL, NULL);
        params = json_pack("{s:s}", "socket", socket);
        return params ? error_new(error, PRESSURE_ERROR_DAEMON_NOT_RUNNING, params) : NULL;
}

pressure_error *error_invalid_cgroup_path(const char *cgroup, int problem) {
        _cleanup_(json_decrefp) json_t *params = NULL;
        _cleanup_free_ char *shown = cgroup_path_escape(cgroup);
        const char *reason = cgroup_path_problem_to_string((CgroupPathProblem) problem);
        pressure_error *e;

        params = shown && reason ? json_pack("{s:s, s:s}", "cgroup", shown, "reason", reason) : NULL;
        if (!params)
                return NULL;
        e = error_new(-EINVAL, PRESSURE_ERROR_INVALID_CGROUP_PATH, params);
        if (!e)
                return NULL;
        free(e->message);
        if (asprintf(&e->message, "Invalid cgroup path '%s': %s", shown, reason) < 0) {
                e->message = NULL;
                return pressure_error_free(e);
        }
        return e;
}

/**
 * pressure_error_free - free an error; NULL is fine.
 */
_public_ pressure_error *pressure_error_free(pressure_error *e) {
        if (e) {
                if (e->params)
                        json_decref(e->params);
                free(e->name);
                free(e->parameters);
                free(e->message);
                free(e);
        }
        return NULL;
}

/**
 * pressure_error_freep - pressure_error_free(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_error_freep(pressure_error **p) {
        if (p)
                *p = pressure_error_free(*p);
}

/**
 * pressure_error_get_errno - the negative errno of the failure.
 */
_public_ int pressure_error_get_errno(const pressure_error *e) {
        return e ? e->error : -EINVAL;
}

/**
 * pressure_error_get_name - the varlink error name, or NULL.
 */
_public_ const char *pressure_error_get_name(const pressure_error *e) {
        return e ? e->name : NULL;
}

/**
 * pressure_error_get_parameters - the error parameters as JSON text, or NULL.
 */
_public_ const char *pressure_error_get_parameters(const pressure_error *e) {
        return e ? e->parameters : NULL;
}

/**
 * pressure_error_get_message - a one-line message for people.
 */
_public_ const char *pressure_error_get_message(const pressure_error *e) {
        /* A failed call leaves no error object only when it could not allocate one. */
        return e ? e->message : "Out of memory";
}

/**
 * pressure_error_get_parameter_string - a string parameter of the error, or NULL.
 */
_public_ const char *pressure_error_get_parameter_string(const pressure_error *e, const char *key) {
        return e && key ? json_string_value(json_object_get(e->params, key)) : NULL;
}

/**
 * pressure_error_get_parameter_integer - an integer parameter of the error.
 */
_public_ int pressure_error_get_parameter_integer(const pressure_error *e, const char *key, int64_t *ret) {
        json_t *v;

        if (!e || !key || !ret)
                return -EINVAL;
        v = json_object_get(e->params, key);
        if (!json_is_integer(v))
                return -ENODATA;
        *ret = (int64_t) json_integer_value(v);
        return 0;
}

/* ---- GetProtection() -------------------------------------------------------------- */

struct pressure_protection {
        unsigned n_ref;
        json_t *params;
        pressure_protection_node *nodes;
        size_t n_nodes;
};

int protection_new(json_t *params, pressure_protection **ret) {
        pressure_protection *p;
        json_t *nodes = json_object_get(params, "nodes"), *v;
        size_t i;

        if (!json_is_array(nodes)) {
                json_decref(params);
                return -EBADMSG;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                json_decref(params);
                return -ENOMEM;
        }
        p->n_ref = 1;
        p->params = params;
        p->nodes = calloc(json_array_size(nodes) + 1, sizeof(*p->nodes));
        if (!p->nodes) {
                pressure_protection_unref(p);
                return -ENOMEM;
        }
        json_array_foreach(nodes, i, v)
                if (node_parse(v, &p->nodes[p->n_nodes++]) < 0) {
                        pressure_protection_unref(p);
                        return -EBADMSG;
                }
        *ret = p;
        return 0;
}

/**
 * pressure_protection_ref - take a reference.
 */
_public_ pressure_protection *pressure_protection_ref(pressure_protection *p) {
        if (p)
                p->n_ref++;
        return p;
}

/**
 * pressure_protection_unref - drop a reference; NULL is fine. Returns NULL.
 */
_public_ pressure_protection *pressure_protection_unref(pressure_protection *p) {
        if (!p || --p->n_ref > 0)
                return NULL;
        free(p->nodes);
        json_decref(p->params);
        free(p);
        return NULL;
}

/**
 * pressure_protection_unrefp - pressure_protection_unref(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_protection_unrefp(pressure_protection **p) {
        if (p)
                *p = pressure_protection_unref(*p);
}

/**
 * pressure_protection_get_n_nodes - the number of nodes.
 */
_public_ size_t pressure_protection_get_n_nodes(const pressure_protection *p) {
        return p ? p->n_nodes : 0;
}

/**
 * pressure_protection_get_node - node @i, or NULL past the end.
 */
_public_ const pressure_protection_node *pressure_protection_get_node(const pressure_protection *p, size_t i) {
        return p && i < p->n_nodes ? &p->nodes[i] : NULL;
}

/* ---- GetStatus() --------------------------------------------------------------------- */

struct pressure_registration {
        const char *cgroup;
        pressure_source source;
        pressure_resource resource;
        pressure_trigger trigger;
        uint64_t subscribers;
        int has_episode;
        pressure_episode episode;
        pressure_episode *history;
        size_t n_history;
};

/* One cgroup of the proactive reclaim controller; the cgroup points into the reply. */
struct pressure_reclaim {
        const char *cgroup;
        pressure_reclaim_state state;
        uint64_t reclaimed_bytes, last_step_bytes, floor_bytes;
        int has_stall, has_io_stall;
        double stall_pct, io_stall_pct;
};

struct pressure_status {
        unsigned n_ref;
        json_t *params;
        char *json;
        pressure_registration *regs;
        size_t n_regs;
        pressure_reclaim *reclaim;
        size_t n_reclaim;
};

static uint64_t member_u64_or_zero(json_t *o, const char *key) {
        json_int_t i = json_integer_value(json_object_get(o, key));
        return i > 0 ? (uint64_t) i : 0;
}

static int registration_parse(json_t *v, pressure_registration *r) {
        json_t *t = json_object_get(v, "trigger"), *ep = json_object_get(v, "episode");
        json_t *hist = json_object_get(v, "history"), *h;
        int source;
        size_t i;

        if (!json_is_object(v) || !json_is_string(json_object_get(v, "cgroup")))
                return -EBADMSG;
        r->cgroup = json_string_value(json_object_get(v, "cgroup"));
        source = source_from_string(json_string_value(json_object_get(v, "source")));
        r->source = source < 0 ? PRESSURE_SOURCE_NONE : (pressure_source) source;
        r->resource = resource_of(v);
        r->subscribers = member_u64_or_zero(v, "subscribers");
        if (json_is_object(t) && trigger_parse(t, &r->trigger) < 0)
                return -EBADMSG;
        if (json_is_object(ep)) {
                if (episode_parse(ep, &r->episode) < 0)
                        return -EBADMSG;
                r->episode.active = r->has_episode = 1;
        }
        if (!json_is_array(hist))
                return 0;
        r->history = calloc(json_array_size(hist) + 1, sizeof(*r->history));
        if (!r->history)
                return -ENOMEM;
        json_array_foreach(hist, i, h)
                if (episode_parse(h, &r->history[r->n_history++]) < 0)
                        return -EBADMSG;
        return 0;
}

/* One entry of GetStatus's "reclaim": the cgroup is required, the figures may be absent or null. */
static int reclaim_parse(json_t *v, pressure_reclaim *r) {
        json_t *state = json_object_get(v, "state");
        int k;

        if (!json_is_object(v) || !json_is_string(json_object_get(v, "cgroup")))
                return -EBADMSG;
        if (state && !json_is_null(state) && !json_is_string(state))
                return -EBADMSG;
        r->cgroup = json_string_value(json_object_get(v, "cgroup"));
        /* A state a later daemon adds is UNKNOWN here, not an error. */
        r->state = reclaim_state_from_string(json_string_value(state));
        if (member_u64(v, "reclaimed_bytes", &r->reclaimed_bytes) < 0 ||
            member_u64(v, "last_step_bytes", &r->last_step_bytes) < 0 ||
            member_u64(v, "floor_bytes", &r->floor_bytes) < 0)
                return -EBADMSG;
        k = member_double(v, "stall_pct", &r->stall_pct);
        if (k < 0)
                return k;
        r->has_stall = k > 0;
        k = member_double(v, "io_stall_pct", &r->io_stall_pct);
        if (k < 0)
                return k;
        r->has_io_stall = k > 0;
        return 0;
}

/* The "reclaim" list of a GetStatus reply into @s; absent or null (a daemon before 0.3) is none. */
static int status_parse_reclaim(json_t *params, pressure_status *s) {
        json_t *list = json_object_get(params, "reclaim"), *v;
        size_t i;

        if (!list || json_is_null(list))
                return 0;
        if (!json_is_array(list))
                return -EBADMSG;
        s->reclaim = calloc(json_array_size(list) + 1, sizeof(*s->reclaim));
        if (!s->reclaim)
                return -ENOMEM;
        json_array_foreach(list, i, v)
                if (reclaim_parse(v, &s->reclaim[s->n_reclaim++]) < 0)
                        return -EBADMSG;
        return 0;
}

int status_new(json_t *params, pressure_status **ret) {
        json_t *regs = json_object_get(params, "registrations"), *v;
        pressure_status *s;
        size_t i;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s) {
                json_decref(params);
                return -ENOMEM;
        }
        s->n_ref = 1;
        s->params = params;
        s->json = json_dumps(params, JSON_DUMP_FLAGS);
        s->regs = calloc(json_array_size(regs) + 1, sizeof(*s->regs));
        if (!s->json || !s->regs) {
                pressure_status_unref(s);
                return -ENOMEM;
        }
        json_array_foreach(regs, i, v) {
                r = registration_parse(v, &s->regs[s->n_regs++]);
                if (r < 0) {
                        pressure_status_unref(s);
                        return r;
                }
        }
        r = status_parse_reclaim(params, s);
        if (r < 0) {
                pressure_status_unref(s);
                return r;
        }
        *ret = s;
        return 0;
}

/**
 * pressure_status_ref - take a reference.
 */
_public_ pressure_status *pressure_status_ref(pressure_status *s) {
        if (s)
                s->n_ref++;
        return s;
}

/**
 * pressure_status_unref - drop a reference; NULL is fine. Returns NULL.
 */
_public_ pressure_status *pressure_status_unref(pressure_status *s) {
        if (!s || --s->n_ref > 0)
                return NULL;
        for (size_t i = 0; i < s->n_regs; i++)
                free(s->regs[i].history);
        free(s->regs);
        free(s->reclaim);
        free(s->json);
        json_decref(s->params);
        free(s);
        return NULL;
}

/**
 * pressure_status_unrefp - pressure_status_unref(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_status_unrefp(pressure_status **p) {
        if (p)
                *p = pressure_status_unref(*p);
}

/**
 * pressure_status_get_version - the daemon's version.
 */
_public_ const char *pressure_status_get_version(const pressure_status *s) {
        return s ? json_string_value(json_object_get(s->params, "version")) : NULL;
}

/**
 * pressure_status_get_uptime_us - how long the daemon has run.
 */
_public_ uint64_t pressure_status_get_uptime_us(const pressure_status *s) {
        return s ? member_u64_or_zero(s->params, "uptime_us") : 0;
}

/**
 * pressure_status_get_generation - 0 for a fresh start, one more per takeover.
 */
_public_ uint64_t pressure_status_get_generation(const pressure_status *s) {
        return s ? member_u64_or_zero(s->params, "generation") : 0;
}

/**
 * pressure_status_get_clients - connected clients.
 */
_public_ uint64_t pressure_status_get_clients(const pressure_status *s) {
        return s ? member_u64_or_zero(s->params, "clients") : 0;
}

/**
 * pressure_status_get_subscriptions - active subscriptions.
 */
_public_ uint64_t pressure_status_get_subscriptions(const pressure_status *s) {
        return s ? member_u64_or_zero(s->params, "subscriptions") : 0;
}

/**
 * pressure_status_get_counter - a counter by its protocol name.
 */
_public_ int pressure_status_get_counter(const pressure_status *s, const char *name, uint64_t *ret) {
        json_t *v;

        if (!s || !name || !ret)
                return -EINVAL;
        v = json_object_get(json_object_get(s->params, "counters"), name);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return -ENODATA;
        *ret = (uint64_t) json_integer_value(v);
        return 0;
}

/**
 * pressure_status_get_n_registrations - the number of registrations.
 */
_public_ size_t pressure_status_get_n_registrations(const pressure_status *s) {
        return s ? s->n_regs : 0;
}

/**
 * pressure_status_get_registration - registration @i, or NULL past the end.
 */
_public_ const pressure_registration *pressure_status_get_registration(const pressure_status *s, size_t i) {
        return s && i < s->n_regs ? &s->regs[i] : NULL;
}

/**
 * pressure_status_get_json - the reply's parameters as JSON text.
 */
_public_ const char *pressure_status_get_json(const pressure_status *s) {
        return s ? s->json : NULL;
}

/**
 * pressure_registration_get_cgroup - the registration's cgroup.
 */
_public_ const char *pressure_registration_get_cgroup(const pressure_registration *r) {
        return r ? r->cgroup : NULL;
}

/**
 * pressure_registration_get_source - the registration's source.
 */
_public_ pressure_source pressure_registration_get_source(const pressure_registration *r) {
        return r ? r->source : PRESSURE_SOURCE_NONE;
}

/**
 * pressure_registration_get_resource - the registration's resource.
 */
_public_ pressure_resource pressure_registration_get_resource(const pressure_registration *r) {
        return r ? r->resource : PRESSURE_RESOURCE_NONE;
}

/**
 * pressure_registration_get_trigger - the registration's trigger, or NULL.
 */
_public_ const pressure_trigger *pressure_registration_get_trigger(const pressure_registration *r) {
        return r && r->trigger.present ? &r->trigger : NULL;
}

/**
 * pressure_registration_get_subscribers - subscriptions sharing it.
 */
_public_ uint64_t pressure_registration_get_subscribers(const pressure_registration *r) {
        return r ? r->subscribers : 0;
}

/**
 * pressure_registration_get_episode - the active episode, or NULL.
 */
_public_ const pressure_episode *pressure_registration_get_episode(const pressure_registration *r) {
        return r && r->has_episode ? &r->episode : NULL;
}

/**
 * pressure_registration_get_n_history - the number of ended episodes kept.
 */
_public_ size_t pressure_registration_get_n_history(const pressure_registration *r) {
        return r ? r->n_history : 0;
}

/**
 * pressure_registration_get_history - ended episode @i (oldest first), or NULL.
 */
_public_ const pressure_episode *pressure_registration_get_history(const pressure_registration *r, size_t i) {
        return r && i < r->n_history ? &r->history[i] : NULL;
}

/**
 * pressure_status_get_n_reclaim - the number of cgroups under proactive reclaim.
 */
_public_ size_t pressure_status_get_n_reclaim(const pressure_status *s) {
        return s ? s->n_reclaim : 0;
}

/**
 * pressure_status_get_reclaim - reclaim entry @i, or NULL past the end.
 */
_public_ const pressure_reclaim *pressure_status_get_reclaim(const pressure_status *s, size_t i) {
        return s && i < s->n_reclaim ? &s->reclaim[i] : NULL;
}

/**
 * pressure_reclaim_get_cgroup - the cgroup under reclaim.
 */
_public_ const char *pressure_reclaim_get_cgroup(const pressure_reclaim *r) {
        return r ? r->cgroup : NULL;
}

/**
 * pressure_reclaim_get_state - what the controller does with the cgroup.
 */
_public_ pressure_reclaim_state pressure_reclaim_get_state(const pressure_reclaim *r) {
        return r ? r->state : PRESSURE_RECLAIM_UNKNOWN;
}

/**
 * pressure_reclaim_get_reclaimed_bytes - bytes reclaimed in all.
 */
_public_ uint64_t pressure_reclaim_get_reclaimed_bytes(const pressure_reclaim *r) {
        return r ? r->reclaimed_bytes : 0;
}

/**
 * pressure_reclaim_get_last_step_bytes - bytes reclaimed by the last step.
 */
_public_ uint64_t pressure_reclaim_get_last_step_bytes(const pressure_reclaim *r) {
        return r ? r->last_step_bytes : 0;
}

/**
 * pressure_reclaim_get_floor_bytes - the size the controller never reclaims below.
 */
_public_ uint64_t pressure_reclaim_get_floor_bytes(const pressure_reclaim *r) {
        return r ? r->floor_bytes : 0;
}

/**
 * pressure_reclaim_get_stall_pct - memory "some" stall over the last interval, percent.
 */
_public_ int pressure_reclaim_get_stall_pct(const pressure_reclaim *r, double *ret) {
        if (!r || !ret)
                return -EINVAL;
        if (!r->has_stall)
                return -ENODATA;
        *ret = r->stall_pct;
        return 0;
}

/**
 * pressure_reclaim_get_io_stall_pct - io "some" stall over the last interval, percent.
 */
_public_ int pressure_reclaim_get_io_stall_pct(const pressure_reclaim *r, double *ret) {
        if (!r || !ret)
                return -EINVAL;
        if (!r->has_io_stall)
                return -ENODATA;
        *ret = r->io_stall_pct;
        return 0;
}
