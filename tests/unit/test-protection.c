/* SPDX-License-Identifier: MIT */
/*
 * The protected-usage model against hand-computed cases: the A/B/C/D/E
 * example of the memory.low documentation, recursive protection,
 * overcommitted siblings, unlimited settings, empty cgroups, 2^50-byte
 * values, propagation counts, adding and removing nodes.
 */
#include "protection.h"
#include "tests.h"

#define K UINT64_C(1024)
#define M (K * K)
#define G (M * K)
#define MAX PROTECTION_UNLIMITED

static ProtectionNode *add(ProtectionTree *t, const char *parent_path, const char *name) {
        ProtectionNode *parent = protection_tree_lookup(t, parent_path), *n = NULL;

        ASSERT_TRUE(parent);
        ASSERT_OK(protection_node_add(t, parent, name, &n));
        ASSERT_TRUE(n);
        return n;
}

static ProtectionValues get(ProtectionTree *t, const char *path) {
        ProtectionNode *n = protection_tree_lookup(t, path);
        ProtectionValues v;

        if (!n)
                TEST_FAIL("no node %s", path);
        protection_node_get(n, &v);
        return v;
}

static void update(ProtectionTree *t, const char *path, uint64_t usage, uint64_t min, uint64_t low) {
        ProtectionNode *n = protection_tree_lookup(t, path);

        if (!n)
                TEST_FAIL("no node %s", path);
        (void) protection_node_update(t, n, usage, min, low);
}

static uint64_t applied(ProtectionTree *t) {
        ProtectionCounters c;

        protection_tree_get_counters(t, &c);
        return c.propagations_applied;
}

static uint64_t skipped(ProtectionTree *t) {
        ProtectionCounters c;

        protection_tree_get_counters(t, &c);
        return c.propagations_skipped;
}

/*
 * The example from the memory.low documentation (and the commit that made
 * memory.low hierarchical):
 *   A      A/memory.low = 2G, A/memory.current = 6G
 *  //\\
 * BC  DE   B/memory.low = 3G  B/memory.current = 2G
 *          C/memory.low = 1G  C/memory.current = 2G
 *          D/memory.low = 0   D/memory.current = 2G
 *          E/memory.low = 10G E/memory.current = 0
 * Under pressure the documentation expects A at 2G with B ~= 1.3G,
 * C ~= 0.6G, D ~= 0 and E = 0: B and C get 2G * 2/3 and 2G * 1/3.
 */
static void build_abcde(ProtectionTree *t) {
        add(t, "/", "A");
        add(t, "/A", "B");
        add(t, "/A", "C");
        add(t, "/A", "D");
        add(t, "/A", "E");
        update(t, "/A", 6 * G, 0, 2 * G);
        update(t, "/A/B", 2 * G, 0, 3 * G);
        update(t, "/A/C", 2 * G, 0, 1 * G);
        update(t, "/A/D", 2 * G, 0, 0);
        update(t, "/A/E", 0, 0, 10 * G);
        update(t, "/", 6 * G, 0, 0);
        (void) protection_tree_compute(t, NULL, NULL);
}

