/* SPDX-License-Identifier: MIT */
/*
 * What every varlink socket of the daemon answers alike: a reply or an
 * error to a call (none to a oneway call), the check that a call names
 * only known parameters, org.varlink.service (GetInfo and
 * GetInterfaceDescription of the interfaces the socket serves, so that
 * varlinkctl introspects it), the error for a method or interface it does
 * not have, and the log line and error reply of a call that failed. The
 * io.pressured socket (methods.c), systemd-report's (report.c) and the
 * pre-kill hook's (prekill.c) use it: each dispatches its own methods,
 * then hands the call to service_finish().
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "client.h"
#include "varlink-error.h"
#include "varlink.h"

/* An interface a socket serves: its name and its description (the IDL text). */
typedef struct VarlinkInterface {
        const char *name;
        const char *description;
} VarlinkInterface;

/* The interfaces of one socket, org.varlink.service aside (every socket has it). */
typedef struct VarlinkService {
        const VarlinkInterface *interfaces;
        size_t n_interfaces;
} VarlinkService;

/*
 * service_check_params - reject a parameter not in @allowed (NULL-terminated)
 * with InvalidParameter. Returns 0 or -EINVAL.
 */
int service_check_params(json_t *params, const char *const *allowed, VarlinkError *e);

/*
 * service_reply - answer @call with @params (stolen), "continues" unless
 * @last; nothing to a oneway call. NULL @params is a reply that could not
 * be built: -ENOMEM, never an empty success.
 */
int service_reply(Client *c, const VarlinkCall *call, json_t *params, bool last);

/* service_reply_error - answer @call with the error @e (consumed); nothing to a oneway call. */
int service_reply_error(Client *c, const VarlinkCall *call, VarlinkError *e);

/*
 * service_failed - a call of @c failed with @k (< 0) and @e (consumed):
 * logged (an error the daemon made as such, a caller's mistake at debug
 * level) and answered; @c is closed when not even that can be queued. An
 * error without a name is InternalError, or LimitExceeded for fds.
 */
void service_failed(Client *c, const VarlinkCall *call, int k, VarlinkError *e);

/*
 * service_finish - the end of a dispatch on @s's socket, with @k what the
 * socket's own method made of @call: 0 answered; > 0 none of its methods,
 * so org.varlink.service's GetInfo and GetInterfaceDescription (of the
 * interfaces of @s), else MethodNotFound for an interface it serves and
 * InterfaceNotFound for another; < 0 failed with @e (service_failed()).
 */
void service_finish(const VarlinkService *s, Client *c, VarlinkCall *call, int k, VarlinkError *e);
