/* SPDX-License-Identifier: MIT */
/*
 * The cgroup tree reader on fake cgroup2 trees in a temporary directory:
 * what is read for a tracked subtree, state changes, cgroups appearing and
 * vanishing between refreshes, symlinks not followed, reference counting,
 * descriptors released, the cost of an unchanged refresh, and the JSON.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "event.h"
#include "protection-tree.h"
#include "tests.h"

#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)

static char base[] = "/tmp/test-protection-tree-XXXXXX";

static void write_value(const char *cgroup, const char *file, uint64_t v) {
        char rel[PATH_MAX], text[32];

        snprintf(rel, sizeof(rel), "%s/%s", cgroup, file);
        snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
        test_write_file_at(base, rel, text);
}

static void make_cgroup(const char *cgroup, uint64_t usage, uint64_t min, uint64_t low) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s%s", base, cgroup);
        if (mkdir(path, 0755) < 0)
                TEST_FAIL("mkdir %s: %s", path, strerror(errno));
        write_value(cgroup, "memory.current", usage);
        write_value(cgroup, "memory.min", min);
        write_value(cgroup, "memory.low", low);
}

static void remove_tree(const char *rel) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s%s", base, rel);
        ASSERT_OK(test_rm_tree(path));
}

static unsigned count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;

        ASSERT_TRUE(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

typedef struct Report {
        char cgroup[64];
        ProtectionState previous, state;
        bool removed;
} Report;

typedef struct Recorder {
        Report reports[16];
        unsigned n;
        const char *untrack_on_removal;
        int track_in_callback;
} Recorder;

static void on_change(ProtectionReader *r, const ProtectionChange *c, void *userdata) {
        Recorder *rec = userdata;
        Report *p;

        ASSERT_TRUE(rec->n < ELEMENTSOF(rec->reports));
        p = &rec->reports[rec->n++];
        snprintf(p->cgroup, sizeof(p->cgroup), "%s", c->cgroup);
        p->previous = c->previous;
        p->state = c->state;
        p->removed = c->removed;
        ASSERT_EQ(c->node == NULL, c->removed);

        if (c->removed && rec->untrack_on_removal && streq(c->cgroup, rec->untrack_on_removal)) {
                ASSERT_OK(protection_reader_untrack(r, c->cgroup));
                rec->track_in_callback = protection_reader_track(r, "/a");
                ASSERT_EQ(protection_reader_refresh(r), -EBUSY);
        }
}

static const Report *find_report(const Recorder *rec, const char *cgroup) {
        for (unsigned i = 0; i < rec->n; i++)
                if (streq(rec->reports[i].cgroup, cgroup))
                        return &rec->reports[i];
        return NULL;
}

static ProtectionValues values(ProtectionReader *r, const char *cgroup) {
        ProtectionNode *n = protection_reader_lookup(r, cgroup);
        ProtectionValues v;

        if (!n)
                TEST_FAIL("%s not in the model", cgroup);
        protection_node_get(n, &v);
        return v;
}

static void build_tree(void) {
        ASSERT_TRUE(mkdtemp(base));
        /* The root has no memory.* files at all, like a real cgroup2 root. */
        make_cgroup("/a", 1 * G, 0, 1 * G);
        make_cgroup("/a/b", 100 * M, 0, 150 * M);
        make_cgroup("/a/c", 200 * M, 0, 100 * M);
        make_cgroup("/x", 500 * M, 0, 0);
        make_cgroup("/x/y", 100 * M, 0, 0);
        test_write_file_at(base, "/a/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
}

