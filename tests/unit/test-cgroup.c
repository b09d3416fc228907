/* SPDX-License-Identifier: MIT */
/* Cgroup path validation and confined opening beneath a hierarchy root. */
#include <fcntl.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "tests.h"
#include "util.h"

static void check_norm(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL;

        ASSERT_OK(cgroup_path_normalize(in, &out));
        ASSERT_STREQ(out, want);
}

static void check_bad(const char *in) {
        char *out = NULL;

        ASSERT_ERR(cgroup_path_normalize(in, &out), EINVAL);
        ASSERT_TRUE(out == NULL);
}

static void test_normalize(void) {
        char long_path[CGROUP_PATH_MAX + 10], long_comp[300];

        check_norm(NULL, "/");
        check_norm("", "/");
        check_norm("/", "/");
        check_norm("//", "/");
        check_norm("/a", "/a");
        check_norm("/a/b/", "/a/b");
        check_norm("//a///b", "/a/b");
        check_norm("/system.slice/foo.service", "/system.slice/foo.service");
        check_norm("/a/..b/c..", "/a/..b/c..");

        check_bad("a/b");
        check_bad("/..");
        check_bad("/a/../../etc");
        check_bad("/a/./b");
        check_bad("/a\nb");
        check_bad("/a\tb");
        check_bad("/a\x7f");
        check_bad("/\xff");

        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        for (size_t i = 100; i < sizeof(long_path) - 1; i += 100)
                long_path[i] = '/';
        long_path[sizeof(long_path) - 1] = 0;
        check_bad(long_path);

        long_comp[0] = '/';
        memset(long_comp + 1, 'b', 256);
        long_comp[257] = 0;
        check_bad(long_comp);
}

/* Each rule has its reason, in the order the rules are checked; and the escape of what cannot be shown. */
static void test_check(void) {
        char long_path[CGROUP_PATH_MAX + 10], long_comp[300];
        static const struct {
                const char *path;
                CgroupPathProblem want;
        } cases[] = {
                { NULL, CGROUP_PATH_OK },
                { "", CGROUP_PATH_OK },
                { "/a/b", CGROUP_PATH_OK },
                { "/\xc3\xa9t\xc3\xa9.slice/\xe2\x82\xac\xf0\x9f\x90\xa7", CGROUP_PATH_OK },
                { "/..a/b..", CGROUP_PATH_OK },
                { "a/b", CGROUP_PATH_NOT_ABSOLUTE },
                { "./a", CGROUP_PATH_NOT_ABSOLUTE },
                { "/\xff", CGROUP_PATH_NOT_UTF8 },
                { "/a\xc3", CGROUP_PATH_NOT_UTF8 },            /* cut short */
                { "/\xc0\xaf", CGROUP_PATH_NOT_UTF8 },        /* overlong '/' */
                { "/\xed\xa0\x80", CGROUP_PATH_NOT_UTF8 },    /* a UTF-16 surrogate */
                { "/\xf4\x90\x80\x80", CGROUP_PATH_NOT_UTF8 }, /* beyond U+10FFFF */
                { "/a\tb", CGROUP_PATH_CONTROL_CHARACTER },
                { "/a\nb", CGROUP_PATH_CONTROL_CHARACTER },
                { "/a\x7f", CGROUP_PATH_CONTROL_CHARACTER },
                { "/\xff\t", CGROUP_PATH_NOT_UTF8 },          /* the first rule broken */
                { "/a/./b", CGROUP_PATH_DOT },
                { "/a/.", CGROUP_PATH_DOT },
                { "/a/../b", CGROUP_PATH_DOT_DOT },
                { "/./..", CGROUP_PATH_DOT_DOT },              /* ".." is the graver */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (cgroup_path_check(cases[i].path) != cases[i].want)
                        fprintf(stderr, "case %zu: %s\n", i, cases[i].path ? cases[i].path : "(null)");
                ASSERT_EQ(cgroup_path_check(cases[i].path), cases[i].want);
        }

        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        for (size_t i = 100; i < sizeof(long_path) - 1; i += 100)
                long_path[i] = '/';
        long_path[sizeof(long_path) - 1] = 0;
        ASSERT_EQ(cgroup_path_check(long_path), CGROUP_PATH_TOO_LONG);
        long_path[CGROUP_PATH_MAX] = 0;
        ASSERT_EQ(cgroup_path_check(long_path), CGROUP_PATH_OK);

        long_comp[0] = '/';
        memset(long_comp + 1, 'b', 256);
        long_comp[257] = 0;
        ASSERT_EQ(cgroup_path_check(long_comp), CGROUP_PATH_NAME_TOO_LONG);
        long_comp[256] = 0;
        ASSERT_EQ(cgroup_path_check(long_comp), CGROUP_PATH_OK);

        ASSERT_EQ(cgroup_path_problem_from_errno(-ENOTDIR), CGROUP_PATH_FILE);
        ASSERT_EQ(cgroup_path_problem_from_errno(-ELOOP), CGROUP_PATH_SYMLINK);
        ASSERT_EQ(cgroup_path_problem_from_errno(-EXDEV), CGROUP_PATH_OTHER_MOUNT);
        ASSERT_EQ(cgroup_path_problem_from_errno(-ENAMETOOLONG), CGROUP_PATH_TOO_LONG);
        ASSERT_EQ(cgroup_path_problem_from_errno(-EINVAL), CGROUP_PATH_TOO_LONG_IN_NAMESPACE);
        ASSERT_EQ(cgroup_path_problem_from_errno(-ENOENT), CGROUP_PATH_OK);

        /* Every problem has a reason of its own. */
        ASSERT_TRUE(cgroup_path_problem_to_string(CGROUP_PATH_OK) == NULL);
        for (CgroupPathProblem p = CGROUP_PATH_OK + 1; p < _CGROUP_PATH_PROBLEM_MAX; p++) {
                ASSERT_TRUE(cgroup_path_problem_to_string(p) != NULL);
                for (CgroupPathProblem q = CGROUP_PATH_OK + 1; q < p; q++)
                        ASSERT_TRUE(!streq(cgroup_path_problem_to_string(p), cgroup_path_problem_to_string(q)));
        }
        ASSERT_STREQ(cgroup_path_problem_to_string(CGROUP_PATH_FILE), "it names a file, not a cgroup directory");

        {
                _cleanup_free_ char *a = cgroup_path_escape("/a\tb\xff/\xc3\xa9\x7f");

                ASSERT_STREQ(a, "/a\\x09b\\xff/\xc3\xa9\\x7f");
        }
}

