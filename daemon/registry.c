/* SPDX-License-Identifier: MIT */
/*
 * Registrations and subscriptions: the lazy, shared, reference-counted
 * kernel registrations, and the fan-out of one serialized event to all
 * their subscribers, with per-subscriber drop accounting and coalescing.
 */
#include <inttypes.h>
#include <sys/resource.h>

#include "log.h"
#include "manager.h"

static const char *const source_names[_SOURCE_MAX] = {
        [SOURCE_PSI] = "psi",
        [SOURCE_VMPRESSURE] = "vmpressure",
        [SOURCE_MEMORY_EVENTS] = "memory_events",
        [SOURCE_PROTECTION] = "protection",
};

const char *source_type_to_string(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? source_names[t] : NULL;
}

int verror(VarlinkError *e, int r, const char *name, json_t *params) {
        json_decref(e->parameters);
        e->name = name;
        e->parameters = params ? params : json_object();
        return r;
}

int verror_open_failed(VarlinkError *e, int err, const char *source, const char *reason) {
        if (err < 0)
                err = -err;
        if (err == EMFILE || err == ENFILE) {
                struct rlimit rl = {};

                /* The limit that was hit is the process's RLIMIT_NOFILE. */
                (void) getrlimit(RLIMIT_NOFILE, &rl);
                return verror(e, -err, "io.pressured.LimitExceeded",
                              json_pack("{s:s, s:I}", "limit", "open files", "value",
                                        (json_int_t) (rl.rlim_cur == RLIM_INFINITY ? INT64_MAX : rl.rlim_cur)));
        }
        return verror(e, -err, "io.pressured.SourceUnavailable",
                      json_pack("{s:s, s:s}", "source", source, "reason", reason));
}

void verror_done(VarlinkError *e) {
        json_decref(e->parameters);
        *e = (VarlinkError) {};
}

static bool key_matches(const Registration *r, const RegistrationKey *k) {
        if (r->type != k->type || r->removed || !streq(r->cgroup, k->cgroup))
                return false;
        switch (k->type) {
        case SOURCE_PSI:
                return psi_trigger_equal(&r->requested, &k->psi) ||
                       psi_trigger_equal(&r->used, &k->psi);
        case SOURCE_VMPRESSURE:
                return r->vm_level == k->vm_level && r->vm_mode == k->vm_mode;
        default:
                return true;
        }
}

Registration *registration_find(Manager *m, const RegistrationKey *key) {
        Registration *r;

        LIST_FOREACH(registrations, r, m->registrations)
                if (key_matches(r, key))
                        return r;
        return NULL;
}

static Registration *registration_free(Registration *r) {
        if (!r)
                return NULL;
        if (r->ops && r->ops->close)
                r->ops->close(r);
        if (r->ev)
                event_free(r->ev);
        safe_close(r->fd);
        safe_close(r->aux_fd);
        free(r->cgroup);
        free(r);
        return NULL;
}

static char *trigger_describe(const Registration *r, char *buf, size_t size) {
        switch (r->type) {
        case SOURCE_PSI:
                snprintf(buf, size, "%s %" PRIu64 "us %" PRIu64 "us",
                         psi_stall_to_string(r->used.stall), r->used.threshold_us, r->used.window_us);
                break;
        case SOURCE_VMPRESSURE:
                snprintf(buf, size, "%s,%s", level_to_string(r->vm_level),
                         vmpressure_mode_to_string(r->vm_mode));
                break;
        default:
                snprintf(buf, size, "-");
        }
        return buf;
}

