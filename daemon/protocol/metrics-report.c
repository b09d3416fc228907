/* SPDX-License-Identifier: MIT */
/* pressured's io.systemd.Metrics families and their JSON: see metrics-report.h. */
#include <event2/buffer.h>
#include <jansson.h>
#include <stdio.h>

#include "cgroup.h"
#include "metrics-report.h"
#include "trigger.h"
#include "util.h"
#include "varlink.h"

#define PREFIX "io.pressured."

typedef struct ReportFamily {
        const char *name;
        const char *type;               /* a MetricFamilyType */
        const char *description;
} ReportFamily;

/* The per-cgroup families, by name; the index names each in put_*(). */
enum {
        FAMILY_HEADROOM,
        FAMILY_MEMORY_CURRENT,
        FAMILY_MEMORY_EVENTS,
        FAMILY_PRESSURE_AVG10,
        FAMILY_PRESSURE_AVG60,
        FAMILY_PRESSURE_AVG300,
        FAMILY_PRESSURE_STALL,
        FAMILY_PROTECTION_MIN,
        FAMILY_PROTECTION_LOW,
        FAMILY_PROTECTION_STATE,
        FAMILY_RECLAIM,
        _FAMILY_CGROUP_MAX,
};

static const ReportFamily cgroup_families[_FAMILY_CGROUP_MAX] = {
        [FAMILY_HEADROOM] = { PREFIX "Headroom.Bytes", "gauge",
                "Per cgroup: how much more memory it can be charged before its nearest memory.high or memory.max "
                "(its own or an ancestor's), or MemAvailable of the machine if that is less, in bytes" },
        [FAMILY_MEMORY_CURRENT] = { PREFIX "Memory.CurrentBytes", "gauge",
                "Per cgroup: memory charged to it and its descendants (memory.current; in the cgroup v1 memory "
                "hierarchy memory.usage_in_bytes), in bytes" },
        [FAMILY_MEMORY_EVENTS] = { PREFIX "Memory.Events", "counter",
                "Per cgroup: the events of its memory.events, it and its descendants "
                "(type=low|high|max|oom|oom_kill|oom_group_kill; in the cgroup v1 memory hierarchy oom_kill "
                "alone, from memory.oom_control)" },
        [FAMILY_PRESSURE_AVG10] = { PREFIX "Pressure.Avg10", "gauge",
                "Per cgroup: share of the last 10 s its tasks stalled on a resource (avg10 of its PSI file), "
                "in percent (resource=memory|io|cpu, type=some|full)" },
        [FAMILY_PRESSURE_AVG60] = { PREFIX "Pressure.Avg60", "gauge",
                "Per cgroup: share of the last 60 s its tasks stalled on a resource (avg60 of its PSI file), "
                "in percent (resource=memory|io|cpu, type=some|full)" },
        [FAMILY_PRESSURE_AVG300] = { PREFIX "Pressure.Avg300", "gauge",
                "Per cgroup: share of the last 300 s its tasks stalled on a resource (avg300 of its PSI file), "
                "in percent (resource=memory|io|cpu, type=some|full)" },
        [FAMILY_PRESSURE_STALL] = { PREFIX "Pressure.StallSeconds", "counter",
                "Per cgroup: time its tasks stalled on a resource (total of its PSI file), in seconds "
                "(resource=memory|io|cpu, type=some|full)" },
        [FAMILY_PROTECTION_MIN] = { PREFIX "Protection.EffectiveMinBytes", "gauge",
                "Per cgroup: the memory.min protection it gets, its own as its ancestors pass it on, computed "
                "as the kernel does, in bytes" },
        [FAMILY_PROTECTION_LOW] = { PREFIX "Protection.EffectiveLowBytes", "gauge",
                "Per cgroup: the memory.low protection it gets, its own as its ancestors pass it on, computed "
                "as the kernel does, in bytes" },
        [FAMILY_PROTECTION_STATE] = { PREFIX "Protection.State", "string",
                "Per cgroup: min while its usage is within its effective min protection, low within its "
                "effective low, else none" },
        [FAMILY_RECLAIM] = { PREFIX "Reclaim.ReclaimedBytes", "counter",
                "Per cgroup under [Reclaim]: memory the kernel reclaimed at the proactive reclaim controller's "
                "request, in bytes" },
};

/* The daemon's own families beyond the counter table. */
enum {
        FAMILY_CLIENTS,
        FAMILY_PREKILL,
        FAMILY_PREKILL_PENDING,
        FAMILY_PREKILL_WARNED,
        FAMILY_PROXIED_CLIENTS,
        FAMILY_REGISTRATIONS,
        FAMILY_SUBSCRIPTIONS,
        FAMILY_TAKEOVERS,
        _FAMILY_DAEMON_MAX,
};

