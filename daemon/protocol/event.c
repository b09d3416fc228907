/* SPDX-License-Identifier: MIT */
/* Event JSON builders and the shared serialized body of an event. */
#include <inttypes.h>

#include "event.h"
#include "util.h"
#include "varlink.h"

/*
 * Every builder returns either the complete object or NULL: a field that
 * could not be added fails the whole event (a subscriber must never get
 * an event missing a field its kind always has). Arguments documented as
 * stolen are released on every path.
 */

/* Add @v (stolen, also on failure; NULL: an allocation failed) as @key of @o. */
static bool set(json_t *o, const char *key, json_t *v) {
        return json_object_set_new(o, key, v) == 0;
}

/* @o if @ok, else NULL after releasing @o. */
static json_t *finish(json_t *o, bool ok) {
        if (ok)
                return o;
        json_decref(o);
        return NULL;
}

json_t *event_trigger_new(const EventTrigger *t) {
        json_t *o = json_object();
        bool ok = o;

        if (ok && t->type == SOURCE_PSI)
                ok = set(o, "psi",
                         json_pack("{s:s, s:I, s:I}", "stall", psi_stall_to_string(t->psi.stall),
                                   "threshold_us", (json_int_t) t->psi.threshold_us,
                                   "window_us", (json_int_t) t->psi.window_us));
        else if (ok && t->type == SOURCE_VMPRESSURE)
                ok = set(o, "vmpressure",
                         json_pack("{s:s, s:s}", "level", level_to_string(t->vm_level),
                                   "mode", vmpressure_mode_to_string(t->vm_mode)));
        if (ok && t->level >= 0 && t->level < _LEVEL_MAX)
                ok = set(o, "level", json_string(level_to_string(t->level)));
        return finish(o, ok);
}

json_t *psi_stats_to_json(const PsiStats *s) {
        json_t *o = json_pack("{s:f, s:f, s:f, s:I}",
                              "some_avg10", s->some.avg10 / 100.0,
                              "some_avg60", s->some.avg60 / 100.0,
                              "some_avg300", s->some.avg300 / 100.0,
                              "some_total_us", (json_int_t) s->some.total_us);
        bool ok = o;

        if (ok && s->has_full)
                ok = set(o, "full_avg10", json_real(s->full.avg10 / 100.0)) &&
                     set(o, "full_avg60", json_real(s->full.avg60 / 100.0)) &&
                     set(o, "full_avg300", json_real(s->full.avg300 / 100.0)) &&
                     set(o, "full_total_us", json_integer((json_int_t) s->full.total_us));
        return finish(o, ok);
}

json_t *memory_events_to_json(const MemoryEvents *e) {
        json_t *o = json_object();
        bool ok = o;

        for (int k = 0; ok && k < _MEMORY_EVENT_MAX; k++)
                if (e->present & (1u << k))
                        ok = set(o, memory_event_key_to_string((MemoryEventKey) k),
                                 json_integer((json_int_t) e->value[k]));
        return finish(o, ok);
}

json_t *event_subscribed_new(const char *cgroup, SourceType source, Resource resource, json_t *trigger,
                             bool adjusted, const char *adjusted_reason, json_t *state) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "kind", IDL_EVENT_KIND_NAME(SUBSCRIBED), "cgroup", cgroup,
                              "source", source_type_to_string(source), "resource", resource_to_string(resource));
        bool ok = o;

        /* Field by field rather than json_pack()'s "o", so that @trigger and
         * @state are released on every path whatever fails. */
        if (ok)
                ok = set(o, "trigger", trigger ?: json_object());
        else
                json_decref(trigger);
        if (ok)
                ok = set(o, "adjusted", json_boolean(adjusted));
        if (ok && adjusted_reason)
                ok = set(o, "adjusted_reason", json_string(adjusted_reason));
        if (ok)
                ok = set(o, "state", state ?: json_object());
        else
                json_decref(state);
        return finish(o, ok);
}

