/* SPDX-License-Identifier: MIT */
/*
 * Tests for cgroupfs.c on trees in a temporary directory: small files read
 * whole (at the buffer's limit, one byte over it, on a kept descriptor
 * after a rewrite, through a pipe, missing, symlinked), directory listings (directories
 * only, the buffer's limits, a stop, a removed directory, the syscalls
 * counted) and the walk (order, paths, depth and count limits, pruning,
 * passing children by, stops, the 64-level bound, errors, out of memory).
 *
 * getdents64() is wrapped (-Wl,--wrap=getdents64) to count its calls, to
 * interrupt one, and to hide the entries' types as some file systems do.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "cgroupfs.h"
#include "fail-inject.h"
#include "tests.h"
#include "util.h"

#define STOP ECANCELED /* what the callbacks stop with */

static char base[] = "/tmp/test-cgroupfs-XXXXXX";
static int base_fd = -EBADF;
static int file_fd = -EBADF; /* a regular file, read-only */

/* ---- getdents64() wrapped ---- */

ssize_t __real_getdents64(int fd, void *buf, size_t size);
ssize_t __wrap_getdents64(int fd, void *buf, size_t size);

static struct {
        unsigned calls;
        bool interrupt;         /* the next call fails with EINTR */
        bool hide_types;        /* entries come back as DT_UNKNOWN */
} dents;

ssize_t __wrap_getdents64(int fd, void *buf, size_t size) {
        ssize_t n;

        dents.calls++;
        if (dents.interrupt) {
                dents.interrupt = false;
                errno = EINTR;
                return -1;
        }
        n = __real_getdents64(fd, buf, size);
        for (ssize_t off = 0; dents.hide_types && off < n;) {
                struct dirent64 *de = (struct dirent64 *) ((char *) buf + off);

                de->d_type = DT_UNKNOWN;
                off += de->d_reclen;
        }
        return n;
}

/* ---- the tree ---- */

static void make_dir(const char *rel) {
        if (mkdirat(base_fd, rel, 0755) < 0)
                TEST_FAIL("mkdir %s: %s", rel, strerror(errno));
}

