/* SPDX-License-Identifier: MIT */
/*
 * Cgroup namespaces: the root of a peer's namespace from its mountinfo and
 * cgroup, the translation of its paths both ways, the rewriting of shared
 * event bodies for it, and the reading of its /proc files.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup-ns.h"
#include "cgroup.h"
#include "event.h"
#include "kernfile.h"
#include "peer-view.h"
#include "test-body.h"
#include "tests.h"
#include "util.h"

/* What the daemon reads in /proc/PID/mountinfo of a container that mounted cgroup2 and v1 memory itself. */
static const char container_mountinfo[] =
        "600 500 0:50 / / rw,relatime - overlay overlay rw\n"
        "601 600 0:51 / /proc rw - proc proc rw\n"
        "602 600 0:38 / /host-cgroup rw - cgroup2 cgroup2 rw\n"
        "603 600 0:38 /pdnsroot /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
        "604 603 0:38 /pdnsroot/app /srv/app-cg rw - cgroup2 cgroup2 rw\n"
        "605 600 0:32 /process_api/c1 /sys/fs/cgroup-v1/memory rw - cgroup cgroup rw,memory\n"
        "606 600 0:29 /process_api /sys/fs/cgroup-v1/cpu rw - cgroup cgroup rw,cpu\n";

static void check_root(const char *text, bool v1, const char *cgroup, const char *want) {
        _cleanup_free_ char *root = NULL;

        ASSERT_OK(mountinfo_cgroup_ns_root(text, v1, cgroup, &root));
        if (!want)
                ASSERT_TRUE(root == NULL);
        else
                ASSERT_STREQ(root, want);
}

static void test_mountinfo_root(void) {
        char long_line[9000];
        size_t n = 0;

        /* The shallowest qualifying root; the inherited host mount ("/") says nothing. */
        check_root(container_mountinfo, false, "/pdnsroot/app/worker", "/pdnsroot");
        check_root(container_mountinfo, false, "/pdnsroot", "/pdnsroot");
        /* A root that is not an ancestor, even if it is a string prefix. */
        check_root(container_mountinfo, false, "/pdnsroot2", NULL);
        check_root(container_mountinfo, false, "/elsewhere", NULL);
        /* v1: only mounts with the memory controller. */
        check_root(container_mountinfo, true, "/process_api/c1/x", "/process_api/c1");
        check_root(container_mountinfo, true, "/process_api/c2", NULL);

        check_root("", false, "/a", NULL);
        check_root("\n\n", false, "/a", NULL);
        /* Missing fields: no separator, nothing after it, a short line. */
        check_root("1 2 0:38 /a /x rw cgroup2 cgroup2 rw\n", false, "/a", NULL);
        check_root("1 2 0:38 /a /x rw -\n", false, "/a", NULL);
        check_root("1 2 0:38 /a /x rw - cgroup2\n", false, "/a", NULL);
        check_root("1 2 0:38 /a\n", false, "/a", NULL);
        check_root("1 2 0:38 /a /x rw - cgroup2 none\n", false, "/a/b", "/a");
        /* v1 without super options cannot name its controllers. */
        check_root("1 2 0:38 /a /x rw - cgroup none\n", true, "/a", NULL);
        /* Escaped space in the root field. */
        check_root("1 2 0:38 /my\\040pod /x rw - cgroup2 none rw\n", false, "/my pod/c", "/my pod");
        /* Roots that are no canonical cgroup path: relative, "..", control characters. */
        check_root("1 2 0:38 a /x rw - cgroup2 none rw\n", false, "/a", NULL);
        check_root("1 2 0:38 /a/.. /x rw - cgroup2 none rw\n", false, "/a", NULL);
        check_root("1 2 0:38 /../a /x rw - cgroup2 none rw\n", false, "/a", NULL);
        check_root("1 2 0:38 /a\\012 /x rw - cgroup2 none rw\n", false, "/a", NULL);
        /* A root written with extra slashes still names the same cgroup. */
        check_root("1 2 0:38 //a// /x rw - cgroup2 none rw\n", false, "/a/b", "/a");

        /* A line with more fields than the parser looks at is skipped, the next one is read. */
        n += (size_t) snprintf(long_line + n, sizeof(long_line) - n, "1 2 0:38 /a /x rw");
        for (int i = 0; i < 100; i++)
                n += (size_t) snprintf(long_line + n, sizeof(long_line) - n, " shared:%d", i);
        snprintf(long_line + n, sizeof(long_line) - n, " - cgroup2 none rw\n3 2 0:38 /a/b /y rw - cgroup2 none rw\n");
        check_root(long_line, false, "/a/b/c", "/a/b");

        ASSERT_ERR(mountinfo_cgroup_ns_root(NULL, false, "/a", &(char *) { NULL }), EBADMSG);
}

