/* SPDX-License-Identifier: MIT */
/* What every varlink socket of the daemon answers alike: see varlink-service.h. */
#include <inttypes.h>

#include "config-build.h"
#include "log.h"
#include "cgroup.h"
#include "varlink-service.h"

#define ORG_VARLINK_SERVICE "org.varlink.service"

int service_check_params(json_t *params, const char *const *allowed, VarlinkError *e) {
        const char *key;
        json_t *v;

        json_object_foreach(params, key, v) {
                bool ok = false;

                for (const char *const *a = allowed; *a; a++)
                        if (streq(key, *a))
                                ok = true;
                if (!ok)
                        return varlink_error_invalid_parameter(e, key);
        }
        return 0;
}

int service_reply(Client *c, const VarlinkCall *call, json_t *params, bool last) {
        size_t n;
        char *msg;

        if (!params)
                return -ENOMEM;
        if (call->oneway) {
                json_decref(params);
                return 0;
        }
        msg = varlink_reply_new(params, !last, &n);
        if (!msg)
                return -ENOMEM;
        return client_send_owned(c, msg, n);
}

int service_reply_error(Client *c, const VarlinkCall *call, VarlinkError *e) {
        size_t n;
        char *msg;

        if (call->oneway || !e->name) {
                varlink_error_done(e);
                return 0;
        }
        msg = varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);
        varlink_error_done(e);
        if (!msg)
                return -ENOMEM;
        return client_send_owned(c, msg, n);
}

static int service_get_info(const VarlinkService *s, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        json_t *interfaces = json_array();
        int k = service_check_params(call->parameters, allowed, e);

        if (k < 0 || !interfaces) {
                json_decref(interfaces);
                return k < 0 ? k : -ENOMEM;
        }
        k = json_array_append_new(interfaces, json_string(ORG_VARLINK_SERVICE));
        for (size_t i = 0; i < s->n_interfaces && k >= 0; i++)
                k = json_array_append_new(interfaces, json_string(s->interfaces[i].name));
        if (k < 0) {
                json_decref(interfaces);
                return -ENOMEM;
        }
        return service_reply(c, call,
                             json_pack("{s:s, s:s, s:s, s:s, s:o}", "vendor", "pressured", "product", "pressured",
                                       "version", PACKAGE_VERSION, "url", "man:pressured(8)",
                                       "interfaces", interfaces),
                             true);
}

static int service_get_interface_description(const VarlinkService *s, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "interface", NULL };
        const char *name;
        json_t *v;
        int k;

        k = service_check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        v = json_object_get(call->parameters, "interface");
        if (!json_is_string(v))
                return varlink_error_invalid_parameter(e, "interface");
        name = json_string_value(v);
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (streq(name, s->interfaces[i].name))
                        return service_reply(c, call, json_pack("{s:s}", "description", s->interfaces[i].description),
                                             true);
        if (streq(name, ORG_VARLINK_SERVICE))
                return service_reply(c, call, json_pack("{s:s}", "description", varlink_service_description),
                                     true);
        return varlink_error_interface_not_found(e, name);
}

static int service_unknown(const VarlinkService *s, const char *method, VarlinkError *e) {
        const char *dot = strrchr(method, '.');
        _cleanup_free_ char *iface = NULL;

        if (!dot)
                return varlink_error_method_not_found(e, method);
        iface = strndup(method, (size_t) (dot - method));
        if (!iface)
                return -ENOMEM;
        if (streq(iface, ORG_VARLINK_SERVICE))
                return varlink_error_method_not_found(e, method);
        for (size_t i = 0; i < s->n_interfaces; i++)
                if (streq(iface, s->interfaces[i].name))
                        return varlink_error_method_not_found(e, method);
        return varlink_error_interface_not_found(e, iface);
}

/* What an error says beyond its name, for the log: its reason, or the cgroup, parameter... it names. */
static const char *error_why(const VarlinkError *e) {
        static const char *const keys[] = { "reason", "cgroup", "parameter", "method", "interface", "limit" };

        for (size_t i = 0; e->parameters && i < ELEMENTSOF(keys); i++) {
                const char *v = json_string_value(json_object_get(e->parameters, keys[i]));

                if (v)
                        return v;
        }
        return NULL;
}

/* The one line of a call refused with @e: its main parameter (escaped: a client wrote it) and its detail. */
static void log_refused(const Client *c, const VarlinkCall *call, const VarlinkError *e) {
        _cleanup_free_ char *why = error_why(e) ? cgroup_path_escape(error_why(e)) : NULL;

        /* The detail first: a long parameter does not cut it off the line. */
        log_debug("%s from client %" PRIu64 " failed: %s%s%s%s%s%s", call->method, c->id, e->name,
                  e->detail ? " (" : "", e->detail ?: "", e->detail ? ")" : "", why ? ": " : "", why ?: "");
}

void service_failed(Client *c, const VarlinkCall *call, int k, VarlinkError *e) {
        if (!e->name && (k == -EMFILE || k == -ENFILE)) {
                log_ratelimited(LOG_WARNING, k, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Out of file descriptors handling %s: %m", call->method);
                varlink_error_open_files(e, k);
        } else if (!e->name) {
                log_error_errno(k, "Failed to handle %s: %m", call->method);
                varlink_error_internal(e, k);
        } else
                log_refused(c, call, e);
        if (service_reply_error(c, call, e) < 0)
                client_kill(c); /* not even the error could be queued */
}

void service_finish(const VarlinkService *s, Client *c, VarlinkCall *call, int k, VarlinkError *e) {
        if (k > 0 && streq(call->method, ORG_VARLINK_SERVICE ".GetInfo"))
                k = service_get_info(s, c, call, e);
        else if (k > 0 && streq(call->method, ORG_VARLINK_SERVICE ".GetInterfaceDescription"))
                k = service_get_interface_description(s, c, call, e);
        else if (k > 0)
                k = service_unknown(s, call->method, e);
        if (k < 0)
                service_failed(c, call, k, e);
}
