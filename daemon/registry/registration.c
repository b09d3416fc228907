/* SPDX-License-Identifier: MIT */
/*
 * Registrations and their listeners: the lazy, shared, reference-counted
 * kernel registrations, and the fan-out of one serialized event to all
 * their listeners.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include "log.h"
#include "registration.h"
#include "registration-episode.h"
#include "source-protection.h"

/* @r registers @k, its PSI trigger taken as @psi; on the directory of inode @ino unless that is 0. */
static bool key_matches(const Registration *r, const RegistrationKey *k, const PsiTrigger *psi, ino_t ino) {
        const Source *s = &r->src;

        if (s->type != k->type || r->removed || !streq(s->cgroup, k->cgroup))
                return false;
        /* A directory renamed and replaced since @r opened it is another cgroup. */
        if (ino != 0 && s->dir_ino != 0 && s->dir_ino != ino)
                return false;
        switch (k->type) {
        case SOURCE_PSI:
                return s->resource == k->resource &&
                       (psi_trigger_equal(&s->requested, psi) || psi_trigger_equal(&s->used, psi));
        case SOURCE_VMPRESSURE:
                return s->vm_level == k->vm_level && s->vm_mode == k->vm_mode;
        default:
                return true;
        }
}

/*
 * One walk over the registrations: the one for @key in @ret, and if @alt
 * is not NULL the one for @key with the PSI trigger @alt in @ret_alt
 * (NULL where there is none). @ino as key_matches() takes it.
 */
static void registry_lookup(const Registry *reg, const RegistrationKey *key, const PsiTrigger *alt, ino_t ino,
                            Registration **ret, Registration **ret_alt) {
        Registration *r, *found = NULL, *found_alt = NULL;

        LIST_FOREACH(registrations, r, reg->registrations) {
                if (!found && key_matches(r, key, &key->psi, ino))
                        found = r;
                if (alt && !found_alt && key_matches(r, key, alt, ino))
                        found_alt = r;
                if (found && (!alt || found_alt))
                        break;
        }
        *ret = found;
        if (ret_alt)
                *ret_alt = found_alt;
}

/* The inode of the directory @dirfd; 0 for -1 or if it cannot be told (then any matches). */
static ino_t dir_inode(int dirfd) {
        struct stat st;

        return dirfd >= 0 && fstat(dirfd, &st) == 0 ? st.st_ino : 0;
}

void registry_init(Registry *reg, SourceEnv *env, const Config *config, Counters *counters,
                   EventSerializeFn serialize) {
        *reg = (Registry) { .env = env, .serialize = serialize, .config = config, .counters = counters };
}

void registry_done(Registry *reg) {
        reg->registrations = NULL;
        reg->n_registrations = 0;
}

static Registration *registration_from_source(Source *s) {
        return (Registration *) ((char *) s - offsetof(Registration, src));
}

static void registration_removed(Registration *r);

/* Proxied clients need only their byte: they get it before the event is read and built. */
/* Tell every listener that takes the bare notification: @body is NULL for a
 * kernel one (nothing has been read or built yet), the event for an injected one. */
static uint64_t registration_kick(Registration *r, Body *body) {
        Listener *l, *n;
        uint64_t delivered = 0;

        LIST_FOREACH_SAFE(listeners, l, n, r->listeners)
                if (l->kick && l->ops->deliver(l, body, 1))
                        delivered++;
        return delivered;
}

/* Fan @body out to every listener that takes events; returns how many got it. */
static uint64_t registration_deliver(Registration *r, Body *body, uint64_t count) {
        Listener *l, *n;
        uint64_t delivered = 0;

        LIST_FOREACH_SAFE(listeners, l, n, r->listeners)
                if (!l->kick && l->ops->deliver(l, body, count))
                        delivered++;
        return delivered;
}

/* Serialize @event once and fan it out. */
static void registration_publish(Registration *r, const EventData *event, uint64_t count) {
        Body *body = r->registry->serialize(event, event->monotonic_us);

        if (!body) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1, "Failed to serialize an event, dropping it: %m");
                return;
        }
        (void) registration_deliver(r, body, count);
        body_unref(body);
}

static void on_source_kick(Source *s) {
        (void) registration_kick(registration_from_source(s), NULL);
}

