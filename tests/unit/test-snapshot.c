/* SPDX-License-Identifier: MIT */
/*
 * The takeover state's format (daemon/model/snapshot.c): every field
 * round-trips; the checked-in snapshots of every earlier version still
 * decode to what they held; a snapshot truncated at any byte, with any
 * byte changed, or of garbage is refused and never misread; a newer
 * version is refused as such; the size and count bounds hold in both
 * directions; tags a reader does not know are skipped.
 *
 * With --write-fixture FILE it writes the sample snapshot, which is how
 * tests/unit/data/snapshot-v<N>.bin was made for the current version;
 * --write-full FILE writes the full sample, every record today's writer
 * has (snapshot-v<N>-full.bin, from version 2 on). --dump FILE prints a
 * snapshot decoded, as canonical text: one "path = value" per line, the
 * paths named after the members of the Snapshot structs. Every
 * snapshot-*.bin of the data folder has its dump beside it
 * (snapshot-*.txt), and the test compares them byte for byte: that text is
 * what a rewrite of the format must still read from those bytes. The
 * sample and the full sample must also encode to exactly the bytes of the
 * current version's snapshot-v<N>.bin and snapshot-v<N>-full.bin.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot.h"
#include "tests.h"
#include "util.h"

static char *xstrdup(const char *s) {
        char *d = strdup(s);

        ASSERT_TRUE(d);
        return d;
}

static SnapshotBytes xbytes(const char *s) {
        SnapshotBytes b;

        ASSERT_OK(snapshot_bytes_set(&b, s, strlen(s) + 1));
        return b;
}

/* A snapshot with every field set, each to a value of its own. */
static void sample(Snapshot *s) {
        SnapshotRegistration *r;
        SnapshotClient *c;

        *s = (Snapshot) {
                .serial = 7,
                .complete = true,
                .generation = 3,
                .start_monotonic_us = 123456789,
                .live_name = xstrdup("live-6"),
                .socket_path = xstrdup("/run/pressured/io.pressured"),
                .proxy_paths = { [RESOURCE_MEMORY] = xstrdup("/run/pressured/memory-pressure") },
                .next_client_id = 41,
                .next_proxy_id = 12,
                .next_registration_id = 9,
                .psi_unprivileged = true,
                .n_counters = 2,
                .n_registrations = 2,
                .n_clients = 2,
                .n_proxies = 1,
                .n_reclaim = 1,
        };
        for (size_t i = 0; i < ELEMENTSOF(s->latency.buckets); i++)
                s->latency.buckets[i] = 100 + i;
        s->latency.count = 1000;
        s->latency.sum_usec = 987654;

        s->counters = calloc(2, sizeof(*s->counters));
        ASSERT_TRUE(s->counters);
        s->counters[0] = (SnapshotCounter) { xstrdup("events_read"), 5000 };
        s->counters[1] = (SnapshotCounter) { xstrdup("events_delivered"), 250000 };

        s->registrations = calloc(2, sizeof(*s->registrations));
        ASSERT_TRUE(s->registrations);
        r = &s->registrations[0];
        *r = (SnapshotRegistration) {
                .id = 4,
                .type = SOURCE_PSI,
                .cgroup = xstrdup("/system.slice/foo.service"),
                .resource = RESOURCE_IO,
                .requested = { PSI_STALL_FULL, 100000, 1000000 },
                .used = { PSI_STALL_FULL, 200000, 2000000 },
                .vm_level = _LEVEL_INVALID,
                .vm_mode = _VMPRESSURE_MODE_INVALID,
                .adjusted = true,
                .dir_ino = 4242,
                .last_state = -1,
                .fast_charged = true,
                .fast_uid = 1000,
                .episode = {
                        .active = true,
                        .cur = { .start_us = 10, .end_us = 0, .events = 33, .peak = 120000, .peak_known = true },
                        .last_event_us = 20,
                        .unquiet_us = 30,
                        .have_sample = true,
                        .sample_us = 40,
                        .sample_total_us = 50,
                },
                .n_history = 2,
        };
        r->history = calloc(2, sizeof(*r->history));
        ASSERT_TRUE(r->history);
        r->history[0] = (EpisodeRecord) { 1, 2, 3, 4, true };
        r->history[1] = (EpisodeRecord) { 5, 6, 7, 8, false };

        r = &s->registrations[1];
        *r = (SnapshotRegistration) {
                .id = 8,
                .type = SOURCE_KILLS,
                .cgroup = xstrdup("/"),
                .resource = RESOURCE_MEMORY,
                .vm_level = LEVEL_CRITICAL,
                .vm_mode = VMPRESSURE_MODE_LOCAL,
                .last_state = 2,
                .n_tops = 2,
        };
        r->last_events.present = (1u << MEMORY_EVENT_HIGH) | (1u << MEMORY_EVENT_OOM_KILL);
        r->last_events.value[MEMORY_EVENT_HIGH] = 17;
        r->last_events.value[MEMORY_EVENT_OOM_KILL] = 3;
        r->tops = calloc(2, sizeof(*r->tops));
        ASSERT_TRUE(r->tops);
        r->tops[0] = (SnapshotKillsTop) { xstrdup("system.slice"), 2 };
        r->tops[1] = (SnapshotKillsTop) { xstrdup("user.slice"), 1 };

        s->clients = calloc(2, sizeof(*s->clients));
        ASSERT_TRUE(s->clients);
        c = &s->clients[0];
        *c = (SnapshotClient) {
                .id = 40,
                .uid = 1000,
                .gid = 100,
                .pid = 4321,
                .view_v2 = xstrdup("/machine.slice/ctr"),
                .view_v1 = xstrdup("/ctr"),
                .input = xbytes("{\"method\":\"io.pressured.GetSta"),
                .n_output = 2,
                .has_subscription = true,
                .subscription = {
                        .registration = 4,
                        .level = LEVEL_MEDIUM,
                        .explicit_psi = true,
                        .by_level = true,
                        .waiting = true,
                        .seq = 99,
                        .written_seq = 97,
                        .missed = 2,
                        .min_interval_usec = 500000,
                        .last_sent_usec = 777,
                        .pending = xbytes("\"kind\":\"pressure\"}}}"),
                        .pending_flags = 3,
                        .pending_monotonic_us = 888,
                        .pending_count = 12,
                },
                .owes_reexecute = true,
        };
        c->output = calloc(2, sizeof(*c->output));
        ASSERT_TRUE(c->output);
        c->output[0] = (SnapshotOutput) { 98, xbytes("rest of 98") };
        c->output[1] = (SnapshotOutput) { 0, xbytes("{\"parameters\":{}}") };
        s->clients[1] = (SnapshotClient) { .id = 39, .pid = 1 };

        s->proxies = calloc(1, sizeof(*s->proxies));
        ASSERT_TRUE(s->proxies);
        s->proxies[0] = (SnapshotProxyClient) {
                .id = 11,
                .pid = 555,
                .uid = 0,
                .unit = xstrdup("foo.service"),
                .line = xbytes("some 150000 2000000"),
                .line_done = true,
                .decide_by_usec = 4444,
                .registration = 4,
                .sent = 1234,
                .dropped = 5,
        };

        s->reclaim = calloc(1, sizeof(*s->reclaim));
        ASSERT_TRUE(s->reclaim);
        s->reclaim[0] = (SnapshotReclaim) { xstrdup("/system.slice"), 1 << 30, 1 << 20 };
}

