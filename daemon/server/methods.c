/* SPDX-License-Identifier: MIT */
/*
 * The varlink methods: org.varlink.service (GetInfo,
 * GetInterfaceDescription) and io.pressured (Subscribe, GetStatus,
 * GetProtection, GetHeadroom, Inject, Reload, Reexecute, AcknowledgePrekill),
 * with source selection and the
 * authorization rules of the contract.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "event-util.h"
#include "io.pressured.varlink.h"
#include "event.h"
#include "headroom.h"
#include "log.h"
#include "methods.h"
#include "oomd-watch.h"
#include "source-choice.h"
#include "subscribe.h"
#include "subscription.h"
#include "varlink-service.h"

/* The interface this socket serves beside org.varlink.service. */
static const VarlinkInterface pressured_interfaces[] = {
        { "io.pressured", io_pressured_varlink },
};

static const VarlinkService pressured_service = { pressured_interfaces, ELEMENTSOF(pressured_interfaces) };

/*
 * Answer @call with @params (stolen). NULL @params is a reply that could
 * not be built: out of memory, never an empty success.
 */
static int reply(Client *c, const VarlinkCall *call, json_t *params) {
        return service_reply(c, call, params, true);
}

/* The optional "cgroup" parameter of @params, normalized ("/" if absent). */
static int get_cgroup_param(json_t *params, char **ret, VarlinkError *e) {
        json_t *v = json_object_get(params, "cgroup");
        int k;

        if (v && !json_is_null(v) && !json_is_string(v))
                return varlink_error_invalid_parameter(e, "cgroup");
        k = cgroup_path_normalize(json_string_value(v), ret);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return varlink_error_invalid_cgroup_path(e, -EINVAL, json_string_value(v));
        return 0;
}

/*
 * The real path, in the cgroup2 hierarchy or (@v1) the v1 memory one, of
 * the canonical cgroup @path as peer @c names it (relative to its cgroup
 * namespace). @given: the parameter as the peer wrote it, for the error.
 */
static int peer_to_real(const Client *c, bool v1, const char *path, const char *given, char **ret, VarlinkError *e) {
        int k = cgroup_view_to_real(cgroup_view_root(&c->view, v1), path, ret);

        if (k == -EINVAL)
                return varlink_error_invalid_cgroup_path(e, k, given ?: path);
        return k;
}

/* The optional "cgroup" parameter of @params as the real path of what @c names in the cgroup2 or (@v1) v1 hierarchy. */
static int get_real_cgroup(const Client *c, json_t *params, bool v1, char **ret, VarlinkError *e) {
        _cleanup_free_ char *path = NULL;
        int k = get_cgroup_param(params, &path, e);

        if (k < 0)
                return k;
        return peer_to_real(c, v1, path, json_string_value(json_object_get(params, "cgroup")), ret, e);
}

/* Reject any parameter not in @allowed (NULL-terminated). */
static int check_params(json_t *params, const char *const *allowed, VarlinkError *e) {
        return service_check_params(params, allowed, e);
}

static bool psi_system_available(Resource resource) {
        return access(resource_proc_pressure_file(resource), R_OK) == 0;
}

/*
 * Whether the cgroup2 directory @dirfd has the memory controller: its
 * memory.current, or for the root (which has none) "memory" among its
 * cgroup.controllers.
 */
static bool has_memory_controller(int dirfd, bool root) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *text = NULL;
        size_t size;

        if (faccessat(dirfd, "memory.current", F_OK, 0) == 0)
                return true;
        if (!root)
                return false;
        fd = openat(dirfd, "cgroup.controllers", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read_full_fd(fd, 4096, &text, &size) < 0)
                return false;
        for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                if (streq(w, "memory"))
                        return true;
        return false;
}

/* A requested cgroup's real paths in the two hierarchies. */
typedef struct RealCgroups {
        char *v2;
        char *v1;
} RealCgroups;

static void real_cgroups_done(RealCgroups *r) {
        free(r->v2);
        free(r->v1);
}

