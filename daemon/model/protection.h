/* SPDX-License-Identifier: MIT */
/*
 * The protected-usage model: a tree of cgroups holding memory.current,
 * memory.min and memory.low, with the sums and effective protection the
 * kernel's page_counter keeps (mm/page_counter.c). Pure logic: no I/O, no
 * event loop, no JSON. protection-tree.c fills it from a cgroup2 hierarchy.
 *
 * Units. Everything is in bytes, not pages. The kernel computes in pages, so
 * its emin/elow can differ from ours by less than one page per level of
 * proportional scaling; the states derived from them agree except within a
 * page of a boundary. Products are taken in unsigned __int128 and divided
 * afterwards, so the results are exact (floor division, as in the kernel)
 * and cannot overflow for usages and settings up to 2^50 bytes and beyond.
 *
 * Unlimited. A setting of "max" is PROTECTION_UNLIMITED (UINT64_MAX);
 * min(usage, max) is the usage. An effective value may be unlimited too: a
 * child of the root with memory.min=max has emin unlimited, and with
 * recursive protection so do the unprotected parts below it (the kernel
 * stores "max" as a finite page count and gets a very large number there;
 * either way the usage is below it, so the state is the same). A finite
 * result that would not fit in 64 bits saturates to PROTECTION_UNLIMITED.
 *
 * Propagation. protection_node_update() recomputes the node's
 * min_usage = min(usage, min) and low_usage = min(usage, low). Only when one
 * of them changed is the difference applied to the parent's
 * children_min_usage / children_low_usage; that update counts as one
 * "applied" propagation, an update that changed neither counts as "skipped"
 * (the kernel skips the atomic write the same way). Updates of the root,
 * which has no parent, count as neither. Adding a node with protected usage
 * or removing one applies its contribution and counts as applied.
 *
 * Effective protection, computed top-down by protection_tree_compute() as
 * the kernel's effective_protection() does (global reclaim, the root being
 * the reclaim root):
 *   - the root has none: emin = elow = 0;
 *   - a node with usage 0 reports emin = elow = 0 (the kernel returns early
 *     and keeps stale values; nothing is charged, so nothing is protected);
 *   - a child of the root takes its own settings: emin = min, elow = low;
 *   - deeper nodes: protected = min(usage, setting); if the siblings'
 *     protected sum exceeds the parent's effective value, the parent's value
 *     is shared in proportion (protected * parent_e / siblings); otherwise
 *     protected, plus, with recursive protection (the memory_recursiveprot
 *     mount option), a share of the parent's unclaimed protection in
 *     proportion to the node's unprotected usage.
 *
 * State: "min" if usage <= emin, else "low" if usage <= elow, else "none".
 * A node with usage 0 is "none": an empty cgroup is not below any boundary
 * (the kernel does not compute protection for it either, and reporting every
 * empty cgroup as "min" would make the state useless to subscribers).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define PROTECTION_UNLIMITED UINT64_MAX

typedef struct ProtectionTree ProtectionTree;
typedef struct ProtectionNode ProtectionNode;

typedef enum ProtectionState {
        PROTECTION_STATE_NONE,
        PROTECTION_STATE_LOW,
        PROTECTION_STATE_MIN,
        _PROTECTION_STATE_MAX,
} ProtectionState;

/* All numbers of one node, in bytes; settings may be PROTECTION_UNLIMITED. */
typedef struct ProtectionValues {
        uint64_t usage, min, low;
        uint64_t emin, elow;
        uint64_t min_usage, low_usage;
        uint64_t children_min_usage, children_low_usage;
        ProtectionState state;
} ProtectionValues;

typedef struct ProtectionCounters {
        uint64_t propagations_applied;
        uint64_t propagations_skipped;
        /* Effective values computed by protection_tree_compute(), node by node. */
        uint64_t recomputations;
} ProtectionCounters;

/*
 * protection_state_to_string - "none", "low" or "min"; NULL if out of range.
 */
const char *protection_state_to_string(ProtectionState s);

/*
 * protection_tree_new - make a tree holding only the root node "/".
 * @recursive_protection: compute as with the memory_recursiveprot option
 * @ret: the new tree
 *
 * Returns 0 or -ENOMEM.
 */
int protection_tree_new(bool recursive_protection, ProtectionTree **ret);

/* protection_tree_free - free the tree and all nodes; accepts NULL, returns NULL. */
ProtectionTree *protection_tree_free(ProtectionTree *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProtectionTree *, protection_tree_free);

