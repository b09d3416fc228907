/* SPDX-License-Identifier: MIT */
/*
 * Tests for config.c: defaults, every key and its range, every class of bad
 * value with the exact "FILE:LINE: [Section] Key=: reason" message, INI
 * edge cases of libinih, the file and drop-in order, I/O errors, and the
 * --dump-config round trip.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>

#include "config.h"
#include "fail-inject.h"
#include "policy.h"
#include "tests.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

static char tmpdir[] = "/tmp/test-config-XXXXXX";

static char *tmp_path(const char *name) {
        char *p;

        if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
                abort();
        return p;
}

static void test_defaults(void) {
        _cleanup_(config_freep) Config *c = config_new_default();

        ASSERT_TRUE(c);
        ASSERT_TRUE(c->socket_path == NULL);
        ASSERT_EQ(c->log_level, LOG_INFO);
        ASSERT_TRUE(c->cgroup_root == NULL);
        ASSERT_TRUE(c->cgroup_v1_root == NULL);
        ASSERT_EQ(c->levels[LEVEL_LOW].stall, PSI_STALL_SOME);
        ASSERT_U64_EQ(c->levels[LEVEL_LOW].threshold_us, 70000);
        ASSERT_U64_EQ(c->levels[LEVEL_LOW].window_us, 1000000);
        ASSERT_EQ(c->levels[LEVEL_MEDIUM].stall, PSI_STALL_SOME);
        ASSERT_U64_EQ(c->levels[LEVEL_MEDIUM].threshold_us, 100000);
        ASSERT_U64_EQ(c->levels[LEVEL_MEDIUM].window_us, 1000000);
        ASSERT_EQ(c->levels[LEVEL_CRITICAL].stall, PSI_STALL_FULL);
        /* Distinct from Medium=: a one-task cgroup, whose some and full stall are one, passes through
         * medium before critical (pressured.conf(5), [Levels]). */
        ASSERT_U64_EQ(c->levels[LEVEL_CRITICAL].threshold_us, 300000);
        ASSERT_U64_EQ(c->levels[LEVEL_CRITICAL].window_us, 1000000);
        ASSERT_EQ(c->vmpressure_mode, VMPRESSURE_MODE_HIERARCHY);
        ASSERT_EQ(c->max_clients, 4096);
        ASSERT_EQ(c->max_clients_per_user, 128);
        ASSERT_U64_EQ(c->max_message_bytes, 65536);
        ASSERT_U64_EQ(c->output_buffer_bytes, 262144);
        ASSERT_EQ(c->max_registrations, 1024);
        ASSERT_U64_EQ(c->request_timeout_usec, 10000000);
        ASSERT_U64_EQ(c->idle_timeout_usec, 60000000);
        ASSERT_U64_EQ(c->refresh_usec, 1000000);
        ASSERT_EQ(c->recursive_protection, RECURSIVE_PROTECTION_AUTO);
        ASSERT_TRUE(c->inject_group == NULL);
        ASSERT_TRUE(c->metrics_listen == NULL);
        ASSERT_TRUE(c->reclaim_cgroups == NULL);
        ASSERT_EQ(c->reclaim_target_ppm, 1000);
        ASSERT_U64_EQ(c->reclaim_interval_usec, 6000000);
        ASSERT_EQ(c->reclaim_max_step_ppm, 10000);
        ASSERT_U64_EQ(c->reclaim_min_size, UINT64_C(100) << 20);
        ASSERT_TRUE(c->prekill_socket == NULL);
        ASSERT_U64_EQ(c->prekill_deadline_usec, 0);
        ASSERT_EQ(c->prekill_max_calls, 16);
        ASSERT_EQ(c->prekill_max_warnings, 4096);
        ASSERT_TRUE(config_free(NULL) == NULL);
}

static void test_all_keys(void) {
        _cleanup_(config_freep) Config *c = config_new_default();
        char *error = NULL;

        ASSERT_OK(config_parse_string(c, "all.conf",
                "# comment\n"
                "; another comment\n"
                "[Daemon]\n"
                "Socket=/run/test/io.pressured\n"
                "LogLevel=debug\n"
                "CgroupRoot=/tmp/fake cgroup\n"
                "CgroupV1Root=/sys/fs/cgroup/memory\n"
                "\n"
                "[Levels]\n"
                "Low=some 50ms 2s\n"
                "Medium = full 150000 1.5s\n"
                "Critical=full 1s 10s\n"
                "VmpressureMode=local\n"
                "[Limits]\n"
                "MaxClients=1\n"
                "MaxClientsPerUser=1000000\n"
                "MaxMessageBytes=1K\n"
                "OutputBufferBytes=1G\n"
                "MaxRegistrations=77\n"
                "RequestTimeoutSec=0.5\n"
                "IdleTimeoutSec=2min\n"
                "[Protection]\n"
                "RefreshSec=250ms\n"
                "RecursiveProtection=yes\n"
                "[Policy]\n"
                "InjectGroup=pressure-inject\n"
                "[Metrics]\n"
                "Listen=[::1]:9100\n"
                "[Prekill]\n"
                "Socket=/run/test/prekill\n"
                "Deadline=1.5s\n"
                "MaxCalls=3\n"
                "MaxWarnings=9\n", &error));
        ASSERT_TRUE(error == NULL);
        ASSERT_STREQ(c->socket_path, "/run/test/io.pressured");
        ASSERT_EQ(c->log_level, LOG_DEBUG);
        ASSERT_STREQ(c->cgroup_root, "/tmp/fake cgroup");
        ASSERT_STREQ(c->cgroup_v1_root, "/sys/fs/cgroup/memory");
        ASSERT_U64_EQ(c->levels[LEVEL_LOW].threshold_us, 50000);
        ASSERT_U64_EQ(c->levels[LEVEL_LOW].window_us, 2000000);
        ASSERT_EQ(c->levels[LEVEL_MEDIUM].stall, PSI_STALL_FULL);
        ASSERT_U64_EQ(c->levels[LEVEL_MEDIUM].threshold_us, 150000);
        ASSERT_U64_EQ(c->levels[LEVEL_MEDIUM].window_us, 1500000);
        ASSERT_U64_EQ(c->levels[LEVEL_CRITICAL].window_us, 10000000);
        ASSERT_EQ(c->vmpressure_mode, VMPRESSURE_MODE_LOCAL);
        ASSERT_EQ(c->max_clients, 1);
        ASSERT_EQ(c->max_clients_per_user, 1000000);
        ASSERT_U64_EQ(c->max_message_bytes, 1024);
        ASSERT_U64_EQ(c->output_buffer_bytes, UINT64_C(1073741824));
        ASSERT_EQ(c->max_registrations, 77);
        ASSERT_U64_EQ(c->request_timeout_usec, 500000);
        ASSERT_U64_EQ(c->idle_timeout_usec, 120000000);
        ASSERT_U64_EQ(c->refresh_usec, 250000);
        ASSERT_EQ(c->recursive_protection, RECURSIVE_PROTECTION_YES);
        ASSERT_STREQ(c->inject_group, "pressure-inject");
        ASSERT_STREQ(c->metrics_listen, "[::1]:9100");
        ASSERT_STREQ(c->prekill_socket, "/run/test/prekill");
        ASSERT_U64_EQ(c->prekill_deadline_usec, 1500000);
        ASSERT_EQ(c->prekill_max_calls, 3);
        ASSERT_EQ(c->prekill_max_warnings, 9);
}

/* @n copies of @c. */
static char *repeat(char c, size_t n) {
        char *s = malloc(n + 1);

        ASSERT_TRUE(s);
        memset(s, c, n);
        s[n] = 0;
        return s;
}

/* Cgroups= at its longest: 64 patterns of 32 components of 255 bytes. */
static char *longest_globs(void) {
        _cleanup_free_ char *component = repeat('c', 255);
        size_t size = 64 * (32 * 256 + 1) + 1;
        char *s = malloc(size), *p = s;

        ASSERT_TRUE(s);
        for (int i = 0; i < 64; i++) {
                for (int j = 0; j < 32; j++)
                        p += sprintf(p, "/%s", component);
                *p++ = i < 63 ? ' ' : 0;
        }
        return s;
}

