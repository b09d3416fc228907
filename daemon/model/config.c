/* SPDX-License-Identifier: MIT */
/*
 * The configuration: the embedded defaults, the table of every section and
 * key with its type and range, the INI reader (libinih driven line by line
 * so that line numbers, indentation and lines longer than its buffer are
 * under our control), the file and drop-in directory order, and the INI dump used by
 * --dump-config. A load either yields a complete Config or an error message
 * "FILE:LINE: [Section] Key=: reason" and nothing else.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <ini.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>

#include "cgroup-glob.h"
#include "config.h"
#include "duration.h"
#include "log.h"
#include "listen-address.h"
#include "policy.h"
#include "util.h"

/*
 * Configuration files are small; anything bigger is a mistake. Room for
 * every key at its longest: the two Cgroups= of 64 patterns of 32
 * components of 255 bytes take 1 MiB.
 */
#define CONFIG_FILE_MAX (4 * 1024 * 1024)

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

typedef enum ConfigType {
        CONFIG_SOCKET,          /* char *, absolute path that fits sockaddr_un */
        CONFIG_AUTO_PATH,       /* char *, absolute path or "auto" (NULL) */
        CONFIG_LOG_LEVEL,       /* int, syslog priority */
        CONFIG_TRIGGER,         /* PsiTrigger */
        CONFIG_VMPRESSURE_MODE, /* VmpressureMode */
        CONFIG_UNSIGNED,        /* unsigned, in [min, max] */
        CONFIG_SIZE,            /* uint64_t bytes, K/M/G suffixes, in [min, max] */
        CONFIG_SECONDS,         /* uint64_t usec, seconds or a duration, in [min, max] */
        CONFIG_TRISTATE,        /* RecursiveProtection */
        CONFIG_GROUP,           /* char *, group name or GID */
        CONFIG_LISTEN,          /* char *, ADDRESS:PORT */
        CONFIG_RATIO,           /* uint32_t parts per million, a decimal fraction, in [min, max] */
        CONFIG_OPT_SOCKET,      /* char *, like CONFIG_SOCKET; empty: "" (off), "auto": NULL (default) */
        CONFIG_CGROUP_GLOBS,    /* char *, space-separated cgroup path globs (cgroup-glob.h) */
        CONFIG_PERCENT,         /* uint32_t parts per million, written "0.1%", in [min, max] */
        CONFIG_BOOL,            /* bool, yes/no (true/false, on/off, 1/0 accepted) */
        CONFIG_MARGIN,          /* Margin, a percentage or a size */
        CONFIG_OPT_SECONDS,     /* uint64_t usec like CONFIG_SECONDS, in [min, max]; empty: 0 (unset) */
} ConfigType;

typedef struct ConfigKey {
        const char *section;
        const char *key;
        ConfigType type;
        size_t offset, size; /* of the field in Config */
        uint64_t min, max;
} ConfigKey;

#define KEY(s, k, t, field, lo, hi)                                                                      \
        { .section = s, .key = k, .type = t, .offset = offsetof(Config, field),                          \
          .size = sizeof(((Config *) NULL)->field), .min = lo, .max = hi }

