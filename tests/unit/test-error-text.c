/* SPDX-License-Identifier: MIT */
/*
 * pressurectl's error reports (client/pressurectl/error-text.c). Every error the
 * interfaces declare gets a sentence of its own that mentions each of its
 * parameters: the declarations are read from the interface texts the
 * daemon serves (argv[1]: io.pressured.varlink; argv[2]: the source file
 * that holds org.varlink.service's), so a new error without a sentence
 * fails here. Then: the fallback for unknown names, escaping, the
 * command-specific PermissionDenied, pressurectl's own failures, exit
 * codes and the JSON form.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error-text.h"
#include "tests.h"

#define FALLBACK "The daemon answered "

static void assert_contains(const char *haystack, const char *needle) {
        if (!haystack || !strstr(haystack, needle))
                TEST_FAIL("\"%s\" does not contain \"%s\"", haystack ? haystack : "(null)", needle);
}

/*
 * Parameters for the declaration @decl ("(source: string, reason: string)"): a distinct value per
 * parameter, strings "v-NAME-N", integers 4200 + N, so the sentence can be searched for each.
 */
static json_t *sample_parameters(const char *decl) {
        json_t *p = json_object();
        char name[64], type[64];
        int n = 0, used;

        ASSERT_TRUE(p && *decl == '(');
        decl++;
        while (sscanf(decl, " %63[a-z_] : %63[a-z?] %n", name, type, &used) == 2) {
                char value[128];

                n++;
                if (strcmp(type, "int") == 0)
                        json_object_set_new(p, name, json_integer(4200 + n));
                else {
                        ASSERT_STREQ(type, "string");
                        snprintf(value, sizeof(value), "v-%s-%d", name, n);
                        json_object_set_new(p, name, json_string(value));
                }
                decl += used;
                if (*decl == ',')
                        decl++;
        }
        ASSERT_TRUE(*decl == ')');
        return p;
}

/* Every value of @p appears in @sentence. */
static void assert_mentions(const char *sentence, json_t *p) {
        const char *key;
        json_t *v;

        json_object_foreach(p, key, v) {
                char buf[64];

                if (json_is_integer(v)) {
                        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                        assert_contains(sentence, buf);
                } else
                        assert_contains(sentence, json_string_value(v));
        }
}

/*
 * Append to @line (of @size bytes) the lines of @f up to the one that closes
 * a declaration whose parameters are written one per line, leaving out
 * comment lines.
 */
static void join_declaration(FILE *f, char *line, size_t size) {
        char more[1024];

        while (!strchr(line, ')') && fgets(more, sizeof(more), f)) {
                char *s = more + strspn(more, " \t\"");

                if (*s == '#')
                        continue;
                line[strcspn(line, "\n")] = 0;
                ASSERT_TRUE(strlen(line) + 1 + strlen(s) < size);
                strcat(line, " ");
                strcat(line, s);
        }
}

/*
 * The "error NAME (PARAMETERS)" declarations of the interface text in @path, which may also be C string
 * literals of it; check each one's sentence. Returns how many there were.
 */
static int check_declared(const char *path) {
        FILE *f = fopen(path, "re");
        char line[4096], interface[128] = "", name[128], full[300];
        int n = 0;

        ASSERT_TRUE(f);
        while (fgets(line, sizeof(line), f)) {
                char *s = line + strspn(line, " \t\"");
                json_t *p;
                char *sentence;

                if (strncmp(s, "interface ", 10) == 0 && sscanf(s + 10, "%127[a-z.]", interface) == 1)
                        continue;
                if (strncmp(s, "error ", 6) != 0)
                        continue;
                join_declaration(f, line, sizeof(line));
                ASSERT_TRUE(interface[0] && sscanf(s, "error %127[A-Za-z]", name) == 1);
                snprintf(full, sizeof(full), "%s.%s", interface, name);
                p = sample_parameters(strchr(s, '('));
                sentence = error_sentence("watch", full, p);
                ASSERT_TRUE(sentence);
                if (strncmp(sentence, FALLBACK, strlen(FALLBACK)) == 0)
                        TEST_FAIL("%s has no sentence: \"%s\"", full, sentence);
                assert_mentions(sentence, p);
                printf("%-45s %s\n", full, sentence);
                free(sentence);
                json_decref(p);
                n++;
        }
        fclose(f);
        return n;
}

