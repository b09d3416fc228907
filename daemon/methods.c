/* SPDX-License-Identifier: MIT */
/*
 * The varlink methods: org.varlink.service (GetInfo,
 * GetInterfaceDescription) and io.pressured (Subscribe, GetStatus,
 * GetProtection, Inject, Reload), with source selection and the
 * authorization rules of the contract.
 */
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "config-build.h"
#include "io.pressured.varlink.h"
#include "log.h"
#include "manager.h"
#include "protection-glue.h"
#include "subscribe.h"

static const char org_varlink_service_description[] =
        "# The Varlink Service Interface is provided by every varlink service.\n"
        "interface org.varlink.service\n"
        "\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "error InterfaceNotFound (interface: string)\n"
        "error MethodNotFound (method: string)\n"
        "error MethodNotImplemented (method: string)\n"
        "error InvalidParameter (parameter: string)\n"
        "error PermissionDenied ()\n"
        "error ExpectedMore ()\n";

static int reply(Client *c, const VarlinkCall *call, json_t *params) {
        size_t n;
        char *msg;

        if (call->oneway) {
                json_decref(params);
                return 0;
        }
        msg = varlink_reply_new(params, false, &n);
        if (!msg)
                return -ENOMEM;
        return client_send_owned(c, msg, n);
}

static int reply_error(Client *c, const VarlinkCall *call, VarlinkError *e) {
        size_t n;
        char *msg;

        if (call->oneway || !e->name) {
                verror_done(e);
                return 0;
        }
        msg = varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);
        verror_done(e);
        if (!msg)
                return -ENOMEM;
        return client_send_owned(c, msg, n);
}

/* Reject any parameter not in @allowed (NULL-terminated). */
static int check_params(json_t *params, const char *const *allowed, VarlinkError *e) {
        const char *key;
        json_t *v;

        json_object_foreach(params, key, v) {
                bool ok = false;

                for (const char *const *a = allowed; *a; a++)
                        if (streq(key, *a))
                                ok = true;
                if (!ok)
                        return invalid_parameter(e, key);
        }
        return 0;
}

static int permission_denied(VarlinkError *e, const char *reason) {
        return verror(e, -EACCES, "io.pressured.PermissionDenied", json_pack("{s:s}", "reason", reason));
}

static int no_such_cgroup(VarlinkError *e, const char *cgroup) {
        return verror(e, -ENOENT, "io.pressured.NoSuchCgroup", json_pack("{s:s}", "cgroup", cgroup));
}

static int invalid_cgroup(VarlinkError *e, const char *cgroup) {
        return verror(e, -EINVAL, "io.pressured.InvalidCgroupPath", json_pack("{s:s}", "cgroup", cgroup));
}

static int source_unavailable(VarlinkError *e, const char *source, const char *reason) {
        return verror(e, -EOPNOTSUPP, "io.pressured.SourceUnavailable",
                      json_pack("{s:s, s:s}", "source", source, "reason", reason));
}

/*
 * Open @cgroup in @h. Returns the fd, or a negative errno with @e filled
 * (NoSuchCgroup, InvalidCgroupPath).
 */
static int open_cgroup(const Hierarchy *h, const char *cgroup, VarlinkError *e) {
        int fd = hierarchy_open_cgroup(h, cgroup);

        if (fd >= 0)
                return fd;
        if (fd == -ELOOP || fd == -EXDEV)
                return invalid_cgroup(e, cgroup);
        if (fd == -ENOENT)
                return no_such_cgroup(e, cgroup);
        if (fd == -EMFILE || fd == -ENFILE)
                return verror_open_failed(e, fd, NULL, NULL); /* LimitExceeded "open files" */
        return verror(e, fd, "io.pressured.NoSuchCgroup", json_pack("{s:s}", "cgroup", cgroup));
}

static bool has_memory_pressure(int dirfd) {
        return faccessat(dirfd, "memory.pressure", F_OK, 0) == 0;
}

static bool psi_system_available(void) {
        return access("/proc/pressure/memory", R_OK) == 0;
}

