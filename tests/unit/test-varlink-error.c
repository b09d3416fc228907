/* SPDX-License-Identifier: MIT */
/*
 * The typed varlink error constructors send exactly the parameters that
 * io.pressured.varlink declares, with the declared types; and the one
 * errno mapping gives the documented error for every errno a failed open
 * or registration can bring.
 */
#include <sys/resource.h>

#include "tests.h"
#include "util.h"
#include "varlink-error.h"

/* The parameters of @e have exactly the keys of @keys ("s" string, "i" integer). */
static void check_params(const VarlinkError *e, const char *const *keys, const char *types) {
        size_t n = 0;

        ASSERT_TRUE(json_is_object(e->parameters));
        for (; keys[n]; n++) {
                json_t *v = json_object_get(e->parameters, keys[n]);

                if (!v)
                        TEST_FAIL("%s lacks parameter %s", e->name, keys[n]);
                if (types[n] == 's' && !json_is_string(v))
                        TEST_FAIL("%s parameter %s is not a string", e->name, keys[n]);
                if (types[n] == 'i' && !json_is_integer(v))
                        TEST_FAIL("%s parameter %s is not an integer", e->name, keys[n]);
        }
        ASSERT_EQ(json_object_size(e->parameters), n);
}

#define CHECK(err, expected, types, ...)                                        \
        do {                                                                    \
                static const char *const _keys[] = { __VA_ARGS__, NULL };       \
                ASSERT_STREQ((err)->name, expected);                            \
                check_params(err, _keys, types);                                \
        } while (0)

static void test_constructors(void) {
        VarlinkError e = {};

        ASSERT_ERR(varlink_error_no_such_cgroup(&e, -ENOENT, "/a"), ENOENT);
        CHECK(&e, "io.pressured.NoSuchCgroup", "s", "cgroup");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "cgroup")), "/a");

        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -EINVAL, NULL), EINVAL);
        CHECK(&e, "io.pressured.InvalidCgroupPath", "s", "cgroup");

        /* The reason goes to the log line (detail), never on the wire: the rule the path breaks,
         * else what the open said of it; any other error has none. */
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -EINVAL, "/a\tb"), EINVAL);
        CHECK(&e, "io.pressured.InvalidCgroupPath", "s", "cgroup");
        ASSERT_STREQ(e.detail, "it contains a control character, such as a tab or a newline");
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -EINVAL, "/a/../b"), EINVAL);
        ASSERT_STREQ(e.detail, "it has a '..' component");
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -ENOTDIR, "/a/memory.max"), ENOTDIR);
        ASSERT_STREQ(e.detail, "it names a file, not a cgroup directory");
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -ELOOP, "/link"), ELOOP);
        ASSERT_STREQ(e.detail, "it goes through a symbolic link");
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -EXDEV, "/mnt"), EXDEV);
        ASSERT_STREQ(e.detail, "it leads out of the cgroup hierarchy into another mount");
        ASSERT_ERR(varlink_error_invalid_cgroup_path(&e, -EINVAL, "/deep"), EINVAL);
        ASSERT_STREQ(e.detail, "it is longer than 4096 bytes after the root of the caller's cgroup namespace");
        ASSERT_ERR(varlink_error_no_such_cgroup(&e, -ENOENT, "/a"), ENOENT);
        ASSERT_TRUE(e.detail == NULL);

        ASSERT_ERR(varlink_error_permission_denied(&e, "not yours"), EACCES);
        CHECK(&e, "io.pressured.PermissionDenied", "s", "reason");

        ASSERT_ERR(varlink_error_source_unavailable(&e, -EOPNOTSUPP, "psi", "off"), EOPNOTSUPP);
        CHECK(&e, "io.pressured.SourceUnavailable", "ss", "source", "reason");

        ASSERT_ERR(varlink_error_invalid_trigger(&e, -EINVAL, "too short"), EINVAL);
        CHECK(&e, "io.pressured.InvalidTrigger", "s", "reason");

        /* The crash of issue 11: every LimitExceeded has a string limit and an integer value. */
        ASSERT_ERR(varlink_error_limit_exceeded(&e, -EUSERS, "MaxRegistrations", 1), EUSERS);
        CHECK(&e, "io.pressured.LimitExceeded", "si", "limit", "value");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "limit")), "MaxRegistrations");
        ASSERT_EQ(json_integer_value(json_object_get(e.parameters, "value")), 1);
        ASSERT_ERR(varlink_error_limit_exceeded(&e, -EUSERS, "huge", UINT64_MAX), EUSERS);
        ASSERT_EQ(json_integer_value(json_object_get(e.parameters, "value")), INT64_MAX);

        ASSERT_ERR(varlink_error_open_files(&e, -EMFILE), EMFILE);
        CHECK(&e, "io.pressured.LimitExceeded", "si", "limit", "value");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "limit")), "open files");
        {
                struct rlimit rl;

                ASSERT_OK(getrlimit(RLIMIT_NOFILE, &rl));
                if (rl.rlim_cur != RLIM_INFINITY)
                        ASSERT_EQ(json_integer_value(json_object_get(e.parameters, "value")), rl.rlim_cur);
        }

        ASSERT_ERR(varlink_error_configuration_rejected(&e, -EINVAL, "bad key"), EINVAL);
        CHECK(&e, "io.pressured.ConfigurationRejected", "s", "reason");

        ASSERT_ERR(varlink_error_internal(&e, -ENOMEM), ENOMEM);
        CHECK(&e, "io.pressured.InternalError", "s", "reason");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "reason")), strerror(ENOMEM));

        ASSERT_ERR(varlink_error_invalid_parameter(&e, "psi.stall"), EINVAL);
        CHECK(&e, "org.varlink.service.InvalidParameter", "s", "parameter");
        ASSERT_ERR(varlink_error_method_not_found(&e, "io.pressured.Nope"), ENOENT);
        CHECK(&e, "org.varlink.service.MethodNotFound", "s", "method");
        ASSERT_ERR(varlink_error_interface_not_found(&e, "org.example"), ENOENT);
        CHECK(&e, "org.varlink.service.InterfaceNotFound", "s", "interface");
        ASSERT_ERR(varlink_error_expected_more(&e), EINVAL);
        ASSERT_STREQ(e.name, "org.varlink.service.ExpectedMore");
        ASSERT_EQ(json_object_size(e.parameters), 0);

        varlink_error_done(&e);
        ASSERT_TRUE(!e.name && !e.parameters);
        varlink_error_done(&e);
}