static void test_fallback_and_escaping(void) {
        json_t *p = json_pack("{s:s, s:i}", "what", "x\ny", "n", 3);
        char *s = error_sentence("status", "io.pressured.BrandNew", p);

        /* The parameters as JSON text; the name's control characters escaped. */
        ASSERT_STREQ(s, "The daemon answered io.pressured.BrandNew: {\"what\":\"x\\ny\",\"n\":3}.");
        free(s);
        s = error_sentence("status", "x.Bad\033[2J", NULL);
        ASSERT_STREQ(s, "The daemon answered x.Bad\\x1b[2J: {}.");
        free(s);
        json_decref(p);

        /* A string parameter cannot drive the terminal, a missing one is "?". */
        p = json_pack("{s:s}", "cgroup", "/a\033]0;x\007");
        s = error_sentence("watch", "io.pressured.NoSuchCgroup", p);
        assert_contains(s, "No cgroup /a\\x1b]0;x\\x07: ");
        ASSERT_TRUE(!strchr(s, '\033'));
        free(s);
        json_decref(p);
        s = error_sentence("watch", "io.pressured.NoSuchCgroup", NULL);
        assert_contains(s, "No cgroup ?: ");
        free(s);
}

static void test_invalid_parameter(void) {
        json_t *p = json_pack("{s:s}", "parameter", "levels");
        char *s = error_sentence("watch", "org.varlink.service.InvalidParameter", p);

        /* "levels" is the selector a daemon before 0.4 does not know: say that, not "a parameter". */
        ASSERT_STREQ(s, "The daemon does not serve level streams (watch --levels): it is older than pressured 0.4; "
                        "update pressured and restart it.");
        free(s);
        json_decref(p);
        p = json_pack("{s:s}", "parameter", "min_interval_ms");
        s = error_sentence("watch", "org.varlink.service.InvalidParameter", p);
        assert_contains(s, "The daemon rejected the parameter min_interval_ms of the call");
        free(s);
        json_decref(p);
}

static void test_permission_denied(void) {
        json_t *p = json_pack("{s:s}", "reason", "Inject is reserved to root and the InjectGroup= group");
        char *s = error_sentence("inject", "io.pressured.PermissionDenied", p);

        ASSERT_STREQ(s, "Only root and members of the InjectGroup= group may inject events; try sudo.");
        free(s);
        s = error_sentence("reload", "io.pressured.PermissionDenied", p);
        ASSERT_STREQ(s, "Only root may reload the daemon's configuration; try sudo.");
        free(s);
        s = error_sentence("reexec", "io.pressured.PermissionDenied", p);
        ASSERT_STREQ(s, "Only root may make the daemon execute itself anew; try sudo.");
        free(s);
        s = error_sentence("protection", "io.pressured.PermissionDenied", p);
        assert_contains(s, "Permission denied: Inject is reserved");
        assert_contains(s, "try sudo");
        free(s);
        json_decref(p);
}

static void test_hints(void) {
        json_t *p = json_pack("{s:s, s:i}", "limit", "MaxClientsPerUser", "value", 128);
        char *s = error_sentence("status", "io.pressured.LimitExceeded", p);

        ASSERT_STREQ(s, "The daemon's limit MaxClientsPerUser (128) is reached; close other clients, or raise "
                        "MaxClientsPerUser= in [Limits] of pressured.conf.");
        free(s);
        json_decref(p);
        p = json_pack("{s:s, s:i}", "limit", "open files", "value", 1024);
        s = error_sentence("watch", "io.pressured.LimitExceeded", p);
        assert_contains(s, "LimitNOFILE= of pressured.service");
        free(s);
        json_decref(p);
        p = json_pack("{s:s}", "reason", "/etc/pressured/pressured.conf:3: unknown key 'Foo'");
        s = error_sentence("reload", "io.pressured.ConfigurationRejected", p);
        assert_contains(s, "pressured.conf:3: unknown key 'Foo'");
        assert_contains(s, "see journalctl -u pressured");
        free(s);
        json_decref(p);
        p = json_pack("{s:s}", "reason", "threshold must not exceed the window");
        s = error_sentence("watch", "io.pressured.InvalidTrigger", p);
        assert_contains(s, "Invalid trigger: threshold must not exceed the window; ");
        free(s);
        json_decref(p);
        /* Refused for its resource: the trigger is well formed, no syntax hint. */
        p = json_pack("{s:s}", "reason", "cpu \"full\" pressure is not defined for the whole system");
        s = error_sentence("watch", "io.pressured.InvalidTrigger", p);
        assert_contains(s, "Invalid trigger: cpu \"full\" pressure is not defined for the whole system.");
        ASSERT_TRUE(!strstr(s, "STALL THRESHOLD WINDOW"));
        free(s);
        json_decref(p);
}