/* The fields every event after "subscribed" starts with. */
static json_t *event_new(const char *kind, const char *cgroup, const char *source,
                         uint64_t realtime_us, uint64_t monotonic_us) {
        return json_pack("{s:s, s:s, s:s, s:I, s:I}", "kind", kind, "cgroup", cgroup,
                         "source", source, "time_us", (json_int_t) realtime_us,
                         "monotonic_us", (json_int_t) monotonic_us);
}

json_t *event_pressure_new(const char *cgroup, const char *source, Resource resource, json_t *psi,
                           uint64_t realtime_us, uint64_t monotonic_us) {
        json_t *o = event_new(IDL_EVENT_KIND_NAME(PRESSURE), cgroup, source, realtime_us, monotonic_us);
        bool ok = o;

        ok = ok && set(o, "resource", json_string(resource_to_string(resource)));
        if (ok && psi)
                ok = set(o, "psi", psi);
        else
                json_decref(psi);
        return finish(o, ok);
}

json_t *event_memory_events_new(const char *cgroup, const MemoryEvents *counters, const MemoryEvents *delta,
                                uint64_t realtime_us, uint64_t monotonic_us) {
        json_t *o = event_new(IDL_EVENT_KIND_NAME(MEMORY_EVENTS), cgroup, IDL_SOURCE_NAME(MEMORY_EVENTS),
                              realtime_us, monotonic_us);
        bool ok = o;

        ok = ok && set(o, "counters", memory_events_to_json(counters)) &&
             set(o, "delta", memory_events_to_json(delta));
        return finish(o, ok);
}

json_t *event_protection_new(const char *cgroup, const char *state, const char *previous, json_t *node,
                             uint64_t realtime_us, uint64_t monotonic_us) {
        json_t *o = event_new(IDL_EVENT_KIND_NAME(PROTECTION), cgroup, IDL_SOURCE_NAME(PROTECTION),
                              realtime_us, monotonic_us);
        bool ok = o;

        ok = ok && set(o, "state", json_string(state)) && set(o, "previous", json_string(previous));
        if (ok && node)
                ok = set(o, "node", node);
        else
                json_decref(node);
        return finish(o, ok);
}

json_t *event_killed_new(const char *cgroup, const char *by, const char *reason, uint64_t realtime_us,
                         uint64_t monotonic_us) {
        /* No "source": the kind says it, and "by" who killed. */
        return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "kind", IDL_EVENT_KIND_NAME(KILLED),
                         "cgroup", cgroup, "by", by,
                         "reason", reason, "time_us", (json_int_t) realtime_us,
                         "monotonic_us", (json_int_t) monotonic_us);
}

double event_peak_percent(uint32_t ppm) {
        return ppm / 10000.0;
}

json_t *event_episode_json(const EpisodeRecord *rec, bool psi, bool history, uint64_t now_us, uint64_t realtime_us) {
        uint64_t end = rec->end_us ? rec->end_us : now_us;
        json_t *o = json_pack("{s:I, s:I}", "events", (json_int_t) rec->events,
                              "duration_us", (json_int_t) (end > rec->start_us ? end - rec->start_us : 0));
        bool ok = o;

        if (ok && psi)
                /* Unknown for an episode of injected events only. */
                ok = set(o, "peak", rec->peak_known ? json_real(event_peak_percent(rec->peak)) : json_null());
        else if (ok && rec->peak > 0 && rec->peak <= _LEVEL_MAX)
                ok = set(o, "peak_level", json_string(level_to_string((Level) (rec->peak - 1))));
        if (!history)
                return finish(o, ok && set(o, "active_since_us", json_integer((json_int_t) rec->start_us)));
        /* Wall-clock times from the monotonic ones, as of now. */
        ok = ok && set(o, "start_us", json_integer((json_int_t) rec->start_us)) &&
             set(o, "end_us", json_integer((json_int_t) rec->end_us)) &&
             set(o, "start_time_us", json_integer((json_int_t) (realtime_us - (now_us - rec->start_us)))) &&
             set(o, "end_time_us", json_integer((json_int_t) (realtime_us - (now_us - rec->end_us))));
        return finish(o, ok);
}

