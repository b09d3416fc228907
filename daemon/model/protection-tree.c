/* SPDX-License-Identifier: MIT */
/*
 * The cgroup tree reader (see protection-tree.h). Each model node carries a
 * ReaderNode with its descriptors; a refresh walks the model top-down,
 * lists the directories that changed, reads every node's three values, and
 * lets the model propagate and recompute. Reports are queued while the
 * model is being changed and delivered once it is consistent again.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "cgroupfs.h"
#include "log.h"
#include "protection-tree.h"
#include "util.h"

enum {
        FILE_CURRENT,
        FILE_MIN,
        FILE_LOW,
        _FILE_MAX,
};

static const char *const file_names[_FILE_MAX] = {
        [FILE_CURRENT] = "memory.current",
        [FILE_MIN] = "memory.min",
        [FILE_LOW] = "memory.low",
};

typedef struct DirSnapshot {
        ino_t ino;
        nlink_t nlink;
        off_t size;
        struct timespec mtime, ctime;
        bool valid;
} DirSnapshot;

typedef struct ReaderNode {
        int dir_fd;              /* while the node's directory is listed */
        int fd[_FILE_MAX];       /* -1: missing (or not opened yet) */
        bool files_opened;
        ino_t ino;               /* from the parent's listing */
        DirSnapshot snapshot;
        uint64_t seen_scan;      /* listing generation that last saw it */
        uint64_t refreshed;      /* refresh generation that last read it */
        uint64_t born;           /* refresh generation that created it */
        bool pinned;             /* keeps its descriptors open between refreshes */
        bool tracked;            /* a tracked subtree starts here */
        bool on_path;            /* ancestor-or-self of a tracked subtree, ancestor of a tracked node */
} ReaderNode;

typedef struct Track {
        char *path;
        unsigned n_ref;
        bool subtree;            /* its subtree; else only the node (protection_reader_track_node_later()) */
} Track;

typedef struct PendingChange {
        char *cgroup;
        ProtectionNode *node;
        ProtectionState previous, state;
        bool removed;
} PendingChange;

struct ProtectionReader {
        char *root_path;
        int root_fd;
        ProtectionTree *tree;

        Track *tracks;
        size_t n_tracks;

        ProtectionChangeFn cb;
        void *userdata;

        PendingChange *pending;
        size_t n_pending, n_pending_alloc;
        int pending_error;

        uint64_t generation;     /* refreshes and listings share one counter */
        uint64_t silent_gen;     /* if set, nodes born at or after it are not reported */
        bool in_callback;
        bool prune_pending;
        bool list_always;

        unsigned n_fds;          /* descriptors open for nodes */
        unsigned fd_budget;      /* pin nodes only while n_fds stays below this */

        char *dents;             /* getdents64 buffer */
        size_t dents_size;

        ProtectionReaderStats stats;
};

#define DENTS_BUFFER_SIZE (64 * 1024)

/* Syscall wrappers that count. */

static int r_openat(ProtectionReader *r, int dir_fd, const char *name, int flags) {
        int fd;

        r->stats.opens++;
        fd = openat(dir_fd, name, flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd >= 0)
                r->n_fds++;
        return fd;
}

static void r_close(ProtectionReader *r, int *fd) {
        if (*fd < 0)
                return;
        r->stats.closes++;
        r->n_fds--;
        *fd = safe_close(*fd);
}

static ssize_t r_pread(ProtectionReader *r, int fd, void *buf, size_t size) {
        ssize_t n;

        do {
                r->stats.preads++;
                n = pread(fd, buf, size, 0);
        } while (n < 0 && errno == EINTR);
        return n;
}

/* Reader nodes. */

static ReaderNode *reader_node(const ProtectionNode *n) {
        return protection_node_get_userdata(n);
}

static ReaderNode *reader_node_new(void) {
        ReaderNode *rn;

        rn = calloc(1, sizeof(*rn));
        if (!rn)
                return NULL;
        rn->dir_fd = -1;
        for (size_t i = 0; i < _FILE_MAX; i++)
                rn->fd[i] = -1;
        return rn;
}