/*
 * What version 2 added: the hook socket, two connections (one owed the
 * answer of a warning, one over the limit with input and output left),
 * and two warnings (one owed to nobody), their subscribers in every state.
 * Version 3 writes the connections as clients; version 2's fixture reads
 * into the same.
 */
static void sample_prekill(Snapshot *s) {
        static const PrekillWarned warned[] = {
                { .client = 39, .uid = 1000, .pid = 4711, .state = PREKILL_WAITING },
                { .client = 40, .uid = 0, .pid = 1, .state = PREKILL_ACKNOWLEDGED },
                { .client = 44, .uid = 1001, .pid = 99, .state = PREKILL_GONE },
        };

        s->prekill_path = xstrdup("/run/systemd/oomd.prekill.hook/pressured");
        s->next_hook_id = 8;
        s->prekill_last_id = 21;
        s->prekill_counters = (PrekillCounters) { .warned = 20, .acknowledged = 11, .deadline_reached = 6,
                                                  .nobody = 4 };
        s->prekill_warnings = calloc(2, sizeof(*s->prekill_warnings));
        s->hook_clients = calloc(2, sizeof(*s->hook_clients));
        ASSERT_TRUE(s->prekill_warnings && s->hook_clients);
        s->prekill_warnings[0] = (SnapshotPrekillWarning) {
                .id = 21, .victim = xstrdup("/oom.slice/victim.service"), .start_us = 5000, .realtime_us = 6000,
                .deadline_us = 755000, .hook = 7, .warned = malloc(sizeof(warned)), .n_warned = 3,
        };
        ASSERT_TRUE(s->prekill_warnings[0].warned);
        memcpy(s->prekill_warnings[0].warned, warned, sizeof(warned));
        s->prekill_warnings[1] = (SnapshotPrekillWarning) { .id = 19, .victim = xstrdup("/x"), .deadline_us = 1 };
        s->n_prekill_warnings = 2;
        s->hook_clients[0] = (SnapshotClient) { .id = 7, .uid = 0, .gid = 0, .pid = 321, .prekill_owed = 21 };
        s->hook_clients[1] = (SnapshotClient) { .id = 5, .uid = 65534, .gid = 65534, .pid = 322, .refused = true,
                                                .input = xbytes("{\"method\":\"x\"}"), .n_output = 1,
                                                .output = calloc(1, sizeof(SnapshotOutput)) };
        ASSERT_TRUE(s->hook_clients[1].output);
        s->hook_clients[1].output[0] = (SnapshotOutput) { 0, xbytes("half") };
        s->n_hook_clients = 2;
}

/*
 * Everything today's writer has that the fixtures written before it lack:
 * the report socket, the cpu and io proxy sockets with a proxied client
 * each, and a level stream (on a client of its own: a connection has one
 * stream).
 */
static void sample_full(Snapshot *s) {
        SnapshotProxyClient *proxies;
        SnapshotClient *clients;

        sample(s);
        sample_prekill(s);
        s->report_path = xstrdup("/run/systemd/report/io.pressured");
        s->proxy_paths[RESOURCE_CPU] = xstrdup("/run/pressured/cpu-pressure");
        s->proxy_paths[RESOURCE_IO] = xstrdup("/run/pressured/io-pressure");
        proxies = realloc(s->proxies, 3 * sizeof(*s->proxies));
        ASSERT_TRUE(proxies);
        s->proxies = proxies;
        s->proxies[1] = (SnapshotProxyClient) { .id = 12, .resource = RESOURCE_CPU, .pid = 556, .line_done = true };
        s->proxies[2] = (SnapshotProxyClient) { .id = 13, .resource = RESOURCE_IO, .pid = 557,
                                                .line = xbytes("some 1"), .decide_by_usec = 99 };
        s->n_proxies = 3;
        clients = realloc(s->clients, 3 * sizeof(*s->clients));
        ASSERT_TRUE(clients);
        s->clients = clients;
        s->clients[2] = (SnapshotClient) {
                .id = 45, .uid = 1000, .gid = 1000, .pid = 4322, .has_levels = true,
                .levels = { .cgroup = xstrdup("/app"), .seq = 5, .missed = 2, .sent = 3, .waiting = true },
        };
        s->n_clients = 3;
}

static void assert_bytes_eq(const SnapshotBytes *a, const SnapshotBytes *b) {
        ASSERT_EQ(a->size, b->size);
        if (a->size)
                ASSERT_TRUE(memcmp(a->data, b->data, a->size) == 0);
}

static void assert_str_eq(const char *a, const char *b) {
        if (!a || !b)
                ASSERT_TRUE(a == b);
        else
                ASSERT_STREQ(a, b);
}

static void assert_trigger_eq(const PsiTrigger *a, const PsiTrigger *b) {
        ASSERT_EQ(a->stall, b->stall);
        ASSERT_U64_EQ(a->threshold_us, b->threshold_us);
        ASSERT_U64_EQ(a->window_us, b->window_us);
}

static void assert_record_eq(const EpisodeRecord *a, const EpisodeRecord *b) {
        ASSERT_U64_EQ(a->start_us, b->start_us);
        ASSERT_U64_EQ(a->end_us, b->end_us);
        ASSERT_U64_EQ(a->events, b->events);
        ASSERT_U64_EQ(a->peak, b->peak);
        ASSERT_EQ(a->peak_known, b->peak_known);
}