/*
 * Decide which kernel registration a request needs, check that the cgroup
 * exists there, and that the caller may use it. Fills @key.
 */
static int resolve_request(Client *c, const SubscribeRequest *req, RegistrationKey *key, VarlinkError *e) {
        Manager *m = c->manager;
        bool system = streq(req->cgroup, "/");
        _cleanup_close_ int fd = -1;
        const Hierarchy *h = NULL;
        struct stat st;

        *key = (RegistrationKey) { .cgroup = req->cgroup };

        switch (req->selector) {
        case SELECTOR_LEVEL:
                if (system) {
                        if (psi_system_available())
                                key->type = SOURCE_PSI;
                        else if (m->v1.fd >= 0)
                                key->type = SOURCE_VMPRESSURE;
                        else
                                return source_unavailable(e, "psi", "/proc/pressure/memory is not available and there is no cgroup v1 memory hierarchy");
                } else {
                        int v2fd = m->v2.fd >= 0 ? hierarchy_open_cgroup(&m->v2, req->cgroup) : -ENOENT;

                        if (v2fd == -ELOOP || v2fd == -EXDEV)
                                return invalid_cgroup(e, req->cgroup);
                        if (v2fd >= 0 && has_memory_pressure(v2fd)) {
                                key->type = SOURCE_PSI;
                                fd = v2fd;
                        } else {
                                bool in_v2 = v2fd >= 0;

                                safe_close(v2fd);
                                if (m->v1.fd < 0) {
                                        if (in_v2)
                                                return source_unavailable(e, "psi", "the cgroup has no memory.pressure (PSI disabled?) and there is no cgroup v1 memory hierarchy");
                                        return no_such_cgroup(e, req->cgroup);
                                }
                                fd = hierarchy_open_cgroup(&m->v1, req->cgroup);
                                if (fd == -ENOENT && in_v2)
                                        return source_unavailable(e, "psi", "the cgroup has no memory.pressure (PSI disabled?) and is not in the cgroup v1 memory hierarchy");
                                if (fd < 0)
                                        return open_cgroup(&m->v1, req->cgroup, e);
                                key->type = SOURCE_VMPRESSURE;
                        }
                }
                if (key->type == SOURCE_PSI)
                        key->psi = m->config->levels[req->level];
                else {
                        key->vm_level = req->level;
                        key->vm_mode = m->config->vmpressure_mode;
                }
                break;
        case SELECTOR_PSI:
                key->type = SOURCE_PSI;
                key->psi = req->psi;
                if (!system) {
                        if (m->v2.fd < 0)
                                return source_unavailable(e, "psi", "there is no cgroup2 hierarchy");
                        fd = open_cgroup(&m->v2, req->cgroup, e);
                        if (fd < 0)
                                return fd;
                }
                break;
        case SELECTOR_VMPRESSURE:
                key->type = SOURCE_VMPRESSURE;
                key->vm_level = req->vm_level;
                key->vm_mode = req->vm_mode;
                if (m->v1.fd < 0)
                        return source_unavailable(e, "vmpressure", "there is no cgroup v1 memory hierarchy");
                fd = open_cgroup(&m->v1, req->cgroup, e);
                if (fd < 0)
                        return fd;
                break;
        case SELECTOR_MEMORY_EVENTS:
        case SELECTOR_PROTECTION:
                key->type = req->selector == SELECTOR_PROTECTION ? SOURCE_PROTECTION : SOURCE_MEMORY_EVENTS;
                h = &m->v2;
                if (m->v2.fd < 0)
                        return source_unavailable(e, source_type_to_string(key->type),
                                                  "there is no cgroup2 hierarchy");
                fd = hierarchy_open_cgroup(h, req->cgroup);
                if (fd == -ENOENT && m->v1.fd >= 0) {
                        _cleanup_close_ int v1fd = hierarchy_open_cgroup(&m->v1, req->cgroup);

                        if (v1fd >= 0)
                                return source_unavailable(e, source_type_to_string(key->type),
                                                          "the cgroup exists only in the cgroup v1 hierarchy; this source needs cgroup v2");
                }
                if (fd < 0)
                        return open_cgroup(h, req->cgroup, e);
                if (faccessat(fd, key->type == SOURCE_PROTECTION ? "memory.current" : "memory.events", F_OK, 0) < 0)
                        return source_unavailable(e, source_type_to_string(key->type),
                                                  "the cgroup has no memory controller files (memory.current/memory.events)");
                break;
        }

        if (key->type == SOURCE_PSI && m->psi_unprivileged) {
                PsiTrigger rounded;

                /* Known to be unprivileged: share with what the kernel will accept. */
                if (psi_trigger_round_unprivileged(&key->psi, &rounded) &&
                    !registration_find(m, key))
                        key->psi = rounded;
        }

        /* Authorization: root may do anything; others the system-wide
         * level/psi sources, and cgroups whose directory they own. */
        if (c->uid == 0)
                return 0;
        if (system && (req->selector == SELECTOR_LEVEL || req->selector == SELECTOR_PSI))
                return 0;
        if (fd < 0) {
                const Hierarchy *root = key->type == SOURCE_VMPRESSURE ? &m->v1 : &m->v2;

                fd = hierarchy_open_cgroup(root, "/");
        }
        if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == c->uid)
                return 0;
        return permission_denied(e, "the cgroup is not delegated to the caller's user");
}