/*
 * The longest valid value of every key, each on one line, is taken, and
 * --dump-config's text shows the strings as they were given.
 */
static void test_longest_values(void) {
        _cleanup_free_ char *socket = repeat('s', 107), *path = repeat('p', 4095), *globs = longest_globs(),
                            *text = NULL, *formatted = NULL, *error = NULL;
        _cleanup_(config_freep) Config *c = config_new_default();
        const struct {
                const char *section, *key, *value;
                bool shown;             /* the dump shows the value as written */
        } keys[] = {
                { "Daemon", "Socket", socket, true },
                { "Daemon", "LogLevel", "warning", true },
                { "Daemon", "CgroupRoot", path, true },
                { "Daemon", "CgroupV1Root", path, true },
                { "Levels", "Low", "some 9999999us 10000000us", false },
                { "Levels", "Medium", "some 9999999us 10000000us", false },
                { "Levels", "Critical", "full 9999999us 10000000us", false },
                { "Levels", "VmpressureMode", "hierarchy", true },
                { "Levels", "ClearAfterSec", "3600s", false },
                { "Levels", "ClearRatio", "0.999999", false },
                { "Levels", "MarginLow", "100%", true },
                { "Levels", "MarginMedium", "1048576G", true },
                { "Levels", "MarginCritical", "1125899906842624", false },
                { "Limits", "MaxClients", "1000000", true },
                { "Limits", "MaxClientsPerUser", "1000000", true },
                { "Limits", "MaxMessageBytes", "16777216", false },
                { "Limits", "OutputBufferBytes", "1073741824", false },
                { "Limits", "MaxRegistrations", "1000000", true },
                { "Limits", "RequestTimeoutSec", "3600s", false },
                { "Limits", "IdleTimeoutSec", "86400s", false },
                { "Limits", "HistoryEpisodes", "1024", false },
                { "Protection", "RefreshSec", "3600s", false },
                { "Protection", "RecursiveProtection", "auto", true },
                { "Policy", "InjectGroup", "g2345678901234567890123456789012", true },
                { "Policy", "MaxFastTriggersPerUser", "1024", false },
                { "MemoryPressure", "Socket", socket, true },
                { "MemoryPressure", "CpuSocket", socket, true },
                { "MemoryPressure", "IoSocket", socket, true },
                { "Metrics", "Listen", "[1234:5678:9abc:def0:1234:5678:255.255.255.255]:65535", true },
                { "Metrics", "Cgroups", globs, true },
                { "Metrics", "MaxCgroups", "100000", false },
                { "Reclaim", "Cgroups", globs, true },
                { "Reclaim", "TargetStall", "100%", false },
                { "Reclaim", "Interval", "3600s", false },
                { "Reclaim", "MaxStep", "100%", false },
                { "Reclaim", "MinSize", "1125899906842624", false },
                { "DBus", "LowMemoryMonitor", "yes", true },
                { "Prekill", "Socket", socket, true },
                { "Prekill", "Deadline", "3600s", false },
                { "Prekill", "MaxCalls", "1024", true },
                { "Prekill", "MaxWarnings", "1000000", true },
        };

        socket[0] = path[0] = '/';
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                free(text);
                ASSERT_TRUE(asprintf(&text, "[%s]\n%s=%s\n", keys[i].section, keys[i].key, keys[i].value) > 0);
                if (config_parse_string(c, "longest.conf", text, &error) < 0)
                        TEST_FAIL("[%s] %s= at its longest (%zu bytes): %s", keys[i].section, keys[i].key,
                                  strlen(keys[i].value), strna(error));
                free(formatted);
                formatted = config_format(c);
                ASSERT_TRUE(formatted);
                free(text);
                ASSERT_TRUE(asprintf(&text, "\n%s=%s\n", keys[i].key, keys[i].value) > 0);
                if (keys[i].shown && !strstr(formatted, text))
                        TEST_FAIL("the dump does not show [%s] %s= as given", keys[i].section, keys[i].key);
        }
        /* One byte more is refused for the value, not for the line. */
        free(text);
        ASSERT_TRUE(asprintf(&text, "[Daemon]\nCgroupRoot=%sp\n", path) > 0);
        ASSERT_ERR(config_parse_string(c, "longest.conf", text, &error), EINVAL);
        ASSERT_STREQ(error, "longest.conf:2: [Daemon] CgroupRoot=: path too long");
        free(error);
        error = NULL;
        free(text);
        ASSERT_TRUE(asprintf(&text, "[Metrics]\nCgroups=%s /x\n", globs) > 0);
        ASSERT_ERR(config_parse_string(c, "longest.conf", text, &error), EINVAL);
        ASSERT_TRUE(strstr(error, "longest.conf:2: [Metrics] Cgroups=: at most 64 patterns are allowed"));
}