/* error_describe() of the failure @r (@name, @params): the exit code, and the object in *@ret. */
static int describe(int r, const char *name, const char *params, const char *socket, json_t **ret) {
        int exit_code = -1;

        *ret = error_describe("status", socket, r, name, params, &exit_code);
        ASSERT_TRUE(*ret && json_object_size(*ret) == 3);
        ASSERT_TRUE(json_is_string(json_object_get(*ret, "error")));
        ASSERT_TRUE(json_is_object(json_object_get(*ret, "parameters")));
        ASSERT_TRUE(json_is_string(json_object_get(*ret, "message")));
        return exit_code;
}

static const char *member(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static void test_describe(void) {
        json_t *o;

        ASSERT_EQ(describe(-ENOENT, NULL, NULL, "/run/pressured/io.pressured", &o), EXIT_UNREACHABLE);
        ASSERT_STREQ(member(o, "error"), CLI_ERROR_UNREACHABLE);
        ASSERT_STREQ(member(json_object_get(o, "parameters"), "socket"), "/run/pressured/io.pressured");
        ASSERT_STREQ(member(json_object_get(o, "parameters"), "errno"), "ENOENT");
        ASSERT_STREQ(member(o, "message"), "Cannot reach pressured at /run/pressured/io.pressured: No such file or "
                                           "directory. Is pressured.socket running? Try systemctl start "
                                           "pressured.socket.");
        json_decref(o);
        /* A socket file that exists but nobody serves: refused. */
        ASSERT_EQ(describe(-ECONNREFUSED, NULL, NULL, "/dev/null", &o), EXIT_UNREACHABLE);
        assert_contains(member(o, "message"), "Cannot reach pressured at /dev/null: Connection refused. ");
        assert_contains(member(o, "message"), "--socket");
        json_decref(o);
        /* libpressure says ECONNREFUSED for a missing socket too: named precisely. */
        ASSERT_EQ(describe(-ECONNREFUSED, NULL, NULL, "/tmp/x.sock", &o), EXIT_UNREACHABLE);
        ASSERT_STREQ(member(json_object_get(o, "parameters"), "errno"), "ENOENT");
        assert_contains(member(o, "message"), "Cannot reach pressured at /tmp/x.sock: No such file or directory. ");
        json_decref(o);
        ASSERT_EQ(describe(-EACCES, NULL, NULL, "/tmp/x.sock", &o), EXIT_DENIED);
        ASSERT_STREQ(member(o, "error"), CLI_ERROR_SOCKET_DENIED);
        json_decref(o);
        ASSERT_EQ(describe(-EPROTO, NULL, NULL, "/tmp/x.sock", &o), EXIT_DAEMON_ERROR);
        ASSERT_STREQ(member(o, "error"), CLI_ERROR_FAILED);
        assert_contains(member(o, "message"), "Protocol error");
        json_decref(o);
        ASSERT_EQ(describe(-EBADMSG, NULL, NULL, "/tmp/x.sock", &o), EXIT_DAEMON_ERROR);
        ASSERT_STREQ(member(o, "message"), "Cannot read the reply of pressured at /tmp/x.sock: it is not what this "
                                           "pressurectl expects; use the same version of both.");
        json_decref(o);

        /* The daemon's errors: its name and parameters as sent; PermissionDenied is exit 4. */
        ASSERT_EQ(describe(-EACCES, "io.pressured.PermissionDenied", "{\"reason\":\"no\"}", "/s", &o), EXIT_DENIED);
        ASSERT_STREQ(member(json_object_get(o, "parameters"), "reason"), "no");
        json_decref(o);
        ASSERT_EQ(describe(-ENOENT, "io.pressured.NoSuchCgroup", "{\"cgroup\":\"/nope\"}", "/s", &o),
                  EXIT_DAEMON_ERROR);
        ASSERT_STREQ(member(o, "error"), "io.pressured.NoSuchCgroup");
        assert_contains(member(o, "message"), "No cgroup /nope: ");
        json_decref(o);
        /* A value the user typed wrong is a usage error whoever finds it: the daemon's word too. */
        ASSERT_EQ(describe(-EINVAL, "io.pressured.InvalidTrigger", "{\"reason\":\"r\"}", "/s", &o), EXIT_USAGE);
        json_decref(o);
        ASSERT_EQ(describe(-EINVAL, "io.pressured.InvalidCgroupPath", "{\"cgroup\":\"/x\"}", "/s", &o), EXIT_USAGE);
        json_decref(o);
        /* And libpressure's, which refused the path before sending it: the same usage error, its reason. */
        ASSERT_EQ(describe(-EINVAL, "libpressure.InvalidCgroupPath",
                           "{\"cgroup\":\"/\\\\xff\",\"reason\":\"it is not valid UTF-8\"}", "/s", &o), EXIT_USAGE);
        ASSERT_STREQ(member(o, "error"), "libpressure.InvalidCgroupPath");
        ASSERT_STREQ(member(o, "message"), "Invalid cgroup path '/\\xff': it is not valid UTF-8.");
        json_decref(o);
        ASSERT_EQ(describe(-ENODEV, "io.pressured.SourceUnavailable", "{\"source\":\"psi\",\"reason\":\"r\"}", "/s",
                           &o), EXIT_DAEMON_ERROR);
        json_decref(o);
        /* Parameters that are not an object are reported as {}. */
        ASSERT_EQ(describe(-EPROTO, "x.Y", "[1]", "/s", &o), EXIT_DAEMON_ERROR);
        ASSERT_EQ(json_object_size(json_object_get(o, "parameters")), 0);
        ASSERT_STREQ(member(o, "message"), "The daemon answered x.Y: {}.");
        json_decref(o);
}

/* NoSuchCgroup names the daemon's hierarchies once pressurectl knows them; libpressure's own name is local. */
static void test_roots_and_local_names(void) {
        json_t *p = json_pack("{s:s}", "cgroup", "/nope"), *o;
        char *s;

        s = error_sentence("inject", "io.pressured.NoSuchCgroup", p);
        ASSERT_STREQ(s, "No cgroup /nope: it does not exist in the cgroup hierarchies the daemon uses; "
                        "check the path, e.g. with systemd-cgls.");
        free(s);
        error_text_set_roots("/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory");
        s = error_sentence("inject", "io.pressured.NoSuchCgroup", p);
        ASSERT_STREQ(s, "No cgroup /nope: the daemon's cgroup hierarchies have no such cgroup (cgroup2 at "
                        "/sys/fs/cgroup/unified, cgroup v1 memory at /sys/fs/cgroup/memory); check the path, "
                        "e.g. with systemd-cgls.");
        free(s);
        error_text_set_roots("/sys/fs/cgroup", NULL);
        s = error_sentence("watch", "io.pressured.NoSuchCgroup", p);
        assert_contains(s, "(cgroup2 at /sys/fs/cgroup)");
        free(s);
        json_decref(p);

        ASSERT_EQ(describe(-ECONNREFUSED, "libpressure.DaemonNotRunning", "{\"socket\":\"/tmp/none.sock\"}",
                           "/tmp/none.sock", &o), EXIT_UNREACHABLE);
        ASSERT_STREQ(member(o, "error"), CLI_ERROR_UNREACHABLE);
        assert_contains(member(o, "message"), "Cannot reach pressured at /tmp/none.sock");
        json_decref(o);
}

/* The text error_report_*() wrote to a memory stream, via @write. */
static char *captured(void (*write)(FILE *f)) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ASSERT_TRUE(f);
        write(f);
        ASSERT_EQ(fclose(f), 0);
        return buf;
}