static void test_documentation_example(bool recursive) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionValues a, b, c, d, e;

        ASSERT_OK(protection_tree_new(recursive, &t));
        build_abcde(t);

        a = get(t, "/A");
        ASSERT_U64_EQ(a.elow, 2 * G);              /* a child of the root: its own setting */
        ASSERT_U64_EQ(a.low_usage, 2 * G);
        ASSERT_U64_EQ(a.children_low_usage, 3 * G); /* 2G (B) + 1G (C) + 0 + 0 */
        ASSERT_EQ(a.state, PROTECTION_STATE_NONE);

        /* Overcommitted: 3G claimed of 2G; shares by protected usage. */
        b = get(t, "/A/B");
        c = get(t, "/A/C");
        d = get(t, "/A/D");
        e = get(t, "/A/E");
        ASSERT_U64_EQ(b.elow, 2 * G * 2 * G / (3 * G));  /* 1.33G */
        ASSERT_U64_EQ(b.elow, UINT64_C(1431655765));
        ASSERT_U64_EQ(c.elow, UINT64_C(715827882));       /* 0.67G */
        ASSERT_U64_EQ(d.elow, 0);
        ASSERT_U64_EQ(e.elow, 0);
        ASSERT_U64_EQ(e.low_usage, 0);
        ASSERT_EQ(b.state, PROTECTION_STATE_NONE);
        ASSERT_EQ(c.state, PROTECTION_STATE_NONE);
        ASSERT_EQ(d.state, PROTECTION_STATE_NONE);
        ASSERT_EQ(e.state, PROTECTION_STATE_NONE);

        /* Reclaim shrinks everyone down to those shares: now all are protected. */
        update(t, "/A/B", UINT64_C(1431655765), 0, 3 * G);
        update(t, "/A/C", UINT64_C(715827882), 0, 1 * G);
        update(t, "/A/D", 0, 0, 0);
        update(t, "/A", UINT64_C(1431655765) + UINT64_C(715827882), 0, 2 * G);
        update(t, "/", UINT64_C(1431655765) + UINT64_C(715827882), 0, 0);
        (void) protection_tree_compute(t, NULL, NULL);
        ASSERT_EQ(get(t, "/A").state, PROTECTION_STATE_LOW);
        ASSERT_EQ(get(t, "/A/B").state, PROTECTION_STATE_LOW);
        ASSERT_EQ(get(t, "/A/C").state, PROTECTION_STATE_LOW);
        ASSERT_U64_EQ(get(t, "/A/B").elow, UINT64_C(1431655765));
        ASSERT_U64_EQ(get(t, "/A/C").elow, UINT64_C(715827882));
        ASSERT_EQ(get(t, "/A/D").state, PROTECTION_STATE_NONE);
        ASSERT_EQ(get(t, "/A/E").state, PROTECTION_STATE_NONE);
        ASSERT_EQ(get(t, "/").state, PROTECTION_STATE_NONE);
        ASSERT_U64_EQ(get(t, "/").elow, 0);
}

/* memory_recursiveprot: unclaimed protection goes to unprotected usage. */
static void test_recursive(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionValues x, y;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "P");
        add(t, "/P", "X");
        add(t, "/P", "Y");
        update(t, "/P", 8 * G, 0, 10 * G);
        update(t, "/P/X", 3 * G, 0, 2 * G);
        update(t, "/P/Y", 5 * G, 0, 0);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 1); /* P: none -> low */

        x = get(t, "/P/X");
        y = get(t, "/P/Y");
        ASSERT_U64_EQ(x.elow, 2 * G);
        ASSERT_U64_EQ(y.elow, 0);
        ASSERT_EQ(x.state, PROTECTION_STATE_NONE);
        ASSERT_EQ(y.state, PROTECTION_STATE_NONE);
        ASSERT_EQ(get(t, "/P").state, PROTECTION_STATE_LOW);

        protection_tree_set_recursive(t, true);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 2);
        x = get(t, "/P/X");
        y = get(t, "/P/Y");
        /* unclaimed = (10G - 2G) * (usage - protected) / (8G - 2G) */
        ASSERT_U64_EQ(x.elow, 2 * G + 8 * G * 1 * G / (6 * G));
        ASSERT_U64_EQ(x.elow, UINT64_C(3579139413));
        ASSERT_U64_EQ(y.elow, (uint64_t) ((unsigned __int128) 8 * G * 5 * G / (6 * G)));
        ASSERT_U64_EQ(y.elow, UINT64_C(7158278826));
        ASSERT_EQ(x.state, PROTECTION_STATE_LOW);
        ASSERT_EQ(y.state, PROTECTION_STATE_LOW);
        /* emin: nothing to hand out. */
        ASSERT_U64_EQ(x.emin, 0);

        protection_tree_set_recursive(t, false);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 2);
        ASSERT_U64_EQ(get(t, "/P/Y").elow, 0);
}