/*
 * protection_tree_set_recursive - switch the recursive-protection rule; every
 * effective value is recomputed by the next protection_tree_compute().
 */
void protection_tree_set_recursive(ProtectionTree *t, bool recursive_protection);

/*
 * protection_tree_set_always_propagate - for benchmarks only: apply every
 * update to the parent's sums, and dirty the siblings, even when nothing
 * changed (what the kernel did before the skip). Results are the same.
 */
void protection_tree_set_always_propagate(ProtectionTree *t, bool always);

/* protection_tree_get_counters - the propagation counters since creation. */
void protection_tree_get_counters(const ProtectionTree *t, ProtectionCounters *ret);

/* protection_tree_root - the root node "/"; never NULL. */
ProtectionNode *protection_tree_root(ProtectionTree *t);

/* protection_tree_size - number of nodes, the root included. */
size_t protection_tree_size(const ProtectionTree *t);

/*
 * protection_node_add - add a child named @name under @parent, with usage,
 * min and low 0 and state "none".
 * @name: one path component: not empty, no '/', not "." or ".."
 * @ret: optional, the new node
 *
 * Returns 0, -EEXIST if @parent already has such a child, -EINVAL for a bad
 * name, -ENOMEM.
 */
int protection_node_add(ProtectionTree *t, ProtectionNode *parent, const char *name,
                        ProtectionNode **ret);

/*
 * protection_node_remove - remove @node and its subtree. The node's protected
 * usage is subtracted from its parent's sums (an applied propagation when
 * non-zero) and the siblings are recomputed by the next compute. Node
 * pointers into the subtree become invalid. Returns 0, or -EINVAL for the root.
 */
int protection_node_remove(ProtectionTree *t, ProtectionNode *node);

/*
 * protection_node_update - set a node's usage and settings (bytes;
 * PROTECTION_UNLIMITED for "max") and propagate its protected usage to the
 * parent if, and only if, it changed.
 *
 * Returns 1 if the parent's sums were changed, 0 if not.
 */
int protection_node_update(ProtectionTree *t, ProtectionNode *node,
                           uint64_t usage, uint64_t min, uint64_t low);

/*
 * protection_tree_compute - bring emin, elow and state up to date after
 * updates, additions and removals. Only subtrees touched since the last call
 * are visited; the result is the same as a full top-down recomputation.
 * @cb: optional, called for each node whose state changed, parents before
 *      children; it must not modify the tree
 *
 * Returns the number of nodes whose state changed.
 */
typedef void (*ProtectionStateChangedFn)(ProtectionNode *node, ProtectionState previous,
                                         ProtectionState state, void *userdata);
size_t protection_tree_compute(ProtectionTree *t, ProtectionStateChangedFn cb, void *userdata);

/*
 * protection_tree_lookup - find a node by path: "/" is the root, "/a/b" a
 * descendant. Returns NULL if there is none or the path is malformed
 * (relative, empty components, "." or "..", trailing slash).
 */
ProtectionNode *protection_tree_lookup(ProtectionTree *t, const char *path);

/* protection_node_child - the child of @parent named @name, or NULL. */
ProtectionNode *protection_node_child(ProtectionTree *t, const ProtectionNode *parent,
                                      const char *name);

/*
 * protection_node_next - pre-order iteration (parents before children) over
 * the subtree of @top: start with @top itself, then call with the previous
 * node until NULL.
 */
ProtectionNode *protection_node_next(const ProtectionNode *node, const ProtectionNode *top);

/* Structure accessors; NULL where there is none. */
ProtectionNode *protection_node_parent(const ProtectionNode *node);
ProtectionNode *protection_node_first_child(const ProtectionNode *node);
ProtectionNode *protection_node_next_sibling(const ProtectionNode *node);
/* The last path component, "" for the root. */
const char *protection_node_name(const ProtectionNode *node);

/*
 * protection_node_path - the node's path, "/" for the root, "/a/b" below.
 * @ret: malloc'ed string. Returns 0 or -ENOMEM.
 */
int protection_node_path(const ProtectionNode *node, char **ret);

/* protection_node_get - copy out all values of @node. */
void protection_node_get(const ProtectionNode *node, ProtectionValues *ret);
ProtectionState protection_node_state(const ProtectionNode *node);
uint64_t protection_node_usage(const ProtectionNode *node);

/* An opaque pointer for the owner of the tree (the reader keeps its fds there). */
void protection_node_set_userdata(ProtectionNode *node, void *userdata);
void *protection_node_get_userdata(const ProtectionNode *node);
