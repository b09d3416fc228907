/* SPDX-License-Identifier: MIT */
/*
 * A reader of exactly the GetProtection reply, {"nodes": [{...}, ...]}, for
 * pressurectl top: it picks "cgroup", "emin" and "elow" out of each node and
 * skips every other member (any JSON value). Building jansson objects for
 * the 1,000 nodes of eleven members that a large tree gives cost more CPU
 * than the whole rest of a refresh; this costs one pass over the text.
 * Pure: no I/O, no allocation.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "top-scan.h"
#include "util.h"

typedef struct Scan {
        const char *p;
        unsigned depth;
        TopProtectionNodeFn fn;
        void *userdata;
        int r; /* what fn returned, if negative */
} Scan;

static void scan_ws(Scan *s) {
        while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
                s->p++;
}

static bool scan_char(Scan *s, char c) {
        scan_ws(s);
        if (*s->p != c)
                return false;
        s->p++;
        return true;
}

static int hex4(const char *p) {
        int v = 0;

        for (int i = 0; i < 4; i++) {
                char c = p[i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                        c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* A string at s->p; decoded into @buf (cut at @size) if @buf is not NULL. */
static bool scan_string(Scan *s, char *buf, size_t size) {
        size_t n = 0;

        scan_ws(s);
        if (*s->p != '"')
                return false;
        s->p++;
        for (;;) {
                unsigned char c = (unsigned char) *s->p;
                char out[4];
                size_t len = 1;

                if (c == 0 || c < 0x20)
                        return false;
                s->p++;
                if (c == '"')
                        break;
                out[0] = (char) c;
                if (c == '\\') {
                        char e = *s->p++;
                        int u;

                        switch (e) {
                        case '"': case '\\': case '/': out[0] = e; break;
                        case 'b': out[0] = '\b'; break;
                        case 'f': out[0] = '\f'; break;
                        case 'n': out[0] = '\n'; break;
                        case 'r': out[0] = '\r'; break;
                        case 't': out[0] = '\t'; break;
                        case 'u':
                                u = hex4(s->p);
                                if (u < 0)
                                        return false;
                                s->p += 4;
                                if (u >= 0xd800 && u < 0xdc00 && s->p[0] == '\\' && s->p[1] == 'u') {
                                        int lo = hex4(s->p + 2);

                                        if (lo >= 0xdc00 && lo < 0xe000) {
                                                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                                                s->p += 6;
                                        }
                                }
                                if (u < 0x80)
                                        out[0] = (char) u;
                                else if (u < 0x800) {
                                        out[0] = (char) (0xc0 | (u >> 6));
                                        out[1] = (char) (0x80 | (u & 0x3f));
                                        len = 2;
                                } else if (u < 0x10000) {
                                        out[0] = (char) (0xe0 | (u >> 12));
                                        out[1] = (char) (0x80 | ((u >> 6) & 0x3f));
                                        out[2] = (char) (0x80 | (u & 0x3f));
                                        len = 3;
                                } else {
                                        out[0] = (char) (0xf0 | (u >> 18));
                                        out[1] = (char) (0x80 | ((u >> 12) & 0x3f));
                                        out[2] = (char) (0x80 | ((u >> 6) & 0x3f));
                                        out[3] = (char) (0x80 | (u & 0x3f));
                                        len = 4;
                                }
                                break;
                        default:
                                return false;
                        }
                }
                if (buf && n + len < size) {
                        memcpy(buf + n, out, len);
                        n += len;
                }
        }
        if (buf)
                buf[n] = 0;
        return true;
}

/* Skip any value. */
static bool scan_skip(Scan *s) {
        scan_ws(s);
        switch (*s->p) {
        case '"':
                return scan_string(s, NULL, 0);
        case '{':
        case '[': {
                char close = *s->p == '{' ? '}' : ']';

                if (++s->depth > 64)
                        return false;
                s->p++;
                if (scan_char(s, close)) {
                        s->depth--;
                        return true;
                }
                do {
                        if (close == '}' && (!scan_string(s, NULL, 0) || !scan_char(s, ':')))
                                return false;
                        if (!scan_skip(s))
                                return false;
                } while (scan_char(s, ','));
                s->depth--;
                return scan_char(s, close);
        }
        default: {
                const char *start = s->p;

                while (*s->p && (strchr("+-.eE", *s->p) || (*s->p >= '0' && *s->p <= '9') ||
                                 (*s->p >= 'a' && *s->p <= 'z')))
                        s->p++;
                return s->p > start;
        }
        }
}

/* A byte value: a non-negative integer, or null (unlimited). */
static bool scan_bytes(Scan *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        scan_ws(s);
        if (strncmp(s->p, "null", 4) == 0) {
                s->p += 4;
                *ret = TOP_UNLIMITED;
                return true;
        }
        if (*s->p < '0' || *s->p > '9')
                return scan_skip(s) && (*ret = TOP_NONE, true);
        errno = 0;
        v = strtoull(s->p, &end, 10);
        if (errno || (*end && strchr(".eE", *end)))
                return scan_skip(s) && (*ret = TOP_NONE, true);
        s->p = end;
        *ret = v < TOP_UNLIMITED ? v : TOP_NONE;
        return true;
}

/*
 * An object: @member scans the value of each member, given its key (keys
 * that do not fit 16 bytes are refused, as no member we pick is that long).
 */
static bool scan_object(Scan *s, bool (*member)(Scan *s, const char *key, void *userdata), void *userdata) {
        char key[16];

        if (!scan_char(s, '{'))
                return false;
        if (scan_char(s, '}'))
                return true;
        do
                if (!scan_string(s, key, sizeof(key)) || !scan_char(s, ':') || !member(s, key, userdata))
                        return false;
        while (scan_char(s, ','));
        return scan_char(s, '}');
}

typedef struct ScanNode {
        char path[4096];
        bool have_path;
        uint64_t emin, elow;
} ScanNode;

static bool scan_node_member(Scan *s, const char *key, void *userdata) {
        ScanNode *n = userdata;

        if (streq(key, "cgroup"))
                return (n->have_path = scan_string(s, n->path, sizeof(n->path)));
        if (streq(key, "emin"))
                return scan_bytes(s, &n->emin);
        if (streq(key, "elow"))
                return scan_bytes(s, &n->elow);
        return scan_skip(s);
}

/* One node object: hand its cgroup, emin and elow to the callback. */
static bool scan_node(Scan *s) {
        ScanNode n = { .emin = TOP_NONE, .elow = TOP_NONE };

        if (!scan_object(s, scan_node_member, &n))
                return false;
        if (n.have_path) {
                int r = s->fn(n.path, n.emin, n.elow, s->userdata);

                if (r < 0) {
                        s->r = r;
                        return false;
                }
        }
        return true;
}

/* The reply's members: "nodes", an array of nodes, is the one we need. */
static bool scan_reply_member(Scan *s, const char *key, void *userdata) {
        bool *seen = userdata;

        if (!streq(key, "nodes"))
                return scan_skip(s);
        *seen = true;
        if (!scan_char(s, '['))
                return false;
        if (scan_char(s, ']'))
                return true;
        do
                if (!scan_node(s))
                        return false;
        while (scan_char(s, ','));
        return scan_char(s, ']');
}

static bool scan_reply(Scan *s) {
        bool seen = false;

        return scan_object(s, scan_reply_member, &seen) && seen;
}

/**
 * top_scan_protection - read a GetProtection reply.
 * @text: the reply parameters as NUL-terminated JSON text
 * @fn: called for each node that has a "cgroup", in order, with its emin and
 *      elow (TOP_UNLIMITED for null, TOP_NONE if missing or not a byte count)
 * @userdata: passed to @fn
 *
 * Returns 0; -EBADMSG if the text is not such a reply (nodes before the
 * error have been passed to @fn); or the negative value @fn returned, which
 * stops the scan.
 */
int top_scan_protection(const char *text, TopProtectionNodeFn fn, void *userdata) {
        Scan s = { .p = text, .fn = fn, .userdata = userdata };

        if (!text || !fn)
                return -EINVAL;
        if (!scan_reply(&s))
                return s.r < 0 ? s.r : -EBADMSG;
        scan_ws(&s);
        return *s.p ? -EBADMSG : 0;
}
