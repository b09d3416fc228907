/* SPDX-License-Identifier: MIT */
/*
 * The protected-usage model (see protection.h for the rules). Nodes form a
 * tree with sibling lists; a hash table keyed by (parent, name) makes path
 * lookups and directory re-scans O(1) per component. Dirty flags record
 * which effective values a change can affect, so that a refresh in which
 * little changed recomputes little.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protection.h"
#include "util.h"
#include "vocabulary.h"

struct ProtectionNode {
        ProtectionNode *parent;
        ProtectionNode *first_child, *last_child;
        ProtectionNode *prev_sibling, *next_sibling;
        uint64_t hash;
        void *userdata;

        uint64_t usage, min, low;
        uint64_t min_usage, low_usage;
        uint64_t children_min_usage, children_low_usage;
        uint64_t emin, elow;
        ProtectionState state;

        /* This node's emin/elow/state must be recomputed. */
        bool dirty_self;
        /* Every child's must be: our usage, e-values or sums changed. */
        bool dirty_children;
        /* Some descendant has one of the flags above. */
        bool dirty_below;

        char name[];
};

struct ProtectionTree {
        ProtectionNode *root;
        size_t n_nodes;

        /* Open addressing, linear probing; every node but the root. */
        ProtectionNode **table;
        size_t table_mask;
        size_t table_used;

        bool recursive;
        bool always_propagate;
        bool dirty_all;
        ProtectionCounters counters;
};

/* The interface's names, which it lists in another order. */
static const NameRef protection_state_names[_PROTECTION_STATE_MAX] = {
        [PROTECTION_STATE_NONE] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_NONE),
        [PROTECTION_STATE_LOW] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_LOW),
        [PROTECTION_STATE_MIN] = NAME_REF(idl_protection_state_table, IDL_PROTECTION_STATE_MIN),
};

/* protection_state_to_string - "none", "low", "min", or NULL if out of range. */
const char *protection_state_to_string(ProtectionState s) {
        return name_ref_to_string(protection_state_names, ELEMENTSOF(protection_state_names), s);
}

static inline uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

static uint64_t node_hash(const ProtectionNode *parent, const char *name, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char) name[i];
                h *= UINT64_C(0x100000001b3);
        }
        h ^= (uint64_t) (uintptr_t) parent * UINT64_C(0x9e3779b97f4a7c15);
        return h ^ (h >> 29);
}

static int table_resize(ProtectionTree *t, size_t n_slots) {
        ProtectionNode **table;

        table = calloc(n_slots, sizeof(*table));
        if (!table)
                return -ENOMEM;
        for (size_t i = 0; t->table && i <= t->table_mask; i++) {
                ProtectionNode *n = t->table[i];
                size_t j;

                if (!n)
                        continue;
                for (j = n->hash & (n_slots - 1); table[j]; j = (j + 1) & (n_slots - 1))
                        ;
                table[j] = n;
        }
        free(t->table);
        t->table = table;
        t->table_mask = n_slots - 1;
        return 0;
}

static ProtectionNode *table_find(const ProtectionTree *t, const ProtectionNode *parent,
                                  const char *name, size_t len) {
        uint64_t h = node_hash(parent, name, len);

        for (size_t i = h & t->table_mask; t->table[i]; i = (i + 1) & t->table_mask) {
                ProtectionNode *n = t->table[i];

                if (n->hash == h && n->parent == parent && strncmp(n->name, name, len) == 0 &&
                    n->name[len] == 0)
                        return n;
        }
        return NULL;
}

static void table_insert(ProtectionTree *t, ProtectionNode *n) {
        size_t i;

        for (i = n->hash & t->table_mask; t->table[i]; i = (i + 1) & t->table_mask)
                ;
        t->table[i] = n;
        t->table_used++;
}

static void table_remove(ProtectionTree *t, ProtectionNode *n) {
        size_t i, j;

        for (i = n->hash & t->table_mask; t->table[i] != n; i = (i + 1) & t->table_mask)
                ;
        /* Backward-shift deletion keeps probe chains intact without tombstones. */
        j = i;
        for (;;) {
                t->table[i] = NULL;
                for (;;) {
                        size_t k;

                        j = (j + 1) & t->table_mask;
                        if (!t->table[j]) {
                                t->table_used--;
                                return;
                        }
                        k = t->table[j]->hash & t->table_mask;
                        /* Move the entry at j to i unless its home k lies cyclically in (i, j]. */
                        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                                continue;
                        break;
                }
                t->table[i] = t->table[j];
                i = j;
        }
}

