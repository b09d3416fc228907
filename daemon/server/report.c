/* SPDX-License-Identifier: MIT */
/* systemd-report's source on the report socket: see report.h. */
#include <event2/buffer.h>
#include <fcntl.h>
#include <inttypes.h>

#include "cgroup-walk.h"
#include "client.h"
#include "event-util.h"
#include "headroom.h"
#include "io.systemd.Metrics.varlink.h"
#include "list.h"
#include "log.h"
#include "metrics-report.h"
#include "protection-tree.h"
#include "report.h"
#include "varlink-service.h"

#define METRICS_INTERFACE "io.systemd.Metrics"

/* Descriptors the walk's protection reader keeps open at most: it reads once and is freed. */
#define REPORT_PROTECTION_FD_BUDGET 64

static const VarlinkInterface report_interfaces[] = {
        { METRICS_INTERFACE, io_systemd_metrics_varlink },
};

static const VarlinkService report_service = { report_interfaces, ELEMENTSOF(report_interfaces) };

/* A List waiting for its reply: the client's stream until then. */
typedef struct ReportCall ReportCall;
struct ReportCall {
        ReportServer *server;
        Client *client;
        bool walked;                    /* the walk under way answers it; else the next one */
        LIST_FIELDS(ReportCall, calls);
};

/* What the walk's thread reads with, its own: nothing of it is shared with the loop. */
typedef struct ReportJob {
        ReportDaemon daemon;            /* read on the loop when the walk started */
        SnapshotReclaim *reclaim;       /* what proactive reclaim did, by cgroup (sorted) */
        size_t n_reclaim;
        Hierarchy v2, v1;               /* copies, with descriptors of their own (fd -1: none) */
        bool recursive;                 /* memory_recursiveprot */
} ReportJob;

struct ReportServer {
        struct event_base *base;
        const Config *config;
        const StatusContext *status;
        ClientServer *clients;
        char *path;                     /* bound by us, unlinked when freed; NULL: inherited */
        Body *describe;                 /* Describe's reply, the same for everyone */
        CgroupWalk *walking;
        ReportJob *job;                 /* the walk's */
        ReportCall *calls;              /* Lists waiting for a reply */
        struct event *ev_next;          /* then starts it from the loop */
};

static ReportJob *report_job_free(ReportJob *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_reclaim; i++)
                free(j->reclaim[i].cgroup);
        free(j->reclaim);
        hierarchy_close(&j->v2);
        hierarchy_close(&j->v1);
        free(j);
        return NULL;
}

static int reclaim_compare(const void *a, const void *b) {
        return strcmp(((const SnapshotReclaim *) a)->cgroup, ((const SnapshotReclaim *) b)->cgroup);
}

/* A copy of @h (NULL or fd -1: none) in @ret, with a descriptor of its own. Returns 0 or a negative errno. */
static int hierarchy_copy(const Hierarchy *h, Hierarchy *ret) {
        if (!h || h->fd < 0)
                return 0;
        ret->path = strdup(h->path);
        ret->fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 3);
        return !ret->path ? -ENOMEM : ret->fd < 0 ? -errno : 0;
}

/* The job of a walk starting now: the daemon's values and copies of what the thread reads with. */
static int report_job_new(ReportServer *s, ReportJob **ret) {
        const StatusContext *m = s->status;
        ReportJob *j = calloc(1, sizeof(*j));
        int k = 0;

        if (!j)
                return -ENOMEM;
        j->v2.fd = j->v1.fd = -1;
        status_report_daemon(m, &j->daemon);
        j->recursive = config_recursive_protection(s->config, m->mount_recursiveprot);
        if (m->reclaim)
                k = reclaim_controller_export(m->reclaim, &j->reclaim, &j->n_reclaim);
        if (k >= 0 && j->n_reclaim > 1)
                qsort(j->reclaim, j->n_reclaim, sizeof(j->reclaim[0]), reclaim_compare);
        if (k >= 0)
                k = hierarchy_copy(m->v2, &j->v2);
        if (k >= 0)
                k = hierarchy_copy(m->v1, &j->v1);
        if (k < 0) {
                report_job_free(j);
                return k;
        }
        *ret = j;
        return 0;
}