/*
 * Gather what source_choose() needs to know about @cgroup. The cgroup's
 * directories stay open in @ret_v2fd and @ret_v1fd (-1 if absent) for the
 * authorization check.
 */
static void gather_facts(const Methods *m, const SubscribeRequest *req, const RealCgroups *real, CgroupFacts *ret,
                         int *ret_v2fd, int *ret_v1fd) {
        CgroupFacts f = {
                .v2_root = m->v2->fd >= 0 ? m->v2->path : NULL,
                .v1_root = m->v1->fd >= 0 ? m->v1->path : NULL,
                .resource = req->resource,
                .system = streq(real->v2, "/") && streq(real->v1, "/"),
                .has_v2 = m->v2->fd >= 0,
                .has_v1 = m->v1->fd >= 0,
                .in_v2 = -ENOENT,
                .in_v1 = -ENOENT,
        };
        int v2fd = -1, v1fd = -1;

        if (f.system && (req->selector == SELECTOR_LEVEL || req->selector == SELECTOR_PSI)) {
                /* The whole system: /proc/pressure, or the v1 root, which needs no check. */
                f.psi_system = req->selector == SELECTOR_LEVEL && psi_system_available(req->resource);
        } else {
                if (f.has_v2) {
                        v2fd = hierarchy_open_cgroup(m->v2, real->v2);
                        f.in_v2 = v2fd < 0 ? v2fd : 0;
                }
                /* Both for every selector: a cgroup in the other hierarchy only is told so. */
                if (f.has_v1) {
                        v1fd = hierarchy_open_cgroup(m->v1, real->v1);
                        f.in_v1 = v1fd < 0 ? v1fd : 0;
                }
                if (v2fd >= 0) {
                        f.v2_pressure = faccessat(v2fd, resource_pressure_file(req->resource), F_OK, 0) == 0;
                        f.v2_current = has_memory_controller(v2fd, streq(real->v2, "/"));
                        f.v2_events = faccessat(v2fd, "memory.events", F_OK, 0) == 0;
                }
        }
        *ret = f;
        *ret_v2fd = v2fd < 0 ? -1 : v2fd;
        *ret_v1fd = v1fd < 0 ? -1 : v1fd;
}

/*
 * Decide which kernel registration a request needs (source_choose()),
 * and check that the caller may use it. Fills @key, and @ret_dirfd with
 * the directory of its cgroup that was checked (-1 for the whole
 * system): the registration is made in that directory, not in whatever
 * the path names by then.
 */
static int resolve_request(const Methods *m, Client *c, const SubscribeRequest *req, const RealCgroups *real,
                           RegistrationKey *key, int *ret_dirfd, VarlinkError *e) {
        _cleanup_close_ int v2fd = -1, v1fd = -1;
        CgroupFacts facts;
        SourceFailure f = {};
        SourceType type;
        const char *reason;
        struct stat st;
        bool allowed;
        int *fd, k;

        *ret_dirfd = -1;
        gather_facts(m, req, real, &facts, &v2fd, &v1fd);
        k = source_choose(req->selector, &facts, &type, &f);
        if (k < 0) {
                varlink_error_from_failure(e, &f, req->cgroup);
                return k;
        }

        *key = (RegistrationKey) { .type = type, .cgroup = type == SOURCE_VMPRESSURE ? real->v1 : real->v2,
                                   .resource = req->resource };
        if (req->selector == SELECTOR_PSI)
                key->psi = req->psi;
        else if (req->selector == SELECTOR_VMPRESSURE) {
                key->vm_level = req->vm_level;
                key->vm_mode = req->vm_mode;
        } else if (req->selector == SELECTOR_LEVEL && type == SOURCE_PSI)
                key->psi = m->config->levels[req->level];
        else if (req->selector == SELECTOR_LEVEL) {
                key->vm_level = req->level;
                key->vm_mode = m->config->vmpressure_mode;
        }
        if (type == SOURCE_PSI && psi_trigger_check_resource(&key->psi, key->resource, facts.system, &reason) < 0)
                return varlink_error_invalid_trigger(e, -EINVAL, reason);

        /* Authorization: root may do anything; others the system-wide
         * level/psi sources, kills where they can read, and cgroups whose
         * directory they own. Kills are public facts (the signal on the
         * bus, memory.events in cgroupfs): whoever may read the cgroup's
         * directory may hear them. */
        fd = key->type == SOURCE_VMPRESSURE ? &v1fd : &v2fd;
        allowed = c->uid == 0 || (facts.system && (req->selector == SELECTOR_LEVEL || req->selector == SELECTOR_PSI));
        if (!allowed && req->selector == SELECTOR_KILLS)
                allowed = facts.system || (v2fd >= 0 && fstat(v2fd, &st) == 0 &&
                                           (st.st_uid == c->uid ||
                                            (st.st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH)));
        if (!allowed)
                allowed = *fd >= 0 && fstat(*fd, &st) == 0 && st.st_uid == c->uid;
        if (!allowed)
                return varlink_error_permission_denied(e, "the cgroup is not delegated to the caller's user");
        /* The directory in the registration's hierarchy: checked here, registered in. */
        *ret_dirfd = TAKE_FD(*fd);
        return 0;
}

