/* SPDX-License-Identifier: MIT */
/*
 * The systemd pressure proxy: listening sockets, one per resource, that
 * speak the protocol sd_event_add_memory_pressure() uses when
 * MEMORY_PRESSURE_WATCH names an AF_UNIX stream socket, and
 * sd_event_add_cpu_pressure() / sd_event_add_io_pressure() (systemd 261)
 * with CPU_PRESSURE_WATCH / IO_PRESSURE_WATCH. A client writes one PSI
 * trigger line (or nothing) and then receives one byte per pressure
 * event. Each proxied client is attached to the registration of its own
 * cgroup for the resource of the socket it connected to, shared with
 * varlink subscribers of the same (cgroup, source, resource, trigger).
 * Connections are never closed by the daemon while the client lives:
 * sd-event would spin on the end of file.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "client.h"
#include "config.h"
#include "counters.h"
#include "list.h"
#include "registration.h"
#include "trigger.h"
#include "util.h"

typedef struct ProxyServer ProxyServer;
typedef struct ProxyClient ProxyClient;

/* The longest trigger line read; anything longer is not a trigger. */
#define PROXY_LINE_MAX 128
/* How long a new connection has to write its trigger line. */
#define PROXY_READ_TIMEOUT_USEC (1 * USEC_PER_SEC)

struct ProxyClient {
        Listener listener;          /* first: attached to its registration, or detached */
        ProxyServer *server;
        uint64_t id;
        Resource resource;          /* of the socket it connected to */
        int fd;
        int pidfd;                  /* the peer process, -1 if the kernel gave none */
        pid_t pid;
        uid_t uid;
        char *unit;                 /* systemd unit from the peer's cgroup, or NULL */
        char line[PROXY_LINE_MAX];
        size_t len;
        bool line_done;             /* the request is decided; later bytes are discarded */
        struct event *ev_read;
        struct event *ev_timer;     /* exists until the request is decided */
        uint64_t decide_by;         /* CLOCK_MONOTONIC: when ev_timer fires */
        uint64_t sent;
        uint64_t dropped;
        LIST_FIELDS(ProxyClient, all);      /* in server->clients */
};

/* What the proxy needs of the rest of the daemon. */
typedef struct ProxyEnv {
        struct event_base *base;
        const Config *config;
        Registry *registry;
        Counters *counters;
        const Hierarchy *v2;
        const Hierarchy *v1;
        const ClientServer *varlink; /* its clients count against MaxClients= too; may be NULL */
} ProxyEnv;

/* Who is told as proxied clients come, settle and go (the takeover bookkeeping); every callback is optional. */
typedef struct ProxyHooks {
        void (*connected)(ProxyClient *p, void *userdata);
        void (*attached)(ProxyClient *p, void *userdata);   /* its request decided */
        void (*disconnected)(ProxyClient *p, void *userdata);
} ProxyHooks;

/* The listening socket of one resource. */
typedef struct ProxySocket {
        ProxyServer *server;
        Resource resource;
        int fd;                     /* -1: this resource is not served */
        char *path;                 /* bound by us and unlinked at exit, or NULL */
        struct event *ev_accept;
} ProxySocket;

struct ProxyServer {
        ProxyEnv env;
        const ProxyHooks *hooks;
        void *hooks_userdata;
        ProxySocket sockets[_RESOURCE_MAX];
        ProxyClient *clients;       /* of every resource */
        unsigned n_clients;
        uint64_t next_id;
};

/* The trigger sd-event asks for when MEMORY_PRESSURE_WRITE (CPU_, IO_) is unset. */
#define PROXY_DEFAULT_TRIGGER ((PsiTrigger) { PSI_STALL_SOME, 200000, 2000000 })

/*
 * proxy_fd_name - the FileDescriptorName= of @r's socket, which is also the
 * word in its default path: "memory-pressure", "cpu-pressure",
 * "io-pressure"; NULL if out of range.
 */
const char *proxy_fd_name(Resource r);

/*
 * proxy_new - a proxy serving no socket yet.
 * @env: the rest of the daemon (copied; env->config is updated with proxy_set_config())
 *
 * Returns 0 or -ENOMEM (logged).
 */
int proxy_new(const ProxyEnv *env, ProxyServer **ret);

/*
 * proxy_listen - serve the pressure protocol of @resource.
 * @listen_fd: the listening socket (taken over, closed on failure), bound
 *             by us at @path or passed by the service manager (@path NULL)
 * @path: unlinked when the proxy stops, or NULL
 *
 * Returns 0, -EEXIST if @resource is served already, or -ENOMEM (logged).
 */
int proxy_listen(ProxyServer *s, Resource resource, int listen_fd, const char *path);

/* proxy_stop - close every proxied client and the sockets; NULL-safe, returns NULL. */
ProxyServer *proxy_stop(ProxyServer *s);

/* proxy_forget_paths - the socket files belong to the next process: proxy_stop() leaves them. */
void proxy_forget_paths(ProxyServer *s);

/*
 * proxy_resource_of_fd - the resource of the socket @fd (a connection)
 * was accepted on, told by its local address; RESOURCE_MEMORY if none of
 * ours matches (an unnamed socket, or one from an older process).
 */
Resource proxy_resource_of_fd(const ProxyServer *s, int fd);

/*
 * proxy_adopt_client - the proxied client a previous process described in
 * @snap (of its resource, memory in a state from before there were
 * others), on @fd (taken over, closed on failure), attached to @r (NULL:
 * silent, as it was or because its cgroup is gone). One whose request
 * was not decided yet reads on until the deadline it had. Returns 0 or -ENOMEM.
 */
int proxy_adopt_client(ProxyServer *s, int fd, const SnapshotProxyClient *snap, Registration *r);

/* proxy_client_export - @p as a snapshot. Returns 0 or -ENOMEM. */
int proxy_client_export(const ProxyClient *p, SnapshotProxyClient *ret);

/* proxy_set_config - the configuration after a reload. */
void proxy_set_config(ProxyServer *s, const Config *config);

/*
 * proxy_warn_under - one pressure byte (never out-of-band data) to every
 * proxied client whose cgroup (its registration's) is @victim or below
 * it, in either hierarchy: systemd-oomd is about to kill it. Returns how
 * many got it.
 */
unsigned proxy_warn_under(ProxyServer *s, const char *victim);

/* proxy_client_of - the proxied client behind @l, or NULL if @l is another kind of listener. */
const ProxyClient *proxy_client_of(const Listener *l);

/*
 * proxy_vmpressure_level - the vmpressure level that matches the PSI
 * trigger @t: the most severe of [Levels] @levels whose stall/window
 * ratio @t reaches (a "full" level only for "full" triggers); low if none.
 */
Level proxy_vmpressure_level(const PsiTrigger *t, const PsiTrigger levels[static _LEVEL_MAX]);

/*
 * proxy_parse_request - decide the trigger from what a client wrote.
 * @buf: the bytes read, up to and excluding the NUL or newline
 * @len: their number
 * @ret: the trigger; the default when the request is not valid
 * @ret_reason: why the request was not valid, or NULL
 *
 * The line is the kernel format ("some 150000 2000000") or the config
 * format ("some 150ms 2s"), checked like Subscribe's "psi". Returns 0 for
 * a valid trigger, -EINVAL for anything else.
 */
int proxy_parse_request(const char *buf, size_t len, PsiTrigger *ret, const char **ret_reason);