static json_t *trigger_to_json(const Registration *r, const Subscription *s) {
        json_t *t = json_object();

        if (!t)
                return NULL;
        if (r->type == SOURCE_PSI)
                json_object_set_new(t, "psi",
                                    json_pack("{s:s, s:I, s:I}", "stall", psi_stall_to_string(r->used.stall),
                                              "threshold_us", (json_int_t) r->used.threshold_us,
                                              "window_us", (json_int_t) r->used.window_us));
        else if (r->type == SOURCE_VMPRESSURE)
                json_object_set_new(t, "vmpressure",
                                    json_pack("{s:s, s:s}", "level", level_to_string(r->vm_level),
                                              "mode", vmpressure_mode_to_string(r->vm_mode)));
        if (s && s->by_level)
                json_object_set_new(t, "level", json_string(level_to_string(s->level)));
        return t;
}

static int method_subscribe(Client *c, VarlinkCall *call, VarlinkError *e) {
        Manager *m = c->manager;
        _cleanup_(subscribe_request_done) SubscribeRequest req = {};
        RegistrationKey key;
        Registration *r;
        Subscription *s;
        json_t *ev, *state;
        char *msg;
        size_t n;
        int k;

        if (!call->more)
                return verror(e, -EINVAL, "org.varlink.service.ExpectedMore", NULL);

        k = subscribe_request_parse(call->parameters, &req, e);
        if (k < 0)
                return k;
        k = resolve_request(c, &req, &key, e);
        if (k < 0)
                return k;
        k = registration_acquire(m, &key, &r, e);
        if (k < 0)
                return k;
        k = subscription_new(c, r, &req, &s);
        if (k < 0) {
                registration_release(r);
                return k;
        }

        state = r->ops->state ? r->ops->state(r) : NULL;
        ev = json_pack("{s:s, s:s, s:s, s:o, s:b, s:o}",
                       "kind", "subscribed", "cgroup", r->cgroup,
                       "source", source_type_to_string(r->type),
                       "trigger", trigger_to_json(r, s),
                       "adjusted", r->adjusted,
                       "state", state ? state : json_object());
        msg = ev ? varlink_reply_new(json_pack("{s:o}", "event", ev), true, &n) : NULL;
        if (!msg) {
                subscription_free(s);
                return -ENOMEM;
        }
        log_debug("Client %" PRIu64 " subscribed to %s on %s.", c->id, source_type_to_string(r->type), r->cgroup);
        return client_send_owned(c, msg, n);
}

static int method_get_status(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        int k = check_params(call->parameters, allowed, e);

        if (k < 0)
                return k;
        return reply(c, call, manager_status(c->manager));
}