/* An error a source gave on the real path @real names the cgroup as the peer did, @path. */
static void error_to_view(VarlinkError *e, const char *real, const char *path) {
        json_t *v = e->parameters ? json_object_get(e->parameters, "cgroup") : NULL;

        if (v && !streq(real, path) && streq_ptr(json_string_value(v), real))
                (void) json_object_set_new(e->parameters, "cgroup", json_string(path));
}

/* The first message of a stream, with "continues"; NULL when out of memory. */
static char *subscribed_message(Registration *r, const Subscription *s, bool adjusted, const char *reason,
                                size_t *ret_size) {
        EventTrigger t = registration_trigger(r, &s->listener);
        SubscribedState st;
        json_t *ev, *params, *trigger, *state;

        if (registration_state(r, &st) < 0)
                return NULL;
        trigger = event_trigger_new(&t);
        state = trigger ? subscribed_state_json(&st) : NULL;
        if (!state) {
                json_decref(trigger);
                return NULL;
        }
        ev = event_subscribed_new(r->src.cgroup, r->src.type, r->src.resource, trigger, adjusted,
                                  adjusted ? reason : NULL, state);
        params = ev ? json_pack("{s:o}", "event", ev) : NULL;
        /* Named as the peer names it, with the protection node a state may hold. */
        return params ? event_message_view(varlink_reply_new(params, true, ret_size), ret_size, &s->view) : NULL;
}

/* Send the "subscribed" a waiting kills subscription held back, then what it held. */
static void kills_start(Subscription *s, Registration *r) {
        size_t n;
        char *msg = subscribed_message(r, s, false, NULL, &n);

        if (!msg || client_send_owned(s->client, msg, n) < 0)
                client_kill(s->client); /* the stream cannot begin as it should */
        subscription_started(s);
}

static void kills_start_all(Methods *ms) {
        while (ms->kills_waiting)
                kills_start(ms->kills_waiting, ms->kills_waiting->listener.reg);
        if (ms->kills_timer)
                evtimer_del(ms->kills_timer);
}

void methods_kills_settled(void *userdata) {
        kills_start_all(userdata);
}

static void on_kills_timer(evutil_socket_t fd, short what, void *userdata) {
        Methods *ms = userdata;

        log_debug("The system bus did not tell about systemd-oomd in time, starting kills streams without it.");
        /* Until the bus answers, later kills subscriptions do not wait either. */
        oomd_watch_give_up(ms->registry->env->oomd);
        kills_start_all(ms);
}

/*
 * The first kills subscription brings the daemon onto the system bus: its
 * "subscribed" waits (at most METHODS_KILLS_WAIT_USEC) until the match on
 * systemd-oomd's signal is in place and the owner of its name known, so
 * that kill_sources tells the truth. @s becomes the client's stream now.
 */
