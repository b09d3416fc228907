/* SPDX-License-Identifier: MIT */
/*
 * The cgroup tree reader: keeps a ProtectionTree in step with a cgroup2
 * hierarchy on disk (or a directory laid out like one) for the subtrees
 * somebody tracks, and reports the nodes whose protection state changed or
 * which vanished. Also turns nodes into the contract's PROTECTION_NODE JSON.
 *
 * What is read. For a tracked cgroup the reader needs more than its subtree:
 * effective protection depends on every ancestor's effective values and on
 * the sums over each ancestor's children. So it lists the directories of
 * the ancestors and of everything in the tracked subtree, and reads
 * memory.current, memory.min and memory.low of those nodes and of the
 * ancestors' other children (whose own children are not needed). Only
 * nodes inside a tracked subtree are reported.
 *
 * Cost of a refresh. The three files of each node are opened once and
 * re-read with pread(). Each listed directory is fstat()ed, and listed again
 * (lseek + getdents64) only when its inode, link count, size, mtime or ctime
 * changed, or when a child's files reported the child gone (kernfs returns
 * ENODEV for files of a removed cgroup; its directory link count counts the
 * subdirectories, so a removal or creation always shows in one of the two).
 * A listed entry whose inode number changed is a new cgroup of the same
 * name: the old one is reported removed. Directories are opened with
 * O_DIRECTORY|O_NOFOLLOW and symbolic links are never followed.
 * Descriptors: four per listed node (directory and three files), three per
 * other node read, within a budget (see protection_reader_set_fd_budget());
 * beyond it nodes are read with open/pread/close on each refresh.
 *
 * Missing files. The root of a cgroup2 hierarchy has no memory.min and
 * memory.low (and on most kernels no memory.current); a cgroup whose parent
 * does not enable the memory controller has none of them. A missing
 * memory.min or memory.low reads as 0 (no protection). A missing
 * memory.current reads as 0, except on the root, whose usage is then the sum
 * of its children's. Missing files of non-root nodes are looked for again on
 * every refresh (the controller may be enabled later).
 *
 * Paths are relative to the root directory: "/" is the root, "/a/b" below;
 * no empty components, ".", "..", trailing slash or control characters.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "protection.h"
#include "util.h"

typedef struct ProtectionReader ProtectionReader;

/* One report of protection_reader_refresh(). */
typedef struct ProtectionChange {
        /* The cgroup's path, "/a/b". Valid during the callback only. */
        const char *cgroup;
        /* The node, for serializing; NULL when removed. */
        ProtectionNode *node;
        /* The state reported before (NONE for a node that just appeared). */
        ProtectionState previous;
        /* The new state; NONE when removed. */
        ProtectionState state;
        /* The cgroup is gone; no further reports for it. */
        bool removed;
} ProtectionChange;

/*
 * Called after each refresh, once per tracked node whose state changed and
 * per tracked node that vanished (parents before children). It may call
 * protection_reader_untrack() (the pruning is deferred until the callbacks
 * are done), but not track, refresh or free (-EBUSY).
 */
typedef void (*ProtectionChangeFn)(ProtectionReader *r, const ProtectionChange *change,
                                   void *userdata);

/* Counters of the work done by the reader; syscalls is the sum of the rest. */
typedef struct ProtectionReaderStats {
        uint64_t refreshes;
        uint64_t syscalls;
        uint64_t preads;
        uint64_t getdents;
        uint64_t fstats;   /* fstat() and fstatat() */
        uint64_t lseeks;
        uint64_t opens;    /* openat(), failed ones included */
        uint64_t closes;
        uint64_t dirs_listed;        /* directory listings done */
        uint64_t dirs_unchanged;     /* listings skipped: fstat showed no change */
        uint64_t read_errors;        /* unreadable or unparsable values, kept as they were */
        uint64_t nodes_added;
        uint64_t nodes_removed;
        uint64_t fds_open;           /* descriptors held for nodes right now */
} ProtectionReaderStats;

/*
 * protection_reader_new - bind a reader to a cgroup2 root directory.
 * @root: the hierarchy's mount point, or a fake tree laid out like one
 * @recursive_protection: the memory_recursiveprot rule, see protection.h
 * @ret: the reader; it holds one descriptor (the root directory) until
 *       something is tracked
 *
 * Returns 0, or a negative errno from opening @root, or -ENOMEM.
 */
int protection_reader_new(const char *root, bool recursive_protection, ProtectionReader **ret);

/* protection_reader_free - close everything; accepts NULL, returns NULL. */
ProtectionReader *protection_reader_free(ProtectionReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProtectionReader *, protection_reader_free);