int registration_acquire(Manager *m, const RegistrationKey *key, Registration **ret, VarlinkError *e) {
        Registration *r;
        char desc[96];
        int k;

        r = registration_find(m, key);
        if (r) {
                *ret = r;
                return 0;
        }

        if (m->n_registrations >= m->config->max_registrations) {
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Limit MaxRegistrations=%u reached, refusing a new registration.",
                                m->config->max_registrations);
                return verror(e, -EUSERS, "io.pressured.LimitExceeded",
                              json_pack("{s:s, s:I}", "limit", "MaxRegistrations",
                                        "value", (json_int_t) m->config->max_registrations));
        }

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->manager = m;
        r->type = key->type;
        r->fd = r->aux_fd = -1;
        r->last_state = -1;
        r->requested = r->used = key->psi;
        r->vm_level = key->vm_level;
        r->vm_mode = key->vm_mode;
        r->cgroup = strdup(key->cgroup);
        if (!r->cgroup) {
                free(r);
                return -ENOMEM;
        }

        switch (key->type) {
        case SOURCE_PSI:
                r->ops = &source_psi_ops;
                break;
        case SOURCE_VMPRESSURE:
                r->ops = &source_vmpressure_ops;
                break;
        case SOURCE_MEMORY_EVENTS:
                r->ops = &source_memory_events_ops;
                break;
        case SOURCE_PROTECTION:
                r->ops = &source_protection_ops;
                break;
        default:
                abort();
        }

        k = r->ops->open(r, e);
        if (k < 0) {
                /* Nothing of a failed registration may stay behind. */
                r->ops = NULL;
                registration_free(r);
                return k;
        }

        LIST_PREPEND(registrations, m->registrations, r);
        m->n_registrations++;
        m->counters.registrations_created++;
        log_struct(LOG_INFO, MESSAGE_ID_REGISTRATION_ADDED,
                   "Registered %s on %s (%s)%s.", source_type_to_string(r->type), r->cgroup,
                   trigger_describe(r, desc, sizeof(desc)), r->adjusted ? ", adjusted" : "");
        *ret = r;
        return 0;
}

void registration_release(Registration *r) {
        Manager *m;
        char desc[96];

        if (!r || r->n_subscriptions > 0)
                return;
        m = r->manager;
        LIST_REMOVE(registrations, m->registrations, r);
        m->n_registrations--;
        m->counters.registrations_removed++;
        log_struct(LOG_INFO, MESSAGE_ID_REGISTRATION_REMOVED,
                   "Removed %s registration on %s (%s).", source_type_to_string(r->type), r->cgroup,
                   trigger_describe(r, desc, sizeof(desc)));
        registration_free(r);
}

int subscription_new(Client *c, Registration *r, const SubscribeRequest *req, Subscription **ret) {
        Subscription *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->client = c;
        s->reg = r;
        s->by_level = req->selector == SELECTOR_LEVEL;
        s->has_level = req->selector == SELECTOR_LEVEL || req->selector == SELECTOR_VMPRESSURE;
        s->level = req->selector == SELECTOR_LEVEL ? req->level :
                   req->selector == SELECTOR_VMPRESSURE ? req->vm_level : _LEVEL_INVALID;
        s->min_interval_usec = req->min_interval_usec;
        LIST_PREPEND(subscriptions, r->subscriptions, s);
        r->n_subscriptions++;
        c->sub = s;
        c->manager->n_subscriptions++;
        *ret = s;
        return 0;
}

static void subscription_detach(Subscription *s) {
        Registration *r = s->reg;

        if (!r)
                return;
        LIST_REMOVE(subscriptions, r->subscriptions, s);
        r->n_subscriptions--;
        s->reg = NULL;
        registration_release(r);
}

void subscription_free(Subscription *s) {
        if (!s)
                return;
        subscription_detach(s);
        if (s->coalesce)
                event_free(s->coalesce);
        body_unref(s->pending);
        if (s->client) {
                s->client->sub = NULL;
                s->client->manager->n_subscriptions--;
        }
        free(s);
}

int subscription_move(Subscription *s, Registration *to) {
        Registration *from = s->reg;

        if (from == to)
                return 0;
        LIST_REMOVE(subscriptions, from->subscriptions, s);
        from->n_subscriptions--;
        LIST_PREPEND(subscriptions, to->subscriptions, s);
        to->n_subscriptions++;
        s->reg = to;
        registration_release(from);
        return 0;
}