static void test_reader(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;
        ProtectionReaderStats s0, s1;
        ProtectionCounters c0, c1;
        Recorder rec = {};
        unsigned fds_before;
        const Report *p;

        fds_before = count_fds();
        ASSERT_OK(protection_reader_new(base, false, &r));
        protection_reader_set_callback(r, on_change, &rec);
        ASSERT_EQ(count_fds(), fds_before + 1);

        /* Nothing tracked: a refresh reads nothing. */
        ASSERT_OK(protection_reader_refresh(r));
        protection_reader_get_stats(r, &s0);
        ASSERT_U64_EQ(s0.syscalls, 0);

        ASSERT_ERR(protection_reader_track(r, "/nope"), ENOENT);
        ASSERT_ERR(protection_reader_track(r, "a"), EINVAL);
        ASSERT_ERR(protection_reader_track(r, "/a/../x"), EINVAL);
        ASSERT_ERR(protection_reader_track(r, "/a/"), EINVAL);
        ASSERT_ERR(protection_reader_track(r, "/a\n"), EINVAL);
        ASSERT_ERR(protection_reader_track(r, "/a/memory.min"), ENOTDIR);
        ASSERT_EQ(protection_reader_n_tracked(r), 0);

        ASSERT_OK(protection_reader_track(r, "/a"));
        ASSERT_EQ(rec.n, 0); /* a new subtree's initial states are not reported */
        ASSERT_EQ(protection_reader_n_tracked(r), 1);

        /* The subtree, the ancestors' children (shallow), not their grandchildren. */
        ASSERT_TRUE(protection_reader_lookup(r, "/a/b"));
        ASSERT_TRUE(protection_reader_lookup(r, "/a/c"));
        ASSERT_TRUE(protection_reader_lookup(r, "/x"));
        ASSERT_TRUE(protection_reader_lookup(r, "/x/y") == NULL);

        /* The root has no memory.current: it is the sum of its children's. */
        ASSERT_U64_EQ(values(r, "/").usage, 1 * G + 500 * M);
        ASSERT_U64_EQ(values(r, "/").min, 0);
        ASSERT_U64_EQ(values(r, "/x").usage, 500 * M);
        ASSERT_U64_EQ(values(r, "/a").elow, 1 * G);
        ASSERT_U64_EQ(values(r, "/a").children_low_usage, 200 * M);
        ASSERT_U64_EQ(values(r, "/a/b").elow, 100 * M);
        ASSERT_EQ(values(r, "/a/b").state, PROTECTION_STATE_LOW);
        ASSERT_U64_EQ(values(r, "/a/c").elow, 100 * M);
        ASSERT_EQ(values(r, "/a/c").state, PROTECTION_STATE_NONE);
        ASSERT_EQ(values(r, "/a").state, PROTECTION_STATE_LOW);

        /* An unchanged refresh: no listing, no propagation, only fstat + pread. */
        protection_reader_get_stats(r, &s0);
        protection_tree_get_counters(protection_reader_get_tree(r), &c0);
        ASSERT_OK(protection_reader_refresh(r));
        protection_reader_get_stats(r, &s1);
        protection_tree_get_counters(protection_reader_get_tree(r), &c1);
        ASSERT_U64_EQ(c1.propagations_applied - c0.propagations_applied, 0);
        ASSERT_U64_EQ(c1.propagations_skipped - c0.propagations_skipped, 4); /* a, b, c, x */
        ASSERT_U64_EQ(s1.getdents - s0.getdents, 0);
        ASSERT_U64_EQ(s1.dirs_listed - s0.dirs_listed, 0);
        ASSERT_U64_EQ(s1.dirs_unchanged - s0.dirs_unchanged, 4); /* /, a, b, c */
        ASSERT_U64_EQ(s1.preads - s0.preads, 4 * 3);
        ASSERT_U64_EQ(s1.syscalls - s0.syscalls, 4 * 3 + 4);
        ASSERT_EQ(rec.n, 0);

        /* b grows past its low. */
        write_value("/a/b", "memory.current", 200 * M);
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_EQ(rec.n, 1);
        ASSERT_STREQ(rec.reports[0].cgroup, "/a/b");
        ASSERT_EQ(rec.reports[0].previous, PROTECTION_STATE_LOW);
        ASSERT_EQ(rec.reports[0].state, PROTECTION_STATE_NONE);
        ASSERT_TRUE(!rec.reports[0].removed);

        /* A cgroup appears, already protected. */
        rec.n = 0;
        make_cgroup("/a/d", 10 * M, 0, 20 * M);
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(protection_reader_lookup(r, "/a/d"));
        p = find_report(&rec, "/a/d");
        ASSERT_TRUE(p);
        ASSERT_EQ(p->previous, PROTECTION_STATE_NONE);
        ASSERT_EQ(p->state, PROTECTION_STATE_LOW);
        ASSERT_U64_EQ(values(r, "/a").children_low_usage, 150 * M + 100 * M + 10 * M);

        /* One vanishes. */
        rec.n = 0;
        remove_tree("/a/c");
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(protection_reader_lookup(r, "/a/c") == NULL);
        p = find_report(&rec, "/a/c");
        ASSERT_TRUE(p);
        ASSERT_TRUE(p->removed);
        ASSERT_EQ(p->previous, PROTECTION_STATE_NONE);
        ASSERT_U64_EQ(values(r, "/a").children_low_usage, 150 * M + 10 * M);

        /* One vanishes and another appears at once (link count unchanged). */
        rec.n = 0;
        remove_tree("/a/d");
        make_cgroup("/a/f", 1 * M, 0, 0);
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(protection_reader_lookup(r, "/a/d") == NULL);
        ASSERT_TRUE(protection_reader_lookup(r, "/a/f"));
        p = find_report(&rec, "/a/d");
        ASSERT_TRUE(p && p->removed);
        ASSERT_U64_EQ(values(r, "/a").children_low_usage, 150 * M);

        /* Symlinks are neither listed nor tracked. */
        {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/a/link", base);
                ASSERT_EQ(symlink("../x", path), 0);
                snprintf(path, sizeof(path), "%s/escape", base);
                ASSERT_EQ(symlink("/", path), 0);
        }
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(protection_reader_lookup(r, "/a/link") == NULL);
        ASSERT_TRUE(protection_reader_lookup(r, "/escape") == NULL);
        ASSERT_TRUE(protection_reader_track(r, "/a/link") == -ELOOP ||
                    protection_reader_track(r, "/a/link") == -ENOTDIR);
        ASSERT_TRUE(protection_reader_track(r, "/escape/tmp") == -ELOOP ||
                    protection_reader_track(r, "/escape/tmp") == -ENOTDIR);

        /* Missing files read as 0 and are picked up when they appear. */
        {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/a/nomem", base);
                ASSERT_EQ(mkdir(path, 0755), 0);
        }
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_U64_EQ(values(r, "/a/nomem").usage, 0);
        write_value("/a/nomem", "memory.current", 5 * M);
        write_value("/a/nomem", "memory.low", 5 * M);
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_U64_EQ(values(r, "/a/nomem").usage, 5 * M);
        ASSERT_EQ(values(r, "/a/nomem").state, PROTECTION_STATE_LOW);

        /* Garbage keeps the previous value and is counted. */
        protection_reader_get_stats(r, &s0);
        test_write_file_at(base, "/a/b/memory.low", "lots\n");
        ASSERT_OK(protection_reader_refresh(r));
        protection_reader_get_stats(r, &s1);
        ASSERT_U64_EQ(s1.read_errors - s0.read_errors, 1);
        ASSERT_U64_EQ(values(r, "/a/b").low, 150 * M);
        test_write_file_at(base, "/a/b/memory.low", "max\n");
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_U64_EQ(values(r, "/a/b").low, PROTECTION_UNLIMITED);

        /* A second subtree, reference counts, and untracking from the callback. */
        ASSERT_OK(protection_reader_track(r, "/x"));
        ASSERT_OK(protection_reader_track(r, "/x"));
        ASSERT_EQ(protection_reader_n_tracked(r), 2);
        ASSERT_TRUE(protection_reader_lookup(r, "/x/y"));
        ASSERT_OK(protection_reader_untrack(r, "/x"));
        ASSERT_TRUE(protection_reader_lookup(r, "/x/y"));
        ASSERT_OK(protection_reader_untrack(r, "/x"));
        ASSERT_TRUE(protection_reader_lookup(r, "/x/y") == NULL); /* pruned */
        ASSERT_TRUE(protection_reader_lookup(r, "/x"));           /* still a sibling of /a */
        ASSERT_ERR(protection_reader_untrack(r, "/x"), ENOENT);

        ASSERT_OK(protection_reader_track(r, "/x"));
        rec.n = 0;
        rec.untrack_on_removal = "/x";
        remove_tree("/x");
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(find_report(&rec, "/x") && find_report(&rec, "/x")->removed);
        ASSERT_TRUE(find_report(&rec, "/x/y") && find_report(&rec, "/x/y")->removed);
        ASSERT_EQ(rec.track_in_callback, -EBUSY);
        ASSERT_EQ(protection_reader_n_tracked(r), 1);
        rec.untrack_on_removal = NULL;

        /* Last user gone: only the root directory stays open. */
        ASSERT_OK(protection_reader_track(r, "/a"));
        ASSERT_OK(protection_reader_untrack(r, "/a"));
        ASSERT_OK(protection_reader_untrack(r, "/a"));
        ASSERT_EQ(protection_reader_n_tracked(r), 0);
        ASSERT_EQ(protection_tree_size(protection_reader_get_tree(r)), 1);
        ASSERT_EQ(count_fds(), fds_before + 1);
        r = protection_reader_free(r);
        ASSERT_EQ(count_fds(), fds_before);
}