/* Every key, in the order config_format() prints them. */
static const ConfigKey config_keys[] = {
        KEY("Daemon",     "Socket",              CONFIG_SOCKET,          socket_path, 0, 0),
        KEY("Daemon",     "LogLevel",            CONFIG_LOG_LEVEL,       log_level, 0, 0),
        KEY("Daemon",     "CgroupRoot",          CONFIG_AUTO_PATH,       cgroup_root, 0, 0),
        KEY("Daemon",     "CgroupV1Root",        CONFIG_AUTO_PATH,       cgroup_v1_root, 0, 0),
        KEY("Levels",     "Low",                 CONFIG_TRIGGER,         levels[LEVEL_LOW], 0, 0),
        KEY("Levels",     "Medium",              CONFIG_TRIGGER,         levels[LEVEL_MEDIUM], 0, 0),
        KEY("Levels",     "Critical",            CONFIG_TRIGGER,         levels[LEVEL_CRITICAL], 0, 0),
        KEY("Levels",     "VmpressureMode",      CONFIG_VMPRESSURE_MODE, vmpressure_mode, 0, 0),
        KEY("Levels",     "ClearAfterSec",       CONFIG_SECONDS,         clear_after_usec, 0, 3600 * USEC_PER_SEC),
        KEY("Levels",     "ClearRatio",          CONFIG_RATIO,           clear_ratio_ppm, 1, 1000000),
        KEY("Levels",     "StepDownSec",         CONFIG_SECONDS,         step_down_usec, 0, 3600 * USEC_PER_SEC),
        KEY("Levels",     "MarginLow",           CONFIG_MARGIN,          margins[LEVEL_LOW], 0, 0),
        KEY("Levels",     "MarginMedium",        CONFIG_MARGIN,          margins[LEVEL_MEDIUM], 0, 0),
        KEY("Levels",     "MarginCritical",      CONFIG_MARGIN,          margins[LEVEL_CRITICAL], 0, 0),
        KEY("Limits",     "MaxClients",          CONFIG_UNSIGNED,        max_clients, 1, 1000000),
        KEY("Limits",     "MaxClientsPerUser",   CONFIG_UNSIGNED,        max_clients_per_user, 1, 1000000),
        KEY("Limits",     "MaxMessageBytes",     CONFIG_SIZE,            max_message_bytes, 1 * KIB, 16 * MIB),
        KEY("Limits",     "OutputBufferBytes",   CONFIG_SIZE,            output_buffer_bytes, 4 * KIB, 1 * GIB),
        KEY("Limits",     "MaxRegistrations",    CONFIG_UNSIGNED,        max_registrations, 1, 1000000),
        KEY("Limits",     "RequestTimeoutSec",   CONFIG_SECONDS,         request_timeout_usec,
            USEC_PER_SEC / 10, 3600 * USEC_PER_SEC),
        KEY("Limits",     "IdleTimeoutSec",      CONFIG_SECONDS,         idle_timeout_usec,
            1 * USEC_PER_SEC, 86400 * USEC_PER_SEC),
        KEY("Limits",     "HistoryEpisodes",     CONFIG_UNSIGNED,        history_episodes, 0, CONFIG_HISTORY_EPISODES_MAX),
        KEY("Protection", "RefreshSec",          CONFIG_SECONDS,         refresh_usec,
            USEC_PER_SEC / 10, 3600 * USEC_PER_SEC),
        KEY("Protection", "RecursiveProtection", CONFIG_TRISTATE,        recursive_protection, 0, 0),
        KEY("Policy",     "InjectGroup",         CONFIG_GROUP,           inject_group, 0, 0),
        KEY("Policy",     "MaxFastTriggersPerUser", CONFIG_UNSIGNED,     max_fast_triggers_per_user, 0,
            POLICY_MAX_FAST_TRIGGERS_MAX),
        KEY("MemoryPressure", "Socket",          CONFIG_OPT_SOCKET,      mp_sockets[RESOURCE_MEMORY], 0, 0),
        KEY("MemoryPressure", "CpuSocket",       CONFIG_OPT_SOCKET,      mp_sockets[RESOURCE_CPU], 0, 0),
        KEY("MemoryPressure", "IoSocket",        CONFIG_OPT_SOCKET,      mp_sockets[RESOURCE_IO], 0, 0),
        KEY("Metrics",    "Listen",              CONFIG_LISTEN,          metrics_listen, 0, 0),
        KEY("Metrics",    "Cgroups",             CONFIG_CGROUP_GLOBS,    metrics_cgroups, 0, 0),
        KEY("Metrics",    "MaxCgroups",          CONFIG_UNSIGNED,        metrics_max_cgroups, 1,
            CONFIG_METRICS_MAX_CGROUPS_MAX),
        KEY("Report",     "Socket",              CONFIG_OPT_SOCKET,      report_socket, 0, 0),
        KEY("Report",     "MaxConnections",      CONFIG_UNSIGNED,        report_max_connections, 1,
            CONFIG_REPORT_MAX_CONNECTIONS_MAX),
        KEY("Report",     "MaxMetrics",          CONFIG_UNSIGNED,        report_max_metrics,
            CONFIG_REPORT_MAX_METRICS_MIN, CONFIG_REPORT_MAX_METRICS_MAX),
        KEY("Reclaim",    "Cgroups",             CONFIG_CGROUP_GLOBS,    reclaim_cgroups, 0, 0),
        KEY("Reclaim",    "TargetStall",         CONFIG_PERCENT,         reclaim_target_ppm, 1, 1000000),
        KEY("Reclaim",    "Interval",            CONFIG_SECONDS,         reclaim_interval_usec,
            CONFIG_RECLAIM_INTERVAL_MIN, CONFIG_RECLAIM_INTERVAL_MAX),
        KEY("Reclaim",    "MaxStep",             CONFIG_PERCENT,         reclaim_max_step_ppm, 1, 1000000),
        KEY("Reclaim",    "MinSize",             CONFIG_SIZE,            reclaim_min_size, 0, UINT64_C(1) << 50),
        KEY("DBus",       "LowMemoryMonitor",    CONFIG_BOOL,            dbus_low_memory_monitor, 0, 0),
        KEY("Prekill",    "Socket",              CONFIG_OPT_SOCKET,      prekill_socket, 0, 0),
        KEY("Prekill",    "Deadline",            CONFIG_OPT_SECONDS,     prekill_deadline_usec,
            CONFIG_PREKILL_DEADLINE_MIN, CONFIG_PREKILL_DEADLINE_MAX),
        KEY("Prekill",    "MaxCalls",            CONFIG_UNSIGNED,        prekill_max_calls, 1, CONFIG_PREKILL_MAX_CALLS_MAX),
        KEY("Prekill",    "MaxWarnings",         CONFIG_UNSIGNED,        prekill_max_warnings, 1,
            CONFIG_PREKILL_MAX_WARNINGS_MAX),
};

static void config_init_defaults(Config *c) {
        *c = (Config) {
                .log_level = LOG_INFO,
                .inject_gid = (gid_t) -1,
                .levels = {
                        [LEVEL_LOW] = { PSI_STALL_SOME, 70 * USEC_PER_MSEC, 1 * USEC_PER_SEC },
                        [LEVEL_MEDIUM] = { PSI_STALL_SOME, 100 * USEC_PER_MSEC, 1 * USEC_PER_SEC },
                        [LEVEL_CRITICAL] = { PSI_STALL_FULL, 300 * USEC_PER_MSEC, 1 * USEC_PER_SEC },
                },
                .vmpressure_mode = VMPRESSURE_MODE_HIERARCHY,
                .clear_after_usec = 0,
                .clear_ratio_ppm = 500000,
                .step_down_usec = 2 * USEC_PER_SEC,
                .margins = {
                        [LEVEL_LOW] = { true, 50000 },          /* 5% */
                        [LEVEL_MEDIUM] = { true, 100000 },      /* 10% */
                        [LEVEL_CRITICAL] = { true, 200000 },    /* 20% */
                },
                .history_episodes = 16,
                .max_clients = 4096,
                .max_clients_per_user = 128,
                .max_message_bytes = 64 * KIB,
                .output_buffer_bytes = 256 * KIB,
                .max_registrations = 1024,
                .request_timeout_usec = 10 * USEC_PER_SEC,
                .idle_timeout_usec = 60 * USEC_PER_SEC,
                .refresh_usec = 1 * USEC_PER_SEC,
                .recursive_protection = RECURSIVE_PROTECTION_AUTO,
                .max_fast_triggers_per_user = POLICY_MAX_FAST_TRIGGERS_DEFAULT,
                .metrics_max_cgroups = CONFIG_METRICS_MAX_CGROUPS_DEFAULT,
                .report_max_connections = CONFIG_REPORT_MAX_CONNECTIONS_DEFAULT,
                .report_max_metrics = CONFIG_REPORT_MAX_METRICS_DEFAULT,
                .reclaim_target_ppm = CONFIG_RECLAIM_TARGET_DEFAULT_PPM,
                .reclaim_interval_usec = CONFIG_RECLAIM_INTERVAL_DEFAULT,
                .reclaim_max_step_ppm = CONFIG_RECLAIM_MAX_STEP_DEFAULT_PPM,
                .reclaim_min_size = CONFIG_RECLAIM_MIN_SIZE_DEFAULT,
                .prekill_max_calls = CONFIG_PREKILL_MAX_CALLS_DEFAULT,
                .prekill_max_warnings = CONFIG_PREKILL_MAX_WARNINGS_DEFAULT,
        };
}