static int kills_wait_only(Methods *ms, Client *c, Subscription *s) {
        struct timeval tv = usec_to_timeval(METHODS_KILLS_WAIT_USEC);

        if (!ms->kills_timer)
                ms->kills_timer = evtimer_new(c->server->base, on_kills_timer, ms);
        if (!ms->kills_timer || (!ms->kills_waiting && evtimer_add(ms->kills_timer, &tv) < 0))
                return -ENOMEM;
        subscription_wait(s, &ms->kills_waiting, kills_start);
        return 0;
}

static int kills_wait(Methods *ms, Client *c, Subscription *s) {
        int k = kills_wait_only(ms, c, s);

        if (k < 0)
                return k;
        subscription_start(s);
        return 0;
}

int methods_kills_adopt(Methods *ms, Subscription *s) {
        Registration *r = s->listener.reg;

        if (r && oomd_watch_settling(r->src.env->oomd))
                return kills_wait_only(ms, s->client, s);
        /* subscription_adopt() made it the stream already: it was waiting, and now need not. */
        s->waiting = true;
        kills_start(s, r);
        return 0;
}

void methods_done(Methods *ms) {
        event_free_and_null(&ms->kills_timer);
}

/*
 * The tracker of the level stream @req asks for, on the cgroup with the
 * real paths @real: the one that follows it already, or a new one on the
 * three [Levels] registrations. Each level is resolved and authorized as
 * a Subscribe with "level" would be, also when the tracker exists.
 */
static int levels_tracker(Methods *ms, Client *c, const SubscribeRequest *req, const RealCgroups *real,
                          LevelTracker **ret, VarlinkError *e) {
        const LevelTarget target = {
                .cgroup = req->cgroup, .real_v2 = real->v2, .real_v1 = real->v1,
                .view_v2 = cgroup_view_root(&c->view, false), .view_v1 = cgroup_view_root(&c->view, true),
        };
        Registration *regs[_LEVEL_MAX] = {};
        LevelTracker *t = level_streams_find(ms->levels, &target);
        int k = 0;

        for (Level l = 0; l < _LEVEL_MAX && k >= 0; l++) {
                SubscribeRequest one = *req;
                _cleanup_close_ int dirfd = -1;
                SourceFailure f = {};
                RegistrationKey key;
                char reason[POLICY_REASON_MAX];
                bool adjusted;

                one.selector = SELECTOR_LEVEL;
                one.level = l;
                k = resolve_request(ms, c, &one, real, &key, &dirfd, e);
                if (k < 0 || t)
                        continue;
                k = registration_acquire_for(ms->registry, &key, dirfd, c->uid, false, &regs[l], &adjusted, reason,
                                             &f);
                if (k < 0) {
                        varlink_error_from_failure(e, &f, key.cgroup);
                        error_to_view(e, key.cgroup, req->cgroup);
                }
        }
        if (k < 0) {
                for (Level l = 0; l < _LEVEL_MAX; l++)
                        if (regs[l])
                                registration_release(regs[l]);
                return k;
        }
        if (!t)
                k = level_tracker_new(ms->levels, &target, regs, &t);
        if (k >= 0)
                *ret = t;
        return k;
}

static int subscribe_levels(Methods *ms, Client *c, const SubscribeRequest *req, const RealCgroups *real,
                            VarlinkError *e) {
        LevelTracker *t;
        int k = levels_tracker(ms, c, req, real, &t, e);

        if (k < 0)
                return k;
        k = level_stream_start(t, c);
        if (k >= 0)
                log_debug("Client %" PRIu64 " follows the level of %s.", c->id, req->cgroup);
        return k;
}

int methods_levels_adopt(Methods *ms, Client *c, const SnapshotLevels *snap) {
        _cleanup_(subscribe_request_done) SubscribeRequest req = { .selector = SELECTOR_LEVELS,
                                                                   .resource = RESOURCE_MEMORY };
        _cleanup_(real_cgroups_done) RealCgroups real = {};
        _cleanup_(varlink_error_done) VarlinkError e = {};
        LevelTracker *t;
        int k;

        k = cgroup_path_normalize(snap->cgroup, &req.cgroup);
        if (k >= 0)
                k = peer_to_real(c, false, req.cgroup, NULL, &real.v2, &e);
        if (k >= 0)
                k = peer_to_real(c, true, req.cgroup, NULL, &real.v1, &e);
        if (k >= 0)
                k = levels_tracker(ms, c, &req, &real, &t, &e);
        if (k < 0) {
                log_debug("The level stream of client %" PRIu64 " on %s cannot go on (%s): %s", c->id, snap->cgroup,
                          strna(e.name), strerror(-k));
                return k;
        }
        return level_stream_adopt(t, c, snap);
}

