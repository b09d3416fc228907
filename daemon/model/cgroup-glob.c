/* SPDX-License-Identifier: MIT */
/* [Metrics] Cgroups= patterns and the pruned, sorted walk that reads the matching cgroups. */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "cgroup-glob.h"
#include "util.h"

typedef struct CgroupGlob {
        char *text;                                  /* components, each NUL-terminated */
        const char *component[CGROUP_GLOB_DEPTH_MAX];
        unsigned depth;                              /* number of components; 0 for "/" */
} CgroupGlob;

struct CgroupGlobs {
        CgroupGlob glob[CGROUP_GLOBS_MAX];
        size_t n;
};

/* A bit per pattern: the ones still able to match below a directory. */
typedef uint64_t GlobSet;

CgroupGlobs *cgroup_globs_free(CgroupGlobs *g) {
        if (!g)
                return NULL;
        for (size_t i = 0; i < g->n; i++)
                free(g->glob[i].text);
        free(g);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(CgroupGlobs *, cgroup_globs_free);

size_t cgroup_globs_count(const CgroupGlobs *g) {
        return g ? g->n : 0;
}

/* Split the pattern @s of length @len into @glob; a static reason on -EINVAL. */
static int glob_parse_one(const char *s, size_t len, CgroupGlob *glob, const char **reason) {
        char *p;

        if (s[0] != '/') {
                *reason = "a pattern must start with /";
                return -EINVAL;
        }
        glob->text = strndup(s, len);
        if (!glob->text)
                return -ENOMEM;
        glob->depth = 0;
        p = glob->text;
        for (;;) {
                size_t n;

                while (*p == '/')
                        *p++ = 0;
                if (*p == 0)
                        return 0;
                n = strcspn(p, "/");
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
                        *reason = "a pattern must not contain . or .. components";
                        return -EINVAL;
                }
                if (n > CGROUP_GLOB_COMPONENT_MAX) {
                        *reason = "a pattern component is longer than 255 bytes";
                        return -EINVAL;
                }
                if (glob->depth == CGROUP_GLOB_DEPTH_MAX) {
                        *reason = "a pattern has more than 32 components";
                        return -EINVAL;
                }
                glob->component[glob->depth++] = p;
                p += n;
        }
}

int cgroup_globs_parse(const char *text, CgroupGlobs **ret, const char **ret_reason) {
        _cleanup_(cgroup_globs_freep) CgroupGlobs *g = calloc(1, sizeof(*g));
        const char *reason = NULL, *p = text ?: "";
        size_t len;
        int r;

        if (!g)
                return -ENOMEM;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c < 0x20 && *c != ' ' && *c != '\t') {
                        reason = "a pattern must not contain control characters";
                        goto invalid;
                }
        for (const char *w; (w = next_word(&p, &len));) {
                if (g->n == CGROUP_GLOBS_MAX) {
                        reason = "at most 64 patterns are allowed";
                        goto invalid;
                }
                r = glob_parse_one(w, len, &g->glob[g->n], &reason);
                g->n++; /* so that its text is freed */
                if (r == -EINVAL)
                        goto invalid;
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(g);
        return 0;
invalid:
        if (ret_reason)
                *ret_reason = reason;
        return -EINVAL;
}

/* The patterns of @alive whose component @depth matches @name and that have more than @depth components. */
static GlobSet globs_step(const CgroupGlobs *g, GlobSet alive, unsigned depth, const char *name) {
        GlobSet next = 0;

        for (size_t i = 0; i < g->n; i++)
                if ((alive & (UINT64_C(1) << i)) && g->glob[i].depth > depth &&
                    fnmatch(g->glob[i].component[depth], name, 0) == 0)
                        next |= UINT64_C(1) << i;
        return next;
}

/* Whether a pattern of @set has exactly @depth components (matches) or more (may match below). */
static bool globs_any_depth(const CgroupGlobs *g, GlobSet set, unsigned depth, bool deeper) {
        for (size_t i = 0; i < g->n; i++)
                if ((set & (UINT64_C(1) << i)) && (deeper ? g->glob[i].depth > depth : g->glob[i].depth == depth))
                        return true;
        return false;
}

static GlobSet globs_all(const CgroupGlobs *g) {
        return g->n >= 64 ? UINT64_MAX : (UINT64_C(1) << g->n) - 1;
}

/* ---- the walk ---- */

typedef struct Walk {
        const CgroupGlobs *globs;
        CgroupScrape *out;
        size_t max, allocated;
        char path[CGROUP_GLOB_DEPTH_MAX * (CGROUP_GLOB_COMPONENT_MAX + 1) + 2];
} Walk;