/* protection_reader_set_callback - where changes are reported. */
void protection_reader_set_callback(ProtectionReader *r, ProtectionChangeFn cb, void *userdata);

/* protection_reader_set_recursive - switch the rule; applies at the next refresh. */
void protection_reader_set_recursive(ProtectionReader *r, bool recursive_protection);

/*
 * protection_reader_set_list_always - for benchmarks: list every directory on
 * every refresh instead of only those whose fstat() changed.
 */
void protection_reader_set_list_always(ProtectionReader *r, bool always);

/*
 * protection_reader_set_fd_budget - how many descriptors nodes may keep open
 * (0: half of the RLIMIT_NOFILE soft limit at the time of the call, the
 * default). Nodes found once the budget is used up are not pinned: they
 * open their directory and files for each refresh and close them again
 * (about 12 instead of 4 syscalls per node). Existing nodes keep theirs.
 */
void protection_reader_set_fd_budget(ProtectionReader *r, unsigned budget);

/*
 * protection_reader_track - start (or, if already tracked, count one more
 * user of) tracking the subtree at @cgroup. A new subtree is read at once,
 * with a full refresh, so that its nodes are current when this returns;
 * its own nodes' initial states are not reported, other nodes' changes are.
 *
 * Returns 0; -EINVAL for a malformed path; -ENOENT if it does not exist;
 * -ENOTDIR or -ELOOP if a component is not a directory or is a symlink;
 * -EBUSY from within the callback; -ENOMEM, -EMFILE.
 */
int protection_reader_track(ProtectionReader *r, const char *cgroup);

/*
 * protection_reader_track_later - like protection_reader_track(), but the
 * subtree is read by the next protection_reader_refresh() instead of now,
 * so that many cgroups tracked at once cost one refresh rather than one
 * each. Until then protection_reader_lookup() may not find its nodes, and
 * that refresh reports their first states like any change. Returns 0;
 * -EINVAL, -ENOENT, -ENOTDIR, -ELOOP, -EBUSY, -ENOMEM as
 * protection_reader_track().
 */
int protection_reader_track_later(ProtectionReader *r, const char *cgroup);

/*
 * protection_reader_track_node_later - like protection_reader_track_later(),
 * but for the node of @cgroup alone, not its subtree: what its effective
 * protection needs is read (its ancestors are listed, and every child of
 * each of them read), nothing below it. Its changes are not reported.
 * For a one-shot read of many cgroups (systemd-report's List): track
 * them, refresh once, look each up, free the reader; there is no untrack.
 * Returns as protection_reader_track_later().
 */
int protection_reader_track_node_later(ProtectionReader *r, const char *cgroup);

/*
 * protection_reader_untrack - drop one user of @cgroup; with the last one the
 * nodes no longer needed are dropped and their descriptors closed.
 * Returns 0, or -ENOENT if @cgroup is not tracked.
 */
int protection_reader_untrack(ProtectionReader *r, const char *cgroup);

/* protection_reader_n_tracked - number of distinct tracked subtrees. */
size_t protection_reader_n_tracked(const ProtectionReader *r);

/*
 * protection_reader_refresh - re-read all tracked nodes, pick up cgroups that
 * appeared or vanished, recompute and report changes. Does nothing when
 * nothing is tracked.
 *
 * Returns 0, or a negative errno (-ENOMEM, -EMFILE) when the refresh had to
 * stop early; the model then holds what was read so far, still consistent.
 */
int protection_reader_refresh(ProtectionReader *r);

/* protection_reader_get_tree - the model, for reading (and its counters). */
ProtectionTree *protection_reader_get_tree(ProtectionReader *r);

/*
 * protection_reader_lookup - the node of @cgroup, if it is in the model
 * (tracked, or an ancestor or ancestor's child of a tracked cgroup).
 */
ProtectionNode *protection_reader_lookup(ProtectionReader *r, const char *cgroup);

/* protection_reader_get_stats - the work counters since creation. */
void protection_reader_get_stats(const ProtectionReader *r, ProtectionReaderStats *ret);

/* Called for each node protection_reader_foreach() visits; a negative errno stops the walk. */
typedef int (*ProtectionNodeFn)(const ProtectionNode *node, void *userdata);

/*
 * protection_reader_foreach - the one-shot read behind
 * GetProtection(cgroup): tracks @cgroup for the duration of the call and
 * calls @fn for each node of its subtree, parents before children. Returns
 * 0, the first negative value of @fn, or an error as protection_reader_track().
 */
int protection_reader_foreach(ProtectionReader *r, const char *cgroup, ProtectionNodeFn fn, void *userdata);