/* GetProtection's read: the PROTECTION_NODE array of @cgroup's subtree. */
static int get_nodes_json(ProtectionReader *r, const char *cgroup, json_t **ret) {
        json_t *nodes = json_array();
        int k;

        ASSERT_TRUE(nodes);
        k = protection_reader_foreach(r, cgroup, protection_node_append_json, nodes);
        if (k < 0) {
                json_decref(nodes);
                return k;
        }
        *ret = nodes;
        return 0;
}

static int stop_at_second(const ProtectionNode *node, void *userdata) {
        unsigned *n = userdata;

        return ++*n >= 2 ? -ENOSPC : 0;
}

static void test_json(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;
        json_t *nodes, *o;
        const char *key;
        json_t *value;
        unsigned fds_before = count_fds();

        ASSERT_OK(protection_reader_new(base, false, &r));
        ASSERT_OK(get_nodes_json(r, "/a", &nodes));
        ASSERT_EQ(protection_reader_n_tracked(r), 0); /* one-shot */
        ASSERT_EQ(count_fds(), fds_before + 1);

        ASSERT_TRUE(json_is_array(nodes));
        ASSERT_TRUE(json_array_size(nodes) >= 3);
        o = json_array_get(nodes, 0);
        ASSERT_STREQ(json_string_value(json_object_get(o, "cgroup")), "/a");
        ASSERT_EQ(json_object_size(o), 11);
        json_object_foreach(o, key, value) {
                static const char *const keys[] = {
                        "cgroup", "usage", "min", "low", "emin", "elow", "min_usage",
                        "low_usage", "children_min_usage", "children_low_usage", "state",
                };
                bool known = false;

                for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                        known = known || streq(key, keys[i]);
                if (!known)
                        TEST_FAIL("unexpected key %s", key);
        }
        ASSERT_EQ(json_integer_value(json_object_get(o, "usage")), (long long) (1 * G));
        ASSERT_EQ(json_integer_value(json_object_get(o, "elow")), (long long) (1 * G));
        ASSERT_STREQ(json_string_value(json_object_get(o, "state")), "low");

        /* Parents before children, and null for "max" (b's memory.low). */
        for (size_t i = 0; i < json_array_size(nodes); i++) {
                const char *cg = json_string_value(json_object_get(json_array_get(nodes, i), "cgroup"));

                ASSERT_TRUE(cg && strncmp(cg, "/a", 2) == 0);
                if (i > 0)
                        ASSERT_TRUE(strncmp(cg, "/a/", 3) == 0);
                if (streq(cg, "/a/b")) {
                        o = json_array_get(nodes, i);
                        ASSERT_TRUE(json_is_null(json_object_get(o, "low")));
                        ASSERT_TRUE(json_is_integer(json_object_get(o, "min")));
                        ASSERT_TRUE(json_is_integer(json_object_get(o, "elow")));
                        ASSERT_EQ(json_integer_value(json_object_get(o, "low_usage")),
                                  (long long) (200 * M));
                }
        }
        json_decref(nodes);

        ASSERT_ERR(get_nodes_json(r, "/gone", &nodes), ENOENT);
        ASSERT_OK(get_nodes_json(r, "/", &nodes));
        o = json_array_get(nodes, 0);
        ASSERT_STREQ(json_string_value(json_object_get(o, "cgroup")), "/");
        ASSERT_EQ(json_integer_value(json_object_get(o, "emin")), 0);
        ASSERT_STREQ(json_string_value(json_object_get(o, "state")), "none");
        json_decref(nodes);

        /* The walk stops at the first error of the callback, and untracks. */
        {
                unsigned n = 0;

                ASSERT_ERR(protection_reader_foreach(r, "/a", stop_at_second, &n), ENOSPC);
                ASSERT_EQ(n, 2);
                ASSERT_EQ(protection_reader_n_tracked(r), 0);
        }
}