static void scrape_error(Walk *w, const char *file, int error) {
        CgroupScrapeErrors *e = &w->out->errors;

        if (e->count++ > 0)
                return;
        e->first_error = error;
        snprintf(e->first_path, sizeof(e->first_path), "%.180s%s%.60s", w->path, streq(w->path, "/") ? "" : "/", file);
}

/*
 * Read @file beneath @dfd with one read() into @buf (NUL-terminated).
 * Returns the length, or a negative errno.
 */
static ssize_t read_small(int dfd, const char *file, char *buf, size_t size) {
        int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        else
                buf[n] = 0;
        safe_close(fd);
        return n;
}

/*
 * Read and parse one file of the cgroup at @dfd. Returns 1 if @parse
 * filled its output, 0 if the file is absent or refused, -ENODEV if the
 * cgroup is gone.
 */
static int read_one(Walk *w, int dfd, const char *file, int (*parse)(const char *, void *), void *ret) {
        char buf[KERNFILE_READ_MAX];
        ssize_t n = read_small(dfd, file, buf, sizeof(buf));
        int r;

        if (n == -ENOENT || n == -EOPNOTSUPP)
                return 0;
        if (n == -ENODEV)
                return -ENODEV;
        if (n < 0) {
                scrape_error(w, file, (int) n);
                return 0;
        }
        r = parse(buf, ret);
        if (r < 0) {
                scrape_error(w, file, r);
                return 0;
        }
        return 1;
}

static int parse_psi(const char *text, void *ret) {
        return psi_stats_parse(text, ret);
}

static int parse_oom_kills(const char *text, void *ret) {
        MemoryEvents e;
        int r = memory_events_parse(text, &e);

        if (r < 0)
                return r;
        if (!(e.present & (1u << MEMORY_EVENT_OOM_KILL)))
                return -EBADMSG;
        *(uint64_t *) ret = e.value[MEMORY_EVENT_OOM_KILL];
        return 0;
}

static int parse_current(const char *text, void *ret) {
        int r = parse_memory_value(text, ret);

        if (r >= 0 && *(uint64_t *) ret == UINT64_MAX)
                return -EBADMSG;
        return r;
}

/* Fill @s from the files of the cgroup at @dfd. Returns 0, or -ENODEV if it vanished. */
static int sample_read(Walk *w, int dfd, CgroupSample *s) {
        static const char *const psi_files[_CGROUP_RESOURCE_MAX] = {
                [CGROUP_RESOURCE_MEMORY] = "memory.pressure",
                [CGROUP_RESOURCE_IO] = "io.pressure",
                [CGROUP_RESOURCE_CPU] = "cpu.pressure",
        };
        int r;

        for (size_t i = 0; i < _CGROUP_RESOURCE_MAX; i++) {
                r = read_one(w, dfd, psi_files[i], parse_psi, &s->psi[i]);
                if (r < 0)
                        return r;
                s->has_psi[i] = r > 0;
        }
        r = read_one(w, dfd, "memory.events", parse_oom_kills, &s->oom_kills);
        if (r < 0)
                return r;
        s->has_oom_kills = r > 0;
        r = read_one(w, dfd, "memory.current", parse_current, &s->memory_current);
        if (r < 0)
                return r;
        s->has_memory_current = r > 0;
        return 0;
}

/* A matching cgroup: read it while there is room, else count it. Returns 0 or -ENOMEM. */
static int walk_visit(Walk *w, int dfd) {
        CgroupScrape *o = w->out;
        CgroupSample s = {};

        if (o->n_samples >= w->max) {
                o->omitted++;
                return 0;
        }
        if (sample_read(w, dfd, &s) < 0)
                return 0; /* removed while we read it */
        if (!s.has_psi[CGROUP_RESOURCE_MEMORY] && !s.has_psi[CGROUP_RESOURCE_IO] &&
            !s.has_psi[CGROUP_RESOURCE_CPU] && !s.has_oom_kills && !s.has_memory_current)
                return 0; /* nothing to report: removed before its files were opened */
        if (o->n_samples == w->allocated) {
                size_t want = w->allocated ? w->allocated * 2 : 64;
                CgroupSample *p;

                if (want > w->max)
                        want = w->max;
                p = realloc(o->samples, want * sizeof(*p)); /* want <= max: no overflow */
                if (!p)
                        return -ENOMEM;
                o->samples = p;
                w->allocated = want;
        }
        s.path = strdup(w->path);
        if (!s.path)
                return -ENOMEM;
        o->samples[o->n_samples++] = s;
        return 0;
}