json_t *event_cleared_new(const char *cgroup, SourceType source, Resource resource, const EpisodeRecord *rec,
                          uint64_t realtime_us, uint64_t monotonic_us) {
        json_t *o = event_new(IDL_EVENT_KIND_NAME(CLEARED), cgroup, source_type_to_string(source),
                              realtime_us, monotonic_us);
        bool ok = o;

        ok = ok && set(o, "resource", json_string(resource_to_string(resource))) && set(o, "duration_us", json_integer((json_int_t) (rec->end_us > rec->start_us ?
                                                                     rec->end_us - rec->start_us : 0))) &&
             set(o, "events", json_integer((json_int_t) rec->events));
        if (ok && source == SOURCE_PSI)
                ok = set(o, "peak", rec->peak_known ? json_real(event_peak_percent(rec->peak)) : json_null());
        else if (ok && rec->peak > 0 && rec->peak <= _LEVEL_MAX)
                ok = set(o, "peak_level", json_string(level_to_string((Level) (rec->peak - 1))));
        return finish(o, ok);
}

json_t *event_trigger_changed_new(const char *cgroup, SourceType source, Resource resource, json_t *trigger,
                                  bool adjusted, const char *adjusted_reason, uint64_t realtime_us,
                                  uint64_t monotonic_us) {
        json_t *o = event_new(IDL_EVENT_KIND_NAME(TRIGGER_CHANGED), cgroup, source_type_to_string(source),
                              realtime_us, monotonic_us);
        bool ok = o;

        ok = ok && set(o, "resource", json_string(resource_to_string(resource)));
        if (ok)
                ok = set(o, "trigger", trigger ?: json_object());
        else
                json_decref(trigger);
        ok = ok && set(o, "adjusted", json_boolean(adjusted));
        if (ok && adjusted_reason)
                ok = set(o, "adjusted_reason", json_string(adjusted_reason));
        return finish(o, ok);
}

char *event_removed_message(const char *cgroup, uint64_t seq, size_t *ret_size) {
        json_t *params = json_pack("{s:{s:s, s:s, s:I}}", "event", "kind", IDL_EVENT_KIND_NAME(REMOVED),
                                   "cgroup", cgroup, "seq", (json_int_t) seq);

        return params ? varlink_reply_new(params, false, ret_size) : NULL;
}

/* What a serialization fits into without a second pass; most events are far smaller. */
#define BODY_STACK_SIZE 2048

/* Serialize @event (stolen; NULL gives NULL) into a new Body with @flags. */
static Body *body_from_json(json_t *event, uint64_t monotonic_us, unsigned flags, int level) {
        _cleanup_free_ char *big = NULL;
        char stack[BODY_STACK_SIZE];
        const char *text = stack;
        size_t n;
        Body *b;

        if (!event)
                return NULL;
        n = json_dumpb(event, stack, sizeof(stack), VARLINK_JSON_FLAGS);
        /* Larger than the stack buffer (a deep protection node, a long path): size known, dump again. */
        if (n > sizeof(stack)) {
                big = malloc(n);
                if (big && json_dumpb(event, big, n, VARLINK_JSON_FLAGS) != n)
                        big = (free(big), NULL);
                text = big;
        }
        json_decref(event);
        /* The event object without its opening brace, closed by "}}" and the NUL:
         * the per-subscriber prefix supplies the envelope and the first fields. */
        b = text && n >= 2 ? malloc(sizeof(Body) + n + 2) : NULL;
        if (!b)
                return NULL;
        memcpy(b->data, text + 1, n - 1);
        b->data[n - 1] = '}';
        b->data[n] = '}';
        b->data[n + 1] = 0;
        b->size = n + 2;
        b->n_ref = 1;
        b->views = b->next_view = NULL;
        b->view_root = NULL;
        b->flags = flags;
        b->level = level;
        b->monotonic_us = monotonic_us;
        return b;
}

static json_t *json_bytes(uint64_t v, bool unlimited_is_null) {
        if (v == PROTECTION_UNLIMITED && unlimited_is_null)
                return json_null();
        /* Finite values beyond the JSON integer range cannot come from a kernel. */
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}

