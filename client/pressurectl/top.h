/* SPDX-License-Identifier: MIT */
/*
 * pressurectl top: the command. top.c owns the daemon queries, sorting,
 * filtering and drawing; it shows a snapshot of top-cgroup.h, marked with
 * the kills of top-kills.h and the protection nodes of GetProtection().
 */
#pragma once

#include <stdbool.h>

/*
 * top_main - run "pressurectl top" (top.c).
 * @argc, @argv: the arguments from the command name on
 * @socket: the global --socket, or NULL
 * @user: the global --user
 * @json: the global --json
 *
 * Returns the exit status.
 */
int top_main(int argc, char **argv, const char *socket, bool user, bool json);