/* Tracking a deep path reads the ancestors' siblings but not their subtrees. */
static void test_deep(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;

        make_cgroup("/p", 4 * G, 0, 2 * G);
        make_cgroup("/p/q", 3 * G, 0, 3 * G);
        make_cgroup("/p/q/r", 1 * G, 0, 1 * G);
        make_cgroup("/p/s", 1 * G, 0, 1 * G);
        make_cgroup("/p/s/t", 1 * G, 0, 0);

        ASSERT_OK(protection_reader_new(base, true, &r));
        ASSERT_OK(protection_reader_track(r, "/p/q/r"));
        ASSERT_TRUE(protection_reader_lookup(r, "/p/s"));
        ASSERT_TRUE(protection_reader_lookup(r, "/p/s/t") == NULL);
        ASSERT_TRUE(protection_reader_lookup(r, "/a/b") == NULL);
        /* p: 2G over q (3G) + s (1G) claimed: q gets 2G * 3/4, r all of q's share below 1G. */
        ASSERT_U64_EQ(values(r, "/p/q").elow, 2 * G * 3 / 4);
        ASSERT_U64_EQ(values(r, "/p/q/r").elow, 1 * G);
        ASSERT_EQ(values(r, "/p/q/r").state, PROTECTION_STATE_LOW);
}

