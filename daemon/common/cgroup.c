/* SPDX-License-Identifier: MIT */
/* Cgroup path validation and confined opening of cgroup directories. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "cgroup.h"
#include "util.h"

/* The length of the UTF-8 sequence at @p (1 to 4), or 0 if it is not valid UTF-8 (as jansson decodes it). */
static size_t utf8_sequence(const unsigned char *p) {
        size_t n;
        uint32_t c;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf) {
                n = 2;
                c = p[0] & 0x1f;
        } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                n = 3;
                c = p[0] & 0x0f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                n = 4;
                c = p[0] & 0x07;
        } else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                c = c << 6 | (p[i] & 0x3f);
        }
        /* Overlong forms, UTF-16 surrogates and beyond U+10FFFF. */
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        return n;
}

CgroupPathProblem cgroup_path_check(const char *path) {
        const unsigned char *p;
        CgroupPathProblem dots = CGROUP_PATH_OK;

        if (!path || !*path)
                return CGROUP_PATH_OK;
        if (path[0] != '/')
                return CGROUP_PATH_NOT_ABSOLUTE;
        if (strlen(path) > CGROUP_PATH_MAX)
                return CGROUP_PATH_TOO_LONG;
        for (p = (const unsigned char *) path; *p;) {
                size_t n = utf8_sequence(p);

                if (n == 0)
                        return CGROUP_PATH_NOT_UTF8;
                if (*p < 0x20 || *p == 0x7f)
                        return CGROUP_PATH_CONTROL_CHARACTER;
                p += n;
        }
        for (const char *c = path; *c;) {
                size_t n;

                c += strspn(c, "/");
                n = strcspn(c, "/");
                if (n > 255)
                        return CGROUP_PATH_NAME_TOO_LONG;
                if (dots == CGROUP_PATH_OK && n == 1 && c[0] == '.')
                        dots = CGROUP_PATH_DOT;
                if (n == 2 && c[0] == '.' && c[1] == '.')
                        dots = CGROUP_PATH_DOT_DOT;
                c += n;
        }
        return dots;
}

CgroupPathProblem cgroup_path_problem_from_errno(int error) {
        switch (error < 0 ? -error : error) {
        case ENOTDIR:
                return CGROUP_PATH_FILE;
        case ELOOP:
                return CGROUP_PATH_SYMLINK;
        case EXDEV:
                return CGROUP_PATH_OTHER_MOUNT;
        case ENAMETOOLONG:
                return CGROUP_PATH_TOO_LONG;
        case EINVAL:
                return CGROUP_PATH_TOO_LONG_IN_NAMESPACE;
        default:
                return CGROUP_PATH_OK;
        }
}

const char *cgroup_path_problem_to_string(CgroupPathProblem p) {
        static const char *const table[_CGROUP_PATH_PROBLEM_MAX] = {
                [CGROUP_PATH_NOT_ABSOLUTE] = "it is not absolute: a cgroup path starts with '/'",
                [CGROUP_PATH_TOO_LONG] = "it is longer than 4096 bytes",
                [CGROUP_PATH_NOT_UTF8] = "it is not valid UTF-8",
                [CGROUP_PATH_CONTROL_CHARACTER] = "it contains a control character, such as a tab or a newline",
                [CGROUP_PATH_NAME_TOO_LONG] = "a component of it is longer than 255 bytes",
                [CGROUP_PATH_DOT] = "it has a '.' component",
                [CGROUP_PATH_DOT_DOT] = "it has a '..' component",
                [CGROUP_PATH_TOO_LONG_IN_NAMESPACE] =
                        "it is longer than 4096 bytes after the root of the caller's cgroup namespace",
                [CGROUP_PATH_FILE] = "it names a file, not a cgroup directory",
                [CGROUP_PATH_SYMLINK] = "it goes through a symbolic link",
                [CGROUP_PATH_OTHER_MOUNT] = "it leads out of the cgroup hierarchy into another mount",
        };

        return p > CGROUP_PATH_OK && p < _CGROUP_PATH_PROBLEM_MAX ? table[p] : NULL;
}

char *cgroup_path_escape(const char *path) {
        const unsigned char *p = (const unsigned char *) path;
        char *out, *o;

        /* At most four bytes of output per byte of input. */
        out = malloc(strlen(path) * 4 + 1);
        if (!out)
                return NULL;
        for (o = out; *p;) {
                size_t n = utf8_sequence(p);

                if (n == 0 || *p < 0x20 || *p == 0x7f) {
                        o += sprintf(o, "\\x%02x", *p);
                        p++;
                        continue;
                }
                memcpy(o, p, n);
                o += n;
                p += n;
        }
        *o = 0;
        return out;
}

int cgroup_path_normalize(const char *path, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t o = 0;
        const char *p;

        if (cgroup_path_check(path) != CGROUP_PATH_OK)
                return -EINVAL;
        if (!path || !*path)
                path = "/";
        out = malloc(strlen(path) + 2);
        if (!out)
                return -ENOMEM;

        for (p = path;;) {
                size_t n;

                p += strspn(p, "/");
                if (!*p)
                        break;
                n = strcspn(p, "/");
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

        /* No openat2() (before Linux 5.6, or under valgrind): walk component by component, refusing
         * symlinks and other mounts as its RESOLVE_NO_SYMLINKS and RESOLVE_NO_XDEV do. */
        {
                _cleanup_close_ int cur = -1;
                _cleanup_free_ char *copy = strdup(rel);
                char *save = NULL, *c;
                struct stat root, st;

                if (!copy)
                        return -ENOMEM;
                cur = openat(h->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cur < 0 || fstat(cur, &root) < 0)
                        return -errno;
                for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        int next;

                        if (streq(c, "."))
                                continue;
                        next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (next < 0 && errno == ENOTDIR)
                                /* A symlink (refused like openat2() does) or a file (no cgroup). */
                                return fstatat(cur, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode) ?
                                               -ENOTDIR : -ELOOP;
                        if (next < 0)
                                return -errno;
                        safe_close(cur);
                        cur = next;
                        if (fstat(cur, &st) < 0)
                                return -errno;
                        if (st.st_dev != root.st_dev)
                                return -EXDEV;
                }
                return TAKE_FD(cur);
        }
}

int hierarchy_stat_cgroup(const Hierarchy *h, const char *path) {
        _cleanup_free_ char *rel = NULL;
        struct stat root, st;

        if (!h->path || h->fd < 0)
                return -ENOENT;
        path += strspn(path, "/");
        if (!*path)
                return 0;
        rel = strdup(path);
        if (!rel)
                return -ENOMEM;
        if (fstat(h->fd, &root) < 0)
                return -errno;
        /* Each prefix in turn, as hierarchy_open_cgroup() resolves it: no symlink, no other mount. */
        for (char *slash = rel;; slash++) {
                slash = strchrnul(slash, '/');
                char c = *slash;

                *slash = 0;
                if (fstatat(h->fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode))
                        return -ELOOP;
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                if (st.st_dev != root.st_dev)
                        return -EXDEV;
                if (!c)
                        return 0;
                *slash = c;
        }
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