/* memory.min claimed three times over. */
static void test_overcommit_min(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "P");
        add(t, "/P", "a");
        add(t, "/P", "b");
        add(t, "/P", "c");
        update(t, "/P", 3 * G, 1 * G, 0);
        update(t, "/P/a", 1 * G, 1 * G, 0);
        update(t, "/P/b", 1 * G, 1 * G, 0);
        update(t, "/P/c", 1 * G, 1 * G, 0);
        (void) protection_tree_compute(t, NULL, NULL);

        ASSERT_U64_EQ(get(t, "/P").children_min_usage, 3 * G);
        ASSERT_U64_EQ(get(t, "/P").emin, 1 * G);
        ASSERT_U64_EQ(get(t, "/P/a").emin, G / 3);
        ASSERT_U64_EQ(get(t, "/P/c").emin, UINT64_C(357913941));
        ASSERT_EQ(get(t, "/P/a").state, PROTECTION_STATE_NONE);

        /* b and c shrink: no more overcommit, a keeps all of its 1G. */
        update(t, "/P/b", 0, 1 * G, 0);
        update(t, "/P/c", 0, 1 * G, 0);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 1);
        ASSERT_U64_EQ(get(t, "/P/a").emin, 1 * G);
        ASSERT_EQ(get(t, "/P/a").state, PROTECTION_STATE_MIN);
        ASSERT_U64_EQ(get(t, "/P").children_min_usage, 1 * G);
}

/* "max" settings: min(usage, max) = usage; effective values can be unlimited. */
static void test_unlimited(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionValues q, u, z;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "Q");
        add(t, "/Q", "u");
        add(t, "/Q", "z");
        update(t, "/Q", 5 * G, MAX, MAX);
        update(t, "/Q/u", 2 * G, MAX, 0);
        update(t, "/Q/z", 1 * G, 0, 0);
        (void) protection_tree_compute(t, NULL, NULL);

        q = get(t, "/Q");
        ASSERT_U64_EQ(q.emin, MAX);
        ASSERT_U64_EQ(q.elow, MAX);
        ASSERT_U64_EQ(q.min_usage, 5 * G);
        ASSERT_U64_EQ(q.children_min_usage, 2 * G);
        ASSERT_EQ(q.state, PROTECTION_STATE_MIN);

        u = get(t, "/Q/u");
        ASSERT_U64_EQ(u.min_usage, 2 * G);
        ASSERT_U64_EQ(u.emin, 2 * G);
        ASSERT_EQ(u.state, PROTECTION_STATE_MIN);

        z = get(t, "/Q/z");
        ASSERT_U64_EQ(z.emin, 0);
        ASSERT_EQ(z.state, PROTECTION_STATE_NONE);

        /* Recursively, the unprotected z shares an unlimited parent value. */
        protection_tree_set_recursive(t, true);
        (void) protection_tree_compute(t, NULL, NULL);
        ASSERT_U64_EQ(get(t, "/Q/z").emin, MAX);
        ASSERT_EQ(get(t, "/Q/z").state, PROTECTION_STATE_MIN);
        ASSERT_U64_EQ(get(t, "/Q/u").emin, 2 * G);
}

/* Empty cgroups report 0 effective protection and state "none". */
static void test_zero_usage(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionValues v;

        ASSERT_OK(protection_tree_new(true, &t));
        add(t, "/", "E");
        add(t, "/E", "e");
        update(t, "/E", 0, 1 * G, 2 * G);
        update(t, "/E/e", 0, MAX, MAX);
        (void) protection_tree_compute(t, NULL, NULL);
        v = get(t, "/E");
        ASSERT_U64_EQ(v.emin, 0);
        ASSERT_U64_EQ(v.elow, 0);
        ASSERT_U64_EQ(v.min_usage, 0);
        ASSERT_EQ(v.state, PROTECTION_STATE_NONE);
        v = get(t, "/E/e");
        ASSERT_U64_EQ(v.emin, 0);
        ASSERT_EQ(v.state, PROTECTION_STATE_NONE);

        /* One byte charged: now it is protected, and its child shares. */
        update(t, "/E", 1, 1 * G, 2 * G);
        update(t, "/E/e", 1, MAX, MAX);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 2);
        ASSERT_U64_EQ(get(t, "/E").emin, 1 * G);
        ASSERT_EQ(get(t, "/E").state, PROTECTION_STATE_MIN);
        ASSERT_U64_EQ(get(t, "/E/e").emin, 1);
        ASSERT_EQ(get(t, "/E/e").state, PROTECTION_STATE_MIN);
}