static const ReportFamily daemon_families[_FAMILY_DAEMON_MAX] = {
        [FAMILY_CLIENTS] = { PREFIX "Daemon.Clients", "gauge", "Connected varlink clients" },
        [FAMILY_PREKILL] = { PREFIX "Daemon.Prekill", "counter",
                "Calls of systemd-oomd's pre-kill hook answered: when every warned subscriber acknowledged or "
                "went away, at the deadline, or at once with nobody to warn (type=acknowledged|deadline|nobody)" },
        [FAMILY_PREKILL_PENDING] = { PREFIX "Daemon.PrekillPending", "gauge",
                "Calls of systemd-oomd's pre-kill hook waiting for their answer" },
        [FAMILY_PREKILL_WARNED] = { PREFIX "Daemon.PrekillWarned", "counter",
                "Calls of systemd-oomd's pre-kill hook that warned at least one subscriber" },
        [FAMILY_PROXIED_CLIENTS] = { PREFIX "Daemon.ProxiedClients", "gauge",
                "Clients of the memory, cpu and io pressure sockets" },
        [FAMILY_REGISTRATIONS] = { PREFIX "Daemon.Registrations", "gauge",
                "Kernel registrations in use (source=psi|vmpressure|memory_events|protection|kills)" },
        [FAMILY_SUBSCRIPTIONS] = { PREFIX "Daemon.Subscriptions", "gauge", "Active subscriptions" },
        [FAMILY_TAKEOVERS] = { PREFIX "Daemon.Takeovers", "counter",
                "Times a new process took over the daemon's connections and registrations" },
};

static const ReportFamily omitted_family = { REPORT_FAMILY_OMITTED, "gauge",
        "Cgroups matching [Metrics] Cgroups= that this List leaves out: beyond [Metrics] MaxCgroups=, or "
        "beyond what [Report] MaxMetrics= holds (whole cgroups, the last in walk order first)" };

/* The walk's resources as the protocol names them. */
static const Resource cgroup_resources[_CGROUP_RESOURCE_MAX] = {
        [CGROUP_RESOURCE_MEMORY] = RESOURCE_MEMORY,
        [CGROUP_RESOURCE_IO] = RESOURCE_IO,
        [CGROUP_RESOURCE_CPU] = RESOURCE_CPU,
};

/* What writes the messages: the first failure stops it. */
typedef struct Writer {
        struct evbuffer *out;
        int error;
} Writer;

/* One message: @params (stolen; NULL: out of memory), "continues" unless @last. */
static void put_message(Writer *w, json_t *params, bool last) {
        size_t n;
        char *msg;

        if (w->error < 0 || !params) {
                json_decref(params);
                w->error = -ENOMEM;
                return;
        }
        msg = varlink_reply_new_decimal(params, !last, &n);
        if (!msg || evbuffer_add(w->out, msg, n) < 0)
                w->error = -ENOMEM;
        free(msg);
}

/* One metric of List: @object and @fields may be NULL; @fields and @value are stolen. */
static void put(Writer *w, const char *name, const char *object, json_t *fields, json_t *value, bool last) {
        if (!value) {
                json_decref(fields);
                return put_message(w, NULL, last);
        }
        put_message(w, json_pack("{s:s, s:s*, s:o*, s:o}", "name", name, "object", object, "fields", fields,
                                 "value", value), last);
}

/* A count or a size; values beyond the JSON integer range ("max") as the largest one. */
static json_t *json_u64(uint64_t v) {
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}

/* "io.pressured.Daemon." and @snake ("events_read") in UpperCamelCase ("EventsRead"). */
static void counter_family_name(const char *snake, char *buf, size_t size) {
        size_t o = (size_t) snprintf(buf, size, PREFIX "Daemon.");
        bool up = true;

        for (const char *p = snake; *p && o + 1 < size; p++) {
                if (*p == '_') {
                        up = true;
                        continue;
                }
                buf[o++] = up && *p >= 'a' && *p <= 'z' ? (char) (*p - 'a' + 'A') : *p;
                up = false;
        }
        buf[o] = 0;
}

/* Whether counter @c starts its family (a labelled family's counters are adjacent in the table). */
static bool counter_starts_family(Counter c) {
        const CounterInfo *i = counter_info(c), *prev = c > 0 ? counter_info(c - 1) : NULL;

        return !i->family || !prev || !streq_ptr(prev->family, i->family);
}