int protection_node_to_json(const ProtectionNode *node, json_t **ret) {
        _cleanup_free_ char *path = NULL;
        ProtectionValues v;
        json_t *o;
        int k;

        k = protection_node_path(node, &path);
        if (k < 0)
                return k;
        protection_node_get(node, &v);
        o = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}",
                      "cgroup", path,
                      "usage", json_bytes(v.usage, false),
                      "min", json_bytes(v.min, true),
                      "low", json_bytes(v.low, true),
                      "emin", json_bytes(v.emin, true),
                      "elow", json_bytes(v.elow, true),
                      "min_usage", json_bytes(v.min_usage, false),
                      "low_usage", json_bytes(v.low_usage, false),
                      "children_min_usage", json_bytes(v.children_min_usage, false),
                      "children_low_usage", json_bytes(v.children_low_usage, false),
                      "state", protection_state_to_string(v.state));
        if (!o)
                return json_string_writable(path) ? -ENOMEM : -EILSEQ;
        *ret = o;
        return 0;
}

int protection_node_append_json(const ProtectionNode *node, void *userdata) {
        json_t *o;
        int k;

        k = protection_node_to_json(node, &o);
        if (k == -EILSEQ)
                return 0;       /* a name JSON cannot carry: left out of the list */
        if (k >= 0 && json_array_append_new(userdata, o) < 0)
                k = -ENOMEM;
        return k;
}

/* @node as JSON; NULL for none, or when out of memory: the event goes without it. */
static json_t *node_json(const ProtectionNode *node) {
        json_t *j;

        return node && protection_node_to_json(node, &j) >= 0 ? j : NULL;
}

static json_t *pressure_json(const EventData *e) {
        const PressureSample *p = &e->pressure;
        bool injected = p->source < 0, ok = true;
        json_t *o, *psi = p->psi ? psi_stats_to_json(p->psi) : NULL;

        if (p->psi && !psi)
                return NULL;
        o = event_pressure_new(e->cgroup, injected ? IDL_SOURCE_NAME(INJECT) : source_type_to_string(p->source),
                               p->resource, psi, e->realtime_us, e->monotonic_us);
        if (o && p->level >= 0 && p->level < _LEVEL_MAX)
                ok = set(o, "level", json_string(level_to_string(p->level)));
        if (o && ok && injected)
                ok = set(o, "synthetic", json_true());
        /* A tracked cgroup's node rides along; without memory the event goes without it. */
        if (o && ok && p->protection) {
                json_t *node = node_json(p->protection);

                ok = !node || set(o, "protection", node);
        }
        return finish(o, ok);
}

static json_t *protection_json(const EventData *e) {
        /* Without memory for the node, the change is still worth reporting. */
        return event_protection_new(e->cgroup, protection_state_to_string(e->protection.state),
                                    protection_state_to_string(e->protection.previous),
                                    node_json(e->protection.node), e->realtime_us,
                                    e->monotonic_us);
}

/* The "kill_sources" and "unavailable_kill_sources" of @st into @o. */
static bool kills_state_json(json_t *o, const SubscribedState *st) {
        json_t *heard = json_array(), *missing = json_array();
        bool ok = heard && missing;

        if (ok && st->kernel_kills)
                ok = json_array_append_new(heard, json_string("kernel")) == 0;
        else if (ok)
                ok = json_array_append_new(missing, json_pack("{s:s, s:s}", "source", "kernel", "reason",
                                                              st->kernel_reason)) == 0;
        if (ok && st->oomd_kills)
                ok = json_array_append_new(heard, json_string("systemd-oomd")) == 0;
        else if (ok)
                ok = json_array_append_new(missing, json_pack("{s:s, s:s}", "source", "systemd-oomd", "reason",
                                                              st->oomd_reason)) == 0;
        if (!ok) {
                json_decref(heard);
                json_decref(missing);
                return false;
        }
        /* set() releases what it could not add; @missing is released here if it never gets there. */
        if (!set(o, "kill_sources", heard)) {
                json_decref(missing);
                return false;
        }
        return set(o, "unavailable_kill_sources", missing);
}

