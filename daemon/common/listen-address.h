/* SPDX-License-Identifier: MIT */
/* Numeric TCP listen addresses, as [Metrics] Listen= takes them. */
#pragma once

#include <sys/socket.h>

/*
 * metrics_parse_listen - parse a [Metrics] Listen= value.
 * @address: "A.B.C.D:PORT" or "[IPV6]:PORT"; numeric addresses only (no name
 *          resolution), PORT 0..65535 (0 picks a free port, for tests)
 * @ret: the socket address
 * @ret_len: its length
 *
 * Returns 0 or -EINVAL.
 */
int metrics_parse_listen(const char *address, struct sockaddr_storage *ret, socklen_t *ret_len);