static bool in_group(const Client *c, gid_t gid) {
        gid_t groups[256];
        socklen_t len = sizeof(groups);

        if (c->gid == gid)
                return true;
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                return false;
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == gid)
                        return true;
        return false;
}

static bool may_inject(const Client *c) {
        const char *group = c->manager->config->inject_group;
        struct group *g;
        uint64_t gid;

        if (c->uid == 0)
                return true;
        if (!group)
                return false;
        /* InjectGroup= takes a group name or a numeric GID. */
        if (safe_atou64(group, &gid) == 0 && gid < (gid_t) -1)
                return in_group(c, (gid_t) gid);
        g = getgrnam(group);
        return g && in_group(c, g->gr_gid);
}

static int method_inject(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", "level", NULL };
        Manager *m = c->manager;
        _cleanup_free_ char *cgroup = NULL;
        json_t *v, *ev;
        Registration *r;
        Level level;
        Body *body;
        uint64_t delivered = 0, rt, mono;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        v = json_object_get(call->parameters, "level");
        if (!json_is_string(v) || (level = level_from_string(json_string_value(v))) < 0)
                return invalid_parameter(e, "level");
        v = json_object_get(call->parameters, "cgroup");
        if (v && !json_is_null(v) && !json_is_string(v))
                return invalid_parameter(e, "cgroup");
        k = cgroup_path_normalize(json_string_value(v), &cgroup);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return invalid_cgroup(e, json_string_value(v));
        if (!may_inject(c))
                return permission_denied(e, "Inject is reserved to root and the InjectGroup= group");

        rt = now_usec(CLOCK_REALTIME);
        mono = now_usec(CLOCK_MONOTONIC);
        ev = event_json_new("pressure", cgroup, "inject", rt, mono);
        if (!ev)
                return -ENOMEM;
        json_object_set_new(ev, "level", json_string(level_to_string(level)));
        json_object_set_new(ev, "synthetic", json_true());
        /* Like a kernel event: say whether the cgroup was protected. */
        protection_glue_enrich(m, cgroup, ev);
        body = event_body_new(ev, mono);
        if (!body)
                return -ENOMEM;

        m->counters.events_injected++;
        LIST_FOREACH(registrations, r, m->registrations) {
                Subscription *s, *n;

                if (r->removed || (r->type != SOURCE_PSI && r->type != SOURCE_VMPRESSURE) ||
                    !streq(r->cgroup, cgroup))
                        continue;
                LIST_FOREACH_SAFE(subscriptions, s, n, r->subscriptions)
                        if (!s->client->dead && subscription_offer(s, body, 1))
                                delivered++;
        }
        body_unref(body);
        log_debug("Injected a %s event on %s for uid %u, %" PRIu64 " subscriber(s) reached.",
                 level_to_string(level), cgroup, (unsigned) c->uid, delivered);
        return reply(c, call, json_pack("{s:I}", "delivered", (json_int_t) delivered));
}

static int method_reload(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        _cleanup_free_ char *error = NULL;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        if (c->uid != 0)
                return permission_denied(e, "Reload is reserved to root");
        k = manager_reload(c->manager, &error);
        if (k < 0)
                return verror(e, k, "io.pressured.ConfigurationRejected",
                              json_pack("{s:s}", "reason", error ? error : strerror(-k)));
        return reply(c, call, NULL);
}

static int method_get_protection(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", NULL };
        Manager *m = c->manager;
        _cleanup_free_ char *cgroup = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        json_t *v, *nodes = NULL;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        v = json_object_get(call->parameters, "cgroup");
        if (v && !json_is_null(v) && !json_is_string(v))
                return invalid_parameter(e, "cgroup");
        k = cgroup_path_normalize(json_string_value(v), &cgroup);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return invalid_cgroup(e, json_string_value(v));
        if (m->v2.fd < 0)
                return source_unavailable(e, "protection", "there is no cgroup2 hierarchy");
        fd = open_cgroup(&m->v2, cgroup, e);
        if (fd < 0)
                return fd;
        if (c->uid != 0 && (fstat(fd, &st) < 0 || st.st_uid != c->uid))
                return permission_denied(e, "the cgroup is not delegated to the caller's user");

        k = protection_glue_read(m, cgroup, &nodes);
        if (k < 0)
                return source_unavailable(e, "protection", strerror(-k));
        return reply(c, call, json_pack("{s:o}", "nodes", nodes));
}

