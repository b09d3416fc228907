/* SPDX-License-Identifier: MIT */
/*
 * The reading side of pressurectl top: walks the cgroup2 and the cgroup v1
 * memory hierarchies side by side, reads each cgroup's usage, limits, PSI
 * and event counters with plain openat()/read() as the calling user, and
 * reads the system-wide PSI and /proc/meminfo. No daemon, no curses.
 *
 * Cost: per cgroup one directory listing per hierarchy and one short read
 * of each file shown (five per hierarchy); files are read relative to the
 * directory's fd, so no path is resolved twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "kernfile.h"
#include "top-cgroup.h"
#include "util.h"

/* The v1 "no limit" is PAGE_COUNTER_MAX pages, near 2^63; anything this high is no limit. */
#define V1_UNLIMITED_FLOOR (UINT64_C(1) << 62)
/* Deeper than any real hierarchy (cgroup.max.depth aside); bounds the fds a walk holds. */
#define MAX_DEPTH 64

/* A subdirectory found in one hierarchy. */
typedef struct Child {
        char *name;
        unsigned side; /* 0 cgroup2, 1 v1 */
        uint64_t ino;
} Child;

static void file_cache_close(TopFileCache *c);

/* ---- values -------------------------------------------------------------------- */

/*
 * A size, limit or counter as top keeps it: TOP_UNLIMITED for "max" (and in
 * cgroup v1, @v1, for the "no limit" value), TOP_NONE if it does not parse.
 */
static uint64_t memory_value(const char *text, bool v1) {
        uint64_t v;

        if (parse_memory_value(text, &v) < 0)
                return TOP_NONE;
        if (v == UINT64_MAX || (v1 && v >= V1_UNLIMITED_FLOOR))
                return TOP_UNLIMITED;
        return v == TOP_UNLIMITED ? TOP_NONE : v;
}

/* A counter of a flat-keyed file such as memory.oom_control; TOP_NONE if absent or malformed. */
static uint64_t keyed_value(const char *text, const char *key) {
        uint64_t v;

        if (flat_keyed_value(text, key, &v) < 0 || v >= TOP_UNLIMITED)
                return TOP_NONE;
        return v;
}

/* ---- roots --------------------------------------------------------------------------- */

/**
 * top_roots_discover - find the cgroup hierarchies in mountinfo text.
 * @mountinfo: the contents of /proc/self/mountinfo
 * @ret: the first cgroup2 mount and the first cgroup v1 mount with the
 *       memory controller, each mounted at its hierarchy's root ("/"), as
 *       mountinfo_parse() finds them
 *
 * Returns 0 or -ENOMEM; @ret is untouched on failure.
 */
int top_roots_discover(const char *mountinfo, TopRoots *ret) {
        CgroupMounts m = {};
        int r;

        r = mountinfo_parse(mountinfo ?: "", &m);
        if (r < 0)
                return r;
        *ret = (TopRoots) { .v2 = TAKE_PTR(m.v2_root), .v1_memory = TAKE_PTR(m.v1_memory_root) };
        return 0;
}

/**
 * top_roots_from_mountinfo - top_roots_discover() on this process's /proc/self/mountinfo.
 * @roots: filled as by top_roots_discover()
 *
 * Returns 0 or a negative errno.
 */
int top_roots_from_mountinfo(TopRoots *roots) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_file("/proc/self/mountinfo", MOUNTINFO_READ_MAX, &text, NULL);
        if (r < 0)
                return r;
        return top_roots_discover(text, roots);
}

/**
 * top_roots_done - free the paths of @roots and reset it.
 * @roots: the roots; NULL is fine
 */
void top_roots_done(TopRoots *roots) {
        if (!roots)
                return;
        free(roots->v2);
        free(roots->v1_memory);
        *roots = (TopRoots) {};
}

/* ---- snapshots --------------------------------------------------------------------- */

/*
 * Order of cgroup paths in a snapshot: component by component, i.e. '/'
 * sorts before every other byte. This is the pre-order of a walk that visits
 * siblings by strcmp() of their names, so a snapshot can be binary-searched.
 */
