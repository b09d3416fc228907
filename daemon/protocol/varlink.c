/* SPDX-License-Identifier: MIT */
/* Varlink call envelope parsing and reply serialization. */
#include "util.h"
#include "varlink.h"

int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret) {
        json_t *root, *method, *params, *v;
        json_error_t err;
        const char *key;
        bool more = false, oneway = false;

        root = json_loadb(msg, size, JSON_REJECT_DUPLICATES, &err);
        if (!root)
                return -EBADMSG;
        if (!json_is_object(root))
                goto bad;
        method = json_object_get(root, "method");
        if (!json_is_string(method) || json_string_length(method) == 0)
                goto bad;

        json_object_foreach(root, key, v) {
                if (streq(key, "more")) {
                        if (!json_is_boolean(v))
                                goto bad;
                        more = json_is_true(v);
                } else if (streq(key, "oneway")) {
                        if (!json_is_boolean(v))
                                goto bad;
                        oneway = json_is_true(v);
                } else if (streq(key, "upgrade")) {
                        if (!json_is_boolean(v))
                                goto bad;
                }
                /* "method", "parameters" checked separately; other keys are ignored
                 * for forward compatibility, as the varlink spec allows. */
        }

        params = json_object_get(root, "parameters");
        if (params && json_is_null(params))
                params = NULL;
        if (params && !json_is_object(params)) {
                *ret = (VarlinkCall) { .root = root, .method = json_string_value(method),
                                       .more = more, .oneway = oneway };
                return -EINVAL;
        }
        if (!params) {
                params = json_object();
                if (!params || json_object_set_new(root, "parameters", params) < 0)
                        goto bad;
        }

        *ret = (VarlinkCall) {
                .root = root,
                .method = json_string_value(method),
                .parameters = params,
                .more = more,
                .oneway = oneway,
        };
        return 0;
bad:
        json_decref(root);
        return -EBADMSG;
}

void varlink_call_done(VarlinkCall *c) {
        json_decref(c->root);
        *c = (VarlinkCall) {};
}

/* Serialize @msg with @flags plus the NUL; steals @msg (NULL gives NULL). */
static char *dump_with_nul(json_t *msg, size_t flags, size_t *ret_size) {
        size_t n;
        char *s;

        if (!msg)
                return NULL;
        n = json_dumpb(msg, NULL, 0, flags);
        if (n == 0) {
                json_decref(msg);
                return NULL;
        }
        s = malloc(n + 1);
        /* The second pass allocates too (jansson's loop check) and may fail
         * where the first did not: then the buffer holds no message. */
        if (s && json_dumpb(msg, s, n, flags) != n) {
                free(s);
                s = NULL;
        }
        if (s) {
                s[n] = 0;
                *ret_size = n + 1;
        }
        json_decref(msg);
        return s;
}

/*
 * message_new - {"error": @error, "parameters": @params}, without "error"
 * if @error is NULL. Steals @params (NULL means {}) on every path,
 * success or not: json_object_set_new() consumes its value even when it
 * fails, so nothing here may return before @params has been handed to it
 * or released.
 */
static json_t *message_new(const char *error, json_t *params) {
        json_t *msg;

        msg = json_object();
        if (!msg) {
                json_decref(params);
                return NULL;
        }
        if (error && json_object_set_new(msg, "error", json_string(error)) < 0) {
                json_decref(params);
                json_decref(msg);
                return NULL;
        }
        if (!params)
                params = json_object();
        if (json_object_set_new(msg, "parameters", params) < 0) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

/* A reply dumped with @flags; see varlink_reply_new(). */
static char *reply_new(json_t *params, bool continues, size_t flags, size_t *ret_size) {
        json_t *msg = message_new(NULL, params);

        if (msg && continues && json_object_set_new(msg, "continues", json_true()) < 0) {
                json_decref(msg);
                return NULL;
        }
        return dump_with_nul(msg, flags, ret_size);
}

char *varlink_reply_new(json_t *params, bool continues, size_t *ret_size) {
        return reply_new(params, continues, VARLINK_JSON_FLAGS, ret_size);
}

char *varlink_reply_new_decimal(json_t *params, bool continues, size_t *ret_size) {
        return reply_new(params, continues, VARLINK_JSON_FLAGS_DECIMAL, ret_size);
}

char *varlink_error_new(const char *error, json_t *params, size_t *ret_size) {
        return dump_with_nul(message_new(error, params), VARLINK_JSON_FLAGS, ret_size);
}

const char varlink_service_description[] =
        "# The Varlink Service Interface is provided by every varlink service.\n"
        "interface org.varlink.service\n"
        "\n"
        "method GetInfo() -> (\n"
        "  vendor: string,\n"
        "  product: string,\n"
        "  version: string,\n"
        "  url: string,\n"
        "  interfaces: []string\n"
        ")\n"
        "\n"
        "method GetInterfaceDescription(interface: string) -> (description: string)\n"
        "\n"
        "error InterfaceNotFound (interface: string)\n"
        "error MethodNotFound (method: string)\n"
        "error MethodNotImplemented (method: string)\n"
        "error InvalidParameter (parameter: string)\n"
        "error PermissionDenied ()\n"
        "error ExpectedMore ()\n";

bool json_string_writable(const char *s) {
        json_t *j = json_string(s);

        json_decref(j);
        return j;
}