static ProtectionNode *node_alloc(const char *name, size_t len) {
        ProtectionNode *n;

        n = calloc(1, sizeof(*n) + len + 1);
        if (!n)
                return NULL;
        memcpy(n->name, name, len);
        n->name[len] = 0;
        n->state = PROTECTION_STATE_NONE;
        return n;
}

int protection_tree_new(bool recursive_protection, ProtectionTree **ret) {
        ProtectionTree *t;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->recursive = recursive_protection;
        t->root = node_alloc("", 0);
        r = t->root ? table_resize(t, 64) : -ENOMEM;
        if (r < 0) {
                protection_tree_free(t);
                return r;
        }
        t->n_nodes = 1;
        *ret = t;
        return 0;
}

static void node_free_subtree(ProtectionNode *n) {
        ProtectionNode *c = n->first_child;

        while (c) {
                ProtectionNode *next = c->next_sibling;

                node_free_subtree(c);
                c = next;
        }
        free(n);
}

ProtectionTree *protection_tree_free(ProtectionTree *t) {
        if (!t)
                return NULL;
        if (t->root)
                node_free_subtree(t->root);
        free(t->table);
        free(t);
        return NULL;
}

void protection_tree_set_recursive(ProtectionTree *t, bool recursive_protection) {
        if (t->recursive == recursive_protection)
                return;
        t->recursive = recursive_protection;
        t->dirty_all = true;
}

void protection_tree_set_always_propagate(ProtectionTree *t, bool always) {
        t->always_propagate = always;
}

void protection_tree_get_counters(const ProtectionTree *t, ProtectionCounters *ret) {
        *ret = t->counters;
}

ProtectionNode *protection_tree_root(ProtectionTree *t) {
        return t->root;
}

size_t protection_tree_size(const ProtectionTree *t) {
        return t->n_nodes;
}

/* Make sure compute() descends to @n: flag every ancestor. */
static void mark_path(ProtectionNode *n) {
        for (ProtectionNode *p = n->parent; p && !p->dirty_below; p = p->parent)
                p->dirty_below = true;
}

/* The children of the root take their own settings and never depend on it. */
static void mark_children_dirty(ProtectionNode *n) {
        if (!n->parent)
                return;
        n->dirty_children = true;
        mark_path(n);
}

static bool name_valid(const char *name, size_t len) {
        if (len == 0 || memchr(name, '/', len))
                return false;
        if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                return false;
        return !memchr(name, 0, len);
}

int protection_node_add(ProtectionTree *t, ProtectionNode *parent, const char *name,
                        ProtectionNode **ret) {
        ProtectionNode *n;
        size_t len = strlen(name);
        int r;

        if (!name_valid(name, len))
                return -EINVAL;
        if (table_find(t, parent, name, len))
                return -EEXIST;
        if ((t->table_used + 1) * 2 > t->table_mask + 1) {
                r = table_resize(t, (t->table_mask + 1) * 2);
                if (r < 0)
                        return r;
        }

        n = node_alloc(name, len);
        if (!n)
                return -ENOMEM;
        n->parent = parent;
        n->hash = node_hash(parent, name, len);
        n->prev_sibling = parent->last_child;
        if (parent->last_child)
                parent->last_child->next_sibling = n;
        else
                parent->first_child = n;
        parent->last_child = n;
        table_insert(t, n);
        t->n_nodes++;

        n->dirty_self = true;
        mark_path(n);

        if (ret)
                *ret = n;
        return 0;
}

static void table_remove_subtree(ProtectionTree *t, ProtectionNode *n) {
        for (ProtectionNode *c = n->first_child; c; c = c->next_sibling)
                table_remove_subtree(t, c);
        table_remove(t, n);
        t->n_nodes--;
}