static void test_value_forms(void) {
        _cleanup_(config_freep) Config *c = config_new_default();

        ASSERT_OK(config_parse_string(c, "x", "[Limits]\nMaxMessageBytes=16M\nOutputBufferBytes=4096\n", NULL));
        ASSERT_U64_EQ(c->max_message_bytes, 16 * 1024 * 1024);
        ASSERT_U64_EQ(c->output_buffer_bytes, 4096);
        ASSERT_OK(config_parse_string(c, "x", "[Limits]\nMaxMessageBytes=2048B\nOutputBufferBytes=8KiB\n", NULL));
        ASSERT_U64_EQ(c->max_message_bytes, 2048);
        ASSERT_U64_EQ(c->output_buffer_bytes, 8192);
        ASSERT_OK(config_parse_string(c, "x", "[Limits]\nOutputBufferBytes=2MiB\n", NULL));
        ASSERT_U64_EQ(c->output_buffer_bytes, 2 * 1024 * 1024);

        ASSERT_OK(config_parse_string(c, "x", "[Protection]\nRefreshSec=0.1\n", NULL));
        ASSERT_U64_EQ(c->refresh_usec, 100000);
        ASSERT_OK(config_parse_string(c, "x", "[Protection]\nRefreshSec=3600\n", NULL));
        ASSERT_U64_EQ(c->refresh_usec, UINT64_C(3600000000));
        ASSERT_OK(config_parse_string(c, "x", "[Protection]\nRefreshSec=1.5s\n", NULL));
        ASSERT_U64_EQ(c->refresh_usec, 1500000);

        for (const char *const *v = (const char *const[]) { "yes", "true", "on", "1", NULL }; *v; v++) {
                char text[64];

                c->recursive_protection = RECURSIVE_PROTECTION_AUTO;
                snprintf(text, sizeof(text), "[Protection]\nRecursiveProtection=%s\n", *v);
                ASSERT_OK(config_parse_string(c, "x", text, NULL));
                ASSERT_EQ(c->recursive_protection, RECURSIVE_PROTECTION_YES);
        }
        for (const char *const *v = (const char *const[]) { "no", "false", "off", "0", NULL }; *v; v++) {
                char text[64];

                c->recursive_protection = RECURSIVE_PROTECTION_AUTO;
                snprintf(text, sizeof(text), "[Protection]\nRecursiveProtection=%s\n", *v);
                ASSERT_OK(config_parse_string(c, "x", text, NULL));
                ASSERT_EQ(c->recursive_protection, RECURSIVE_PROTECTION_NO);
        }
        ASSERT_OK(config_parse_string(c, "x", "[Protection]\nRecursiveProtection=auto\n", NULL));
        ASSERT_EQ(c->recursive_protection, RECURSIVE_PROTECTION_AUTO);

        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nLogLevel=warning\n", NULL));
        ASSERT_EQ(c->log_level, LOG_WARNING);
        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nLogLevel=err\n", NULL));
        ASSERT_EQ(c->log_level, LOG_ERR);
        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nLogLevel=notice\n", NULL));
        ASSERT_EQ(c->log_level, LOG_NOTICE);

        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nCgroupRoot=/a\nCgroupV1Root=/b\n", NULL));
        ASSERT_STREQ(c->cgroup_root, "/a");
        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nCgroupRoot=auto\nCgroupV1Root=\n", NULL));
        ASSERT_TRUE(c->cgroup_root == NULL);
        ASSERT_TRUE(c->cgroup_v1_root == NULL);

        ASSERT_OK(config_parse_string(c, "x", "[Policy]\nInjectGroup=1234\n", NULL));
        ASSERT_EQ(c->max_fast_triggers_per_user, POLICY_MAX_FAST_TRIGGERS_DEFAULT);
        ASSERT_OK(config_parse_string(c, "x", "[Policy]\nMaxFastTriggersPerUser=0\n", NULL));
        ASSERT_EQ(c->max_fast_triggers_per_user, 0);
        ASSERT_OK(config_parse_string(c, "x", "[Policy]\nMaxFastTriggersPerUser=1000000\n", NULL));
        ASSERT_EQ(c->max_fast_triggers_per_user, 1000000);
        /* An empty assignment restores the default. */
        ASSERT_OK(config_parse_string(c, "x", "[Policy]\nMaxFastTriggersPerUser=\n", NULL));
        ASSERT_EQ(c->max_fast_triggers_per_user, POLICY_MAX_FAST_TRIGGERS_DEFAULT);
        ASSERT_STREQ(c->inject_group, "1234");
        ASSERT_OK(config_parse_string(c, "x", "[Metrics]\nListen=127.0.0.1:9100\n", NULL));
        ASSERT_STREQ(c->metrics_listen, "127.0.0.1:9100");

        /* [Metrics] Cgroups= is kept as written; empty turns it off again. */
        ASSERT_TRUE(c->metrics_cgroups == NULL);
        ASSERT_EQ(c->metrics_max_cgroups, 1000u);
        ASSERT_OK(config_parse_string(c, "x", "[Metrics]\nCgroups=/system.slice/*.service  /\nMaxCgroups=100000\n",
                                      NULL));
        ASSERT_STREQ(c->metrics_cgroups, "/system.slice/*.service  /");
        ASSERT_EQ(c->metrics_max_cgroups, 100000u);
        ASSERT_OK(config_parse_string(c, "x", "[Metrics]\nCgroups=\nMaxCgroups=1\n", NULL));
        ASSERT_TRUE(c->metrics_cgroups == NULL);
        ASSERT_EQ(c->metrics_max_cgroups, 1u);

        /* [Report]: a socket, "" off, "auto" the default; the two limits in their ranges. */
        ASSERT_TRUE(c->report_socket == NULL);
        ASSERT_EQ(c->report_max_connections, CONFIG_REPORT_MAX_CONNECTIONS_DEFAULT);
        ASSERT_EQ(c->report_max_metrics, CONFIG_REPORT_MAX_METRICS_DEFAULT);
        ASSERT_OK(config_parse_string(c, "x", "[Report]\nSocket=/run/x/io.pressured\nMaxConnections=1\n"
                                      "MaxMetrics=16384\n", NULL));
        ASSERT_STREQ(c->report_socket, "/run/x/io.pressured");
        ASSERT_EQ(c->report_max_connections, 1u);
        ASSERT_EQ(c->report_max_metrics, 16384u);
        ASSERT_OK(config_parse_string(c, "x", "[Report]\nSocket=\nMaxMetrics=64\n", NULL));
        ASSERT_STREQ(c->report_socket, "");
        ASSERT_EQ(c->report_max_metrics, 64u);
        ASSERT_OK(config_parse_string(c, "x", "[Report]\nSocket=auto\nMaxConnections=\nMaxMetrics=\n", NULL));
        ASSERT_TRUE(c->report_socket == NULL);
        ASSERT_EQ(c->report_max_connections, CONFIG_REPORT_MAX_CONNECTIONS_DEFAULT);
        ASSERT_EQ(c->report_max_metrics, CONFIG_REPORT_MAX_METRICS_DEFAULT);

        /* [Reclaim]: globs kept as written, percentages, a duration, a size; empty restores the default. */
        ASSERT_OK(config_parse_string(c, "x", "[Reclaim]\nCgroups=/system.slice/*.service /user.slice\n"
                                      "TargetStall=0.25%\nInterval=500ms\nMaxStep=2.5%\nMinSize=1G\n", NULL));
        ASSERT_STREQ(c->reclaim_cgroups, "/system.slice/*.service /user.slice");
        ASSERT_EQ(c->reclaim_target_ppm, 2500);
        ASSERT_U64_EQ(c->reclaim_interval_usec, 500000);
        ASSERT_EQ(c->reclaim_max_step_ppm, 25000);
        ASSERT_U64_EQ(c->reclaim_min_size, UINT64_C(1) << 30);
        ASSERT_OK(config_parse_string(c, "x", "[Reclaim]\nTargetStall=0.0001%\nMaxStep=100%\nMinSize=0\n"
                                      "Interval=0.1\n", NULL));
        ASSERT_EQ(c->reclaim_target_ppm, 1);
        ASSERT_EQ(c->reclaim_max_step_ppm, 1000000);
        ASSERT_U64_EQ(c->reclaim_min_size, 0);
        ASSERT_U64_EQ(c->reclaim_interval_usec, 100000);
        ASSERT_OK(config_parse_string(c, "x", "[Reclaim]\nCgroups=\nTargetStall=\nInterval=\nMaxStep=\nMinSize=\n",
                                      NULL));
        ASSERT_TRUE(c->reclaim_cgroups == NULL);
        ASSERT_EQ(c->reclaim_target_ppm, 1000);
        ASSERT_U64_EQ(c->reclaim_interval_usec, 6000000);
        ASSERT_EQ(c->reclaim_max_step_ppm, 10000);
        ASSERT_U64_EQ(c->reclaim_min_size, UINT64_C(100) << 20);

        /* [MemoryPressure] Socket=, CpuSocket=, IoSocket=: a path, empty for off, "auto" for the default. */
        for (Resource r = 0; r < _RESOURCE_MAX; r++) {
                static const char *const keys[_RESOURCE_MAX] = { "Socket", "CpuSocket", "IoSocket" };
                _cleanup_free_ char *text = NULL;

                ASSERT_TRUE(c->mp_sockets[r] == NULL);
                ASSERT_TRUE(asprintf(&text, "[MemoryPressure]\n%s=/run/x/mp\n", keys[r]) > 0);
                ASSERT_OK(config_parse_string(c, "x", text, NULL));
                ASSERT_STREQ(c->mp_sockets[r], "/run/x/mp");
                for (Resource o = 0; o < _RESOURCE_MAX; o++)
                        if (o != r)
                                ASSERT_TRUE(c->mp_sockets[o] == NULL);
                free(text);
                ASSERT_TRUE(asprintf(&text, "[MemoryPressure]\n%s=\n", keys[r]) > 0);
                ASSERT_OK(config_parse_string(c, "x", text, NULL));
                ASSERT_STREQ(c->mp_sockets[r], "");
                free(text);
                ASSERT_TRUE(asprintf(&text, "[MemoryPressure]\n%s=auto\n", keys[r]) > 0);
                ASSERT_OK(config_parse_string(c, "x", text, NULL));
                ASSERT_TRUE(c->mp_sockets[r] == NULL);
                free(text);
                /* A relative path is refused, naming the key. */
                ASSERT_TRUE(asprintf(&text, "[MemoryPressure]\n%s=run/x\n", keys[r]) > 0);
                ASSERT_ERR(config_parse_string(c, "x", text, NULL), EINVAL);
        }
}