json_t *subscribed_state_json(const SubscribedState *st) {
        json_t *o = json_object();
        bool ok = o;

        if (ok && st->has_psi)
                ok = set(o, "psi", psi_stats_to_json(&st->psi));
        if (ok && st->has_counters)
                ok = set(o, "counters", memory_events_to_json(&st->counters));
        if (ok && st->node) {
                json_t *node;

                ok = protection_node_to_json(st->node, &node) >= 0 && set(o, "node", node);
        }
        if (ok && st->has_kills)
                ok = kills_state_json(o, st);
        if (ok && st->episode)
                ok = set(o, "episode", event_episode_json(st->episode, st->episode_psi, false, st->now_us,
                                                          st->realtime_us));
        return finish(o, ok);
}

/* A "level" event (LevelEvent) without "seq" and "missed", which the prefix adds. */
static json_t *level_json(const EventData *e) {
        const LevelChange *c = &e->level_change;

        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:I, s:I}", "kind", IDL_EVENT_KIND_NAME(LEVEL),
                         "cgroup", e->cgroup, "level", stream_level_to_string(c->level),
                         "headroom_bytes", c->headroom ? json_integer((json_int_t) *c->headroom) : json_null(),
                         "reclaim_target_bytes",
                         c->reclaim_target ? json_integer((json_int_t) *c->reclaim_target) : json_null(),
                         "time_us", (json_int_t) e->realtime_us, "monotonic_us", (json_int_t) e->monotonic_us);
}

/* A "prekill" event (PrekillEvent) without "seq" and "missed", which the prefix adds. */
static json_t *prekill_json(const EventData *e) {
        const PrekillSample *p = &e->prekill;

        return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "kind", IDL_EVENT_KIND_NAME(PREKILL),
                         "cgroup", e->cgroup, "by", p->by, "id", (json_int_t) p->id,
                         "deadline_us", (json_int_t) p->deadline_us, "time_us", (json_int_t) e->realtime_us,
                         "monotonic_us", (json_int_t) e->monotonic_us);
}

json_t *event_data_json(const EventData *e) {
        switch (e->kind) {
        case EVENT_PRESSURE:
                return pressure_json(e);
        case EVENT_MEMORY_EVENTS:
                return event_memory_events_new(e->cgroup, e->memory_events.counters, e->memory_events.delta,
                                               e->realtime_us, e->monotonic_us);
        case EVENT_PROTECTION:
                return protection_json(e);
        case EVENT_KILLED:
                return event_killed_new(e->cgroup, e->killed.by, e->killed.reason, e->realtime_us,
                                        e->monotonic_us);
        case EVENT_CLEARED:
                return event_cleared_new(e->cgroup, e->cleared.source, e->cleared.resource, e->cleared.episode,
                                         e->realtime_us, e->monotonic_us);
        case EVENT_TRIGGER_CHANGED: {
                const TriggerChange *t = &e->trigger_changed;

                return event_trigger_changed_new(e->cgroup, t->source, t->resource, event_trigger_new(&t->trigger),
                                                 t->adjusted_reason != NULL, t->adjusted_reason, e->realtime_us,
                                                 e->monotonic_us);
        }
        case EVENT_LEVEL:
                return level_json(e);
        case EVENT_PREKILL:
                return prekill_json(e);
        default:
                return NULL;
        }
}

Body *event_data_body(const EventData *e, uint64_t read_us) {
        unsigned flags = 0;
        int level = -1;

        if (e->kind == EVENT_PRESSURE && e->pressure.level >= 0 && e->pressure.level < _LEVEL_MAX) {
                flags |= BODY_HAS_LEVEL;
                level = (int) e->pressure.level;
        }
        if (e->kind == EVENT_CLEARED || e->kind == EVENT_TRIGGER_CHANGED || e->kind == EVENT_LEVEL ||
            e->kind == EVENT_PREKILL)
                flags |= BODY_NO_COUNT; /* these merge no notifications */
        return body_from_json(event_data_json(e), read_us, flags, level);
}