static void on_source_pressure(Source *s, const PsiStats *psi, uint64_t realtime_us, uint64_t monotonic_us,
                               uint64_t count) {
        Registration *r = registration_from_source(s);

        counter_inc(r->registry->counters, COUNTER_EVENTS_READ);
        /* The episode takes its stall total from the sample: the file is not read again. */
        registration_episode_event(r, monotonic_us, _LEVEL_INVALID, psi);
        registration_publish(r, &(const EventData) {
                .kind = EVENT_PRESSURE, .cgroup = s->cgroup, .realtime_us = realtime_us, .monotonic_us = monotonic_us,
                .pressure = {
                        .source = s->type, .resource = s->resource, .psi = psi, .level = _LEVEL_INVALID,
                        /* A tracked cgroup's protection node rides along. */
                        .protection = protection_source_lookup(s->env->protection, s->cgroup),
                },
        }, count);
}

static void on_source_event(Source *s, const EventData *event, uint64_t count) {
        registration_publish(registration_from_source(s), event, count);
}

static void on_source_removed(Source *s) {
        registration_removed(registration_from_source(s));
}

static const SourceCallbacks registration_source_callbacks = {
        .kick = on_source_kick,
        .pressure = on_source_pressure,
        .event = on_source_event,
        .removed = on_source_removed,
};

static Registration *registration_free(Registration *r) {
        if (!r)
                return NULL;
        if (r->registry->hooks && r->registry->hooks->removed)
                r->registry->hooks->removed(r, r->registry->hooks_userdata);
        source_close(&r->src);
        registration_episode_done(r);
        free(r);
        return NULL;
}

/* A new registration for @key, opened in the directory @dirfd (-1: by path). */
static int registration_new(Registry *reg, const RegistrationKey *key, int dirfd, Registration **ret,
                            SourceFailure *e) {
        Registration *r;
        char desc[128];
        int k;

        if (reg->n_registrations >= reg->config->max_registrations) {
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Limit MaxRegistrations=%u reached, refusing a new registration.",
                                reg->config->max_registrations);
                return source_failure_limit(e, -EUSERS, "MaxRegistrations", reg->config->max_registrations);
        }

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->registry = reg;
        k = source_open(&r->src, reg->env, &registration_source_callbacks, key, dirfd, e);
        if (k < 0) {
                free(r);
                return k;
        }

        r->id = ++reg->next_id;
        registration_episode_init(r);
        LIST_PREPEND(registrations, reg->registrations, r);
        reg->n_registrations++;
        counter_inc(reg->counters, COUNTER_REGISTRATIONS_CREATED);
        if (reg->hooks && reg->hooks->added)
                reg->hooks->added(r, reg->hooks_userdata);
        log_struct(LOG_INFO, MESSAGE_ID_REGISTRATION_ADDED,
                   "Registered %s on %s%s.", source_describe(&r->src, desc, sizeof(desc)), r->src.cgroup,
                   r->src.adjusted ? ", adjusted to what the kernel accepts" : "");
        *ret = r;
        return 0;
}

unsigned registry_fast_count(const Registry *reg, uid_t uid) {
        Registration *r;
        unsigned n = 0;

        LIST_FOREACH(registrations, r, reg->registrations)
                if (r->fast_charged && !r->removed && r->fast_uid == uid)
                        n++;
        return n;
}

int registration_acquire(Registry *reg, const RegistrationKey *key, int dirfd, Registration **ret,
                         SourceFailure *e) {
        registry_lookup(reg, key, NULL, dir_inode(dirfd), ret, NULL);
        return *ret ? 0 : registration_new(reg, key, dirfd, ret, e);
}