static int method_subscribe(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        _cleanup_(subscribe_request_done) SubscribeRequest req = {};
        _cleanup_(real_cgroups_done) RealCgroups real = {};
        _cleanup_close_ int dirfd = -1;
        const char *given;
        RegistrationKey key;
        SourceFailure f = {};
        Registration *r;
        Subscription *s;
        char reason[POLICY_REASON_MAX];
        bool adjusted;
        char *msg;
        size_t n;
        int k;

        if (!call->more)
                return varlink_error_expected_more(e);

        k = subscribe_request_parse(call->parameters, &req, e);
        if (k < 0)
                return k;
        given = json_string_value(json_object_get(call->parameters, "cgroup"));
        k = peer_to_real(c, false, req.cgroup, given, &real.v2, e);
        if (k >= 0)
                k = peer_to_real(c, true, req.cgroup, given, &real.v1, e);
        if (k >= 0 && req.selector == SELECTOR_LEVELS)
                return subscribe_levels(ms, c, &req, &real, e);
        if (k >= 0)
                k = resolve_request(ms, c, &req, &real, &key, &dirfd, e);
        if (k < 0)
                return k;
        k = registration_acquire_for(ms->registry, &key, dirfd, c->uid, req.selector == SELECTOR_PSI, &r, &adjusted,
                                     reason, &f);
        if (k < 0) {
                varlink_error_from_failure(e, &f, key.cgroup);
                error_to_view(e, key.cgroup, req.cgroup);
                return k;
        }
        k = subscription_new(c, ms->counters, r, &req, &s);
        if (k < 0) {
                registration_release(r);
                return k;
        }
        if (r->src.type == SOURCE_KILLS && oomd_watch_settling(r->src.env->oomd)) {
                k = kills_wait(ms, c, s);
                if (k < 0)
                        subscription_free(s);
                return k;
        }
        msg = subscribed_message(r, s, adjusted, reason, &n);
        if (!msg) {
                subscription_free(s);
                return -ENOMEM;
        }
        log_debug("Client %" PRIu64 " subscribed to %s on %s (as %s).", c->id, source_type_to_string(r->src.type),
                  r->src.cgroup, req.cgroup);
        /* The stream first: whoever keeps the state for a successor hears of it before the client does. */
        subscription_start(s);
        (void) client_send_owned(c, msg, n); /* on failure the client is closed, its stream with it */
        return 0;
}

