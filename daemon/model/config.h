/* SPDX-License-Identifier: MIT */
/*
 * The model layer (daemon/README.md): pure logic, no event loop: the
 * configuration (config.h), the protection model (protection.h) and its
 * tree reader (protection-tree.h), pressure episodes (episode.h), the
 * fast-trigger policy (policy.h), counters (counters.h, histogram.h), the
 * kinds of source (source-type.h), the [Metrics] Cgroups= globs and
 * their walk (cgroup-glob.h) and the proactive reclaim controller's
 * arithmetic (reclaim.h). Tests drive it with plain structs and fixture
 * files.
 *
 * The configuration: embedded defaults, then /etc/pressured/pressured.conf,
 * then pressured.conf.d/ *.conf in lexical order, then --config. Parsed with
 * libinih. Any unknown section or key, or a bad value, rejects the whole
 * load with a message naming file, line and key.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "trigger.h"
#include "util.h"

typedef enum RecursiveProtection {
        RECURSIVE_PROTECTION_AUTO,
        RECURSIVE_PROTECTION_YES,
        RECURSIVE_PROTECTION_NO,
} RecursiveProtection;

/* The varlink socket without --socket, --user or [Daemon] Socket=. */
#define CONFIG_SOCKET_DEFAULT "/run/pressured/io.pressured"
/* [Report] Socket= for the system daemon: where systemd-report looks. */
#define CONFIG_REPORT_SOCKET_DEFAULT "/run/systemd/report/io.pressured"

/* The range and default of [Metrics] MaxCgroups=. */
#define CONFIG_METRICS_MAX_CGROUPS_DEFAULT 1000
#define CONFIG_METRICS_MAX_CGROUPS_MAX 100000

/*
 * [Report]: connections to the report socket at once (systemd's own report
 * sockets take MaxConnectionsPerSource=16), and the metrics of one List:
 * 1024 by default, what systemd-report 260 collects from all sources
 * together; 262 takes up to 16384 from each source.
 */
#define CONFIG_REPORT_MAX_CONNECTIONS_DEFAULT 16
#define CONFIG_REPORT_MAX_CONNECTIONS_MAX 4096
#define CONFIG_REPORT_MAX_METRICS_DEFAULT 1024
#define CONFIG_REPORT_MAX_METRICS_MIN 64
#define CONFIG_REPORT_MAX_METRICS_MAX 16384

/* [Reclaim]: the default and the range of Interval=, and the defaults of the rest. */
#define CONFIG_RECLAIM_INTERVAL_DEFAULT (6 * USEC_PER_SEC)
#define CONFIG_RECLAIM_INTERVAL_MIN (USEC_PER_SEC / 10)
#define CONFIG_RECLAIM_INTERVAL_MAX (3600 * USEC_PER_SEC)
#define CONFIG_RECLAIM_TARGET_DEFAULT_PPM 1000      /* 0.1% */
#define CONFIG_RECLAIM_MAX_STEP_DEFAULT_PPM 10000   /* 1% */
#define CONFIG_RECLAIM_MIN_SIZE_DEFAULT (UINT64_C(100) << 20)

/* [Prekill]: the defaults and ranges of MaxCalls= and MaxWarnings=, the range of Deadline=. */
#define CONFIG_PREKILL_MAX_CALLS_DEFAULT 16
#define CONFIG_PREKILL_MAX_CALLS_MAX 1024
#define CONFIG_PREKILL_MAX_WARNINGS_DEFAULT 4096
#define CONFIG_PREKILL_MAX_WARNINGS_MAX 1000000
#define CONFIG_PREKILL_DEADLINE_MIN (USEC_PER_MSEC)
#define CONFIG_PREKILL_DEADLINE_MAX (3600 * USEC_PER_SEC)

/* The largest [Limits] HistoryEpisodes= accepted. */
#define CONFIG_HISTORY_EPISODES_MAX 1024

/* A [Levels] Margin*=: a percentage of a base (the limit, or MemTotal) or a size. */
typedef struct Margin {
        bool percent;
        uint64_t value;            /* parts per million of the base, or bytes */
} Margin;

/* The largest Margin*= size: 1 PiB. */
#define CONFIG_MARGIN_SIZE_MAX (UINT64_C(1) << 50)