static void write_usage_text(FILE *f) {
        ASSERT_EQ(error_report_usage(f, false, "watch ", "invalid level 'x'"), EXIT_USAGE);
}
static void write_usage_json(FILE *f) {
        ASSERT_EQ(error_report_usage(f, true, "watch ", "invalid level 'x'"), EXIT_USAGE);
}
static void write_usage_global(FILE *f) {
        ASSERT_EQ(error_report_usage(f, true, "", NULL), EXIT_USAGE);
}
static void write_timeout(FILE *f) {
        ASSERT_EQ(error_report_timeout(f, true, "watch", 1), EXIT_TIMEOUT);
}
static void write_failure(FILE *f) {
        ASSERT_EQ(error_report_failure(f, true, "top", -ENOENT, "no cgroup hierarchy found"), EXIT_DAEMON_ERROR);
}
static void write_notice(FILE *f) {
        notice_report(f, true, "hook 'x' (event seq 1) exited with status 3");
        notice_report(f, false, "notify: watching /");
}

/* pressurectl's own reports: usage errors, timeouts, failures and notices, as text and as JSON. */
/* InvalidCgroupPath names the reason: the rule the path breaks, else what is there in the daemon's hierarchy. */
static void test_invalid_cgroup_path(void) {
        char tmpl[] = "/tmp/test-error-text-XXXXXX", path[128];
        json_t *p;
        char *s;
        int fd;

        ASSERT_TRUE(mkdtemp(tmpl));
        snprintf(path, sizeof(path), "%s/a", tmpl);
        ASSERT_OK(mkdir(path, 0755));
        snprintf(path, sizeof(path), "%s/a/memory.max", tmpl);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        close(fd);
        snprintf(path, sizeof(path), "%s/link", tmpl);
        ASSERT_OK(symlink("a", path));

        error_text_set_roots(NULL, NULL);
        p = json_pack("{s:s}", "cgroup", "/a/../b");
        s = error_sentence("headroom", "io.pressured.InvalidCgroupPath", p);
        ASSERT_STREQ(s, "Invalid cgroup path '/a/../b': it has a '..' component.");
        free(s);
        json_decref(p);
        p = json_pack("{s:s}", "cgroup", "/a/memory.max");
        s = error_sentence("headroom", "io.pressured.InvalidCgroupPath", p);
        ASSERT_STREQ(s, "Invalid cgroup path '/a/memory.max': the daemon found no cgroup directory there: a file, "
                        "a symbolic link or another mount is on the way.");
        free(s);
        error_text_set_roots(tmpl, NULL);
        s = error_sentence("headroom", "io.pressured.InvalidCgroupPath", p);
        ASSERT_STREQ(s, "Invalid cgroup path '/a/memory.max': it names a file, not a cgroup directory.");
        free(s);
        json_decref(p);
        p = json_pack("{s:s}", "cgroup", "/link");
        error_text_set_roots("/nonexistent", tmpl);
        s = error_sentence("watch", "io.pressured.InvalidCgroupPath", p);
        ASSERT_STREQ(s, "Invalid cgroup path '/link': it goes through a symbolic link.");
        free(s);
        json_decref(p);
        error_text_set_roots(NULL, NULL);
        ASSERT_OK(test_rm_tree(tmpl));
}