static void check_choose(CgroupNsRelation rel, const char *mountinfo, bool v1, const char *own, const char *want) {
        _cleanup_free_ char *root = NULL;

        ASSERT_OK(cgroup_view_choose_root(rel, mountinfo, v1, own, &root));
        if (!want)
                ASSERT_TRUE(root == NULL);
        else
                ASSERT_STREQ(root, want);
}

static void test_choose_root(void) {
        char *root = NULL;

        /* The daemon's own namespace: nothing is read. */
        check_choose(CGROUP_NS_SAME, NULL, false, "/x", NULL);
        /* Another namespace: the mounts say, else the peer's own cgroup. */
        check_choose(CGROUP_NS_OTHER, container_mountinfo, false, "/pdnsroot/app", "/pdnsroot");
        check_choose(CGROUP_NS_OTHER, "", false, "/pdfleet-a/job", "/pdfleet-a/job");
        check_choose(CGROUP_NS_OTHER, "", false, "/pdfleet-a//job/", "/pdfleet-a/job");
        check_choose(CGROUP_NS_OTHER, "", false, "/", NULL);
        check_choose(CGROUP_NS_OTHER, "", true, NULL, NULL);
        /* A peer outside the daemon's own namespace. */
        check_choose(CGROUP_NS_OTHER, "", false, "/../../host.slice", NULL);
        check_choose(CGROUP_NS_OTHER, "", false, "/..", NULL);
        /* Unknown: only the peer's own mounts move its root. */
        check_choose(CGROUP_NS_UNKNOWN, container_mountinfo, false, "/pdnsroot/app", "/pdnsroot");
        check_choose(CGROUP_NS_UNKNOWN, "2 1 0:38 / /sys/fs/cgroup rw - cgroup2 none rw\n", false, "/user.slice", NULL);
        check_choose(CGROUP_NS_UNKNOWN, container_mountinfo, true, "/process_api/c1", "/process_api/c1");

        ASSERT_ERR(cgroup_view_choose_root(CGROUP_NS_OTHER, "", false, "relative", &root), EBADMSG);
        ASSERT_ERR(cgroup_view_choose_root(CGROUP_NS_OTHER, "", false, "/a/../..", &root), EBADMSG);
        ASSERT_ERR(cgroup_view_choose_root(CGROUP_NS_OTHER, NULL, false, "/a", &root), EBADMSG);
        ASSERT_TRUE(root == NULL);
}

static void check_to_real(const char *root, const char *path, const char *want) {
        _cleanup_free_ char *real = NULL;

        ASSERT_OK(cgroup_view_to_real(root, path, &real));
        ASSERT_STREQ(real, want);
}

static void test_to_real(void) {
        char long_path[CGROUP_PATH_MAX], *real = NULL;

        check_to_real(NULL, "/x/y", "/x/y");
        check_to_real("/", "/x", "/x");
        check_to_real(NULL, NULL, "/");
        check_to_real("/a/b", "/", "/a/b");
        check_to_real("/a/b", "", "/a/b");
        check_to_real("/a/b", NULL, "/a/b");
        check_to_real("/a/b", "/c", "/a/b/c");
        check_to_real("/a/b", "//c//d/", "/a/b/c/d");
        check_to_real("/a/b", "/..c/d..", "/a/b/..c/d..");

        /* Nothing climbs above the root. */
        ASSERT_ERR(cgroup_view_to_real("/a/b", "/..", &real), EINVAL);
        ASSERT_ERR(cgroup_view_to_real("/a/b", "/c/../..", &real), EINVAL);
        ASSERT_ERR(cgroup_view_to_real("/a/b", "/./c", &real), EINVAL);
        ASSERT_ERR(cgroup_view_to_real("/a/b", "c", &real), EINVAL);
        ASSERT_ERR(cgroup_view_to_real("/a/b", "/c\n", &real), EINVAL);

        /* Each part fits, the joined path does not. */
        memset(long_path, 'x', sizeof(long_path) - 1);
        long_path[sizeof(long_path) - 1] = 0;
        for (size_t i = 0; i < sizeof(long_path) - 1; i += 200)
                long_path[i] = '/';
        ASSERT_OK(cgroup_view_to_real(NULL, long_path, &real));
        free(real);
        real = NULL;
        ASSERT_ERR(cgroup_view_to_real("/a/b", long_path, &real), EINVAL);
        ASSERT_TRUE(real == NULL);
}

