/* SPDX-License-Identifier: MIT */
/*
 * Registrations and subscriptions: the lazy, shared, reference-counted
 * kernel registrations, and the fan-out of one serialized event to all
 * their subscribers, with per-subscriber drop accounting and coalescing.
 */
#include <inttypes.h>

#include "client.h"
#include "event.h"
#include "log.h"
#include "manager.h"
#include "proxy.h"
#include "registration.h"
#include "registration-episode.h"

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
        registration_episode_done(r);
        safe_close(r->fd);
        safe_close(r->aux_fd);
        free(r->cgroup);
        free(r);
        return NULL;
}

/* A registration for @key, not opened yet and not listed. */
static int registration_new(Manager *m, const RegistrationKey *key, Registration **ret) {
        Registration *r;

        if (!source_ops_get(key->type))
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *r = (Registration) {
                .manager = m,
                .type = key->type,
                .ops = source_ops_get(key->type),
                .requested = key->psi,
                .used = key->psi,
                .vm_level = key->vm_level,
                .vm_mode = key->vm_mode,
                .fd = -1,
                .aux_fd = -1,
                .last_state = -1,
                .cgroup = strdup(key->cgroup),
        };
        if (!r->cgroup) {
                free(r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

static char *trigger_describe(const Registration *r, char *buf, size_t size) {
        switch (r->type) {
        case SOURCE_PSI:
                if (psi_trigger_format(&r->used, PSI_TRIGGER_FORMAT_CONFIG, buf, size) < 0)
                        snprintf(buf, size, "?");
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
                return varlink_error_limit_exceeded(e, -EUSERS, "MaxRegistrations",
                                                    m->config->max_registrations);
        }

        k = registration_new(m, key, &r);
        if (k < 0)
                return k;
        k = r->ops->open(r, e);
        if (k < 0) {
                /* Nothing of a failed registration may stay behind. */
                r->ops = NULL;
                registration_free(r);
                return k;
        }

        registration_episode_init(r);
        LIST_PREPEND(registrations, m->registrations, r);
        m->n_registrations++;
        counter_inc(&m->counters, COUNTER_REGISTRATIONS_CREATED);
        log_struct(LOG_INFO, MESSAGE_ID_REGISTRATION_ADDED,
                   "Registered %s on %s (%s)%s.", source_type_to_string(r->type), r->cgroup,
                   trigger_describe(r, desc, sizeof(desc)), r->adjusted ? ", adjusted" : "");
        *ret = r;
        return 0;
}

int registration_acquire_for(Manager *m, RegistrationKey *key, uid_t uid, bool explicit_psi, Registration **ret,
                             bool *ret_adjusted, char reason[static POLICY_REASON_MAX], VarlinkError *e) {
        PolicyVerdict verdict = POLICY_KEEP;
        PolicyRequest pr = {};
        PsiTrigger asked = key->psi;
        Registration *r;
        bool adjusted;
        int k;

        reason[0] = 0;
        if (key->type == SOURCE_PSI && m->psi_unprivileged) {
                PsiTrigger rounded;

                /* Known to be unprivileged: share with what the kernel will accept. */
                if (psi_trigger_round_unprivileged(&key->psi, &rounded) && !registration_find(m, key))
                        key->psi = rounded;
        }
        if (key->type == SOURCE_PSI) {
                pr = (PolicyRequest) {
                        .uid = uid,
                        .explicit_psi = explicit_psi,
                        .privileged = !m->psi_unprivileged,
                        .shared = registration_find(m, key) != NULL,
                        .trigger = key->psi,
                        .used = uid != 0 ? registration_fast_count(m, uid) : 0,
                        .quota = m->config->max_fast_triggers_per_user,
                };
                verdict = policy_decide(&pr, &key->psi);
        }

        k = registration_acquire(m, key, &r, e);
        if (k < 0)
                return k;

        /* A registration nobody uses yet was made for this request. */
        if (verdict == POLICY_CHARGE && r->n_subscriptions == 0 && r->n_proxied == 0 && !r->fast_charged &&
            psi_trigger_is_fast(&r->used)) {
                r->fast_charged = true;
                r->fast_uid = uid;
        }

        adjusted = r->type == SOURCE_PSI ? !psi_trigger_equal(&asked, &r->used) : r->adjusted;
        if (adjusted && verdict == POLICY_ROUND)
                policy_reason(&pr, reason, POLICY_REASON_MAX);
        else if (adjusted)
                snprintf(reason, POLICY_REASON_MAX, "%s", POLICY_REASON_UNPRIVILEGED);
        *ret = r;
        *ret_adjusted = adjusted;
        return 0;
}

unsigned registration_fast_count(Manager *m, uid_t uid) {
        Registration *r;
        unsigned n = 0;

        LIST_FOREACH(registrations, r, m->registrations)
                if (r->fast_charged && !r->removed && r->fast_uid == uid)
                        n++;
        return n;
}

void registration_recharge(Registration *r) {
        Subscription *s;
        ProxyClient *p;
        bool found = false;
        uid_t next = 0;

        if (!r || !r->fast_charged)
                return;
        if (r->removed) {
                /* Every stream on it is ending. */
                r->fast_charged = false;
                return;
        }
        LIST_FOREACH(subscriptions, s, r->subscriptions) {
                uid_t uid = s->client->uid;

                if (!s->explicit_psi || uid == 0)
                        continue;
                if (uid == r->fast_uid)
                        return;
                if (!found) {
                        next = uid;
                        found = true;
                }
        }
        LIST_FOREACH(proxied, p, r->proxied) {
                if (p->uid == 0)
                        continue;
                if (p->uid == r->fast_uid)
                        return;
                if (!found) {
                        next = p->uid;
                        found = true;
                }
        }
        if (found)
                log_debug("Fast PSI registration on %s: its charge moves from uid %u to uid %u.", r->cgroup,
                          (unsigned) r->fast_uid, (unsigned) next);
        r->fast_charged = found;
        r->fast_uid = next;
}

void registration_release(Registration *r) {
        Manager *m;
        char desc[96];

        if (!r || r->n_subscriptions > 0 || r->n_proxied > 0)
                return;
        m = r->manager;
        LIST_REMOVE(registrations, m->registrations, r);
        m->n_registrations--;
        counter_inc(&m->counters, COUNTER_REGISTRATIONS_REMOVED);
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
        s->explicit_psi = req->selector == SELECTOR_PSI;
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
        registration_recharge(r);
        registration_release(r);
}

Subscription *subscription_free(Subscription *s) {
        if (!s)
                return NULL;
        subscription_detach(s);
        if (s->coalesce)
                event_free(s->coalesce);
        body_unref(s->pending);
        if (s->client) {
                s->client->sub = NULL;
                s->client->manager->n_subscriptions--;
        }
        free(s);
        return NULL;
}

void subscription_move(Subscription *s, Registration *to) {
        Registration *from = s->reg;

        if (from == to)
                return;
        registration_episode_adopt(to, from);
        LIST_REMOVE(subscriptions, from->subscriptions, s);
        from->n_subscriptions--;
        LIST_PREPEND(subscriptions, to->subscriptions, s);
        to->n_subscriptions++;
        s->reg = to;
        registration_recharge(from);
        registration_release(from);
}

static size_t format_prefix(const Subscription *s, const Body *body, uint64_t count, char *buf) {
        int n;

        if (body->flags & BODY_NO_COUNT)
                n = snprintf(buf, OUT_PREFIX_MAX,
                             "{\"continues\":true,\"parameters\":{\"event\":{\"seq\":%" PRIu64
                             ",\"missed\":%" PRIu64 ",%s%s%s",
                             s->seq, s->missed, s->has_level ? "\"level\":\"" : "",
                             s->has_level ? level_to_string(s->level) : "", s->has_level ? "\"," : "");
        else if (s->has_level && !(body->flags & BODY_HAS_LEVEL))
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
static bool subscription_send(Subscription *s, Body *body, uint64_t count, size_t limit) {
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
                k = outqueue_push_event(&c->out, prefix, n, body, limit);
                if (k >= 0)
                        client_kick(c);
        }
        if (k < 0) {
                s->missed++;
                counter_inc(&m->counters, COUNTER_EVENTS_DROPPED);
                log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Client %" PRIu64 " (uid %u) is not reading, dropping events.",
                                c->id, (unsigned) c->uid);
                return false;
        }
        s->missed = 0;
        s->last_sent_usec = now_usec(CLOCK_MONOTONIC);
        counter_inc(&m->counters, COUNTER_EVENTS_DELIVERED);
        if (body->monotonic_us)
                metrics_histogram_observe(&m->counters.latency, s->last_sent_usec - body->monotonic_us);
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
                subscription_send(s, b, count, s->client->manager->config->output_buffer_bytes);
                body_unref(b);
        }
}

bool subscription_offer(Subscription *s, Body *body, uint64_t count) {
        uint64_t now;

        const size_t limit = s->client->manager->config->output_buffer_bytes;

        if (s->min_interval_usec == 0)
                return subscription_send(s, body, count, limit);

        now = now_usec(CLOCK_MONOTONIC);
        if (!s->pending && (s->last_sent_usec == 0 || now - s->last_sent_usec >= s->min_interval_usec))
                return subscription_send(s, body, count, limit);

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

bool subscription_offer_cleared(Subscription *s, Body *body) {
        const size_t limit = s->client->manager->config->output_buffer_bytes;

        /* The last pressure event of the episode goes first, whatever its interval. */
        if (s->pending)
                on_coalesce_timer(-1, 0, s);
        if (s->client->dead)
                return false;
        return subscription_send(s, body, 1, limit + SUBSCRIPTION_CLEARED_RESERVE_BYTES);
}

void registration_deliver(Registration *r, Body *body, uint64_t count) {
        Subscription *s, *n;

        LIST_FOREACH_SAFE(subscriptions, s, n, r->subscriptions)
                if (!s->client->dead)
                        subscription_offer(s, body, count);
}

void registration_publish(Registration *r, json_t *event, uint64_t monotonic_us, uint64_t count) {
        Body *body = event_body_new(event, monotonic_us);

        /* event_body_new() takes NULL for an event that could not be built. */
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
        proxy_registration_removed(r);
        if (r->n_subscriptions == 0) {
                registration_release(r);
                return;
        }
        log_info("Cgroup %s is gone, ending %u %s stream(s).", r->cgroup, r->n_subscriptions,
                 source_type_to_string(r->type));
        LIST_FOREACH_SAFE(subscriptions, s, n, r->subscriptions) {
                Client *c = s->client;
                size_t size;
                char *msg = event_removed_message(r->cgroup, s->seq + 1, &size);

                subscription_free(s);
                if (msg && !c->dead) {
                        client_send_owned(c, msg, size);
                        client_stream_ended(c);
                } else
                        free(msg);
        }
        /* The last subscription_free() released the registration. */
}

json_t *registration_trigger_json(const Registration *r, const Subscription *s) {
        EventTrigger t = {
                .type = r->type,
                .psi = r->used,
                .vm_level = r->vm_level,
                .vm_mode = r->vm_mode,
                .level = s && s->by_level ? s->level : _LEVEL_INVALID,
        };

        return event_trigger_new(&t);
}