static int path_compare(const char *a, const char *b) {
        for (;; a++, b++) {
                int ca = *a == '/' ? 1 : *a ? (unsigned char) *a + 1 : 0;
                int cb = *b == '/' ? 1 : *b ? (unsigned char) *b + 1 : 0;

                if (ca != cb)
                        return ca < cb ? -1 : 1;
                if (!ca)
                        return 0;
        }
}

/**
 * top_snapshot_find - look a cgroup up by path.
 * @snapshot: the snapshot; NULL is fine
 * @path: "/" or "/a/b"
 *
 * Returns the cgroup, or NULL if the snapshot does not hold it.
 */
TopCgroup *top_snapshot_find(const TopSnapshot *snapshot, const char *path) {
        size_t lo = 0, hi;

        if (!snapshot)
                return NULL;
        hi = snapshot->n_cgroups;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = path_compare(path, snapshot->cgroups[mid].path);

                if (c == 0)
                        return &snapshot->cgroups[mid];
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

/**
 * top_snapshot_done - free a snapshot's cgroups and reset it.
 * @snapshot: the snapshot; NULL is fine
 */
void top_snapshot_done(TopSnapshot *snapshot) {
        if (!snapshot)
                return;
        for (size_t i = 0; i < snapshot->n_cgroups; i++) {
                file_cache_close(&snapshot->cgroups[i].files[0]);
                file_cache_close(&snapshot->cgroups[i].files[1]);
                free(snapshot->cgroups[i].path);
        }
        free(snapshot->cgroups);
        *snapshot = (TopSnapshot) {};
}

/**
 * top_event_delta - an event counter's increase since top first saw it.
 * @cg: the cgroup
 * @i: TOP_EV_HIGH, TOP_EV_MAX or TOP_EV_OOM_KILL
 *
 * Returns the delta, or TOP_NONE if the counter is not available.
 */
uint64_t top_event_delta(const TopCgroup *cg, unsigned i) {
        if (i >= _TOP_EV_MAX || cg->ev[i] == TOP_NONE || cg->ev_base[i] == TOP_NONE)
                return TOP_NONE;
        return cg->ev[i] >= cg->ev_base[i] ? cg->ev[i] - cg->ev_base[i] : 0;
}

/* Files kept open in all snapshots, and how many may be. */
static unsigned cached_fds, fd_budget;

/**
 * top_set_fd_budget - limit the files snapshots keep open between refreshes.
 * @budget: how many, in all; beyond it files are opened and closed each time
 */
void top_set_fd_budget(unsigned budget) {
        fd_budget = budget;
}

static void file_cache_init(TopFileCache *c) {
        c->ino = 0;
        c->dir = -1;
        for (unsigned k = 0; k < TOP_FILES; k++)
                c->fd[k] = -1;
}

static void file_cache_close(TopFileCache *c) {
        if (c->dir >= 0) {
                safe_close(c->dir);
                c->dir = -1;
                cached_fds--;
        }
        for (unsigned k = 0; k < TOP_FILES; k++)
                if (c->fd[k] >= 0) {
                        safe_close(c->fd[k]);
                        c->fd[k] = -1;
                        cached_fds--;
                }
        c->ino = 0;
}

/*
 * Read file @k (@name) of a cgroup directory @dfd into @buf: through the
 * cached fd if there is one, else open it and cache the fd while the budget
 * allows. Returns the length or a negative errno.
 */
static ssize_t read_cached(TopFileCache *c, unsigned k, int dfd, const char *name, char *buf, size_t size) {
        int fd;
        ssize_t n;

        if (c->fd[k] >= 0) {
                n = read_small_fd(c->fd[k], buf, size);
                if (n >= 0)
                        return n;
                /* ENODEV: the cgroup was removed; open it again in case it was made anew. */
                safe_close(c->fd[k]);
                c->fd[k] = -1;
                cached_fds--;
        }
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        n = read_small_fd(fd, buf, size);
        if (n < 0) {
                safe_close(fd);
                return n;
        }
        if (cached_fds < fd_budget) {
                c->fd[k] = fd;
                cached_fds++;
        } else
                safe_close(fd);
        return n;
}

static uint64_t read_cached_value(TopFileCache *c, unsigned k, int dfd, const char *name, bool v1) {
        char buf[64];

        if (read_cached(c, k, dfd, name, buf, sizeof(buf)) <= 0)
                return TOP_NONE;
        return memory_value(buf, v1);
}

typedef struct Walk {
        TopSnapshot snap;
        size_t allocated;
        const TopSnapshot *previous;
        size_t prev_pos; /* the walk visits paths in the previous snapshot's order: a cursor finds them */
        char *dents;     /* getdents64() buffer */
        size_t dents_size;
} Walk;

/* Counter @k of memory.events; TOP_NONE if the file lacks it. */
static uint64_t event_value(const MemoryEvents *ev, MemoryEventKey k) {
        if (!(ev->present & (1u << k)) || ev->value[k] >= TOP_UNLIMITED)
                return TOP_NONE;
        return ev->value[k];
}

static void read_v2(TopCgroup *cg, int dfd) {
        TopFileCache *c = &cg->files[0];
        MemoryEvents ev;
        PsiStats psi;
        char buf[512];

        cg->current = read_cached_value(c, 0, dfd, "memory.current", false);
        if (cg->current != TOP_NONE) {
                cg->high = read_cached_value(c, 1, dfd, "memory.high", false);
                cg->max = read_cached_value(c, 2, dfd, "memory.max", false);
                cg->mem_v1 = false;
        }
        if (read_cached(c, 3, dfd, "memory.events", buf, sizeof(buf)) > 0 && memory_events_parse(buf, &ev) >= 0) {
                cg->ev[TOP_EV_HIGH] = event_value(&ev, MEMORY_EVENT_HIGH);
                cg->ev[TOP_EV_MAX] = event_value(&ev, MEMORY_EVENT_MAX);
                cg->ev[TOP_EV_OOM_KILL] = event_value(&ev, MEMORY_EVENT_OOM_KILL);
        }
        if (read_cached(c, 4, dfd, "memory.pressure", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                cg->has_psi = true;
                cg->some_avg10 = psi.some.avg10;
                cg->full_avg10 = psi.has_full ? psi.full.avg10 : 0;
        }
        /* cpu and io pressure: PSI files of every cgroup2 directory, whatever its controllers. */
        if (read_cached(c, 5, dfd, "cpu.pressure", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                cg->has_cpu_psi = true;
                cg->cpu_some_avg10 = psi.some.avg10;
        }
        if (read_cached(c, 6, dfd, "io.pressure", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                cg->has_io_psi = true;
                cg->io_some_avg10 = psi.some.avg10;
        }
}

/* cgroup v1: usage and limit; "high" is the soft limit, the nearest v1 counterpart. */
static void read_v1(TopCgroup *cg, int dfd) {
        TopFileCache *c = &cg->files[1];
        char buf[512];
        bool have_events = cg->ev[TOP_EV_HIGH] != TOP_NONE || cg->ev[TOP_EV_MAX] != TOP_NONE ||
                           cg->ev[TOP_EV_OOM_KILL] != TOP_NONE;

        if (cg->current == TOP_NONE) {
                cg->current = read_cached_value(c, 0, dfd, "memory.usage_in_bytes", true);
                if (cg->current == TOP_NONE)
                        return;
                cg->high = read_cached_value(c, 1, dfd, "memory.soft_limit_in_bytes", true);
                cg->max = read_cached_value(c, 2, dfd, "memory.limit_in_bytes", true);
                cg->mem_v1 = true;
        }
        if (have_events)
                return;
        /* Hits of limit_in_bytes, and OOM kills (memory.oom_control, Linux 4.13+). */
        cg->ev[TOP_EV_MAX] = read_cached_value(c, 3, dfd, "memory.failcnt", true);
        if (read_cached(c, 4, dfd, "memory.oom_control", buf, sizeof(buf)) > 0)
                cg->ev[TOP_EV_OOM_KILL] = keyed_value(buf, "oom_kill");
}

static int name_compare(const void *a, const void *b) {
        return strcmp(((const Child *) a)->name, ((const Child *) b)->name);
}

/* The children of one cgroup as they are listed: from both hierarchies, unsorted. */
typedef struct ChildList {
        Child *v;
        size_t n, allocated;
        unsigned side;
} ChildList;

static int child_add(int dfd _unused_, const char *name, uint64_t ino, void *userdata) {
        ChildList *l = userdata;

        if (l->n == l->allocated) {
                size_t a = l->allocated ? l->allocated * 2 : 16;
                Child *p = reallocarray(l->v, a, sizeof(Child));

                if (!p)
                        return -ENOMEM;
                l->v = p;
                l->allocated = a;
        }
        l->v[l->n] = (Child) { .name = strdup(name), .side = l->side, .ino = ino };
        if (!l->v[l->n].name)
                return -ENOMEM;
        l->n++;
        return 0;
}

/*
 * Append the subdirectories of @dfd (a fresh fd, at offset 0) to @l, with
 * their inode numbers: getdents64(), no DIR stream, no extra fd. A
 * directory removed meanwhile lists nothing.
 */
static int list_children(Walk *w, int dfd, unsigned side, ChildList *l) {
        l->side = side;
        return cgroupfs_list(dfd, w->dents, w->dents_size, NULL, child_add, l);
}

static void free_children(Child *children, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(children[i].name);
        free(children);
}

/* The previous refresh's entry of @path: both walks visit paths in the same order. */
static TopCgroup *previous_find(Walk *w, const char *path) {
        const TopSnapshot *p = w->previous;

        if (!p)
                return NULL;
        while (w->prev_pos < p->n_cgroups) {
                int c = path_compare(p->cgroups[w->prev_pos].path, path);

                if (c == 0)
                        return &p->cgroups[w->prev_pos++];
                if (c > 0)
                        return NULL;
                w->prev_pos++;
        }
        return NULL;
}

/*
 * A cgroup directory met during a walk, in one hierarchy: its fd (or -1 if
 * the cgroup is not in that hierarchy), its inode, and whether the fd was
 * taken over from the previous refresh (already counted as cached).
 */
typedef struct Dir {
        int fd;
        uint64_t ino;
        bool adopted;
} Dir;

/*
 * Open the child @name of @parent, or take the fd kept by the previous
 * refresh's entry @old if it is the same directory (same inode as listed).
 */
static Dir dir_open(int parent, const char *name, uint64_t ino, TopCgroup *old, unsigned side) {
        if (old && old->files[side].dir >= 0 && old->files[side].ino == ino) {
                Dir d = { .fd = old->files[side].dir, .ino = ino, .adopted = true };

                old->files[side].dir = -1;
                return d;
        }
        return (Dir) {
                .fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW),
                .ino = ino,
        };
}

/*
 * Count the fds of @dirs that are new (not adopted) against the budget;
 * those beyond it are marked in @close_dir, to be closed once read.
 */
static void dirs_budget(const Dir dirs[2], bool close_dir[2]) {
        for (unsigned side = 0; side < 2; side++) {
                close_dir[side] = false;
                if (dirs[side].fd >= 0 && !dirs[side].adopted) {
                        if (cached_fds < fd_budget)
                                cached_fds++;
                        else
                                close_dir[side] = true;
                }
        }
}

/* No entry took the fds of @dirs: give them back. */
static void dirs_release(const Dir dirs[2], const bool close_dir[2]) {
        for (unsigned side = 0; side < 2; side++)
                if (dirs[side].fd >= 0) {
                        safe_close(dirs[side].fd);
                        if (!close_dir[side])
                                cached_fds--;
                }
}

/*
 * Append the entry of @path to the snapshot, in @dirs' hierarchies, and
 * hand it the fds it keeps: its directories unless @close_dir, and the
 * files of @old where the directory is the same. Returns 0 and its index
 * in *@ret_index, or -ENOMEM (nothing taken then).
 */
static int walk_add(Walk *w, const char *path, unsigned depth, size_t parent, const Dir dirs[2], TopCgroup *old,
                    const bool close_dir[2], size_t *ret_index) {
        TopCgroup *cg;

        if (w->snap.n_cgroups == w->allocated) {
                size_t a = w->allocated ? w->allocated * 2 : 64;
                TopCgroup *p = reallocarray(w->snap.cgroups, a, sizeof(TopCgroup));

                if (!p)
                        return -ENOMEM;
                w->snap.cgroups = p;
                w->allocated = a;
        }
        cg = &w->snap.cgroups[w->snap.n_cgroups];
        *cg = (TopCgroup) {
                .path = strdup(path),
                .depth = depth,
                .parent = parent,
                .in_v2 = dirs[0].fd >= 0,
                .in_v1 = dirs[1].fd >= 0,
                .current = TOP_NONE, .high = TOP_NONE, .max = TOP_NONE,
                .ev = { TOP_NONE, TOP_NONE, TOP_NONE },
                .ev_base = { TOP_NONE, TOP_NONE, TOP_NONE },
                .emin = TOP_NONE, .elow = TOP_NONE, .ep_since_us = TOP_NONE, .kill_at_us = TOP_NONE,
                .previous = old ? (size_t) (old - w->previous->cgroups) : SIZE_MAX,
        };
        if (!cg->path)
                return -ENOMEM;
        cg->name = depth == 0 ? cg->path : strrchr(cg->path, '/') + 1;
        *ret_index = w->snap.n_cgroups++;

        /* From here on the entry owns the fds it keeps; snapshot_done() closes them. */
        for (unsigned side = 0; side < 2; side++) {
                TopFileCache *c = &cg->files[side];

                file_cache_init(c);
                if (old && old->files[side].ino != 0 && old->files[side].ino == dirs[side].ino) {
                        for (unsigned k = 0; k < TOP_FILES; k++) {
                                c->fd[k] = old->files[side].fd[k];
                                old->files[side].fd[k] = -1;
                        }
                }
                c->ino = dirs[side].fd >= 0 ? dirs[side].ino : 0;
                if (dirs[side].fd >= 0 && !close_dir[side])
                        c->dir = dirs[side].fd;
        }
        return 0;
}

/*
 * The children of a cgroup: the union of both hierarchies' subdirectories,
 * sorted by name, into *@children (freed by the caller, also on failure).
 * A directory's link count is 2 plus its subdirectories on cgroupfs, tmpfs
 * and ext4: at 2 it is a leaf and needs no listing (filesystems that do not
 * count links report 1, and are listed). Returns 0 or -ENOMEM; a directory
 * that cannot be listed has no children.
 */
static int walk_list(Walk *w, const Dir dirs[2], Child **children, size_t *n) {
        ChildList l = {};
        int r = 0;

        for (unsigned side = 0; side < 2; side++) {
                struct stat st;

                if (dirs[side].fd < 0)
                        continue;
                if (fstat(dirs[side].fd, &st) >= 0 && st.st_nlink == 2)
                        continue;
                if (dirs[side].adopted && lseek(dirs[side].fd, 0, SEEK_SET) < 0)
                        continue;
                if (list_children(w, dirs[side].fd, side, &l) == -ENOMEM) {
                        r = -ENOMEM;
                        break;
                }
        }
        *children = l.v;
        *n = l.n;
        if (r >= 0 && *n > 1)
                qsort(*children, *n, sizeof(Child), name_compare);
        return r;
}

static int walk(Walk *w, const char *path, unsigned depth, size_t parent, Dir dirs[2], TopCgroup *old);

/* Visit the sorted @children of the entry @self (@path); the same name in both hierarchies is one cgroup. */
static int walk_children(Walk *w, const char *path, unsigned depth, size_t self, const Dir dirs[2],
                         const Child *children, size_t n_children) {
        for (size_t i = 0; i < n_children;) {
                _cleanup_free_ char *child = NULL;
                Dir cdirs[2] = { { .fd = -1 }, { .fd = -1 } };
                TopCgroup *cold;
                size_t j = i;
                int r;

                if (asprintf(&child, "%s/%s", streq(path, "/") ? "" : path, children[i].name) < 0) {
                        child = NULL;
                        return -ENOMEM;
                }
                cold = previous_find(w, child);
                for (; j < n_children && streq(children[j].name, children[i].name); j++) {
                        unsigned side = children[j].side;

                        if (cdirs[side].fd < 0)
                                cdirs[side] = dir_open(dirs[side].fd, children[j].name, children[j].ino, cold, side);
                }
                i = j;
                if (cdirs[0].fd < 0 && cdirs[1].fd < 0)
                        continue; /* gone since the listing */
                r = walk(w, child, depth + 1, self, cdirs, cold);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * Visit one cgroup: read its files, then its children, depth first.
 * @dirs: its directory in each hierarchy; walk() keeps each fd in the new
 *        entry's cache or closes it before it returns
 * @old: the same cgroup in the previous refresh, or NULL
 */
static int walk(Walk *w, const char *path, unsigned depth, size_t parent, Dir dirs[2], TopCgroup *old) {
        Child *children = NULL;
        size_t n_children = 0, self;
        bool close_dir[2];
        TopCgroup *cg;
        int r;

        dirs_budget(dirs, close_dir);
        r = walk_add(w, path, depth, parent, dirs, old, close_dir, &self);
        if (r < 0) {
                dirs_release(dirs, close_dir);
                return r;
        }

        cg = &w->snap.cgroups[self];
        if (dirs[0].fd >= 0)
                read_v2(cg, dirs[0].fd);
        if (dirs[1].fd >= 0)
                read_v1(cg, dirs[1].fd);
        if (depth < MAX_DEPTH) {
                r = walk_list(w, dirs, &children, &n_children);
                if (r >= 0)
                        r = walk_children(w, path, depth, self, dirs, children, n_children);
        }

        free_children(children, n_children);
        for (unsigned side = 0; side < 2; side++)
                if (close_dir[side])
                        safe_close(dirs[side].fd);
        return r;
}

/* A cgroup's shown values differ from the previous refresh. */
static bool values_changed(const TopCgroup *a, const TopCgroup *b) {
        if (a->current != b->current || a->high != b->high || a->max != b->max ||
            a->has_psi != b->has_psi)
                return true;
        /* PSI averages in hundredths, as the kernel gives and top shows them. */
        if (a->has_psi && (a->some_avg10 != b->some_avg10 || a->full_avg10 != b->full_avg10))
                return true;
        if (a->has_cpu_psi != b->has_cpu_psi || a->has_io_psi != b->has_io_psi ||
            (a->has_cpu_psi && a->cpu_some_avg10 != b->cpu_some_avg10) ||
            (a->has_io_psi && a->io_some_avg10 != b->io_some_avg10))
                return true;
        return memcmp(a->ev, b->ev, sizeof(a->ev)) != 0;
}

/* Open @subtree below @root; -EBADF if @root is NULL. */
static int open_subtree(const char *root, const char *subtree) {
        _cleanup_free_ char *p = NULL;
        int fd;

        if (!root)
                return -EBADF;
        if (asprintf(&p, "%s%s", root, streq(subtree, "/") ? "" : subtree) < 0)
                return -ENOMEM;
        fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/**
 * top_snapshot_read - read the cgroups of @subtree from both hierarchies.
 * @roots: the hierarchy roots (either may be NULL)
 * @subtree: "/" or an absolute path below the roots, without ".." components
 * @previous: the previous refresh, or NULL for the first
 * @ret: the new snapshot
 *
 * Event-counter baselines are carried over from @previous; a counter that
 * went down (the cgroup was made anew) starts a new baseline. A cgroup is
 * marked changed when a shown value differs from @previous, or when it is
 * new and @previous is not NULL.
 *
 * Returns 0, -EINVAL for a malformed @subtree, -ENOENT if @subtree exists
 * in neither hierarchy, or -ENOMEM. @ret is untouched on failure.
 */
int top_snapshot_read(const TopRoots *roots, const char *subtree, const TopSnapshot *previous,
                      TopSnapshot *ret) {
        Walk w = { .previous = previous, .dents_size = 32768 };
        Dir dirs[2] = { { .fd = -1 }, { .fd = -1 } };
        struct stat st;
        int r;

        if (!subtree || subtree[0] != '/' || strstr(subtree, "/../") || strstr(subtree, "/./") ||
            (strlen(subtree) >= 3 && streq(subtree + strlen(subtree) - 3, "/..")))
                return -EINVAL;
        for (unsigned side = 0; side < 2; side++) {
                int fd = open_subtree(side == 0 ? roots->v2 : roots->v1_memory, subtree);

                if (fd == -ENOMEM) {
                        safe_close(dirs[0].fd);
                        return -ENOMEM;
                }
                if (fd < 0)
                        continue;
                dirs[side].fd = fd;
                if (fstat(fd, &st) >= 0)
                        dirs[side].ino = st.st_ino;
        }
        if (dirs[0].fd < 0 && dirs[1].fd < 0)
                return -ENOENT;

        w.dents = malloc(w.dents_size);
        if (!w.dents) {
                safe_close(dirs[0].fd);
                safe_close(dirs[1].fd);
                return -ENOMEM;
        }
        r = walk(&w, subtree, 0, SIZE_MAX, dirs, previous_find(&w, subtree));
        free(w.dents);
        if (r < 0) {
                top_snapshot_done(&w.snap);
                return r;
        }

        for (size_t i = 0; i < w.snap.n_cgroups; i++) {
                TopCgroup *cg = &w.snap.cgroups[i];
                const TopCgroup *old = cg->previous != SIZE_MAX ? &previous->cgroups[cg->previous] : NULL;

                for (unsigned k = 0; k < _TOP_EV_MAX; k++) {
                        if (cg->ev[k] == TOP_NONE)
                                continue;
                        if (old && old->ev_base[k] != TOP_NONE && cg->ev[k] >= old->ev_base[k])
                                cg->ev_base[k] = old->ev_base[k];
                        else
                                cg->ev_base[k] = cg->ev[k];
                }
                cg->changed = previous && (!old || values_changed(cg, old));
        }
        *ret = w.snap;
        return 0;
}

/* ---- system ------------------------------------------------------------------------- */

/* "MemAvailable:   123456 kB" -> bytes */
static uint64_t meminfo_value(const char *text, const char *key) {
        const char *p = strstr(text, key);
        unsigned long long kib;

        if (!p || sscanf(p + strlen(key), ": %llu kB", &kib) != 1)
                return TOP_NONE;
        return (uint64_t) kib * 1024;
}

/**
 * top_system_read - the system-wide numbers of top's header.
 * @ret: filled with /proc/pressure/memory's averages (has_psi false if
 *       PSI is off), the "some" avg10 of /proc/pressure/cpu and io, and
 *       MemAvailable/MemTotal (TOP_NONE if unknown)
 */
void top_system_read(TopSystem *ret) {
        char buf[4096];
        PsiStats psi;

        *ret = (TopSystem) { .mem_available = TOP_NONE, .mem_total = TOP_NONE };
        if (read_small_at(AT_FDCWD, "/proc/pressure/memory", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                ret->has_psi = true;
                ret->some_avg10 = psi.some.avg10;
                ret->some_avg60 = psi.some.avg60;
                ret->full_avg10 = psi.has_full ? psi.full.avg10 : 0;
                ret->full_avg60 = psi.has_full ? psi.full.avg60 : 0;
        }
        if (read_small_at(AT_FDCWD, "/proc/pressure/cpu", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                ret->has_cpu_psi = true;
                ret->cpu_some_avg10 = psi.some.avg10;
        }
        if (read_small_at(AT_FDCWD, "/proc/pressure/io", buf, sizeof(buf)) > 0 && psi_stats_parse(buf, &psi) >= 0) {
                ret->has_io_psi = true;
                ret->io_some_avg10 = psi.some.avg10;
        }
        if (read_small_at(AT_FDCWD, "/proc/meminfo", buf, sizeof(buf)) > 0) {
                ret->mem_available = meminfo_value(buf, "\nMemAvailable");
                ret->mem_total = meminfo_value(buf, "MemTotal");
        }
}