size_t event_prefix(char buf[static OUT_PREFIX_MAX], const Body *body, uint64_t seq, uint64_t missed, uint64_t count,
                    Level level) {
        bool has_level = level >= 0 && level < _LEVEL_MAX;
        int n;

        if (body->flags & BODY_NO_COUNT)
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",%s%s%s",
                             seq, missed, has_level ? "\"level\":\"" : "",
                             has_level ? level_to_string(level) : "", has_level ? "\"," : "");
        else if (has_level && !(body->flags & BODY_HAS_LEVEL))
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",\"level\":\"%s\",",
                             seq, missed, count, level_to_string(level));
        else
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",",
                             seq, missed, count);
        return (size_t) n;
}

int event_view_init(EventView *v, const char *root) {
        _cleanup_free_ char *quoted = NULL, *copy = NULL;
        json_t *str;
        size_t n;

        *v = (EventView) {};
        if (!root || streq(root, "/"))
                return 0;
        str = json_string(root);
        quoted = str ? json_dumps(str, JSON_ENCODE_ANY | VARLINK_JSON_FLAGS) : NULL;
        json_decref(str);
        copy = strdup(root);
        if (!quoted || !copy)
                return -ENOMEM;
        /* Drop the quotes: the escaped text is what appears inside a body. */
        n = strlen(quoted);
        memmove(quoted, quoted + 1, n - 2);
        quoted[n - 2] = 0;
        *v = (EventView) { .root = TAKE_PTR(copy), .json = TAKE_PTR(quoted), .json_len = n - 2 };
        return 0;
}

void event_view_done(EventView *v) {
        free(v->root);
        free(v->json);
        *v = (EventView) {};
}

#define CGROUP_KEY "\"cgroup\":\""

/*
 * Copy @size bytes of serialized JSON from @in to @out (room for @size
 * bytes: the copy is never longer) with every "cgroup" value at or beneath
 * @v's root shown relative to it. Returns the size of the copy.
 */
static size_t view_copy(const char *in, size_t size, char *out, const EventView *v) {
        const size_t klen = strlen(CGROUP_KEY);
        const char *p = in, *end = in + size, *m;
        char *o = out;

        /* Each change takes the root (at least two bytes) out and puts at most "/" in. */
        while ((m = memmem(p, (size_t) (end - p), CGROUP_KEY, klen))) {
                const char *val = m + klen, *after = val + v->json_len;

                memcpy(o, p, (size_t) (val - p));
                o += val - p;
                p = val;
                if ((size_t) (end - val) <= v->json_len || memcmp(val, v->json, v->json_len) != 0 ||
                    (*after != '"' && *after != '/'))
                        continue;
                if (*after == '"')
                        *o++ = '/';
                p = after;
        }
        memcpy(o, p, (size_t) (end - p));
        o += end - p;
        return (size_t) (o - out);
}

Body *event_body_view(Body *body, const EventView *v) {
        Body *out;

        if (!v->root)
                return body_ref(body);
        /* Every peer with this root gets the copy the first one made. */
        for (out = body->views; out; out = out->next_view)
                if (streq(out->view_root, v->root))
                        return body_ref(out);
        out = body_new(body->data, body->size);
        if (!out)
                return NULL;
        out->view_root = strdup(v->root);
        if (!out->view_root)
                return body_unref(out);
        out->size = view_copy(body->data, body->size, out->data, v);
        out->flags = body->flags;
        out->level = body->level;
        out->monotonic_us = body->monotonic_us;
        /* @body keeps it for the next peer with this root, the caller gets a reference. */
        out->next_view = body->views;
        body->views = out;
        return body_ref(out);
}

char *event_message_view(char *msg, size_t *size, const EventView *v) {
        char *out;

        if (!msg || !v->root)
                return msg;
        out = malloc(*size);
        if (out)
                *size = view_copy(msg, *size, out, v);
        free(msg);
        return out;
}
