/* SPDX-License-Identifier: MIT */
/* Cgroup path validation and confined opening of cgroup directories. */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cgroup.h"
#include "util.h"

int cgroup_path_normalize(const char *path, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t len, o = 0;
        const char *p;

        if (!path || !*path)
                path = "/";
        len = strlen(path);
        if (len > CGROUP_PATH_MAX || path[0] != '/')
                return -EINVAL;
        for (p = path; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return -EINVAL;

        out = malloc(len + 2);
        if (!out)
                return -ENOMEM;

        p = path;
        for (;;) {
                size_t n;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                n = strcspn(p, "/");
                if (n > 255)
                        return -EINVAL;
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                out[o++] = '/';
                memcpy(out + o, p, n);
                o += n;
                p += n;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

int hierarchy_open(Hierarchy *h, const char *path) {
        _cleanup_free_ char *copy = NULL;
        int fd;

        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        h->path = TAKE_PTR(copy);
        h->fd = fd;
        return 0;
}

void hierarchy_close(Hierarchy *h) {
        free(h->path);
        h->path = NULL;
        h->fd = safe_close(h->fd);
}

int hierarchy_open_cgroup(const Hierarchy *h, const char *path) {
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           RESOLVE_NO_XDEV,
        };
        const char *rel;
        long fd;

        if (!h->path || h->fd < 0)
                return -ENOENT;
        rel = path + strspn(path, "/");
        if (!*rel)
                rel = ".";

        fd = syscall(SYS_openat2, h->fd, rel, &how, sizeof(how));
        if (fd >= 0)
                return (int) fd;
        if (errno != ENOSYS && errno != EPERM)
                return -errno; /* ENOTDIR: the path names a file */

        /* No openat2(): walk component by component, refusing symlinks. */
        {
                _cleanup_close_ int cur = -1;
                _cleanup_free_ char *copy = strdup(rel);
                char *save = NULL, *c;

                if (!copy)
                        return -ENOMEM;
                cur = openat(h->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cur < 0)
                        return -errno;
                for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        int next;

                        if (streq(c, "."))
                                continue;
                        next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (next < 0 && errno == ENOTDIR) {
                                struct stat st;

                                /* A symlink (refused like openat2() does) or a file (no cgroup). */
                                return fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode) ?
                                               -ENOTDIR : -ELOOP;
                        }
                        if (next < 0)
                                return -errno;
                        safe_close(cur);
                        cur = next;
                }
                return TAKE_FD(cur);
        }
}

int hierarchy_stat_cgroup(const Hierarchy *h, const char *path) {
        const char *rel;
        struct stat st;

        if (!h->path || h->fd < 0)
                return -ENOENT;
        rel = path + strspn(path, "/");
        if (!*rel)
                return 0;
        if (fstatat(h->fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

bool cgroup_exists_as(const Hierarchy *h, const char *path, ino_t ino) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = hierarchy_open_cgroup(h, path);
        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0)
                return false;
        return st.st_ino == ino;
}

/* The unit types systemd knows; every one may name a cgroup's unit. */
static const char *const unit_types[] = {
        "service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope",
};

/* Whether the @n bytes at @p are a valid plain or instance unit name (see cgroup_path_unit()). */
static bool unit_name_valid(const char *p, size_t n) {
        const char *dot = NULL, *at = NULL;
        size_t suffix;
        bool type = false;

        if (n == 0 || n > CGROUP_UNIT_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = p[i];

                if (c == '.')
                        dot = p + i;
                else if (c == '@') {
                        if (at)
                                return false;
                        at = p + i;
                } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                             c == ':' || c == '-' || c == '_' || c == '\\'))
                        return false;
        }
        if (!dot || dot == p || (at && (at == p || at + 1 >= dot || at > dot)))
                return false;
        suffix = (size_t) (p + n - dot - 1);
        for (size_t i = 0; i < ELEMENTSOF(unit_types); i++)
                type = type || (strlen(unit_types[i]) == suffix && memcmp(dot + 1, unit_types[i], suffix) == 0);
        return type;
}

/* Whether the unit name at @p (@n bytes, valid) is a slice. */
static bool unit_name_is_slice(const char *p, size_t n) {
        return n > 6 && memcmp(p + n - 6, ".slice", 6) == 0;
}

const char *cgroup_path_unit(const char *path) {
        const char *p = path;

        for (;;) {
                size_t n;

                if (*p != '/')
                        return NULL;
                p++;
                n = strcspn(p, "/");
                if (n > 0 && p[0] == '_') { /* systemd's escape of cgroup names */
                        p++;
                        n--;
                }
                if (!unit_name_valid(p, n))
                        return NULL;
                if (!unit_name_is_slice(p, n) || memchr(p, '@', n))
                        return p[n] == 0 && !unit_name_is_slice(p, n) ? p : NULL;
                p += n;
        }
}