int protection_node_remove(ProtectionTree *t, ProtectionNode *node) {
        ProtectionNode *parent = node->parent;

        if (!parent)
                return -EINVAL;

        if (node->min_usage != 0 || node->low_usage != 0) {
                parent->children_min_usage -= node->min_usage;
                parent->children_low_usage -= node->low_usage;
                t->counters.propagations_applied++;
                mark_children_dirty(parent);
        }

        if (node->prev_sibling)
                node->prev_sibling->next_sibling = node->next_sibling;
        else
                parent->first_child = node->next_sibling;
        if (node->next_sibling)
                node->next_sibling->prev_sibling = node->prev_sibling;
        else
                parent->last_child = node->prev_sibling;

        table_remove_subtree(t, node);
        node_free_subtree(node);
        return 0;
}

int protection_node_update(ProtectionTree *t, ProtectionNode *node,
                           uint64_t usage, uint64_t min, uint64_t low) {
        ProtectionNode *parent = node->parent;
        uint64_t min_usage, low_usage;
        bool usage_changed, changed;
        int applied = 0;

        usage_changed = node->usage != usage;
        changed = usage_changed || node->min != min || node->low != low;
        node->usage = usage;
        node->min = min;
        node->low = low;

        min_usage = min_u64(usage, min);
        low_usage = min_u64(usage, low);

        if (parent) {
                if (min_usage != node->min_usage || low_usage != node->low_usage ||
                    t->always_propagate) {
                        /* Modular arithmetic: exact as long as the true sum fits. */
                        parent->children_min_usage += min_usage - node->min_usage;
                        parent->children_low_usage += low_usage - node->low_usage;
                        t->counters.propagations_applied++;
                        mark_children_dirty(parent);
                        applied = 1;
                } else
                        t->counters.propagations_skipped++;
        }
        node->min_usage = min_usage;
        node->low_usage = low_usage;

        if (changed) {
                node->dirty_self = true;
                /* With recursive protection the children's share depends on our usage. */
                if (usage_changed && t->recursive && parent)
                        node->dirty_children = true;
                mark_path(node);
        }
        return applied;
}

/*
 * The kernel's effective_protection(), in bytes, with PROTECTION_UNLIMITED
 * for an unlimited parent value.
 */
static uint64_t effective_protection(uint64_t usage, uint64_t parent_usage, uint64_t setting,
                                     uint64_t parent_effective, uint64_t siblings_protected,
                                     bool recursive) {
        uint64_t protected = min_u64(usage, setting);
        unsigned __int128 ep;

        /* Overcommitted: share the parent's protection by protected usage. */
        if (parent_effective != PROTECTION_UNLIMITED && siblings_protected > parent_effective)
                return (uint64_t) ((unsigned __int128) protected * parent_effective /
                                   siblings_protected);

        if (!recursive)
                return protected;

        /* Hand out unclaimed protection by unprotected usage. */
        if (parent_effective > siblings_protected && parent_usage > siblings_protected &&
            usage > protected) {
                if (parent_effective == PROTECTION_UNLIMITED)
                        return PROTECTION_UNLIMITED;
                ep = (unsigned __int128) (parent_effective - siblings_protected) *
                     (usage - protected) / (parent_usage - siblings_protected);
                ep += protected;
                return ep >= PROTECTION_UNLIMITED ? PROTECTION_UNLIMITED : (uint64_t) ep;
        }
        return protected;
}

static ProtectionState state_of(const ProtectionNode *n) {
        if (n->usage == 0)
                return PROTECTION_STATE_NONE;
        if (n->usage <= n->emin)
                return PROTECTION_STATE_MIN;
        if (n->usage <= n->elow)
                return PROTECTION_STATE_LOW;
        return PROTECTION_STATE_NONE;
}

/* Returns true if emin or elow changed (the children then depend on new values). */
static bool node_compute(ProtectionTree *t, ProtectionNode *n) {
        ProtectionNode *p = n->parent;
        uint64_t emin, elow;
        bool changed;

        t->counters.recomputations++;

        if (!p || n->usage == 0)
                emin = elow = 0;
        else if (!p->parent) {
                emin = n->min;
                elow = n->low;
        } else {
                emin = effective_protection(n->usage, p->usage, n->min, p->emin,
                                            p->children_min_usage, t->recursive);
                elow = effective_protection(n->usage, p->usage, n->low, p->elow,
                                            p->children_low_usage, t->recursive);
        }
        changed = emin != n->emin || elow != n->elow;
        n->emin = emin;
        n->elow = elow;
        return changed;
}

