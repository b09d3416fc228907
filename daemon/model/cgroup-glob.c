/* SPDX-License-Identifier: MIT */
/* [Metrics] Cgroups= patterns and the pruned, sorted walk that reads the matching cgroups. */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "cgroup-glob.h"
#include "cgroupfs.h"
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

/* A byte's place in the walk's order: the end of a path first, then "/", then the others. */
static int path_rank(char c) {
        return c == 0 ? 0 : c == '/' ? 1 : 2 + (unsigned char) c;
}

/* The order of the walk (depth first, siblings by strcmp()) as a comparison of two paths. */
static int path_cmp(const char *a, const char *b) {
        for (; *a && *a == *b; a++, b++)
                ;
        return path_rank(*a) - path_rank(*b);
}

typedef struct Walk {
        const CgroupGlobs *globs;
        CgroupScrape *out;
        size_t max, allocated;
        bool v1;                                        /* the cgroup v1 memory hierarchy */
        int other_fd;                                   /* the other hierarchy's root, or -1 (see below) */
        /* A walk of v1 after cgroup2's: its samples, weighed in walk order with ours (n_before of them so far). */
        CgroupScrape *before;
        size_t n_before;
        const CgroupWeigh *weigh;                       /* NULL: no budget */
        size_t weight;                                  /* of the samples kept */
        bool full;                                      /* a sample went over the budget: no more are read */
        const char *path;                               /* the cgroup being read */
        GlobSet alive[CGROUP_GLOB_DEPTH_MAX + 1];       /* per depth: the patterns still able to match */
        bool match[CGROUP_GLOB_DEPTH_MAX + 1];          /* per depth: the entered cgroup matches */
        bool deeper[CGROUP_GLOB_DEPTH_MAX + 1];         /* per depth: a pattern may match below it */
} Walk;

/* Count an error of @file in the cgroup @path; only the first is kept in words. */
static void scrape_error(Walk *w, const char *path, const char *file, int error) {
        CgroupScrapeErrors *e = &w->out->errors;

        if (e->count++ > 0)
                return;
        e->first_error = error;
        snprintf(e->first_path, sizeof(e->first_path), "%.180s%s%.60s", path, streq(path, "/") ? "" : "/", file);
}

/*
 * Read and parse one file of the cgroup at @dfd. Returns 1 if @parse
 * filled its output, 0 if the file is absent or refused, -ENODEV if the
 * cgroup is gone.
 */
static int read_one(Walk *w, int dfd, const char *file, int (*parse)(const char *, void *), void *ret) {
        char buf[KERNFILE_READ_MAX];
        ssize_t n = read_small_at(dfd, file, buf, sizeof(buf));
        int r;

        if (n == -ENOENT || n == -EOPNOTSUPP)
                return 0;
        if (n == -ENODEV)
                return -ENODEV;
        if (n < 0) {
                scrape_error(w, w->path, file, (int) n);
                return 0;
        }
        r = parse(buf, ret);
        if (r < 0) {
                scrape_error(w, w->path, file, r);
                return 0;
        }
        return 1;
}

static int parse_psi(const char *text, void *ret) {
        return psi_stats_parse(text, ret);
}

static int parse_events(const char *text, void *ret) {
        return memory_events_parse(text, ret);
}

static int parse_current(const char *text, void *ret) {
        int r = parse_memory_value(text, ret);

        if (r >= 0 && *(uint64_t *) ret == UINT64_MAX)
                return -EBADMSG;
        return r;
}

/* Fill @s from the files of the cgroup v1 memory cgroup at @dfd. Returns 0, -ENODEV if it vanished, or -ENOMEM. */
static int sample_read_v1(Walk *w, int dfd, CgroupSample *s) {
        int r = read_one(w, dfd, "memory.usage_in_bytes", parse_current, &s->memory_current);

        if (r < 0)
                return r;
        s->has_memory_current = r > 0;
        r = v1_oom_kills_subtree(dfd, &s->oom_kills);
        if (r < 0)
                return r;
        s->has_oom_kills = r > 0;
        s->memory_v1 = s->has_memory_current;
        return 0;
}

