/* SPDX-License-Identifier: MIT */
/* The result of GetHeadroom(), parsed from the daemon's reply. Pure: no I/O. */
#include <errno.h>
#include <stdlib.h>

#include "pressure-event.h"
#include "util.h"

struct pressure_headroom {
        unsigned n_ref;
        json_t *params;
        char *json;
        uint64_t usage_bytes;
        int has_limit, has_headroom, has_reclaim_target;
        uint64_t limit_bytes, headroom_bytes, reclaim_target_bytes;
        const char *limiting_cgroup; /* in params, or NULL */
};

/* The members of @params; usage_bytes is required, the rest may be null. 0 or -EBADMSG. */
static int headroom_parse(json_t *params, pressure_headroom *h) {
        json_t *cg = json_object_get(params, "limiting_cgroup");

        if (member_u64(params, "usage_bytes", &h->usage_bytes) <= 0)
                return -EBADMSG;
        h->has_limit = member_u64(params, "limit_bytes", &h->limit_bytes);
        h->has_headroom = member_u64(params, "headroom_bytes", &h->headroom_bytes);
        h->has_reclaim_target = member_u64(params, "reclaim_target_bytes", &h->reclaim_target_bytes);
        if (h->has_limit < 0 || h->has_headroom < 0 || h->has_reclaim_target < 0)
                return -EBADMSG;
        if (cg && !json_is_null(cg) && !json_is_string(cg))
                return -EBADMSG;
        h->limiting_cgroup = json_string_value(cg);
        return 0;
}

int headroom_new(json_t *params, pressure_headroom **ret) {
        pressure_headroom *h;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h) {
                json_decref(params);
                return -ENOMEM;
        }
        h->n_ref = 1;
        h->params = params;
        r = headroom_parse(params, h);
        if (r >= 0) {
                h->json = json_dumps(params, JSON_DUMP_FLAGS);
                r = h->json ? 0 : -ENOMEM;
        }
        if (r < 0) {
                pressure_headroom_unref(h);
                return r;
        }
        *ret = h;
        return 0;
}

/**
 * pressure_headroom_ref - take a reference.
 */
_public_ pressure_headroom *pressure_headroom_ref(pressure_headroom *h) {
        if (h)
                h->n_ref++;
        return h;
}

/**
 * pressure_headroom_unref - drop a reference; NULL is fine. Returns NULL.
 */
_public_ pressure_headroom *pressure_headroom_unref(pressure_headroom *h) {
        if (!h || --h->n_ref > 0)
                return NULL;
        free(h->json);
        json_decref(h->params);
        free(h);
        return NULL;
}

/**
 * pressure_headroom_unrefp - pressure_headroom_unref(*p), for __attribute__((cleanup)).
 */
_public_ void pressure_headroom_unrefp(pressure_headroom **p) {
        if (p)
                *p = pressure_headroom_unref(*p);
}

/**
 * pressure_headroom_get_usage_bytes - the cgroup's memory use.
 */
_public_ uint64_t pressure_headroom_get_usage_bytes(const pressure_headroom *h) {
        return h ? h->usage_bytes : 0;
}

/* A figure that may be null: 0 and *@ret, or -ENODATA. */
static int optional_figure(const pressure_headroom *h, int present, uint64_t value, uint64_t *ret) {
        if (!h || !ret)
                return -EINVAL;
        if (!present)
                return -ENODATA;
        *ret = value;
        return 0;
}

/**
 * pressure_headroom_get_limit_bytes - the nearest limit; -ENODATA for null.
 */
_public_ int pressure_headroom_get_limit_bytes(const pressure_headroom *h, uint64_t *ret) {
        return optional_figure(h, h && h->has_limit, h ? h->limit_bytes : 0, ret);
}

/**
 * pressure_headroom_get_limiting_cgroup - the cgroup that sets the limit, or NULL.
 */
_public_ const char *pressure_headroom_get_limiting_cgroup(const pressure_headroom *h) {
        return h ? h->limiting_cgroup : NULL;
}

/**
 * pressure_headroom_get_headroom_bytes - how far the cgroup can grow; -ENODATA for null.
 */
_public_ int pressure_headroom_get_headroom_bytes(const pressure_headroom *h, uint64_t *ret) {
        return optional_figure(h, h && h->has_headroom, h ? h->headroom_bytes : 0, ret);
}

/**
 * pressure_headroom_get_reclaim_target_bytes - how much to free; -ENODATA for null.
 */
_public_ int pressure_headroom_get_reclaim_target_bytes(const pressure_headroom *h, uint64_t *ret) {
        return optional_figure(h, h && h->has_reclaim_target, h ? h->reclaim_target_bytes : 0, ret);
}

/**
 * pressure_headroom_get_json - the reply's parameters as JSON text.
 */
_public_ const char *pressure_headroom_get_json(const pressure_headroom *h) {
        return h ? h->json : NULL;
}