/* [Levels] Margin*=: a percentage or a size, each formatted back as given; empty restores the default. */
static void test_margins(void) {
        _cleanup_(config_freep) Config *c = config_new_default();
        _cleanup_free_ char *text = NULL;

        ASSERT_TRUE(c->margins[LEVEL_LOW].percent && c->margins[LEVEL_LOW].value == 50000);
        ASSERT_TRUE(c->margins[LEVEL_MEDIUM].percent && c->margins[LEVEL_MEDIUM].value == 100000);
        ASSERT_TRUE(c->margins[LEVEL_CRITICAL].percent && c->margins[LEVEL_CRITICAL].value == 200000);
        ASSERT_OK(config_parse_string(c, "x", "[Levels]\nMarginLow=0%\nMarginMedium=512M\nMarginCritical=12.5%\n",
                                      NULL));
        ASSERT_TRUE(c->margins[LEVEL_LOW].percent && c->margins[LEVEL_LOW].value == 0);
        ASSERT_TRUE(!c->margins[LEVEL_MEDIUM].percent);
        ASSERT_U64_EQ(c->margins[LEVEL_MEDIUM].value, UINT64_C(512) << 20);
        ASSERT_TRUE(c->margins[LEVEL_CRITICAL].percent && c->margins[LEVEL_CRITICAL].value == 125000);
        text = config_format(c);
        ASSERT_TRUE(text);
        ASSERT_TRUE(strstr(text, "MarginLow=0%\nMarginMedium=512M\nMarginCritical=12.5%\n"));
        ASSERT_OK(config_parse_string(c, "x", "[Levels]\nMarginLow=0\nMarginCritical=1500\n", NULL));
        ASSERT_TRUE(!c->margins[LEVEL_LOW].percent && c->margins[LEVEL_LOW].value == 0);
        ASSERT_TRUE(!c->margins[LEVEL_CRITICAL].percent && c->margins[LEVEL_CRITICAL].value == 1500);
        ASSERT_OK(config_parse_string(c, "x", "[Levels]\nMarginLow=\nMarginMedium=\nMarginCritical=\n", NULL));
        ASSERT_TRUE(c->margins[LEVEL_LOW].percent && c->margins[LEVEL_LOW].value == 50000);
        ASSERT_TRUE(c->margins[LEVEL_MEDIUM].percent && c->margins[LEVEL_MEDIUM].value == 100000);
        ASSERT_TRUE(c->margins[LEVEL_CRITICAL].percent && c->margins[LEVEL_CRITICAL].value == 200000);
}

