/* SPDX-License-Identifier: MIT */
/* systemd-oomd's PrekillHookTimeoutSec=, read as oomd reads it: see oomd-conf.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oomd-conf.h"
#include "util.h"

const char *const oomd_conf_dirs[OOMD_CONF_N_DIRS] = {
        "etc/systemd", "run/systemd", "usr/local/lib/systemd", "usr/lib/systemd",
};

#define USEC_PER_MINUTE (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MINUTE)
#define USEC_PER_DAY (24 * USEC_PER_HOUR)

/* Longer names before their prefixes: the first that the text starts with is the unit. */
static const struct {
        const char *name;
        uint64_t usec;
} timespan_units[] = {
        { "seconds", USEC_PER_SEC }, { "second", USEC_PER_SEC }, { "sec", USEC_PER_SEC }, { "s", USEC_PER_SEC },
        { "minutes", USEC_PER_MINUTE }, { "minute", USEC_PER_MINUTE }, { "min", USEC_PER_MINUTE },
        { "months", 2629800 * USEC_PER_SEC }, { "month", 2629800 * USEC_PER_SEC }, { "M", 2629800 * USEC_PER_SEC },
        { "msec", USEC_PER_MSEC }, { "ms", USEC_PER_MSEC }, { "m", USEC_PER_MINUTE },
        { "hours", USEC_PER_HOUR }, { "hour", USEC_PER_HOUR }, { "hr", USEC_PER_HOUR }, { "h", USEC_PER_HOUR },
        { "days", USEC_PER_DAY }, { "day", USEC_PER_DAY }, { "d", USEC_PER_DAY },
        { "weeks", 7 * USEC_PER_DAY }, { "week", 7 * USEC_PER_DAY }, { "w", 7 * USEC_PER_DAY },
        { "years", 31557600 * USEC_PER_SEC }, { "year", 31557600 * USEC_PER_SEC }, { "y", 31557600 * USEC_PER_SEC },
        { "usec", 1 }, { "us", 1 }, { "\xc2\xb5s", 1 }, { "\xce\xbcs", 1 },
};

static const char *skip_blanks(const char *p) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
                p++;
        return p;
}

/* The unit at @p: its microseconds, and @p moved past it; seconds, @p unchanged, for none. */
static uint64_t timespan_unit(const char **p) {
        for (size_t i = 0; i < ELEMENTSOF(timespan_units); i++) {
                size_t n = strlen(timespan_units[i].name);

                if (strncmp(*p, timespan_units[i].name, n) == 0) {
                        *p += n;
                        return timespan_units[i].usec;
                }
        }
        return USEC_PER_SEC;
}

/* One component at *@p ("1.5min"): added to *@total; *@p moved past it. */
static int timespan_component(const char **p, uint64_t *total) {
        const char *q = *p, *frac = NULL, *frac_end = NULL;
        uint64_t whole = 0, part = 0, mult, scale;

        if (!isdigit((unsigned char) *q) && !(*q == '.' && isdigit((unsigned char) q[1])))
                return -EINVAL;
        for (; isdigit((unsigned char) *q); q++) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*q - '0');
        }
        if (*q == '.') {
                frac = ++q;
                while (isdigit((unsigned char) *q))
                        q++;
                frac_end = q;
        }
        q = skip_blanks(q);
        mult = timespan_unit(&q);
        scale = mult;
        for (const char *f = frac; f && f < frac_end && scale >= 10; f++) {
                scale /= 10;
                part += (uint64_t) (*f - '0') * scale;
        }
        if (whole > UINT64_MAX / mult || whole * mult > UINT64_MAX - part ||
            whole * mult + part > UINT64_MAX - *total)
                return -ERANGE;
        *total += whole * mult + part;
        *p = q;
        return 0;
}