static void reader_node_close_files(ProtectionReader *r, ReaderNode *rn) {
        for (size_t i = 0; i < _FILE_MAX; i++)
                r_close(r, &rn->fd[i]);
        rn->files_opened = false;
}

static void reader_node_close_dir(ProtectionReader *r, ReaderNode *rn, bool is_root) {
        if (is_root)
                rn->dir_fd = -1; /* borrowed r->root_fd */
        else
                r_close(r, &rn->dir_fd);
        rn->snapshot.valid = false;
}

static void reader_node_free(ProtectionReader *r, ReaderNode *rn, bool is_root) {
        if (!rn)
                return;
        reader_node_close_files(r, rn);
        reader_node_close_dir(r, rn, is_root);
        free(rn);
}

static bool node_is_root(const ProtectionNode *n) {
        return !protection_node_parent(n);
}

/* Inside a tracked subtree? */
static bool node_is_covered(const ProtectionNode *n) {
        for (; n; n = protection_node_parent(n))
                if (reader_node(n)->tracked)
                        return true;
        return false;
}

/* Pending reports. */

static int pending_add(ProtectionReader *r, ProtectionNode *node, ProtectionState previous,
                       ProtectionState state, bool removed) {
        _cleanup_free_ char *path = NULL;
        int k;

        k = protection_node_path(node, &path);
        if (k < 0)
                return k;
        if (r->n_pending == r->n_pending_alloc) {
                size_t n_alloc = r->n_pending_alloc ? r->n_pending_alloc * 2 : 16;
                PendingChange *p;

                p = reallocarray(r->pending, n_alloc, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                r->pending = p;
                r->n_pending_alloc = n_alloc;
        }
        r->pending[r->n_pending++] = (PendingChange) {
                .cgroup = TAKE_PTR(path),
                .node = removed ? NULL : node,
                .previous = previous,
                .state = state,
                .removed = removed,
        };
        return 0;
}

static void pending_clear(ProtectionReader *r) {
        for (size_t i = 0; i < r->n_pending; i++)
                free(r->pending[i].cgroup);
        r->n_pending = 0;
}

/* Removing nodes: report the covered ones, close descriptors, drop from the model. */
static int node_remove(ProtectionReader *r, ProtectionNode *n, bool report) {
        int ret = 0;

        for (ProtectionNode *i = n; i; i = protection_node_next(i, n)) {
                if (report && node_is_covered(i)) {
                        int k = pending_add(r, i, protection_node_state(i), PROTECTION_STATE_NONE, true);
                        if (k < 0 && ret == 0)
                                ret = k;
                }
        }
        for (ProtectionNode *i = n; i; i = protection_node_next(i, n)) {
                reader_node_free(r, reader_node(i), false);
                protection_node_set_userdata(i, NULL);
                r->stats.nodes_removed++;
        }
        (void) protection_node_remove(r->tree, n);
        return ret;
}

static void node_remove_children(ProtectionReader *r, ProtectionNode *n) {
        ProtectionNode *c;

        while ((c = protection_node_first_child(n)))
                (void) node_remove(r, c, false);
}

/* Track bookkeeping. */

static bool path_valid(const char *path) {
        const char *p;

        if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
                return false;
        if (streq(path, "/"))
                return true;
        for (p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return false;
        p = path + 1;
        for (;;) {
                size_t len = strcspn(p, "/");

                if (len == 0 || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.') || len > NAME_MAX)
                        return false;
                if (p[len] == 0)
                        return true;
                p += len + 1;
        }
}

static Track *track_find(ProtectionReader *r, const char *path, bool subtree) {
        for (size_t i = 0; i < r->n_tracks; i++)
                if (streq(r->tracks[i].path, path) && r->tracks[i].subtree == subtree)
                        return &r->tracks[i];
        return NULL;
}

/*
 * Flags of a node from its path: tracked here, or on the way to a tracked
 * subtree or node. A node tracked alone is read as a child of its listed
 * parent: it is not listed itself.
 */
static void flags_from_path(ProtectionReader *r, ReaderNode *rn, const char *path) {
        size_t len = strlen(path);

        rn->tracked = rn->on_path = false;
        for (size_t i = 0; i < r->n_tracks; i++) {
                const char *t = r->tracks[i].path;

                if (streq(t, path)) {
                        if (r->tracks[i].subtree)
                                rn->tracked = rn->on_path = true;
                } else if (len == 1 || (strncmp(t, path, len) == 0 && t[len] == '/'))
                        rn->on_path = true;
        }
}

/* Recompute tracked/on_path of every node after the track list changed. */
static void flags_recompute(ProtectionReader *r) {
        ProtectionNode *root = protection_tree_root(r->tree);

        for (ProtectionNode *i = root; i; i = protection_node_next(i, root)) {
                ReaderNode *rn = reader_node(i);

                rn->tracked = rn->on_path = false;
        }
        for (size_t i = 0; i < r->n_tracks; i++) {
                const char *p = r->tracks[i].path + 1;
                bool subtree = r->tracks[i].subtree;
                ProtectionNode *n = root;

                for (;;) {
                        size_t len = strcspn(p, "/");
                        char name[NAME_MAX + 1];

                        /* Ancestors are listed; the node itself only with its subtree. */
                        if (*p || subtree)
                                reader_node(n)->on_path = true;
                        if (!*p) {
                                if (subtree)
                                        reader_node(n)->tracked = true;
                                break;
                        }
                        memcpy(name, p, len);
                        name[len] = 0;
                        n = protection_node_child(r->tree, n, name);
                        if (!n)
                                break;
                        p += len + (p[len] == '/');
                }
        }
}

/* Drop what no tracked subtree needs: children of unlisted nodes, their directory fds. */
static void prune_node(ProtectionReader *r, ProtectionNode *n, bool covered) {
        ReaderNode *rn = reader_node(n);
        bool listed;

        covered = covered || rn->tracked;
        listed = covered || rn->on_path;
        if (!listed) {
                node_remove_children(r, n);
                reader_node_close_dir(r, rn, node_is_root(n));
                if (node_is_root(n))
                        reader_node_close_files(r, rn);
                return;
        }
        for (ProtectionNode *c = protection_node_first_child(n); c; c = protection_node_next_sibling(c))
                prune_node(r, c, covered);
}

static void prune(ProtectionReader *r) {
        flags_recompute(r);
        prune_node(r, protection_tree_root(r->tree), false);
        r->prune_pending = false;
}

/* Reading values. */

static int parse_value(const char *s, uint64_t *ret) {
        char buf[32];
        size_t n = strlen(s);

        while (n > 0 && strchr(" \t\n", s[n - 1]))
                n--;
        if (n == 0 || n >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, s, n);
        buf[n] = 0;
        if (streq(buf, "max")) {
                *ret = PROTECTION_UNLIMITED;
                return 0;
        }
        return safe_atou64(buf, ret) < 0 ? -EBADMSG : 0;
}

/* Returns 0, -ENODEV when the cgroup is gone, another negative errno otherwise. */
static int read_value(ProtectionReader *r, int fd, uint64_t *ret) {
        char buf[32];
        ssize_t n;

        n = r_pread(r, fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return errno == ENOENT ? -ENODEV : -errno;
        buf[n] = 0;
        return parse_value(buf, ret);
}

static bool errno_is_fatal(int e) {
        return e == ENOMEM || e == EMFILE || e == ENFILE;
}

/* Open the files not open yet; a missing one stays -1. */
static int node_open_files(ProtectionReader *r, ReaderNode *rn, int dir_fd) {
        for (size_t i = 0; i < _FILE_MAX; i++) {
                if (rn->fd[i] >= 0)
                        continue;
                rn->fd[i] = r_openat(r, dir_fd, file_names[i], O_RDONLY);
                if (rn->fd[i] < 0 && errno_is_fatal(errno))
                        return -errno;
        }
        rn->files_opened = true;
        return 0;
}

static bool node_files_missing(const ReaderNode *rn) {
        for (size_t i = 0; i < _FILE_MAX; i++)
                if (rn->fd[i] < 0)
                        return true;
        return false;
}

/* Open the directory of @n (not the root) below its parent's. */
static int node_open_dir(ProtectionReader *r, ProtectionNode *n) {
        ReaderNode *parent = reader_node(protection_node_parent(n));
        int fd;

        if (parent->dir_fd < 0)
                return -ENODEV;
        fd = r_openat(r, parent->dir_fd, protection_node_name(n), O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? -ENODEV : -errno;
        return fd;
}

/* Listing directories. */

/* Returns 1 if the directory changed since the last call, 0 if not, -ENODEV if it was removed. */
static int dir_changed(ProtectionReader *r, ReaderNode *rn) {
        struct stat st;
        DirSnapshot s;
        bool changed;

        r->stats.fstats++;
        if (fstat(rn->dir_fd, &st) < 0)
                return -errno;
        /* A directory removed from a regular file system (a fake tree) keeps no links. */
        if (st.st_nlink == 0)
                return -ENODEV;
        s = (DirSnapshot) {
                .ino = st.st_ino,
                .nlink = st.st_nlink,
                .size = st.st_size,
                .mtime = st.st_mtim,
                .ctime = st.st_ctim,
                .valid = true,
        };
        changed = !rn->snapshot.valid || s.ino != rn->snapshot.ino || s.nlink != rn->snapshot.nlink ||
                  s.size != rn->snapshot.size || s.mtime.tv_sec != rn->snapshot.mtime.tv_sec ||
                  s.mtime.tv_nsec != rn->snapshot.mtime.tv_nsec ||
                  s.ctime.tv_sec != rn->snapshot.ctime.tv_sec ||
                  s.ctime.tv_nsec != rn->snapshot.ctime.tv_nsec;
        rn->snapshot = s;
        return changed;
}

/* Create the model node for a directory entry found while listing @parent. */
static int child_create(ProtectionReader *r, ProtectionNode *parent, const char *name, ino_t ino) {
        _cleanup_free_ char *path = NULL;
        ProtectionNode *n;
        ReaderNode *rn;
        int fd, k;

        rn = reader_node_new();
        if (!rn)
                return -ENOMEM;
        k = protection_node_add(r->tree, parent, name, &n);
        if (k < 0) {
                free(rn);
                return k == -EINVAL ? 0 : k; /* a name the model rejects is no cgroup */
        }
        protection_node_set_userdata(n, rn);
        rn->ino = ino;
        rn->born = r->generation;
        r->stats.nodes_added++;

        k = protection_node_path(n, &path);
        if (k < 0)
                return k;
        flags_from_path(r, rn, path);

        fd = node_open_dir(r, n);
        if (fd < 0) {
                /* Gone already, or replaced by something that is not a directory. */
                (void) node_remove(r, n, false);
                return fd == -ENODEV ? 0 : fd;
        }
        /* Over the budget: the node opens its files afresh on each refresh. */
        rn->pinned = r->n_fds + _FILE_MAX + 1 <= r->fd_budget;
        if (!rn->pinned) {
                r_close(r, &fd);
                return 0;
        }
        k = node_open_files(r, rn, fd);
        if (rn->on_path || node_is_covered(n))
                rn->dir_fd = fd;
        else
                r_close(r, &fd);
        return k;
}

/* A listing of one node's directory in progress. */
typedef struct NodeListing {
        ProtectionReader *r;
        ProtectionNode *n;
        uint64_t gen;
        int ret;                 /* the first failure to remove a replaced child */
} NodeListing;

/* One subdirectory found while listing: the child node, new or replaced if need be, is marked seen. */
static int node_list_entry(int dfd _unused_, const char *name, uint64_t ino, void *userdata) {
        NodeListing *l = userdata;
        ProtectionNode *c = protection_node_child(l->r->tree, l->n, name);
        int k;

        if (c && reader_node(c)->ino != ino) {
                /* Same name, different cgroup. */
                k = node_remove(l->r, c, true);
                if (k < 0 && l->ret == 0)
                        l->ret = k;
                c = NULL;
        }
        if (!c) {
                k = child_create(l->r, l->n, name, (ino_t) ino);
                if (k < 0)
                        return k;
                c = protection_node_child(l->r->tree, l->n, name);
                if (!c)
                        return 0;
        }
        reader_node(c)->seen_scan = l->gen;
        return 0;
}

/* List @n's directory: add new children, remove vanished or replaced ones. */
static int node_list(ProtectionReader *r, ProtectionNode *n) {
        ReaderNode *rn = reader_node(n);
        NodeListing l = { .r = r, .n = n, .gen = ++r->generation };
        CgroupfsListStats st = {};
        ProtectionNode *c, *next;
        int k;

        r->stats.dirs_listed++;
        r->stats.lseeks++;
        if (lseek(rn->dir_fd, 0, SEEK_SET) < 0)
                return -errno;
        k = cgroupfs_list(rn->dir_fd, r->dents, r->dents_size, &st, node_list_entry, &l);
        r->stats.getdents += st.getdents;
        r->stats.fstats += st.fstats;
        if (k < 0)
                return k;

        for (c = protection_node_first_child(n); c; c = next) {
                next = protection_node_next_sibling(c);
                if (reader_node(c)->seen_scan != l.gen) {
                        k = node_remove(r, c, true);
                        if (k < 0 && l.ret == 0)
                                l.ret = k;
                }
        }
        return l.ret;
}

/* Refreshing. */

/*
 * Read @n's values (and, if it is listed, its subtree's) into the model.
 * Returns 1 if @n turned out to be gone (and was removed), 0, or a fatal
 * negative errno.
 */
static int node_refresh(ProtectionReader *r, ProtectionNode *n, bool covered, uint64_t refresh);

/*
 * Open @n's directory into its dir_fd. Returns 0; 1 if the cgroup is gone
 * and @n was removed; or a negative errno.
 */
static int node_open_dir_or_remove(ProtectionReader *r, ProtectionNode *n) {
        int k = node_open_dir(r, n);

        if (k == -ENODEV) {
                (void) node_remove(r, n, true);
                return 1;
        }
        if (k < 0)
                return k;
        reader_node(n)->dir_fd = k;
        return 0;
}

/*
 * Refresh the children of the listed node @n: open its directory, list it
 * again if it changed (or always, if so configured), and refresh each child
 * not yet seen in this pass. Returns 1 if @n turned out to be gone (and was
 * removed), 0, or a fatal negative errno.
 */
static int node_refresh_children(ProtectionReader *r, ProtectionNode *n, bool covered, uint64_t refresh) {
        ReaderNode *rn = reader_node(n);
        bool root = node_is_root(n), list, listed_again = false;
        int k;

        if (rn->dir_fd < 0) {
                if (root)
                        rn->dir_fd = r->root_fd;
                else {
                        k = node_open_dir_or_remove(r, n);
                        if (k != 0)
                                return k;
                }
        }
        k = dir_changed(r, rn);
        if (k == -ENODEV && !root) {
                (void) node_remove(r, n, true);
                return 1;
        }
        if (k < 0)
                return k;
        list = k > 0 || r->list_always;
        if (!list)
                r->stats.dirs_unchanged++;

        for (;;) {
                ProtectionNode *c, *next;
                bool vanished = false;

                if (list) {
                        k = node_list(r, n);
                        if (k < 0)
                                return k;
                }
                for (c = protection_node_first_child(n); c; c = next) {
                        next = protection_node_next_sibling(c);
                        if (reader_node(c)->refreshed == refresh)
                                continue;
                        k = node_refresh(r, c, covered, refresh);
                        if (k < 0)
                                return k;
                        if (k > 0)
                                vanished = true;
                }
                /* A child vanished behind an unchanged directory: look again, once. */
                if (!vanished || list || listed_again)
                        break;
                list = listed_again = true;
        }
        return 0;
}

/*
 * Open @n's value files if they are not open yet, or if a pinned node lost
 * some; an unlisted node's directory is opened just for that. Returns 1 if
 * @n turned out to be gone (and was removed), 0, or a negative errno.
 */
static int node_refresh_files(ProtectionReader *r, ProtectionNode *n, bool listed) {
        ReaderNode *rn = reader_node(n);
        bool root = node_is_root(n);
        int k;

        if (rn->files_opened && (root || !rn->pinned || !node_files_missing(rn)))
                return 0;

        if (listed || root)
                k = node_open_files(r, rn, root ? r->root_fd : rn->dir_fd);
        else {
                _cleanup_close_ int fd = node_open_dir(r, n);

                if (fd == -ENODEV) {
                        (void) node_remove(r, n, true);
                        return 1;
                }
                if (fd < 0)
                        return fd;
                k = node_open_files(r, rn, fd);
                r->stats.closes++;
        }
        if (k < 0)
                return k;
        return 0;
}

/*
 * Read @n's usage, min and low from its open files into the model; a value
 * that cannot be read keeps its old one, and a root without memory.current
 * sums its children. Returns 1 if @n turned out to be gone (and was
 * removed), or 0.
 */
static int node_refresh_values(ProtectionReader *r, ProtectionNode *n) {
        ReaderNode *rn = reader_node(n);
        bool root = node_is_root(n);
        uint64_t v[_FILE_MAX] = {};
        ProtectionValues old;
        int k;

        protection_node_get(n, &old);
        v[FILE_CURRENT] = old.usage;
        v[FILE_MIN] = old.min;
        v[FILE_LOW] = old.low;
        for (size_t i = 0; i < _FILE_MAX; i++) {
                if (rn->fd[i] < 0) {
                        v[i] = 0;
                        continue;
                }
                k = read_value(r, rn->fd[i], &v[i]);
                if (k == -ENODEV && !root) {
                        (void) node_remove(r, n, true);
                        return 1;
                }
                if (k < 0)
                        r->stats.read_errors++;
        }
        if (root && rn->fd[FILE_CURRENT] < 0) {
                v[FILE_CURRENT] = 0;
                for (ProtectionNode *c = protection_node_first_child(n); c; c = protection_node_next_sibling(c))
                        v[FILE_CURRENT] += protection_node_usage(c);
        }

        (void) protection_node_update(r->tree, n, v[FILE_CURRENT], v[FILE_MIN], v[FILE_LOW]);
        return 0;
}

static int node_refresh_one(ProtectionReader *r, ProtectionNode *n, bool covered, uint64_t refresh) {
        ReaderNode *rn = reader_node(n);
        bool root = node_is_root(n), listed;
        int k;

        rn->refreshed = refresh;
        covered = covered || rn->tracked;
        listed = covered || rn->on_path;

        if (!listed && protection_node_first_child(n)) {
                /* No longer needed below here. */
                node_remove_children(r, n);
                reader_node_close_dir(r, rn, root);
        }

        if (listed) {
                k = node_refresh_children(r, n, covered, refresh);
                if (k != 0)
                        return k;
        }

        k = node_refresh_files(r, n, listed);
        if (k != 0)
                return k;

        return node_refresh_values(r, n);
}

static int node_refresh(ProtectionReader *r, ProtectionNode *n, bool covered, uint64_t refresh) {
        ReaderNode *rn = reader_node(n);
        int k;

        if (rn->pinned)
                return node_refresh_one(r, n, covered, refresh);

        /* Unpinned: open the directory and files for this refresh only. */
        k = node_open_dir_or_remove(r, n);
        if (k != 0)
                return k;
        k = node_open_files(r, rn, rn->dir_fd);
        if (k >= 0)
                k = node_refresh_one(r, n, covered, refresh);
        if (k != 1) {
                /* Still there: close again, keeping the directory snapshot. */
                reader_node_close_files(r, rn);
                r_close(r, &rn->dir_fd);
        }
        return k;
}

static void on_state_changed(ProtectionNode *node, ProtectionState previous, ProtectionState state,
                             void *userdata) {
        ProtectionReader *r = userdata;
        ReaderNode *rn = reader_node(node);
        int k;

        if ((r->silent_gen != 0 && rn->born >= r->silent_gen) || !node_is_covered(node))
                return;
        k = pending_add(r, node, previous, state, false);
        if (k < 0 && r->pending_error == 0)
                r->pending_error = k;
}

static void deliver(ProtectionReader *r) {
        r->in_callback = true;
        for (size_t i = 0; i < r->n_pending && r->cb; i++) {
                PendingChange *p = &r->pending[i];
                ProtectionChange c = {
                        .cgroup = p->cgroup,
                        .node = p->node,
                        .previous = p->previous,
                        .state = p->state,
                        .removed = p->removed,
                };

                r->cb(r, &c, r->userdata);
        }
        r->in_callback = false;
        pending_clear(r);
        if (r->prune_pending)
                prune(r);
}

static int refresh_internal(ProtectionReader *r, bool silent_new) {
        uint64_t refresh;
        int k;

        if (r->n_tracks == 0)
                return 0;

        refresh = ++r->generation;
        r->silent_gen = silent_new ? refresh : 0;
        r->stats.refreshes++;
        r->pending_error = 0;

        k = node_refresh(r, protection_tree_root(r->tree), false, refresh);
        (void) protection_tree_compute(r->tree, on_state_changed, r);
        r->silent_gen = 0;
        deliver(r);

        if (k < 0)
                return log_debug_errno(k, "Failed to refresh cgroup tree below %s: %m", r->root_path);
        return r->pending_error;
}

/* Public API. */

int protection_reader_new(const char *root, bool recursive_protection, ProtectionReader **ret) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;
        ReaderNode *rn;
        struct stat st;
        int k;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->root_fd = -1;
        r->root_path = strdup(root);
        if (!r->root_path)
                return -ENOMEM;
        r->dents_size = DENTS_BUFFER_SIZE;
        r->dents = malloc(r->dents_size);
        if (!r->dents)
                return -ENOMEM;
        k = protection_tree_new(recursive_protection, &r->tree);
        if (k < 0)
                return k;
        rn = reader_node_new();
        if (!rn)
                return -ENOMEM;
        protection_node_set_userdata(protection_tree_root(r->tree), rn);

        r->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r->root_fd < 0)
                return -errno;
        if (fstat(r->root_fd, &st) < 0)
                return -errno;
        rn->ino = st.st_ino;
        rn->pinned = true;
        protection_reader_set_fd_budget(r, 0);

        *ret = TAKE_PTR(r);
        return 0;
}

ProtectionReader *protection_reader_free(ProtectionReader *r) {
        if (!r)
                return NULL;
        if (r->tree) {
                ProtectionNode *root = protection_tree_root(r->tree);

                node_remove_children(r, root);
                reader_node_free(r, reader_node(root), true);
                protection_tree_free(r->tree);
        }
        pending_clear(r);
        free(r->pending);
        for (size_t i = 0; i < r->n_tracks; i++)
                free(r->tracks[i].path);
        free(r->tracks);
        safe_close(r->root_fd);
        free(r->dents);
        free(r->root_path);
        free(r);
        return NULL;
}

void protection_reader_set_callback(ProtectionReader *r, ProtectionChangeFn cb, void *userdata) {
        r->cb = cb;
        r->userdata = userdata;
}

void protection_reader_set_recursive(ProtectionReader *r, bool recursive_protection) {
        protection_tree_set_recursive(r->tree, recursive_protection);
}

void protection_reader_set_list_always(ProtectionReader *r, bool always) {
        r->list_always = always;
}

void protection_reader_set_fd_budget(ProtectionReader *r, unsigned budget) {
        struct rlimit rl;

        if (budget == 0) {
                if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                        rl.rlim_cur = 1024;
                budget = rl.rlim_cur / 2 > UINT_MAX ? UINT_MAX : (unsigned) (rl.rlim_cur / 2);
        }
        r->fd_budget = budget;
}

/* Check that @path names a directory below the root without following symlinks. */
static int path_check(ProtectionReader *r, const char *path) {
        _cleanup_close_ int fd = -1;
        const char *p = path + 1;
        int dir_fd = r->root_fd;

        while (*p) {
                size_t len = strcspn(p, "/");
                char name[NAME_MAX + 1];
                int nfd;

                memcpy(name, p, len);
                name[len] = 0;
                nfd = r_openat(r, dir_fd, name, O_RDONLY | O_DIRECTORY);
                if (nfd < 0)
                        return -errno;
                r_close(r, &fd);
                fd = dir_fd = nfd;
                p += len + (p[len] == '/');
        }
        return 0;
}

/* Add a user of @cgroup's subtree (or node); *@ret_new says whether it is newly tracked (not read yet). */
static int track_add(ProtectionReader *r, const char *cgroup, bool subtree, bool *ret_new) {
        _cleanup_free_ char *path = NULL;
        Track *t, *tracks;
        int k;

        if (r->in_callback)
                return -EBUSY;
        if (!path_valid(cgroup))
                return -EINVAL;
        t = track_find(r, cgroup, subtree);
        if (t) {
                t->n_ref++;
                *ret_new = false;
                return 0;
        }
        k = path_check(r, cgroup);
        if (k < 0)
                return k;

        path = strdup(cgroup);
        if (!path)
                return -ENOMEM;
        tracks = reallocarray(r->tracks, r->n_tracks + 1, sizeof(*tracks));
        if (!tracks)
                return -ENOMEM;
        r->tracks = tracks;
        r->tracks[r->n_tracks++] = (Track) { .path = TAKE_PTR(path), .n_ref = 1, .subtree = subtree };
        flags_recompute(r);
        *ret_new = true;
        return 0;
}

int protection_reader_track(ProtectionReader *r, const char *cgroup) {
        Track *t;
        bool new;
        int k;

        k = track_add(r, cgroup, true, &new);
        if (k < 0 || !new)
                return k;
        k = refresh_internal(r, true);
        if (k >= 0 && !protection_tree_lookup(r->tree, cgroup))
                k = -ENOENT; /* removed in the meantime */
        if (k < 0) {
                t = track_find(r, cgroup, true);
                if (t) {
                        free(t->path);
                        *t = r->tracks[--r->n_tracks];
                }
                prune(r);
                return k;
        }
        return 0;
}

int protection_reader_track_later(ProtectionReader *r, const char *cgroup) {
        bool new;

        return track_add(r, cgroup, true, &new);
}

int protection_reader_track_node_later(ProtectionReader *r, const char *cgroup) {
        bool new;

        return track_add(r, cgroup, false, &new);
}

int protection_reader_untrack(ProtectionReader *r, const char *cgroup) {
        Track *t;

        t = track_find(r, cgroup, true);
        if (!t)
                return -ENOENT;
        if (--t->n_ref > 0)
                return 0;
        free(t->path);
        *t = r->tracks[--r->n_tracks];
        if (r->in_callback)
                r->prune_pending = true;
        else
                prune(r);
        return 0;
}

size_t protection_reader_n_tracked(const ProtectionReader *r) {
        return r->n_tracks;
}

int protection_reader_refresh(ProtectionReader *r) {
        if (r->in_callback)
                return -EBUSY;
        return refresh_internal(r, false);
}

ProtectionTree *protection_reader_get_tree(ProtectionReader *r) {
        return r->tree;
}

ProtectionNode *protection_reader_lookup(ProtectionReader *r, const char *cgroup) {
        return protection_tree_lookup(r->tree, cgroup);
}

void protection_reader_get_stats(const ProtectionReader *r, ProtectionReaderStats *ret) {
        *ret = r->stats;
        ret->fds_open = r->n_fds;
        ret->syscalls = r->stats.preads + r->stats.getdents + r->stats.fstats + r->stats.lseeks +
                        r->stats.opens + r->stats.closes;
}

int protection_reader_foreach(ProtectionReader *r, const char *cgroup, ProtectionNodeFn fn, void *userdata) {
        ProtectionNode *top;
        int k;

        k = protection_reader_track(r, cgroup);
        if (k < 0)
                return k;
        top = protection_tree_lookup(r->tree, cgroup);
        for (ProtectionNode *i = top; k >= 0 && i; i = protection_node_next(i, top))
                k = fn(i, userdata);
        (void) protection_reader_untrack(r, cgroup);
        return k < 0 ? k : 0;
}
