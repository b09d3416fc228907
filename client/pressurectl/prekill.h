/* SPDX-License-Identifier: MIT */
/*
 * What pressurectl's commands do with a warning before a kill (a prekill
 * event of a kills subscription or a level stream): its line for people,
 * and its acknowledgement.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

#include "pressure.h"

/*
 * prekill_print - "2026-12-01 21:40:03  prekill  CGROUP  by systemd-oomd
 * (deadline in 1.750s)", "(deadline passed)" once it has, and "  missed=N"
 * when events were lost before it. @time_us: the event's CLOCK_REALTIME (0:
 * now); @deadline_us: its CLOCK_MONOTONIC deadline.
 */
void prekill_print(FILE *f, uint64_t time_us, const char *cgroup, const char *by, uint64_t deadline_us,
                   uint64_t missed);

/*
 * prekill_send_ack - acknowledge the warning @id on a connection of
 * its own (the stream goes on). A failure is said with cli_notice(), but
 * NoSuchPrekill once the deadline @deadline_us has passed: the daemon has
 * answered systemd-oomd by itself then. Returns 0 or the negative errno.
 */
int prekill_send_ack(pressure_client *c, uint64_t id, uint64_t deadline_us);

/* prekill_hook_done - a HookPrekillDone (hook.h) that acknowledges on the client @userdata. */
void prekill_hook_done(uint64_t id, uint64_t deadline_us, void *userdata);