/* 2^50-byte values: products need 100 bits. */
static void test_huge(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        const uint64_t P50 = UINT64_C(1) << 50, P48 = UINT64_C(1) << 48;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "A");
        add(t, "/A", "B");
        add(t, "/A", "C");
        update(t, "/A", P50, P50, P50);
        update(t, "/A/B", 3 * P48, P50, P50);
        update(t, "/A/C", 3 * P48, P50, P50);
        (void) protection_tree_compute(t, NULL, NULL);
        /* 3*2^48 * 2^50 / (6*2^48) = 2^49 */
        ASSERT_U64_EQ(get(t, "/A/B").emin, P50 / 2);
        ASSERT_U64_EQ(get(t, "/A/C").elow, P50 / 2);
        ASSERT_U64_EQ(get(t, "/A").children_min_usage, 6 * P48);

        /* Recursive share with a 2^100 intermediate product. */
        update(t, "/A/B", P50 - 1, 0, 0);
        update(t, "/A/C", 1, 1, 1);
        protection_tree_set_recursive(t, true);
        (void) protection_tree_compute(t, NULL, NULL);
        /* (2^50 - 1) * (2^50 - 1) / (2^50 - 1) */
        ASSERT_U64_EQ(get(t, "/A/B").emin, P50 - 1);
        ASSERT_EQ(get(t, "/A/B").state, PROTECTION_STATE_MIN);
        ASSERT_U64_EQ(get(t, "/A/C").emin, 1);
}

/* A chain root -> a -> b -> c -> leaf. */
static ProtectionTree *build_chain(uint64_t ancestor_low) {
        ProtectionTree *t;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "a");
        add(t, "/a", "b");
        add(t, "/a/b", "c");
        add(t, "/a/b/c", "leaf");
        update(t, "/a", 1000, 0, ancestor_low);
        update(t, "/a/b", 1000, 0, ancestor_low);
        update(t, "/a/b/c", 1000, 0, ancestor_low);
        update(t, "/a/b/c/leaf", 90, 0, 100);
        (void) protection_tree_compute(t, NULL, NULL);
        return t;
}

static void refresh_chain(ProtectionTree *t, uint64_t leaf, uint64_t ancestor_low) {
        uint64_t total = 910 + leaf;

        update(t, "/", total, 0, 0);
        update(t, "/a", total, 0, ancestor_low);
        update(t, "/a/b", total, 0, ancestor_low);
        update(t, "/a/b/c", total, 0, ancestor_low);
        update(t, "/a/b/c/leaf", leaf, 0, 100);
}