static void assert_registration_eq(const SnapshotRegistration *a, const SnapshotRegistration *b) {
        ASSERT_U64_EQ(a->id, b->id);
        ASSERT_EQ(a->type, b->type);
        assert_str_eq(a->cgroup, b->cgroup);
        ASSERT_EQ(a->resource, b->resource);
        assert_trigger_eq(&a->requested, &b->requested);
        assert_trigger_eq(&a->used, &b->used);
        ASSERT_EQ(a->vm_level, b->vm_level);
        ASSERT_EQ(a->vm_mode, b->vm_mode);
        ASSERT_EQ(a->adjusted, b->adjusted);
        ASSERT_U64_EQ(a->dir_ino, b->dir_ino);
        ASSERT_EQ(a->last_events.present, b->last_events.present);
        for (int k = 0; k < _MEMORY_EVENT_MAX; k++)
                ASSERT_U64_EQ(a->last_events.value[k], b->last_events.value[k]);
        ASSERT_EQ(a->last_state, b->last_state);
        ASSERT_EQ(a->n_tops, b->n_tops);
        for (size_t i = 0; i < a->n_tops; i++) {
                assert_str_eq(a->tops[i].name, b->tops[i].name);
                ASSERT_U64_EQ(a->tops[i].oom_kill, b->tops[i].oom_kill);
        }
        ASSERT_EQ(a->fast_charged, b->fast_charged);
        ASSERT_EQ(a->fast_uid, b->fast_uid);
        ASSERT_EQ(a->episode.active, b->episode.active);
        assert_record_eq(&a->episode.cur, &b->episode.cur);
        ASSERT_U64_EQ(a->episode.last_event_us, b->episode.last_event_us);
        ASSERT_U64_EQ(a->episode.unquiet_us, b->episode.unquiet_us);
        ASSERT_EQ(a->episode.have_sample, b->episode.have_sample);
        ASSERT_U64_EQ(a->episode.sample_us, b->episode.sample_us);
        ASSERT_U64_EQ(a->episode.sample_total_us, b->episode.sample_total_us);
        ASSERT_EQ(a->n_history, b->n_history);
        for (size_t i = 0; i < a->n_history; i++)
                assert_record_eq(&a->history[i], &b->history[i]);
}

static void assert_subscription_eq(const SnapshotSubscription *a, const SnapshotSubscription *b) {
        ASSERT_U64_EQ(a->registration, b->registration);
        ASSERT_EQ(a->level, b->level);
        ASSERT_EQ(a->explicit_psi, b->explicit_psi);
        ASSERT_EQ(a->by_level, b->by_level);
        ASSERT_EQ(a->waiting, b->waiting);
        ASSERT_U64_EQ(a->seq, b->seq);
        ASSERT_U64_EQ(a->written_seq, b->written_seq);
        ASSERT_U64_EQ(a->missed, b->missed);
        ASSERT_U64_EQ(a->min_interval_usec, b->min_interval_usec);
        ASSERT_U64_EQ(a->last_sent_usec, b->last_sent_usec);
        assert_bytes_eq(&a->pending, &b->pending);
        ASSERT_EQ(a->pending_flags, b->pending_flags);
        ASSERT_U64_EQ(a->pending_monotonic_us, b->pending_monotonic_us);
        ASSERT_U64_EQ(a->pending_count, b->pending_count);
}

static void assert_client_eq(const SnapshotClient *a, const SnapshotClient *b) {
        ASSERT_U64_EQ(a->id, b->id);
        ASSERT_EQ(a->uid, b->uid);
        ASSERT_EQ(a->gid, b->gid);
        ASSERT_EQ(a->pid, b->pid);
        assert_str_eq(a->view_v2, b->view_v2);
        assert_str_eq(a->view_v1, b->view_v1);
        assert_bytes_eq(&a->input, &b->input);
        ASSERT_EQ(a->n_output, b->n_output);
        for (size_t i = 0; i < a->n_output; i++) {
                ASSERT_U64_EQ(a->output[i].seq, b->output[i].seq);
                assert_bytes_eq(&a->output[i].bytes, &b->output[i].bytes);
        }
        ASSERT_EQ(a->has_subscription, b->has_subscription);
        if (a->has_subscription)
                assert_subscription_eq(&a->subscription, &b->subscription);
        ASSERT_EQ(a->has_levels, b->has_levels);
        if (a->has_levels) {
                assert_str_eq(a->levels.cgroup, b->levels.cgroup);
                ASSERT_U64_EQ(a->levels.seq, b->levels.seq);
                ASSERT_U64_EQ(a->levels.missed, b->levels.missed);
                ASSERT_EQ(a->levels.sent, b->levels.sent);
                ASSERT_EQ(a->levels.waiting, b->levels.waiting);
        }
        ASSERT_EQ(a->owes_reexecute, b->owes_reexecute);
        ASSERT_EQ(a->refused, b->refused);
        ASSERT_U64_EQ(a->prekill_owed, b->prekill_owed);
}

static void assert_prekill_eq(const Snapshot *a, const Snapshot *b) {
        assert_str_eq(a->prekill_path, b->prekill_path);
        ASSERT_U64_EQ(a->next_hook_id, b->next_hook_id);
        ASSERT_U64_EQ(a->prekill_last_id, b->prekill_last_id);
        ASSERT_TRUE(memcmp(&a->prekill_counters, &b->prekill_counters, sizeof(a->prekill_counters)) == 0);
        ASSERT_EQ(a->n_prekill_warnings, b->n_prekill_warnings);
        for (size_t i = 0; i < a->n_prekill_warnings; i++) {
                const SnapshotPrekillWarning *x = &a->prekill_warnings[i], *y = &b->prekill_warnings[i];

                ASSERT_U64_EQ(x->id, y->id);
                assert_str_eq(x->victim, y->victim);
                ASSERT_U64_EQ(x->start_us, y->start_us);
                ASSERT_U64_EQ(x->realtime_us, y->realtime_us);
                ASSERT_U64_EQ(x->deadline_us, y->deadline_us);
                ASSERT_U64_EQ(x->hook, y->hook);
                ASSERT_EQ(x->n_warned, y->n_warned);
                ASSERT_TRUE(x->n_warned == 0 || memcmp(x->warned, y->warned, x->n_warned * sizeof(PrekillWarned)) == 0);
        }
        ASSERT_EQ(a->n_hook_clients, b->n_hook_clients);
        for (size_t i = 0; i < a->n_hook_clients; i++)
                assert_client_eq(&a->hook_clients[i], &b->hook_clients[i]);
}