static size_t format_prefix(const Subscription *s, const Body *body, uint64_t count, char *buf) {
        int n;

        if (s->has_level && !(body->flags & BODY_HAS_LEVEL))
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",\"level\":\"%s\",",
                             s->seq, s->missed, count, level_to_string(s->level));
        else
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",\"count\":%" PRIu64 ",",
                             s->seq, s->missed, count);
        return (size_t) n;
}

/* Queue one event for one subscriber now; false if it had to be dropped. */
static bool subscription_send(Subscription *s, Body *body, uint64_t count) {
        Client *c = s->client;
        Manager *m = c->manager;
        char prefix[OUT_PREFIX_MAX];
        size_t n;
        int k;

        s->seq++;
        n = format_prefix(s, body, count, prefix);

        if (outqueue_is_empty(&c->out) && !c->write_armed) {
                /* Nothing queued: hand prefix and body to the socket directly and
                 * queue only what it did not take. */
                ssize_t w = outqueue_write_direct(c->fd, prefix, n, body);

                if (w < 0 && w != -EAGAIN) {
                        client_kill(c);
                        return false;
                }
                k = (size_t) (w < 0 ? 0 : w) == n + body->size ? 0 :
                    outqueue_push_event_partial(&c->out, prefix, n, body, w < 0 ? 0 : (size_t) w);
                if (k >= 0 && !outqueue_is_empty(&c->out))
                        client_kick(c);
        } else {
                k = outqueue_push_event(&c->out, prefix, n, body, m->config->output_buffer_bytes);
                if (k >= 0)
                        client_kick(c);
        }
        if (k < 0) {
                s->missed++;
                m->counters.events_dropped++;
                log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Client %" PRIu64 " (uid %u) is not reading, dropping events.",
                                c->id, (unsigned) c->uid);
                return false;
        }
        s->missed = 0;
        s->last_sent_usec = now_usec(CLOCK_MONOTONIC);
        m->counters.events_delivered++;
        if (body->monotonic_us)
                manager_record_latency(m, s->last_sent_usec - body->monotonic_us);
        return true;
}

static void on_coalesce_timer(evutil_socket_t fd, short what, void *userdata) {
        Subscription *s = userdata;
        Body *b = TAKE_PTR(s->pending);
        uint64_t count = s->pending_count;

        s->pending_count = 0;
        event_free(s->coalesce);
        s->coalesce = NULL;
        if (b) {
                subscription_send(s, b, count);
                body_unref(b);
        }
}

bool subscription_offer(Subscription *s, Body *body, uint64_t count) {
        uint64_t now;

        if (s->min_interval_usec == 0)
                return subscription_send(s, body, count);

        now = now_usec(CLOCK_MONOTONIC);
        if (!s->pending && (s->last_sent_usec == 0 || now - s->last_sent_usec >= s->min_interval_usec))
                return subscription_send(s, body, count);

        /* Inside the interval: keep the newest event, count what it merges. */
        body_unref(s->pending);
        s->pending = body_ref(body);
        s->pending_count += count;
        if (!s->coalesce) {
                struct timeval tv;
                uint64_t due = s->last_sent_usec + s->min_interval_usec;

                s->coalesce = evtimer_new(s->client->manager->base, on_coalesce_timer, s);
                if (!s->coalesce) {
                        s->pending = body_unref(s->pending);
                        return false;
                }
                tv = usec_to_timeval(due > now ? due - now : 0);
                evtimer_add(s->coalesce, &tv);
        }
        return true;
}

void registration_deliver(Registration *r, Body *body, uint64_t count) {
        Subscription *s, *n;

        LIST_FOREACH_SAFE(subscriptions, s, n, r->subscriptions)
                if (!s->client->dead)
                        subscription_offer(s, body, count);
}

void registration_publish(Registration *r, json_t *event, uint64_t monotonic_us, uint64_t count) {
        Body *body = event_body_new(event, monotonic_us);

        if (!body) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1, "Failed to serialize an event, dropping it: %m");
                return;
        }
        registration_deliver(r, body, count);
        body_unref(body);
}