int registration_acquire_for(Registry *reg, RegistrationKey *key, int dirfd, uid_t uid, bool explicit_psi,
                             Registration **ret, bool *ret_adjusted, char reason[static POLICY_REASON_MAX],
                             SourceFailure *e) {
        PolicyRequest pr = {};
        PsiTrigger asked = key->psi, rounded;
        PolicyVerdict verdict = POLICY_KEEP;
        Registration *r = NULL, *r_rounded = NULL;
        bool roundable;
        bool adjusted;
        int k;

        reason[0] = 0;
        /* The registration as asked and the one rounded as the kernel
         * requires of unprivileged callers, found in one walk. */
        roundable = key->type == SOURCE_PSI && psi_trigger_round_unprivileged(&key->psi, &rounded);
        registry_lookup(reg, key, roundable ? &rounded : NULL, dir_inode(dirfd), &r, &r_rounded);
        if (key->type == SOURCE_PSI && reg->env->psi_unprivileged) {
                /* Known to be unprivileged: share with what the kernel will accept. */
                if (roundable && !r) {
                        key->psi = rounded;
                        r = r_rounded;
                }
        } else if (key->type == SOURCE_PSI) {
                pr = (PolicyRequest) {
                        .uid = uid,
                        .explicit_psi = explicit_psi,
                        .privileged = true,
                        .shared = r != NULL,
                        .trigger = key->psi,
                        .used = uid != 0 ? registry_fast_count(reg, uid) : 0,
                        .quota = reg->config->max_fast_triggers_per_user,
                };
                verdict = policy_decide(&pr, &key->psi);
                if (verdict == POLICY_ROUND)
                        r = r_rounded;
        }
        k = r ? 0 : registration_new(reg, key, dirfd, &r, e);
        if (k < 0)
                return k;

        /* A registration nobody uses yet was made for this request. */
        if (verdict == POLICY_CHARGE && !r->listeners && !r->fast_charged && psi_trigger_is_fast(&r->src.used)) {
                r->fast_charged = true;
                r->fast_uid = uid;
        }

        adjusted = r->src.type == SOURCE_PSI ? !psi_trigger_equal(&asked, &r->src.used) : r->src.adjusted;
        if (adjusted && verdict == POLICY_ROUND)
                policy_reason(&pr, reason, POLICY_REASON_MAX);
        else if (adjusted)
                snprintf(reason, POLICY_REASON_MAX, "%s", POLICY_REASON_UNPRIVILEGED);
        *ret = r;
        *ret_adjusted = adjusted;
        return 0;
}

/*
 * After a listener of @r left: keep @r's fast-trigger charge with its uid
 * while a peer of that uid still uses @r by an explicit trigger, else move
 * it to another such non-root peer, else drop it.
 */
static void registration_recharge(Registration *r) {
        Listener *l;
        bool found = false;
        uid_t next = 0;

        if (!r->fast_charged)
                return;
        if (r->removed) {
                /* Every stream on it is ending. */
                r->fast_charged = false;
                return;
        }
        LIST_FOREACH(listeners, l, r->listeners) {
                if (!l->explicit_psi || l->uid == 0)
                        continue;
                if (l->uid == r->fast_uid)
                        return;
                if (!found) {
                        next = l->uid;
                        found = true;
                }
        }
        if (found)
                log_debug("Fast PSI registration on %s: its charge moves from uid %u to uid %u.", r->src.cgroup,
                          (unsigned) r->fast_uid, (unsigned) next);
        r->fast_charged = found;
        r->fast_uid = next;
}

void registration_release(Registration *r) {
        Registry *reg;
        char desc[128];

        if (!r || r->listeners)
                return;
        reg = r->registry;
        LIST_REMOVE(registrations, reg->registrations, r);
        reg->n_registrations--;
        if (reg->handed_over)
                /* The kernel keeps it: the fd store or the new process holds the fd. */
                log_debug("Handed %s on %s to the next process.", source_describe(&r->src, desc, sizeof(desc)),
                          r->src.cgroup);
        else {
                counter_inc(reg->counters, COUNTER_REGISTRATIONS_REMOVED);
                log_struct(LOG_INFO, MESSAGE_ID_REGISTRATION_REMOVED,
                           "Removed %s on %s.", source_describe(&r->src, desc, sizeof(desc)), r->src.cgroup);
        }
        registration_free(r);
}

static void listener_unlink(Listener *l) {
        Registration *r = l->reg;

        LIST_REMOVE(listeners, r->listeners, l);
        if (l->kick)
                r->n_kicked--;
        else
                r->n_subscribers--;
        l->reg = NULL;
}

void listener_attach(Listener *l, Registration *r) {
        l->reg = r;
        LIST_PREPEND(listeners, r->listeners, l);
        if (l->kick)
                r->n_kicked++;
        else
                r->n_subscribers++;
}

void listener_detach(Listener *l) {
        Registration *r = l->reg;

        if (!r)
                return;
        listener_unlink(l);
        registration_recharge(r);
        registration_release(r);
}

void listener_move(Listener *l, Registration *to) {
        Registration *from = l->reg;

        if (from == to)
                return;
        registration_episode_adopt(to, from);
        listener_unlink(l);
        listener_attach(l, to);
        registration_recharge(from);
        registration_release(from);
}

