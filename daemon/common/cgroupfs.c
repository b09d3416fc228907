/* SPDX-License-Identifier: MIT */
/* Small kernel files, directory listings and the cgroup tree walk: see cgroupfs.h. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "cgroupfs.h"
#include "util.h"

/*
 * pread() @len bytes at @off, or read() them once *@stream is set: a file
 * that cannot be read at an offset (a FIFO: ESPIPE) is read from where it is.
 */
static ssize_t read_some(int fd, char *buf, size_t len, size_t off, bool *stream) {
        for (;;) {
                ssize_t k = *stream ? read(fd, buf, len) : pread(fd, buf, len, (off_t) off);

                if (k >= 0)
                        return k;
                if (errno == ESPIPE && !*stream && off == 0)
                        *stream = true;
                else if (errno != EINTR)
                        return -errno;
        }
}

ssize_t read_small_fd(int fd, char *buf, size_t size) {
        bool stream = false;
        size_t n = 0;
        ssize_t k;
        char extra;

        if (size < 2)
                return -EINVAL;
        while (n < size - 1) {
                size_t want = size - 1 - n;

                k = read_some(fd, buf + n, want, n, &stream);
                if (k < 0)
                        return k;
                n += (size_t) k;
                if ((size_t) k < want)
                        break;
        }
        buf[n] = 0;
        if (n < size - 1)
                return (ssize_t) n;
        /* Full: is there more? */
        k = read_some(fd, &extra, 1, n, &stream);
        if (k < 0)
                return k;
        return k > 0 ? -EFBIG : (ssize_t) n;
}

ssize_t read_small_at(int dfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return read_small_fd(fd, buf, size);
}

/* Whether the entry @de of @dfd is a directory (not a symlink to one). */
static bool entry_is_dir(int dfd, const struct dirent64 *de, CgroupfsListStats *stats) {
        struct stat st;

        if (de->d_type != DT_UNKNOWN)
                return de->d_type == DT_DIR;
        if (stats)
                stats->fstats++;
        return fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
}

int cgroupfs_list(int dfd, void *buf, size_t size, CgroupfsListStats *stats, CgroupfsEntryFn fn, void *userdata) {
        if (!buf || size < 1024 || ((uintptr_t) buf % __alignof__(struct dirent64)) != 0)
                return -EINVAL;
        for (;;) {
                ssize_t n;

                if (stats)
                        stats->getdents++;
                n = getdents64(dfd, buf, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == ENOENT ? 0 : -errno;
                }
                if (n == 0)
                        return 0;
                for (ssize_t off = 0; off < n;) {
                        const struct dirent64 *de = (const struct dirent64 *) ((char *) buf + off);
                        int r;

                        off += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, "..") || !entry_is_dir(dfd, de, stats))
                                continue;
                        r = fn(dfd, de->d_name, (uint64_t) de->d_ino, userdata);
                        if (r < 0)
                                return r;
                }
        }
}

/* ---- the walk ---- */

/* The names of one directory's subdirectories, in one allocation, sorted. */
typedef struct Names {
        char *buf;              /* the names, NUL-separated */
        size_t len, size;
        const char **v;         /* pointers into buf */
        size_t n;
} Names;

static void names_done(Names *n) {
        free(n->buf);
        free(n->v);
}

static int names_add(int dfd _unused_, const char *name, uint64_t ino _unused_, void *userdata) {
        Names *n = userdata;
        size_t l = strlen(name) + 1;

        if (n->len + l > n->size) {
                size_t want = n->size ? n->size * 2 : 4096;
                char *p;

                while (want < n->len + l)
                        want *= 2;
                p = realloc(n->buf, want);
                if (!p)
                        return -ENOMEM;
                n->buf = p;
                n->size = want;
        }
        memcpy(n->buf + n->len, name, l);
        n->len += l;
        n->n++;
        return 0;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int names_sort(Names *n) {
        const char *p;

        if (n->n == 0)
                return 0;
        n->v = calloc(n->n, sizeof(char *));
        if (!n->v)
                return -ENOMEM;
        p = n->buf;
        for (size_t i = 0; i < n->n; i++, p += strlen(p) + 1)
                n->v[i] = p;
        qsort(n->v, n->n, sizeof(char *), strcmp_ptr);
        return 0;
}

typedef struct Walker {
        CgroupfsWalk *w;
        char *path;             /* "/" or "/a/b"; room for max_depth names */
        char dents[8192] __attribute__((aligned(8)));
} Walker;

static int walk_dir(Walker *k, int dfd, size_t path_len, unsigned depth);

/* Enter the subdirectory @name of @dfd (whose path is k->path of @path_len bytes); its depth is @depth. */
static int walk_child(Walker *k, int dfd, size_t path_len, unsigned depth, const char *name) {
        CgroupfsWalk *w = k->w;
        const char *parent = path_len == 0 ? "/" : k->path;
        size_t len = strlen(name);
        int fd, r = 1;

        if (w->enter)
                r = w->enter(parent, depth, name, w->userdata);
        if (r <= 0)
                return r;
        if (w->max_count > 0 && w->entered >= w->max_count) {
                w->truncated = true;
                return 0;
        }
        w->entered++;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                if (errno != ENOENT && errno != ENODEV && w->error)
                        w->error(parent, name, -errno, w->userdata);
                return 0;
        }
        k->path[path_len] = '/';
        memcpy(k->path + path_len + 1, name, len + 1);
        r = w->visit(fd, k->path, depth, w->userdata);
        if (r == 0 && depth < w->max_depth)
                r = walk_dir(k, fd, path_len + 1 + len, depth);
        safe_close(fd);
        k->path[path_len] = 0;
        return r < 0 ? r : 0;
}

/* The subdirectories of @dfd, a cgroup at @depth whose path is k->path of @path_len bytes ("" for the root). */
static int walk_dir(Walker *k, int dfd, size_t path_len, unsigned depth) {
        CgroupfsWalk *w = k->w;
        Names names = {};
        int r;

        w->dirs_listed++;
        r = cgroupfs_list(dfd, k->dents, sizeof(k->dents), NULL, names_add, &names);
        if (r >= 0)
                r = names_sort(&names);
        if (r < 0 && r != -ENOMEM) {
                if (r != -ENODEV && w->error)
                        w->error(path_len == 0 ? "/" : k->path, ".", r, w->userdata);
                r = 0;
        }
        for (size_t i = 0; r >= 0 && names.v && i < names.n; i++)
                r = walk_child(k, dfd, path_len, depth + 1, names.v[i]);
        names_done(&names);
        return r;
}

int cgroupfs_walk(int root_fd, CgroupfsWalk *w) {
        _cleanup_free_ Walker *k = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!w->visit || w->max_depth > CGROUPFS_WALK_DEPTH_MAX)
                return -EINVAL;
        w->dirs_listed = w->entered = 0;
        w->truncated = false;
        k = calloc(1, sizeof(*k));
        path = malloc((size_t) w->max_depth * (NAME_MAX + 1) + 2);
        if (!k || !path)
                return -ENOMEM;
        fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        k->w = w;
        k->path = path;
        strcpy(path, "/");
        r = w->visit(fd, path, 0, w->userdata);
        if (r != 0 || w->max_depth == 0)
                return r < 0 ? r : 0;
        path[0] = 0; /* children append "/name" */
        return walk_dir(k, fd, 0, 0);
}