static void test_open_beneath(void) {
        char tmpl[] = "/tmp/test-cgroup-XXXXXX", path[256];
        Hierarchy h = { .fd = -1 };
        struct stat st;
        int fd;

        ASSERT_TRUE(mkdtemp(tmpl));
        snprintf(path, sizeof(path), "%s/a", tmpl);
        ASSERT_OK(mkdir(path, 0755));
        snprintf(path, sizeof(path), "%s/a/b", tmpl);
        ASSERT_OK(mkdir(path, 0755));
        snprintf(path, sizeof(path), "%s/escape", tmpl);
        ASSERT_OK(symlink("/etc", path));
        snprintf(path, sizeof(path), "%s/a/inner", tmpl);
        ASSERT_OK(symlink("b", path));

        ASSERT_OK(hierarchy_open(&h, tmpl));
        fd = hierarchy_open_cgroup(&h, "/a/b");
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(fstat(fd, &st));
        ASSERT_TRUE(cgroup_exists_as(&h, "/a/b", st.st_ino));
        ASSERT_TRUE(!cgroup_exists_as(&h, "/a", st.st_ino));
        close(fd);

        fd = hierarchy_open_cgroup(&h, "/");
        ASSERT_TRUE(fd >= 0);
        close(fd);

        ASSERT_ERR(hierarchy_open_cgroup(&h, "/missing"), ENOENT);
        /* A symlink is refused whether it leads out of the tree or not. */
        fd = hierarchy_open_cgroup(&h, "/escape");
        ASSERT_TRUE(fd == -ELOOP || fd == -EXDEV);
        fd = hierarchy_open_cgroup(&h, "/a/inner");
        ASSERT_TRUE(fd == -ELOOP || fd == -EXDEV);
        ASSERT_TRUE(!cgroup_exists_as(&h, "/escape", 0));

        /* A file is no cgroup: ENOTDIR, for opening and for the check without an fd. */
        snprintf(path, sizeof(path), "%s/a/memory.pressure", tmpl);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_TRUE(fd >= 0);
        close(fd);
        ASSERT_ERR(hierarchy_open_cgroup(&h, "/a/memory.pressure"), ENOTDIR);
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/a/memory.pressure"), ENOTDIR);
        ASSERT_OK(hierarchy_stat_cgroup(&h, "/a/b"));
        ASSERT_OK(hierarchy_stat_cgroup(&h, "/"));
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/missing"), ENOENT);
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/escape"), ELOOP);
        /* A symlink before the last component is refused too, as hierarchy_open_cgroup() does. */
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/a/inner"), ELOOP);
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/escape/x"), ELOOP);
        ASSERT_ERR(hierarchy_stat_cgroup(&h, "/a/memory.pressure/x"), ENOTDIR);
        ASSERT_OK(hierarchy_stat_cgroup(&h, "/a//b"));

        /* The directory vanishing is seen. */
        fd = hierarchy_open_cgroup(&h, "/a/b");
        ASSERT_OK(fstat(fd, &st));
        close(fd);
        snprintf(path, sizeof(path), "%s/a/b", tmpl);
        ASSERT_OK(rmdir(path));
        ASSERT_TRUE(!cgroup_exists_as(&h, "/a/b", st.st_ino));
        ASSERT_OK(mkdir(path, 0755));
        fd = hierarchy_open_cgroup(&h, "/a/b");
        ASSERT_TRUE(fd >= 0);
        close(fd);

        hierarchy_close(&h);
        ASSERT_EQ(h.fd, -1);
        ASSERT_OK(test_rm_tree(tmpl));
}

