/* SPDX-License-Identifier: MIT */
/*
 * pressurectl notify: desktop notifications of memory pressure. notify.c
 * owns the command: the subscriptions, the session bus and the loop; the
 * text and the rate limits are notify-text.h's.
 */
#pragma once

#include <stdbool.h>

/*
 * notify_main - run "pressurectl notify" (notify.c).
 * @argc, @argv: the arguments from the command name on
 * @socket: the global --socket, or NULL
 * @user: the global --user
 * @json: the global --json (--dry-run prints JSON objects)
 *
 * Returns the exit status.
 */
int notify_main(int argc, char **argv, const char *socket, bool user, bool json);