static void test_listen_address(void) {
        struct sockaddr_storage ss;
        socklen_t len = 0;

        ASSERT_OK(config_parse_listen("127.0.0.1:9100", &ss, &len));
        ASSERT_EQ(ss.ss_family, AF_INET);
        ASSERT_EQ(len, sizeof(struct sockaddr_in));
        ASSERT_EQ(ntohs(((struct sockaddr_in *) &ss)->sin_port), 9100);
        ASSERT_EQ(ntohl(((struct sockaddr_in *) &ss)->sin_addr.s_addr), 0x7f000001);
        ASSERT_OK(config_parse_listen("[::]:65535", &ss, &len));
        ASSERT_EQ(ss.ss_family, AF_INET6);
        ASSERT_EQ(len, sizeof(struct sockaddr_in6));
        ASSERT_EQ(ntohs(((struct sockaddr_in6 *) &ss)->sin6_port), 65535);
        ASSERT_OK(config_parse_listen("0.0.0.0:1", NULL, NULL));

        len = 99;
        ASSERT_ERR(config_parse_listen("127.0.0.1", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("127.0.0.1:0", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("127.0.0.1:65536", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("127.0.0.1:-1", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("127.0.0.1:", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen(":9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("::1:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("[::1]9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("[::1:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("[127.0.0.1]:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("[]:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("256.0.0.1:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("localhost:9100", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen("127.0.0.1:9100x", &ss, &len), EINVAL);
        ASSERT_ERR(config_parse_listen(NULL, &ss, &len), EINVAL);
        ASSERT_EQ(len, 99);
}

/* Parse @text into a fresh configuration, expect failure with exactly @message. */
static void check_error(const char *text, const char *message) {
        _cleanup_(config_freep) Config *c = config_new_default();
        _cleanup_free_ char *error = NULL;
        int r;

        r = config_parse_string(c, "/etc/pressured/pressured.conf", text, &error);
        if (r != -EINVAL)
                TEST_FAIL("config \"%s\": expected -EINVAL, got %d (%s)", text, r, strna(error));
        ASSERT_STREQ(error, message);
}

#define F "/etc/pressured/pressured.conf:"

static void test_errors(void) {
        /* The example from the contract, with the line number counted from 1. */
        check_error("# header\n\n[Limits]\nMaxClients=2\n\n\n\n\n\n\n\nMaxClients=0\n",
                    F "12: [Limits] MaxClients=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxClients=1000001\n", F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxClients=-1\n", F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxClients=12x\n", F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxClients=99999999999999999999999\n",
                    F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxClientsPerUser=0\n",
                    F "2: [Limits] MaxClientsPerUser=: must be a number between 1 and 1000000");
        check_error("[Limits]\nMaxRegistrations=1.5\n",
                    F "2: [Limits] MaxRegistrations=: must be a number between 1 and 1000000");

        /* Unknown section, unknown key, key before any section, syntax errors. */
        check_error("[Daemon]\nLogLevel=info\n[Deamon]\nLogLevel=info\n", F "4: [Deamon] LogLevel=: unknown section");
        check_error("[Daemon]\nLoglevel=info\n", F "2: [Daemon] Loglevel=: unknown key");
        check_error("[Daemon]\nMaxClients=5\n", F "2: [Daemon] MaxClients=: unknown key");
        check_error("LogLevel=info\n", F "1: LogLevel=: assignment before any [Section] header");
        check_error("[Daemon]\nLogLevel info\n", F "2: syntax error, expected [Section] or Key=Value");
        check_error("[Daemon\nLogLevel=info\n", F "1: syntax error, expected [Section] or Key=Value");
        check_error("[Daemon]\n=info\n", F "2: [Daemon] =: unknown key");
        /* A syntax error before a bad value is the one reported; and the other way round. */
        check_error("[Limits]\nbroken\nMaxClients=0\n", F "2: syntax error, expected [Section] or Key=Value");
        check_error("[Limits]\nMaxClients=0\nbroken\n",
                    F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        /* Section names are case sensitive, as in systemd. */
        check_error("[daemon]\nLogLevel=info\n", F "2: [daemon] LogLevel=: unknown section");

        /* Every bad-value class. */
        check_error("[Daemon]\nSocket=relative/path\n", F "2: [Daemon] Socket=: must be an absolute path");
        check_error("[Daemon]\nSocket=/run/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
                    F "2: [Daemon] Socket=: socket path must be shorter than 108 bytes");
        check_error("[Daemon]\nLogLevel=verbose\n",
                    F "2: [Daemon] LogLevel=: must be one of debug, info, notice, warning, err (or 0..7)");
        check_error("[Daemon]\nCgroupRoot=sys/fs/cgroup\n",
                    F "2: [Daemon] CgroupRoot=: must be an absolute path or \"auto\"");
        check_error("[Daemon]\nCgroupV1Root=Auto\n",
                    F "2: [Daemon] CgroupV1Root=: must be an absolute path or \"auto\"");
        check_error("[Levels]\nLow=some 70ms\n",
                    F "2: [Levels] Low=: must be STALL THRESHOLD WINDOW, e.g. \"some 100ms 1s\" "
                    "(STALL some or full, units us, ms, s)");
        check_error("[Levels]\nLow=sometimes 70ms 1s\n",
                    F "2: [Levels] Low=: must be STALL THRESHOLD WINDOW, e.g. \"some 100ms 1s\" "
                    "(STALL some or full, units us, ms, s)");
        check_error("[Levels]\nMedium=some 70ms 11s\n", F "2: [Levels] Medium=: window must be between 500ms and 10s");
        check_error("[Levels]\nMedium=some 70ms 499ms\n", F "2: [Levels] Medium=: window must be between 500ms and 10s");
        check_error("[Levels]\nCritical=full 2s 1s\n", F "2: [Levels] Critical=: threshold must not exceed the window");
        check_error("[Levels]\nCritical=full 0 1s\n", F "2: [Levels] Critical=: threshold must be greater than 0");
        check_error("[Levels]\nVmpressureMode=global\n",
                    F "2: [Levels] VmpressureMode=: must be default, hierarchy or local");
        /* Episodes: the ratio is a fraction in (0, 1], the hold at most an hour, the ring bounded. */
        check_error("[Levels]\nClearRatio=0\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearRatio=1.5\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearRatio=50%\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearRatio=0.0000001\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearRatio=-0.5\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearRatio=.\n",
                    F "2: [Levels] ClearRatio=: must be a decimal fraction between 0.000001 and 1");
        check_error("[Levels]\nClearAfterSec=3601\n",
                    F "2: [Levels] ClearAfterSec=: must be between 0 and 3600 seconds");
        check_error("[Levels]\nClearAfterSec=soon\n",
                    F "2: [Levels] ClearAfterSec=: must be between 0 and 3600 seconds");
        check_error("[Limits]\nHistoryEpisodes=1025\n",
                    F "2: [Limits] HistoryEpisodes=: must be a number between 0 and 1024");
        check_error("[Limits]\nHistoryEpisodes=-1\n",
                    F "2: [Limits] HistoryEpisodes=: must be a number between 0 and 1024");
        check_error("[Limits]\nMaxMessageBytes=1023\n",
                    F "2: [Limits] MaxMessageBytes=: must be a size between 1K and 16M (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nMaxMessageBytes=17M\n",
                    F "2: [Limits] MaxMessageBytes=: must be a size between 1K and 16M (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nOutputBufferBytes=2T\n",
                    F "2: [Limits] OutputBufferBytes=: must be a size between 4K and 1G (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nOutputBufferBytes=99999999999999999999G\n",
                    F "2: [Limits] OutputBufferBytes=: must be a size between 4K and 1G (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nOutputBufferBytes=18014398509481984G\n",
                    F "2: [Limits] OutputBufferBytes=: must be a size between 4K and 1G (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nOutputBufferBytes=1.5M\n",
                    F "2: [Limits] OutputBufferBytes=: must be a size between 4K and 1G (bytes, or with suffix K, M, G)");
        check_error("[Limits]\nRequestTimeoutSec=0\n",
                    F "2: [Limits] RequestTimeoutSec=: must be between 0.1 and 3600 seconds");
        check_error("[Limits]\nIdleTimeoutSec=0.5\n",
                    F "2: [Limits] IdleTimeoutSec=: must be between 1 and 86400 seconds");
        check_error("[Protection]\nRefreshSec=0.09\n", F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRefreshSec=3601\n", F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRefreshSec=61min\n", F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRefreshSec=-1\n", F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRefreshSec=1 s\n", F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRefreshSec=99999999999999999999999999999\n",
                    F "2: [Protection] RefreshSec=: must be between 0.1 and 3600 seconds");
        check_error("[Protection]\nRecursiveProtection=maybe\n",
                    F "2: [Protection] RecursiveProtection=: must be yes, no or auto");
        check_error("[DBus]\nLowMemoryMonitor=auto\n", F "2: [DBus] LowMemoryMonitor=: must be yes or no");
        check_error("[Prekill]\nSocket=relative\n", F "2: [Prekill] Socket=: must be an absolute path");
        check_error("[Prekill]\nDeadline=0\n", F "2: [Prekill] Deadline=: must be between 0.001 and 3600 seconds");
        check_error("# x\n[Prekill]\nDeadline=2 s\n", F "3: [Prekill] Deadline=: must be between 0.001 and 3600 seconds");
        check_error("[Prekill]\nDeadline=3601\n", F "2: [Prekill] Deadline=: must be between 0.001 and 3600 seconds");
        check_error("[Prekill]\nMaxCalls=0\n", F "2: [Prekill] MaxCalls=: must be a number between 1 and 1024");
        check_error("[Prekill]\nMaxWarnings=1000001\n",
                    F "2: [Prekill] MaxWarnings=: must be a number between 1 and 1000000");
        check_error("[Prekill]\nHookTimeout=1s\n", F "2: [Prekill] HookTimeout=: unknown key");
        check_error("[Policy]\nMaxFastTriggersPerUser=-1\n",
                    F "2: [Policy] MaxFastTriggersPerUser=: must be a number between 0 and 1000000");
        check_error("[Policy]\nMaxFastTriggersPerUser=1000001\n",
                    F "2: [Policy] MaxFastTriggersPerUser=: must be a number between 0 and 1000000");
        check_error("[Policy]\nMaxFastTriggersPerUser=four\n",
                    F "2: [Policy] MaxFastTriggersPerUser=: must be a number between 0 and 1000000");
        check_error("[Report]\nMaxMetrics=63\n", F "2: [Report] MaxMetrics=: must be a number between 64 and 16384");
        check_error("[Report]\nMaxMetrics=16385\n", F "2: [Report] MaxMetrics=: must be a number between 64 and 16384");
        check_error("[Report]\nMaxConnections=0\n",
                    F "2: [Report] MaxConnections=: must be a number between 1 and 4096");
        check_error("[Report]\nSocket=relative\n", F "2: [Report] Socket=: must be an absolute path");
        check_error("[Metrics]\nMaxCgroups=0\n", F "2: [Metrics] MaxCgroups=: must be a number between 1 and 100000");
        check_error("[Metrics]\nMaxCgroups=100001\n",
                    F "2: [Metrics] MaxCgroups=: must be a number between 1 and 100000");
        check_error("[Metrics]\nCgroups=/system.slice/*.service user.slice\n",
                    F "2: [Metrics] Cgroups=: a pattern must start with / "
                    "(expected space-separated absolute cgroup path globs)");
        check_error("[Metrics]\nCgroups=/a/../b\n",
                    F "2: [Metrics] Cgroups=: a pattern must not contain . or .. components "
                    "(expected space-separated absolute cgroup path globs)");
        check_error("[Reclaim]\nCgroups=system.slice\n",
                    F "2: [Reclaim] Cgroups=: a pattern must start with / "
                    "(expected space-separated absolute cgroup path globs)");
        check_error("[Reclaim]\nTargetStall=0.1\n",
                    F "2: [Reclaim] TargetStall=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nTargetStall=0%\n",
                    F "2: [Reclaim] TargetStall=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
#define MARGIN_ERROR "must be a percentage between 0% and 100%, e.g. \"10%\", " \
                     "or a size of at most 1048576G (bytes, or with suffix K, M, G)"
        check_error("[Levels]\nMarginLow=101%\n", F "2: [Levels] MarginLow=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginMedium=-1%\n", F "2: [Levels] MarginMedium=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginCritical=1048577G\n", F "2: [Levels] MarginCritical=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginCritical=1125899906842625\n", F "2: [Levels] MarginCritical=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginLow=lots\n", F "2: [Levels] MarginLow=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginLow=%\n", F "2: [Levels] MarginLow=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginLow=10%M\n", F "2: [Levels] MarginLow=: " MARGIN_ERROR);
        check_error("[Levels]\nMarginLow=18446744073709551616\n", F "2: [Levels] MarginLow=: " MARGIN_ERROR);
#undef MARGIN_ERROR
        check_error("[Reclaim]\nMaxStep=101%\n",
                    F "2: [Reclaim] MaxStep=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nMaxStep=0.00001%\n",
                    F "2: [Reclaim] MaxStep=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nMaxStep=1.%\n",
                    F "2: [Reclaim] MaxStep=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nMaxStep=%\n",
                    F "2: [Reclaim] MaxStep=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nMaxStep=1%%\n",
                    F "2: [Reclaim] MaxStep=: must be a percentage between 0.0001% and 100%, e.g. \"0.1%\"");
        check_error("[Reclaim]\nInterval=50ms\n", F "2: [Reclaim] Interval=: must be between 0.1 and 3600 seconds");
        check_error("[Reclaim]\nMinSize=2000000G\n",
                    F "2: [Reclaim] MinSize=: must be a size between 0 and 1048576G (bytes, or with suffix K, M, G)");
        check_error("[Policy]\nInjectGroup=bad group\n", F "2: [Policy] InjectGroup=: must be a group name or a numeric GID");
        check_error("[Policy]\nInjectGroup=-wheel\n", F "2: [Policy] InjectGroup=: must be a group name or a numeric GID");
        check_error("[Policy]\nInjectGroup=4294967295\n", F "2: [Policy] InjectGroup=: must be a group name or a numeric GID");
        check_error("[Metrics]\nListen=localhost\n",
                    F "2: [Metrics] Listen=: must be ADDRESS:PORT with a numeric IPv4 address or [IPv6] address "
                    "and a port between 1 and 65535");
        check_error("[Metrics]\nListen=127.0.0.1:0\n",
                    F "2: [Metrics] Listen=: must be ADDRESS:PORT with a numeric IPv4 address or [IPv6] address "
                    "and a port between 1 and 65535");
}

static void test_ini_edge_cases(void) {
        _cleanup_(config_freep) Config *c = config_new_default();
        _cleanup_free_ char *long_line = NULL, *error = NULL;
        size_t n = 0;

        /* Indentation is not a continuation: both lines are ordinary assignments. */
        ASSERT_OK(config_parse_string(c, "x", "[Limits]\n    MaxClients=7\n\tMaxClientsPerUser=3\n", NULL));
        ASSERT_EQ(c->max_clients, 7);
        ASSERT_EQ(c->max_clients_per_user, 3);
        /* Spaces around '=', CRLF line ends, a UTF-8 BOM, "#" and ";" comments, an inline " ;" comment. */
        ASSERT_OK(config_parse_string(c, "x", "\xef\xbb\xbf[Limits]\r\nMaxClients  =  9 \r\n# x=y\r\n"
                                      "; a=b\r\nMaxClientsPerUser=4 ; four\r\n", NULL));
        ASSERT_EQ(c->max_clients, 9);
        ASSERT_EQ(c->max_clients_per_user, 4);
        /* "#" is not an inline comment character: it stays part of the value. */
        check_error("[Limits]\nMaxClients=9 # nine\n",
                    F "2: [Limits] MaxClients=: must be a number between 1 and 1000000");
        /* A repeated section continues it; the later assignment wins. */
        ASSERT_OK(config_parse_string(c, "x", "[Limits]\nMaxClients=10\n[Daemon]\n[Limits]\nMaxClients=11\n", NULL));
        ASSERT_EQ(c->max_clients, 11);
        /* Empty input and comment-only input change nothing. */
        ASSERT_OK(config_parse_string(c, "x", "", NULL));
        ASSERT_OK(config_parse_string(c, "x", "# nothing\n\n", NULL));
        ASSERT_OK(config_parse_string(c, "x", NULL, NULL));
        ASSERT_EQ(c->max_clients, 11);
        /* An empty value restores the default. */
        ASSERT_OK(config_parse_string(c, "x", "[Limits]\nMaxClients=\n[Daemon]\nSocket=/run/x\n", NULL));
        ASSERT_EQ(c->max_clients, 4096);
        ASSERT_STREQ(c->socket_path, "/run/x");
        ASSERT_OK(config_parse_string(c, "x", "[Daemon]\nSocket=\n[Levels]\nLow=some 1s 2s\nLow=\n", NULL));
        ASSERT_TRUE(c->socket_path == NULL);
        ASSERT_U64_EQ(c->levels[LEVEL_LOW].threshold_us, 70000);

        /* A line longer than libinih's buffer is read whole, never split: a value too
         * long for its key is refused for what it is, on its line. */
        long_line = malloc(400);
        ASSERT_TRUE(long_line);
        n = (size_t) snprintf(long_line, 400, "[Daemon]\nSocket=/");
        memset(long_line + n, 'a', 300);
        strcpy(long_line + n + 300, "\nLogLevel=bogus\n");
        ASSERT_ERR(config_parse_string(c, "long.conf", long_line, &error), EINVAL);
        ASSERT_STREQ(error, "long.conf:2: [Daemon] Socket=: socket path must be shorter than 108 bytes");
        free(error);
        error = NULL;
        /* A long comment is a comment; a long line that assigns nothing is an error. */
        memcpy(long_line + 9, "# a comment", 11);
        ASSERT_ERR(config_parse_string(c, "long.conf", long_line, &error), EINVAL);
        ASSERT_STREQ(error, "long.conf:3: [Daemon] LogLevel=: must be one of debug, info, notice, warning, err (or 0..7)");
        free(error);
        error = NULL;
        memset(long_line, 'a', 300);
        strcpy(long_line + 300, "\nLogLevel=bogus\n");
        memcpy(long_line, "[Daemon]\n", 9);
        ASSERT_ERR(config_parse_string(c, "long.conf", long_line, &error), EINVAL);
        ASSERT_STREQ(error, "long.conf:2: line too long for anything but an assignment (at most 198 characters)");
        free(error);
        error = NULL;

        /* Without a name the message still has one; without ret_error nothing leaks. */
        ASSERT_ERR(config_parse_string(c, NULL, "[X]\nY=1\n", &error), EINVAL);
        ASSERT_STREQ(error, "(string):2: [X] Y=: unknown section");
        ASSERT_ERR(config_parse_string(c, "x", "[X]\nY=1\n", NULL), EINVAL);
}

static void test_format_roundtrip(void) {
        _cleanup_(config_freep) Config *c = config_new_default(), *d = config_new_default();
        _cleanup_free_ char *text = NULL, *text2 = NULL, *text3 = NULL;

        text = config_format(c);
        ASSERT_TRUE(text);
        ASSERT_STREQ(text,
                     "[Daemon]\n"
                     "Socket=\n"
                     "LogLevel=info\n"
                     "CgroupRoot=auto\n"
                     "CgroupV1Root=auto\n"
                     "\n"
                     "[Levels]\n"
                     "Low=some 70ms 1s\n"
                     "Medium=some 100ms 1s\n"
                     "Critical=full 300ms 1s\n"
                     "VmpressureMode=hierarchy\n"
                     "ClearAfterSec=0\n"
                     "ClearRatio=0.5\n"
                     "StepDownSec=2\n"
                     "MarginLow=5%\n"
                     "MarginMedium=10%\n"
                     "MarginCritical=20%\n"
                     "\n"
                     "[Limits]\n"
                     "MaxClients=4096\n"
                     "MaxClientsPerUser=128\n"
                     "MaxMessageBytes=64K\n"
                     "OutputBufferBytes=256K\n"
                     "MaxRegistrations=1024\n"
                     "RequestTimeoutSec=10\n"
                     "IdleTimeoutSec=60\n"
                     "HistoryEpisodes=16\n"
                     "\n"
                     "[Protection]\n"
                     "RefreshSec=1\n"
                     "RecursiveProtection=auto\n"
                     "\n"
                     "[Policy]\n"
                     "InjectGroup=\n"
                     "MaxFastTriggersPerUser=4\n"
                     "\n"
                     "[MemoryPressure]\n"
                     "Socket=auto\n"
                     "CpuSocket=auto\n"
                     "IoSocket=auto\n"
                     "\n"
                     "[Metrics]\n"
                     "Listen=\n"
                     "Cgroups=\n"
                     "MaxCgroups=1000\n"
                     "\n"
                     "[Report]\n"
                     "Socket=auto\n"
                     "MaxConnections=16\n"
                     "MaxMetrics=1024\n"
                     "\n"
                     "[Reclaim]\n"
                     "Cgroups=\n"
                     "TargetStall=0.1%\n"
                     "Interval=6\n"
                     "MaxStep=1%\n"
                     "MinSize=100M\n"
                     "\n"
                     "[DBus]\n"
                     "LowMemoryMonitor=no\n"
                     "\n"
                     "[Prekill]\n"
                     "Socket=auto\n"
                     "Deadline=\n"
                     "MaxCalls=16\n"
                     "MaxWarnings=4096\n");

        ASSERT_OK(config_parse_string(c, "x",
                "[Daemon]\nSocket=/run/s\nLogLevel=debug\nCgroupRoot=/cg\n"
                "[Levels]\nLow=some 1500us 1.25s\nCritical=full 1s 10s\nVmpressureMode=default\n"
                "ClearAfterSec=2.5\nClearRatio=.125\n"
                "[Limits]\nMaxMessageBytes=1500\nOutputBufferBytes=3M\nRequestTimeoutSec=0.25\n"
                "IdleTimeoutSec=3600\nHistoryEpisodes=0\n"
                "[Protection]\nRefreshSec=1.000001\nRecursiveProtection=no\n"
                "[Policy]\nInjectGroup=wheel\n[Metrics]\nListen=0.0.0.0:9100\nCgroups=/a/* /b\nMaxCgroups=5\n"
                "[Reclaim]\nCgroups=/c/*.service\nTargetStall=0.0125%\nInterval=1.5\nMaxStep=12%\nMinSize=1500K\n"
                "[DBus]\nLowMemoryMonitor=on\n"
                "[Prekill]\nSocket=\nDeadline=750ms\nMaxCalls=2\n",
                NULL));
        text2 = config_format(c);
        ASSERT_TRUE(text2);
        ASSERT_TRUE(strstr(text2, "Low=some 1500us 1250ms\n"));
        ASSERT_TRUE(strstr(text2, "Critical=full 1s 10s\n"));
        ASSERT_TRUE(strstr(text2, "RefreshSec=1.000001\n"));
        ASSERT_TRUE(strstr(text2, "RequestTimeoutSec=0.25\n"));
        ASSERT_TRUE(strstr(text2, "MaxMessageBytes=1500\n"));
        ASSERT_TRUE(strstr(text2, "OutputBufferBytes=3M\n"));
        ASSERT_TRUE(strstr(text2, "RecursiveProtection=no\n"));
        ASSERT_TRUE(strstr(text2, "LogLevel=debug\n"));
        ASSERT_TRUE(strstr(text2, "ClearAfterSec=2.5\n"));
        ASSERT_TRUE(strstr(text2, "ClearRatio=0.125\n"));
        ASSERT_TRUE(strstr(text2, "HistoryEpisodes=0\n"));
        ASSERT_TRUE(strstr(text2, "Cgroups=/a/* /b\nMaxCgroups=5\n"));
        ASSERT_TRUE(strstr(text2, "[Reclaim]\nCgroups=/c/*.service\nTargetStall=0.0125%\nInterval=1.5\n"
                                  "MaxStep=12%\nMinSize=1500K\n"));
        ASSERT_EQ(c->clear_after_usec, 2500 * USEC_PER_MSEC);
        ASSERT_EQ(c->clear_ratio_ppm, 125000u);
        ASSERT_EQ(c->history_episodes, 0u);
        ASSERT_TRUE(strstr(text2, "[DBus]\nLowMemoryMonitor=yes\n"));
        ASSERT_TRUE(c->dbus_low_memory_monitor);
        ASSERT_TRUE(strstr(text2, "[Prekill]\nSocket=\nDeadline=0.75\nMaxCalls=2\nMaxWarnings=4096\n"));

        /* What --dump-config prints reads back to the same configuration. */
        ASSERT_OK(config_parse_string(d, "dump", text2, NULL));
        text3 = config_format(d);
        ASSERT_STREQ(text3, text2);
}

static void test_load_files(void) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *main_path = tmp_path("pressured.conf"), *dropins = tmp_path("pressured.conf.d"),
                            *extra = tmp_path("extra.conf"), *missing = tmp_path("missing.conf"),
                            *error = NULL;
        char expected[1024];

        /* Nothing at all: the embedded defaults. */
        ASSERT_OK(config_load(missing, dropins, NULL, &c, &error));
        ASSERT_TRUE(c);
        ASSERT_TRUE(error == NULL);
        ASSERT_EQ(c->max_clients, 4096);
        c = config_free(c);
        ASSERT_OK(config_load(NULL, NULL, NULL, &c, NULL));
        ASSERT_EQ(c->max_clients_per_user, 128);
        c = config_free(c);

        test_write_file_at(tmpdir, "pressured.conf",
                           "[Limits]\nMaxClients=100\nMaxClientsPerUser=10\nMaxRegistrations=50\n"
                           "[Daemon]\nLogLevel=notice\n");
        ASSERT_EQ(mkdir(dropins, 0755), 0);
        /* strcmp order: "10-b.conf" < "20-a.conf" < "9-z.conf" < "a.conf" */
        test_write_file_at(tmpdir, "pressured.conf.d/20-a.conf", "[Limits]\nMaxClients=200\nMaxClientsPerUser=20\n");
        test_write_file_at(tmpdir, "pressured.conf.d/10-b.conf", "[Limits]\nMaxClients=101\nMaxRegistrations=11\n");
        test_write_file_at(tmpdir, "pressured.conf.d/9-z.conf", "[Limits]\nMaxClients=900\n");
        test_write_file_at(tmpdir, "pressured.conf.d/a.conf", "[Daemon]\nLogLevel=\n");
        /* Ignored: wrong suffix, hidden, a directory, a dangling symlink. */
        test_write_file_at(tmpdir, "pressured.conf.d/zz.conf.bak", "[Limits]\nMaxClients=1\n");
        test_write_file_at(tmpdir, "pressured.conf.d/zz.conf~", "[Limits]\nMaxClients=2\n");
        test_write_file_at(tmpdir, "pressured.conf.d/.hidden.conf", "[Limits]\nMaxClients=3\n");
        test_write_file_at(tmpdir, "pressured.conf.d/conf", "[Limits]\nMaxClients=4\n");
        {
                char *sub = tmp_path("pressured.conf.d/zzz.conf"), *link = tmp_path("pressured.conf.d/zzzz.conf");

                ASSERT_EQ(mkdir(sub, 0755), 0);
                ASSERT_EQ(symlink("/nonexistent/file.conf", link), 0);
                free(sub);
                free(link);
        }

        ASSERT_OK(config_load(main_path, dropins, NULL, &c, &error));
        ASSERT_EQ(c->max_clients, 900);            /* 9-z.conf is last to set it */
        ASSERT_EQ(c->max_clients_per_user, 20);    /* 20-a.conf */
        ASSERT_EQ(c->max_registrations, 11);       /* 10-b.conf over the main file */
        ASSERT_EQ(c->log_level, LOG_INFO);         /* a.conf reset it to the default */
        c = config_free(c);

        /* --config comes last and wins. */
        test_write_file_at(tmpdir, "extra.conf", "[Limits]\nMaxClients=5\n");
        ASSERT_OK(config_load(main_path, dropins, extra, &c, &error));
        ASSERT_EQ(c->max_clients, 5);
        ASSERT_EQ(c->max_clients_per_user, 20);
        c = config_free(c);

        /* --config must exist. */
        ASSERT_ERR(config_load(main_path, dropins, missing, &c, &error), ENOENT);
        ASSERT_TRUE(c == NULL);
        snprintf(expected, sizeof(expected), "%s: cannot read: No such file or directory", missing);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;

        /* An error in a drop-in names the drop-in and its line; nothing is returned. */
        test_write_file_at(tmpdir, "pressured.conf.d/15-bad.conf", "# bad\n[Limits]\nMaxClients=100\nOutputBufferBytes=1\n");
        ASSERT_ERR(config_load(main_path, dropins, NULL, &c, &error), EINVAL);
        ASSERT_TRUE(c == NULL);
        snprintf(expected, sizeof(expected),
                 "%s/15-bad.conf:4: [Limits] OutputBufferBytes=: must be a size between 4K and 1G "
                 "(bytes, or with suffix K, M, G)", dropins);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;
        ASSERT_ERR(config_load(main_path, dropins, NULL, &c, NULL), EINVAL);

        /* An error in the main file is found before the drop-ins are read. */
        test_write_file_at(tmpdir, "pressured.conf", "[Limits]\nMaxClients=100\n[Nope]\nA=b\n");
        ASSERT_ERR(config_load(main_path, dropins, NULL, &c, &error), EINVAL);
        snprintf(expected, sizeof(expected), "%s:4: [Nope] A=: unknown section", main_path);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;

        /* A NUL byte in a file is rejected. */
        {
                int fd = open(main_path, O_WRONLY | O_TRUNC | O_CLOEXEC);

                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(write(fd, "[Limits]\n\0MaxClients=1\n", 23), 23);
                ASSERT_EQ(close(fd), 0);
        }
        ASSERT_ERR(config_load(main_path, NULL, NULL, &c, &error), EINVAL);
        snprintf(expected, sizeof(expected), "%s: contains a NUL byte", main_path);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;

        /* The main path being a directory, or the drop-in path a file, is an error. */
        ASSERT_ERR(config_load(dropins, NULL, NULL, &c, &error), EISDIR);
        snprintf(expected, sizeof(expected), "%s: cannot read: Is a directory", dropins);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;
        ASSERT_ERR(config_load(NULL, extra, NULL, &c, &error), ENOTDIR);
        snprintf(expected, sizeof(expected), "%s: cannot open directory: Not a directory", extra);
        ASSERT_STREQ(error, expected);
        free(error);
        error = NULL;
}

/*
 * conf/pressured.conf lists every key commented out at its default:
 * uncommenting all of them must give exactly the defaults, and every key
 * config_format() knows must be in it.
 */
static void test_shipped_conf(void) {
        _cleanup_(config_freep) Config *c = config_new_default(), *defaults = config_new_default();
        _cleanup_free_ char *path = NULL, *text = NULL, *uncommented = NULL, *dump = NULL, *expected = NULL;
        const char *src = getenv("PRESSURED_SOURCE_ROOT");
        char *o;
        unsigned keys = 0;

        if (!src) {
                test_skip_part("PRESSURED_SOURCE_ROOT is not set: the check of conf/pressured.conf did not run");
                return;
        }
        ASSERT_TRUE(asprintf(&path, "%s/conf/pressured.conf", src) > 0);
        ASSERT_OK(read_full_file(path, 1024 * 1024, &text, NULL));
        uncommented = malloc(strlen(text) + 1);
        ASSERT_TRUE(uncommented);
        o = uncommented;
        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n");

                if (p[0] == '#' && len > 1 && p[1] >= 'A' && p[1] <= 'Z') {
                        p++;
                        len--;
                        keys++;
                }
                memcpy(o, p, len);
                o += len;
                p += len;
                if (*p == '\n')
                        *o++ = *p++;
        }
        *o = 0;

        ASSERT_OK(config_parse_string(c, path, uncommented, NULL));
        dump = config_format(c);
        expected = config_format(defaults);
        ASSERT_STREQ(dump, expected);
        /* One "Key=" line per key in the dump. */
        {
                unsigned n = 0;

                for (const char *p = expected; (p = strchr(p, '=')); p++)
                        n++;
                ASSERT_EQ(keys, n);
        }
}

static void check_unreadable(const char *path) {
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *error = NULL;
        char expected[600];

        ASSERT_ERR(config_load(path, NULL, NULL, &c, &error), EACCES);
        ASSERT_TRUE(c == NULL);
        snprintf(expected, sizeof(expected), "%s: cannot read: Permission denied", path);
        ASSERT_STREQ(error, expected);
}

static void test_unreadable(void) {
        _cleanup_free_ char *path = tmp_path("unreadable.conf");
        int fd, status;
        pid_t pid;

        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0000);
        ASSERT_TRUE(fd >= 0);
        close(fd);

        if (geteuid() != 0) {
                check_unreadable(path);
                return;
        }

        /* Root reads any file: check as "nobody" in a child. */
        ASSERT_EQ(chmod(tmpdir, 0755), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                    setresuid(65534, 65534, 65534) < 0) {
                        fprintf(stderr, "cannot drop privileges: %m\n");
                        _exit(2);
                }
                check_unreadable(path);
                _exit(0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);
}

/*
 * InjectGroup= is resolved once, when the configuration is loaded: a GID
 * as written, a name through NSS; a name that does not resolve leaves no
 * group (root only) and the load succeeds.
 */
static void test_inject_group(void) {
        _cleanup_free_ char *path = tmp_path("inject.conf");
        static const struct {
                const char *text;
                bool set;
                gid_t gid;
        } cases[] = {
                { "", false, (gid_t) -1 },
                { "[Policy]\nInjectGroup=1234\n", true, 1234 },
                { "[Policy]\nInjectGroup=0\n", true, 0 },
                { "[Policy]\nInjectGroup=root\n", true, 0 },
                { "[Policy]\nInjectGroup=pressured-no-such-group\n", false, (gid_t) -1 },
                { "[Policy]\nInjectGroup=root\nInjectGroup=\n", false, (gid_t) -1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(config_freep) Config *c = NULL;
                _cleanup_free_ char *error = NULL;

                test_write_file_at(tmpdir, "inject.conf", cases[i].text);
                ASSERT_OK(config_load(path, NULL, NULL, &c, &error));
                ASSERT_TRUE(error == NULL);
                if (c->inject_gid_set != cases[i].set)
                        TEST_FAIL("\"%s\": inject_gid_set is %d, expected %d", cases[i].text, c->inject_gid_set,
                                  cases[i].set);
                ASSERT_U64_EQ(c->inject_gid, cases[i].gid);
        }

        /* Without a load nothing is resolved; resolving by hand works alike. */
        {
                _cleanup_(config_freep) Config *c = config_new_default();

                ASSERT_TRUE(c);
                ASSERT_TRUE(!c->inject_gid_set);
                ASSERT_OK(config_parse_string(c, "x", "[Policy]\nInjectGroup=root\n", NULL));
                ASSERT_TRUE(!c->inject_gid_set);
                ASSERT_OK(config_resolve_inject_group(c));
                ASSERT_TRUE(c->inject_gid_set);
                ASSERT_U64_EQ(c->inject_gid, 0);
        }
}

/*
 * Out of memory: with each allocation of a load failing in turn (files,
 * drop-ins, strings, the group lookup's buffer), config_load() returns
 * -ENOMEM and no configuration, and leaks nothing (valgrind, ASan).
 */
static void test_load_out_of_memory(void) {
        _cleanup_free_ char *main_path = tmp_path("oom.conf"), *dropins = tmp_path("oom.conf.d");
        char dir[600];

        snprintf(dir, sizeof(dir), "%s/oom.conf.d", tmpdir);
        ASSERT_OK(mkdir(dir, 0755));
        test_write_file_at(tmpdir, "oom.conf", "[Daemon]\nSocket=/run/x.sock\nCgroupRoot=/sys/fs/cgroup\n"
                                           "[Policy]\nInjectGroup=root\n[Metrics]\nListen=127.0.0.1:9100\n");
        test_write_file_at(tmpdir, "oom.conf.d/10-a.conf", "[Limits]\nMaxClients=10\n");
        test_write_file_at(tmpdir, "oom.conf.d/20-b.conf", "[MemoryPressure]\nSocket=\n");

        for (unsigned n = 1;; n++) {
                Config *c = NULL;
                char *error = NULL;
                bool injected;
                int r;

                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, n);
                r = config_load(main_path, dropins, NULL, &c, &error);
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        ASSERT_TRUE(c && c->inject_gid_set && c->max_clients == 10);
                        ASSERT_TRUE(error == NULL);
                        config_free(c);
                        ASSERT_TRUE(n > 5);
                        break;
                }
                if (r != -ENOMEM)
                        TEST_FAIL("allocation %u failing: config_load() returned %d (%s), expected -ENOMEM", n, r,
                                  error ?: "no message");
                ASSERT_TRUE(c == NULL);
                free(error);
        }
}

int main(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }

        test_defaults();
        test_all_keys();
        test_value_forms();
        test_longest_values();
        test_listen_address();
        test_margins();
        test_errors();
        test_ini_edge_cases();
        test_format_roundtrip();
        test_load_files();
        test_shipped_conf();
        test_unreadable();
        test_inject_group();
        test_load_out_of_memory();

        if (test_rm_tree(tmpdir) < 0)
                fprintf(stderr, "warning: could not remove %s\n", tmpdir);
        return test_finish();
}