/* Tracked for later: nothing read until the refresh, which reads all of them at once, exactly. */
static void test_track_later(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL, *now = NULL;
        ProtectionReaderStats s;

        ASSERT_OK(protection_reader_new(base, false, &r));
        ASSERT_OK(protection_reader_track_later(r, "/p/q/r"));
        ASSERT_OK(protection_reader_track_later(r, "/p/s"));
        ASSERT_OK(protection_reader_track_later(r, "/p/q"));
        ASSERT_OK(protection_reader_track_later(r, "/p/q")); /* a second user */
        ASSERT_EQ(protection_reader_n_tracked(r), 3);
        protection_reader_get_stats(r, &s);
        ASSERT_U64_EQ(s.refreshes, 0);
        ASSERT_TRUE(protection_reader_lookup(r, "/p/q/r") == NULL);
        ASSERT_ERR(protection_reader_track_later(r, "/nope"), ENOENT);
        ASSERT_ERR(protection_reader_track_later(r, "a"), EINVAL);
        ASSERT_ERR(protection_reader_track_later(r, "/p/memory.min"), ENOTDIR);
        ASSERT_EQ(protection_reader_n_tracked(r), 3);

        ASSERT_OK(protection_reader_refresh(r));
        protection_reader_get_stats(r, &s);
        ASSERT_U64_EQ(s.refreshes, 1);
        /* The same values as tracking one by one. */
        ASSERT_OK(protection_reader_new(base, false, &now));
        ASSERT_OK(protection_reader_track(now, "/p/q/r"));
        ASSERT_OK(protection_reader_track(now, "/p/s"));
        ASSERT_OK(protection_reader_track(now, "/p/q"));
        ASSERT_U64_EQ(values(r, "/p/q/r").elow, values(now, "/p/q/r").elow);
        ASSERT_U64_EQ(values(r, "/p/s").elow, values(now, "/p/s").elow);
        ASSERT_U64_EQ(values(r, "/p/s").emin, values(now, "/p/s").emin);
        ASSERT_U64_EQ(values(r, "/p/q").usage, 3 * G);
        ASSERT_U64_EQ(values(r, "/p/s").elow, 2 * G / 4);
        ASSERT_OK(protection_reader_untrack(r, "/p/q"));
        ASSERT_EQ(protection_reader_n_tracked(r), 3);
        ASSERT_OK(protection_reader_untrack(r, "/p/q"));
        ASSERT_EQ(protection_reader_n_tracked(r), 2);
}

