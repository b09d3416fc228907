/* SPDX-License-Identifier: MIT */
/* The kills source's arithmetic and checks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-ns.h"
#include "cgroup.h"
#include "kills.h"

uint64_t kills_rise(bool known, uint64_t last, uint64_t now) {
        return known && now > last ? now - last : 0;
}

bool kills_covers(const char *subscribed, const char *killed) {
        /* A peer whose namespace root is @subscribed sees @killed: the same relation. */
        return cgroup_view_from_real(subscribed, killed) != NULL;
}

int kills_oomd_check(const char *path, const char *reason, char **ret) {
        char *cgroup = NULL;
        int k;

        if (!path || !reason || !reason[0] || strlen(reason) > KILLS_REASON_MAX)
                return -EINVAL;
        k = cgroup_path_normalize(path, &cgroup);
        if (k < 0)
                return k;
        *ret = cgroup;
        return 0;
}
