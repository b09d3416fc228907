/* SPDX-License-Identifier: MIT */
/* GetStatus and the Prometheus exposition, both from the manager's state and the counter table. */
#include <event2/buffer.h>
#include <inttypes.h>

#include "config-build.h"
#include "event.h"
#include "log.h"
#include "metrics-cgroup.h"
#include "metrics-text.h"
#include "registration-episode.h"
#include "status.h"
#include "util.h"

void status_counters(const StatusContext *m, uint64_t ret[static _COUNTER_MAX]) {
        memcpy(ret, m->counters->value, sizeof(m->counters->value));
        protection_source_counters(m->protection, &ret[COUNTER_PROPAGATIONS_APPLIED], &ret[COUNTER_PROPAGATIONS_SKIPPED]);
}

static json_t *json_decref_null(json_t *j) {
        json_decref(j);
        return NULL;
}

/*
 * The next uid holding fast PSI registrations above @last (any if !@after),
 * smallest first. The registrations are few (MaxRegistrations=), so a pass
 * per uid needs no table of its own.
 */
static bool next_fast_uid(const StatusContext *m, bool after, uid_t last, uid_t *ret) {
        Registration *r;
        bool found = false;
        uid_t next = 0;

        LIST_FOREACH(registrations, r, m->registry->registrations)
                if (r->fast_charged && !r->removed && (!after || r->fast_uid > last) &&
                    (!found || r->fast_uid < next)) {
                        next = r->fast_uid;
                        found = true;
                }
        if (found)
                *ret = next;
        return found;
}

/* The uids holding fast PSI registrations, with how many each, by ascending uid. */
static json_t *status_fast_users_json(const StatusContext *m) {
        json_t *users = json_array();
        uid_t uid = 0;

        for (bool after = false; users && next_fast_uid(m, after, uid, &uid); after = true)
                if (json_array_append_new(users, json_pack("{s:I, s:I}", "uid", (json_int_t) uid, "fast_triggers",
                                                           (json_int_t) registry_fast_count(m->registry, uid))) < 0)
                        users = json_decref_null(users);
        return users;
}

/*
 * The active episode of @r: {"active_since_us", "duration_us", "events", "peak"/"peak_level"},
 * or NULL when no episode is active (or out of memory).
 */
static json_t *registration_episode_json(const Registration *r) {
        if (!registration_has_episodes(r) || !r->episode.active)
                return NULL;
        return event_episode_json(&r->episode.cur, r->src.type == SOURCE_PSI, false,
                                  now_usec(CLOCK_MONOTONIC), now_usec(CLOCK_REALTIME));
}

/* The history ring of @r as a list, oldest first; NULL when out of memory. */
static json_t *registration_history_json(const Registration *r) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), rt = now_usec(CLOCK_REALTIME);
        json_t *a = json_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < r->history.n; i++) {
                json_t *ep = event_episode_json(episode_history_get(&r->history, i), r->src.type == SOURCE_PSI,
                                                true, mono, rt);

                /* Each entry says its resource, so it can be read apart from its registration. */
                if (!ep || json_object_set_new(ep, "resource", json_string(resource_to_string(r->src.resource))) < 0 ||
                    json_array_append_new(a, ep) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

/* One entry of "registrations", naming @cgroup as the caller sees it; NULL when out of memory, never a partial one. */
static json_t *status_registration_json(const Registration *r, const char *cgroup) {
        EventTrigger t = registration_trigger(r, NULL);
        json_t *proxied = json_array(), *o;
        Listener *l;
        bool ok;

        LIST_FOREACH(listeners, l, r->listeners) {
                const ProxyClient *p = proxy_client_of(l);

                if (!proxied || !p)
                        continue;
                if (json_array_append_new(proxied, json_pack("{s:I, s:s, s:s?}", "pid", (json_int_t) p->pid,
                                                             "cgroup", cgroup, "unit", p->unit)) < 0)
                        proxied = json_decref_null(proxied);
        }
        o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:o}", "cgroup", cgroup,
                      "source", source_type_to_string(r->src.type),
                      "resource", resource_to_string(r->src.resource),
                      "trigger", event_trigger_new(&t),
                      "subscribers", (json_int_t) (r->n_subscribers + r->n_kicked),
                      "proxied", proxied);
        ok = o;
        if (ok && r->fast_charged)
                ok = json_object_set_new(o, "fast_trigger_uid", json_integer((json_int_t) r->fast_uid)) == 0;
        /* registration_episode_json() is NULL without an active episode. */
        if (ok && registration_has_episodes(r) && r->episode.active)
                ok = json_object_set_new(o, "episode", registration_episode_json(r)) == 0;
        if (ok && registration_has_episodes(r))
                ok = json_object_set_new(o, "history", registration_history_json(r)) == 0;
        return ok ? o : json_decref_null(o);
}

