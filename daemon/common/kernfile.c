/* SPDX-License-Identifier: MIT */
/*
 * Parsers for kernel text files: PSI pressure files, memory.events, single
 * memory values, /proc/self/mountinfo and /proc/PID/cgroup. They work on
 * NUL-terminated text already read by the caller, treat every byte as
 * untrusted and fail with -EBADMSG instead of guessing.
 */
#include <ctype.h>

#include "cgroup.h"
#include "cgroupfs.h"
#include "kernfile.h"
#include "util.h"

/*
 * Take the next non-empty line of the text at *@text: [*@ret_begin,
 * *@ret_end) without its newline; advance *@text past it. Returns false
 * at the end of the text. Every parser here reads its file line by line
 * through this and has no use for blank lines.
 */
static bool next_line(const char **text, const char **ret_begin, const char **ret_end) {
        const char *p = *text;

        while (*p == '\n')
                p++;
        if (!*p)
                return false;
        *ret_begin = p;
        p += strcspn(p, "\n");
        *ret_end = p;
        *text = *p ? p + 1 : p;
        return true;
}

/* Parse a decimal uint64 from [p, end); the whole range must be digits. */
static int parse_u64_range(const char *p, const char *end, uint64_t *ret) {
        uint64_t v = 0;

        if (p >= end)
                return -EBADMSG;
        for (; p < end; p++) {
                unsigned d;

                if (!isdigit((unsigned char) *p))
                        return -EBADMSG;
                d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

/*
 * Parse a PSI average "12.34" from [p, end) into hundredths (1234). The
 * kernel prints two decimals; fewer are accepted, more are truncated.
 */
static int parse_psi_avg(const char *p, const char *end, uint32_t *ret) {
        const char *dot = memchr(p, '.', (size_t) (end - p));
        uint64_t whole, frac = 0;
        unsigned digits = 0;
        int r;

        r = parse_u64_range(p, dot ?: end, &whole);
        if (r < 0)
                return r;
        if (dot) {
                const char *q = dot + 1;

                if (q >= end)
                        return -EBADMSG;
                for (; q < end; q++) {
                        if (!isdigit((unsigned char) *q))
                                return -EBADMSG;
                        if (digits < 2) {
                                frac = frac * 10 + (uint64_t) (*q - '0');
                                digits++;
                        }
                }
        }
        for (; digits < 2; digits++)
                frac *= 10;
        if (whole > (UINT32_MAX - frac) / 100)
                return -EBADMSG;
        *ret = (uint32_t) (whole * 100 + frac);
        return 0;
}

/* Parse the fields after "some"/"full" on one line [p, end). */
static int psi_line_parse(const char *p, const char *end, PsiLine *ret) {
        PsiLine l = {};
        unsigned seen = 0;

        while (p < end) {
                const char *tok_end, *eq;
                size_t klen;
                int r;

                if (*p == ' ' || *p == '\t') {
                        p++;
                        continue;
                }
                tok_end = p;
                while (tok_end < end && *tok_end != ' ' && *tok_end != '\t')
                        tok_end++;
                eq = memchr(p, '=', (size_t) (tok_end - p));
                if (!eq)
                        return -EBADMSG;
                klen = (size_t) (eq - p);

#define KEY_IS(k) (klen == strlen(k) && memcmp(p, k, klen) == 0)
                if (KEY_IS("avg10")) {
                        r = parse_psi_avg(eq + 1, tok_end, &l.avg10);
                        seen |= 1u << 0;
                } else if (KEY_IS("avg60")) {
                        r = parse_psi_avg(eq + 1, tok_end, &l.avg60);
                        seen |= 1u << 1;
                } else if (KEY_IS("avg300")) {
                        r = parse_psi_avg(eq + 1, tok_end, &l.avg300);
                        seen |= 1u << 2;
                } else if (KEY_IS("total")) {
                        r = parse_u64_range(eq + 1, tok_end, &l.total_us);
                        seen |= 1u << 3;
                } else
                        r = 0; /* a field added by a newer kernel */
#undef KEY_IS
                if (r < 0)
                        return r;
                p = tok_end;
        }

        if (seen != 0xf)
                return -EBADMSG;
        *ret = l;
        return 0;
}

/*
 * psi_stats_parse - parse the contents of a PSI pressure file.
 * @text: "some avg10=... avg60=... avg300=... total=..." and optionally a
 *        "full ..." line; unknown fields on a line are ignored
 * @ret: the values; has_full tells whether the full line was there
 *
 * Returns 0, or -EBADMSG if the some line is missing, any line is
 * malformed or truncated, or a line appears twice.
 */
int psi_stats_parse(const char *text, PsiStats *ret) {
        PsiStats s = {};

        if (!text)
                return -EBADMSG;

        for (const char *rest = text, *p, *end; next_line(&rest, &p, &end);) {
                PsiLine *l;
                bool *has;
                int r;

                if (end - p >= 5 && memcmp(p, "some ", 5) == 0) {
                        l = &s.some;
                        has = &s.has_some;
                } else if (end - p >= 5 && memcmp(p, "full ", 5) == 0) {
                        l = &s.full;
                        has = &s.has_full;
                } else
                        return -EBADMSG;
                if (*has)
                        return -EBADMSG;

                r = psi_line_parse(p + 5, end, l);
                if (r < 0)
                        return r;
                *has = true;
        }

        if (!s.has_some)
                return -EBADMSG;
        *ret = s;
        return 0;
}

static const char *const memory_event_key_table[_MEMORY_EVENT_MAX] = {
        [MEMORY_EVENT_LOW] = "low",
        [MEMORY_EVENT_HIGH] = "high",
        [MEMORY_EVENT_MAX] = "max",
        [MEMORY_EVENT_OOM] = "oom",
        [MEMORY_EVENT_OOM_KILL] = "oom_kill",
        [MEMORY_EVENT_OOM_GROUP_KILL] = "oom_group_kill",
};

/* memory_event_key_to_string - the key as spelled in memory.events, or NULL. */
DEFINE_STRING_TABLE_TO_STRING(memory_event_key, MemoryEventKey)

/*
 * memory_events_parse - parse a memory.events (or memory.events.local) file.
 * @text: lines "KEY VALUE"
 * @ret: the counters; bit (1u << key) of present set for each key found
 *
 * Keys this version does not know are skipped. Returns 0, or -EBADMSG for
 * a malformed line, a value that does not fit in 64 bits or a known key
 * given twice.
 */
int memory_events_parse(const char *text, MemoryEvents *ret) {
        MemoryEvents e = {};

        if (!text)
                return -EBADMSG;

        for (const char *rest = text, *p, *end; next_line(&rest, &p, &end);) {
                const char *sp = memchr(p, ' ', (size_t) (end - p));
                uint64_t v;
                int r;

                if (!sp || sp == p)
                        return -EBADMSG;
                r = parse_u64_range(sp + 1, end, &v);
                if (r < 0)
                        return r;

                for (unsigned k = 0; k < _MEMORY_EVENT_MAX; k++) {
                        size_t klen = strlen(memory_event_key_table[k]);

                        if ((size_t) (sp - p) != klen || memcmp(p, memory_event_key_table[k], klen) != 0)
                                continue;
                        if (e.present & (1u << k))
                                return -EBADMSG;
                        e.value[k] = v;
                        e.present |= 1u << k;
                        break;
                }
        }

        *ret = e;
        return 0;
}

/*
 * parse_memory_value - parse memory.min, memory.low, memory.current and
 * the like.
 * @text: a decimal byte count or "max", optionally followed by one newline
 * @ret: the value, UINT64_MAX for "max"
 *
 * Returns 0 or -EBADMSG.
 */
int parse_memory_value(const char *text, uint64_t *ret) {
        size_t len;

        if (!text)
                return -EBADMSG;
        len = strlen(text);
        if (len > 0 && text[len - 1] == '\n')
                len--;
        if (len == 3 && memcmp(text, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        return parse_u64_range(text, text + len, ret);
}

/**
 * flat_keyed_value - look one key up in a flat-keyed file.
 * @text: lines "KEY VALUE", as in memory.oom_control or memory.stat
 * @key: the key to find; the first line with it counts
 * @ret: its value
 *
 * Other lines are not looked at, so a file with keys this version does not
 * know, or whose other values are not numbers, still answers. Returns 0,
 * -ENOENT if no line has @key, or -EBADMSG if its value is not a decimal
 * number that fits in 64 bits. @ret is untouched on failure.
 */
int flat_keyed_value(const char *text, const char *key, uint64_t *ret) {
        size_t klen;

        if (!text || !key)
                return -EBADMSG;
        klen = strlen(key);
        for (const char *rest = text, *p, *end; next_line(&rest, &p, &end);)
                if ((size_t) (end - p) > klen && memcmp(p, key, klen) == 0 && p[klen] == ' ')
                        return parse_u64_range(p + klen + 1, end, ret);
        return -ENOENT;
}

/*
 * Copy the mountinfo field [p, end) into a new string, decoding the octal
 * escapes the kernel uses for space, tab, newline and backslash (\040,
 * \011, \012, \134). Any other three-digit octal escape up to \377 is
 * decoded too; a backslash not followed by one is kept as is.
 */
static char *mountinfo_unescape(const char *p, const char *end) {
        char *s = malloc((size_t) (end - p) + 1), *o;

        if (!s)
                return NULL;
        o = s;
        while (p < end) {
                if (*p == '\\' && end - p >= 4 &&
                    p[1] >= '0' && p[1] <= '3' &&
                    p[2] >= '0' && p[2] <= '7' &&
                    p[3] >= '0' && p[3] <= '7') {
                        *o++ = (char) (((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
                        p += 4;
                } else
                        *o++ = *p++;
        }
        *o = 0;
        return s;
}

/* True if the comma-separated list [p, end) contains @word. */
static bool option_list_has(const char *p, const char *end, const char *word) {
        size_t wlen = strlen(word);

        while (p < end) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                const char *item_end = comma ?: end;

                if ((size_t) (item_end - p) == wlen && memcmp(p, word, wlen) == 0)
                        return true;
                p = comma ? comma + 1 : end;
        }
        return false;
}

typedef struct Field {
        const char *begin, *end;
} Field;

/* Split one line [p, end) at single spaces into up to @max fields; returns the count. */
static size_t split_fields(const char *p, const char *end, Field *fields, size_t max) {
        size_t n = 0;

        while (p < end && n < max) {
                const char *sp;

                while (p < end && *p == ' ')
                        p++;
                if (p >= end)
                        break;
                sp = memchr(p, ' ', (size_t) (end - p));
                fields[n].begin = p;
                fields[n].end = sp ?: end;
                n++;
                p = sp ?: end;
        }
        return n;
}

static bool field_is(const Field *f, const char *s) {
        size_t len = strlen(s);

        return (size_t) (f->end - f->begin) == len && memcmp(f->begin, s, len) == 0;
}

/*
 * mountinfo_parse - find the cgroup mounts in /proc/self/mountinfo text.
 * @text: mountinfo contents; lines are "ID PARENT MAJ:MIN ROOT MOUNTPOINT
 *        OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS" (proc(5))
 * @ret: the first cgroup2 mount and the first v1 mount carrying the memory
 *       controller whose root is "/", and whether the cgroup2 mount has
 *       memory_recursiveprot; fields are NULL if no such mount exists
 *
 * Malformed lines are skipped. Returns 0 or -ENOMEM; @ret is untouched on
 * failure.
 */
int mountinfo_parse(const char *text, CgroupMounts *ret) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;
        bool recursive_prot = false;

        if (!text)
                return -EBADMSG;

        for (const char *rest = text, *p, *end; (!v2 || !v1) && next_line(&rest, &p, &end);) {
                Field f[64];
                size_t n = split_fields(p, end, f, ELEMENTSOF(f)), sep;
                const Field *root, *mnt, *fstype, *super;
                bool is_v2, is_v1_memory;

                /* Locate the "-" that ends the optional fields; it follows the six fixed ones. */
                for (sep = 6; sep < n; sep++)
                        if (field_is(&f[sep], "-"))
                                break;
                if (sep >= n || sep + 2 >= n)
                        continue;

                root = &f[3];
                mnt = &f[4];
                fstype = &f[sep + 1];
                super = sep + 3 < n ? &f[sep + 3] : NULL;

                is_v2 = field_is(fstype, "cgroup2");
                is_v1_memory = field_is(fstype, "cgroup") && super &&
                               option_list_has(super->begin, super->end, "memory");
                if (!is_v2 && !is_v1_memory)
                        continue;
                if (!field_is(root, "/"))
                        continue;

                if (is_v2 && !v2) {
                        v2 = mountinfo_unescape(mnt->begin, mnt->end);
                        if (!v2)
                                return -ENOMEM;
                        recursive_prot = super &&
                                option_list_has(super->begin, super->end, "memory_recursiveprot");
                } else if (is_v1_memory && !v1) {
                        v1 = mountinfo_unescape(mnt->begin, mnt->end);
                        if (!v1)
                                return -ENOMEM;
                }
        }

        *ret = (CgroupMounts) {
                .v2_root = TAKE_PTR(v2),
                .v1_memory_root = TAKE_PTR(v1),
                .v2_recursive_prot = recursive_prot,
        };
        return 0;
}

/* True if the canonical cgroup path @root is @path or one of its ancestors. */
static bool cgroup_is_ancestor_or_self(const char *root, const char *path) {
        size_t n = strlen(root);

        if (streq(root, "/"))
                return true;
        return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/*
 * The root of mountinfo line [p, end) if it is a cgroup mount of the kind
 * asked for, canonical (cgroup_path_normalize()); NULL otherwise or when
 * out of memory (*@ret_oom set).
 */
static char *mountinfo_line_cgroup_root(const char *p, const char *end, bool v1_memory, bool *ret_oom) {
        _cleanup_free_ char *raw = NULL;
        char *root = NULL;
        Field f[64];
        size_t n = split_fields(p, end, f, ELEMENTSOF(f)), sep;
        const Field *fstype, *super;

        for (sep = 6; sep < n; sep++)
                if (field_is(&f[sep], "-"))
                        break;
        if (sep >= n || sep + 2 >= n)
                return NULL;
        fstype = &f[sep + 1];
        super = sep + 3 < n ? &f[sep + 3] : NULL;
        if (v1_memory ? !(field_is(fstype, "cgroup") && super && option_list_has(super->begin, super->end, "memory"))
                      : !field_is(fstype, "cgroup2"))
                return NULL;
        raw = mountinfo_unescape(f[3].begin, f[3].end);
        if (!raw) {
                *ret_oom = true;
                return NULL;
        }
        if (cgroup_path_normalize(raw, &root) == -ENOMEM)
                *ret_oom = true;
        return root;
}

int mountinfo_cgroup_ns_root(const char *text, bool v1_memory, const char *cgroup, char **ret) {
        _cleanup_free_ char *best = NULL;
        bool oom = false;

        if (!text || !cgroup)
                return -EBADMSG;
        for (const char *rest = text, *p, *end; next_line(&rest, &p, &end);) {
                _cleanup_free_ char *root = mountinfo_line_cgroup_root(p, end, v1_memory, &oom);

                if (oom)
                        return -ENOMEM;
                /* A mount inherited from the host shows "/": it says nothing. */
                if (!root || streq(root, "/") || !cgroup_is_ancestor_or_self(root, cgroup))
                        continue;
                if (!best || strlen(root) < strlen(best)) {
                        free(best);
                        best = TAKE_PTR(root);
                }
        }
        *ret = TAKE_PTR(best);
        return 0;
}

/* cgroup_mounts_done - free the strings of @m and reset it; NULL is fine. */
void cgroup_mounts_done(CgroupMounts *m) {
        if (!m)
                return;
        free(m->v2_root);
        free(m->v1_memory_root);
        *m = (CgroupMounts) {};
}

/*
 * proc_cgroup_parse - parse /proc/PID/cgroup.
 * @text: lines "HIERARCHY-ID:CONTROLLERS:PATH"
 * @ret_v2_path: optional; the path of the "0::" line, or NULL if none
 * @ret_v1_memory_path: optional; the path of the v1 line whose controller
 *                      list contains "memory", or NULL if none
 *
 * Returns 0, -EBADMSG for a malformed line or -ENOMEM. Outputs are
 * untouched on failure.
 */
int proc_cgroup_parse(const char *text, char **ret_v2_path, char **ret_v1_memory_path) {
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;

        if (!text)
                return -EBADMSG;

        for (const char *rest = text, *p, *end; next_line(&rest, &p, &end);) {
                const char *c1 = memchr(p, ':', (size_t) (end - p)), *c2;
                uint64_t id;
                char **target = NULL;
                int r;

                if (!c1)
                        return -EBADMSG;
                c2 = memchr(c1 + 1, ':', (size_t) (end - c1 - 1));
                if (!c2)
                        return -EBADMSG;
                r = parse_u64_range(p, c1, &id);
                if (r < 0)
                        return r;
                if (c2 + 1 >= end || c2[1] != '/')
                        return -EBADMSG;

                if (id == 0 && c2 == c1 + 1)
                        target = &v2;
                else if (id != 0 && option_list_has(c1 + 1, c2, "memory"))
                        target = &v1;
                if (!target || *target)
                        continue;

                *target = strndup(c2 + 1, (size_t) (end - c2 - 1));
                if (!*target)
                        return -ENOMEM;
        }

        if (ret_v2_path)
                *ret_v2_path = TAKE_PTR(v2);
        if (ret_v1_memory_path)
                *ret_v1_memory_path = TAKE_PTR(v1);
        return 0;
}

/* Read the whole of @fd (a small kernel file) and parse it with @parse. */
static int read_and_parse(int fd, int (*parse)(const char *text, void *ret), void *ret) {
        char text[KERNFILE_READ_MAX + 1];
        ssize_t k;

        k = read_small_fd(fd, text, sizeof(text));
        if (k < 0)
                return (int) k;
        return parse(text, ret);
}

static int psi_stats_parse_any(const char *text, void *ret) {
        return psi_stats_parse(text, ret);
}

static int memory_events_parse_any(const char *text, void *ret) {
        return memory_events_parse(text, ret);
}

int psi_stats_read(int fd, PsiStats *ret) {
        return read_and_parse(fd, psi_stats_parse_any, ret);
}

int memory_events_read(int fd, MemoryEvents *ret) {
        return read_and_parse(fd, memory_events_parse_any, ret);
}

/* The oom_kill line of the v1 cgroup @dfd: 1 and *@ret, 0 without one. */
static int v1_oom_kill(int dfd, uint64_t *ret) {
        char buf[256];

        if (read_small_at(dfd, "memory.oom_control", buf, sizeof(buf)) < 0)
                return 0;
        return flat_keyed_value(buf, "oom_kill", ret) >= 0;
}

static int v1_oom_enter(const char *parent _unused_, unsigned depth _unused_, const char *name,
                        void *userdata _unused_) {
        return name[0] != '.';
}

static int v1_oom_visit(int dfd, const char *path _unused_, unsigned depth _unused_, void *userdata) {
        uint64_t *sum = userdata, v;

        if (v1_oom_kill(dfd, &v) > 0)
                *sum += v;
        return 0;
}

int v1_oom_kills_subtree(int dirfd, uint64_t *ret) {
        uint64_t sum = 0;
        CgroupfsWalk w = {
                .max_depth = V1_OOM_DEPTH_MAX,
                .max_count = V1_OOM_SUBTREE_MAX,
                .enter = v1_oom_enter,
                .visit = v1_oom_visit,
                .userdata = &sum,
        };

        if (v1_oom_kill(dirfd, &(uint64_t) { 0 }) == 0)
                return 0;
        /* A cgroup removed meanwhile ends the walk: what was read of it is all there is. */
        if (cgroupfs_walk(dirfd, &w) == -ENOMEM)
                return -ENOMEM;
        *ret = sum;
        return 1;
}