static void test_propagation_counts(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        uint64_t a0, s0;

        /* Ancestors well below their (large) low: their low_usage follows usage. */
        t = build_chain(10 * G);
        refresh_chain(t, 90, 10 * G);
        a0 = applied(t);
        s0 = skipped(t);
        refresh_chain(t, 90, 10 * G);
        ASSERT_U64_EQ(applied(t) - a0, 0);          /* unchanged: nothing applied */
        ASSERT_U64_EQ(skipped(t) - s0, 4);          /* every non-root update skipped */
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 0);

        a0 = applied(t);
        refresh_chain(t, 110, 10 * G);              /* leaf crosses its low of 100 */
        ASSERT_TRUE(applied(t) - a0 >= 1);
        ASSERT_U64_EQ(applied(t) - a0, 4);
        ASSERT_U64_EQ(get(t, "/a/b/c/leaf").low_usage, 100);
        ASSERT_U64_EQ(get(t, "/a/b/c").children_low_usage, 100);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 1); /* only the leaf: low -> none */
        ASSERT_EQ(get(t, "/a/b/c/leaf").state, PROTECTION_STATE_NONE);
        t = protection_tree_free(t);

        /* Ancestors above their low: only the leaf's own change propagates. */
        t = build_chain(10);
        a0 = applied(t);
        refresh_chain(t, 110, 10);
        ASSERT_U64_EQ(applied(t) - a0, 1);
        ASSERT_U64_EQ(get(t, "/a/b/c").children_low_usage, 100);
        ASSERT_U64_EQ(get(t, "/a/b").children_low_usage, 10);

        /* The unoptimized mode applies every update, with the same results. */
        protection_tree_set_always_propagate(t, true);
        a0 = applied(t);
        s0 = skipped(t);
        refresh_chain(t, 110, 10);
        ASSERT_U64_EQ(applied(t) - a0, 4);
        ASSERT_U64_EQ(skipped(t) - s0, 0);
        ASSERT_U64_EQ(get(t, "/a/b/c").children_low_usage, 100);
        ASSERT_EQ(protection_tree_compute(t, NULL, NULL), 0);
}

typedef struct Seen {
        unsigned n;
        ProtectionNode *node[8];
        ProtectionState previous[8], state[8];
} Seen;

static void on_changed(ProtectionNode *node, ProtectionState previous, ProtectionState state, void *userdata) {
        Seen *s = userdata;

        ASSERT_TRUE(s->n < ELEMENTSOF(s->node));
        s->node[s->n] = node;
        s->previous[s->n] = previous;
        s->state[s->n] = state;
        s->n++;
}

static void test_add_remove(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionNode *x, *y, *yc;
        Seen seen = {};
        uint64_t a0;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "P");
        x = add(t, "/P", "x");
        update(t, "/P", 3 * G, 0, 1 * G);
        update(t, "/P/x", 1 * G, 0, 1 * G);
        (void) protection_tree_compute(t, NULL, NULL);
        ASSERT_EQ(protection_node_state(x), PROTECTION_STATE_LOW);

        ASSERT_ERR(protection_node_add(t, protection_tree_lookup(t, "/P"), "x", NULL), EEXIST);
        ASSERT_ERR(protection_node_add(t, protection_tree_lookup(t, "/P"), "..", NULL), EINVAL);
        ASSERT_ERR(protection_node_add(t, protection_tree_lookup(t, "/P"), "a/b", NULL), EINVAL);
        ASSERT_ERR(protection_node_add(t, protection_tree_lookup(t, "/P"), "", NULL), EINVAL);

        /* A sibling claiming as much halves x's share. */
        a0 = applied(t);
        y = add(t, "/P", "y");
        yc = add(t, "/P/y", "child");
        update(t, "/P/y", 1 * G, 0, 1 * G);
        ASSERT_U64_EQ(applied(t) - a0, 1);
        ASSERT_U64_EQ(get(t, "/P").children_low_usage, 2 * G);
        ASSERT_EQ(protection_tree_compute(t, on_changed, &seen), 1);
        ASSERT_EQ(seen.n, 1);
        ASSERT_TRUE(seen.node[0] == x);
        ASSERT_EQ(seen.previous[0], PROTECTION_STATE_LOW);
        ASSERT_EQ(seen.state[0], PROTECTION_STATE_NONE);
        ASSERT_U64_EQ(protection_node_usage(y), 1 * G);
        ASSERT_TRUE(protection_node_parent(yc) == y);
        ASSERT_EQ(protection_tree_size(t), 5);

        /* Removing it (with its child) is a change: x gets everything back. */
        a0 = applied(t);
        ASSERT_OK(protection_node_remove(t, y));
        ASSERT_U64_EQ(applied(t) - a0, 1);
        ASSERT_U64_EQ(get(t, "/P").children_low_usage, 1 * G);
        ASSERT_TRUE(protection_tree_lookup(t, "/P/y") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "/P/y/child") == NULL);
        ASSERT_EQ(protection_tree_size(t), 3);
        seen.n = 0;
        ASSERT_EQ(protection_tree_compute(t, on_changed, &seen), 1);
        ASSERT_EQ(seen.state[0], PROTECTION_STATE_LOW);
        ASSERT_ERR(protection_node_remove(t, protection_tree_root(t)), EINVAL);

        /* Removing an unprotected node changes no sums. */
        add(t, "/P", "idle");
        a0 = applied(t);
        ASSERT_OK(protection_node_remove(t, protection_tree_lookup(t, "/P/idle")));
        ASSERT_U64_EQ(applied(t) - a0, 0);
}