typedef struct Config {
        /* [Daemon] */
        char *socket_path;         /* NULL: built-in default */
        int log_level;             /* syslog priority */
        char *cgroup_root;         /* NULL: auto */
        char *cgroup_v1_root;      /* NULL: auto */

        /* [Levels] */
        PsiTrigger levels[_LEVEL_MAX];
        VmpressureMode vmpressure_mode;
        uint64_t clear_after_usec;  /* episode hold period; 0: two windows of the trigger (2 s for vmpressure) */
        uint32_t clear_ratio_ppm;   /* PSI episodes clear below threshold × this / 1e6 */
        uint64_t step_down_usec;    /* a level stream's level holds this long after its last event (+ the window) */
        Margin margins[_LEVEL_MAX]; /* the headroom to get back to at each level */

        /* [Limits] */
        unsigned max_clients;
        unsigned max_clients_per_user;
        uint64_t max_message_bytes;
        uint64_t output_buffer_bytes;
        unsigned max_registrations;
        uint64_t request_timeout_usec; /* a started message must complete within this */
        uint64_t idle_timeout_usec;    /* a connection with no call in progress is closed after this */
        unsigned history_episodes;     /* cleared episodes kept per registration */

        /* [Protection] */
        uint64_t refresh_usec;
        RecursiveProtection recursive_protection;

        /* [Policy] */
        char *inject_group;        /* NULL: nobody but root; as written (name or GID) */
        gid_t inject_gid;          /* InjectGroup= resolved when loaded; valid if inject_gid_set */
        bool inject_gid_set;       /* false: no group may inject (none set, or the name did not resolve) */
        unsigned max_fast_triggers_per_user; /* fast PSI triggers per uid other than 0 (policy.h) */

        /* [MemoryPressure] */
        char *mp_sockets[_RESOURCE_MAX]; /* Socket=, CpuSocket=, IoSocket=; NULL: built-in default; "": off */

        /* [Metrics] */
        char *metrics_listen;      /* NULL: off */
        char *metrics_cgroups;     /* cgroup_globs_parse() patterns; NULL: no per-cgroup series */
        unsigned metrics_max_cgroups; /* cgroups read per scrape; further matches are only counted */

        /* [Report] (systemd-report's io.systemd.Metrics) */
        char *report_socket;          /* NULL: built-in default (see manager.c); "": off */
        unsigned report_max_connections;
        unsigned report_max_metrics;  /* in one List reply; whole cgroups beyond it are left out */

        /* [Reclaim] (reclaim.h) */
        char *reclaim_cgroups;        /* cgroup_globs_parse() patterns; NULL: the controller is off */
        uint32_t reclaim_target_ppm;  /* memory (and io) some stall target, parts per million of wall time */
        uint64_t reclaim_interval_usec;
        uint32_t reclaim_max_step_ppm; /* of memory.current per interval */
        uint64_t reclaim_min_size;     /* bytes */

        /* [DBus] */
        bool dbus_low_memory_monitor; /* serve org.freedesktop.LowMemoryMonitor on the system bus */

        /* [Prekill] (systemd-oomd's pre-kill hook, server/prekill.h) */
        char *prekill_socket;         /* Socket=; NULL: built-in default (off with --user); "": off */
        uint64_t prekill_deadline_usec; /* Deadline=; 0: systemd-oomd's PrekillHookTimeoutSec= less a margin */
        unsigned prekill_max_calls;   /* Notify calls waiting for their answer at once */
        unsigned prekill_max_warnings; /* warned subscribers waited for at once, over every call */
} Config;

/* config_new_default - a Config holding the embedded defaults. */
Config *config_new_default(void) _warn_unused_result_;
Config *config_free(Config *c);

/*
 * config_load - build a configuration from the embedded defaults and files.
 * @main_path: e.g. /etc/pressured/pressured.conf; a missing file is fine
 * @dropin_dir: e.g. /etc/pressured/pressured.conf.d; missing is fine;
 *              *.conf files inside are read in lexical (strcmp) order
 * @extra_path: --config FILE or NULL; this one must exist
 * @ret: the result
 * @ret_error: on failure, a malloc'ed message "FILE:LINE: [Section] Key=: reason"
 *             (or "FILE: reason" for I/O errors) the caller logs or returns
 *
 * Returns 0 or a negative errno (-EINVAL for content errors).
 */
int config_load(const char *main_path, const char *dropin_dir, const char *extra_path,
                Config **ret, char **ret_error) _warn_unused_result_;

/*
 * config_resolve_inject_group - set inject_gid and inject_gid_set from
 * inject_group: a numeric GID as it is, a group name looked up once, now,
 * with getgrnam_r(), so that Inject never waits on NSS. config_load() calls
 * it. A name that does not resolve is logged as a warning and leaves
 * inject_gid_set false (only root may inject) until a reload finds it.
 * Returns 0 or -ENOMEM.
 */
int config_resolve_inject_group(Config *c) _warn_unused_result_;

/*
 * config_parse_string - apply INI text to @c (for tests and fuzzing); @name
 * is used in errors. Resolves nothing: see config_resolve_inject_group().
 */
int config_parse_string(Config *c, const char *name, const char *text, char **ret_error) _warn_unused_result_;

/* config_format - the configuration as INI text, every key (for --dump-config and tests). */
char *config_format(const Config *c) _warn_unused_result_;

/*
 * config_parse_listen - turn a [Metrics] Listen= value ("127.0.0.1:9100",
 * "[::1]:9100"; numeric addresses, port 1..65535) into a socket address.
 * @ret and @ret_len are optional. Returns 0 or -EINVAL.
 */
int config_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) _warn_unused_result_;

/*
 * config_recursive_protection - whether effective protection is computed
 * recursively: RecursiveProtection=, or with "auto" @mount_recursiveprot,
 * the cgroup2 mount's memory_recursiveprot option.
 */
static inline bool config_recursive_protection(const Config *c, bool mount_recursiveprot) {
        switch (c->recursive_protection) {
        case RECURSIVE_PROTECTION_YES:
                return true;
        case RECURSIVE_PROTECTION_NO:
                return false;
        default:
                return mount_recursiveprot;
        }
}
