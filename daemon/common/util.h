/* SPDX-License-Identifier: MIT */
/*
 * The common layer (daemon/README.md): what the daemon, libpressure and
 * pressurectl all link as the static library pressure-common. util.h
 * (cleanup, fds, clocks, strings), log.h, list.h, trigger.h (PSI trigger
 * text, levels), varlink-framer.h, kernfile.h (parsers of kernel files),
 * cgroup.h (cgroup paths, hierarchies, mountinfo), cgroup-ns.h (the
 * cgroup namespace roots of peers, translating their paths),
 * listen-address.h and socket-util.h. Nothing here knows of the event loop or JSON.
 *
 * Small helpers shared by every module: scope-based cleanup, fd handling,
 * clocks and string helpers. Nothing here allocates behind the caller's back.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

/*
 * Significant digits of the JSON reals pressurectl and libpressure write,
 * for jansson's JSON_REAL_PRECISION(): every figure comes out as the daemon
 * wrote it (a PSI average with the kernel's two decimals: 18.12), never
 * with the binary noise of a double's default 17 digits
 * (18.120000000000001). The daemon itself writes 6 (VARLINK_JSON_FLAGS).
 * JSON_DUMP_FLAGS: jansson's flags for one compact line with them.
 */
#define JSON_REAL_DIGITS 15
#define JSON_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(JSON_REAL_DIGITS))

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)
#define USEC_INFINITY UINT64_MAX

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -1;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Take ownership of a pointer or fd out of a cleanup variable. */
#define TAKE_PTR(p)                                     \
        ({                                              \
                __typeof__(p) _taken = (p);             \
                (p) = NULL;                             \
                _taken;                                 \
        })
#define TAKE_FD(fd)                                     \
        ({                                              \
                int _taken = (fd);                      \
                (fd) = -1;                              \
                _taken;                                 \
        })

/* Define a cleanup helper for a type's unref/free function. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        *p = func(*p);                  \
        }

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

static inline uint64_t timespec_to_usec(const struct timespec *ts) {
        return (uint64_t) ts->tv_sec * USEC_PER_SEC + (uint64_t) ts->tv_nsec / NSEC_PER_USEC;
}

static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return timespec_to_usec(&ts);
}

static inline struct timeval usec_to_timeval(uint64_t usec) {
        return (struct timeval) {
                .tv_sec = (time_t) (usec / USEC_PER_SEC),
                .tv_usec = (suseconds_t) (usec % USEC_PER_SEC),
        };
}

/* string_table_find - the index of @s among the @n entries of @table, or -1. */
static inline int string_table_find(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -1;
        for (size_t i = 0; i < n; i++)
                if (table[i] && streq(table[i], s))
                        return (int) i;
        return -1;
}

/*
 * Define NAME_to_string(TYPE) and NAME_from_string(const char *) over the
 * array NAME_table (or TABLE), indexed by the enum: the name, or NULL if
 * out of range; the value, or -1 (the enum's _INVALID) if unknown.
 */
#define DEFINE_STRING_TABLE_TO_STRING_IN(name, type, table)                             \
        const char *name##_to_string(type i) {                                          \
                return (size_t) i < ELEMENTSOF(table) ? table[i] : NULL;                \
        }
#define DEFINE_STRING_TABLE_LOOKUP_IN(name, type, table)                                \
        DEFINE_STRING_TABLE_TO_STRING_IN(name, type, table)                             \
        type name##_from_string(const char *s) {                                        \
                return (type) string_table_find(table, ELEMENTSOF(table), s);           \
        }
#define DEFINE_STRING_TABLE_TO_STRING(name, type) DEFINE_STRING_TABLE_TO_STRING_IN(name, type, name##_table)
#define DEFINE_STRING_TABLE_LOOKUP(name, type) DEFINE_STRING_TABLE_LOOKUP_IN(name, type, name##_table)

/* Strip trailing whitespace in place. */
/* The next blank-separated word of *@p (blanks: space and tab), with its
 * length in *@ret_len; *@p moves past it. NULL when only blanks are left. */
static inline const char *next_word(const char **p, size_t *ret_len) {
        const char *w = *p + strspn(*p, " \t");

        if (*w == 0)
                return NULL;
        *ret_len = strcspn(w, " \t");
        *p = w + *ret_len;
        return w;
}

static inline char *strip_trailing(char *s) {
        size_t n = strlen(s);

        while (n > 0 && strchr(" \t\r\n", s[n - 1]))
                s[--n] = 0;
        return s;
}

/*
 * read_full_file - read a whole (small) file into a NUL-terminated buffer.
 * @path: file to read
 * @max: refuse files larger than this (-EFBIG)
 * @ret: on success, the malloc'ed contents
 * @ret_size: optional, the number of bytes read
 *
 * Works for procfs/sysfs/cgroupfs files whose st_size is meaningless.
 * Returns 0 or a negative errno.
 */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_size);

/*
 * read_full_fd - like read_full_file() on an open fd, reading from offset 0
 * with pread(), so the same fd can be re-read cheaply.
 */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);

/* Parse a decimal uint64 with overflow checking; the whole string must match. */
int safe_atou64(const char *s, uint64_t *ret);

/*
 * free_and_strdup - replace the string *@p by a copy of @s, or by NULL if
 * @s is NULL. Returns 0, or -ENOMEM with *@p untouched.
 */
int free_and_strdup(char **p, const char *s);