static void test_own_reports(void) {
        char *t;

        t = captured(write_usage_text);
        ASSERT_STREQ(t, "pressurectl: invalid level 'x'\nTry 'pressurectl watch --help'.\n");
        free(t);
        t = captured(write_usage_json);
        ASSERT_STREQ(t, "{\"error\":\"pressurectl.UsageError\",\"parameters\":{\"command\":\"watch\",\"reason\":"
                        "\"invalid level 'x'\"},\"message\":\"invalid level 'x'. Try 'pressurectl watch --help'.\"}\n");
        free(t);
        t = captured(write_usage_global);
        ASSERT_STREQ(t, "{\"error\":\"pressurectl.UsageError\",\"parameters\":{\"command\":\"\",\"reason\":null},"
                        "\"message\":\"Try 'pressurectl --help'.\"}\n");
        free(t);
        t = captured(write_timeout);
        ASSERT_STREQ(t, "{\"error\":\"pressurectl.Timeout\",\"parameters\":{\"command\":\"watch\",\"events\":1},"
                        "\"message\":\"timed out after 1 event\"}\n");
        free(t);
        t = captured(write_failure);
        ASSERT_STREQ(t, "{\"error\":\"pressurectl.Failed\",\"parameters\":{\"errno\":\"ENOENT\",\"reason\":"
                        "\"No such file or directory\"},\"message\":\"no cgroup hierarchy found\"}\n");
        free(t);
        t = captured(write_notice);
        ASSERT_STREQ(t, "{\"notice\":\"hook 'x' (event seq 1) exited with status 3\"}\npressurectl: notify: watching /\n");
        free(t);
}

int main(int argc, char **argv) {
        ASSERT_EQ(argc, 3);
        ASSERT_TRUE(check_declared(argv[1]) >= 8);
        ASSERT_TRUE(check_declared(argv[2]) >= 6);
        test_fallback_and_escaping();
        test_invalid_parameter();
        test_permission_denied();
        test_hints();
        test_describe();
        test_roots_and_local_names();
        test_invalid_cgroup_path();
        test_own_reports();
        return 0;
}