/* The cgroup is gone: tell every listener, then free @r. */
static void registration_removed(Registration *r) {
        r->removed = true;
        r->fast_charged = false;
        if (r->n_subscribers > 0 && r->src.ended_why)
                log_warning("Ending %u %s stream(s) on %s, which stays: %s.", r->n_subscribers,
                            source_type_to_string(r->src.type), r->src.cgroup, r->src.ended_why);
        else if (r->n_subscribers > 0)
                log_info("Cgroup %s is gone, ending %u %s stream(s).", r->src.cgroup, r->n_subscribers,
                         source_type_to_string(r->src.type));
        while (r->listeners) {
                Listener *l = r->listeners;

                listener_unlink(l);
                l->ops->removed(l, r);
        }
        registration_release(r);
}

/*
 * Whether @l hears an injected event of @level as it would a kernel one: a
 * listener with a level ("level", vmpressure) hears its level and those
 * above, as the kernel tells a vmpressure listener; one without (an
 * explicit PSI trigger, a proxied client) hears every level.
 */
static bool listener_hears(const Listener *l, Level level) {
        return l->level < 0 || l->level <= level;
}

/* Deliver the injected @body of @level to the listeners of @r that hear it; returns how many got it. */
static uint64_t registration_inject(Registration *r, Body *body, Level level, uint64_t monotonic_us) {
        Listener *l, *n;
        uint64_t delivered = 0;
        bool heard = false;

        LIST_FOREACH(listeners, l, r->listeners)
                heard = heard || listener_hears(l, level);
        if (!heard)
                return 0;
        /* A synthetic event is part of the episode like a kernel one. */
        registration_episode_event(r, monotonic_us, level, NULL);
        LIST_FOREACH_SAFE(listeners, l, n, r->listeners)
                if (!l->kick && listener_hears(l, level) && l->ops->deliver(l, body, 1))
                        delivered++;
        LIST_FOREACH_SAFE(listeners, l, n, r->listeners)
                if (l->kick && listener_hears(l, level) && l->ops->deliver(l, body, 1))
                        delivered++;
        return delivered;
}

uint64_t registry_inject_split(Registry *reg, const char *psi_cgroup, Body *psi_body, const char *vm_cgroup,
                               Body *vm_body, Resource resource, Level level, uint64_t monotonic_us) {
        Registration *r, *n;
        uint64_t delivered = 0;

        LIST_FOREACH_SAFE(registrations, r, n, reg->registrations) {
                const char *cgroup = r->src.type == SOURCE_PSI ? psi_cgroup :
                                     r->src.type == SOURCE_VMPRESSURE ? vm_cgroup : NULL;

                if (r->removed || !cgroup || r->src.resource != resource || !streq(r->src.cgroup, cgroup))
                        continue;
                delivered += registration_inject(r, r->src.type == SOURCE_PSI ? psi_body : vm_body, level,
                                                 monotonic_us);
        }
        return delivered;
}

/* Tell @l, which a reload moved to @r, its new trigger; @adjusted: not the one [Levels] names. */
static void listener_tell_trigger(Listener *l, Registration *r, bool adjusted) {
        uint64_t mono = now_usec(CLOCK_MONOTONIC), rt = now_usec(CLOCK_REALTIME);
        Body *body;

        if (!l->ops->trigger_changed)
                return;
        /* No read time: the latency figures are those of kernel notifications. */
        body = r->registry->serialize(&(const EventData) {
                .kind = EVENT_TRIGGER_CHANGED, .cgroup = r->src.cgroup, .realtime_us = rt, .monotonic_us = mono,
                .trigger_changed = {
                        .source = r->src.type, .resource = r->src.resource,
                        .trigger = registration_trigger(r, l),
                        .adjusted_reason = adjusted ? POLICY_REASON_UNPRIVILEGED : NULL,
                },
        }, 0);
        if (!body) {
                log_ratelimited(LOG_WARNING, ENOMEM, NULL, 10, 1,
                                "Failed to tell a subscriber on %s of its new trigger, ignoring: %m", r->src.cgroup);
                return;
        }
        (void) l->ops->trigger_changed(l, body);
        body_unref(body);
}