/* The description of the family counter @c starts: its help, and a labelled one's "by" values. */
static void counter_description(Counter c, char *buf, size_t size) {
        const CounterInfo *i = counter_info(c);
        size_t o, help = strlen(i->help);

        /* Without its full stop, as systemd's descriptions are written. */
        if (help > 0 && i->help[help - 1] == '.')
                help--;
        o = (size_t) snprintf(buf, size, "%.*s", (int) help, i->help);
        for (Counter k = c; i->family && k < _COUNTER_MAX && o < size; k++) {
                const CounterInfo *ki = counter_info(k);

                if (!streq_ptr(ki->family, i->family))
                        break;
                o += (size_t) snprintf(buf + o, size - o, "%s%s", k == c ? " (by=" : "|", ki->by);
        }
        if (i->family && o < size)
                snprintf(buf + o, size - o, ")");
}

/* The pre-kill hook's calls: answered by why, waiting, and those that warned somebody. */
static void put_prekill(Writer *w, const ReportDaemon *d) {
        const struct {
                const char *type;
                uint64_t value;
        } answered[] = {
                { "acknowledged", d->prekill.acknowledged },
                { "deadline", d->prekill.deadline_reached },
                { "nobody", d->prekill.nobody },
        };

        for (size_t i = 0; i < ELEMENTSOF(answered); i++)
                put(w, daemon_families[FAMILY_PREKILL].name, NULL, json_pack("{s:s}", "type", answered[i].type),
                    json_u64(answered[i].value), false);
        put(w, daemon_families[FAMILY_PREKILL_PENDING].name, NULL, NULL, json_u64(d->prekill_pending), false);
        put(w, daemon_families[FAMILY_PREKILL_WARNED].name, NULL, NULL, json_u64(d->prekill.warned), false);
}

static void put_daemon(Writer *w, const ReportDaemon *d) {
        char name[128];

        for (Counter c = 0; c < _COUNTER_MAX; c++) {
                const CounterInfo *i = counter_info(c);

                counter_family_name(i->family ?: i->name, name, sizeof(name));
                put(w, name, NULL, i->family ? json_pack("{s:s}", "by", i->by) : NULL, json_u64(d->counters[c]),
                    false);
        }
        put(w, daemon_families[FAMILY_CLIENTS].name, NULL, NULL, json_u64(d->clients), false);
        put_prekill(w, d);
        put(w, daemon_families[FAMILY_PROXIED_CLIENTS].name, NULL, NULL, json_u64(d->proxied_clients), false);
        for (SourceType t = 0; t < _SOURCE_MAX; t++)
                put(w, daemon_families[FAMILY_REGISTRATIONS].name, NULL,
                    json_pack("{s:s}", "source", source_type_to_string(t)), json_u64(d->registrations[t]), false);
        put(w, daemon_families[FAMILY_SUBSCRIPTIONS].name, NULL, NULL, json_u64(d->subscriptions), false);
        put(w, daemon_families[FAMILY_TAKEOVERS].name, NULL, NULL, json_u64(d->takeovers), false);
}

/* The daemon's own metrics: one per counter, one per family of its own, but per source and per pre-kill answer. */
static size_t daemon_metrics(void) {
        return _COUNTER_MAX + (_FAMILY_DAEMON_MAX - 2) + _SOURCE_MAX + 3;
}

/* A PSI line's four metrics: its total and its three averages. */
static void put_psi_line(Writer *w, const char *object, CgroupResource r, PsiStall stall, const PsiLine *l) {
        static const int families[] = { FAMILY_PRESSURE_STALL, FAMILY_PRESSURE_AVG10, FAMILY_PRESSURE_AVG60,
                                        FAMILY_PRESSURE_AVG300 };
        const double values[] = { (double) l->total_us / 1e6, l->avg10 / 100.0, l->avg60 / 100.0,
                                  l->avg300 / 100.0 };

        for (size_t i = 0; i < ELEMENTSOF(families); i++)
                put(w, cgroup_families[families[i]].name, object,
                    json_pack("{s:s, s:s}", "resource", resource_to_string(cgroup_resources[r]), "type",
                              psi_stall_to_string(stall)),
                    json_real(values[i]), false);
}

static void put_cgroup_psi(Writer *w, const char *object, const CgroupSample *s) {
        for (CgroupResource r = 0; r < _CGROUP_RESOURCE_MAX; r++) {
                if (!s->has_psi[r])
                        continue;
                put_psi_line(w, object, r, PSI_STALL_SOME, &s->psi[r].some);
                if (s->psi[r].has_full)
                        put_psi_line(w, object, r, PSI_STALL_FULL, &s->psi[r].full);
        }
}

/* Whether @s has oom kills but no memory.events: those of the v1 memory hierarchy. */
static bool v1_oom_kills(const CgroupSample *s) {
        return !s->has_events && s->has_oom_kills;
}