int oomd_timespan_parse(const char *s, uint64_t *ret_usec) {
        const char *p = skip_blanks(s);
        uint64_t total = 0;
        bool any = false;
        int k;

        if (strncmp(p, "infinity", 8) == 0 && *skip_blanks(p + 8) == 0) {
                *ret_usec = USEC_INFINITY;
                return 0;
        }
        for (;;) {
                p = skip_blanks(p);
                if (*p == 0)
                        break;
                k = timespan_component(&p, &total);
                if (k < 0)
                        return k;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret_usec = total;
        return 0;
}

/* One assignment of PrekillHookTimeoutSec= in [OOM]. */
static void oomd_conf_assign(OomdConf *conf, const char *value) {
        uint64_t usec;

        if (*value == 0) {
                conf->prekill_timeout_usec = 0;
                return;
        }
        /* oomd: "must be at least 1s and less than infinity, ignoring". */
        if (oomd_timespan_parse(value, &usec) < 0 || (usec != 0 && usec < USEC_PER_SEC) || usec == USEC_INFINITY) {
                conf->ignored++;
                return;
        }
        conf->prekill_timeout_usec = usec;
}

/* One logical line (continuations joined, blanks at both ends stripped) in section @section. */
static void oomd_conf_line(OomdConf *conf, char *line, char *section, size_t section_size) {
        char *eq, *key, *value;
        size_t n = strlen(line);

        if (n == 0 || line[0] == '#' || line[0] == ';')
                return;
        if (line[0] == '[') {
                if (line[n - 1] == ']')
                        snprintf(section, section_size, "%.*s", (int) (n - 2), line + 1);
                else
                        section[0] = 0; /* not a section header: what follows belongs to none */
                return;
        }
        eq = strchr(line, '=');
        if (!eq || !streq(section, "OOM"))
                return;
        *eq = 0;
        key = line;
        strip_trailing(key);
        value = (char *) skip_blanks(eq + 1);
        if (streq(key, "PrekillHookTimeoutSec"))
                oomd_conf_assign(conf, value);
}

void oomd_conf_apply(OomdConf *conf, const char *text) {
        /* A logical line is never longer than the text. */
        _cleanup_free_ char *logical = malloc(strlen(text) + 1);
        char section[64] = "";
        const char *p = text;
        size_t len = 0;

        if (!logical) {
                conf->ignored++; /* counted rather than lost without a trace */
                return;
        }
        while (*p) {
                const char *nl = strchrnul(p, '\n'), *b = p, *e = nl;

                while (b < nl && isspace((unsigned char) *b))
                        b++;
                while (e > b && isspace((unsigned char) e[-1]))
                        e--;
                p = *nl ? nl + 1 : nl;
                if (len == 0 && (b == e || *b == '#' || *b == ';'))
                        continue;
                memcpy(logical + len, b, (size_t) (e - b));
                len += (size_t) (e - b);
                /* A line ending in a backslash goes on on the next one, the backslash a blank. */
                if (len > 0 && logical[len - 1] == '\\' && *p) {
                        logical[len - 1] = ' ';
                        continue;
                }
                logical[len] = 0;
                oomd_conf_line(conf, logical, section, sizeof(section));
                len = 0;
        }
}

/* @root/@dir/@name into @buf; false if it does not fit. */
static bool conf_path(char buf[static PATH_MAX], const char *root, const char *dir, const char *name) {
        size_t len = strlen(root);
        int n = snprintf(buf, PATH_MAX, "%s%s%s/%s", root, len > 0 && root[len - 1] == '/' ? "" : "/", dir, name);

        return n > 0 && n < PATH_MAX;
}

/* Apply the file @path if it can be read; returns whether it exists. */
static bool conf_apply_file(OomdConf *conf, const char *path) {
        _cleanup_free_ char *text = NULL;

        if (access(path, F_OK) < 0)
                return false;
        /* An empty file or a link to /dev/null reads as nothing: it masks. */
        if (read_full_file(path, OOMD_CONF_FILE_MAX, &text, NULL) >= 0) {
                oomd_conf_apply(conf, text);
                conf->files++;
        }
        return true;
}

static bool dropin_name_ok(const char *name) {
        size_t n = strlen(name);

        return name[0] != '.' && n > 5 && streq(name + n - 5, ".conf");
}

/* The drop-in names of @dir not already in @names (a directory of higher priority has them). */
static int dropins_collect(const char *root, const char *dir, char *names[], size_t *n) {
        char path[PATH_MAX];
        struct dirent *de;
        DIR *d;

        if (!conf_path(path, root, dir, "oomd.conf.d") || !(d = opendir(path)))
                return 0;
        while ((de = readdir(d)) && *n < OOMD_CONF_DROPINS_MAX) {
                bool seen = false;

                if (!dropin_name_ok(de->d_name))
                        continue;
                for (size_t i = 0; i < *n && !seen; i++)
                        seen = streq(names[i] + strlen(names[i]) + 1, de->d_name);
                if (seen)
                        continue;
                /* "DIR\0NAME": the directory it is read from, then the name it sorts by. */
                names[*n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
                if (!names[*n]) {
                        closedir(d);
                        return -ENOMEM;
                }
                strcpy(names[*n], dir);
                strcpy(names[*n] + strlen(dir) + 1, de->d_name);
                (*n)++;
        }
        closedir(d);
        return 0;
}

static int dropin_cmp(const void *a, const void *b) {
        const char *x = *(char *const *) a, *y = *(char *const *) b;

        return strcmp(x + strlen(x) + 1, y + strlen(y) + 1);
}

int oomd_conf_read(const char *root, OomdConf *ret) {
        char *names[OOMD_CONF_DROPINS_MAX], path[PATH_MAX];
        OomdConf conf = {};
        size_t n = 0;
        int k = 0;

        for (size_t i = 0; i < OOMD_CONF_N_DIRS; i++)
                if (conf_path(path, root, oomd_conf_dirs[i], "oomd.conf") && conf_apply_file(&conf, path))
                        break; /* only the first one found */
        for (size_t i = 0; i < OOMD_CONF_N_DIRS && k >= 0; i++)
                k = dropins_collect(root, oomd_conf_dirs[i], names, &n);
        if (k >= 0) {
                qsort(names, n, sizeof(char *), dropin_cmp);
                for (size_t i = 0; i < n; i++) {
                        char name[NAME_MAX + sizeof("oomd.conf.d/")];

                        snprintf(name, sizeof(name), "oomd.conf.d/%s", names[i] + strlen(names[i]) + 1);
                        if (conf_path(path, root, names[i], name))
                                (void) conf_apply_file(&conf, path);
                }
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        if (k < 0)
                return k;
        *ret = conf;
        return 0;
}
