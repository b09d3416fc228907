/* SPDX-License-Identifier: MIT */
/*
 * Headroom: the nearest memory limit of a cgroup and the room left below
 * it, read from cgroupfs and /proc/meminfo; the margins of the levels and
 * the reclaim target. headroom.h has the rules.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroupfs.h"
#include "headroom.h"
#include "util.h"

/* The nearest limit found so far: the one with the least room. */
typedef struct HeadroomLimit {
        bool has_limit;
        uint64_t limit, room;
        char *cgroup;
} HeadroomLimit;

/*
 * The number in the small file @name below @dfd: decimal, or "max"
 * (UINT64_MAX). Returns 0, -EBADMSG if it is no number, or the errno of
 * reading.
 */
static int read_number(int dfd, const char *name, uint64_t *ret) {
        char buf[64];
        ssize_t n = read_small_at(dfd, name, buf, sizeof(buf));

        if (n == -EFBIG)
                return -EBADMSG;
        if (n < 0)
                return (int) n;
        strip_trailing(buf);
        if (streq(buf, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        return safe_atou64(buf, ret) < 0 ? -EBADMSG : 0;
}

/* The value in bytes of the "KEY: N kB" line of @text. */
static int meminfo_field(const char *text, const char *key, uint64_t *ret) {
        size_t len = strlen(key);
        char num[32];
        uint64_t kib;

        for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                const char *p = l + len, *end;

                if (strncmp(l, key, len) != 0 || *p != ':')
                        continue;
                p += strspn(p + 1, " ") + 1;
                end = p + strspn(p, "0123456789");
                if (end == p || (size_t) (end - p) >= sizeof(num) || strncmp(end, " kB\n", 4) != 0)
                        return -EBADMSG;
                memcpy(num, p, (size_t) (end - p));
                num[end - p] = 0;
                if (safe_atou64(num, &kib) < 0 || kib > UINT64_MAX / 1024)
                        return -EBADMSG;
                *ret = kib * 1024;
                return 0;
        }
        return -EBADMSG;
}

/*
 * MemTotal and MemAvailable of @files, in bytes: one pread() of the open
 * file when there is one (/proc/meminfo makes its whole text for one
 * read), else the path opened and read. Returns 0, -EBADMSG or the errno
 * of reading.
 */
static int read_meminfo(const HeadroomFiles *files, uint64_t *ret_total, uint64_t *ret_available) {
        char buf[16384];
        ssize_t n;
        int k;

        if (files->meminfo_fd && *files->meminfo_fd >= 0) {
                n = pread(*files->meminfo_fd, buf, sizeof(buf), 0);
                if (n < 0)
                        n = -errno;
                else if ((size_t) n == sizeof(buf))
                        n = -EFBIG;
                else
                        buf[n] = 0;
        } else
                n = read_small_at(AT_FDCWD, files->meminfo, buf, sizeof(buf));
        if (n == -EFBIG)
                return -EBADMSG;
        if (n < 0)
                return (int) n;
        k = meminfo_field(buf, "MemTotal", ret_total);
        if (k >= 0)
                k = meminfo_field(buf, "MemAvailable", ret_available);
        return k;
}

/* Whether the cgroup2 root @dfd lists "memory" among its cgroup.controllers. */
static bool root_has_memory(int dfd) {
        char buf[1024];

        if (read_small_at(dfd, "cgroup.controllers", buf, sizeof(buf)) < 0)
                return false;
        for (char *save = NULL, *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                if (streq(w, "memory"))
                        return true;
        return false;
}

/*
 * Whether @real exists in @h (0), and has the memory controller there
 * (1). Returns 0, 1, or the negative errno of opening it.
 */
static int probe(const Hierarchy *h, const char *real, bool v1) {
        _cleanup_close_ int fd = -1;

        if (!h || h->fd < 0 || !real)
                return -ENOENT;
        fd = hierarchy_open_cgroup(h, real);
        if (fd < 0)
                return fd;
        if (faccessat(fd, v1 ? "memory.usage_in_bytes" : "memory.current", F_OK, 0) == 0)
                return 1;
        return !v1 && streq(real, "/") && root_has_memory(fd);
}

/* Which hierarchy serves @real_v2 / @real_v1: sets @ret_v1. */
static int pick_hierarchy(const HeadroomFiles *files, const char *real_v2, const char *real_v1, bool *ret_v1,
                          SourceFailure *f) {
        int k2 = probe(files->v2, real_v2, false), k1;

        if (k2 == -ENOMEM)
                return k2;
        if (k2 > 0) {
                *ret_v1 = false;
                return 0;
        }
        k1 = probe(files->v1, real_v1, true);
        if (k1 == -ENOMEM)
                return k1;
        if (k1 > 0) {
                *ret_v1 = true;
                return 0;
        }
        if (k2 == -ELOOP || k2 == -EXDEV || k2 == -ENOTDIR)
                return source_failure_invalid_cgroup_path(f, k2);
        if (k2 == 0 || k1 == 0)
                return source_failure_unavailable(f, -EOPNOTSUPP, "headroom",
                                                  "the cgroup has no memory controller in any hierarchy");
        if (k2 == -ENOENT && (k1 == -ENOENT || k1 == -ELOOP || k1 == -EXDEV || k1 == -ENOTDIR))
                return k1 == -ENOENT ? source_failure_no_such_cgroup(f, -ENOENT)
                                     : source_failure_invalid_cgroup_path(f, k1);
        return source_failure_open(f, k2 != -ENOENT ? k2 : k1, "headroom", NULL);
}

static const char *usage_file(bool v1) {
        return v1 ? "memory.usage_in_bytes" : "memory.current";
}

/* The limit of the cgroup @dfd: UINT64_MAX when there is none. */
static int read_limit(int dfd, bool v1, uint64_t *ret) {
        uint64_t max, high;
        int k;

        k = read_number(dfd, v1 ? "memory.limit_in_bytes" : "memory.max", &max);
        if (k < 0)
                return k;
        if (v1) {
                *ret = max >= HEADROOM_V1_UNLIMITED ? UINT64_MAX : max;
                return 0;
        }
        k = read_number(dfd, "memory.high", &high);
        *ret = max < high ? max : high;
        return k;
}

/* Keep the limit @limit of @path (usage @usage) in @l if its room is the least so far. */
static int consider(HeadroomLimit *l, const char *path, uint64_t usage, uint64_t limit) {
        uint64_t room = limit > usage ? limit - usage : 0;
        char *copy;

        if (limit == UINT64_MAX || (l->has_limit && room >= l->room))
                return 0;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        free(l->cgroup);
        *l = (HeadroomLimit) { .has_limit = true, .limit = limit, .room = room, .cgroup = copy };
        return 0;
}

/*
 * One level @p of the walk: its usage (the cgroup's own in @ret_usage when
 * @own) and its limit into @l. Returns 1 if read, 0 if it could not be
 * (nothing known), or a negative errno for the cgroup's own usage.
 */
static int walk_level(const Hierarchy *h, bool v1, const char *p, bool own, uint64_t *ret_usage,
                      HeadroomLimit *l, SourceFailure *f) {
        _cleanup_close_ int fd = hierarchy_open_cgroup(h, p);
        uint64_t usage, limit;
        int k;

        if (fd == -ENOMEM)
                return fd;
        if (fd < 0)
                return own ? source_failure_open(f, fd, "headroom", NULL) : 0;
        k = read_number(fd, usage_file(v1), &usage);
        if (k < 0)
                return own ? source_failure_unavailable(f, -EBADMSG, "headroom",
                                                        "the cgroup's memory usage cannot be read") : 0;
        if (own)
                *ret_usage = usage;
        if (read_limit(fd, v1, &limit) < 0)
                return 0;
        k = consider(l, p, usage, limit);
        return k < 0 ? k : 1;
}

/*
 * Walk from @real up to @stop (included; NULL: the root) in @h: the
 * cgroup's own usage in @ret_usage, the nearest limit in @l. The root has
 * no limit. Returns 1 if every level was read, 0 if one could not be, or
 * a negative errno for the cgroup's own usage.
 */
static int walk_up(const Hierarchy *h, bool v1, const char *real, const char *stop, uint64_t *ret_usage,
                   HeadroomLimit *l, SourceFailure *f) {
        _cleanup_free_ char *p = strdup(real);

        if (!p)
                return -ENOMEM;
        for (bool own = true; !streq(p, "/"); own = false) {
                char *slash;
                int k = walk_level(h, v1, p, own, ret_usage, l, f);

                if (k <= 0)
                        return k;
                if (stop && streq(p, stop))
                        break;
                slash = strrchr(p, '/');
                slash[slash == p] = 0;
        }
        return 1;
}

/* Bound the limit's room @l by the machine's @available (of @total) into @h. */
static void bound_by_machine(Headroom *h, const HeadroomLimit *l, bool machine, uint64_t total, uint64_t available) {
        h->known = l->has_limit || machine;
        if (!h->known)
                return;
        if (l->has_limit && (!machine || l->room <= available)) {
                h->headroom_bytes = l->room;
                h->margin_base_bytes = l->limit;
        } else {
                h->headroom_bytes = available;
                h->margin_base_bytes = total;
        }
}

/* The headroom of the cgroup in the hierarchy @v1 says, which serves it: its path and stop there. */
static int read_in(const HeadroomFiles *files, bool v1, const char *real_v1, const char *real_v2,
                   const char *stop_v1, const char *stop_v2, Headroom *ret, SourceFailure *f) {
        const char *real = v1 ? real_v1 : real_v2, *stop = v1 ? stop_v1 : stop_v2;
        HeadroomLimit l = {};
        uint64_t total = 0, available = 0;
        bool machine;
        int k;

        *ret = (Headroom) {};
        machine = read_meminfo(files, &total, &available) >= 0;
        if (streq(real, "/") && !machine)
                return source_failure_unavailable(f, -EBADMSG, "headroom", "/proc/meminfo cannot be read");
        if (streq(real, "/"))
                ret->usage_bytes = total > available ? total - available : 0;
        k = walk_up(v1 ? files->v1 : files->v2, v1, real, stop, &ret->usage_bytes, &l, f);
        if (k < 0) {
                free(l.cgroup);
                return k;
        }
        ret->v1 = v1;
        if (k > 0) {
                bound_by_machine(ret, &l, machine, total, available);
                ret->has_limit = l.has_limit;
                ret->limit_bytes = l.limit;
                ret->limiting_cgroup = TAKE_PTR(l.cgroup);
        }
        free(l.cgroup);
        return 0;
}

int headroom_read_hinted(const HeadroomFiles *files, const char *real_v2, const char *real_v1, const char *stop_v2,
                         const char *stop_v1, HeadroomHint *hint, Headroom *ret, SourceFailure *f) {
        bool v1 = hint && *hint == HEADROOM_HINT_V1;
        int k;

        if (hint && *hint != HEADROOM_HINT_NONE) {
                if ((v1 ? real_v1 : real_v2) && (v1 ? files->v1 : files->v2)) {
                        k = read_in(files, v1, real_v1, real_v2, stop_v1, stop_v2, ret, f);
                        if (k >= 0 || k == -ENOMEM)
                                return k;
                }
                /* Gone from there, or moved: probe as for a first read. */
                *hint = HEADROOM_HINT_NONE;
        }
        *ret = (Headroom) {};
        k = pick_hierarchy(files, real_v2, real_v1, &v1, f);
        if (k >= 0)
                k = read_in(files, v1, real_v1, real_v2, stop_v1, stop_v2, ret, f);
        if (k >= 0 && hint)
                *hint = v1 ? HEADROOM_HINT_V1 : HEADROOM_HINT_V2;
        return k;
}

int headroom_read(const HeadroomFiles *files, const char *real_v2, const char *real_v1, const char *stop_v2,
                  const char *stop_v1, Headroom *ret, SourceFailure *f) {
        return headroom_read_hinted(files, real_v2, real_v1, stop_v2, stop_v1, NULL, ret, f);
}

void headroom_done(Headroom *h) {
        free(h->limiting_cgroup);
        *h = (Headroom) {};
}

bool headroom_margin(const Config *config, int level, uint64_t base, uint64_t *ret) {
        const Margin *m;

        if (level < 0 || level >= _LEVEL_MAX)
                return false;
        m = &config->margins[level];
        if (!m->percent)
                *ret = m->value;
        else /* at most 100%: no more than @base */
                *ret = (uint64_t) ((unsigned __int128) base * m->value / 1000000);
        return true;
}

bool headroom_reclaim_target(const Headroom *h, const Config *config, int level, uint64_t *ret) {
        uint64_t margin;

        if (!h->known || level < 0 || level > _LEVEL_MAX)
                return false;
        if (level == 0) {
                *ret = 0;
                return true;
        }
        if (!headroom_margin(config, level - 1, h->margin_base_bytes, &margin))
                return false;
        *ret = margin > h->headroom_bytes ? margin - h->headroom_bytes : 0;
        return true;
}