/* Move one listener that follows [Levels] whose configured trigger changed. */
static void reload_listener(Registry *reg, Listener *l, const Config *old) {
        Registration *r = l->reg, *to;
        RegistrationKey key = { .type = r->src.type, .cgroup = r->src.cgroup, .resource = r->src.resource };
        SourceFailure e;
        const char *reason;
        int k;

        if (r->src.type == SOURCE_PSI) {
                if (psi_trigger_equal(&old->levels[l->level], &reg->config->levels[l->level]))
                        return;
                key.psi = reg->config->levels[l->level];
                if (psi_trigger_check_resource(&key.psi, key.resource, streq(key.cgroup, "/"), &reason) < 0) {
                        log_warning("Keeping the old trigger of a %s %s subscription on %s: %s.",
                                    resource_to_string(key.resource), level_to_string(l->level), key.cgroup, reason);
                        return;
                }
        } else if (r->src.type == SOURCE_VMPRESSURE) {
                if (old->vmpressure_mode == reg->config->vmpressure_mode)
                        return;
                key.vm_level = l->level;
                key.vm_mode = reg->config->vmpressure_mode;
        } else
                return;

        k = registration_acquire(reg, &key, -1, &to, &e);
        if (k < 0) {
                log_warning("Could not move a %s subscription on %s to the new trigger (%s), keeping the old one.",
                            level_to_string(l->level), r->src.cgroup, strerror(-k));
                return;
        }
        listener_move(l, to);
        listener_tell_trigger(l, to, to->src.type == SOURCE_PSI ? !psi_trigger_equal(&key.psi, &to->src.used)
                                                                : to->src.adjusted);
}

void registry_reconfigure(Registry *reg, const Config *old, const Config *config) {
        Registration *r, *rn;

        reg->config = config;
        LIST_FOREACH_SAFE(registrations, r, rn, reg->registrations) {
                Listener *l, *ln;

                /* A registration whose cgroup is gone is telling its listeners so. */
                if (r->removed)
                        continue;
                /* Moving the last listener frees r; rn is then still valid, ln is NULL. */
                LIST_FOREACH_SAFE(listeners, l, ln, r->listeners)
                        if (l->by_level)
                                reload_listener(reg, l, old);
        }
        LIST_FOREACH(registrations, r, reg->registrations)
                registration_episode_reconfigure(r);
}

EventTrigger registration_trigger(const Registration *r, const Listener *l) {
        return (EventTrigger) {
                .type = r->src.type,
                .psi = r->src.used,
                .vm_level = r->src.vm_level,
                .vm_mode = r->src.vm_mode,
                .level = l && l->by_level ? l->level : _LEVEL_INVALID,
        };
}

int registration_state(Registration *r, SubscribedState *ret) {
        int k = source_state(&r->src, ret);

        if (k < 0)
                return k;
        if (registration_has_episodes(r) && r->episode.active) {
                ret->episode = &r->episode.cur;
                ret->episode_psi = r->src.type == SOURCE_PSI;
                ret->now_us = now_usec(CLOCK_MONOTONIC);
                ret->realtime_us = now_usec(CLOCK_REALTIME);
        }
        return 0;
}

int registration_adopt(Registry *reg, const SnapshotRegistration *saved, int fd, Registration **ret,
                       SourceFailure *e) {
        RegistrationKey key = {
                .type = saved->type,
                .cgroup = saved->cgroup,
                .resource = saved->resource,
                .psi = saved->requested,
                .vm_level = saved->vm_level,
                .vm_mode = saved->vm_mode,
        };
        Registration *r = calloc(1, sizeof(*r));
        int k;

        if (!r) {
                safe_close(fd);
                return -ENOMEM;
        }
        r->registry = reg;
        k = source_adopt(&r->src, reg->env, &registration_source_callbacks, &key, saved, fd, e);
        if (k < 0) {
                free(r);
                return k;
        }
        r->id = saved->id;
        if (r->id > reg->next_id)
                reg->next_id = r->id;
        r->fast_charged = saved->fast_charged;
        r->fast_uid = saved->fast_uid;
        registration_episode_init(r);
        registration_episode_restore(r, saved);
        LIST_PREPEND(registrations, reg->registrations, r);
        reg->n_registrations++;
        *ret = r;
        return 0;
}

void registration_adopted(Registration *r, const SnapshotRegistration *saved) {
        source_restore(&r->src, saved);
}

int registration_export(const Registration *r, SnapshotRegistration *ret) {
        SnapshotRegistration e = {
                .id = r->id,
                .type = r->src.type,
                .resource = r->src.resource,
                .vm_level = r->src.vm_level,
                .vm_mode = r->src.vm_mode,
                .fast_charged = r->fast_charged,
                .fast_uid = r->fast_uid,
        };
        int k;

        e.cgroup = strdup(r->src.cgroup);
        k = e.cgroup ? source_export(&r->src, &e) : -ENOMEM;
        if (k >= 0)
                k = registration_episode_export(r, &e);
        if (k < 0) {
                snapshot_registration_done(&e);
                return k;
        }
        *ret = e;
        return 0;
}