/* Give @to what only v1 has of the same cgroup: its memory figures where cgroup2 has none. */
static void sample_merge(CgroupSample *to, const CgroupSample *v1) {
        if (!to->has_memory_current && v1->has_memory_current) {
                to->memory_current = v1->memory_current;
                to->has_memory_current = to->memory_v1 = true;
        }
        if (!to->has_oom_kills && v1->has_oom_kills) {
                to->oom_kills = v1->oom_kills;
                to->has_oom_kills = true;
        }
}

/* In a cgroup2 walk: what the v1 memory hierarchy knows of the same cgroup, where cgroup2 knows nothing. */
static int sample_read_other(Walk *w, CgroupSample *s) {
        _cleanup_close_ int dfd = -1;
        CgroupSample v1 = {};
        int r;

        if (w->other_fd < 0 || (s->has_memory_current && s->has_oom_kills))
                return 0;
        dfd = openat(w->other_fd, w->path[1] ? w->path + 1 : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                return 0; /* not in v1 */
        r = sample_read_v1(w, dfd, &v1);
        if (r >= 0)
                sample_merge(s, &v1);
        return r == -ENOMEM ? r : 0;
}

/* Fill @s from the files of the cgroup at @dfd. Returns 0, or -ENODEV if it vanished. */
static int sample_read(Walk *w, int dfd, CgroupSample *s) {
        static const char *const psi_files[_CGROUP_RESOURCE_MAX] = {
                [CGROUP_RESOURCE_MEMORY] = "memory.pressure",
                [CGROUP_RESOURCE_IO] = "io.pressure",
                [CGROUP_RESOURCE_CPU] = "cpu.pressure",
        };
        int r;

        if (w->v1)
                return sample_read_v1(w, dfd, s);
        for (size_t i = 0; i < _CGROUP_RESOURCE_MAX; i++) {
                r = read_one(w, dfd, psi_files[i], parse_psi, &s->psi[i]);
                if (r < 0)
                        return r;
                s->has_psi[i] = r > 0;
        }
        r = read_one(w, dfd, "memory.events", parse_events, &s->events);
        if (r < 0)
                return r;
        s->has_events = r > 0;
        s->has_oom_kills = s->has_events && (s->events.present & (1u << MEMORY_EVENT_OOM_KILL));
        s->oom_kills = s->events.value[MEMORY_EVENT_OOM_KILL];
        if (s->has_events && !s->has_oom_kills)
                scrape_error(w, w->path, "memory.events", -EBADMSG);
        r = read_one(w, dfd, "memory.current", parse_current, &s->memory_current);
        if (r < 0)
                return r;
        s->has_memory_current = r > 0;
        return sample_read_other(w, s);
}

/* Whether no more cgroups are read: @max of them kept, or the budget full. */
static bool walk_full(const Walk *w) {
        return w->out->n_samples >= w->max || w->full;
}

/* Whether the sample @s fits in the budget; if so it is counted in. */
static bool walk_weigh(Walk *w, const CgroupSample *s) {
        size_t n;

        if (!w->weigh)
                return true;
        n = w->weigh->weight(s, w->weigh->userdata);
        if (n > w->weigh->budget - w->weight) {
                w->full = true;
                return false;
        }
        w->weight += n;
        return true;
}

/*
 * In a v1 walk after cgroup2's: the cgroup2 samples before @path (NULL:
 * all) are weighed in, in walk order; the first that no longer fits and
 * every one after it are dropped, as if cgroup2's walk had stopped there.
 */
static void walk_weigh_before(Walk *w, const char *path) {
        CgroupScrape *b = w->before;

        for (; b && w->n_before < b->n_samples && (!path || path_cmp(b->samples[w->n_before].path, path) < 0);
             w->n_before++)
                if (!walk_weigh(w, &b->samples[w->n_before]))
                        break;
        for (; b && w->full && b->n_samples > w->n_before; b->omitted++)
                free(b->samples[--b->n_samples].path);
}

/*
 * In a v1 walk after cgroup2's: whether the cgroup @path is cgroup2's too,
 * and so read there (or counted there as left out).
 */
static bool walk_other_has(const Walk *w, const char *path) {
        struct stat st;

        return w->v1 && w->other_fd >= 0 &&
               fstatat(w->other_fd, path[1] ? path + 1 : ".", &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
}

/* A match left out: counted, and the first one's path kept (for a v1 walk after this one). Returns 0 or -ENOMEM. */
static int walk_omit(Walk *w, const char *path) {
        if (walk_other_has(w, path))
                return 0;
        w->out->omitted++;
        if (w->out->cut || w->v1)
                return 0;
        w->out->cut = strdup(path);
        return w->out->cut ? 0 : -ENOMEM;
}

/* A matching cgroup: read it while there is room, else count it. Returns 0 or -ENOMEM. */
static int walk_visit(Walk *w, int dfd, const char *path) {
        CgroupScrape *o = w->out;
        CgroupSample s = {};
        int r;

        if (walk_other_has(w, path))
                return 0;
        /* After cgroup2's first match left out, v1's are too: the cgroups kept are a prefix of the walk order. */
        if (w->before && w->before->cut && path_cmp(path, w->before->cut) > 0)
                w->full = true;
        if (walk_full(w))
                return walk_omit(w, path);
        w->path = path;
        r = sample_read(w, dfd, &s);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0; /* removed while we read it */
        if (!s.has_psi[CGROUP_RESOURCE_MEMORY] && !s.has_psi[CGROUP_RESOURCE_IO] &&
            !s.has_psi[CGROUP_RESOURCE_CPU] && !s.has_events && !s.has_oom_kills && !s.has_memory_current)
                return 0; /* nothing to report: removed before its files were opened */
        s.path = (char *) path; /* for the weight only */
        walk_weigh_before(w, path);
        if (w->full || !walk_weigh(w, &s))
                return walk_omit(w, path);
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
        s.path = strdup(path);
        if (!s.path)
                return -ENOMEM;
        o->samples[o->n_samples++] = s;
        return 0;
}

/* Before a subdirectory is opened: whether a pattern can match it or below it; past the cut, count it. */
static int walk_enter(const char *parent, unsigned depth, const char *name, void *userdata) {
        Walk *w = userdata;
        GlobSet next = globs_step(w->globs, w->alive[depth - 1], depth - 1, name);

        if (!next)
                return 0;
        w->alive[depth] = next;
        w->match[depth] = globs_any_depth(w->globs, next, depth, false);
        w->deeper[depth] = globs_any_depth(w->globs, next, depth, true);
        if (w->match[depth] && !w->deeper[depth] && walk_full(w)) {
                /* Beyond the cut: counted without opening it. */
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s/%s", streq(parent, "/") ? "" : parent, name) < 0)
                        return -ENOMEM;
                return walk_omit(w, path);
        }
        return 1;
}

/* A cgroup entered: read it if it matches; list it only if a pattern may match below. */
static int walk_cgroup(int dfd, const char *path, unsigned depth, void *userdata) {
        Walk *w = userdata;
        int r = 0;

        if (w->match[depth])
                r = walk_visit(w, dfd, path);
        if (r < 0)
                return r;
        return w->deeper[depth] ? 0 : CGROUPFS_WALK_PRUNE;
}

static void walk_error(const char *parent, const char *name, int error, void *userdata) {
        scrape_error(userdata, parent, name, error);
}

/*
 * One hierarchy's walk: cgroup2's (@before NULL), whose samples take what
 * the v1 hierarchy at @other_fd (or -1) knows where cgroup2 knows
 * nothing; or v1's after it (@before cgroup2's scrape, weighed in walk
 * order with it), which reads only the cgroups cgroup2 at @other_fd (or
 * -1) does not have.
 */
static int scrape_tree(int root_fd, int other_fd, CgroupScrape *before, const CgroupGlobs *g, size_t max,
                       const CgroupWeigh *weigh, CgroupScrape *ret) {
        _cleanup_free_ Walk *w = NULL;
        CgroupfsWalk walk;
        int r;

        *ret = (CgroupScrape) {};
        if (cgroup_globs_count(g) == 0)
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (Walk) { .globs = g, .out = ret, .max = max, .v1 = before != NULL, .other_fd = other_fd, .before = before,
                      .weigh = weigh };
        w->alive[0] = globs_all(g);
        w->match[0] = globs_any_depth(g, w->alive[0], 0, false);
        w->deeper[0] = globs_any_depth(g, w->alive[0], 0, true);
        walk = (CgroupfsWalk) {
                .max_depth = CGROUP_GLOB_DEPTH_MAX,
                .enter = walk_enter,
                .visit = walk_cgroup,
                .error = walk_error,
                .userdata = w,
        };
        r = cgroupfs_walk(root_fd, &walk);
        ret->dirs_listed = walk.dirs_listed;
        /* What is left of cgroup2's after v1's last cgroup. */
        walk_weigh_before(w, NULL);
        return r;
}

int cgroup_scrape(int root_fd, const CgroupGlobs *g, size_t max, CgroupScrape *ret) {
        return scrape_tree(root_fd, -1, NULL, g, max, NULL, ret);
}

/* Merge the samples of @v1 (cgroups cgroup2 does not have) into @s in walk order, keeping the first @max; @v1 is emptied. */
static int scrape_merge(CgroupScrape *s, CgroupScrape *v1, size_t max) {
        size_t i = 0, j = 0, n = 0;
        CgroupSample *all = calloc(s->n_samples + v1->n_samples + 1, sizeof(*all));

        if (!all)
                return -ENOMEM;
        while (i < s->n_samples || j < v1->n_samples)
                all[n++] = j == v1->n_samples ||
                           (i < s->n_samples && path_cmp(s->samples[i].path, v1->samples[j].path) < 0) ?
                           s->samples[i++] : v1->samples[j++];
        for (; n > max; n--, s->omitted++)
                free(all[n - 1].path);
        free(s->samples);
        s->samples = all;
        s->n_samples = n;
        s->omitted += v1->omitted;
        s->dirs_listed += v1->dirs_listed;
        if (s->errors.count == 0)
                s->errors = v1->errors;
        else
                s->errors.count += v1->errors.count;
        free(v1->samples);
        v1->samples = NULL;
        v1->n_samples = 0;
        return 0;
}

int cgroup_scrape_hybrid(int root_fd, int v1_root_fd, const CgroupGlobs *g, size_t max, const CgroupWeigh *weigh,
                         CgroupScrape *ret) {
        CgroupScrape v1 = {};
        int r = 0, k;

        *ret = (CgroupScrape) {};
        if (root_fd >= 0)
                r = scrape_tree(root_fd, v1_root_fd, NULL, g, max, weigh, ret);
        if (v1_root_fd < 0 || r == -ENOMEM)
                return r;
        k = scrape_tree(v1_root_fd, root_fd, ret, g, max, weigh, &v1);
        if (k != -ENOMEM)
                k = scrape_merge(ret, &v1, max);
        cgroup_scrape_done(&v1);
        return r < 0 ? r : k;
}

void cgroup_scrape_done(CgroupScrape *s) {
        for (size_t i = 0; i < s->n_samples; i++)
                free(s->samples[i].path);
        free(s->samples);
        free(s->cut);
        *s = (CgroupScrape) {};
}