void registration_removed(Registration *r) {
        Subscription *s, *n;

        r->removed = true;
        log_info("Cgroup %s is gone, ending %u %s stream(s).", r->cgroup, r->n_subscriptions,
                 source_type_to_string(r->type));
        LIST_FOREACH_SAFE(subscriptions, s, n, r->subscriptions) {
                Client *c = s->client;
                json_t *ev;
                char *msg;
                size_t size;

                ev = json_pack("{s:{s:{s:s, s:s, s:I}}}", "parameters", "event", "kind", "removed",
                               "cgroup", r->cgroup, "seq", (json_int_t) (s->seq + 1));
                msg = ev ? json_dumps(ev, VARLINK_JSON_FLAGS) : NULL;
                json_decref(ev);
                subscription_free(s);
                if (msg && !c->dead) {
                        size = strlen(msg) + 1;
                        client_send_owned(c, msg, size);
                        client_stream_ended(c);
                } else
                        free(msg);
        }
        /* The last subscription_free() released the registration. */
}

json_t *event_json_new(const char *kind, const char *cgroup, const char *source,
                  uint64_t realtime_us, uint64_t monotonic_us) {
        return json_pack("{s:s, s:s, s:s, s:I, s:I}", "kind", kind, "cgroup", cgroup,
                         "source", source, "time_us", (json_int_t) realtime_us,
                         "monotonic_us", (json_int_t) monotonic_us);
}

Body *event_body_new(json_t *event, uint64_t monotonic_us) {
        size_t n;
        Body *b;

        if (!event)
                return NULL;
        n = json_dumpb(event, NULL, 0, VARLINK_JSON_FLAGS);
        if (n < 2) {
                json_decref(event);
                return NULL;
        }
        /* The event object without its opening brace, closed by "}}" and the NUL:
         * the per-subscriber prefix supplies the envelope and the first fields. */
        b = malloc(sizeof(Body) + n + 2);
        if (!b) {
                json_decref(event);
                return NULL;
        }
        {
                _cleanup_free_ char *tmp = malloc(n);

                if (!tmp) {
                        free(b);
                        json_decref(event);
                        return NULL;
                }
                json_dumpb(event, tmp, n, VARLINK_JSON_FLAGS);
                memcpy(b->data, tmp + 1, n - 1);
        }
        b->data[n - 1] = '}';
        b->data[n] = '}';
        b->data[n + 1] = 0;
        b->size = n + 2;
        b->n_ref = 1;
        b->flags = json_object_get(event, "level") ? BODY_HAS_LEVEL : 0;
        b->monotonic_us = monotonic_us;
        json_decref(event);
        return b;
}

json_t *psi_stats_to_json(const PsiStats *s) {
        json_t *o = json_pack("{s:f, s:f, s:f, s:I}",
                              "some_avg10", s->some.avg10 / 100.0,
                              "some_avg60", s->some.avg60 / 100.0,
                              "some_avg300", s->some.avg300 / 100.0,
                              "some_total_us", (json_int_t) s->some.total_us);
        if (o && s->has_full) {
                json_object_set_new(o, "full_avg10", json_real(s->full.avg10 / 100.0));
                json_object_set_new(o, "full_avg60", json_real(s->full.avg60 / 100.0));
                json_object_set_new(o, "full_avg300", json_real(s->full.avg300 / 100.0));
                json_object_set_new(o, "full_total_us", json_integer((json_int_t) s->full.total_us));
        }
        return o;
}

json_t *memory_events_to_json(const MemoryEvents *e) {
        json_t *o = json_object();

        if (!o)
                return NULL;
        for (int k = 0; k < _MEMORY_EVENT_MAX; k++)
                if (e->present & (1u << k))
                        json_object_set_new(o, memory_event_key_to_string((MemoryEventKey) k),
                                            json_integer((json_int_t) e->value[k]));
        return o;
}