static void assert_snapshot_eq(const Snapshot *a, const Snapshot *b) {
        ASSERT_U64_EQ(a->serial, b->serial);
        ASSERT_EQ(a->complete, b->complete);
        ASSERT_U64_EQ(a->generation, b->generation);
        ASSERT_U64_EQ(a->start_monotonic_us, b->start_monotonic_us);
        assert_str_eq(a->live_name, b->live_name);
        assert_str_eq(a->socket_path, b->socket_path);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                assert_str_eq(a->proxy_paths[r], b->proxy_paths[r]);
        assert_str_eq(a->report_path, b->report_path);
        ASSERT_U64_EQ(a->next_client_id, b->next_client_id);
        ASSERT_U64_EQ(a->next_proxy_id, b->next_proxy_id);
        ASSERT_U64_EQ(a->next_registration_id, b->next_registration_id);
        ASSERT_EQ(a->psi_unprivileged, b->psi_unprivileged);
        ASSERT_EQ(a->n_counters, b->n_counters);
        for (size_t i = 0; i < a->n_counters; i++) {
                assert_str_eq(a->counters[i].name, b->counters[i].name);
                ASSERT_U64_EQ(a->counters[i].value, b->counters[i].value);
        }
        ASSERT_TRUE(memcmp(&a->latency, &b->latency, sizeof(a->latency)) == 0);
        ASSERT_EQ(a->n_registrations, b->n_registrations);
        for (size_t i = 0; i < a->n_registrations; i++)
                assert_registration_eq(&a->registrations[i], &b->registrations[i]);
        ASSERT_EQ(a->n_clients, b->n_clients);
        for (size_t i = 0; i < a->n_clients; i++)
                assert_client_eq(&a->clients[i], &b->clients[i]);
        ASSERT_EQ(a->n_proxies, b->n_proxies);
        for (size_t i = 0; i < a->n_proxies; i++) {
                const SnapshotProxyClient *x = &a->proxies[i], *y = &b->proxies[i];

                ASSERT_U64_EQ(x->id, y->id);
                ASSERT_EQ(x->resource, y->resource);
                ASSERT_EQ(x->pid, y->pid);
                ASSERT_EQ(x->uid, y->uid);
                assert_str_eq(x->unit, y->unit);
                assert_bytes_eq(&x->line, &y->line);
                ASSERT_EQ(x->line_done, y->line_done);
                ASSERT_U64_EQ(x->decide_by_usec, y->decide_by_usec);
                ASSERT_U64_EQ(x->registration, y->registration);
                ASSERT_U64_EQ(x->sent, y->sent);
                ASSERT_U64_EQ(x->dropped, y->dropped);
        }
        ASSERT_EQ(a->n_reclaim, b->n_reclaim);
        for (size_t i = 0; i < a->n_reclaim; i++) {
                assert_str_eq(a->reclaim[i].cgroup, b->reclaim[i].cgroup);
                ASSERT_U64_EQ(a->reclaim[i].reclaimed, b->reclaim[i].reclaimed);
                ASSERT_U64_EQ(a->reclaim[i].last_step, b->reclaim[i].last_step);
        }
        assert_prekill_eq(a, b);
}

static void encode(const Snapshot *s, char **ret, size_t *ret_size) {
        ASSERT_OK(snapshot_encode(s, SNAPSHOT_SIZE_MAX, ret, ret_size));
}

static void test_round_trip(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {}, empty = {}, e = {};
        _cleanup_free_ char *buf = NULL, *buf2 = NULL;
        size_t n, n2;

        sample(&s);
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        ASSERT_EQ(d.version, SNAPSHOT_VERSION);
        assert_snapshot_eq(&s, &d);

        /* What was decoded encodes to the same bytes. */
        encode(&d, &buf2, &n2);
        ASSERT_EQ(n, n2);
        ASSERT_TRUE(memcmp(buf, buf2, n) == 0);

        /* The empty snapshot: every default, and only the header and the histogram. */
        free(buf);
        encode(&empty, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &e));
        assert_snapshot_eq(&empty, &e);
        ASSERT_EQ(e.n_clients, 0);
}

/*
 * Proxied clients of every resource and the cpu and io socket paths come
 * back as they were; the fixture written before they existed (test_fixtures())
 * reads as memory with no cpu or io socket.
 */
static void test_proxy_resources(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {};
        _cleanup_free_ char *buf = NULL;
        SnapshotProxyClient *more;
        size_t n;

        sample(&s);
        s.proxy_paths[RESOURCE_CPU] = xstrdup("/run/pressured/cpu-pressure");
        s.proxy_paths[RESOURCE_IO] = xstrdup("/run/pressured/io-pressure");
        more = realloc(s.proxies, 3 * sizeof(*s.proxies));
        ASSERT_TRUE(more);
        s.proxies = more;
        s.proxies[1] = (SnapshotProxyClient) { .id = 12, .resource = RESOURCE_CPU, .pid = 556, .line_done = true };
        s.proxies[2] = (SnapshotProxyClient) { .id = 13, .resource = RESOURCE_IO, .pid = 557,
                                               .line = xbytes("some 1"), .decide_by_usec = 99 };
        s.n_proxies = 3;
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        assert_snapshot_eq(&s, &d);
        ASSERT_EQ(d.proxies[0].resource, RESOURCE_MEMORY);
        ASSERT_EQ(d.proxies[1].resource, RESOURCE_CPU);
        ASSERT_EQ(d.proxies[2].resource, RESOURCE_IO);
        ASSERT_STREQ(d.proxy_paths[RESOURCE_IO], "/run/pressured/io-pressure");
        ASSERT_TRUE(d.report_path == NULL);
}

/* The report socket's path, when this daemon bound it, comes back as it was. */
static void test_report_path(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {};
        _cleanup_free_ char *buf = NULL;
        size_t n;

        sample(&s);
        s.report_path = xstrdup("/run/systemd/report/io.pressured");
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        assert_snapshot_eq(&s, &d);
        ASSERT_STREQ(d.report_path, "/run/systemd/report/io.pressured");
}

/* Encode @s and expect the decoder to refuse it with @error. */
static void expect_refused(const Snapshot *s, int error) {
        _cleanup_free_ char *buf = NULL;
        Snapshot d = {};
        size_t n;

        encode(s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), error);
}

/*
 * The warnings and hook connections come back as they were (the v1
 * fixture has none), and what does not hold together is refused: a warning
 * owed to a connection that is not there or owes another, a connection owed
 * a warning that is not there, ids given twice or above the last one given,
 * a state out of range, a relative victim.
 */
static void test_prekill(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {};
        _cleanup_free_ char *buf = NULL;
        size_t n;

        sample(&s);
        sample_prekill(&s);
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        assert_snapshot_eq(&s, &d);
        ASSERT_EQ(d.prekill_warnings[0].warned[2].state, PREKILL_GONE);

        s.prekill_warnings[0].hook = 5;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[0].hook = 6;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[0].hook = 7;
        s.hook_clients[1].prekill_owed = 19;
        expect_refused(&s, EBADMSG);
        s.hook_clients[1].prekill_owed = 0;
        s.hook_clients[1].id = 7;
        expect_refused(&s, EBADMSG);
        s.hook_clients[1].id = 5;
        s.prekill_warnings[1].id = 21;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[1].id = 22;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[1].id = 19;
        s.prekill_warnings[0].warned[1].state = _PREKILL_WARNED_STATE_MAX;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[0].warned[1].state = PREKILL_ACKNOWLEDGED;
        s.prekill_warnings[0].warned[0].client = 0;
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[0].warned[0].client = 39;
        s.prekill_warnings[1].victim[0] = 'x';
        expect_refused(&s, EBADMSG);
        s.prekill_warnings[1].victim[0] = '/';
}

