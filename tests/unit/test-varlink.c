/* SPDX-License-Identifier: MIT */
/* Varlink framing (split and merged reads, size limit) and call envelopes. */
#include <sys/socket.h>

#include "fail-inject.h"
#include "tests.h"
#include "util.h"
#include "varlink.h"

static void test_split_and_merged(void) {
        static const char stream[] = "{\"method\":\"a.B\"}\0{\"method\":\"c.D\",\"more\":true}\0{\"meth";
        VarlinkReader r;
        const char *msg;
        size_t len;

        /* Byte by byte: a message appears only when its NUL arrives. */
        varlink_reader_init(&r, 1024);
        for (size_t i = 0; i < 16; i++) {
                ASSERT_OK(varlink_reader_feed(&r, stream + i, 1));
                ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 0);
        }
        ASSERT_OK(varlink_reader_feed(&r, stream + 16, 1));
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        ASSERT_STREQ(msg, "{\"method\":\"a.B\"}");
        ASSERT_EQ(len, 16);
        varlink_reader_done(&r);

        /* Merged: two complete messages and a partial one in one read. */
        varlink_reader_init(&r, 1024);
        ASSERT_OK(varlink_reader_feed(&r, stream, sizeof(stream) - 1));
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        ASSERT_STREQ(msg, "{\"method\":\"a.B\"}");
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        ASSERT_STREQ(msg, "{\"method\":\"c.D\",\"more\":true}");
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 0);
        ASSERT_EQ(varlink_reader_pending(&r), strlen("{\"meth"));
        ASSERT_OK(varlink_reader_feed(&r, "od\":\"e.F\"}", 11));
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        ASSERT_STREQ(msg, "{\"method\":\"e.F\"}");
        ASSERT_EQ(varlink_reader_pending(&r), 0);
        varlink_reader_done(&r);
}

static void test_size_limit(void) {
        char big[200];
        VarlinkReader r;
        const char *msg;
        size_t len;

        memset(big, 'x', sizeof(big));
        /* A partial message over the limit is refused before its NUL. */
        varlink_reader_init(&r, 100);
        ASSERT_OK(varlink_reader_feed(&r, big, 101));
        ASSERT_ERR(varlink_reader_next(&r, &msg, &len), EMSGSIZE);
        varlink_reader_done(&r);

        /* A complete one too; exactly the limit is fine. */
        varlink_reader_init(&r, 100);
        big[100] = 0;
        ASSERT_OK(varlink_reader_feed(&r, big, 101));
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        ASSERT_EQ(len, 100);
        big[100] = 'x';
        big[150] = 0;
        ASSERT_OK(varlink_reader_feed(&r, big, 151));
        ASSERT_ERR(varlink_reader_next(&r, &msg, &len), EMSGSIZE);
        varlink_reader_done(&r);
}

static void test_fill_from_socket(void) {
        int sv[2];
        VarlinkReader r;
        const char *msg;
        size_t len;

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
        varlink_reader_init(&r, 1024);
        ASSERT_ERR(varlink_reader_fill(&r, sv[0]), EAGAIN);
        ASSERT_EQ(write(sv[1], "{\"method\":\"a.B\"}", 17), 17);
        ASSERT_EQ(varlink_reader_fill(&r, sv[0]), 17);
        ASSERT_EQ(varlink_reader_next(&r, &msg, &len), 1);
        close(sv[1]);
        ASSERT_EQ(varlink_reader_fill(&r, sv[0]), 0);
        varlink_reader_done(&r);
        close(sv[0]);
}

static int parse(const char *s, VarlinkCall *c) {
        return varlink_call_parse(s, strlen(s), c);
}

static void test_call_parse(void) {
        VarlinkCall c;

        ASSERT_OK(parse("{\"method\":\"io.pressured.GetStatus\"}", &c));
        ASSERT_STREQ(c.method, "io.pressured.GetStatus");
        ASSERT_TRUE(json_is_object(c.parameters));
        ASSERT_TRUE(!c.more && !c.oneway);
        varlink_call_done(&c);

        ASSERT_OK(parse("{\"method\":\"a.B\",\"parameters\":{\"x\":1},\"more\":true,\"future\":3}", &c));
        ASSERT_TRUE(c.more);
        ASSERT_EQ(json_integer_value(json_object_get(c.parameters, "x")), 1);
        varlink_call_done(&c);

        ASSERT_OK(parse("{\"method\":\"a.B\",\"oneway\":true,\"parameters\":null}", &c));
        ASSERT_TRUE(c.oneway);
        varlink_call_done(&c);

        /* parameters that are not an object: InvalidParameter, the call is kept */
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"parameters\":[1]}", &c), EINVAL);
        ASSERT_STREQ(c.method, "a.B");
        varlink_call_done(&c);

        /* malformed: the connection is closed */
        ASSERT_ERR(parse("", &c), EBADMSG);
        ASSERT_ERR(parse("not json", &c), EBADMSG);
        ASSERT_ERR(parse("[1,2]", &c), EBADMSG);
        ASSERT_ERR(parse("{}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":5}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"\"}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"more\":1}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"oneway\":\"yes\"}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"method\":\"c.D\"}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"parameters\":{\"s\":\"\\u0000\"}}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a\xff\"}", &c), EBADMSG);
        ASSERT_ERR(parse("{\"method\":\"a.B\",\"parameters\":{\"n\":100000000000000000000000}}", &c), EBADMSG);
}