static int method_get_info(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        int k = check_params(call->parameters, allowed, e);

        if (k < 0)
                return k;
        return reply(c, call,
                     json_pack("{s:s, s:s, s:s, s:s, s:[s, s]}", "vendor", "pressured",
                               "product", "pressured", "version", PACKAGE_VERSION,
                               "url", "man:pressured(8)",
                               "interfaces", "org.varlink.service", "io.pressured"));
}

static int method_get_interface_description(Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "interface", NULL };
        json_t *v;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        v = json_object_get(call->parameters, "interface");
        if (!json_is_string(v))
                return invalid_parameter(e, "interface");
        if (streq(json_string_value(v), "io.pressured"))
                return reply(c, call, json_pack("{s:s}", "description", io_pressured_varlink));
        if (streq(json_string_value(v), "org.varlink.service"))
                return reply(c, call, json_pack("{s:s}", "description", org_varlink_service_description));
        return verror(e, -ENOENT, "org.varlink.service.InterfaceNotFound",
                      json_pack("{s:s}", "interface", json_string_value(v)));
}

static const struct {
        const char *name;
        int (*func)(Client *c, VarlinkCall *call, VarlinkError *e);
} methods[] = {
        { "org.varlink.service.GetInfo", method_get_info },
        { "org.varlink.service.GetInterfaceDescription", method_get_interface_description },
        { "io.pressured.Subscribe", method_subscribe },
        { "io.pressured.GetStatus", method_get_status },
        { "io.pressured.GetProtection", method_get_protection },
        { "io.pressured.Inject", method_inject },
        { "io.pressured.Reload", method_reload },
};

int method_dispatch(Client *c, VarlinkCall *call) {
        VarlinkError e = {};
        const char *dot;
        int k;

        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                if (!streq(methods[i].name, call->method))
                        continue;
                k = methods[i].func(c, call, &e);
                if (k < 0) {
                        if (!e.name && (k == -EMFILE || k == -ENFILE)) {
                                log_ratelimited(LOG_WARNING, k, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                                "Out of file descriptors handling %s: %m", call->method);
                                verror_open_failed(&e, k, "", "");
                        } else if (!e.name) {
                                log_error_errno(k, "Failed to handle %s: %m", call->method);
                                verror(&e, k, "org.varlink.service.MethodNotImplemented",
                                       json_pack("{s:s}", "method", call->method));
                        } else
                                log_debug("%s from client %" PRIu64 " failed: %s", call->method, c->id, e.name);
                        return reply_error(c, call, &e);
                }
                return 0;
        }

        dot = strrchr(call->method, '.');
        if (dot) {
                size_t len = (size_t) (dot - call->method);

                if ((len == strlen("io.pressured") && strncmp(call->method, "io.pressured", len) == 0) ||
                    (len == strlen("org.varlink.service") &&
                     strncmp(call->method, "org.varlink.service", len) == 0)) {
                        verror(&e, -ENOENT, "org.varlink.service.MethodNotFound",
                               json_pack("{s:s}", "method", call->method));
                        return reply_error(c, call, &e);
                }
                {
                        _cleanup_free_ char *iface = strndup(call->method, len);

                        verror(&e, -ENOENT, "org.varlink.service.InterfaceNotFound",
                               json_pack("{s:s}", "interface", iface ? iface : ""));
                }
                return reply_error(c, call, &e);
        }
        verror(&e, -ENOENT, "org.varlink.service.MethodNotFound", json_pack("{s:s}", "method", call->method));
        return reply_error(c, call, &e);
}
