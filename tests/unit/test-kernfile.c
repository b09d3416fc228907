/* SPDX-License-Identifier: MIT */
/*
 * Tests for kernfile.c: PSI files (and their averages as pressurectl top
 * shows them), memory.events, memory values, flat-keyed files,
 * mountinfo (pure v2, hybrid, v1-only, escapes, containers) and
 * /proc/PID/cgroup, with valid, truncated and garbage input; and
 * read_full_file() at its limit.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernfile.h"
#include "tests.h"
#include "util.h"

static void test_psi_stats(void) {
        PsiStats s;

        ASSERT_OK(psi_stats_parse("some avg10=12.34 avg60=0.50 avg300=100.00 total=123456789\n"
                                  "full avg10=1.02 avg60=0.00 avg300=0.01 total=42\n", &s));
        ASSERT_TRUE(s.has_some);
        ASSERT_TRUE(s.has_full);
        ASSERT_EQ(s.some.avg10, 1234);
        ASSERT_EQ(s.some.avg60, 50);
        ASSERT_EQ(s.some.avg300, 10000);
        ASSERT_U64_EQ(s.some.total_us, 123456789);
        ASSERT_EQ(s.full.avg10, 102);
        ASSERT_EQ(s.full.avg60, 0);
        ASSERT_EQ(s.full.avg300, 1);
        ASSERT_U64_EQ(s.full.total_us, 42);

        /* No full line (older kernels, /proc/pressure/cpu before 5.13), no trailing newline. */
        ASSERT_OK(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0", &s));
        ASSERT_TRUE(s.has_some);
        ASSERT_TRUE(!s.has_full);
        ASSERT_EQ(s.full.avg10, 0);

        /* Fewer or more decimals; fields in another order; unknown field ignored. */
        ASSERT_OK(psi_stats_parse("some total=7 avg300=3 avg60=2.5 avg10=1.239 extra=abc\n", &s));
        ASSERT_EQ(s.some.avg10, 123);
        ASSERT_EQ(s.some.avg60, 250);
        ASSERT_EQ(s.some.avg300, 300);
        ASSERT_U64_EQ(s.some.total_us, 7);

        /* total at the 64-bit limit */
        ASSERT_OK(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\n", &s));
        ASSERT_U64_EQ(s.some.total_us, UINT64_MAX);

        s.some.avg10 = 777;
        /* Truncated line, missing some, garbage, overflow, duplicates. */
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("\n\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse(NULL, &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("garbage\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=x avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=1. avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=.5 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=99999999999.00 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n", &s),
                   EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                   "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                   "full avg10=0.00 avg60\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                   "half avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &s), EBADMSG);
        ASSERT_ERR(psi_stats_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0 junk\n", &s), EBADMSG);
        ASSERT_EQ(s.some.avg10, 777); /* untouched on failure */
}

static void test_memory_events(void) {
        MemoryEvents e;

        ASSERT_OK(memory_events_parse("low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\noom_group_kill 6\n", &e));
        for (unsigned k = 0; k < _MEMORY_EVENT_MAX; k++)
                ASSERT_U64_EQ(e.value[k], k + 1);
        ASSERT_EQ(e.present, (1u << _MEMORY_EVENT_MAX) - 1);

        /* Older kernel without oom_group_kill, a key from the future, no final newline. */
        ASSERT_OK(memory_events_parse("low 0\nhigh 18446744073709551615\nmax 0\noom 0\nsock_throttled 9\noom_kill 2", &e));
        ASSERT_U64_EQ(e.value[MEMORY_EVENT_HIGH], UINT64_MAX);
        ASSERT_U64_EQ(e.value[MEMORY_EVENT_OOM_KILL], 2);
        ASSERT_U64_EQ(e.value[MEMORY_EVENT_OOM_GROUP_KILL], 0);
        ASSERT_TRUE(!(e.present & (1u << MEMORY_EVENT_OOM_GROUP_KILL)));
        ASSERT_TRUE(e.present & (1u << MEMORY_EVENT_OOM_KILL));

        ASSERT_OK(memory_events_parse("", &e));
        ASSERT_EQ(e.present, 0);

        e.present = 99;
        ASSERT_ERR(memory_events_parse("low\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low \n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low x\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low -1\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low 1 2\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse(" 1\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low 18446744073709551616\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse("low 1\nlow 2\n", &e), EBADMSG);
        ASSERT_ERR(memory_events_parse(NULL, &e), EBADMSG);
        ASSERT_EQ(e.present, 99);

        ASSERT_STREQ(memory_event_key_to_string(MEMORY_EVENT_OOM_KILL), "oom_kill");
        ASSERT_STREQ(memory_event_key_to_string(MEMORY_EVENT_OOM_GROUP_KILL), "oom_group_kill");
        ASSERT_TRUE(memory_event_key_to_string(_MEMORY_EVENT_MAX) == NULL);
}

static void test_memory_value(void) {
        uint64_t v = 5;

        ASSERT_OK(parse_memory_value("0\n", &v));
        ASSERT_U64_EQ(v, 0);
        ASSERT_OK(parse_memory_value("1125899906842624\n", &v)); /* 2^50 */
        ASSERT_U64_EQ(v, UINT64_C(1125899906842624));
        ASSERT_OK(parse_memory_value("max\n", &v));
        ASSERT_U64_EQ(v, UINT64_MAX);
        ASSERT_OK(parse_memory_value("4096", &v));
        ASSERT_U64_EQ(v, 4096);

        ASSERT_ERR(parse_memory_value("", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("max\n\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("maximum\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value(" 1\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("1 \n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("-1\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value("18446744073709551616\n", &v), EBADMSG);
        ASSERT_ERR(parse_memory_value(NULL, &v), EBADMSG);
        ASSERT_U64_EQ(v, 4096);
}

/*
 * pressurectl top shows averages as doubles: hundredths / 100.0 is the
 * double that strtod() reads from the kernel's two-decimal text, so the
 * printed and JSON values are those of the text.
 */
static void test_psi_avg_as_double(void) {
        for (uint32_t h = 0; h <= 100000; h++) {
                char text[96];
                PsiStats s;

                snprintf(text, sizeof(text), "some avg10=%u.%02u avg60=0.00 avg300=0.00 total=0\n", h / 100, h % 100);
                ASSERT_OK(psi_stats_parse(text, &s));
                ASSERT_EQ(s.some.avg10, h);
                ASSERT_TRUE(s.some.avg10 / 100.0 == strtod(text + strlen("some avg10="), NULL));
        }
}

static void test_flat_keyed_value(void) {
        const char *oom_control = "oom_kill_disable 1\nunder_oom 0\noom_kill 7\n";
        uint64_t v = 5;

        ASSERT_OK(flat_keyed_value(oom_control, "oom_kill", &v));
        ASSERT_U64_EQ(v, 7);
        ASSERT_OK(flat_keyed_value(oom_control, "oom_kill_disable", &v));
        ASSERT_U64_EQ(v, 1);
        /* Other lines are not looked at; the first line with the key counts; no final newline. */
        ASSERT_OK(flat_keyed_value("junk\n\nhigh max\nmax 3\nmax 4", "max", &v));
        ASSERT_U64_EQ(v, 3);

        v = 5;
        ASSERT_ERR(flat_keyed_value(oom_control, "oom", &v), ENOENT);
        ASSERT_ERR(flat_keyed_value("", "oom_kill", &v), ENOENT);
        ASSERT_ERR(flat_keyed_value("oom_kill\n", "oom_kill", &v), ENOENT);
        ASSERT_ERR(flat_keyed_value("oom_kill \n", "oom_kill", &v), EBADMSG);
        ASSERT_ERR(flat_keyed_value("oom_kill max\n", "oom_kill", &v), EBADMSG);
        ASSERT_ERR(flat_keyed_value("oom_kill 1 2\n", "oom_kill", &v), EBADMSG);
        ASSERT_ERR(flat_keyed_value("oom_kill 18446744073709551616\n", "oom_kill", &v), EBADMSG);
        ASSERT_ERR(flat_keyed_value(NULL, "oom_kill", &v), EBADMSG);
        ASSERT_U64_EQ(v, 5);
}

/* Layouts as found on real systems. */
static const char mountinfo_v2[] =
        "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw\n"
        "25 28 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4010084k,nr_inodes=1002521,mode=755\n"
        "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
        "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n"
        "31 24 0:27 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:5 - pstore pstore rw\n";

static const char mountinfo_hybrid[] =
        "24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static const char mountinfo_v1[] =
        "20 25 0:19 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
        "26 20 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
        "28 26 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup "
        "rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd\n"
        "31 26 0:28 / /sys/fs/cgroup/memory,hugetlb rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup "
        "rw,hugetlb,memory\n"
        "32 26 0:29 / /sys/fs/cgroup/memsw rw,relatime shared:14 - cgroup cgroup rw,memsw\n";

static void check_mounts(const char *text, const char *v2, const char *v1, bool rprot) {
        CgroupMounts m = {};

        ASSERT_OK(mountinfo_parse(text, &m));
        if (!streq_ptr(m.v2_root, v2) || !streq_ptr(m.v1_memory_root, v1) || m.v2_recursive_prot != rprot)
                TEST_FAIL("mountinfo: got v2=%s v1=%s rprot=%d, expected v2=%s v1=%s rprot=%d",
                          strna(m.v2_root), strna(m.v1_memory_root), m.v2_recursive_prot,
                          strna(v2), strna(v1), rprot);
        cgroup_mounts_done(&m);
        ASSERT_TRUE(m.v2_root == NULL && m.v1_memory_root == NULL && !m.v2_recursive_prot);
}

static void test_mountinfo(void) {
        _cleanup_free_ char *self = NULL;
        CgroupMounts m = { .v2_recursive_prot = true };

        check_mounts(mountinfo_v2, "/sys/fs/cgroup", NULL, true);
        check_mounts(mountinfo_hybrid, "/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory", false);
        check_mounts(mountinfo_v1, NULL, "/sys/fs/cgroup/memory,hugetlb", false);
        check_mounts("", NULL, NULL, false);
        check_mounts("\n\n", NULL, NULL, false);

        /* Escaped space, tab, newline and backslash in the mount point. */
        check_mounts("50 1 0:40 / /mnt/my\\040cgroup\\011x\\012y\\134z rw - cgroup2 none rw,memory_recursiveprot\n",
                     "/mnt/my cgroup\tx\ny\\z", NULL, true);
        /* Invalid escapes are kept as they are. */
        check_mounts("50 1 0:40 / /mnt/a\\9b\\04 rw - cgroup2 none rw\n", "/mnt/a\\9b\\04", NULL, false);
        check_mounts("50 1 0:40 / /mnt/a\\400 rw - cgroup2 none rw\n", "/mnt/a\\400", NULL, false);

        /* Several optional fields before the separator. */
        check_mounts("30 24 0:26 / /cg rw shared:4 master:1 propagate_from:2 - cgroup2 cgroup2 rw\n",
                     "/cg", NULL, false);
        /* No optional fields, no super options: still found, no recursiveprot. */
        check_mounts("30 24 0:26 / /cg rw - cgroup2 cgroup2\n", "/cg", NULL, false);

        /* Only a mount whose root is "/" counts (containers bind-mount sub-trees). */
        check_mounts("60 1 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
                     "61 1 0:26 / /host/cgroup rw - cgroup2 cgroup2 rw,memory_recursiveprot\n",
                     "/host/cgroup", NULL, true);
        /* The first one wins. */
        check_mounts("61 1 0:26 / /first rw - cgroup2 cgroup2 rw\n"
                     "62 1 0:26 / /second rw - cgroup2 cgroup2 rw,memory_recursiveprot\n"
                     "63 1 0:27 / /m1 rw - cgroup cgroup rw,memory\n"
                     "64 1 0:27 / /m2 rw - cgroup cgroup rw,memory\n",
                     "/first", "/m1", false);

        /* "memory" must be a whole option; memory_recursiveprot too. */
        check_mounts("63 1 0:27 / /m rw - cgroup cgroup rw,memory_foo,xmemory\n"
                     "64 1 0:26 / /u rw - cgroup2 cgroup2 rw,memory_recursiveprotx\n",
                     "/u", NULL, false);
        /* The fs type, not the source, decides. */
        check_mounts("63 1 0:27 / /m rw - tmpfs cgroup rw,memory\n"
                     "64 1 0:26 / /u rw - ext4 cgroup2 rw\n", NULL, NULL, false);

        /* Garbage and truncated lines are skipped, the good line still counts. */
        check_mounts("garbage\n"
                     "1 2 3\n"
                     "1 2 3 / /x rw -\n"
                     "1 2 3 / /x rw - cgroup2\n"
                     "- - - - - - - - -\n"
                     "30 24 0:26 / /good rw - cgroup2 cgroup2 rw\n",
                     "/good", NULL, false);

        /* Failure leaves the output untouched; NULL text is rejected. */
        ASSERT_ERR(mountinfo_parse(NULL, &m), EBADMSG);
        ASSERT_TRUE(m.v2_recursive_prot);

        /* This machine's own mountinfo parses and, where cgroup2 is mounted, finds it. */
        if (read_full_file("/proc/self/mountinfo", 4 * 1024 * 1024, &self, NULL) >= 0) {
                CgroupMounts own = {};

                ASSERT_OK(mountinfo_parse(self, &own));
                if (strstr(self, " - cgroup2 "))
                        ASSERT_TRUE(own.v2_root != NULL && own.v2_root[0] == '/');
                if (!strstr(self, " - cgroup "))
                        ASSERT_TRUE(own.v1_memory_root == NULL);
                cgroup_mounts_done(&own);
        }
        cgroup_mounts_done(NULL);
}

static void check_proc_cgroup(const char *text, const char *v2, const char *v1) {
        char *a = (char *) "unset", *b = (char *) "unset";

        ASSERT_OK(proc_cgroup_parse(text, &a, &b));
        if (!streq_ptr(a, v2) || !streq_ptr(b, v1))
                TEST_FAIL("proc cgroup: got v2=%s v1=%s, expected v2=%s v1=%s",
                          strna(a), strna(b), strna(v2), strna(v1));
        free(a);
        free(b);
}

static void test_proc_cgroup(void) {
        char *a = (char *) "unset";

        check_proc_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n",
                          "/user.slice/user-1000.slice/session-2.scope", NULL);
        check_proc_cgroup("12:pids:/system.slice/foo.service\n"
                          "11:memory:/system.slice/foo.service\n"
                          "10:cpu,cpuacct:/system.slice\n"
                          "1:name=systemd:/system.slice/foo.service\n"
                          "0::/system.slice/foo.service\n",
                          "/system.slice/foo.service", "/system.slice/foo.service");
        check_proc_cgroup("5:hugetlb,memory:/a:b\n", NULL, "/a:b");
        check_proc_cgroup("5:memsw:/x\n3:memory_foo:/y\n", NULL, NULL);
        check_proc_cgroup("0::/\n", "/", NULL);
        check_proc_cgroup("", NULL, NULL);
        /* cgroup namespaces show paths outside the namespace root like this */
        check_proc_cgroup("0::/../../sibling\n", "/../../sibling", NULL);

        /* Outputs are optional. */
        ASSERT_OK(proc_cgroup_parse("0::/x\n11:memory:/y\n", NULL, NULL));
        ASSERT_OK(proc_cgroup_parse("0::/x\n11:memory:/y\n", &a, NULL));
        ASSERT_STREQ(a, "/x");
        free(a);

        a = (char *) "unset";
        ASSERT_ERR(proc_cgroup_parse("garbage\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse("0:/x\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse("x::/x\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse(":memory:/x\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse("0::\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse("0::relative\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse("0::/ok\n99999999999999999999:memory:/x\n", &a, NULL), EBADMSG);
        ASSERT_ERR(proc_cgroup_parse(NULL, &a, NULL), EBADMSG);
        ASSERT_STREQ(a, "unset");
}

/* A file of @size bytes read with the limit @max. */
static int read_sized(size_t size, size_t max, size_t *ret_size) {
        char path[] = "/tmp/test-kernfile-XXXXXX";
        _cleanup_free_ char *data = malloc(size + 1), *text = NULL;
        int fd = mkstemp(path), k;

        ASSERT_TRUE(fd >= 0 && data);
        memset(data, 'x', size);
        ASSERT_EQ(write(fd, data, size), (ssize_t) size);
        close(fd);
        k = read_full_file(path, max, &text, ret_size);
        ASSERT_OK(unlink(path));
        if (k >= 0)
                ASSERT_EQ(strlen(text), *ret_size);
        return k;
}

/* read_full_file() takes files up to its limit whole and refuses longer ones, never a truncated read. */
static void test_read_full(void) {
        size_t n = 0;

        ASSERT_OK(read_sized(0, 5000, &n));
        ASSERT_EQ(n, 0);
        ASSERT_OK(read_sized(4999, 5000, &n));
        ASSERT_EQ(n, 4999);
        ASSERT_OK(read_sized(5000, 5000, &n));
        ASSERT_EQ(n, 5000);
        ASSERT_ERR(read_sized(5001, 5000, &n), EFBIG);
        ASSERT_ERR(read_sized(3 * 5000, 5000, &n), EFBIG);
        ASSERT_OK(read_sized(4096, 4096, &n));
        ASSERT_ERR(read_sized(4097, 4096, &n), EFBIG);
        ASSERT_ERR(read_sized(70000, 65536, &n), EFBIG);
        ASSERT_ERR(read_full_file("/nonexistent/file", 10, &(char *) { NULL }, NULL), ENOENT);
}

int main(void) {
        test_read_full();
        test_psi_stats();
        test_psi_avg_as_double();
        test_memory_events();
        test_memory_value();
        test_flat_keyed_value();
        test_mountinfo();
        test_proc_cgroup();
        return 0;
}
