/* SPDX-License-Identifier: MIT */
/*
 * Randomized check of the protected-usage model: random trees and random
 * sequences of updates, additions, removals and rule switches (fixed
 * seeds), compared after every step against a plain recursive
 * recomputation from scratch written here, without incremental sums or
 * dirty flags. Values include 0, 1, page multiples, numbers around 2^50
 * and "max".
 */
#include "protection.h"
#include "tests.h"

#define MAX_NODES 96
#define INF PROTECTION_UNLIMITED
#define P50 (UINT64_C(1) << 50)

typedef struct Ref {
        bool alive;
        int parent; /* -1 for the root */
        uint64_t usage, min, low;
        ProtectionState reported;
        ProtectionNode *node;
} Ref;

static Ref refs[MAX_NODES];
static int n_refs;
static bool recursive;
static uint64_t rng_state;

static uint64_t rnd(void) {
        /* xorshift64* */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}

static uint64_t rnd_below(uint64_t n) {
        return rnd() % n;
}

static uint64_t random_bytes(void) {
        switch (rnd_below(8)) {
        case 0:
                return 0;
        case 1:
                return 1 + rnd_below(16);
        case 2:
                return P50 - rnd_below(4096);
        case 3:
                return P50;
        case 4:
                return rnd_below(P50 + 1);
        default:
                return rnd_below(UINT64_C(1) << 22) * 4096;
        }
}

static uint64_t random_setting(void) {
        return rnd_below(6) == 0 ? INF : random_bytes();
}

