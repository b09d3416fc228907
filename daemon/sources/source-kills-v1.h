/* SPDX-License-Identifier: MIT */
/*
 * The kernel's kills of a kills source in the cgroup v1 memory hierarchy
 * (source-kills-v1.c): memory.oom_control's notification and oom_kill.
 */
#pragma once

#include <stdbool.h>

#include "source.h"

/*
 * kills_v1_open - for the kills source @s on a cgroup, watch the cgroup of
 * the same path in the v1 memory hierarchy, if there is one with an
 * oom_kill counter; where not, remember why (kills_v1_why()). Returns 0,
 * or -ENOMEM.
 */
int kills_v1_open(Source *s);

/* kills_v1_close - drop what kills_v1_open() made; idempotent. */
void kills_v1_close(Source *s);

/* kills_v1_active - whether the kernel's kills in the v1 hierarchy are heard. */
bool kills_v1_active(const Source *s);

/*
 * kills_v1_why - 0 when active, else why not: -EOPNOTSUPP no v1 memory
 * hierarchy, -ENOENT the cgroup is not in it (or the source is on "/"),
 * -ENODATA its memory.oom_control has no oom_kill (Linux before 4.13),
 * another negative errno if the registration failed.
 */
int kills_v1_why(const Source *s);