static int method_get_status(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        int k = check_params(call->parameters, allowed, e);

        if (k < 0)
                return k;
        return reply(c, call, status_json(ms->status, &c->view));
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

/* InjectGroup= was resolved when the configuration was loaded: no name service lookups here. */
static bool may_inject(const Methods *ms, const Client *c) {
        return c->uid == 0 || (ms->config->inject_gid_set && in_group(c, ms->config->inject_gid));
}

/*
 * The shared body of an injected @level event on the real cgroup @cgroup,
 * with its protection node if @enrich (a cgroup2 path); NULL when out of memory.
 */
static Body *inject_body(Methods *ms, const char *cgroup, bool enrich, Resource resource, Level level, uint64_t rt,
                         uint64_t mono) {
        return event_data_body(&(const EventData) {
                .kind = EVENT_PRESSURE, .cgroup = cgroup, .realtime_us = rt, .monotonic_us = mono,
                .pressure = {
                        .source = _SOURCE_INVALID, .resource = resource, .level = level,
                        /* Like a kernel event: say whether the cgroup was protected. */
                        .protection = enrich ? protection_source_lookup(ms->protection, cgroup) : NULL,
                },
        }, mono);
}

/*
 * The cgroup of an injection exists, in the cgroup2 hierarchy or the v1
 * memory one; @peer names it in errors. No fd is taken: Inject works when
 * the daemon has none left.
 */
static int inject_check_cgroup(const Methods *m, const RealCgroups *real, const char *peer, VarlinkError *e) {
        int in2, in1;

        if (streq(real->v2, "/") && streq(real->v1, "/"))
                return 0;
        in2 = hierarchy_stat_cgroup(m->v2, real->v2);
        in1 = in2 == 0 ? 0 : hierarchy_stat_cgroup(m->v1, real->v1);
        if (in2 == 0 || in1 == 0)
                return 0;
        /* A path that names a file or leaves the hierarchy says more than a missing directory. */
        return varlink_error_from_errno(e, in2 != -ENOENT ? in2 : in1, IDL_SOURCE_NAME(INJECT), peer, NULL);
}

static int method_inject(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", "level", "resource", NULL };
        _cleanup_(real_cgroups_done) RealCgroups real = {};
        _cleanup_free_ char *peer = NULL;
        Resource resource = RESOURCE_MEMORY;
        json_t *v;
        Level level;
        Body *b2, *b1;
        uint64_t delivered, rt, mono;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        v = json_object_get(call->parameters, "level");
        if (!json_is_string(v) || (level = level_from_string(json_string_value(v))) < 0)
                return varlink_error_invalid_parameter(e, "level");
        v = json_object_get(call->parameters, "resource");
        if (v && !json_is_null(v) &&
            (!json_is_string(v) || (resource = resource_from_string(json_string_value(v))) < 0))
                return varlink_error_invalid_parameter(e, "resource");
        k = get_cgroup_param(call->parameters, &peer, e);
        if (k >= 0)
                k = get_real_cgroup(c, call->parameters, false, &real.v2, e);
        if (k >= 0)
                k = get_real_cgroup(c, call->parameters, true, &real.v1, e);
        if (k < 0)
                return k;
        if (!may_inject(ms, c))
                return varlink_error_permission_denied(e, "Inject is reserved to root and the InjectGroup= group");
        k = inject_check_cgroup(ms, &real, peer, e);
        if (k < 0)
                return k;

        rt = now_usec(CLOCK_REALTIME);
        mono = now_usec(CLOCK_MONOTONIC);
        /* In a cgroup namespace the cgroup may have other real paths in the two hierarchies. */
        b2 = inject_body(ms, real.v2, true, resource, level, rt, mono);
        b1 = streq(real.v2, real.v1) ? body_ref(b2) : inject_body(ms, real.v1, false, resource, level, rt, mono);
        if (!b2 || !b1) {
                body_unref(b2);
                body_unref(b1);
                return -ENOMEM;
        }
        counter_inc(ms->counters, COUNTER_EVENTS_INJECTED);
        delivered = registry_inject_split(ms->registry, real.v2, b2, real.v1, b1, resource, level, mono);
        body_unref(b2);
        body_unref(b1);
        log_debug("Injected a %s %s event on %s for uid %u, %" PRIu64 " subscriber(s) reached.",
                  resource_to_string(resource), level_to_string(level), real.v2, (unsigned) c->uid, delivered);
        return reply(c, call, json_pack("{s:I}", "delivered", (json_int_t) delivered));
}

static int method_reload(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        _cleanup_free_ char *error = NULL;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        if (c->uid != 0)
                return varlink_error_permission_denied(e, "Reload is reserved to root");
        k = ms->reload(ms->userdata, &error);
        if (k < 0)
                return varlink_error_configuration_rejected(e, k, error ?: strerror(-k));
        return reply(c, call, json_object());
}

/* Name every node of @nodes (GetProtection's list, all beneath @root) as the peer with @root sees it. */
static int nodes_to_view(json_t *nodes, const char *root) {
        size_t i;
        json_t *node;

        if (!root)
                return 0;
        json_array_foreach(nodes, i, node) {
                const char *name = cgroup_view_from_real(root, json_string_value(json_object_get(node, "cgroup")));

                if (!name || json_object_set_new(node, "cgroup", json_string(name)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int method_reexecute(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        if (c->uid != 0)
                return varlink_error_permission_denied(e, "Reexecute is reserved to root");
        if (!ms->reexecute)
                return varlink_error_internal(e, -EOPNOTSUPP);
        k = ms->reexecute(ms->userdata, c);
        if (k < 0)
                return k;
        /* The new process answers. */
        c->owes_reexecute = !call->oneway;
        return 0;
}

static int method_get_protection(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", NULL };
        const Methods *m = ms;
        _cleanup_free_ char *peer = NULL, *cgroup = NULL, *v1 = NULL;
        _cleanup_(varlink_error_done) VarlinkError ignored = {};
        _cleanup_close_ int fd = -1, v1fd = -1;
        SourceFailure f;
        struct stat st;
        json_t *nodes = NULL;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        k = get_cgroup_param(call->parameters, &peer, e);
        if (k >= 0)
                k = get_real_cgroup(c, call->parameters, false, &cgroup, e);
        if (k < 0)
                return k;
        if (m->v2->fd < 0 || !m->protection)
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "protection", "there is no cgroup2 hierarchy");
        fd = hierarchy_open_cgroup(m->v2, cgroup);
        if (fd == -ENOENT && peer_to_real(c, true, peer, NULL, &v1, &ignored) >= 0 &&
            (v1fd = hierarchy_open_cgroup(m->v1, v1)) >= 0)
        {
                k = source_error_v1_only(&f, "protection", m->v2->path, m->v1->path);
                varlink_error_from_failure(e, &f, peer);
                return k;
        }
        if (fd < 0)
                return varlink_error_from_errno(e, fd, "protection", peer, NULL);
        if (c->uid != 0 && (fstat(fd, &st) < 0 || st.st_uid != c->uid))
                return varlink_error_permission_denied(e, "the cgroup is not delegated to the caller's user");
        /* Without the memory controller there is nothing to read: no table of zeroes. */
        if (!has_memory_controller(fd, streq(cgroup, "/")))
                return varlink_error_source_unavailable(e, -EOPNOTSUPP, "protection", SOURCE_REASON_NO_MEMORY_CONTROLLER);

        nodes = json_array();
        if (!nodes)
                return -ENOMEM;
        k = protection_source_read(m->protection, cgroup, protection_node_append_json, nodes);
        if (k < 0)
                json_decref(nodes);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return varlink_error_from_errno(e, k, "protection", peer, NULL);
        k = nodes_to_view(nodes, cgroup_view_root(&c->view, false));
        if (k < 0) {
                json_decref(nodes);
                return k;
        }
        return reply(c, call, json_pack("{s:o}", "nodes", nodes));
}

/* A value of GetHeadroom's answer: the number, or null when it is not known. */
static json_t *json_optional_integer(bool known, uint64_t v) {
        return known ? json_integer((json_int_t) (v > INT64_MAX ? INT64_MAX : v)) : json_null();
}

/* GetHeadroom's answer from @h, for peer @c; @level is the cgroup's level, or negative when none is known. */
static json_t *headroom_answer(const Methods *m, const Client *c, const Headroom *h, int level) {
        const char *limiting = h->limiting_cgroup;
        uint64_t target = 0;
        bool has_target = level >= 0 && headroom_reclaim_target(h, m->config, level, &target);

        if (limiting)
                limiting = cgroup_view_from_real(cgroup_view_root(&c->view, h->v1), limiting);
        if (h->limiting_cgroup && !limiting)
                return NULL;
        return json_pack("{s:o, s:o, s:o, s:o, s:o}",
                         "usage_bytes", json_optional_integer(true, h->usage_bytes),
                         "limit_bytes", json_optional_integer(h->has_limit, h->limit_bytes),
                         "limiting_cgroup", limiting ? json_string(limiting) : json_null(),
                         "headroom_bytes", json_optional_integer(h->known, h->headroom_bytes),
                         "reclaim_target_bytes", json_optional_integer(has_target, target));
}

static int method_get_headroom(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "cgroup", NULL };
        const HeadroomFiles files = { .v2 = ms->v2, .v1 = ms->v1, .meminfo = "/proc/meminfo" };
        _cleanup_(varlink_error_done) VarlinkError ignored = {};
        _cleanup_free_ char *peer = NULL, *v2 = NULL, *v1 = NULL;
        _cleanup_(headroom_done) Headroom h = {};
        SourceFailure f;
        int k, level;

        k = check_params(call->parameters, allowed, e);
        if (k >= 0)
                k = get_cgroup_param(call->parameters, &peer, e);
        if (k >= 0)
                k = peer_to_real(c, false, peer, NULL, &v2, e);
        if (k < 0)
                return k;
        if (peer_to_real(c, true, peer, NULL, &v1, &ignored) == -ENOMEM)
                return -ENOMEM;
        k = headroom_read(&files, v2, v1, cgroup_view_root(&c->view, false), cgroup_view_root(&c->view, true),
                          &h, &f);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                varlink_error_from_failure(e, &f, peer);
                return k;
        }
        /* The level of a stream that follows the cgroup; none: no reclaim target. */
        level = v2 ? level_streams_level_of(ms->levels, v2) : -ENOENT;
        return reply(c, call, headroom_answer(ms, c, &h, level));
}

unsigned methods_level_headroom(void *userdata, const LevelTarget *t, StreamLevel level, uint64_t *ret_headroom,
                                uint64_t *ret_target) {
        Methods *ms = userdata;
        const HeadroomFiles files = { .v2 = ms->v2, .v1 = ms->v1, .meminfo = "/proc/meminfo",
                                      .meminfo_fd = t->meminfo_fd };
        _cleanup_(headroom_done) Headroom h = {};
        SourceFailure f;

        /* A level event is on its way to its clients: as few system calls as can be. */
        if (t->meminfo_fd && *t->meminfo_fd < 0)
                *t->meminfo_fd = open(files.meminfo, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (headroom_read_hinted(&files, t->real_v2, t->real_v1, t->view_v2, t->view_v1, t->hint, &h, &f) < 0 ||
            !h.known)
                return 0;
        *ret_headroom = h.headroom_bytes;
        return 1u | (headroom_reclaim_target(&h, ms->config, (int) level, ret_target) ? 2u : 0u);
}

static int method_acknowledge_prekill(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { "id", NULL };
        json_t *v = json_object_get(call->parameters, "id");
        json_int_t id;
        int k;

        k = check_params(call->parameters, allowed, e);
        if (k < 0)
                return k;
        if (!json_is_integer(v))
                return varlink_error_invalid_parameter(e, "id");
        id = json_integer_value(v);
        /* Whose it is, the peer's credentials say: any connection of the warned subscriber's user. */
        if (id <= 0 || prekill_acknowledge(ms->prekill, (uint64_t) id, c->uid, c->pid) < 0)
                return varlink_error_no_such_prekill(e, id);
        return reply(c, call, json_object());
}

static const struct {
        const char *name;
        int (*func)(Methods *ms, Client *c, VarlinkCall *call, VarlinkError *e);
} methods[] = {
        { "io.pressured.Subscribe", method_subscribe },
        { "io.pressured.GetStatus", method_get_status },
        { "io.pressured.GetProtection", method_get_protection },
        { "io.pressured.GetHeadroom", method_get_headroom },
        { "io.pressured.Inject", method_inject },
        { "io.pressured.Reload", method_reload },
        { "io.pressured.Reexecute", method_reexecute },
        { "io.pressured.AcknowledgePrekill", method_acknowledge_prekill },
};



void methods_dispatch(Client *c, VarlinkCall *call, void *userdata) {
        Methods *ms = userdata;
        VarlinkError e = {};
        int k = 1;

        for (size_t i = 0; i < ELEMENTSOF(methods) && k > 0; i++)
                if (streq(methods[i].name, call->method))
                        k = methods[i].func(ms, c, call, &e);
        service_finish(&pressured_service, c, call, k, &e);
}