static void assert_same_protection(ProtectionReader *a, ProtectionReader *b, const char *cgroup) {
        ProtectionValues va = values(a, cgroup), vb = values(b, cgroup);

        ASSERT_U64_EQ(va.usage, vb.usage);
        ASSERT_U64_EQ(va.emin, vb.emin);
        ASSERT_U64_EQ(va.elow, vb.elow);
        ASSERT_EQ(va.state, vb.state);
}

/*
 * A node tracked alone (systemd-report's List): its ancestors are listed
 * and their children read, the node is not listed; its values are those
 * of a subtree track. A subtree track of the same node lists it again.
 */
static void test_track_node(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL, *sub = NULL, *root = NULL;
        ProtectionReaderStats s;

        ASSERT_OK(protection_reader_new(base, true, &r));
        ASSERT_OK(protection_reader_track_node_later(r, "/p/q"));
        ASSERT_OK(protection_reader_track_node_later(r, "/p/s"));
        ASSERT_OK(protection_reader_track_node_later(r, "/p/s")); /* a second user */
        ASSERT_ERR(protection_reader_track_node_later(r, "/nope"), ENOENT);
        ASSERT_ERR(protection_reader_track_node_later(r, "p"), EINVAL);
        ASSERT_EQ(protection_reader_n_tracked(r), 2);
        ASSERT_OK(protection_reader_refresh(r));
        protection_reader_get_stats(r, &s);
        ASSERT_U64_EQ(s.dirs_listed, 2); /* "/" and "/p" */
        ASSERT_TRUE(protection_reader_lookup(r, "/p/q"));
        ASSERT_TRUE(protection_reader_lookup(r, "/a")); /* an ancestor's child */
        ASSERT_TRUE(protection_reader_lookup(r, "/p/q/r") == NULL);
        ASSERT_TRUE(protection_reader_lookup(r, "/p/s/t") == NULL);

        ASSERT_OK(protection_reader_new(base, true, &sub));
        ASSERT_OK(protection_reader_track(sub, "/p/q"));
        ASSERT_OK(protection_reader_track(sub, "/p/s"));
        assert_same_protection(r, sub, "/p");
        assert_same_protection(r, sub, "/p/q");
        assert_same_protection(r, sub, "/p/s");
        ASSERT_U64_EQ(values(r, "/p/q").elow, 2 * G * 3 / 4);

        /* The subtree of one of them, tracked too: listed, the other still not. */
        ASSERT_OK(protection_reader_track(r, "/p/s"));
        ASSERT_TRUE(protection_reader_lookup(r, "/p/s/t"));
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_TRUE(protection_reader_lookup(r, "/p/s/t"));
        ASSERT_TRUE(protection_reader_lookup(r, "/p/q/r") == NULL);
        assert_same_protection(r, sub, "/p/s");

        /* The root alone: read, nothing listed. */
        ASSERT_OK(protection_reader_new(base, true, &root));
        ASSERT_OK(protection_reader_track_node_later(root, "/"));
        ASSERT_OK(protection_reader_refresh(root));
        protection_reader_get_stats(root, &s);
        ASSERT_U64_EQ(s.dirs_listed, 0);
        ASSERT_TRUE(protection_reader_lookup(root, "/"));
        ASSERT_TRUE(protection_reader_lookup(root, "/p") == NULL);
        ASSERT_U64_EQ(values(root, "/").emin, 0);
}

