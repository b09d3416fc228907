/* SPDX-License-Identifier: MIT */
/*
 * The varlink methods: org.varlink.service (GetInfo,
 * GetInterfaceDescription) and io.pressured (Subscribe, GetStatus,
 * GetProtection, Inject, Reload), with the authorization rules of the
 * contract.
 */
#pragma once

#include "client.h"
#include "varlink.h"

/*
 * method_dispatch - answer @call from @c: run the method, or send the
 * declared error. Returns 0, or a negative errno if the answer could not
 * be queued (the client is then closed).
 */
int method_dispatch(Client *c, VarlinkCall *call);