/* Rewrite the header's size and checksum after @buf (of @n bytes) was changed. */
static void reseal(char *buf, size_t n) {
        uint64_t h = UINT64_C(0xcbf29ce484222325), payload = n - SNAPSHOT_HEADER_SIZE;

        for (size_t i = SNAPSHOT_HEADER_SIZE; i < n; i++) {
                h ^= (uint8_t) buf[i];
                h *= UINT64_C(0x100000001b3);
        }
        for (int i = 0; i < 8; i++) {
                buf[16 + i] = (char) (payload >> (8 * i));
                buf[24 + i] = (char) (h >> (8 * i));
        }
}

/*
 * A level stream comes back as it was (the v1 fixture, written before level
 * streams, has none); it needs its cgroup, and a connection has one stream:
 * a level stream or a subscription.
 */
static void test_levels(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {}, r = {};
        _cleanup_free_ char *buf = NULL;
        size_t n;

        s.clients = calloc(1, sizeof(*s.clients));
        ASSERT_TRUE(s.clients);
        s.n_clients = 1;
        s.clients[0] = (SnapshotClient) {
                .id = 39, .pid = 1, .has_levels = true,
                .levels = { .cgroup = xstrdup("/app"), .seq = 5, .missed = 2, .sent = 3, .waiting = true },
        };
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &r));
        assert_snapshot_eq(&s, &r);
        free(buf);
        free(s.clients[0].levels.cgroup);
        s.clients[0].levels = (SnapshotLevels) { .sent = -1 };
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
        free(buf);
        s.clients[0].levels.cgroup = xstrdup("/");
        s.clients[0].has_subscription = true;
        s.clients[0].subscription.registration = 1;
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
}

static void test_truncated_and_changed(void) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        size_t n;

        sample(&s);
        encode(&s, &buf, &n);
        /* Cut at every byte: refused, never misread. */
        for (size_t i = 0; i < n; i++) {
                Snapshot d = {};

                ASSERT_ERR(snapshot_decode(buf, i, &d), EBADMSG);
                ASSERT_EQ(d.n_clients, 0);
        }
        /* Every byte changed: refused (the payload by its checksum, the header by its fields). */
        for (size_t i = 0; i < n; i++) {
                Snapshot d = {};
                int k;

                if (i >= 8 && i < 12)
                        continue; /* the version: below */
                buf[i] ^= 0x5a;
                k = snapshot_decode(buf, n, &d);
                ASSERT_ERR(k, EBADMSG);
                buf[i] ^= 0x5a;
        }
        /* Cut inside a record and sealed again: the record's length gives it away. */
        for (size_t i = SNAPSHOT_HEADER_SIZE + 1; i < n; i += 7) {
                _cleanup_free_ char *cut = malloc(i);
                Snapshot d = {};
                int k;

                ASSERT_TRUE(cut);
                memcpy(cut, buf, i);
                reseal(cut, i);
                k = snapshot_decode(cut, i, &d);
                if (k == 0)
                        snapshot_done(&d); /* ended exactly between two records: a valid, shorter snapshot */
                else
                        ASSERT_ERR(k, EBADMSG);
        }
}

static void test_garbage(void) {
        char buf[4096];

        srand(1);
        for (int round = 0; round < 2000; round++) {
                size_t n = (size_t) rand() % sizeof(buf);
                Snapshot d = {};
                int k;

                for (size_t i = 0; i < n; i++)
                        buf[i] = (char) rand();
                if (round % 2 && n >= SNAPSHOT_HEADER_SIZE) {
                        /* A valid header over random records. */
                        memcpy(buf, "PRSDSNAP\x01\0\0\0\0\0\0\0", 16);
                        reseal(buf, n);
                }
                k = snapshot_decode(buf, n, &d);
                if (k == 0)
                        snapshot_done(&d); /* random records that happen to be well-formed */
                else
                        ASSERT_TRUE(k == -EBADMSG || k == -E2BIG);
        }
}

static void test_version(void) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        Snapshot d = {};
        size_t n;

        sample(&s);
        encode(&s, &buf, &n);
        buf[8] = SNAPSHOT_VERSION + 1;
        ASSERT_ERR(snapshot_decode(buf, n, &d), EPROTONOSUPPORT);
        buf[8] = 0;
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
}

static void test_limits(void) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        Snapshot d = {};
        size_t n;
        char *none = NULL;

        sample(&s);
        /* Writing: the bound given, and never over SNAPSHOT_SIZE_MAX. */
        ASSERT_ERR(snapshot_encode(&s, 64, &none, &n), E2BIG);
        ASSERT_TRUE(!none);
        encode(&s, &buf, &n);
        free(buf);
        buf = NULL;
        ASSERT_ERR(snapshot_encode(&s, n - 1, &buf, &n), E2BIG);
        /* Reading: over the size, refused before a byte is read. */
        ASSERT_ERR(snapshot_decode("", SNAPSHOT_SIZE_MAX + 1, &d), E2BIG);

        /* One top-level cgroup over the bound of a kills registration. */
        for (size_t i = 0; i < s.registrations[1].n_tops; i++)
                free(s.registrations[1].tops[i].name);
        free(s.registrations[1].tops);
        s.registrations[1].tops = calloc(SNAPSHOT_TOPS_MAX + 1, sizeof(SnapshotKillsTop));
        ASSERT_TRUE(s.registrations[1].tops);
        for (size_t i = 0; i <= SNAPSHOT_TOPS_MAX; i++)
                s.registrations[1].tops[i].name = xstrdup("t");
        s.registrations[1].n_tops = SNAPSHOT_TOPS_MAX + 1;
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), E2BIG);
        free(buf);
        s.registrations[1].n_tops = SNAPSHOT_TOPS_MAX;
        encode(&s, &buf, &n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        ASSERT_EQ(d.registrations[1].n_tops, SNAPSHOT_TOPS_MAX);
        snapshot_done(&d);
        s.registrations[1].n_tops = SNAPSHOT_TOPS_MAX + 1; /* all freed by snapshot_done() */
}