/* Over the descriptor budget, nodes are read with open/pread/close: same results. */
static void test_unpinned(void) {
        _cleanup_(protection_reader_freep) ProtectionReader *pinned = NULL, *r = NULL;
        ProtectionReaderStats s;
        ProtectionNode *root;
        Recorder rec = {};

        ASSERT_OK(protection_reader_new(base, true, &pinned));
        ASSERT_OK(protection_reader_new(base, true, &r));
        protection_reader_set_fd_budget(r, 6);
        protection_reader_set_callback(r, on_change, &rec);
        ASSERT_OK(protection_reader_track(pinned, "/"));
        ASSERT_OK(protection_reader_track(r, "/"));
        protection_reader_get_stats(r, &s);
        ASSERT_TRUE(s.fds_open <= 6);
        ASSERT_EQ(protection_tree_size(protection_reader_get_tree(r)),
                  protection_tree_size(protection_reader_get_tree(pinned)));

        write_value("/p/q/r", "memory.current", 2 * G);
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_OK(protection_reader_refresh(pinned));
        ASSERT_TRUE(find_report(&rec, "/p/q/r"));
        ASSERT_EQ(find_report(&rec, "/p/q/r")->state, PROTECTION_STATE_NONE);

        rec.n = 0;
        remove_tree("/p/s");
        ASSERT_OK(protection_reader_refresh(r));
        ASSERT_OK(protection_reader_refresh(pinned));
        ASSERT_TRUE(find_report(&rec, "/p/s") && find_report(&rec, "/p/s")->removed);
        ASSERT_TRUE(find_report(&rec, "/p/s/t") && find_report(&rec, "/p/s/t")->removed);

        root = protection_tree_root(protection_reader_get_tree(pinned));
        for (ProtectionNode *n = root; n; n = protection_node_next(n, root)) {
                _cleanup_free_ char *path = NULL;
                ProtectionValues a, b;

                ASSERT_OK(protection_node_path(n, &path));
                protection_node_get(n, &a);
                b = values(r, path);
                ASSERT_U64_EQ(a.usage, b.usage);
                ASSERT_U64_EQ(a.min, b.min);
                ASSERT_U64_EQ(a.low, b.low);
                ASSERT_U64_EQ(a.emin, b.emin);
                ASSERT_U64_EQ(a.elow, b.elow);
                ASSERT_U64_EQ(a.children_low_usage, b.children_low_usage);
                ASSERT_EQ(a.state, b.state);
        }
        protection_reader_get_stats(r, &s);
        ASSERT_TRUE(s.fds_open <= 6);
}

int main(void) {
        build_tree();
        test_reader();
        test_json();
        test_deep();
        test_track_later();
        test_track_node();
        test_unpinned();
        remove_tree("");
        return 0;
}
