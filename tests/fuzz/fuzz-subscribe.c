/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: Subscribe parameter validation. Any JSON object is accepted
 * as parameters; a success must yield a canonical cgroup path and exactly
 * one selector, a failure a varlink error name.
 */
#include "fuzz.h"
#include "subscribe.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SubscribeRequest req = {};
        VarlinkError e = {};
        json_t *params;
        int k;

        params = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
        if (!params)
                return 0;
        if (!json_is_object(params)) {
                json_decref(params);
                return 0;
        }
        k = subscribe_request_parse(params, &req, &e);
        if (k == 0) {
                if (!req.cgroup || req.cgroup[0] != '/' || e.name)
                        abort();
                if (strstr(req.cgroup, "//") || strstr(req.cgroup, "/../") || strstr(req.cgroup, "/./"))
                        abort();
                if (req.selector < SELECTOR_LEVEL || req.selector > SELECTOR_LEVELS)
                        abort();
                subscribe_request_done(&req);
        } else if (k != -ENOMEM && !e.name)
                abort();
        varlink_error_done(&e);
        json_decref(params);
        return 0;
}