/*
 * The registrations, as a caller with @view sees them: beneath the root of
 * its cgroup namespace and named relative to it; the others are left out.
 */
static json_t *status_registrations_json(const StatusContext *m, const CgroupView *view) {
        json_t *regs = json_array();
        Registration *r;

        LIST_FOREACH(registrations, r, m->registry->registrations) {
                const char *cgroup = cgroup_view_from_real(cgroup_view_root(view, r->src.type == SOURCE_VMPRESSURE),
                                                           r->src.cgroup);

                if (regs && cgroup && json_array_append_new(regs, status_registration_json(r, cgroup)) < 0)
                        regs = json_decref_null(regs);
        }
        return regs;
}

static json_t *status_counters_json(const StatusContext *m) {
        uint64_t values[_COUNTER_MAX];
        json_t *counters = json_object();

        status_counters(m, values);
        for (Counter c = 0; counters && c < _COUNTER_MAX; c++)
                if (json_object_set_new(counters, counter_info(c)->name, json_integer((json_int_t) values[c])) < 0)
                        counters = json_decref_null(counters);
        return counters;
}

static json_t *status_takeover_json(const StatusContext *m) {
        const TakeoverStats *t = &m->takeover;

        return json_pack("{s:I, s:I, s:I, s:I, s:b, s:I}", "connections", (json_int_t) t->connections,
                         "proxied_clients", (json_int_t) t->proxied_clients,
                         "registrations", (json_int_t) t->registrations, "closed", (json_int_t) t->closed,
                         "clean", t->clean, "time_us", (json_int_t) t->time_us);
}

/* GetStatus "prekill": the calls of systemd-oomd's pre-kill hook. */
static json_t *status_prekill_json(const StatusContext *m) {
        static const PrekillBook none = {};
        const PrekillBook *b = m->prekill ?: &none;

        return json_pack("{s:I, s:I, s:I, s:I}", "warned", (json_int_t) b->counters.warned,
                         "acknowledged", (json_int_t) b->counters.acknowledged,
                         "deadline_reached", (json_int_t) b->counters.deadline_reached,
                         "pending", (json_int_t) b->n_pending);
}

/* Every part is complete, or the whole reply is NULL: out of memory is never a partial success. */
json_t *status_json(const StatusContext *m, const CgroupView *view) {
        json_t *regs = status_registrations_json(m, view), *counters = status_counters_json(m);

        return json_pack("{s:s, s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:{s:s?, s:s?, s:b}, s:o, s:{s:I, s:o}, s:o, s:o, s:o}",
                         "version", PACKAGE_VERSION,
                         "uptime_us", (json_int_t) (now_usec(CLOCK_MONOTONIC) - m->start_monotonic),
                         "generation", (json_int_t) m->generation,
                         "takeover", status_takeover_json(m),
                         "clients", (json_int_t) (m->clients ? m->clients->n_clients : 0),
                         "subscriptions", (json_int_t) (m->clients ? m->clients->n_streams : 0),
                         "proxied_clients", (json_int_t) (m->proxy ? m->proxy->n_clients : 0),
                         "registrations", regs,
                         "cgroup",
                         "v2_root", m->v2->path,
                         "v1_memory_root", m->v1->path,
                         "recursive_protection", config_recursive_protection(m->config, m->mount_recursiveprot),
                         "counters", counters,
                         "fast_triggers",
                         "max_per_user", (json_int_t) m->config->max_fast_triggers_per_user,
                         "users", status_fast_users_json(m),
                         "reclaim", reclaim_controller_status_json(m->reclaim, cgroup_view_root(view, false)),
                         "dbus", low_memory_monitor_status_json(m->lmm, m->bus),
                         "prekill", status_prekill_json(m));
}

static void write_gauge(struct evbuffer *out, const char *name, const char *help, uint64_t v) {
        metrics_write_header(out, name, "gauge", help);
        metrics_write_sample_u64(out, name, NULL, 0, v);
}

/* Client gauges: connected clients, subscriptions and proxied clients. */
static void status_write_client_metrics(struct evbuffer *out, const StatusContext *m) {
        write_gauge(out, "pressured_clients", "Connected clients.", m->clients ? m->clients->n_clients : 0);
        write_gauge(out, "pressured_subscriptions", "Active subscriptions.", m->clients ? m->clients->n_streams : 0);
        write_gauge(out, "pressured_proxied_clients", "Clients of the memory-pressure socket.",
                    m->proxy ? m->proxy->n_clients : 0);
}