static void test_from_real(void) {
        const char *real = "/a/b/c";

        ASSERT_STREQ(cgroup_view_from_real("/a/b", "/a/b"), "/");
        ASSERT_STREQ(cgroup_view_from_real("/a/b", real), "/c");
        ASSERT_TRUE(cgroup_view_from_real("/a/b", real) == real + 4);
        ASSERT_TRUE(cgroup_view_from_real("/a/b", "/a/bc") == NULL);
        ASSERT_TRUE(cgroup_view_from_real("/a/b", "/a") == NULL);
        ASSERT_TRUE(cgroup_view_from_real("/a/b", "/") == NULL);
        ASSERT_TRUE(cgroup_view_from_real("/a/b", NULL) == NULL);
        ASSERT_STREQ(cgroup_view_from_real(NULL, "/x"), "/x");
        ASSERT_STREQ(cgroup_view_from_real("/", "/"), "/");

        ASSERT_TRUE(cgroup_view_root(NULL, false) == NULL);
        cgroup_view_done(NULL);
}

/* The event a subscriber gets from @b, parsed, with the envelope a prefix adds. */
static json_t *parse_body(const Body *b) {
        _cleanup_free_ char *whole = NULL;
        json_t *o;

        ASSERT_EQ(b->size, strlen(b->data) + 1);
        ASSERT_TRUE(asprintf(&whole, "{\"parameters\":{\"event\":{\"seq\":1,%s", b->data) > 0);
        o = json_loads(whole, 0, NULL);
        ASSERT_TRUE(o);
        return o;
}

static void check_view(json_t *event, const char *root, const char *want_cgroup, const char *want_node) {
        _cleanup_(event_view_done) EventView v = {};
        Body *b = test_body_new(event, 42, 0), *out;
        json_t *o, *ev;

        ASSERT_TRUE(b);
        b->flags |= BODY_NO_COUNT;
        ASSERT_OK(event_view_init(&v, root));
        out = event_body_view(b, &v);
        ASSERT_TRUE(out && out != b);
        ASSERT_EQ(out->flags, b->flags);
        ASSERT_U64_EQ(out->monotonic_us, 42);
        o = parse_body(out);
        ev = json_object_get(json_object_get(o, "parameters"), "event");
        ASSERT_STREQ(json_string_value(json_object_get(ev, "cgroup")), want_cgroup);
        ASSERT_TRUE(json_object_get(ev, "time_us") != NULL);
        if (want_node)
                ASSERT_STREQ(json_string_value(json_object_get(json_object_get(ev, "node"), "cgroup")), want_node);
        json_decref(o);
        body_unref(out);
        body_unref(b);
}

static json_t *protection_event(const char *cgroup) {
        json_t *node = json_pack("{s:s, s:I}", "cgroup", cgroup, "usage", (json_int_t) 1);

        return event_protection_new(cgroup, "low", "none", node, 1, 2);
}