static void test_replies(void) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t n;

        a = varlink_reply_new(json_pack("{s:i}", "delivered", 3), false, &n);
        ASSERT_TRUE(a);
        ASSERT_EQ(n, strlen(a) + 1);
        ASSERT_STREQ(a, "{\"parameters\":{\"delivered\":3}}");

        b = varlink_error_new("io.pressured.NoSuchCgroup", json_pack("{s:s}", "cgroup", "/x"), &n);
        ASSERT_TRUE(b);
        ASSERT_STREQ(b, "{\"error\":\"io.pressured.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}");
        free(a);
        a = varlink_reply_new(NULL, true, &n);
        ASSERT_STREQ(a, "{\"parameters\":{},\"continues\":true}");
}

/*
 * The reply builders steal their parameters on every path: with each of
 * their allocations failing in turn, the caller's extra reference is the
 * only one left afterwards, and nothing leaks (valgrind, ASan).
 */
static char *build(int which, json_t *params, size_t *ret_size) {
        switch (which) {
        case 0:
                return varlink_reply_new(params, false, ret_size);
        case 1:
                return varlink_reply_new(params, true, ret_size);
        default:
                return varlink_error_new("io.pressured.NoSuchCgroup", params, ret_size);
        }
}

static void test_replies_out_of_memory(void) {
        static const char *const expected[] = {
                "{\"parameters\":{\"cgroup\":\"/x\"}}",
                "{\"parameters\":{\"cgroup\":\"/x\"},\"continues\":true}",
                "{\"error\":\"io.pressured.NoSuchCgroup\",\"parameters\":{\"cgroup\":\"/x\"}}",
        };

        for (int which = 0; which < 3; which++)
                for (unsigned n = 1;; n++) {
                        json_t *params = json_pack("{s:s}", "cgroup", "/x");
                        size_t size = 12345;
                        bool injected;
                        char *m;

                        ASSERT_TRUE(params);
                        json_incref(params);
                        fail_inject_reset();
                        fail_inject_after(FAIL_ALLOC, n);
                        m = build(which, params, &size);
                        injected = fail_inject_fired(FAIL_ALLOC) > 0;
                        fail_inject_reset();
                        if (params->refcount != 1)
                                TEST_FAIL("builder %d, allocation %u failing: %zu references to the parameters "
                                          "left, expected only the test's own", which, n, (size_t) params->refcount);
                        json_decref(params);
                        if (!injected) {
                                /* Past the last allocation: it worked. */
                                ASSERT_STREQ(m, expected[which]);
                                ASSERT_EQ(size, strlen(m) + 1);
                                free(m);
                                ASSERT_TRUE(n > 1);
                                break;
                        }
                        if (m)
                                TEST_FAIL("builder %d, allocation %u failing: succeeded anyway with \"%s\"",
                                          which, n, m);
                        ASSERT_EQ(size, 12345); /* not written on failure */
                }

        /* NULL parameters ({}) and each allocation failing: nothing to leak but the builder's own. */
        for (unsigned n = 1;; n++) {
                size_t size = 1;
                char *m;

                fail_inject_reset();
                fail_inject_after(FAIL_ALLOC, n);
                m = varlink_reply_new(NULL, true, &size);
                if (!fail_inject_fired(FAIL_ALLOC)) {
                        ASSERT_STREQ(m, "{\"parameters\":{},\"continues\":true}");
                        free(m);
                        break;
                }
                ASSERT_TRUE(m == NULL);
        }
        fail_inject_reset();

        /* An error name jansson refuses (not UTF-8): NULL, and the parameters are still taken. */
        {
                json_t *params = json_object();
                size_t size = 1;

                ASSERT_TRUE(params);
                json_incref(params);
                ASSERT_TRUE(varlink_error_new("io.pressured.\xff", params, &size) == NULL);
                ASSERT_EQ(params->refcount, 1);
                ASSERT_EQ(size, 1);
                json_decref(params);
        }
}

int main(void) {
        test_split_and_merged();
        test_size_limit();
        test_fill_from_socket();
        test_call_parse();
        test_replies();
        test_replies_out_of_memory();
        return 0;
}