/* The kernel registrations in use, by source type. */
static void status_registrations_by_source(const StatusContext *m, uint64_t ret[static _SOURCE_MAX]) {
        Registration *r;

        memset(ret, 0, _SOURCE_MAX * sizeof(ret[0]));
        LIST_FOREACH(registrations, r, m->registry->registrations)
                ret[r->src.type]++;
}

/* pressured_registrations: kernel registrations in use, one sample per source type. */
static void status_write_registration_metrics(struct evbuffer *out, const StatusContext *m) {
        uint64_t by_source[_SOURCE_MAX];

        status_registrations_by_source(m, by_source);

        metrics_write_header(out, "pressured_registrations", "gauge", "Kernel registrations in use, by source.");
        for (int t = 0; t < _SOURCE_MAX; t++) {
                MetricsLabel l = { "source", source_type_to_string((SourceType) t) };
                metrics_write_sample_u64(out, "pressured_registrations", &l, 1, by_source[t]);
        }
}

/* One pressured_*_total counter per Counter, then the delivery latency histogram. */
static void status_write_counter_metrics(struct evbuffer *out, const StatusContext *m, const uint64_t *values) {
        for (Counter c = 0; c < _COUNTER_MAX; c++) {
                const CounterInfo *i = counter_info(c), *prev = c > 0 ? counter_info(c - 1) : NULL;
                MetricsLabel by = { "by", i->by };
                char name[64];

                snprintf(name, sizeof(name), "pressured_%s_total", i->family ?: i->name);
                /* A labelled family has one header before its first counter. */
                if (!i->family || !prev || !streq_ptr(prev->family, i->family))
                        metrics_write_header(out, name, "counter", i->help);
                metrics_write_sample_u64(out, name, i->family ? &by : NULL, i->family ? 1 : 0, values[c]);
        }
        metrics_write_header(out, "pressured_takeovers_total", "counter",
                             "Times a new process took over the daemon's connections and registrations.");
        metrics_write_sample_u64(out, "pressured_takeovers_total", NULL, 0, m->generation);
        metrics_histogram_write(out, "pressured_delivery_latency_seconds",
                                "Time from reading a notification to queueing it for a subscriber.",
                                &m->counters->latency);
}

/* pressured_prekill_total: the calls of the pre-kill hook answered, by why. */
static void status_write_prekill_metrics(struct evbuffer *out, const StatusContext *m) {
        static const PrekillBook none = {};
        const PrekillBook *b = m->prekill ?: &none;
        const struct {
                const char *outcome;
                uint64_t value;
        } rows[] = {
                { "acknowledged", b->counters.acknowledged },
                { "deadline", b->counters.deadline_reached },
                { "nobody", b->counters.nobody },
        };

        metrics_write_header(out, "pressured_prekill_total", "counter",
                             "Calls of systemd-oomd's pre-kill hook answered: every warned subscriber acknowledged "
                             "or went away, the deadline passed, or nobody was to be warned.");
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                MetricsLabel l = { "outcome", rows[i].outcome };

                metrics_write_sample_u64(out, "pressured_prekill_total", &l, 1, rows[i].value);
        }
}

/* pressured_fast_triggers per uid, and the per-user limit. */
static void status_write_fast_trigger_metrics(struct evbuffer *out, const StatusContext *m) {
        uid_t uid = 0;

        metrics_write_header(out, "pressured_fast_triggers", "gauge",
                             "PSI registrations with a window that is not a multiple of 2 s, per uid they count against.");
        for (bool after = false; next_fast_uid(m, after, uid, &uid); after = true) {
                char u[16];
                MetricsLabel l = { "uid", u };

                snprintf(u, sizeof(u), "%u", (unsigned) uid);
                metrics_write_sample_u64(out, "pressured_fast_triggers", &l, 1, registry_fast_count(m->registry, uid));
        }
        write_gauge(out, "pressured_fast_triggers_max_per_user", "[Policy] MaxFastTriggersPerUser=.",
                    m->config->max_fast_triggers_per_user);
}