static uint64_t lesser(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

/* The reference: everything from scratch, following the kernel's rules. */

static uint64_t ref_setting(int i, bool low) {
        return low ? refs[i].low : refs[i].min;
}

static uint64_t ref_children_sum(int p, bool low) {
        uint64_t sum = 0;

        for (int i = 0; i < n_refs; i++)
                if (refs[i].alive && refs[i].parent == p)
                        sum += lesser(refs[i].usage, ref_setting(i, low));
        return sum;
}

static uint64_t ref_effective(int i, bool low) {
        int p = refs[i].parent;
        uint64_t usage = refs[i].usage, protected, parent_e, siblings, parent_usage;
        unsigned __int128 share;

        if (p < 0 || usage == 0)
                return 0;
        if (refs[p].parent < 0)
                return ref_setting(i, low);

        protected = lesser(usage, ref_setting(i, low));
        parent_e = ref_effective(p, low);
        parent_usage = refs[p].usage;
        siblings = ref_children_sum(p, low);

        if (parent_e != INF && siblings > parent_e)
                return (uint64_t) ((unsigned __int128) protected * parent_e / siblings);
        if (!recursive)
                return protected;
        if (parent_e <= siblings || parent_usage <= siblings || usage <= protected)
                return protected;
        if (parent_e == INF)
                return INF;
        share = (unsigned __int128) (parent_e - siblings) * (usage - protected);
        share /= parent_usage - siblings;
        share += protected;
        return share >= INF ? INF : (uint64_t) share;
}

static ProtectionState ref_state(int i) {
        uint64_t usage = refs[i].usage;

        if (usage == 0)
                return PROTECTION_STATE_NONE;
        if (usage <= ref_effective(i, false))
                return PROTECTION_STATE_MIN;
        if (usage <= ref_effective(i, true))
                return PROTECTION_STATE_LOW;
        return PROTECTION_STATE_NONE;
}

static int ref_find(const ProtectionNode *node) {
        for (int i = 0; i < n_refs; i++)
                if (refs[i].alive && refs[i].node == node)
                        return i;
        return -1;
}

static unsigned n_reported;

static void on_changed(ProtectionNode *node, ProtectionState previous, ProtectionState state,
                       void *userdata) {
        int i = ref_find(node);

        ASSERT_TRUE(i >= 0);
        ASSERT_EQ(previous, refs[i].reported);
        ASSERT_TRUE(previous != state);
        refs[i].reported = state;
        n_reported++;
}

static void check(ProtectionTree *t, uint64_t seed, unsigned step) {
        unsigned expected_changes = 0;
        size_t n_alive = 0;

        for (int i = 0; i < n_refs; i++)
                if (refs[i].alive && ref_state(i) != refs[i].reported)
                        expected_changes++;

        n_reported = 0;
        ASSERT_EQ(protection_tree_compute(t, on_changed, NULL), expected_changes);
        ASSERT_EQ(n_reported, expected_changes);

        for (int i = 0; i < n_refs; i++) {
                ProtectionValues v;

                if (!refs[i].alive)
                        continue;
                n_alive++;
                protection_node_get(refs[i].node, &v);
                if (v.emin != ref_effective(i, false) || v.elow != ref_effective(i, true) ||
                    v.state != ref_state(i))
                        fprintf(stderr, "seed %" PRIu64 " step %u node %d (parent %d, recursive %d)\n",
                                seed, step, i, refs[i].parent, recursive);
                ASSERT_U64_EQ(v.usage, refs[i].usage);
                ASSERT_U64_EQ(v.min_usage, lesser(refs[i].usage, refs[i].min));
                ASSERT_U64_EQ(v.low_usage, lesser(refs[i].usage, refs[i].low));
                ASSERT_U64_EQ(v.children_min_usage, ref_children_sum(i, false));
                ASSERT_U64_EQ(v.children_low_usage, ref_children_sum(i, true));
                ASSERT_U64_EQ(v.emin, ref_effective(i, false));
                ASSERT_U64_EQ(v.elow, ref_effective(i, true));
                ASSERT_EQ(v.state, ref_state(i));
                ASSERT_EQ(v.state, refs[i].reported);
        }
        ASSERT_EQ(protection_tree_size(t), n_alive);
}

static int random_alive(bool allow_root) {
        for (;;) {
                int i = (int) rnd_below((uint64_t) n_refs);

                if (refs[i].alive && (allow_root || refs[i].parent >= 0))
                        return i;
        }
}

static void op_update(ProtectionTree *t, bool always) {
        int i = random_alive(true);
        uint64_t usage = random_bytes(), min = random_setting(), low = random_setting();
        bool will_change = lesser(usage, min) != lesser(refs[i].usage, refs[i].min) ||
                           lesser(usage, low) != lesser(refs[i].usage, refs[i].low);
        ProtectionCounters before, after;
        int r;

        /* Sometimes rewrite the same values: must not propagate. */
        if (rnd_below(4) == 0) {
                usage = refs[i].usage;
                min = refs[i].min;
                low = refs[i].low;
                will_change = false;
        }
        protection_tree_get_counters(t, &before);
        r = protection_node_update(t, refs[i].node, usage, min, low);
        protection_tree_get_counters(t, &after);
        if (refs[i].parent < 0) {
                ASSERT_EQ(r, 0);
                ASSERT_U64_EQ(after.propagations_applied + after.propagations_skipped,
                              before.propagations_applied + before.propagations_skipped);
        } else {
                ASSERT_EQ(r, always || will_change);
                ASSERT_U64_EQ(after.propagations_applied - before.propagations_applied, r);
                ASSERT_U64_EQ(after.propagations_skipped - before.propagations_skipped, !r);
        }
        refs[i].usage = usage;
        refs[i].min = min;
        refs[i].low = low;
}

static unsigned name_counter;

static void op_add(ProtectionTree *t) {
        int p = random_alive(true), i;
        char name[16];

        /* Reuse the slot of a removed node, so the tree keeps changing shape. */
        for (i = 0; i < n_refs && refs[i].alive; i++)
                ;
        if (i >= MAX_NODES)
                return;
        snprintf(name, sizeof(name), "n%u", name_counter++);
        refs[i] = (Ref) { .alive = true, .parent = p, .reported = PROTECTION_STATE_NONE };
        ASSERT_OK(protection_node_add(t, refs[p].node, name, &refs[i].node));
        if (i == n_refs)
                n_refs++;
}

static bool ref_below(int i, int top) {
        for (; i >= 0; i = refs[i].parent)
                if (i == top)
                        return true;
        return false;
}

static void op_remove(ProtectionTree *t) {
        int top;

        if (protection_tree_size(t) < 2)
                return;
        top = random_alive(false);
        ASSERT_OK(protection_node_remove(t, refs[top].node));
        for (int i = 0; i < n_refs; i++)
                if (refs[i].alive && ref_below(i, top))
                        refs[i].alive = false;
}

/* Make usages hierarchical, as the kernel's are: parent = own + children. */
static uint64_t make_consistent(ProtectionTree *t, int i) {
        uint64_t sum = rnd_below(2) ? 0 : rnd_below(1 << 20) * 4096;

        for (int c = 0; c < n_refs; c++)
                if (refs[c].alive && refs[c].parent == i)
                        sum += make_consistent(t, c);
        refs[i].usage = sum;
        (void) protection_node_update(t, refs[i].node, sum, refs[i].min, refs[i].low);
        return sum;
}

static void op_consistent(ProtectionTree *t) {
        (void) make_consistent(t, 0);
}

static void run_seed(uint64_t seed, unsigned steps) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        bool always = false;

        rng_state = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
        recursive = seed % 2;
        ASSERT_OK(protection_tree_new(recursive, &t));
        memset(refs, 0, sizeof(refs));
        name_counter = 0;
        refs[0] = (Ref) { .alive = true, .parent = -1, .node = protection_tree_root(t) };
        n_refs = 1;

        for (unsigned i = 0; i < 24; i++)
                op_add(t);
        check(t, seed, 0);

        for (unsigned step = 1; step <= steps; step++) {
                unsigned n_ops = 1 + (unsigned) rnd_below(6);

                for (unsigned k = 0; k < n_ops; k++) {
                        uint64_t roll = rnd_below(100);

                        if (roll < 70)
                                op_update(t, always);
                        else if (roll < 85)
                                op_add(t);
                        else if (roll < 92)
                                op_remove(t);
                        else if (roll < 95)
                                op_consistent(t);
                        else if (roll < 98) {
                                recursive = !recursive;
                                protection_tree_set_recursive(t, recursive);
                        } else {
                                always = !always;
                                protection_tree_set_always_propagate(t, always);
                        }
                }
                check(t, seed, step);
        }
}

int main(void) {
        for (uint64_t seed = 1; seed <= 40; seed++)
                run_seed(seed, 400);
        return 0;
}