/* The names of a directory's subdirectories, in one allocation. */
typedef struct Names {
        char *buf;              /* the names, NUL-separated */
        size_t len, size;
        const char **v;         /* pointers into buf, sorted */
        size_t n;
} Names;

static void names_done(Names *n) {
        free(n->buf);
        free(n->v);
}

static int names_add(Names *n, const char *name) {
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

static bool entry_is_dir(int dfd, const struct dirent64 *de) {
        struct stat st;

        if (de->d_type != DT_UNKNOWN)
                return de->d_type == DT_DIR;
        return fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
}

/* List the subdirectories of @dfd, sorted. Returns 0, -ENOMEM, or the errno of getdents64(). */
static int names_list(int dfd, Names *ret) {
        char buf[8192] __attribute__((aligned(8))); /* per level of the walk: keep the stack small */

        for (;;) {
                ssize_t n = getdents64(dfd, buf, sizeof(buf));

                if (n < 0)
                        return -errno;
                if (n == 0)
                        return names_sort(ret);
                for (ssize_t off = 0; off < n;) {
                        const struct dirent64 *de = (const struct dirent64 *) (buf + off);

                        off += de->d_reclen;
                        if (streq(de->d_name, ".") || streq(de->d_name, "..") || !entry_is_dir(dfd, de))
                                continue;
                        if (names_add(ret, de->d_name) < 0)
                                return -ENOMEM;
                }
        }
}

static int walk_dir(Walk *w, int dfd, size_t path_len, unsigned depth, GlobSet alive);

/* One subdirectory @name of the directory @dfd at @depth. Returns 0 or -ENOMEM. */
static int walk_child(Walk *w, int dfd, size_t path_len, unsigned depth, GlobSet alive, const char *name) {
        GlobSet next = globs_step(w->globs, alive, depth, name);
        size_t len = strlen(name);
        bool match, deeper;
        int fd, r = 0;

        if (!next)
                return 0;
        match = globs_any_depth(w->globs, next, depth + 1, false);
        deeper = globs_any_depth(w->globs, next, depth + 1, true);
        if (match && !deeper && w->out->n_samples >= w->max) {
                w->out->omitted++; /* beyond the cut: counted without opening it */
                return 0;
        }
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                if (errno != ENOENT && errno != ENODEV)
                        scrape_error(w, name, -errno);
                return 0;
        }
        w->path[path_len] = '/';
        memcpy(w->path + path_len + 1, name, len + 1);
        if (match)
                r = walk_visit(w, fd);
        if (r >= 0 && deeper)
                r = walk_dir(w, fd, path_len + 1 + len, depth + 1, next);
        safe_close(fd);
        w->path[path_len] = 0;
        return r;
}

/* The subdirectories of @dfd, whose path is w->path of @path_len bytes at @depth components. */
static int walk_dir(Walk *w, int dfd, size_t path_len, unsigned depth, GlobSet alive) {
        Names names = {};
        int r;

        w->out->dirs_listed++;
        r = names_list(dfd, &names);
        if (r < 0 && r != -ENOMEM) {
                if (r != -ENOENT && r != -ENODEV)
                        scrape_error(w, ".", r);
                r = 0;
        }
        for (size_t i = 0; r >= 0 && i < names.n && names.v; i++)
                r = walk_child(w, dfd, path_len, depth, alive, names.v[i]);
        names_done(&names);
        return r;
}

int cgroup_scrape(int root_fd, const CgroupGlobs *g, size_t max, CgroupScrape *ret) {
        _cleanup_free_ Walk *w = NULL;
        _cleanup_close_ int fd = -1;
        GlobSet all;
        int r = 0;

        *ret = (CgroupScrape) {};
        if (cgroup_globs_count(g) == 0)
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (Walk) { .globs = g, .out = ret, .max = max, .path = "/" };
        fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        all = globs_all(g);
        if (globs_any_depth(g, all, 0, false))
                r = walk_visit(w, fd);
        w->path[0] = 0; /* children append "/name" */
        if (r >= 0 && globs_any_depth(g, all, 0, true))
                r = walk_dir(w, fd, 0, 0, all);
        return r;
}

void cgroup_scrape_done(CgroupScrape *s) {
        for (size_t i = 0; i < s->n_samples; i++)
                free(s->samples[i].path);
        free(s->samples);
        *s = (CgroupScrape) {};
}