static void put_cgroup_memory(Writer *w, const char *object, const ReportCgroup *c) {
        const CgroupSample *s = c->sample;

        for (MemoryEventKey k = 0; s->has_events && k < _MEMORY_EVENT_MAX; k++)
                if (s->events.present & (1u << k))
                        put(w, cgroup_families[FAMILY_MEMORY_EVENTS].name, object,
                            json_pack("{s:s}", "type", memory_event_key_to_string(k)), json_u64(s->events.value[k]),
                            false);
        if (v1_oom_kills(s))
                put(w, cgroup_families[FAMILY_MEMORY_EVENTS].name, object,
                    json_pack("{s:s}", "type", memory_event_key_to_string(MEMORY_EVENT_OOM_KILL)),
                    json_u64(s->oom_kills), false);
        if (s->has_memory_current)
                put(w, cgroup_families[FAMILY_MEMORY_CURRENT].name, object, NULL, json_u64(s->memory_current),
                    false);
        if (c->has_protection) {
                put(w, cgroup_families[FAMILY_PROTECTION_MIN].name, object, NULL, json_u64(c->effective_min), false);
                put(w, cgroup_families[FAMILY_PROTECTION_LOW].name, object, NULL, json_u64(c->effective_low), false);
                put(w, cgroup_families[FAMILY_PROTECTION_STATE].name, object, NULL,
                    json_string(protection_state_to_string(c->protection_state)), false);
        }
        if (c->has_headroom)
                put(w, cgroup_families[FAMILY_HEADROOM].name, object, NULL, json_u64(c->headroom_bytes), false);
        if (c->has_reclaim)
                put(w, cgroup_families[FAMILY_RECLAIM].name, object, NULL, json_u64(c->reclaimed_bytes), false);
}

bool report_cgroup_wants_memory(const CgroupSample *s) {
        return s->has_memory_current;
}

bool report_cgroup_wants_protection(const CgroupSample *s) {
        return s->has_memory_current && !s->memory_v1;
}

size_t report_cgroup_metrics(const ReportCgroup *c) {
        const CgroupSample *s = c->sample;
        size_t n = 0;

        for (CgroupResource r = 0; r < _CGROUP_RESOURCE_MAX; r++)
                if (s->has_psi[r])
                        n += 4 * (s->psi[r].has_full ? 2 : 1);
        for (MemoryEventKey k = 0; s->has_events && k < _MEMORY_EVENT_MAX; k++)
                n += !!(s->events.present & (1u << k));
        n += v1_oom_kills(s);
        if (report_cgroup_wants_memory(s))
                n += 2;   /* current, headroom */
        if (report_cgroup_wants_protection(s))
                n += 3;   /* the two effective protections, the state */
        return n + (c->has_reclaim ? 1 : 0);
}

size_t report_cgroup_budget(size_t max_metrics) {
        size_t own = daemon_metrics() + 1;

        return max_metrics > own ? max_metrics - own : 0;
}

int report_write_list(struct evbuffer *out, const ReportDaemon *d, const ReportCgroup *cgroups, size_t n,
                      uint64_t omitted) {
        Writer w = { .out = out };

        put_daemon(&w, d);
        for (size_t i = 0; i < n && w.error >= 0; i++) {
                const char *path = cgroups[i].sample->path, *object = cgroup_path_unit(path) ?: path;

                if (!json_string_writable(object)) {
                        omitted++;
                        continue;
                }
                put_cgroup_psi(&w, object, cgroups[i].sample);
                put_cgroup_memory(&w, object, &cgroups[i]);
        }
        put(&w, omitted_family.name, NULL, NULL, json_u64(omitted), true);
        return w.error;
}

static void put_family(Writer *w, const char *name, const char *type, const char *description, bool last) {
        put_message(w, json_pack("{s:s, s:s, s:s}", "name", name, "description", description, "type", type), last);
}

int report_write_describe(struct evbuffer *out) {
        Writer w = { .out = out };
        char name[128], description[512];

        for (Counter c = 0; c < _COUNTER_MAX; c++) {
                if (!counter_starts_family(c))
                        continue;
                counter_family_name(counter_info(c)->family ?: counter_info(c)->name, name, sizeof(name));
                counter_description(c, description, sizeof(description));
                put_family(&w, name, "counter", description, false);
        }
        for (size_t i = 0; i < ELEMENTSOF(daemon_families); i++)
                put_family(&w, daemon_families[i].name, daemon_families[i].type, daemon_families[i].description,
                           false);
        for (size_t i = 0; i < ELEMENTSOF(cgroup_families); i++)
                put_family(&w, cgroup_families[i].name, cgroup_families[i].type, cgroup_families[i].description,
                           false);
        put_family(&w, omitted_family.name, omitted_family.type, omitted_family.description, true);
        return w.error;
}