static void test_references(void) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        Snapshot d = {};
        size_t n;

        sample(&s);
        /* A subscription naming no registration. */
        s.clients[0].subscription.registration = 5;
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
        free(buf);
        s.clients[0].subscription.registration = 4;
        /* A proxied client naming none. */
        s.proxies[0].registration = 6;
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
        free(buf);
        s.proxies[0].registration = 0;
        /* Two clients with one id. */
        s.clients[1].id = s.clients[0].id;
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
        free(buf);
        s.clients[1].id = 39;
        /* A registration on a relative path. */
        s.registrations[0].cgroup[0] = 's';
        encode(&s, &buf, &n);
        ASSERT_ERR(snapshot_decode(buf, n, &d), EBADMSG);
        free(buf);
        buf = NULL;
        s.registrations[0].cgroup[0] = '/';
}

static void test_unknown_tags(void) {
        _cleanup_(snapshot_done) Snapshot s = {}, d = {};
        _cleanup_free_ char *buf = NULL;
        static const char extra[] = { 0x77, 0x77, 3, 0, 0, 0, 'n', 'e', 'w' };
        size_t n;
        char *big;

        sample(&s);
        encode(&s, &buf, &n);
        big = realloc(buf, n + sizeof(extra));
        ASSERT_TRUE(big);
        buf = big;
        memcpy(buf + n, extra, sizeof(extra));
        n += sizeof(extra);
        reseal(buf, n);
        ASSERT_OK(snapshot_decode(buf, n, &d));
        assert_snapshot_eq(&s, &d);
}

/* ---- the canonical text of a decoded snapshot (--dump, snapshot-*.txt) ---- */

