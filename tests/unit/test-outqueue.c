/* SPDX-License-Identifier: MIT */
/*
 * Output queues (daemon/protocol/outqueue.c) over a real socketpair: bytes arrive
 * whole and in order through partial writes and ring wrap-around, shared
 * bodies are referenced once per queued entry, the byte limit refuses an
 * event without queuing any of it, and a gone peer is an error.
 */
#include <sys/socket.h>
#include <unistd.h>

#include "fail-inject.h"
#include "outqueue.h"
#include "tests.h"
#include "util.h"

typedef struct Pair {
        int w, r;
} Pair;

static Pair pair_new(int sndbuf) {
        int fds[2];
        Pair p;

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds));
        if (sndbuf > 0)
                ASSERT_OK(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
        p.w = fds[0];
        p.r = fds[1];
        return p;
}

static void pair_close(Pair *p) {
        safe_close(p->w);
        safe_close(p->r);
}

/* Read what is there (up to @size bytes) into @buf; returns the count. */
static size_t drain(int fd, char *buf, size_t size) {
        size_t got = 0;

        while (got < size) {
                ssize_t n = read(fd, buf + got, size - got);
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        return got;
}

static void test_body_refcount(void) {
        Body *b = body_new("hello", 5);

        ASSERT_TRUE(b);
        ASSERT_EQ(b->n_ref, 1);
        ASSERT_EQ(b->size, 5);
        ASSERT_TRUE(memcmp(b->data, "hello", 5) == 0);
        ASSERT_TRUE(body_ref(b) == b);
        ASSERT_EQ(b->n_ref, 2);
        ASSERT_TRUE(body_unref(b) == NULL);
        ASSERT_EQ(b->n_ref, 1);
        ASSERT_TRUE(body_unref(NULL) == NULL);
        ASSERT_TRUE(body_ref(NULL) == NULL);
        body_unref(b);
}

static void test_order_and_ownership(void) {
        Pair p = pair_new(0);
        Body *b = body_new("BODY", 4);
        OutQueue q;
        char buf[256];
        size_t n;

        outqueue_init(&q);
        ASSERT_TRUE(outqueue_is_empty(&q));
        ASSERT_OK(outqueue_push_event(&q, "p1:", 3, b, 0, 0));
        ASSERT_OK(outqueue_push_owned(&q, strdup("own"), 3));
        ASSERT_OK(outqueue_push_event(&q, "p2:", 3, b, 0, 0));
        /* One body, referenced by each entry. */
        ASSERT_EQ(b->n_ref, 3);
        ASSERT_EQ(q.n, 3);
        ASSERT_EQ(q.bytes, 3 + 4 + 3 + 3 + 4);
        ASSERT_TRUE(!outqueue_is_empty(&q));
        /* The reply is owed until it is wholly written; events are not replies. */
        ASSERT_TRUE(outqueue_owes_reply(&q));
        ASSERT_EQ(q.n_replies, 1);

        ASSERT_EQ(outqueue_flush(&q, p.w), 1);
        ASSERT_TRUE(outqueue_is_empty(&q));
        ASSERT_TRUE(!outqueue_owes_reply(&q));
        ASSERT_EQ(q.n_replies, 0);
        ASSERT_EQ(q.bytes, 0);
        ASSERT_EQ(b->n_ref, 1);
        n = drain(p.r, buf, sizeof(buf));
        ASSERT_EQ(n, 17);
        buf[n] = '\0';
        ASSERT_STREQ(buf, "p1:BODYownp2:BODY");

        /* Nothing queued: flushing is a no-op that reports empty. */
        ASSERT_EQ(outqueue_flush(&q, p.w), 1);

        /* Whatever is left when the client goes is released. */
        ASSERT_OK(outqueue_push_event(&q, "x", 1, b, 0, 0));
        ASSERT_OK(outqueue_push_owned(&q, strdup("left over"), 9));
        ASSERT_EQ(b->n_ref, 2);
        outqueue_done(&q);
        ASSERT_EQ(b->n_ref, 1);
        ASSERT_EQ(q.n, 0);
        ASSERT_TRUE(q.entries == NULL);
        body_unref(b);
        pair_close(&p);
}

static void test_limit(void) {
        Body *b = body_new("0123456789", 10);
        OutQueue q;
        size_t bytes, n;
        int k = 0;

        outqueue_init(&q);
        /* Too long a prefix is refused whatever the limit. */
        ASSERT_ERR(outqueue_push_event(&q, "x", OUT_PREFIX_MAX + 1, b, 0, 0), EINVAL);
        ASSERT_EQ(q.n, 0);

        /* Fill up to the limit: the refused event leaves the queue as it was. */
        for (unsigned i = 0; i < 1000 && k == 0; i++)
                k = outqueue_push_event(&q, "pp", 2, b, 0, 4096);
        ASSERT_EQ(k, -ENOBUFS);
        ASSERT_TRUE(q.n > 0);
        ASSERT_TRUE(q.bytes + q.n_alloc * sizeof(OutEntry) <= 4096);
        ASSERT_EQ(b->n_ref, 1 + q.n);
        bytes = q.bytes;
        n = q.n;
        ASSERT_ERR(outqueue_push_event(&q, "pp", 2, b, 0, 4096), ENOBUFS);
        ASSERT_EQ(q.n, n);
        ASSERT_U64_EQ(q.bytes, bytes);
        /* Limit 0 (final messages) always queues. */
        ASSERT_OK(outqueue_push_event(&q, "pp", 2, b, 0, 0));
        ASSERT_EQ(q.n, n + 1);
        outqueue_done(&q);
        ASSERT_EQ(b->n_ref, 1);
        body_unref(b);
}

/* Many events through a small socket buffer: partial writes, wrap-around, growth. */
static void test_partial_writes(void) {
        enum { EVENTS = 400, BODY = 333 };
        Pair p = pair_new(4096);
        char data[BODY], prefix[32];
        char *expected = NULL, *got = NULL;
        size_t n_expected = 0, n_got = 0, cap = (size_t) EVENTS * (BODY + 32);
        unsigned pushed = 0, full = 0;
        Body *b;
        OutQueue q;

        for (size_t i = 0; i < BODY; i++)
                data[i] = (char) ('a' + i % 26);
        b = body_new(data, BODY);
        ASSERT_TRUE(b);
        expected = malloc(cap);
        got = malloc(cap);
        ASSERT_TRUE(expected && got);
        outqueue_init(&q);

        while (pushed < EVENTS || !outqueue_is_empty(&q)) {
                int k;

                /* Bursts larger than the socket buffer; the ring wraps while it holds entries. */
                for (unsigned j = 0; j < 37 && pushed < EVENTS; j++, pushed++) {
                        int len = snprintf(prefix, sizeof(prefix), "{seq:%u}", pushed);

                        ASSERT_OK(outqueue_push_event(&q, prefix, (size_t) len, b, 0, 0));
                        memcpy(expected + n_expected, prefix, (size_t) len);
                        memcpy(expected + n_expected + len, data, BODY);
                        n_expected += (size_t) len + BODY;
                }
                k = outqueue_flush(&q, p.w);
                ASSERT_OK(k);
                if (k == 0)
                        full++;
                /* The reader takes less than was written, now and then. */
                n_got += drain(p.r, got + n_got, full % 2 ? 1000 : cap - n_got);
                ASSERT_TRUE(n_got + q.bytes <= n_expected);
        }
        n_got += drain(p.r, got + n_got, cap - n_got);
        ASSERT_U64_EQ(n_got, n_expected);
        ASSERT_TRUE(memcmp(got, expected, n_expected) == 0);
        /* The socket was full at times: partial writes were exercised. */
        ASSERT_TRUE(full > 0);
        /* After the burst the ring is given back. */
        ASSERT_TRUE(q.entries == NULL);
        ASSERT_EQ(b->n_ref, 1);
        printf("outqueue: %u events, %zu bytes, socket full %u times\n", EVENTS, n_expected, full);

        outqueue_done(&q);
        body_unref(b);
        free(expected);
        free(got);
        pair_close(&p);
}

/* Growth while the ring's head is not at slot 0 keeps the order. */
static void test_wrap_then_grow(void) {
        Pair p = pair_new(0);
        Body *b = body_new("", 0);
        const char *names[] = { "a", "b", "c", "d", "e", "f", "g" };
        OutQueue q;
        char buf[64];
        size_t n;

        outqueue_init(&q);
        ASSERT_OK(outqueue_push_event(&q, "0", 1, b, 0, 0));
        ASSERT_OK(outqueue_push_event(&q, "1", 1, b, 0, 0));
        ASSERT_EQ(outqueue_flush(&q, p.w), 1);
        ASSERT_EQ(q.n_alloc, 4);
        ASSERT_EQ(q.head, 2);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                ASSERT_OK(outqueue_push_event(&q, names[i], 1, b, 0, 0));
        ASSERT_EQ(q.n_alloc, 8);
        ASSERT_EQ(outqueue_flush(&q, p.w), 1);
        n = drain(p.r, buf, sizeof(buf) - 1);
        buf[n] = '\0';
        ASSERT_STREQ(buf, "01abcdefg");
        outqueue_done(&q);
        body_unref(b);
        pair_close(&p);
}

static void test_direct_and_partial(void) {
        Pair p = pair_new(0);
        Body *b = body_new("-body-", 6);
        OutQueue q;
        char buf[64];
        size_t n;

        /* Written at once on an empty queue. */
        ASSERT_EQ(outqueue_write_direct(p.w, "pre", 3, b), 9);
        n = drain(p.r, buf, sizeof(buf) - 1);
        buf[n] = '\0';
        ASSERT_STREQ(buf, "pre-body-");

        /* Only some of it went out: the rest is queued, beyond any limit. */
        outqueue_init(&q);
        ASSERT_OK(outqueue_push_event_partial(&q, "pre", 3, b, 0, 5));
        ASSERT_EQ(q.bytes, 4);
        ASSERT_OK(outqueue_push_owned(&q, strdup("|next"), 5));
        ASSERT_EQ(outqueue_flush(&q, p.w), 1);
        n = drain(p.r, buf, sizeof(buf) - 1);
        buf[n] = '\0';
        ASSERT_STREQ(buf, "ody-|next");
        outqueue_done(&q);

        /* The peer is gone: an error, not a hang or a signal. */
        p.r = safe_close(p.r);
        ASSERT_TRUE(outqueue_write_direct(p.w, "pre", 3, b) == -EPIPE);
        outqueue_init(&q);
        ASSERT_OK(outqueue_push_event(&q, "pre", 3, b, 0, 0));
        ASSERT_ERR(outqueue_flush(&q, p.w), EPIPE);
        ASSERT_EQ(q.n, 1);
        outqueue_done(&q);
        ASSERT_EQ(b->n_ref, 1);
        body_unref(b);
        pair_close(&p);
}

/*
 * Out of memory: body_new() gives NULL; a push that cannot grow the ring
 * is -ENOMEM and leaves the queue as it was (what is queued still goes
 * out, in order); an owned buffer that cannot be queued is freed (no leak
 * under valgrind or ASan).
 */
static void test_out_of_memory(void) {
        Pair p = pair_new(0);
        OutQueue q;
        Body *b;
        char buf[64];

        fail_inject_reset();
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_TRUE(body_new("x", 1) == NULL);
        ASSERT_EQ(fail_inject_fired(FAIL_MALLOC), 1);

        b = body_new("B", 1);
        ASSERT_TRUE(b);
        outqueue_init(&q);

        /* The first push allocates the ring: failing, nothing is queued. */
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_ERR(outqueue_push_event(&q, "a", 1, b, 0, 0), ENOMEM);
        ASSERT_EQ(b->n_ref, 1);
        ASSERT_TRUE(outqueue_is_empty(&q));
        ASSERT_EQ(q.bytes, 0);

        /* Fill the four slots, then the growth fails: the queue is unchanged. */
        for (int i = 0; i < 4; i++)
                ASSERT_OK(outqueue_push_event(&q, "a", 1, b, 0, 0));
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_ERR(outqueue_push_event(&q, "c", 1, b, 0, 0), ENOMEM);
        ASSERT_EQ(b->n_ref, 5);
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_ERR(outqueue_push_owned(&q, strdup("lost"), 4), ENOMEM); /* the caller's strdup fails */
        fail_inject_after(FAIL_MALLOC, 2);
        ASSERT_ERR(outqueue_push_owned(&q, strdup("freed"), 5), ENOMEM); /* the ring growth fails */
        ASSERT_EQ(fail_inject_fired(FAIL_MALLOC), 5);
        ASSERT_EQ(q.n, 4);
        ASSERT_EQ(q.bytes, 8);

        /* What was queued still goes out whole. */
        ASSERT_EQ(outqueue_flush(&q, p.w), 1);
        ASSERT_EQ(drain(p.r, buf, sizeof(buf)), 8);
        ASSERT_TRUE(memcmp(buf, "aBaBaBaB", 8) == 0);
        ASSERT_EQ(b->n_ref, 1);
        fail_inject_reset();
        outqueue_done(&q);
        body_unref(b);
        pair_close(&p);
}

int main(void) {
        test_body_refcount();
        test_order_and_ownership();
        test_limit();
        test_partial_writes();
        test_wrap_then_grow();
        test_direct_and_partial();
        test_out_of_memory();
        printf("all outqueue tests passed\n");
        return 0;
}
