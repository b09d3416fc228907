/* SPDX-License-Identifier: MIT */
/* File reading, number parsing and strings shared by the daemon modules, libpressure and pressurectl. */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>

#include "util.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;

        for (;;) {
                ssize_t n;

                if (alloc - size < 1024) {
                        size_t want = alloc ? alloc * 2 : 4096;
                        char *p;

                        /* Room for @max bytes, the NUL, and one byte more to tell
                         * a file of exactly @max bytes from a longer one. */
                        if (want > max + 2)
                                want = max + 2;
                        if (want <= size)
                                return -EFBIG;
                        p = realloc(buf, want);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        alloc = want;
                }

                n = pread(fd, buf + size, alloc - size - 1, (off_t) size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max)
                        return -EFBIG;
        }

        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[size] = 0;
        if (ret_size)
                *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_size);
}

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != 0)
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

int free_and_strdup(char **p, const char *s) {
        char *copy = NULL;

        if (s) {
                copy = strdup(s);
                if (!copy)
                        return -ENOMEM;
        }
        free(*p);
        *p = copy;
        return 0;
}