/* pressured_episode_active, one series per registration that tracks episodes. */
static void status_write_episode_metrics(struct evbuffer *out, const StatusContext *m) {
        Registration *r;

        metrics_write_header(out, "pressured_episode_active", "gauge",
                             "1 while a pressure episode of the registration is active, else 0.");
        LIST_FOREACH(registrations, r, m->registry->registrations) {
                char trigger[PSI_TRIGGER_FORMAT_MAX + 32];

                if (!registration_has_episodes(r))
                        continue;
                if (r->src.type == SOURCE_PSI) {
                        if (psi_trigger_format(&r->src.used, PSI_TRIGGER_FORMAT_CONFIG, trigger, sizeof(trigger)) < 0)
                                snprintf(trigger, sizeof(trigger), "?");
                } else
                        snprintf(trigger, sizeof(trigger), "%s,%s", level_to_string(r->src.vm_level),
                                 vmpressure_mode_to_string(r->src.vm_mode));
                /* Registrations differ by trigger: it is a label, so every series is unique. */
                MetricsLabel l[4] = { { "cgroup", r->src.cgroup }, { "source", source_type_to_string(r->src.type) },
                                      { "resource", resource_to_string(r->src.resource) }, { "trigger", trigger } };
                metrics_write_sample_u64(out, "pressured_episode_active", l, 4, r->episode.active ? 1 : 0);
        }
}

/*
 * pressured_psi_some_avg10_ratio, one series per registration whose PSI
 * can be read; no header at all when none can.
 */
static void status_write_psi_metrics(struct evbuffer *out, const StatusContext *m) {
        Registration *r;
        bool psi_header = false;

        LIST_FOREACH(registrations, r, m->registry->registrations) {
                PsiStats st;
                char window[32], threshold[32];

                if (source_read_psi(&r->src, &st) < 0)
                        continue;
                if (!psi_header) {
                        metrics_write_header(out, "pressured_psi_some_avg10_ratio", "gauge",
                                             "PSI some avg10 of registered cgroups and resources, as a ratio.");
                        psi_header = true;
                }
                snprintf(window, sizeof(window), "%" PRIu64, r->src.used.window_us);
                snprintf(threshold, sizeof(threshold), "%" PRIu64, r->src.used.threshold_us);
                /* One series per registration: every field of the trigger is a label. */
                MetricsLabel l[5] = { { "cgroup", r->src.cgroup }, { "resource", resource_to_string(r->src.resource) },
                                      { "stall", psi_stall_to_string(r->src.used.stall) },
                                      { "threshold_us", threshold }, { "window_us", window } };
                metrics_write_sample(out, "pressured_psi_some_avg10_ratio", l, 5, st.some.avg10 / 10000.0);
        }
}

void status_report_daemon(const StatusContext *m, ReportDaemon *ret) {
        *ret = (ReportDaemon) {
                .takeovers = m->generation,
                .clients = m->clients ? m->clients->n_clients : 0,
                .subscriptions = m->clients ? m->clients->n_streams : 0,
                .proxied_clients = m->proxy ? m->proxy->n_clients : 0,
        };
        status_counters(m, ret->counters);
        status_registrations_by_source(m, ret->registrations);
        if (m->prekill) {
                ret->prekill = m->prekill->counters;
                ret->prekill_pending = m->prekill->n_pending;
        }
}

/*
 * The per-cgroup families ([Metrics] Cgroups=) are read for each scrape,
 * off the loop (metrics.c): nothing is kept or watched between scrapes.
 * Both hierarchies where the host has them (the v1 memory hierarchy
 * gives what a hybrid host's cgroup2 has no memory controller for);
 * nothing at all without patterns or any hierarchy.
 */
bool status_metrics_walk(void *userdata, int *ret_root_fd, int *ret_v1_root_fd, CgroupGlobs **ret_globs,
                         size_t *ret_max) {
        const StatusContext *m = userdata;
        int v2 = m->v2 ? m->v2->fd : -1, v1 = m->v1 ? m->v1->fd : -1, r;

        if (!m->config->metrics_cgroups || (v2 < 0 && v1 < 0))
                return false;
        r = cgroup_globs_parse(m->config->metrics_cgroups, ret_globs, NULL);
        if (r < 0) {
                log_ratelimited(LOG_WARNING, -r, NULL, 60, 1, "Failed to parse [Metrics] Cgroups=, ignoring: %m");
                return false;
        }
        *ret_root_fd = v2;
        *ret_v1_root_fd = v1;
        *ret_max = m->config->metrics_max_cgroups;
        return true;
}

void status_write_metrics(struct evbuffer *out, struct evbuffer *cgroups, void *userdata) {
        const StatusContext *m = userdata;
        uint64_t values[_COUNTER_MAX];

        status_counters(m, values);

        status_write_client_metrics(out, m);
        status_write_registration_metrics(out, m);
        status_write_counter_metrics(out, m, values);
        status_write_prekill_metrics(out, m);
        status_write_fast_trigger_metrics(out, m);
        status_write_episode_metrics(out, m);
        status_write_psi_metrics(out, m);
        if (cgroups)
                (void) evbuffer_add_buffer(out, cgroups);
        reclaim_controller_write_metrics(out, m->reclaim);
        low_memory_monitor_write_metrics(out, m->lmm, m->bus);
        metrics_write_process(out);
}
