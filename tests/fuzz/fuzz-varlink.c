/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: varlink framing and call parsing. The input is fed to the
 * reader in chunks whose sizes come from the input itself (split and merged
 * reads), every complete message is parsed as a call, and the reply
 * builders are exercised on what was parsed.
 */
#include "fuzz.h"
#include "util.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        VarlinkReader r;
        size_t off = 0;

        varlink_reader_init(&r, 4096);
        while (off < size) {
                size_t chunk = 1 + (data[off] % 97);
                const char *msg;
                size_t len;
                int k;

                if (chunk > size - off)
                        chunk = size - off;
                if (varlink_reader_feed(&r, data + off, chunk) < 0)
                        break;
                off += chunk;

                while ((k = varlink_reader_next(&r, &msg, &len)) > 0) {
                        VarlinkCall call = {};
                        char *reply;
                        size_t n;

                        if (msg[len] != 0)
                                abort();
                        k = varlink_call_parse(msg, len, &call);
                        if (k == 0) {
                                if (!call.method || !json_is_object(call.parameters))
                                        abort();
                                reply = varlink_reply_new(json_deep_copy(call.parameters), call.more, &n);
                                if (reply && reply[n - 1] != 0)
                                        abort();
                                free(reply);
                                varlink_call_done(&call);
                        } else if (k == -EINVAL)
                                varlink_call_done(&call);
                        else if (k != -EBADMSG)
                                abort();
                }
                if (k < 0) {
                        if (k != -EMSGSIZE)
                                abort();
                        break;
                }
        }
        varlink_reader_done(&r);
        return 0;
}
