/* SPDX-License-Identifier: MIT */
/*
 * The manager owns the event loop and all daemon state: configuration,
 * the listening socket and its clients, the registrations of kernel
 * pressure sources and the subscriptions sharing them, counters, and the
 * systemd integration (notify, watchdog, reload).
 *
 * Object model:
 *   Client        one varlink connection; at most one active stream
 *   Subscription  a client's Subscribe stream, attached to one Registration
 *   Registration  one kernel registration (cgroup, source, trigger), shared
 *                 by every identical subscription, created by the first and
 *                 closed when the last leaves
 */
#pragma once

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "config.h"
#include "kernfile.h"
#include "list.h"
#include "metrics.h"
#include "outqueue.h"
#include "trigger.h"
#include "varlink.h"
#include "varlink-error.h"

typedef struct Manager Manager;
typedef struct Client Client;
typedef struct Registration Registration;
typedef struct Subscription Subscription;
typedef struct ProtectionReader ProtectionReader;

typedef enum SourceType {
        SOURCE_PSI,
        SOURCE_VMPRESSURE,
        SOURCE_MEMORY_EVENTS,
        SOURCE_PROTECTION,
        _SOURCE_MAX,
} SourceType;

const char *source_type_to_string(SourceType t);

/* What a Subscribe call asked for, after validation (see subscribe.h). */
typedef enum Selector {
        SELECTOR_LEVEL,
        SELECTOR_PSI,
        SELECTOR_VMPRESSURE,
        SELECTOR_MEMORY_EVENTS,
        SELECTOR_PROTECTION,
} Selector;

typedef struct SubscribeRequest {
        char *cgroup;               /* canonical, "/" for the system */
        Selector selector;
        Level level;                /* SELECTOR_LEVEL */
        PsiTrigger psi;             /* SELECTOR_PSI */
        Level vm_level;             /* SELECTOR_VMPRESSURE */
        VmpressureMode vm_mode;
        uint64_t min_interval_usec;
} SubscribeRequest;

/* The identity of a kernel registration. */
typedef struct RegistrationKey {
        SourceType type;
        const char *cgroup;
        PsiTrigger psi;             /* SOURCE_PSI: the trigger requested */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
} RegistrationKey;

typedef struct SourceOps {
        /* Make the kernel registration; fill @e on failure. */
        int (*open)(Registration *r, VarlinkError *e);
        /* Release what open() made beyond fd, aux_fd and ev (which the
         * registration closes itself); optional. */
        void (*close)(Registration *r);
        /* The current picture for the "subscribed" reply, or NULL. */
        json_t *(*state)(Registration *r);
} SourceOps;

extern const SourceOps source_psi_ops;
extern const SourceOps source_vmpressure_ops;
extern const SourceOps source_memory_events_ops;
extern const SourceOps source_protection_ops;

struct Registration {
        Manager *manager;
        SourceType type;
        const SourceOps *ops;
        char *cgroup;
        PsiTrigger requested;       /* SOURCE_PSI */
        PsiTrigger used;            /* SOURCE_PSI: what the kernel accepted */
        Level vm_level;             /* SOURCE_VMPRESSURE */
        VmpressureMode vm_mode;
        bool adjusted;

        int fd;                     /* trigger fd / eventfd / inotify fd */
        int aux_fd;                 /* psi: epoll fd; memory_events: memory.events fd */
        ino_t dir_ino;              /* to tell a recreated cgroup from ours */
        struct event *ev;
        struct event *holdoff;      /* SOURCE_VMPRESSURE: re-arms ev after a pause */

        MemoryEvents last_events;   /* SOURCE_MEMORY_EVENTS */
        int last_state;             /* SOURCE_PROTECTION: ProtectionState, -1 unknown */
        bool removed;

        Subscription *subscriptions;
        unsigned n_subscriptions;
        LIST_FIELDS(Registration, registrations);
};

struct Subscription {
        Client *client;
        Registration *reg;
        bool by_level;              /* subscribed with "level": follows [Levels] on reload */
        bool has_level;             /* its events carry "level" (level and vmpressure) */
        Level level;
        uint64_t seq;               /* events generated so far */
        uint64_t missed;            /* dropped since the last one delivered */
        uint64_t min_interval_usec;
        uint64_t last_sent_usec;
        Body *pending;              /* coalesced event waiting for the interval */
        uint64_t pending_count;
        struct event *coalesce;     /* exists only while an event is pending */
        LIST_FIELDS(Subscription, subscriptions);
};