/* config_new_default - a Config holding the embedded defaults, or NULL on allocation failure. */
Config *config_new_default(void) {
        Config *c = malloc(sizeof(*c));

        if (!c)
                return NULL;
        config_init_defaults(c);
        return c;
}

/* config_free - free @c and the strings it owns; accepts NULL, returns NULL. */
Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->socket_path);
        free(c->cgroup_root);
        free(c->cgroup_v1_root);
        free(c->inject_group);
        free(c->metrics_listen);
        free(c->metrics_cgroups);
        free(c->reclaim_cgroups);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                free(c->mp_sockets[r]);
        free(c->prekill_socket);
        free(c->report_socket);
        free(c);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

static bool config_type_is_string(ConfigType t) {
        return t == CONFIG_SOCKET || t == CONFIG_AUTO_PATH || t == CONFIG_GROUP || t == CONFIG_LISTEN ||
               t == CONFIG_OPT_SOCKET || t == CONFIG_CGROUP_GLOBS;
}

/* "1G", "16M", "4K" when exact, else plain bytes: what parse_size() reads back. */
static void format_size_exact(uint64_t v, char *buf, size_t size) {
        if (v != 0 && v % GIB == 0)
                snprintf(buf, size, "%" PRIu64 "G", v / GIB);
        else if (v != 0 && v % MIB == 0)
                snprintf(buf, size, "%" PRIu64 "M", v / MIB);
        else if (v != 0 && v % KIB == 0)
                snprintf(buf, size, "%" PRIu64 "K", v / KIB);
        else
                snprintf(buf, size, "%" PRIu64, v);
}

static int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } suffixes[] = {
                { "", 1 }, { "B", 1 },
                { "K", KIB }, { "k", KIB }, { "KiB", KIB },
                { "M", MIB }, { "MiB", MIB },
                { "G", GIB }, { "GiB", GIB },
        };
        const char *p = s;
        uint64_t v = 0;

        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                unsigned d = (unsigned) (*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (streq(p, suffixes[i].suffix)) {
                        if (v > UINT64_MAX / suffixes[i].factor)
                                return -ERANGE;
                        *ret = v * suffixes[i].factor;
                        return 0;
                }
        return -EINVAL;
}

/* A decimal fraction ("0.5", "1", ".25") in parts per million, at most six decimals. */
static int parse_ratio_ppm(const char *s, uint64_t *ret) {
        uint64_t whole = 0, frac = 0;
        int digits = 0;
        const char *p = s;

        if (!isdigit((unsigned char) *p) && !(*p == '.' && isdigit((unsigned char) p[1])))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                whole = whole * 10 + (uint64_t) (*p - '0');
                if (whole > 1)
                        return -ERANGE;
        }
        if (*p == '.') {
                for (p++; isdigit((unsigned char) *p); p++) {
                        if (++digits > 6)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                }
                if (digits == 0)
                        return -EINVAL;
        }
        if (*p != 0)
                return -EINVAL;
        for (; digits < 6; digits++)
                frac *= 10;
        *ret = whole * 1000000 + frac;
        return 0;
}

/*
 * A percentage ("0.1%", "1%", "100%", at most four decimals) in parts per
 * million of the whole: "0.1%" is 1000.
 */
static int parse_percent_ppm(const char *s, uint64_t *ret) {
        uint64_t whole = 0, frac = 0;
        int digits = 0;
        const char *p = s;

        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                whole = whole * 10 + (uint64_t) (*p - '0');
                if (whole > 100)
                        return -ERANGE;
        }
        if (*p == '.') {
                for (p++; isdigit((unsigned char) *p); p++) {
                        if (++digits > 4)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                }
                if (digits == 0)
                        return -EINVAL;
        }
        if (!streq(p, "%"))
                return -EINVAL;
        for (; digits < 4; digits++)
                frac *= 10;
        *ret = whole * 10000 + frac;
        return 0;
}

/* Parts per million as a percentage with as many decimals as needed: "0.1%", "1%". */
static void format_percent(uint64_t ppm, char *buf, size_t size) {
        uint64_t frac = ppm % 10000;
        int digits = 4;

        if (frac == 0) {
                snprintf(buf, size, "%" PRIu64 "%%", ppm / 10000);
                return;
        }
        while (frac % 10 == 0) {
                frac /= 10;
                digits--;
        }
        snprintf(buf, size, "%" PRIu64 ".%0*" PRIu64 "%%", ppm / 10000, digits, frac);
}

static bool string_has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < ' ' || *s == 0x7f)
                        return true;
        return false;
}