static void test_body_view(void) {
        EventView none = {};
        Body *b, *same;

        check_view(event_pressure_new("/a/b/c", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/a/b", "/c", NULL);
        check_view(event_pressure_new("/a/b", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/a/b", "/", NULL);
        check_view(protection_event("/a/b/c/d"), "/a/b", "/c/d", "/c/d");
        check_view(protection_event("/a/b"), "/a/b", "/", "/");
        /* A sibling whose name begins like the root is not touched (it never reaches such a peer anyway). */
        check_view(event_pressure_new("/a/bc", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/a/b", "/a/bc", NULL);
        /* Roots that JSON escapes: a quote, a backslash, non-ASCII. */
        check_view(event_pressure_new("/p\"o\\d/x", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/p\"o\\d", "/x", NULL);
        check_view(event_pressure_new("/p\xc3\xa9/x", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/p\xc3\xa9", "/x", NULL);
        check_view(event_pressure_new("/p\xc3\xa9x/y", "psi", RESOURCE_MEMORY, NULL, 1, 2), "/p\xc3\xa9", "/p\xc3\xa9x/y", NULL);

        /* A whole message, whose names are rewritten once: "/a/a/x" beneath root "/a" is "/a/x". */
        {
                _cleanup_(event_view_done) EventView v = {};
                const char text[] = "{\"cgroup\":\"/a/a/x\",\"node\":{\"cgroup\":\"/a\"}}";
                size_t size = sizeof(text);
                char *msg = strdup(text);

                ASSERT_OK(event_view_init(&v, "/a"));
                msg = event_message_view(msg, &size, &v);
                ASSERT_STREQ(msg, "{\"cgroup\":\"/a/x\",\"node\":{\"cgroup\":\"/\"}}");
                ASSERT_EQ(size, strlen(msg) + 1);
                free(msg);
                ASSERT_TRUE(event_message_view(NULL, &size, &v) == NULL);
        }

        /* One copy per root, shared by every peer with it, and kept past the body. */
        {
                _cleanup_(event_view_done) EventView v1 = {}, v1_again = {}, v2 = {};
                Body *a, *a_again, *other;

                ASSERT_OK(event_view_init(&v1, "/a"));
                ASSERT_OK(event_view_init(&v1_again, "/a"));
                ASSERT_OK(event_view_init(&v2, "/a/b"));
                b = test_body_new(event_pressure_new("/a/b/c", "psi", RESOURCE_MEMORY, NULL, 1, 2), 2, 0);
                ASSERT_TRUE(b);
                a = event_body_view(b, &v1);
                a_again = event_body_view(b, &v1_again);
                other = event_body_view(b, &v2);
                ASSERT_TRUE(a && a != b && a_again == a && other && other != a && other != b);
                ASSERT_EQ(a->n_ref, 3); /* two peers and the body */
                ASSERT_EQ(other->n_ref, 2);
                ASSERT_TRUE(memmem(a->data, a->size, "\"cgroup\":\"/b/c\"", 15) != NULL);
                ASSERT_TRUE(memmem(other->data, other->size, "\"cgroup\":\"/c\"", 13) != NULL);
                body_unref(b);
                ASSERT_EQ(a->n_ref, 2);
                ASSERT_EQ(other->n_ref, 1);
                body_unref(a);
                body_unref(a_again);
                body_unref(other);
        }

        /* No root: the same body, one more reference. */
        ASSERT_OK(event_view_init(&none, "/"));
        ASSERT_TRUE(none.root == NULL);
        b = test_body_new(event_pressure_new("/a", "psi", RESOURCE_MEMORY, NULL, 1, 2), 2, 0);
        same = event_body_view(b, &none);
        ASSERT_TRUE(same == b);
        ASSERT_EQ(b->n_ref, 2);
        body_unref(same);
        body_unref(b);
        event_view_done(&none);
}

static void test_peer_view(void) {
        _cleanup_free_ char *cgroups = NULL, *v2 = NULL, *v1 = NULL;
        CgroupNsId own, other;
        CgroupView v = {};
        pid_t child;

        ASSERT_OK(cgroup_ns_id_of(0, &own));
        ASSERT_TRUE(own.valid);
        /* Our own namespace: nothing else is read. */
        ASSERT_OK(peer_view_read_proc(getpid(), &own, &v));
        ASSERT_TRUE(!v.v2_root && !v.v1_root);

        /* Pretending the daemon lives elsewhere: this process's own cgroups become its roots. */
        other = own;
        other.ino++;
        ASSERT_OK(read_full_file("/proc/self/cgroup", 65536, &cgroups, NULL));
        ASSERT_OK(proc_cgroup_parse(cgroups, &v2, &v1));
        ASSERT_OK(peer_view_read_proc(getpid(), &other, &v));
        if (v2 && !streq(v2, "/"))
                ASSERT_STREQ(v.v2_root, v2);
        else
                ASSERT_TRUE(v.v2_root == NULL);
        if (v1 && !streq(v1, "/"))
                ASSERT_STREQ(v.v1_root, v1);
        else
                ASSERT_TRUE(v.v1_root == NULL);
        cgroup_view_done(&v);

        /* A peer that is gone (reaped: its pid names nobody). */
        child = fork();
        ASSERT_TRUE(child >= 0);
        if (child == 0)
                _exit(0);
        ASSERT_EQ(waitpid(child, NULL, 0), child);
        ASSERT_ERR(peer_view_read_proc(child, &own, &v), ESRCH);
        ASSERT_ERR(peer_view_read(-1, child, &own, &v), ESRCH);
        ASSERT_TRUE(!v.v2_root && !v.v1_root);
}

int main(void) {
        test_mountinfo_root();
        test_choose_root();
        test_to_real();
        test_from_real();
        test_body_view();
        test_peer_view();
        return 0;
}