struct Client {
        Manager *manager;
        uint64_t id;
        int fd;
        struct event *ev_read;
        struct event *ev_write;
        struct event *ev_timer;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        VarlinkReader in;
        OutQueue out;
        Subscription *sub;          /* active stream, or NULL */
        uint64_t partial_since;     /* monotonic time the unfinished message began, 0 none */
        uint64_t last_activity;
        bool dead;
        bool read_paused;
        bool write_armed;
        LIST_FIELDS(Client, clients);
        LIST_FIELDS(Client, dead);
};

typedef struct UserCount {
        uid_t uid;
        unsigned n;
} UserCount;

typedef struct Counters {
        uint64_t events_read;
        uint64_t events_delivered;
        uint64_t events_dropped;
        uint64_t events_injected;
        uint64_t registrations_created;
        uint64_t registrations_removed;
        uint64_t clients_accepted;
        uint64_t clients_refused;
        uint64_t protection_refreshes;
        /* from reading a kernel notification to queueing it for a subscriber */
        MetricsHistogram latency;
} Counters;

struct Manager {
        struct event_base *base;
        Config *config;
        const char *config_path;    /* --config, or NULL */
        const char *config_main;    /* normally /etc/pressured/pressured.conf */
        const char *config_dropins;

        bool user_mode;
        int log_level_override;     /* --log-level, or -1: wins over LogLevel= on reload too */
        char *socket_path;          /* path we bound and must unlink, or NULL */
        int listen_fd;
        bool socket_activated;
        struct event *ev_accept;
        int spare_fd;               /* reserved to refuse clients cleanly at EMFILE */

        Hierarchy v2;
        Hierarchy v1;
        bool recursive_prot_mount;
        char *cgroup_root_arg;
        char *cgroup_v1_root_arg;

        Client *clients;
        Client *dead;
        unsigned n_clients;
        unsigned n_subscriptions;
        uint64_t next_client_id;
        UserCount *users;
        size_t n_users;
        struct event *ev_reap;

        Registration *registrations;
        unsigned n_registrations;
        bool psi_unprivileged;      /* learned: the kernel wants 2 s windows from us */

        ProtectionReader *protection; /* exists only while protection is tracked */
        struct event *ev_refresh;   /* exists only while protection is subscribed */
        bool prot_refreshing;
        /* counters of readers already freed, so totals stay monotonic */
        uint64_t prot_applied_base, prot_skipped_base;

        struct event *ev_sigterm, *ev_sigint, *ev_sighup;
        struct event *ev_watchdog;  /* exists only while the watchdog is on */
        void *metrics;              /* MetricsServer */

        uint64_t start_monotonic;
        Counters counters;
        int exit_code;
};

/* manager.c */
int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
int manager_setup_cgroups(Manager *m);
int manager_listen(Manager *m, const char *socket_path);
int manager_run(Manager *m);
int manager_reload(Manager *m, char **ret_error);
bool manager_recursive_protection(const Manager *m);
void manager_record_latency(Manager *m, uint64_t usec);
json_t *manager_status(Manager *m);
void manager_write_metrics(struct evbuffer *out, void *userdata);

/* server.c */
int server_accept_setup(Manager *m);
void client_free(Client *c);
void client_kill(Client *c);           /* deferred close; safe during fan-out */
void client_reap(Manager *m);
void client_kick(Client *c);           /* flush or arm the write event */
int client_send_owned(Client *c, char *msg, size_t size);
void client_stream_ended(Client *c);  /* resume processing pipelined calls */

/* registry.c */
int registration_acquire(Manager *m, const RegistrationKey *key, Registration **ret, VarlinkError *e);
void registration_release(Registration *r);
Registration *registration_find(Manager *m, const RegistrationKey *key);
int subscription_new(Client *c, Registration *r, const SubscribeRequest *req, Subscription **ret);
void subscription_free(Subscription *s);
int subscription_move(Subscription *s, Registration *to);
/* Fan @body out to every subscriber of @r; @count kernel notifications it stands for. */
void registration_deliver(Registration *r, Body *body, uint64_t count);
/* Serialize @event once (stealing it) and fan it out to every subscriber of @r. */
void registration_publish(Registration *r, json_t *event, uint64_t monotonic_us, uint64_t count);
/* Deliver to one subscription (coalescing applies). Returns true if queued. */
bool subscription_offer(Subscription *s, Body *body, uint64_t count);
/* End every stream on @r with "removed" and free it. */
void registration_removed(Registration *r);
/* Turn an event object into a shared body; steals @event. */
Body *event_body_new(json_t *event, uint64_t monotonic_us);
json_t *event_json_new(const char *kind, const char *cgroup, const char *source,
                  uint64_t realtime_us, uint64_t monotonic_us);
json_t *psi_stats_to_json(const PsiStats *s);
json_t *memory_events_to_json(const MemoryEvents *e);

/* methods.c */
int method_dispatch(Client *c, VarlinkCall *call);