/* Write @size bytes of @text (repeated) to @rel, in place: a kept descriptor sees the new contents. */
static void write_sized(const char *rel, const char *text, size_t size) {
        size_t len = strlen(text);
        int fd = openat(base_fd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        if (fd < 0)
                TEST_FAIL("open %s: %s", rel, strerror(errno));
        for (size_t i = 0; i < size; i++)
                ASSERT_EQ(write(fd, text + i % len, 1), 1);
        close(fd);
}

static void make_link(const char *target, const char *rel) {
        if (symlinkat(target, base_fd, rel) < 0)
                TEST_FAIL("symlink %s: %s", rel, strerror(errno));
}

static int open_dir(const char *rel) {
        int fd = openat(base_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                TEST_FAIL("open %s: %s", rel, strerror(errno));
        return fd;
}

/* @n directories @name, each in the one before, below @rel. */
static void make_chain(const char *rel, const char *name, unsigned n) {
        int fd = open_dir(rel);

        for (unsigned i = 0; i < n; i++) {
                int child;

                ASSERT_OK(mkdirat(fd, name, 0755));
                child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ASSERT_TRUE(child >= 0);
                close(fd);
                fd = child;
        }
        close(fd);
}

/* ---- read_small_fd(), read_small_at() ---- */

/* Read the file @rel into a buffer of @size; the result must be NUL-terminated at its length. */
static ssize_t read_rel(const char *rel, char *buf, size_t size) {
        ssize_t n;

        memset(buf, '?', size);
        n = read_small_at(base_fd, rel, buf, size);
        if (n >= 0)
                ASSERT_EQ(strlen(buf), n);
        return n;
}

static void test_read_small(void) {
        char buf[16];

        test_write_file_at(base, "small", "hello\n");
        ASSERT_EQ(read_rel("small", buf, sizeof(buf)), 6);
        ASSERT_STREQ(buf, "hello\n");
        test_write_file_at(base, "empty", "");
        ASSERT_EQ(read_rel("empty", buf, sizeof(buf)), 0);

        /* size - 1 bytes fit; one more is too big, and the first size - 1 are kept. */
        write_sized("full", "0123456789abcdef", sizeof(buf) - 1);
        ASSERT_EQ(read_rel("full", buf, sizeof(buf)), sizeof(buf) - 1);
        ASSERT_STREQ(buf, "0123456789abcde");
        write_sized("over", "0123456789abcdef", sizeof(buf));
        ASSERT_ERR(read_rel("over", buf, sizeof(buf)), EFBIG);
        ASSERT_EQ(strnlen(buf, sizeof(buf)), sizeof(buf) - 1);
        ASSERT_STREQ(buf, "0123456789abcde");
        ASSERT_ERR(read_rel("over", buf, sizeof(buf) - 1), EFBIG);
        ASSERT_EQ(read_rel("over", buf, 2), -EFBIG);
        ASSERT_STREQ(buf, "0");
        write_sized("one", "x", 1);
        ASSERT_EQ(read_rel("one", buf, 2), 1);

        ASSERT_ERR(read_rel("small", buf, 1), EINVAL);
        ASSERT_ERR(read_rel("small", buf, 0), EINVAL);

        ASSERT_ERR(read_rel("missing", buf, sizeof(buf)), ENOENT);
        make_link("small", "link");
        ASSERT_ERR(read_rel("link", buf, sizeof(buf)), ELOOP);
}

/* @text through a pipe, its writing end closed, read into a buffer of @size. */
static ssize_t read_pipe(const char *text, char *buf, size_t size) {
        int p[2];
        ssize_t n;

        ASSERT_OK(pipe2(p, O_CLOEXEC));
        ASSERT_EQ(write(p[1], text, strlen(text)), (long long) strlen(text));
        close(p[1]);
        n = read_small_fd(p[0], buf, size);
        close(p[0]);
        return n;
}

/* A kept descriptor reads from offset 0 each time: the file's current contents, wherever its offset is. */
static void test_read_kept_fd(void) {
        char buf[32];
        int fd;

        test_write_file_at(base, "kept", "the first contents\n");
        fd = openat(base_fd, "kept", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(read_small_fd(fd, buf, sizeof(buf)), 19);
        ASSERT_STREQ(buf, "the first contents\n");
        ASSERT_TRUE(lseek(fd, 0, SEEK_END) == 19);
        test_write_file_at(base, "kept", "second\n");
        ASSERT_EQ(read_small_fd(fd, buf, sizeof(buf)), 7);
        ASSERT_STREQ(buf, "second\n");
        close(fd);

        /* pread()'s own errors. */
        fd = openat(base_fd, "kept", O_WRONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_ERR(read_small_fd(fd, buf, sizeof(buf)), EBADF);
        close(fd);
        ASSERT_ERR(read_small_fd(base_fd, buf, sizeof(buf)), EISDIR);

        /* What cannot be pread() (ESPIPE) is read(), at the same limits. */
        ASSERT_EQ(read_pipe("through a pipe\n", buf, 16), 15);
        ASSERT_STREQ(buf, "through a pipe\n");
        ASSERT_ERR(read_pipe("through a pipe!\n", buf, 16), EFBIG);
        ASSERT_STREQ(buf, "through a pipe!");
}

/* ---- cgroupfs_list() ---- */

typedef struct Listing {
        int dfd;
        char names[16384];      /* "name;" per call, in call order */
        unsigned calls;
        unsigned stop_at;       /* return -STOP on this call (1: the first); 0: never */
} Listing;

static int list_one(int dfd, const char *name, uint64_t ino, void *userdata) {
        Listing *l = userdata;
        size_t len = strlen(l->names);
        struct stat st;

        ASSERT_EQ(dfd, l->dfd);
        ASSERT_OK(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        ASSERT_U64_EQ(ino, st.st_ino);
        ASSERT_TRUE(len + strlen(name) + 2 <= sizeof(l->names));
        snprintf(l->names + len, sizeof(l->names) - len, "%s;", name);
        return ++l->calls == l->stop_at ? -STOP : 0;
}

static uint64_t dents_buf[8192 / sizeof(uint64_t)]; /* aligned for struct dirent64 */

/* List @rel with a buffer of @size (at @misalign bytes past an aligned one); the getdents64() calls must be counted. */
static int list_rel(const char *rel, size_t size, size_t misalign, Listing *l, CgroupfsListStats *stats) {
        unsigned calls = dents.calls;
        uint64_t counted = stats->getdents;
        int r;

        l->dfd = open_dir(rel);
        r = cgroupfs_list(l->dfd, (char *) dents_buf + misalign, size, stats, list_one, l);
        ASSERT_U64_EQ(stats->getdents - counted, dents.calls - calls);
        close(l->dfd);
        return r;
}

/* Only directories: not files, not symlinks to directories, not "." or "..". */
static void test_list_dirs_only(void) {
        CgroupfsListStats stats = {};
        Listing l = {};

        make_dir("list");
        make_dir("list/d1");
        make_dir("list/d2");
        test_write_file_at(base, "list/file", "x");
        make_link("d1", "list/link");
        ASSERT_OK(mkfifoat(base_fd, "list/fifo", 0600));

        ASSERT_OK(list_rel("list", 1024, 0, &l, &stats));
        ASSERT_EQ(l.calls, 2);
        ASSERT_TRUE(streq(l.names, "d1;d2;") || streq(l.names, "d2;d1;"));
        ASSERT_U64_EQ(stats.getdents, 2); /* the entries, then the end */
        ASSERT_U64_EQ(stats.fstats, 0);

        /* A file system that does not say the types: fstatat() each entry, the result the same. */
        l = (Listing) {};
        stats = (CgroupfsListStats) {};
        dents.hide_types = true;
        ASSERT_OK(list_rel("list", 1024, 0, &l, &stats));
        dents.hide_types = false;
        ASSERT_EQ(l.calls, 2);
        ASSERT_U64_EQ(stats.fstats, 5);

        /* An interrupted getdents64() is made again, and counted. */
        l = (Listing) {};
        stats = (CgroupfsListStats) {};
        dents.interrupt = true;
        ASSERT_OK(list_rel("list", 1024, 0, &l, &stats));
        ASSERT_EQ(l.calls, 2);
        ASSERT_U64_EQ(stats.getdents, 3);
}

/* More entries than one buffer holds: several getdents64() calls, added to what @stats held. */
static void test_list_many(void) {
        CgroupfsListStats stats = { .getdents = 100 };
        Listing l = {};
        char name[64];

        make_dir("many");
        for (unsigned i = 0; i < 200; i++) {
                snprintf(name, sizeof(name), "many/a-directory-with-a-longer-name-%03u", i);
                make_dir(name);
        }
        ASSERT_OK(list_rel("many", 1024, 0, &l, &stats));
        ASSERT_EQ(l.calls, 200);
        ASSERT_TRUE(stats.getdents > 100 + 2);

        /* A stop from the callback ends the listing with it. */
        l = (Listing) { .stop_at = 2 };
        ASSERT_ERR(list_rel("many", 1024, 0, &l, &stats), STOP);
        ASSERT_EQ(l.calls, 2);

        /* Without stats. */
        l = (Listing) {};
        l.dfd = open_dir("many");
        ASSERT_OK(cgroupfs_list(l.dfd, dents_buf, sizeof(dents_buf), NULL, list_one, &l));
        ASSERT_EQ(l.calls, 200);

        /* A kept descriptor goes on from its offset: nothing more, until lseek(). */
        l.calls = 0;
        ASSERT_OK(cgroupfs_list(l.dfd, dents_buf, sizeof(dents_buf), NULL, list_one, &l));
        ASSERT_EQ(l.calls, 0);
        ASSERT_TRUE(lseek(l.dfd, 0, SEEK_SET) == 0);
        ASSERT_OK(cgroupfs_list(l.dfd, dents_buf, sizeof(dents_buf), NULL, list_one, &l));
        ASSERT_EQ(l.calls, 200);
        close(l.dfd);
}

static void test_list_errors(void) {
        CgroupfsListStats stats = {};
        Listing l = {};
        int fd;

        /* The buffer: at least 1 KiB, aligned, there. */
        ASSERT_ERR(list_rel("list", 1023, 0, &l, &stats), EINVAL);
        ASSERT_ERR(list_rel("list", 1024, 1, &l, &stats), EINVAL);
        ASSERT_ERR(cgroupfs_list(base_fd, NULL, 1024, NULL, list_one, &l), EINVAL);
        ASSERT_EQ(l.calls, 0);
        ASSERT_OK(list_rel("list", 1024, 0, &l, &stats));
        ASSERT_EQ(l.calls, 2);

        /* A directory removed once open lists as empty (getdents64() says ENOENT). */
        l = (Listing) {};
        make_dir("gone");
        fd = open_dir("gone");
        ASSERT_OK(unlinkat(base_fd, "gone", AT_REMOVEDIR));
        ASSERT_OK(cgroupfs_list(fd, dents_buf, sizeof(dents_buf), NULL, list_one, &l));
        ASSERT_EQ(l.calls, 0);
        close(fd);

        /* getdents64()'s own errors. */
        ASSERT_ERR(cgroupfs_list(file_fd, dents_buf, sizeof(dents_buf), NULL, list_one, &l), ENOTDIR);
}

/* ---- cgroupfs_walk() ---- */

/* What the callbacks saw and what they are to do. */
typedef struct Trace {
        const char *root;       /* the walk's root, below base */
        const char *prune;      /* visit() prunes this path */
        const char *stop;       /* visit() stops the walk at this path */
        const char *unlistable; /* visit() makes the listing of this path fail */
        const char *pass;       /* enter() passes this name by */
        const char *enter_stop; /* enter() stops the walk at this name */
        const char *vanish;     /* enter() removes this (empty) directory first */
        const char *to_file;    /* enter() replaces this (empty) directory with a file first */

        char visits[16384];     /* "path depth;" per visit */
        char enters[1024];      /* "parent depth name;" per enter() */
        unsigned n_visits, deepest;
        char last[PATH_MAX];    /* the last path visited */
        unsigned n_errors;
        char error_parent[PATH_MAX], error_name[NAME_MAX + 1];
        int error;
} Trace;

static void append(char *log, size_t size, const char *fmt, ...) _printf_(3, 4);
static void append(char *log, size_t size, const char *fmt, ...) {
        size_t len = strlen(log);
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(log + len, size - len, fmt, ap);
        va_end(ap);
        ASSERT_TRUE(n >= 0 && (size_t) n < size - len);
}

/* The directory @name of @parent (a walk path) below base. */
static void trace_rel(const Trace *t, const char *parent, const char *name, char *rel, size_t size) {
        snprintf(rel, size, "%s%s/%s", t->root, streq(parent, "/") ? "" : parent, name);
}

static int trace_enter(const char *parent, unsigned depth, const char *name, void *userdata) {
        Trace *t = userdata;
        char rel[PATH_MAX];

        append(t->enters, sizeof(t->enters), "%s %u %s;", parent, depth, name);
        trace_rel(t, parent, name, rel, sizeof(rel));
        if (streq_ptr(name, t->vanish) || streq_ptr(name, t->to_file))
                ASSERT_OK(unlinkat(base_fd, rel, AT_REMOVEDIR));
        if (streq_ptr(name, t->to_file))
                test_write_file_at(base, rel, "");
        if (streq_ptr(name, t->enter_stop))
                return -STOP;
        return !streq_ptr(name, t->pass);
}

static int trace_visit(int dfd, const char *path, unsigned depth, void *userdata) {
        Trace *t = userdata;
        struct stat st;

        ASSERT_OK(fstat(dfd, &st));
        ASSERT_TRUE(S_ISDIR(st.st_mode));
        if (depth < 20)
                append(t->visits, sizeof(t->visits), "%s %u;", path, depth);
        t->n_visits++;
        t->deepest = depth > t->deepest ? depth : t->deepest;
        ASSERT_TRUE(strlen(path) < sizeof(t->last));
        strcpy(t->last, path);
        /* A listing that fails: the walker's descriptor made a regular file's. */
        if (streq_ptr(path, t->unlistable))
                ASSERT_TRUE(dup3(file_fd, dfd, O_CLOEXEC) == dfd);
        if (streq_ptr(path, t->stop))
                return -STOP;
        return streq_ptr(path, t->prune) ? CGROUPFS_WALK_PRUNE : 0;
}

static void trace_error(const char *parent, const char *name, int error, void *userdata) {
        Trace *t = userdata;

        t->n_errors++;
        snprintf(t->error_parent, sizeof(t->error_parent), "%s", parent);
        snprintf(t->error_name, sizeof(t->error_name), "%s", name);
        t->error = error;
}

/* Walk t->root with @w's limits and enter(), the trace's visit() and error(). */
static int walk(Trace *t, CgroupfsWalk *w) {
        int fd = open_dir(t->root), r;

        w->visit = trace_visit;
        w->error = trace_error;
        w->userdata = t;
        r = cgroupfs_walk(fd, w);
        close(fd);
        return r;
}

/*
 * The tree the walk cases run on: "B" < "a10" < "a9" by strcmp(), a file
 * and a symlink to a directory that are no cgroups.
 */
#define FULL_WALK "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;/a9/x 2;/a9/x/deep 3;/a9/y 2;"

static void make_walk_tree(void) {
        static const char *const dirs[] = { "walk", "walk/a9", "walk/a9/y", "walk/a9/x", "walk/a9/x/deep",
                                            "walk/B", "walk/a10", "walk/a10/z" };

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                make_dir(dirs[i]);
        test_write_file_at(base, "walk/a9/memory.current", "0\n");
        make_link("a9", "walk/link");
}

typedef struct WalkCase {
        unsigned max_depth;
        size_t max_count;
        const char *prune, *stop, *pass, *enter_stop;
        int ret;
        const char *visits;
        size_t entered, listed; /* checked when ret is 0 */
        bool truncated;
} WalkCase;

static const WalkCase walk_cases[] = {
        /* Depth: 0 visits the root alone, 1 lists only the root's children. */
        { .max_depth = 0, .visits = "/ 0;" },
        { .max_depth = 1, .visits = "/ 0;/B 1;/a10 1;/a9 1;", .entered = 3, .listed = 1 },
        { .max_depth = 2, .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;/a9/x 2;/a9/y 2;", .entered = 6, .listed = 4 },
        { .max_depth = CGROUPFS_WALK_DEPTH_MAX, .visits = FULL_WALK, .entered = 7, .listed = 8 },
        /* Count: the directories entered below the root. */
        { .max_depth = 64, .max_count = 1, .visits = "/ 0;/B 1;", .entered = 1, .listed = 2, .truncated = true },
        { .max_depth = 64, .max_count = 3, .visits = "/ 0;/B 1;/a10 1;/a10/z 2;", .entered = 3, .listed = 4,
          .truncated = true },
        { .max_depth = 64, .max_count = 5, .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;/a9/x 2;", .entered = 5,
          .listed = 6, .truncated = true },
        { .max_depth = 64, .max_count = 7, .visits = FULL_WALK, .entered = 7, .listed = 8 },
        /* A child passed by costs no count: 5 are enough without a10. */
        { .max_depth = 64, .max_count = 5, .pass = "a10", .visits = "/ 0;/B 1;/a9 1;/a9/x 2;/a9/x/deep 3;/a9/y 2;",
          .entered = 5, .listed = 6 },
        { .max_depth = 64, .pass = "x", .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;/a9/y 2;", .entered = 5,
          .listed = 6 },
        /* Pruning. */
        { .max_depth = 64, .prune = "/a9", .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;", .entered = 4, .listed = 4 },
        { .max_depth = 64, .prune = "/", .visits = "/ 0;" },
        /* Stops. */
        { .max_depth = 64, .stop = "/a9/x", .ret = -STOP, .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;/a9/x 2;" },
        { .max_depth = 64, .stop = "/", .ret = -STOP, .visits = "/ 0;" },
        { .max_depth = 64, .enter_stop = "x", .ret = -STOP, .visits = "/ 0;/B 1;/a10 1;/a10/z 2;/a9 1;" },
        /* Limits. */
        { .max_depth = CGROUPFS_WALK_DEPTH_MAX + 1, .ret = -EINVAL, .visits = "" },
};

static void test_walk_cases(void) {
        for (size_t i = 0; i < ELEMENTSOF(walk_cases); i++) {
                const WalkCase *c = &walk_cases[i];
                Trace t = { .root = "walk", .prune = c->prune, .stop = c->stop, .pass = c->pass,
                            .enter_stop = c->enter_stop };
                /* Counters from before are reset. */
                CgroupfsWalk w = { .max_depth = c->max_depth, .max_count = c->max_count,
                                   .dirs_listed = 99, .entered = 99, .truncated = true };

                if (c->pass || c->enter_stop)
                        w.enter = trace_enter;
                fprintf(stderr, "walk case %zu\n", i);
                ASSERT_EQ(walk(&t, &w), c->ret);
                ASSERT_STREQ(t.visits, c->visits);
                ASSERT_EQ(t.n_errors, 0);
                if (c->ret != 0)
                        continue;
                ASSERT_EQ(w.entered, c->entered);
                ASSERT_EQ(w.dirs_listed, c->listed);
                ASSERT_EQ(w.truncated, c->truncated);
        }
}

/* enter() is asked before each child is opened, with the parent's path and the child's depth. */
static void test_walk_enter(void) {
        Trace t = { .root = "walk", .pass = "a10" };
        CgroupfsWalk w = { .max_depth = 64, .enter = trace_enter };

        ASSERT_OK(walk(&t, &w));
        ASSERT_STREQ(t.enters, "/ 1 B;/ 1 a10;/ 1 a9;/a9 2 x;/a9/x 3 deep;/a9 2 y;");
}

/* The root's offset is not used, its descriptor not closed; no visit, or a root that is no directory, is refused. */
static void test_walk_root(void) {
        Trace t = { .root = "walk" };
        CgroupfsWalk w = { .max_depth = 64, .visit = trace_visit, .userdata = &t };
        int fd = open_dir("walk");
        struct stat st;

        ASSERT_OK(cgroupfs_list(fd, dents_buf, sizeof(dents_buf), NULL, list_one, &(Listing) { .dfd = fd }));
        ASSERT_OK(cgroupfs_walk(fd, &w));
        ASSERT_STREQ(t.visits, FULL_WALK);
        ASSERT_OK(fstat(fd, &st));

        w.visit = NULL;
        ASSERT_ERR(cgroupfs_walk(fd, &w), EINVAL);
        close(fd);

        t.visits[0] = 0;
        w.visit = trace_visit;
        ASSERT_ERR(cgroupfs_walk(file_fd, &w), ENOTDIR);
        ASSERT_ERR(cgroupfs_walk(-EBADF, &w), EBADF);
        ASSERT_STREQ(t.visits, "");
}

/*
 * A chain of 70 directories: a walk goes 64 levels down at most. And paths
 * at the longest: 3 levels of NAME_MAX-byte names fill the walk's path.
 */
static void test_walk_deep(void) {
        char name[NAME_MAX + 1];
        Trace t = { .root = "deep" };
        CgroupfsWalk w = { .max_depth = CGROUPFS_WALK_DEPTH_MAX };

        ASSERT_EQ(CGROUPFS_WALK_DEPTH_MAX, 64);
        make_dir("deep");
        make_chain("deep", "d", 70);
        ASSERT_OK(walk(&t, &w));
        ASSERT_EQ(t.n_visits, 65);
        ASSERT_EQ(t.deepest, 64);
        ASSERT_EQ(strlen(t.last), 2 * 64);
        ASSERT_TRUE(strspn(t.last, "/d") == 2 * 64 && strstr(t.last, "dd") == NULL);
        ASSERT_EQ(w.entered, 64);
        ASSERT_EQ(w.dirs_listed, 64);
        ASSERT_EQ(w.truncated, false);

        memset(name, 'n', NAME_MAX);
        name[NAME_MAX] = 0;
        make_dir("long");
        make_chain("long", name, 4);
        t = (Trace) { .root = "long" };
        w = (CgroupfsWalk) { .max_depth = 3 };
        ASSERT_OK(walk(&t, &w));
        ASSERT_EQ(t.n_visits, 4);
        ASSERT_EQ(strlen(t.last), 3 * (NAME_MAX + 1));
}

/*
 * error(): a child that cannot be opened (enter() makes it a regular file
 * between the listing and the open: ENOTDIR, as root too) and a listing
 * that fails. A child removed before it is opened is no error. The walk
 * goes on after each.
 */
static void test_walk_errors(void) {
        static const struct {
                const char *to_file, *vanish, *unlistable;
                const char *visits, *parent, *name;
                int error;
        } cases[] = {
                { .to_file = "b", .visits = "/ 0;/a 1;/c 1;", .parent = "/", .name = "b", .error = -ENOTDIR },
                { .vanish = "b", .visits = "/ 0;/a 1;/c 1;" },
                { .unlistable = "/b", .visits = "/ 0;/a 1;/b 1;/c 1;", .parent = "/b", .name = ".", .error = -ENOTDIR },
                { .unlistable = "/", .visits = "/ 0;", .parent = "/", .name = ".", .error = -ENOTDIR },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Trace t = { .root = "errors", .to_file = cases[i].to_file, .vanish = cases[i].vanish,
                            .unlistable = cases[i].unlistable };
                CgroupfsWalk w = { .max_depth = 64, .enter = trace_enter };

                make_dir("errors");
                make_dir("errors/a");
                make_dir("errors/b");
                make_dir("errors/b/child");
                make_dir("errors/c");
                if (cases[i].to_file || cases[i].vanish)
                        ASSERT_OK(unlinkat(base_fd, "errors/b/child", AT_REMOVEDIR));
                fprintf(stderr, "error case %zu\n", i);
                ASSERT_OK(walk(&t, &w));
                ASSERT_STREQ(t.visits, cases[i].visits);
                ASSERT_EQ(t.n_errors, cases[i].parent ? 1 : 0);
                if (cases[i].parent) {
                        ASSERT_STREQ(t.error_parent, cases[i].parent);
                        ASSERT_STREQ(t.error_name, cases[i].name);
                        ASSERT_EQ(t.error, cases[i].error);
                }
                ASSERT_OK(test_rm_tree("errors"));
        }
}

/* Every allocation of a walk failing in turn: -ENOMEM each time. */
static void test_walk_out_of_memory(void) {
        for (unsigned n = 1;; n++) {
                Trace t = { .root = "walk" };
                CgroupfsWalk w = { .max_depth = 64 };
                bool injected;
                int r;

                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, n);
                r = walk(&t, &w);
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        ASSERT_STREQ(t.visits, FULL_WALK);
                        ASSERT_TRUE(n > 2);
                        break;
                }
                ASSERT_ERR(r, ENOMEM);
        }
}

int main(void) {
        ASSERT_TRUE(mkdtemp(base));
        base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(base_fd >= 0);
        ASSERT_OK(chdir(base));
        test_write_file_at(base, "file", "not a directory\n");
        file_fd = openat(base_fd, "file", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(file_fd >= 0);

        test_read_small();
        test_read_kept_fd();
        test_list_dirs_only();
        test_list_many();
        test_list_errors();
        make_walk_tree();
        test_walk_cases();
        test_walk_enter();
        test_walk_root();
        test_walk_deep();
        test_walk_errors();
        test_walk_out_of_memory();

        close(file_fd);
        close(base_fd);
        ASSERT_OK(chdir("/"));
        ASSERT_OK(test_rm_tree(base));
        return 0;
}