static void test_lookup_iterate(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        const char *expected[] = { "/", "/a", "/a/x", "/a/x/deep", "/a/y", "/b" };
        ProtectionNode *root, *a;
        size_t i = 0;

        ASSERT_OK(protection_tree_new(false, &t));
        add(t, "/", "a");
        add(t, "/a", "x");
        add(t, "/a/x", "deep");
        add(t, "/a", "y");
        add(t, "/", "b");
        root = protection_tree_root(t);
        ASSERT_TRUE(protection_tree_lookup(t, "/") == root);
        ASSERT_STREQ(protection_node_name(protection_tree_lookup(t, "/a/x/deep")), "deep");
        ASSERT_TRUE(protection_tree_lookup(t, "a") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "/a/") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "//a") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "/a/../b") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "/c") == NULL);
        ASSERT_TRUE(protection_tree_lookup(t, "") == NULL);

        for (ProtectionNode *n = root; n; n = protection_node_next(n, root), i++) {
                _cleanup_free_ char *path = NULL;

                ASSERT_TRUE(i < ELEMENTSOF(expected));
                ASSERT_OK(protection_node_path(n, &path));
                ASSERT_STREQ(path, expected[i]);
        }
        ASSERT_EQ(i, ELEMENTSOF(expected));

        /* Iterating a subtree stays inside it. */
        a = protection_tree_lookup(t, "/a");
        i = 0;
        for (ProtectionNode *n = a; n; n = protection_node_next(n, a))
                i++;
        ASSERT_EQ(i, 4);
        ASSERT_STREQ(protection_state_to_string(PROTECTION_STATE_MIN), "min");
        ASSERT_STREQ(protection_state_to_string(PROTECTION_STATE_LOW), "low");
        ASSERT_STREQ(protection_state_to_string(PROTECTION_STATE_NONE), "none");
        ASSERT_TRUE(protection_state_to_string(_PROTECTION_STATE_MAX) == NULL);
}

/* Many siblings: the hash table grows, shrinks and keeps finding everyone. */
static void test_many_children(void) {
        _cleanup_(protection_tree_freep) ProtectionTree *t = NULL;
        ProtectionNode *root;
        char name[32];

        ASSERT_OK(protection_tree_new(false, &t));
        root = protection_tree_root(t);
        for (unsigned i = 0; i < 5000; i++) {
                snprintf(name, sizeof(name), "n%u", i);
                ASSERT_OK(protection_node_add(t, root, name, NULL));
        }
        for (unsigned i = 0; i < 5000; i += 2) {
                snprintf(name, sizeof(name), "n%u", i);
                ASSERT_OK(protection_node_remove(t, protection_node_child(t, root, name)));
        }
        for (unsigned i = 0; i < 5000; i++) {
                snprintf(name, sizeof(name), "n%u", i);
                ASSERT_EQ(protection_node_child(t, root, name) != NULL, i % 2 == 1);
        }
        ASSERT_EQ(protection_tree_size(t), 2501);
}

int main(void) {
        test_documentation_example(false);
        test_documentation_example(true);
        test_recursive();
        test_overcommit_min();
        test_unlimited();
        test_zero_usage();
        test_huge();
        test_propagation_counts();
        test_add_remove();
        test_lookup_iterate();
        test_many_children();
        return 0;
}