static void test_from_errno(void) {
        static const struct {
                int error;
                bool in_cgroup;      /* a file inside the cgroup failed, not the directory */
                const char *name;
        } table[] = {
                { ENOENT,       false, "io.pressured.NoSuchCgroup" },
                { ENOENT,       true,  "io.pressured.SourceUnavailable" },
                { ELOOP,        false, "io.pressured.InvalidCgroupPath" },
                { EXDEV,        false, "io.pressured.InvalidCgroupPath" },
                { ENOTDIR,      false, "io.pressured.InvalidCgroupPath" },
                { ENAMETOOLONG, false, "io.pressured.InvalidCgroupPath" },
                { EINVAL,       false, "io.pressured.InvalidCgroupPath" },
                { EINVAL,       true,  "io.pressured.InvalidTrigger" },
                { EACCES,       false, "io.pressured.SourceUnavailable" },
                { EACCES,       true,  "io.pressured.SourceUnavailable" },
                { EPERM,        true,  "io.pressured.SourceUnavailable" },
                { EOPNOTSUPP,   true,  "io.pressured.SourceUnavailable" },
                { EOPNOTSUPP,   false, "io.pressured.SourceUnavailable" },
                { EMFILE,       false, "io.pressured.LimitExceeded" },
                { ENFILE,       true,  "io.pressured.LimitExceeded" },
                { EIO,          true,  "io.pressured.SourceUnavailable" },
                { ENODEV,       false, "io.pressured.SourceUnavailable" },
                { ENOMEM,       false, "io.pressured.InternalError" },
                { ENOMEM,       true,  "io.pressured.InternalError" },
        };
        VarlinkError e = {};

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const char *file = table[i].in_cgroup ? "memory.pressure" : NULL;
                int r = varlink_error_from_errno(&e, -table[i].error, "psi", "/a", file);

                ASSERT_EQ(r, -table[i].error);
                if (!streq(e.name, table[i].name))
                        TEST_FAIL("%s (%s): %s, expected %s", strerror(table[i].error),
                                  file ? "in the cgroup" : "the cgroup", e.name, table[i].name);
                if (streq(e.name, "io.pressured.SourceUnavailable")) {
                        CHECK(&e, "io.pressured.SourceUnavailable", "ss", "source", "reason");
                        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "source")), "psi");
                } else if (streq(e.name, "io.pressured.LimitExceeded"))
                        CHECK(&e, "io.pressured.LimitExceeded", "si", "limit", "value");
                else if (streq(e.name, "io.pressured.InvalidTrigger") || streq(e.name, "io.pressured.InternalError"))
                        CHECK(&e, e.name, "s", "reason");
                else {
                        CHECK(&e, e.name, "s", "cgroup");
                        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "cgroup")), "/a");
                }
        }
        /* The reason says what failed. */
        varlink_error_from_errno(&e, -ENOENT, "memory_events", "/a", "memory.events");
        ASSERT_TRUE(strstr(json_string_value(json_object_get(e.parameters, "reason")), "memory.events"));
        varlink_error_done(&e);
}