static size_t compute_subtree(ProtectionTree *t, ProtectionNode *n, bool force,
                              ProtectionStateChangedFn cb, void *userdata) {
        bool force_children = t->dirty_all || n->dirty_children;
        size_t changed = 0;

        if (force || n->dirty_self) {
                ProtectionState old = n->state;

                if (node_compute(t, n))
                        force_children = true;
                n->state = state_of(n);
                if (n->state != old) {
                        changed++;
                        if (cb)
                                cb(n, old, n->state, userdata);
                }
        }
        n->dirty_self = n->dirty_children = false;

        if (force_children || n->dirty_below)
                for (ProtectionNode *c = n->first_child; c; c = c->next_sibling)
                        if (force_children || c->dirty_self || c->dirty_children || c->dirty_below)
                                changed += compute_subtree(t, c, force_children, cb, userdata);
        n->dirty_below = false;
        return changed;
}

size_t protection_tree_compute(ProtectionTree *t, ProtectionStateChangedFn cb, void *userdata) {
        size_t changed;

        changed = compute_subtree(t, t->root, t->dirty_all, cb, userdata);
        t->dirty_all = false;
        return changed;
}

ProtectionNode *protection_node_child(ProtectionTree *t, const ProtectionNode *parent,
                                      const char *name) {
        return table_find(t, parent, name, strlen(name));
}

ProtectionNode *protection_tree_lookup(ProtectionTree *t, const char *path) {
        ProtectionNode *n = t->root;
        const char *p;

        if (!path || path[0] != '/')
                return NULL;
        if (path[1] == 0)
                return n;

        p = path + 1;
        for (;;) {
                size_t len = strcspn(p, "/");

                if (!name_valid(p, len))
                        return NULL;
                n = table_find(t, n, p, len);
                if (!n)
                        return NULL;
                if (p[len] == 0)
                        return n;
                p += len + 1;
        }
}

ProtectionNode *protection_node_next(const ProtectionNode *node, const ProtectionNode *top) {
        if (node->first_child)
                return node->first_child;
        while (node != top) {
                if (node->next_sibling)
                        return node->next_sibling;
                node = node->parent;
        }
        return NULL;
}

ProtectionNode *protection_node_parent(const ProtectionNode *node) {
        return node->parent;
}

ProtectionNode *protection_node_first_child(const ProtectionNode *node) {
        return node->first_child;
}

ProtectionNode *protection_node_next_sibling(const ProtectionNode *node) {
        return node->next_sibling;
}

const char *protection_node_name(const ProtectionNode *node) {
        return node->name;
}

int protection_node_path(const ProtectionNode *node, char **ret) {
        size_t len = 0;
        char *s, *e;

        if (!node->parent) {
                s = strdup("/");
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }

        for (const ProtectionNode *n = node; n->parent; n = n->parent)
                len += 1 + strlen(n->name);
        s = malloc(len + 1);
        if (!s)
                return -ENOMEM;
        e = s + len;
        *e = 0;
        for (const ProtectionNode *n = node; n->parent; n = n->parent) {
                size_t l = strlen(n->name);

                e -= l;
                memcpy(e, n->name, l);
                *--e = '/';
        }
        *ret = s;
        return 0;
}

void protection_node_get(const ProtectionNode *node, ProtectionValues *ret) {
        *ret = (ProtectionValues) {
                .usage = node->usage,
                .min = node->min,
                .low = node->low,
                .emin = node->emin,
                .elow = node->elow,
                .min_usage = node->min_usage,
                .low_usage = node->low_usage,
                .children_min_usage = node->children_min_usage,
                .children_low_usage = node->children_low_usage,
                .state = node->state,
        };
}

ProtectionState protection_node_state(const ProtectionNode *node) {
        return node->state;
}

uint64_t protection_node_usage(const ProtectionNode *node) {
        return node->usage;
}

void protection_node_set_userdata(ProtectionNode *node, void *userdata) {
        node->userdata = userdata;
}

void *protection_node_get_userdata(const ProtectionNode *node) {
        return node->userdata;
}