static void check_unit(const char *path, const char *want) {
        const char *got = cgroup_path_unit(path);

        if (!want) {
                if (got)
                        TEST_FAIL("cgroup_path_unit(\"%s\") = \"%s\", expected none", path, got);
                return;
        }
        ASSERT_STREQ(got, want);
        /* A name into the path: its last component. */
        ASSERT_TRUE(got + strlen(got) == path + strlen(path));
}

/* The unit whose own cgroup a path is, as systemd's cgroup metrics name it. */
static void test_path_unit(void) {
        char long_unit[300];

        check_unit("/system.slice/foo.service", "foo.service");
        check_unit("/init.scope", "init.scope");
        check_unit("/user.slice/user-1000.slice/user@1000.service", "user@1000.service");
        check_unit("/user.slice/user-1000.slice/session-2.scope", "session-2.scope");
        check_unit("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service");
        check_unit("/system.slice/dev-hugepages.mount", "dev-hugepages.mount");
        check_unit("/system.slice/foo\\x2dbar.service", "foo\\x2dbar.service");
        check_unit("/foo.service", "foo.service");
        /* systemd's escape of a cgroup name: the leading "_" is not the unit's. */
        check_unit("/system.slice/_cpu.service", "cpu.service");
        check_unit("/system.slice/a@b.c.service", "a@b.c.service");

        /* No unit of its own: the root, slices, cgroups below a unit, what no unit can be named. */
        check_unit("/", NULL);
        check_unit("/system.slice", NULL);
        check_unit("/user.slice/user-1000.slice", NULL);
        check_unit("/system.slice/foo.service/payload", NULL);
        check_unit("/system.slice/foo.service/bar.service", NULL);
        check_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", NULL);
        check_unit("/machine.slice/a@b.slice", NULL);
        check_unit("/system.slice/foo@.service", NULL);
        check_unit("/system.slice/@foo.service", NULL);
        check_unit("/system.slice/a@b@c.service", NULL);
        check_unit("/system.slice/foo.bar", NULL);
        check_unit("/system.slice/.service", NULL);
        check_unit("/system.slice/foo", NULL);
        check_unit("/system.slice/fo o.service", NULL);
        check_unit("/payload/foo.service", NULL);
        check_unit("/_", NULL);
        check_unit("", NULL);

        /* At most 255 bytes. */
        long_unit[0] = '/';
        memset(long_unit + 1, 'a', 255 - 8);
        strcpy(long_unit + 1 + 255 - 8, ".service");
        check_unit(long_unit, long_unit + 1);
        memmove(long_unit + 2, long_unit + 1, strlen(long_unit + 1) + 1);
        long_unit[1] = 'a';
        check_unit(long_unit, NULL);
}

int main(void) {
        test_normalize();
        test_check();
        test_open_beneath();
        test_path_unit();
        return 0;
}