/* What the server answers for each kind of SourceFailure: the declared error, as varlink_error_from_errno() for an open. */
static void test_from_failure(void) {
        _cleanup_(varlink_error_done) VarlinkError e = {}, want = {};
        SourceFailure f = {};
        char *a, *b;

        /* Nothing said: @e is left as it is, the caller answers from the errno. */
        varlink_error_from_failure(&e, &f, "/a");
        ASSERT_TRUE(!e.name);

        ASSERT_EQ(source_failure_open(&f, -ENOENT, "psi", NULL), -ENOENT);
        varlink_error_from_failure(&e, &f, "/a");
        CHECK(&e, "io.pressured.NoSuchCgroup", "s", "cgroup");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "cgroup")), "/a");

        /* A file inside: the same reason text as the direct mapping, byte for byte. */
        ASSERT_EQ(source_failure_open(&f, -EINVAL, "psi", "the PSI trigger \"some 150ms 2s\""), -EINVAL);
        varlink_error_from_failure(&e, &f, "/a");
        varlink_error_from_errno(&want, -EINVAL, "psi", "/a", "the PSI trigger \"some 150ms 2s\"");
        ASSERT_STREQ(e.name, "io.pressured.InvalidTrigger");
        a = json_dumps(e.parameters, JSON_SORT_KEYS);
        b = json_dumps(want.parameters, JSON_SORT_KEYS);
        ASSERT_STREQ(a, b);
        free(a);
        free(b);
        ASSERT_EQ(source_failure_open(&f, -EACCES, "memory_events", "memory.events"), -EACCES);
        varlink_error_from_failure(&e, &f, "/a");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "reason")),
                     "memory.events cannot be used: Permission denied");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "source")), "memory_events");

        ASSERT_EQ(source_failure_no_such_cgroup(&f, -ENOENT), -ENOENT);
        varlink_error_from_failure(&e, &f, "/b");
        CHECK(&e, "io.pressured.NoSuchCgroup", "s", "cgroup");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "cgroup")), "/b");

        ASSERT_EQ(source_failure_invalid_cgroup_path(&f, -ELOOP), -ELOOP);
        varlink_error_from_failure(&e, &f, "/b");
        CHECK(&e, "io.pressured.InvalidCgroupPath", "s", "cgroup");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "cgroup")), "/b");
        ASSERT_STREQ(e.detail, "it goes through a symbolic link");

        ASSERT_EQ(source_failure_unavailable(&f, -EOPNOTSUPP, "vmpressure", "no v1"), -EOPNOTSUPP);
        varlink_error_from_failure(&e, &f, "/b");
        CHECK(&e, "io.pressured.SourceUnavailable", "ss", "source", "reason");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "source")), "vmpressure");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "reason")), "no v1");

        ASSERT_EQ(source_failure_limit(&f, -EUSERS, "MaxRegistrations", 4096), -EUSERS);
        varlink_error_from_failure(&e, &f, "/b");
        CHECK(&e, "io.pressured.LimitExceeded", "si", "limit", "value");
        ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "limit")), "MaxRegistrations");
        ASSERT_EQ(json_integer_value(json_object_get(e.parameters, "value")), 4096);
}

int main(void) {
        test_constructors();
        test_from_errno();
        test_from_failure();
        return 0;
}