/* @size bytes of @data quoted, with \\, \" and every byte outside printable ASCII as \xNN. */
static void dump_quoted(FILE *f, const char *data, size_t size) {
        fputc('"', f);
        for (size_t i = 0; i < size; i++) {
                unsigned char c = (unsigned char) data[i];

                if (c == '\\' || c == '"')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20 || c >= 0x7f)
                        fprintf(f, "\\x%02x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static void dump_str(FILE *f, const char *path, const char *name, const char *s) {
        fprintf(f, "%s%s = ", path, name);
        if (s)
                dump_quoted(f, s, strlen(s));
        else
                fputs("null", f);
        fputc('\n', f);
}

static void dump_bytes(FILE *f, const char *path, const char *name, const SnapshotBytes *b) {
        fprintf(f, "%s%s = bytes(%zu) ", path, name, b->size);
        dump_quoted(f, b->data ?: "", b->size);
        fputc('\n', f);
}

static void dump_u64(FILE *f, const char *path, const char *name, uint64_t v) {
        fprintf(f, "%s%s = %" PRIu64 "\n", path, name, v);
}

static void dump_int(FILE *f, const char *path, const char *name, long long v) {
        fprintf(f, "%s%s = %lld\n", path, name, v);
}

static void dump_bool(FILE *f, const char *path, const char *name, bool v) {
        fprintf(f, "%s%s = %s\n", path, name, v ? "true" : "false");
}

/* A member's path, made with @fmt into @buf (of 256 bytes), which it returns. */
_printf_(2, 3) static char *path_of(char *buf, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(buf, 256, fmt, ap);
        va_end(ap);
        ASSERT_TRUE(n >= 0 && n < 256);
        return buf;
}

#define SUB(buf, ...) path_of(buf, __VA_ARGS__)

static void dump_trigger(FILE *f, const char *path, const char *name, const PsiTrigger *t) {
        char p[256];

        SUB(p, "%s%s.", path, name);
        dump_int(f, p, "stall", t->stall);
        dump_u64(f, p, "threshold_us", t->threshold_us);
        dump_u64(f, p, "window_us", t->window_us);
}

static void dump_record(FILE *f, const char *path, const EpisodeRecord *r) {
        dump_u64(f, path, "start_us", r->start_us);
        dump_u64(f, path, "end_us", r->end_us);
        dump_u64(f, path, "events", r->events);
        dump_u64(f, path, "peak", r->peak);
        dump_bool(f, path, "peak_known", r->peak_known);
}

static void dump_registration(FILE *f, const char *path, const SnapshotRegistration *r) {
        char p[256];

        dump_u64(f, path, "id", r->id);
        dump_int(f, path, "type", r->type);
        dump_str(f, path, "cgroup", r->cgroup);
        dump_int(f, path, "resource", r->resource);
        dump_trigger(f, path, "requested", &r->requested);
        dump_trigger(f, path, "used", &r->used);
        dump_int(f, path, "vm_level", r->vm_level);
        dump_int(f, path, "vm_mode", r->vm_mode);
        dump_bool(f, path, "adjusted", r->adjusted);
        dump_u64(f, path, "dir_ino", r->dir_ino);
        dump_u64(f, path, "last_events.present", r->last_events.present);
        for (int k = 0; k < _MEMORY_EVENT_MAX; k++)
                dump_u64(f, path, SUB(p, "last_events.value[%d]", k), r->last_events.value[k]);
        dump_int(f, path, "last_state", r->last_state);
        dump_u64(f, path, "n_tops", r->n_tops);
        for (size_t i = 0; i < r->n_tops; i++) {
                SUB(p, "%stops[%zu].", path, i);
                dump_str(f, p, "name", r->tops[i].name);
                dump_u64(f, p, "oom_kill", r->tops[i].oom_kill);
        }
        dump_bool(f, path, "fast_charged", r->fast_charged);
        dump_u64(f, path, "fast_uid", r->fast_uid);
        dump_bool(f, path, "episode.active", r->episode.active);
        dump_record(f, SUB(p, "%sepisode.cur.", path), &r->episode.cur);
        dump_u64(f, path, "episode.last_event_us", r->episode.last_event_us);
        dump_u64(f, path, "episode.unquiet_us", r->episode.unquiet_us);
        dump_bool(f, path, "episode.have_sample", r->episode.have_sample);
        dump_u64(f, path, "episode.sample_us", r->episode.sample_us);
        dump_u64(f, path, "episode.sample_total_us", r->episode.sample_total_us);
        dump_u64(f, path, "n_history", r->n_history);
        for (size_t i = 0; i < r->n_history; i++)
                dump_record(f, SUB(p, "%shistory[%zu].", path, i), &r->history[i]);
}

static void dump_subscription(FILE *f, const char *path, const SnapshotSubscription *s) {
        dump_u64(f, path, "registration", s->registration);
        dump_int(f, path, "level", s->level);
        dump_bool(f, path, "explicit_psi", s->explicit_psi);
        dump_bool(f, path, "by_level", s->by_level);
        dump_bool(f, path, "waiting", s->waiting);
        dump_u64(f, path, "seq", s->seq);
        dump_u64(f, path, "written_seq", s->written_seq);
        dump_u64(f, path, "missed", s->missed);
        dump_u64(f, path, "min_interval_usec", s->min_interval_usec);
        dump_u64(f, path, "last_sent_usec", s->last_sent_usec);
        dump_bytes(f, path, "pending", &s->pending);
        dump_u64(f, path, "pending_flags", s->pending_flags);
        dump_u64(f, path, "pending_monotonic_us", s->pending_monotonic_us);
        dump_u64(f, path, "pending_count", s->pending_count);
}

static void dump_client(FILE *f, const char *path, const SnapshotClient *c) {
        char p[256];

        dump_u64(f, path, "id", c->id);
        dump_u64(f, path, "uid", c->uid);
        dump_u64(f, path, "gid", c->gid);
        dump_int(f, path, "pid", c->pid);
        dump_str(f, path, "view_v2", c->view_v2);
        dump_str(f, path, "view_v1", c->view_v1);
        dump_bytes(f, path, "input", &c->input);
        dump_u64(f, path, "n_output", c->n_output);
        for (size_t i = 0; i < c->n_output; i++) {
                SUB(p, "%soutput[%zu].", path, i);
                dump_u64(f, p, "seq", c->output[i].seq);
                dump_bytes(f, p, "bytes", &c->output[i].bytes);
        }
        dump_bool(f, path, "has_subscription", c->has_subscription);
        if (c->has_subscription)
                dump_subscription(f, SUB(p, "%ssubscription.", path), &c->subscription);
        dump_bool(f, path, "has_levels", c->has_levels);
        if (c->has_levels) {
                SUB(p, "%slevels.", path);
                dump_str(f, p, "cgroup", c->levels.cgroup);
                dump_u64(f, p, "seq", c->levels.seq);
                dump_u64(f, p, "missed", c->levels.missed);
                dump_int(f, p, "sent", c->levels.sent);
                dump_bool(f, p, "waiting", c->levels.waiting);
        }
        dump_bool(f, path, "owes_reexecute", c->owes_reexecute);
        dump_bool(f, path, "refused", c->refused);
        dump_u64(f, path, "prekill_owed", c->prekill_owed);
}

static void dump_proxy(FILE *f, const char *path, const SnapshotProxyClient *x) {
        dump_u64(f, path, "id", x->id);
        dump_int(f, path, "resource", x->resource);
        dump_int(f, path, "pid", x->pid);
        dump_u64(f, path, "uid", x->uid);
        dump_str(f, path, "unit", x->unit);
        dump_bytes(f, path, "line", &x->line);
        dump_bool(f, path, "line_done", x->line_done);
        dump_u64(f, path, "decide_by_usec", x->decide_by_usec);
        dump_u64(f, path, "registration", x->registration);
        dump_u64(f, path, "sent", x->sent);
        dump_u64(f, path, "dropped", x->dropped);
}

static void dump_prekill(FILE *f, const Snapshot *s) {
        char p[256], q[256];

        dump_str(f, "", "prekill_path", s->prekill_path);
        dump_u64(f, "", "next_hook_id", s->next_hook_id);
        dump_u64(f, "", "prekill_last_id", s->prekill_last_id);
        dump_u64(f, "", "prekill_counters.warned", s->prekill_counters.warned);
        dump_u64(f, "", "prekill_counters.acknowledged", s->prekill_counters.acknowledged);
        dump_u64(f, "", "prekill_counters.deadline_reached", s->prekill_counters.deadline_reached);
        dump_u64(f, "", "prekill_counters.nobody", s->prekill_counters.nobody);
        dump_u64(f, "", "n_prekill_warnings", s->n_prekill_warnings);
        for (size_t i = 0; i < s->n_prekill_warnings; i++) {
                const SnapshotPrekillWarning *w = &s->prekill_warnings[i];

                SUB(p, "prekill_warnings[%zu].", i);
                dump_u64(f, p, "id", w->id);
                dump_str(f, p, "victim", w->victim);
                dump_u64(f, p, "start_us", w->start_us);
                dump_u64(f, p, "realtime_us", w->realtime_us);
                dump_u64(f, p, "deadline_us", w->deadline_us);
                dump_u64(f, p, "hook", w->hook);
                dump_u64(f, p, "n_warned", w->n_warned);
                for (size_t j = 0; j < w->n_warned; j++) {
                        SUB(q, "%swarned[%zu].", p, j);
                        dump_u64(f, q, "client", w->warned[j].client);
                        dump_u64(f, q, "uid", w->warned[j].uid);
                        dump_int(f, q, "pid", w->warned[j].pid);
                        dump_int(f, q, "state", w->warned[j].state);
                }
        }
        dump_u64(f, "", "n_hook_clients", s->n_hook_clients);
        for (size_t i = 0; i < s->n_hook_clients; i++)
                dump_client(f, SUB(p, "hook_clients[%zu].", i), &s->hook_clients[i]);
}

/* Every member of @s, in the order of the structs, each array after its count. */
static void dump_snapshot(FILE *f, const Snapshot *s) {
        char p[256];

        dump_u64(f, "", "version", s->version);
        dump_u64(f, "", "serial", s->serial);
        dump_bool(f, "", "complete", s->complete);
        dump_u64(f, "", "generation", s->generation);
        dump_u64(f, "", "start_monotonic_us", s->start_monotonic_us);
        dump_str(f, "", "live_name", s->live_name);
        dump_str(f, "", "socket_path", s->socket_path);
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                dump_str(f, "", SUB(p, "proxy_paths[%d]", (int) r), s->proxy_paths[r]);
        dump_str(f, "", "report_path", s->report_path);
        dump_u64(f, "", "next_client_id", s->next_client_id);
        dump_u64(f, "", "next_proxy_id", s->next_proxy_id);
        dump_u64(f, "", "next_registration_id", s->next_registration_id);
        dump_bool(f, "", "psi_unprivileged", s->psi_unprivileged);
        dump_u64(f, "", "n_counters", s->n_counters);
        for (size_t i = 0; i < s->n_counters; i++) {
                SUB(p, "counters[%zu].", i);
                dump_str(f, p, "name", s->counters[i].name);
                dump_u64(f, p, "value", s->counters[i].value);
        }
        for (size_t i = 0; i < ELEMENTSOF(s->latency.buckets); i++)
                dump_u64(f, "", SUB(p, "latency.buckets[%zu]", i), s->latency.buckets[i]);
        dump_u64(f, "", "latency.count", s->latency.count);
        dump_u64(f, "", "latency.sum_usec", s->latency.sum_usec);
        dump_u64(f, "", "n_registrations", s->n_registrations);
        for (size_t i = 0; i < s->n_registrations; i++)
                dump_registration(f, SUB(p, "registrations[%zu].", i), &s->registrations[i]);
        dump_u64(f, "", "n_clients", s->n_clients);
        for (size_t i = 0; i < s->n_clients; i++)
                dump_client(f, SUB(p, "clients[%zu].", i), &s->clients[i]);
        dump_u64(f, "", "n_proxies", s->n_proxies);
        for (size_t i = 0; i < s->n_proxies; i++)
                dump_proxy(f, SUB(p, "proxies[%zu].", i), &s->proxies[i]);
        dump_u64(f, "", "n_reclaim", s->n_reclaim);
        for (size_t i = 0; i < s->n_reclaim; i++) {
                SUB(p, "reclaim[%zu].", i);
                dump_str(f, p, "cgroup", s->reclaim[i].cgroup);
                dump_u64(f, p, "reclaimed", s->reclaim[i].reclaimed);
                dump_u64(f, p, "last_step", s->reclaim[i].last_step);
        }
        dump_prekill(f, s);
}

/* The dump of the snapshot in @buf (@n bytes), malloc'ed. */
static char *dump_text(const char *buf, size_t n) {
        _cleanup_(snapshot_done) Snapshot d = {};
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        ASSERT_OK(snapshot_decode(buf, n, &d));
        f = open_memstream(&text, &size);
        ASSERT_TRUE(f);
        dump_snapshot(f, &d);
        ASSERT_OK(fclose(f) == 0 ? 0 : -errno);
        return text;
}

static int read_file(const char *path, char **ret, size_t *ret_size) {
        return read_full_file(path, SNAPSHOT_SIZE_MAX, ret, ret_size);
}

/*
 * The snapshots earlier daemons wrote decode to what they held: the sample
 * of each version, and from version 2 on the full sample ("-full").
 */
static void test_fixtures(const char *dir) {
        for (unsigned i = 2; i <= 2 * SNAPSHOT_VERSION + 1; i++) {
                unsigned v = i / 2;
                bool full = i % 2;
                _cleanup_(snapshot_done) Snapshot s = {}, d = {};
                _cleanup_free_ char *path = NULL, *buf = NULL;
                size_t n;

                if (full && v < 2)
                        continue;
                ASSERT_TRUE(asprintf(&path, "%s/snapshot-v%u%s.bin", dir, v, full ? "-full" : "") > 0);
                ASSERT_OK(read_file(path, &buf, &n));
                ASSERT_OK(snapshot_decode(buf, n, &d));
                ASSERT_EQ(d.version, v);
                if (full)
                        sample_full(&s);
                else
                        sample(&s);
                if (!full && v >= 2)
                        sample_prekill(&s);
                assert_snapshot_eq(&s, &d);
        }
}

/* Where @a and @b (texts) first differ, as "line N: ... != ...". */
static void fail_text_differs(const char *what, const char *a, const char *b) {
        unsigned line = 1;
        size_t i = 0, start = 0;

        for (; a[i] && a[i] == b[i]; i++)
                if (a[i] == '\n') {
                        line++;
                        start = i + 1;
                }
        TEST_FAIL("%s differs at line %u: \"%.*s\" != \"%.*s\"", what, line, (int) strcspn(a + start, "\n"),
                  a + start, (int) strcspn(b + start, "\n"), b + start);
}

/*
 * Each snapshot-*.bin decodes to exactly the text of its snapshot-*.txt:
 * the oracle of what those bytes hold, for any rewrite of the decoder.
 */
static void test_dumps(const char *dir) {
        static const char *const names[] = { "snapshot-v1", "snapshot-v2", "snapshot-v2-full", "snapshot-v3",
                                             "snapshot-v3-full" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *bin = NULL, *txt = NULL, *buf = NULL, *want = NULL, *got = NULL;
                size_t n, m;

                ASSERT_TRUE(asprintf(&bin, "%s/%s.bin", dir, names[i]) > 0);
                ASSERT_TRUE(asprintf(&txt, "%s/%s.txt", dir, names[i]) > 0);
                ASSERT_OK(read_file(bin, &buf, &n));
                ASSERT_OK(read_file(txt, &want, &m));
                got = dump_text(buf, n);
                if (strlen(want) != m || !streq(got, want))
                        fail_text_differs(txt, got, want);
        }
}

/* Today's writer writes its version's fixtures' bytes: the sample's, the full sample's. */
static void test_writer_bytes(const char *dir) {
        for (int full = 0; full < 2; full++) {
                _cleanup_(snapshot_done) Snapshot s = {};
                _cleanup_free_ char *path = NULL, *want = NULL, *got = NULL;
                size_t n, m;

                ASSERT_TRUE(asprintf(&path, "%s/snapshot-v%d%s.bin", dir, SNAPSHOT_VERSION, full ? "-full" : "") > 0);
                ASSERT_OK(read_file(path, &want, &m));
                if (full)
                        sample_full(&s);
                else {
                        sample(&s);
                        sample_prekill(&s);
                }
                encode(&s, &got, &n);
                ASSERT_EQ(n, m);
                ASSERT_TRUE(memcmp(got, want, n) == 0);
        }
}

static int write_fixture(const char *path, bool full) {
        _cleanup_(snapshot_done) Snapshot s = {};
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -1;
        size_t n;

        if (full)
                sample_full(&s);
        else {
                sample(&s);
                sample_prekill(&s);
        }
        encode(&s, &buf, &n);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, n) != (ssize_t) n)
                return 1;
        return 0;
}

static int dump_file(const char *path) {
        _cleanup_free_ char *buf = NULL, *text = NULL;
        size_t n;

        if (read_file(path, &buf, &n) < 0)
                return 1;
        text = dump_text(buf, n);
        return fputs(text, stdout) < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "--write-fixture"))
                return write_fixture(argv[2], false);
        if (argc == 3 && streq(argv[1], "--write-full"))
                return write_fixture(argv[2], true);
        if (argc == 3 && streq(argv[1], "--dump"))
                return dump_file(argv[2]);
        if (argc != 2) {
                fprintf(stderr, "usage: %s DATA-DIR | --write-fixture FILE | --write-full FILE | --dump FILE\n",
                        argv[0]);
                return 2;
        }
        test_round_trip();
        test_levels();
        test_proxy_resources();
        test_report_path();
        test_truncated_and_changed();
        test_garbage();
        test_version();
        test_limits();
        test_references();
        test_unknown_tags();
        test_prekill();
        test_fixtures(argv[1]);
        test_writer_bytes(argv[1]);
        test_dumps(argv[1]);
        printf("ok\n");
        return 0;
}
