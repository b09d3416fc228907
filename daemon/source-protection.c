/* SPDX-License-Identifier: MIT */
/* The protection source: subscriptions, refresh timer, GetProtection, enrichment. */
#include "event.h"
#include "log.h"
#include "manager.h"
#include "protection-tree.h"
#include "registration.h"
#include "source-protection.h"

static void fold_counters(Manager *m);

static void on_change(ProtectionReader *reader, const ProtectionChange *change, void *userdata) {
        Manager *m = userdata;
        RegistrationKey key = { .type = SOURCE_PROTECTION, .cgroup = change->cgroup };
        Registration *r = registration_find(m, &key);
        uint64_t rt, mono;
        json_t *event, *node = NULL;

        if (!r)
                return;
        if (change->removed) {
                registration_removed(r);
                return;
        }
        if ((int) change->state == r->last_state)
                return;
        r->last_state = (int) change->state;

        mono = now_usec(CLOCK_MONOTONIC);
        rt = now_usec(CLOCK_REALTIME);
        counter_inc(&m->counters, COUNTER_EVENTS_READ);
        if (change->node && protection_node_to_json(change->node, &node) < 0)
                node = NULL;
        event = event_protection_new(r->cgroup, protection_state_to_string(change->state),
                                     protection_state_to_string(change->previous), node, rt, mono);
        registration_publish(r, event, mono, 1);
}

static void fold_counters(Manager *m) {
        ProtectionCounters c;

        if (!m->protection)
                return;
        protection_tree_get_counters(protection_reader_get_tree(m->protection), &c);
        m->prot_applied_base += c.propagations_applied;
        m->prot_skipped_base += c.propagations_skipped;
}

static void reader_drop_if_unused(Manager *m) {
        if (!m->protection || protection_reader_n_tracked(m->protection) > 0)
                return;
        fold_counters(m);
        m->protection = protection_reader_free(m->protection);
        if (m->ev_refresh) {
                event_free(m->ev_refresh);
                m->ev_refresh = NULL;
        }
}

static void on_refresh(evutil_socket_t fd, short what, void *userdata) {
        Manager *m = userdata;
        int k;

        m->prot_refreshing = true;
        k = protection_reader_refresh(m->protection);
        m->prot_refreshing = false;
        counter_inc(&m->counters, COUNTER_PROTECTION_REFRESHES);
        if (k < 0)
                log_ratelimited(LOG_WARNING, k, NULL, 60, 1, "Failed to refresh the protection tree, continuing: %m");
        reader_drop_if_unused(m);
}

static int reader_ensure(Manager *m) {
        int k;

        if (m->protection)
                return 0;
        if (!m->v2.path)
                return -EOPNOTSUPP;
        k = protection_reader_new(m->v2.path, manager_recursive_protection(m), &m->protection);
        if (k < 0)
                return k;
        protection_reader_set_callback(m->protection, on_change, m);
        return 0;
}

static void refresh_timer_ensure(Manager *m) {
        struct timeval tv = usec_to_timeval(m->config->refresh_usec);

        if (!m->ev_refresh) {
                m->ev_refresh = event_new(m->base, -1, EV_PERSIST, on_refresh, m);
                if (!m->ev_refresh)
                        return;
        }
        event_add(m->ev_refresh, &tv);
}

static int protection_open(Registration *r, VarlinkError *e) {
        Manager *m = r->manager;
        ProtectionNode *node;
        int k;

        k = reader_ensure(m);
        if (k >= 0)
                k = protection_reader_track(m->protection, r->cgroup);
        if (k < 0) {
                reader_drop_if_unused(m);
                if (k == -ENOMEM)
                        return k;
                return varlink_error_from_errno(e, k, "protection", r->cgroup, NULL);
        }
        node = protection_reader_lookup(m->protection, r->cgroup);
        if (node)
                r->last_state = (int) protection_node_state(node);
        refresh_timer_ensure(m);
        return 0;
}

static void protection_close(Registration *r) {
        Manager *m = r->manager;

        if (!m->protection)
                return;
        (void) protection_reader_untrack(m->protection, r->cgroup);
        if (!m->prot_refreshing)
                reader_drop_if_unused(m);
}

static json_t *protection_state(Registration *r) {
        Manager *m = r->manager;
        ProtectionNode *node = m->protection ? protection_reader_lookup(m->protection, r->cgroup) : NULL;
        json_t *j = NULL;

        if (!node || protection_node_to_json(node, &j) < 0)
                return NULL;
        return json_pack("{s:o}", "node", j);
}

const SourceOps source_protection_ops = {
        .open = protection_open,
        .close = protection_close,
        .state = protection_state,
};

int source_protection_read(Manager *m, const char *cgroup, json_t **ret_nodes) {
        int k;

        k = reader_ensure(m);
        if (k < 0)
                return k;
        k = protection_reader_get_nodes_json(m->protection, cgroup, ret_nodes);
        reader_drop_if_unused(m);
        return k;
}

void source_protection_enrich(Manager *m, const char *cgroup, json_t *event) {
        ProtectionNode *node;
        json_t *j;

        if (!m->protection)
                return;
        node = protection_reader_lookup(m->protection, cgroup);
        if (node && protection_node_to_json(node, &j) >= 0)
                json_object_set_new(event, "protection", j);
}

void source_protection_counters(Manager *m, uint64_t *ret_applied, uint64_t *ret_skipped) {
        ProtectionCounters c = {};

        if (m->protection)
                protection_tree_get_counters(protection_reader_get_tree(m->protection), &c);
        *ret_applied = m->prot_applied_base + c.propagations_applied;
        *ret_skipped = m->prot_skipped_base + c.propagations_skipped;
}

void source_protection_reconfigure(Manager *m) {
        if (!m->protection)
                return;
        protection_reader_set_recursive(m->protection, manager_recursive_protection(m));
        if (m->ev_refresh)
                refresh_timer_ensure(m);
}

void source_protection_shutdown(Manager *m) {
        fold_counters(m);
        m->protection = protection_reader_free(m->protection);
        if (m->ev_refresh) {
                event_free(m->ev_refresh);
                m->ev_refresh = NULL;
        }
}