static bool valid_group_name(const char *s) {
        size_t len = strlen(s);

        if (len == 0 || len > 32)
                return false;
        if (strspn(s, "0123456789") == len) {
                uint64_t v;

                /* A numeric GID; (gid_t) -1 means "none" and is not one. */
                return safe_atou64(s, &v) >= 0 && v < UINT32_MAX;
        }
        if (!(isalpha((unsigned char) s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < len; i++) {
                char ch = s[i];

                if (isalnum((unsigned char) ch) || ch == '_' || ch == '-' || ch == '.')
                        continue;
                if (ch == '$' && i == len - 1)
                        continue;
                return false;
        }
        return true;
}

/*
 * config_parse_listen - resolve a [Metrics] Listen= value.
 * @s: "A.B.C.D:PORT" or "[IPV6]:PORT", numeric addresses only, port 1..65535
 * @ret: optional; the socket address
 * @ret_len: optional; its length
 *
 * Returns 0 or -EINVAL.
 */
int config_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct sockaddr_storage ss;
        socklen_t len;
        in_port_t port;

        /* The metrics server's parser, less port 0, which only tests use. */
        if (metrics_parse_listen(s, &ss, &len) < 0)
                return -EINVAL;
        port = ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
                                        : ((struct sockaddr_in *) &ss)->sin_port;
        if (port == 0)
                return -EINVAL;
        if (ret)
                *ret = ss;
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* Reset the field of @k to its built-in default (an empty assignment). */
static int config_key_reset(const ConfigKey *k, void *field) {
        Config defaults;

        config_init_defaults(&defaults);
        if (config_type_is_string(k->type)) {
                char **p = field;

                free(*p);
                *p = NULL;
        } else
                memcpy(field, (const uint8_t *) &defaults + k->offset, k->size);
        return 0;
}

/*
 * A parser for one kind of value: store @value for @k in @field, or return
 * -EINVAL with a reason in @reason (or -ENOMEM).
 */
typedef int (*ConfigValueParser)(const ConfigKey *k, void *field, const char *value,
                                 char *reason, size_t reason_size);

/* CONFIG_SOCKET, CONFIG_OPT_SOCKET, CONFIG_AUTO_PATH: an absolute path. */
static int config_value_parse_path(const ConfigKey *k, void *field, const char *value,
                                   char *reason, size_t reason_size) {
        char **p = field;

        if (k->type == CONFIG_AUTO_PATH && streq(value, "auto")) {
                free(*p);
                *p = NULL;
                return 0;
        }
        if (value[0] != '/' || string_has_control(value)) {
                snprintf(reason, reason_size, "%s",
                         k->type == CONFIG_AUTO_PATH ? "must be an absolute path or \"auto\""
                                                     : "must be an absolute path");
                return -EINVAL;
        }
        if ((k->type == CONFIG_SOCKET || k->type == CONFIG_OPT_SOCKET) && strlen(value) >= sizeof(((struct sockaddr_un *) NULL)->sun_path)) {
                snprintf(reason, reason_size, "socket path must be shorter than %zu bytes",
                         sizeof(((struct sockaddr_un *) NULL)->sun_path));
                return -EINVAL;
        }
        if (strlen(value) >= 4096) {
                snprintf(reason, reason_size, "path too long");
                return -EINVAL;
        }
        return free_and_strdup(p, value);
}

/* CONFIG_LOG_LEVEL: a syslog priority name or number. */
static int config_value_parse_log_level(const ConfigKey *k, void *field, const char *value,
                                        char *reason, size_t reason_size) {
        int l = log_level_from_string(value);

        if (l < 0 || l > LOG_DEBUG) {
                snprintf(reason, reason_size,
                         "must be one of debug, info, notice, warning, err (or 0..7)");
                return -EINVAL;
        }
        *(int *) field = l;
        return 0;
}

/* CONFIG_TRIGGER: "STALL THRESHOLD WINDOW", checked against the kernel's limits. */
static int config_value_parse_trigger(const ConfigKey *k, void *field, const char *value,
                                      char *reason, size_t reason_size) {
        PsiTrigger t;
        const char *why = NULL;
        int r;

        r = psi_trigger_parse(value, &t);
        if (r < 0) {
                snprintf(reason, reason_size, "%s",
                         "must be STALL THRESHOLD WINDOW, e.g. \"some 100ms 1s\" "
                         "(STALL some or full, units us, ms, s)");
                return -EINVAL;
        }
        if (psi_trigger_check(&t, &why) < 0) {
                snprintf(reason, reason_size, "%s", why);
                return -EINVAL;
        }
        *(PsiTrigger *) field = t;
        return 0;
}

/* CONFIG_VMPRESSURE_MODE: default, hierarchy or local. */
static int config_value_parse_vmpressure_mode(const ConfigKey *k, void *field, const char *value,
                                              char *reason, size_t reason_size) {
        VmpressureMode m = vmpressure_mode_from_string(value);

        if (m < 0) {
                snprintf(reason, reason_size, "must be default, hierarchy or local");
                return -EINVAL;
        }
        *(VmpressureMode *) field = m;
        return 0;
}

/* CONFIG_UNSIGNED: a decimal number in [min, max]. */
static int config_value_parse_unsigned(const ConfigKey *k, void *field, const char *value,
                                       char *reason, size_t reason_size) {
        uint64_t v;

        if (safe_atou64(value, &v) < 0 || v < k->min || v > k->max) {
                snprintf(reason, reason_size, "must be a number between %" PRIu64 " and %" PRIu64,
                         k->min, k->max);
                return -EINVAL;
        }
        *(unsigned *) field = (unsigned) v;
        return 0;
}

/* CONFIG_SIZE, CONFIG_SECONDS, CONFIG_OPT_SECONDS: a size or a duration in [min, max]. */
static int config_value_parse_size_or_seconds(const ConfigKey *k, void *field, const char *value,
                                              char *reason, size_t reason_size) {
        bool is_size = k->type == CONFIG_SIZE;
        char lo[32], hi[32];
        uint64_t v;
        int r = is_size ? parse_size(value, &v) : parse_seconds(value, UINT64_MAX, &v);

        if (r < 0 || v < k->min || v > k->max) {
                if (is_size) {
                        format_size_exact(k->min, lo, sizeof(lo));
                        format_size_exact(k->max, hi, sizeof(hi));
                } else {
                        format_seconds(k->min, lo, sizeof(lo));
                        format_seconds(k->max, hi, sizeof(hi));
                }
                snprintf(reason, reason_size, "must be %sbetween %s and %s%s", is_size ? "a size " : "",
                         lo, hi, is_size ? " (bytes, or with suffix K, M, G)" : " seconds");
                return -EINVAL;
        }
        *(uint64_t *) field = v;
        return 0;
}

/* CONFIG_RATIO: a decimal fraction, stored as parts per million in [min, max]. */
static int config_value_parse_ratio(const ConfigKey *k, void *field, const char *value,
                                    char *reason, size_t reason_size) {
        char lo[32], hi[32];
        uint64_t v;

        if (parse_ratio_ppm(value, &v) < 0 || v < k->min || v > k->max) {
                format_seconds(k->min, lo, sizeof(lo));
                format_seconds(k->max, hi, sizeof(hi));
                snprintf(reason, reason_size, "must be a decimal fraction between %s and %s", lo, hi);
                return -EINVAL;
        }
        *(uint32_t *) field = (uint32_t) v;
        return 0;
}

/* CONFIG_PERCENT: a percentage, stored as parts per million in [min, max]. */
static int config_value_parse_percent(const ConfigKey *k, void *field, const char *value,
                                      char *reason, size_t reason_size) {
        char lo[32], hi[32];
        uint64_t v;

        if (parse_percent_ppm(value, &v) < 0 || v < k->min || v > k->max) {
                format_percent(k->min, lo, sizeof(lo));
                format_percent(k->max, hi, sizeof(hi));
                snprintf(reason, reason_size, "must be a percentage between %s and %s, e.g. \"0.1%%\"", lo, hi);
                return -EINVAL;
        }
        *(uint32_t *) field = (uint32_t) v;
        return 0;
}

/* CONFIG_TRISTATE: a boolean or "auto". */
static int config_value_parse_tristate(const ConfigKey *k, void *field, const char *value,
                                       char *reason, size_t reason_size) {
        RecursiveProtection v;

        if (streq(value, "auto"))
                v = RECURSIVE_PROTECTION_AUTO;
        else if (streq(value, "yes") || streq(value, "true") || streq(value, "on") || streq(value, "1"))
                v = RECURSIVE_PROTECTION_YES;
        else if (streq(value, "no") || streq(value, "false") || streq(value, "off") || streq(value, "0"))
                v = RECURSIVE_PROTECTION_NO;
        else {
                snprintf(reason, reason_size, "must be yes, no or auto");
                return -EINVAL;
        }
        *(RecursiveProtection *) field = v;
        return 0;
}

/* CONFIG_BOOL: yes or no. */
static int config_value_parse_bool(const ConfigKey *k, void *field, const char *value, char *reason,
                                   size_t reason_size) {
        if (streq(value, "yes") || streq(value, "true") || streq(value, "on") || streq(value, "1"))
                *(bool *) field = true;
        else if (streq(value, "no") || streq(value, "false") || streq(value, "off") || streq(value, "0"))
                *(bool *) field = false;
        else {
                snprintf(reason, reason_size, "must be yes or no");
                return -EINVAL;
        }
        return 0;
}

/* CONFIG_GROUP: a group name or GID, kept as text. */
static int config_value_parse_group(const ConfigKey *k, void *field, const char *value,
                                    char *reason, size_t reason_size) {
        if (!valid_group_name(value)) {
                snprintf(reason, reason_size, "must be a group name or a numeric GID");
                return -EINVAL;
        }
        return free_and_strdup(field, value);
}

/* CONFIG_LISTEN: ADDRESS:PORT, checked, kept as text. */
static int config_value_parse_listen(const ConfigKey *k, void *field, const char *value,
                                     char *reason, size_t reason_size) {
        if (config_parse_listen(value, NULL, NULL) < 0) {
                snprintf(reason, reason_size,
                         "must be ADDRESS:PORT with a numeric IPv4 address or [IPv6] address "
                         "and a port between 1 and 65535");
                return -EINVAL;
        }
        return free_and_strdup(field, value);
}

/* CONFIG_CGROUP_GLOBS: cgroup path patterns, checked, kept as written. */
static int config_value_parse_cgroup_globs(const ConfigKey *k, void *field, const char *value,
                                           char *reason, size_t reason_size) {
        CgroupGlobs *g = NULL;
        const char *why = NULL;
        int r;

        r = cgroup_globs_parse(value, &g, &why);
        g = cgroup_globs_free(g);
        if (r == -EINVAL) {
                snprintf(reason, reason_size, "%s (expected space-separated absolute cgroup path globs)",
                         strna(why));
                return r;
        }
        if (r < 0)
                return r;
        return free_and_strdup(field, value);
}

/* CONFIG_MARGIN: a percentage (of the limit or MemTotal) or a size. */
static int config_value_parse_margin(const ConfigKey *k, void *field, const char *value,
                                     char *reason, size_t reason_size) {
        Margin m = { .percent = value[strlen(value) - 1] == '%' };

        if (m.percent ? parse_percent_ppm(value, &m.value) < 0
                      : parse_size(value, &m.value) < 0 || m.value > CONFIG_MARGIN_SIZE_MAX) {
                snprintf(reason, reason_size,
                         "must be a percentage between 0%% and 100%%, e.g. \"10%%\", "
                         "or a size of at most 1048576G (bytes, or with suffix K, M, G)");
                return -EINVAL;
        }
        *(Margin *) field = m;
        return 0;
}

/* The parser for each ConfigType. */
static const ConfigValueParser config_value_parsers[] = {
        [CONFIG_SOCKET]          = config_value_parse_path,
        [CONFIG_OPT_SOCKET]      = config_value_parse_path,
        [CONFIG_AUTO_PATH]       = config_value_parse_path,
        [CONFIG_LOG_LEVEL]       = config_value_parse_log_level,
        [CONFIG_TRIGGER]         = config_value_parse_trigger,
        [CONFIG_VMPRESSURE_MODE] = config_value_parse_vmpressure_mode,
        [CONFIG_UNSIGNED]        = config_value_parse_unsigned,
        [CONFIG_SIZE]            = config_value_parse_size_or_seconds,
        [CONFIG_SECONDS]         = config_value_parse_size_or_seconds,
        [CONFIG_RATIO]           = config_value_parse_ratio,
        [CONFIG_TRISTATE]        = config_value_parse_tristate,
        [CONFIG_GROUP]           = config_value_parse_group,
        [CONFIG_LISTEN]          = config_value_parse_listen,
        [CONFIG_CGROUP_GLOBS]    = config_value_parse_cgroup_globs,
        [CONFIG_PERCENT]         = config_value_parse_percent,
        [CONFIG_BOOL]            = config_value_parse_bool,
        [CONFIG_MARGIN]          = config_value_parse_margin,
        [CONFIG_OPT_SECONDS]     = config_value_parse_size_or_seconds,
};

/*
 * Parse @value for @k into @c. Returns 0, -ENOMEM, or -EINVAL with a reason
 * in @reason.
 */
static int config_key_parse(const ConfigKey *k, Config *c, const char *value, char *reason, size_t reason_size) {
        void *field = (uint8_t *) c + k->offset;

        if (value[0] == 0 && k->type == CONFIG_OPT_SOCKET)
                /* An empty socket path turns the socket off. */
                return free_and_strdup(field, "");
        if (k->type == CONFIG_OPT_SOCKET && streq(value, "auto")) {
                char **p = field;

                free(*p);
                *p = NULL;
                return 0;
        }
        if (value[0] == 0)
                /* An empty assignment restores the built-in default. */
                return config_key_reset(k, field);

        if ((size_t) k->type < ELEMENTSOF(config_value_parsers) && config_value_parsers[k->type])
                return config_value_parsers[k->type](k, field, value, reason, reason_size);

        snprintf(reason, reason_size, "unsupported key type");
        return -EINVAL;
}

typedef struct ConfigParser {
        Config *config;
        const char *name;       /* file name used in messages */
        const char *next;       /* unread input */
        unsigned line;          /* number of the line last handed to libinih */
        unsigned error_line;    /* 0: no error yet */
        int error_r;
        char *error;
        char *long_value;       /* the value of the current line, if too long for libinih's buffer */
} ConfigParser;

/*
 * What libinih is handed in place of a value too long for its buffer; the
 * handler takes the value kept aside instead. No valid value holds a
 * control character.
 */
#define CONFIG_LONG_VALUE "\001"

static void config_parser_fail(ConfigParser *p, int r, const char *format, ...) _printf_(3, 4);

static void config_parser_fail(ConfigParser *p, int r, const char *format, ...) {
        va_list ap;

        if (p->error_line != 0)
                return;
        p->error_line = p->line;
        p->error_r = r;
        va_start(ap, format);
        if (vasprintf(&p->error, format, ap) < 0)
                p->error = NULL;
        va_end(ap);
}

/*
 * A line [@begin, @end) too long for libinih's buffer of @num bytes: a
 * comment becomes an empty line; an assignment becomes "KEY=" with
 * CONFIG_LONG_VALUE, its value kept in p->long_value for the handler.
 * Returns the length put in @str, -EINVAL if the line cannot be handed
 * over (a section header, no "="), or -ENOMEM.
 */
static ssize_t config_reader_long(ConfigParser *p, const char *begin, const char *end, char *str, int num) {
        const char *sep = begin + strcspn(begin, "=:");
        size_t key_len = (size_t) (sep - begin);

        if (*begin == '#' || *begin == ';')
                return 0;
        if (*begin == '[' || sep >= end || key_len + sizeof(CONFIG_LONG_VALUE) + 2 > (size_t) num)
                return -EINVAL;
        p->long_value = strndup(sep + 1, (size_t) (end - sep - 1));
        if (!p->long_value)
                return -ENOMEM;
        memcpy(str, begin, key_len + 1);
        memcpy(str + key_len + 1, CONFIG_LONG_VALUE, sizeof(CONFIG_LONG_VALUE) - 1);
        return (ssize_t) (key_len + sizeof(CONFIG_LONG_VALUE));
}

/*
 * libinih's line reader. One call hands over exactly one line, so libinih's
 * line numbers and ours agree. Leading whitespace is removed: an indented
 * line is an ordinary line (as in systemd's files), never a continuation of
 * the previous value. A line longer than libinih's buffer is never split:
 * its value goes around libinih (config_reader_long()), so that a line may
 * be as long as the longest value (a Cgroups= of 64 long patterns).
 */
static char *config_reader(char *str, int num, void *userdata) {
        ConfigParser *p = userdata;
        const char *begin = p->next, *end;
        ssize_t len;

        if (*begin == 0 || num < 2)
                return NULL;
        p->line++;
        free(p->long_value);
        p->long_value = NULL;

        end = begin + strcspn(begin, "\n");
        p->next = *end ? end + 1 : end;

        while (begin < end && (*begin == ' ' || *begin == '\t'))
                begin++;
        len = end - begin;

        if ((size_t) len + 2 > (size_t) num) {
                len = config_reader_long(p, begin, end, str, num);
                if (len == -ENOMEM)
                        config_parser_fail(p, -ENOMEM, "%s:%u: out of memory", p->name, p->line);
                else if (len < 0)
                        config_parser_fail(p, -EINVAL, "%s:%u: line too long for anything but an assignment "
                                           "(at most %d characters)", p->name, p->line, num - 2);
                if (len < 0)
                        len = 0;
        } else
                memcpy(str, begin, (size_t) len);
        str[len] = '\n';
        str[len + 1] = 0;
        return str;
}

/* The value of a line too long for libinih, trimmed as libinih trims the others. */
static const char *config_long_value(ConfigParser *p) {
        char *v = p->long_value, *e;

        v += strspn(v, " \t");
        /* An inline comment: ";" after white space. */
        for (e = v; *e; e++)
                if (*e == ';' && e > v && (e[-1] == ' ' || e[-1] == '\t')) {
                        *e = 0;
                        break;
                }
        e = v + strlen(v);
        while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = 0;
        return v;
}

static int config_handler(void *userdata, const char *section, const char *name, const char *value) {
        ConfigParser *p = userdata;
        const ConfigKey *k = NULL;
        bool section_known = false;
        char reason[256] = "";
        int r;

        if (p->error_line != 0)
                return 1; /* only the first error is reported */
        if (p->long_value && streq(value, CONFIG_LONG_VALUE))
                value = config_long_value(p);

        if (section[0] == 0) {
                config_parser_fail(p, -EINVAL, "%s:%u: %s=: assignment before any [Section] header",
                                   p->name, p->line, name);
                return 0;
        }

        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                if (!streq(config_keys[i].section, section))
                        continue;
                section_known = true;
                if (streq(config_keys[i].key, name)) {
                        k = &config_keys[i];
                        break;
                }
        }
        if (!k) {
                config_parser_fail(p, -EINVAL, "%s:%u: [%s] %s=: %s", p->name, p->line, section, name,
                                   section_known ? "unknown key" : "unknown section");
                return 0;
        }

        r = config_key_parse(k, p->config, value, reason, sizeof(reason));
        if (r == -ENOMEM) {
                config_parser_fail(p, r, "%s:%u: out of memory", p->name, p->line);
                return 0;
        }
        if (r < 0) {
                config_parser_fail(p, r, "%s:%u: [%s] %s=: %s", p->name, p->line, section, name, reason);
                return 0;
        }
        return 1;
}

/*
 * config_parse_string - apply INI text to a configuration.
 * @c: the configuration to update; on failure it may be partly updated and
 *     should be discarded
 * @name: the file name used in error messages
 * @text: the INI text
 * @ret_error: optional; on failure a malloc'ed message
 *             "NAME:LINE: [Section] Key=: reason"
 *
 * Returns 0, -EINVAL for content errors, or -ENOMEM.
 */
int config_parse_string(Config *c, const char *name, const char *text, char **ret_error) {
        ConfigParser p = {
                .config = c,
                .name = name ?: "(string)",
                .next = text ?: "",
        };
        int r;

        r = ini_parse_stream(config_reader, &p, config_handler, &p);
        free(p.long_value);
        if (r == -2 && p.error_line == 0) {
                p.error_r = -ENOMEM;
                p.error_line = p.line ?: 1;
        } else if (r > 0 && (p.error_line == 0 || (unsigned) r < p.error_line)) {
                /* libinih found a syntax error before (or without) any error of ours. */
                free(p.error);
                p.error = NULL;
                p.error_line = (unsigned) r;
                p.error_r = -EINVAL;
                if (asprintf(&p.error, "%s:%d: syntax error, expected [Section] or Key=Value", p.name, r) < 0)
                        p.error = NULL;
        } else if (r < 0 && p.error_line == 0) {
                p.error_r = -EIO;
                p.error_line = 1;
        }

        if (p.error_line == 0)
                return 0;

        if (ret_error)
                *ret_error = TAKE_PTR(p.error);
        free(p.error);
        return p.error_r < 0 ? p.error_r : -EINVAL;
}

static void set_error(char **ret_error, const char *format, ...) _printf_(2, 3);

static void set_error(char **ret_error, const char *format, ...) {
        va_list ap;
        char *s;

        va_start(ap, format);
        if (vasprintf(&s, format, ap) < 0)
                s = NULL;
        va_end(ap);
        if (ret_error)
                *ret_error = s;
        else
                free(s);
}

/* Parse the text read from @path, which must not contain NUL bytes. */
static int config_apply_buffer(Config *c, const char *path, const char *buf, size_t size, char **ret_error) {
        if (strlen(buf) != size) {
                set_error(ret_error, "%s: contains a NUL byte", path);
                return -EINVAL;
        }
        return config_parse_string(c, path, buf, ret_error);
}

static int config_apply_file(Config *c, const char *path, bool must_exist, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        r = read_full_file(path, CONFIG_FILE_MAX, &buf, &size);
        if (r == -ENOENT && !must_exist)
                return 0;
        if (r < 0) {
                set_error(ret_error, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }
        return config_apply_buffer(c, path, buf, size, ret_error);
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void strv_free_n(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static bool dropin_name_ok(const char *name) {
        size_t len = strlen(name);

        return name[0] != '.' && len > 5 && streq(name + len - 5, ".conf");
}

/*
 * Open a second descriptor of @dfd for readdir(), so that @dfd stays usable
 * for openat(). Returns 0 with *ret set, or a negative errno with an error.
 */
static int config_dropins_opendir(int dfd, const char *dir, DIR **ret, char **ret_error) {
        int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        DIR *d;
        int r;

        if (fd2 < 0) {
                r = -errno;
                set_error(ret_error, "%s: %s", dir, strerror(-r));
                return r;
        }
        d = fdopendir(fd2);
        if (!d) {
                r = -errno;
                safe_close(fd2);
                set_error(ret_error, "%s: %s", dir, strerror(-r));
                return r;
        }
        *ret = d;
        return 0;
}

/* Append a copy of @name to the growing array @names. Returns 0 or -ENOMEM. */
static int dropin_names_append(char ***names, size_t *n, size_t *alloc, const char *name) {
        if (*n == *alloc) {
                size_t want = *alloc ? *alloc * 2 : 16;
                char **p = realloc(*names, want * sizeof(char *));

                if (!p)
                        return -ENOMEM;
                *names = p;
                *alloc = want;
        }
        (*names)[*n] = strdup(name);
        if (!(*names)[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/*
 * Read @d to its end, collecting the names of regular files that
 * dropin_name_ok() accepts into @names. Returns 0 or a negative errno;
 * errors other than -ENOMEM come with a message.
 */
static int config_dropins_read(DIR *d, int dfd, const char *dir, char ***names, size_t *n,
                               char **ret_error) {
        struct dirent *de;
        size_t alloc = 0;
        int r = 0;

        for (;;) {
                struct stat st;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0) {
                                r = -errno;
                                set_error(ret_error, "%s: cannot read directory: %s", dir, strerror(-r));
                        }
                        break;
                }
                if (!dropin_name_ok(de->d_name))
                        continue;
                if (fstatat(dfd, de->d_name, &st, 0) < 0) {
                        if (errno == ENOENT)
                                continue; /* dangling symlink */
                        r = -errno;
                        set_error(ret_error, "%s/%s: %s", dir, de->d_name, strerror(-r));
                        break;
                }
                if (!S_ISREG(st.st_mode))
                        continue;

                r = dropin_names_append(names, n, &alloc, de->d_name);
                if (r < 0)
                        break;
        }
        return r;
}

/*
 * List the drop-in file names in @dir (open as @dfd), unsorted. Returns 0
 * with the array in *ret_names and *ret_n, or a negative errno with an
 * error and nothing allocated.
 */
static int config_dropins_list(int dfd, const char *dir, char ***ret_names, size_t *ret_n,
                               char **ret_error) {
        DIR *d = NULL;
        char **names = NULL;
        size_t n = 0;
        int r;

        r = config_dropins_opendir(dfd, dir, &d, ret_error);
        if (r < 0)
                return r;
        r = config_dropins_read(d, dfd, dir, &names, &n, ret_error);
        closedir(d);

        if (r == -ENOMEM)
                set_error(ret_error, "%s: out of memory", dir);
        if (r < 0) {
                strv_free_n(names, n);
                return r;
        }
        *ret_names = names;
        *ret_n = n;
        return 0;
}

/* Read the drop-in @name in @dir (open as @dfd) and apply it to @c. */
static int config_apply_dropin(Config *c, int dfd, const char *dir, const char *name, char **ret_error) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t size;
        int r;

        if (asprintf(&path, "%s/%s", dir, name) < 0) {
                path = NULL;
                set_error(ret_error, "%s: out of memory", dir);
                return -ENOMEM;
        }
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                set_error(ret_error, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }
        r = read_full_fd(fd, CONFIG_FILE_MAX, &buf, &size);
        if (r < 0) {
                set_error(ret_error, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }
        return config_apply_buffer(c, path, buf, size, ret_error);
}

static int config_apply_dropins(Config *c, const char *dir, char **ret_error) {
        _cleanup_close_ int dfd = -1;
        char **names = NULL;
        size_t n = 0;
        int r = 0;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                if (errno == ENOENT)
                        return 0;
                r = -errno;
                set_error(ret_error, "%s: cannot open directory: %s", dir, strerror(-r));
                return r;
        }

        r = config_dropins_list(dfd, dir, &names, &n, ret_error);
        if (r < 0)
                return r;

        if (n > 0)
                qsort(names, n, sizeof(char *), strcmp_ptr);

        for (size_t i = 0; i < n && r >= 0; i++)
                r = config_apply_dropin(c, dfd, dir, names[i], ret_error);

        strv_free_n(names, n);
        return r;
}

/*
 * config_load - build a configuration from the embedded defaults and files.
 * @main_path: e.g. /etc/pressured/pressured.conf, or NULL; a missing file is fine
 * @dropin_dir: e.g. /etc/pressured/pressured.conf.d, or NULL; missing is fine;
 *              regular files named *.conf inside (not hidden ones) are read
 *              in strcmp() order
 * @extra_path: --config FILE or NULL; this one must exist
 * @ret: on success, the new configuration
 * @ret_error: optional; on failure a malloc'ed message
 *             "FILE:LINE: [Section] Key=: reason", or "FILE: reason" for I/O
 *
 * Files are applied in that order; a later assignment overrides an earlier
 * one and an empty value restores the default. Returns 0 or a negative
 * errno (-EINVAL for content errors); on failure nothing is returned and
 * nothing leaks.
 */
int config_load(const char *main_path, const char *dropin_dir, const char *extra_path,
                Config **ret, char **ret_error) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r = 0;

        c = config_new_default();
        if (!c) {
                set_error(ret_error, "out of memory");
                return -ENOMEM;
        }

        if (main_path)
                r = config_apply_file(c, main_path, false, &error);
        if (r >= 0 && dropin_dir)
                r = config_apply_dropins(c, dropin_dir, &error);
        if (r >= 0 && extra_path)
                r = config_apply_file(c, extra_path, true, &error);
        if (r >= 0) {
                r = config_resolve_inject_group(c);
                if (r < 0)
                        set_error(&error, "out of memory");
        }
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }

        *ret = TAKE_PTR(c);
        return 0;
}

/* The GID of the group @name: -ESRCH if there is none, -ENOMEM, or NSS's error. */
static int group_lookup(const char *name, gid_t *ret) {
        long size_max = sysconf(_SC_GETGR_R_SIZE_MAX);
        size_t size = size_max > 0 ? (size_t) size_max : 4096;

        for (;;) {
                _cleanup_free_ char *buf = malloc(size);
                struct group g, *found = NULL;
                int e;

                if (!buf)
                        return -ENOMEM;
                e = getgrnam_r(name, &g, buf, size, &found);
                if (e == ERANGE && size < 1024 * 1024) {
                        size *= 2;
                        continue;
                }
                if (e != 0)
                        return -e;
                if (!found)
                        return -ESRCH;
                *ret = found->gr_gid;
                return 0;
        }
}

int config_resolve_inject_group(Config *c) {
        const char *name = c->inject_group;
        uint64_t v;
        gid_t gid = (gid_t) -1;
        int r;

        c->inject_gid = (gid_t) -1;
        c->inject_gid_set = false;
        if (!name)
                return 0;
        /* A numeric GID needs no lookup; the parser refused (gid_t) -1. */
        if (strspn(name, "0123456789") == strlen(name) && safe_atou64(name, &v) >= 0 && v < UINT32_MAX) {
                c->inject_gid = (gid_t) v;
                c->inject_gid_set = true;
                return 0;
        }
        r = group_lookup(name, &gid);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_warning("[Policy] InjectGroup=%s: %s; only root may call Inject until a reload finds the group.",
                            name, r == -ESRCH ? "no such group" : strerror(-r));
                return 0;
        }
        c->inject_gid = gid;
        c->inject_gid_set = true;
        return 0;
}

/* Write the value of @k, stored at @field, as config_key_parse() reads it back. */
static void config_format_value(FILE *f, const ConfigKey *k, const void *field) {
        char tmp[3][32];

        switch (k->type) {
        case CONFIG_SOCKET:
        case CONFIG_GROUP:
        case CONFIG_LISTEN:
        case CONFIG_CGROUP_GLOBS:
                fputs(*(char *const *) field ?: "", f);
                break;
        case CONFIG_AUTO_PATH:
        case CONFIG_OPT_SOCKET:
                fputs(*(char *const *) field ?: "auto", f);
                break;
        case CONFIG_LOG_LEVEL:
                fputs(strna(log_level_to_string(*(const int *) field)), f);
                break;
        case CONFIG_TRIGGER: {
                const PsiTrigger *t = field;

                format_duration_us(t->threshold_us, tmp[0], sizeof(tmp[0]));
                format_duration_us(t->window_us, tmp[1], sizeof(tmp[1]));
                fprintf(f, "%s %s %s", strna(psi_stall_to_string(t->stall)), tmp[0], tmp[1]);
                break;
        }
        case CONFIG_VMPRESSURE_MODE:
                fputs(strna(vmpressure_mode_to_string(*(const VmpressureMode *) field)), f);
                break;
        case CONFIG_UNSIGNED:
                fprintf(f, "%u", *(const unsigned *) field);
                break;
        case CONFIG_SIZE:
                format_size_exact(*(const uint64_t *) field, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        case CONFIG_SECONDS:
                format_seconds(*(const uint64_t *) field, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        case CONFIG_OPT_SECONDS:
                /* Unset is empty: what it then is depends on something else. */
                if (*(const uint64_t *) field == 0)
                        break;
                format_seconds(*(const uint64_t *) field, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        case CONFIG_RATIO:
                /* Parts per million print like microseconds as seconds. */
                format_seconds(*(const uint32_t *) field, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        case CONFIG_PERCENT:
                format_percent(*(const uint32_t *) field, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        case CONFIG_MARGIN: {
                const Margin *m = field;

                (m->percent ? format_percent : format_size_exact)(m->value, tmp[2], sizeof(tmp[2]));
                fputs(tmp[2], f);
                break;
        }
        case CONFIG_TRISTATE: {
                RecursiveProtection v = *(const RecursiveProtection *) field;

                fputs(v == RECURSIVE_PROTECTION_YES ? "yes" :
                      v == RECURSIVE_PROTECTION_NO ? "no" : "auto", f);
                break;
        }
        case CONFIG_BOOL:
                fputs(*(const bool *) field ? "yes" : "no", f);
                break;
        }
}

/*
 * config_format - the configuration as INI text.
 * @c: the configuration
 *
 * Every section and key with its current value, in a form config_parse_string()
 * reads back to the same configuration. Returns a malloc'ed string or NULL
 * on allocation failure.
 */
char *config_format(const Config *c) {
        char *buf = NULL;
        size_t size = 0;
        const char *section = NULL;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;

        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                const ConfigKey *k = &config_keys[i];
                const void *field = (const uint8_t *) c + k->offset;

                if (!section || !streq(section, k->section)) {
                        fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
                        section = k->section;
                }
                fprintf(f, "%s=", k->key);

                config_format_value(f, k, field);
                fputc('\n', f);
        }

        if (ferror(f)) {
                fclose(f);
                free(buf);
                return NULL;
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