/* On the thread: the effective protection of the cgroups with cgroup2's memory, from a reader of the walk's own. */
static void report_read_protection(const ReportJob *j, ReportCgroup *cgroups, size_t n) {
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;
        bool any = false;

        if (!j->v2.path || protection_reader_new(j->v2.path, j->recursive, &r) < 0)
                return;
        protection_reader_set_fd_budget(r, REPORT_PROTECTION_FD_BUDGET);
        for (size_t i = 0; i < n; i++)
                if (report_cgroup_wants_protection(cgroups[i].sample))
                        any = protection_reader_track_node_later(r, cgroups[i].sample->path) >= 0 || any;
        if (!any || protection_reader_refresh(r) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                ProtectionNode *node;
                ProtectionValues v;

                if (!report_cgroup_wants_protection(cgroups[i].sample) ||
                    !(node = protection_reader_lookup(r, cgroups[i].sample->path)))
                        continue;
                protection_node_get(node, &v);
                cgroups[i].has_protection = true;
                cgroups[i].effective_min = v.emin;
                cgroups[i].effective_low = v.elow;
                cgroups[i].protection_state = v.state;
        }
}

/* On the thread: the headroom of the cgroups that have memory, in the hierarchy that has it (as GetHeadroom). */
static void report_read_headroom(const ReportJob *j, ReportCgroup *cgroups, size_t n) {
        _cleanup_close_ int meminfo = -1;
        const HeadroomFiles files = { .v2 = &j->v2, .v1 = &j->v1, .meminfo = "/proc/meminfo", .meminfo_fd = &meminfo };

        for (size_t i = 0; i < n; i++) {
                _cleanup_(headroom_done) Headroom h = {};
                SourceFailure f;

                if (!report_cgroup_wants_memory(cgroups[i].sample))
                        continue;
                if (meminfo < 0)
                        meminfo = open(files.meminfo, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (headroom_read(&files, cgroups[i].sample->path, cgroups[i].sample->path, NULL, NULL, &h, &f) < 0 ||
                    !h.known)
                        continue;
                cgroups[i].has_headroom = true;
                cgroups[i].headroom_bytes = h.headroom_bytes;
        }
}

/* @s with what the job knows of it beyond its files: whether proactive reclaim has it. */
static ReportCgroup report_cgroup(const ReportJob *j, const CgroupSample *s) {
        const SnapshotReclaim key = { .cgroup = s->path };
        const SnapshotReclaim *r = j->n_reclaim == 0 ? NULL :
                bsearch(&key, j->reclaim, j->n_reclaim, sizeof(key), reclaim_compare);

        return (ReportCgroup) { .sample = s, .has_reclaim = r, .reclaimed_bytes = r ? r->reclaimed : 0 };
}

/* On the walk's thread: the metrics a cgroup just read takes (a CgroupWeigh weight). */
static size_t report_walk_weight(const CgroupSample *s, void *userdata) {
        ReportCgroup c = report_cgroup(userdata, s);

        return report_cgroup_metrics(&c);
}

/* On the walk's thread (a CgroupWalkWriteFn): read the rest of the cgroups kept, write List's reply. */
static int report_walk_write(struct evbuffer *out, const CgroupScrape *scrape, void *userdata) {
        const ReportJob *j = userdata;
        _cleanup_free_ ReportCgroup *cgroups = calloc(scrape->n_samples ?: 1, sizeof(ReportCgroup));

        if (!cgroups)
                return -ENOMEM;
        for (size_t i = 0; i < scrape->n_samples; i++)
                cgroups[i] = report_cgroup(j, &scrape->samples[i]);
        report_read_protection(j, cgroups, scrape->n_samples);
        report_read_headroom(j, cgroups, scrape->n_samples);
        return report_write_list(out, &j->daemon, cgroups, scrape->n_samples, scrape->omitted);
}

static void report_call_free(void *stream) {
        ReportCall *rc = stream;

        LIST_REMOVE(calls, rc->server->calls, rc);
        free(rc);
}

/* Answer one List with @reply (NULL: it could not be made), and end its stream. */
static void report_answer(Client *c, Body *reply) {
        static const VarlinkCall list = { .method = METRICS_INTERFACE ".List", .more = true };
        int k = reply ? client_send_event(c, "", 0, reply, 0, 0) : -ENOMEM;

        if (k < 0 && !c->dead) {
                VarlinkError e = {};

                service_failed(c, &list, k == -ENOBUFS ? -ENOMEM : k, &e);
        }
        client_stream_ended(c);
}

/*
 * The walk ended with @text (NULL: no reply could be made): every List it
 * was for is answered. A client's next call comes in from the loop, after
 * (client_stream_ended()); Lists that came during the walk have the next.
 */
static void report_deliver(ReportServer *s, struct evbuffer *text) {
        Body *reply = text ? body_new((const char *) evbuffer_pullup(text, -1), evbuffer_get_length(text)) : NULL;
        ReportCall *rc, *next;

        LIST_FOREACH_SAFE(calls, rc, next, s->calls) {
                Client *c = rc->client;

                if (!rc->walked)
                        continue;
                report_call_free(rc); /* the stream is over: client_stream_ended() follows */
                report_answer(c, reply);
        }
        body_unref(reply);
        if (s->calls)
                event_active(s->ev_next, 0, 0);
}

/* On the loop (a CgroupWalkDoneFn): the walk's reply goes to the Lists it was for. */
static void report_walk_done(const CgroupScrape *scrape, struct evbuffer *text, int result, void *userdata) {
        ReportServer *s = userdata;

        s->walking = NULL; /* freed by the walk after we return */
        cgroup_walk_log(scrape, result, "systemd-report");
        report_deliver(s, text);
        s->job = report_job_free(s->job);
}

/* Whether a List reads the cgroup tree: the patterns of [Metrics] Cgroups= and the hierarchy. */
static bool report_walk_globs(ReportServer *s, CgroupGlobs **ret) {
        int k;

        if (!s->config->metrics_cgroups || (!s->job->v2.path && !s->job->v1.path))
                return false;
        k = cgroup_globs_parse(s->config->metrics_cgroups, ret, NULL);
        if (k < 0)
                log_ratelimited(LOG_WARNING, -k, NULL, 60, 1, "Failed to parse [Metrics] Cgroups=, ignoring: %m");
        return k >= 0;
}

/* The Lists waiting become those of a new walk, or are answered without one. */
static void report_walk_next(ReportServer *s) {
        struct evbuffer *text;
        CgroupGlobs *globs = NULL;
        bool any = false;
        ReportCall *rc;
        CgroupWeigh weigh;
        int k;

        if (s->walking)
                return;
        LIST_FOREACH(calls, rc, s->calls)
                any = (rc->walked = true) || any;
        if (!any)
                return;
        k = report_job_new(s, &s->job);
        if (k < 0)
                return report_deliver(s, NULL);
        /* Whole cgroups in walk order, as many as their metrics fit: none read beyond. */
        weigh = (CgroupWeigh) { .weight = report_walk_weight, .userdata = s->job,
                                .budget = report_cgroup_budget(s->config->report_max_metrics) };
        if (report_walk_globs(s, &globs)) {
                k = cgroup_walk_start(s->base, s->job->v2.fd, s->job->v1.fd, globs, s->config->metrics_max_cgroups,
                                      &weigh, report_walk_write, s->job, report_walk_done, s, &s->walking);
                if (k >= 0)
                        return;
                log_ratelimited(LOG_WARNING, -k, NULL, 60, 1,
                                "Failed to start the cgroup walk for systemd-report, listing without it: %m");
        }
        text = evbuffer_new();
        if (text && report_write_list(text, &s->job->daemon, NULL, 0, 0) < 0) {
                evbuffer_free(text);
                text = NULL;
        }
        s->job = report_job_free(s->job);
        report_deliver(s, text);
        if (text)
                evbuffer_free(text);
}

static void on_next(evutil_socket_t fd, short what, void *userdata) {
        report_walk_next(userdata);
}

/* List and Describe take no parameter and need "more": 1 to answer @call, 0 for a oneway one, or the error. */
static int report_check_call(const VarlinkCall *call, VarlinkError *e) {
        static const char *const allowed[] = { NULL };
        int k = service_check_params(call->parameters, allowed, e);

        if (k < 0)
                return k;
        if (!call->more)
                return varlink_error_expected_more(e);
        return !call->oneway;
}

static int report_list(ReportServer *s, Client *c, VarlinkCall *call, VarlinkError *e) {
        ReportCall *rc;
        int k = report_check_call(call, e);

        if (k <= 0)
                return k;
        rc = calloc(1, sizeof(*rc));
        if (!rc)
                return -ENOMEM;
        *rc = (ReportCall) { .server = s, .client = c };
        LIST_PREPEND(calls, s->calls, rc);
        client_stream_start(c, rc, report_call_free);
        report_walk_next(s);
        return 0;
}

static int report_describe(ReportServer *s, Client *c, VarlinkCall *call, VarlinkError *e) {
        int k = report_check_call(call, e);

        if (k <= 0)
                return k;
        k = client_send_event(c, "", 0, s->describe, 0, 0);
        return k == -ENOBUFS ? -ENOMEM : k;
}

static const struct {
        const char *name;
        int (*func)(ReportServer *s, Client *c, VarlinkCall *call, VarlinkError *e);
} report_methods[] = {
        { METRICS_INTERFACE ".List", report_list },
        { METRICS_INTERFACE ".Describe", report_describe },
};

/* Answer @call from @c (a ClientDispatchFn). */
static void report_dispatch(Client *c, VarlinkCall *call, void *userdata) {
        ReportServer *s = userdata;
        VarlinkError e = {};
        int k = 1;

        for (size_t i = 0; i < ELEMENTSOF(report_methods) && k > 0; i++)
                if (streq(report_methods[i].name, call->method))
                        k = report_methods[i].func(s, c, call, &e);
        service_finish(&report_service, c, call, k, &e);
}

/* Describe's reply, written once: the families do not change while the daemon runs. */
static int report_describe_new(Body **ret) {
        struct evbuffer *text = evbuffer_new();
        int k = text ? report_write_describe(text) : -ENOMEM;

        if (k >= 0) {
                *ret = body_new((const char *) evbuffer_pullup(text, -1), evbuffer_get_length(text));
                k = *ret ? 0 : -ENOMEM;
        }
        if (text)
                evbuffer_free(text);
        return k;
}

int report_server_new(struct event_base *base, const Config *config, const StatusContext *status, int fd,
                      const char *path, ReportServer **ret) {
        ReportServer *s = calloc(1, sizeof(*s));
        int k;

        if (!s) {
                safe_close(fd);
                return log_error_errno(ENOMEM, "Out of memory.");
        }
        *s = (ReportServer) { .base = base, .config = config, .status = status };
        k = client_server_new(base, config, fd, report_dispatch, s, &s->clients);
        if (k < 0) {
                free(s);
                return k;
        }
        s->clients->max_clients = config->report_max_connections;
        s->clients->max_clients_key = "MaxConnections";
        s->clients->views = false; /* List and Describe name no cgroup of the peer's */
        s->ev_next = event_new(base, -1, 0, on_next, s);
        if (!s->ev_next || (path && !(s->path = strdup(path))) || report_describe_new(&s->describe) < 0) {
                report_server_free(s);
                return log_error_errno(ENOMEM, "Out of memory.");
        }
        *ret = s;
        return 0;
}

void report_server_set_config(ReportServer *s, const Config *config) {
        if (!s)
                return;
        s->config = config;
        s->clients->config = config;
        s->clients->max_clients = config->report_max_connections;
}

int report_server_fd(const ReportServer *s) {
        return s->clients->listen_fd;
}

const char *report_server_path(const ReportServer *s) {
        return s->path;
}

void report_server_forget_path(ReportServer *s) {
        if (!s)
                return;
        free(s->path);
        s->path = NULL;
}

void report_server_stop_walk(ReportServer *s) {
        if (!s || !s->walking)
                return;
        log_debug("Finishing the cgroup walk of systemd-report's List before the process stops or executes anew.");
        /* Its reply is queued, and written now as far as each socket takes it. */
        cgroup_walk_finish(s->walking);
}

ReportServer *report_server_free(ReportServer *s) {
        if (!s)
                return NULL;
        s->walking = cgroup_walk_free(s->walking);
        s->job = report_job_free(s->job);
        /* Each client frees its call with it. */
        s->clients = client_server_free(s->clients);
        event_free_and_null(&s->ev_next);
        body_unref(s->describe);
        if (s->path) {
                (void) unlink(s->path);
                free(s->path);
        }
        free(s);
        return NULL;
}
