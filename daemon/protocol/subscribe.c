/* SPDX-License-Identifier: MIT */
/* Subscribe parameter validation. */
#include "cgroup.h"
#include "subscribe.h"
#include "util.h"

static int get_uint(json_t *v, uint64_t max, uint64_t *ret) {
        json_int_t i;

        if (!json_is_integer(v))
                return -EINVAL;
        i = json_integer_value(v);
        if (i < 0 || (uint64_t) i > max)
                return -ERANGE;
        *ret = (uint64_t) i;
        return 0;
}

static int parse_psi(json_t *v, PsiTrigger *ret, VarlinkError *e) {
        json_t *x;
        const char *key, *reason;
        PsiTrigger t = {};
        uint64_t u;

        if (!json_is_object(v))
                return varlink_error_invalid_parameter(e, "psi");
        json_object_foreach(v, key, x) {
                if (streq(key, "stall")) {
                        if (!json_is_string(x) ||
                            (t.stall = psi_stall_from_string(json_string_value(x))) < 0)
                                return varlink_error_invalid_parameter(e, "psi.stall");
                } else if (streq(key, "threshold_us")) {
                        if (get_uint(x, UINT32_MAX, &u) < 0)
                                return varlink_error_invalid_parameter(e, "psi.threshold_us");
                        t.threshold_us = u;
                } else if (streq(key, "window_us")) {
                        if (get_uint(x, UINT32_MAX, &u) < 0)
                                return varlink_error_invalid_parameter(e, "psi.window_us");
                        t.window_us = u;
                } else
                        return varlink_error_invalid_parameter(e, "psi");
        }
        if (!json_object_get(v, "stall"))
                return varlink_error_invalid_parameter(e, "psi.stall");
        if (!json_object_get(v, "threshold_us"))
                return varlink_error_invalid_parameter(e, "psi.threshold_us");
        if (!json_object_get(v, "window_us"))
                return varlink_error_invalid_parameter(e, "psi.window_us");
        if (psi_trigger_check(&t, &reason) < 0)
                return varlink_error_invalid_trigger(e, -EINVAL, reason);
        *ret = t;
        return 0;
}

static int parse_vmpressure(json_t *v, SubscribeRequest *r, VarlinkError *e) {
        json_t *x;
        const char *key;

        if (!json_is_object(v))
                return varlink_error_invalid_parameter(e, "vmpressure");
        r->vm_level = _LEVEL_INVALID;
        r->vm_mode = VMPRESSURE_MODE_DEFAULT;
        json_object_foreach(v, key, x) {
                if (streq(key, "level")) {
                        if (!json_is_string(x) ||
                            (r->vm_level = level_from_string(json_string_value(x))) < 0)
                                return varlink_error_invalid_parameter(e, "vmpressure.level");
                } else if (streq(key, "mode")) {
                        if (json_is_null(x))
                                continue;
                        if (!json_is_string(x) ||
                            (r->vm_mode = vmpressure_mode_from_string(json_string_value(x))) < 0)
                                return varlink_error_invalid_parameter(e, "vmpressure.mode");
                } else
                        return varlink_error_invalid_parameter(e, "vmpressure");
        }
        if (r->vm_level < 0)
                return varlink_error_invalid_parameter(e, "vmpressure.level");
        return 0;
}

/* The selector a boolean parameter @key stands for, or -1. */
static int flag_selector(const char *key) {
        static const struct {
                const char *name;
                Selector selector;
        } flags[] = {
                { "memory_events", SELECTOR_MEMORY_EVENTS },
                { "protection", SELECTOR_PROTECTION },
                { "kills", SELECTOR_KILLS },
                { "levels", SELECTOR_LEVELS },
        };

        for (size_t i = 0; i < ELEMENTSOF(flags); i++)
                if (streq(key, flags[i].name))
                        return (int) flags[i].selector;
        return -1;
}

int subscribe_request_parse(json_t *params, SubscribeRequest *ret, VarlinkError *e) {
        SubscribeRequest r = { .selector = -1, .resource = RESOURCE_MEMORY, .level = _LEVEL_INVALID };
        const char *key, *selector_name = NULL;
        json_t *v;
        int k;

        json_object_foreach(params, key, v) {
                bool is_selector = false;

                if (json_is_null(v))
                        continue; /* varlink: null equals absent */

                if (streq(key, "cgroup")) {
                        if (!json_is_string(v))
                                return varlink_error_invalid_parameter(e, "cgroup");
                        continue;
                } else if (streq(key, "resource")) {
                        if (!json_is_string(v) ||
                            (r.resource = resource_from_string(json_string_value(v))) < 0)
                                return varlink_error_invalid_parameter(e, "resource");
                        continue;
                } else if (streq(key, "min_interval_ms")) {
                        uint64_t ms;

                        if (get_uint(v, SUBSCRIBE_MIN_INTERVAL_MAX_MS, &ms) < 0)
                                return varlink_error_invalid_parameter(e, "min_interval_ms");
                        r.min_interval_usec = ms * USEC_PER_MSEC;
                        continue;
                } else if (streq(key, "level")) {
                        if (!json_is_string(v) || (r.level = level_from_string(json_string_value(v))) < 0)
                                return varlink_error_invalid_parameter(e, "level");
                        is_selector = true;
                        r.selector = SELECTOR_LEVEL;
                } else if (streq(key, "psi")) {
                        k = parse_psi(v, &r.psi, e);
                        if (k < 0)
                                return k;
                        is_selector = true;
                        r.selector = SELECTOR_PSI;
                } else if (streq(key, "vmpressure")) {
                        k = parse_vmpressure(v, &r, e);
                        if (k < 0)
                                return k;
                        is_selector = true;
                        r.selector = SELECTOR_VMPRESSURE;
                } else if ((k = flag_selector(key)) >= 0) {
                        if (!json_is_boolean(v))
                                return varlink_error_invalid_parameter(e, key);
                        if (json_is_false(v))
                                continue;
                        is_selector = true;
                        r.selector = (Selector) k;
                } else
                        return varlink_error_invalid_parameter(e, key);

                if (is_selector) {
                        if (selector_name)
                                /* Exactly one selector: name the one that is too many. */
                                return varlink_error_invalid_parameter(e, key);
                        selector_name = key;
                }
        }
        if (!selector_name)
                return varlink_error_invalid_parameter(e, "level");
        /* cpu and io pressure exist only as PSI: the other sources are memory's alone. */
        if (r.resource != RESOURCE_MEMORY && r.selector != SELECTOR_LEVEL && r.selector != SELECTOR_PSI)
                return varlink_error_invalid_parameter(e, "resource");
        /* A level stream folds changes a client has not read: no interval on top. */
        if (r.selector == SELECTOR_LEVELS && r.min_interval_usec > 0)
                return varlink_error_invalid_parameter(e, "min_interval_ms");

        v = json_object_get(params, "cgroup");
        k = cgroup_path_normalize(json_is_string(v) ? json_string_value(v) : NULL, &r.cgroup);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return varlink_error_invalid_cgroup_path(e, -EINVAL, json_string_value(v));
        *ret = r;
        return 0;
}

void subscribe_request_done(SubscribeRequest *r) {
        free(r->cgroup);
        r->cgroup = NULL;
}
