/* SPDX-License-Identifier: MIT */
/*
 * The pure part of pressurectl notify (see notify.h): the session cgroup,
 * the words of a notification and the per-episode rate limit. No I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "notify-text.h"
#include "util.h"

uint8_t notify_urgency(pressure_level level) {
        switch (level) {
        case PRESSURE_LEVEL_LOW:
                return NOTIFY_URGENCY_LOW;
        case PRESSURE_LEVEL_CRITICAL:
                return NOTIFY_URGENCY_CRITICAL;
        default:
                return NOTIFY_URGENCY_NORMAL;
        }
}

const char *notify_urgency_to_string(uint8_t urgency) {
        static const char *const names[] = { "low", "normal", "critical" };

        return urgency < ELEMENTSOF(names) ? names[urgency] : "normal";
}

/* The end of the user@UID.service component in @path (a pointer into it), or NULL. */
static const char *find_service_component(const char *path, size_t len, const char *want) {
        size_t wlen = strlen(want);

        for (size_t i = 0; i < len; i++) {
                if (path[i] != '/')
                        continue;
                if (i + 1 + wlen <= len && memcmp(path + i + 1, want, wlen) == 0 &&
                    (i + 1 + wlen == len || path[i + 1 + wlen] == '/'))
                        return path + i + 1 + wlen;
        }
        return NULL;
}

/* Whether the comma-separated @list of @len bytes holds @word. */
static bool controllers_have(const char *list, size_t len, const char *word) {
        size_t wlen = strlen(word);
        const char *p = list, *end = list + len;

        while (p < end) {
                const char *c = memchr(p, ',', (size_t) (end - p));
                size_t n = c ? (size_t) (c - p) : (size_t) (end - p);

                if (n == wlen && memcmp(p, word, n) == 0)
                        return true;
                p += n + 1;
        }
        return false;
}

/**
 * notify_session_cgroup - the user's service manager cgroup from /proc/self/cgroup
 * @text: the file's contents
 * @uid: whose user@UID.service
 * @ret: the path
 */
int notify_session_cgroup(const char *text, uid_t uid, char **ret) {
        char want[64];
        const char *found[2] = {}, *found_end[2] = {}; /* [0] cgroup2, [1] v1 memory */

        snprintf(want, sizeof(want), "user@%u.service", (unsigned) uid);
        for (const char *line = text; line && *line;) {
                const char *eol = strchr(line, '\n'), *c1, *c2, *end;
                size_t len = eol ? (size_t) (eol - line) : strlen(line);
                int side = -1;

                c1 = memchr(line, ':', len);
                c2 = c1 ? memchr(c1 + 1, ':', len - (size_t) (c1 + 1 - line)) : NULL;
                if (c2) {
                        if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
                                side = 0;
                        else if (controllers_have(c1 + 1, (size_t) (c2 - c1 - 1), "memory"))
                                side = 1;
                }
                if (side >= 0 && !found[side]) {
                        end = find_service_component(c2 + 1, len - (size_t) (c2 + 1 - line), want);
                        if (end) {
                                found[side] = c2 + 1;
                                found_end[side] = end;
                        }
                }
                line = eol ? eol + 1 : NULL;
        }
        for (int side = 0; side < 2; side++)
                if (found[side]) {
                        char *p = strndup(found[side], (size_t) (found_end[side] - found[side]));

                        if (!p)
                                return -ENOMEM;
                        *ret = p;
                        return 0;
                }
        return -ENOENT;
}

/**
 * notify_format_duration - a duration for people
 * @buf: where the text goes
 * @usec: the duration
 */
const char *notify_format_duration(char buf[static 32], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s == 0)
                snprintf(buf, 32, "less than a second");
        else if (s < 60)
                snprintf(buf, 32, "%" PRIu64 " s", s);
        else if (s < 3600)
                snprintf(buf, 32, "%" PRIu64 " min %" PRIu64 " s", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, 32, "%" PRIu64 " h %" PRIu64 " min", s / 3600, s % 3600 / 60);
        else
                snprintf(buf, 32, "%" PRIu64 " d %" PRIu64 " h", s / 86400, s % 86400 / 3600);
        return buf;
}

/**
 * notify_pick_children - the largest direct children of a cgroup
 * @snapshot: a snapshot of the subtree
 * @cgroup: the parent
 * @ret: filled with up to NOTIFY_CHILDREN children, largest first
 */
size_t notify_pick_children(const TopSnapshot *snapshot, const char *cgroup,
                            NotifyChild ret[static NOTIFY_CHILDREN]) {
        const TopCgroup *parent = top_snapshot_find(snapshot, cgroup);
        size_t n = 0, idx;

        if (!parent)
                return 0;
        idx = (size_t) (parent - snapshot->cgroups);
        for (size_t i = idx + 1; i < snapshot->n_cgroups; i++) {
                const TopCgroup *c = &snapshot->cgroups[i];
                size_t at;

                if (c->parent != idx || c->current == TOP_NONE || c->current == TOP_UNLIMITED)
                        continue;
                /* Insertion into the short sorted list; ties keep the snapshot's (name) order. */
                for (at = n; at > 0 && ret[at - 1].current < c->current; at--)
                        if (at < NOTIFY_CHILDREN)
                                ret[at] = ret[at - 1];
                if (at < NOTIFY_CHILDREN) {
                        ret[at] = (NotifyChild) { c->name, c->current };
                        if (n < NOTIFY_CHILDREN)
                                n++;
                }
        }
        return n;
}

/* "the whole system" for "/", else the path. */
static const char *cgroup_words(const char *cgroup) {
        return !cgroup || streq(cgroup, "/") ? "The whole system" : cgroup;
}

/**
 * notify_format - the words of a pressure notification
 * @text: what to say
 * @ret_summary: the summary line
 * @ret_body: the body
 */
int notify_format(const NotifyText *text, char **ret_summary, char **ret_body) {
        _cleanup_free_ char *summary = NULL, *body = NULL;
        size_t size = 0;
        char d[32];
        FILE *f;

        if (asprintf(&summary, "Memory pressure: %s", pressure_level_to_string(text->level) ?: "unknown") < 0) {
                summary = NULL;
                return -ENOMEM;
        }
        f = open_memstream(&body, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s, for %s", cgroup_words(text->cgroup), notify_format_duration(d, text->duration_us));
        for (size_t i = 0; i < text->n_children; i++) {
                char s[FORMAT_SIZE_MAX];

                fprintf(f, "%s%s %s", i == 0 ? "\nLargest: " : ", ", text->children[i].name,
                        format_size(s, text->children[i].current));
        }
        /* open_memstream() sets body at fclose(). */
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret_summary = TAKE_PTR(summary);
        *ret_body = TAKE_PTR(body);
        return 0;
}

/**
 * notify_format_cleared - the note shown when an episode is over
 * @cgroup: the cgroup
 * @duration_us: how long the episode lasted
 * @ret_summary: the summary line
 * @ret_body: the body
 */
int notify_format_cleared(const char *cgroup, uint64_t duration_us, char **ret_summary, char **ret_body) {
        _cleanup_free_ char *summary = strdup("Memory pressure cleared"), *body = NULL;
        char d[32];

        if (!summary)
                return -ENOMEM;
        if (asprintf(&body, "%s, after %s", cgroup_words(cgroup), notify_format_duration(d, duration_us)) < 0) {
                body = NULL;
                return -ENOMEM;
        }
        *ret_summary = TAKE_PTR(summary);
        *ret_body = TAKE_PTR(body);
        return 0;
}

/**
 * notify_escape_markup - a body for a server that reads markup
 * @s: the text
 */
char *notify_escape_markup(const char *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (const char *p = s; *p; p++)
                switch (*p) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                default:
                        fputc(*p, f);
                }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/**
 * notify_quote - a string quoted and escaped for one output line
 * @s: the string
 */
char *notify_quote(const char *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\x%02x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* ---- the rate limit ------------------------------------------------------------------- */

NotifyAction notify_episode_pressure(NotifyEpisode *e, pressure_level level, uint64_t event_us, uint64_t now_us,
                                     uint64_t min_interval_us) {
        if (!e->active) {
                *e = (NotifyEpisode) { .active = true, .start_us = event_us, .level = level };
                return NOTIFY_SHOW;
        }
        if (level > e->level)
                e->level = level;
        if (e->shown && e->level > e->shown_level)
                return NOTIFY_UPDATE;
        if (now_us >= e->last_try_us + min_interval_us)
                return e->shown ? NOTIFY_UPDATE : NOTIFY_SHOW;
        e->pending = true;
        return NOTIFY_DEFER;
}

uint64_t notify_episode_deadline(const NotifyEpisode *e, uint64_t min_interval_us) {
        if (!e->active || !e->pending)
                return UINT64_MAX;
        return e->last_try_us + min_interval_us;
}

NotifyAction notify_episode_due(const NotifyEpisode *e, uint64_t now_us, uint64_t min_interval_us) {
        if (now_us < notify_episode_deadline(e, min_interval_us))
                return NOTIFY_NOTHING;
        return e->shown ? NOTIFY_UPDATE : NOTIFY_SHOW;
}

void notify_episode_tried(NotifyEpisode *e, uint64_t now_us, bool ok) {
        e->last_try_us = now_us;
        e->pending = false;
        if (ok) {
                e->shown = true;
                e->shown_level = e->level;
        }
}

bool notify_episode_end(NotifyEpisode *e) {
        bool shown = e->active && e->shown;

        *e = (NotifyEpisode) {};
        return shown;
}

/* ---- kills ---------------------------------------------------------------------------- */

const char *notify_kill_name(const char *cgroup) {
        const char *slash = cgroup ? strrchr(cgroup, '/') : NULL;

        if (!cgroup || !*cgroup)
                return "/";
        /* A path that ends in "/" (the root) is named as a whole. */
        return slash && slash[1] ? slash + 1 : cgroup;
}

static void kill_clear(NotifyKill *x) {
        free(x->cgroup);
        free(x->by);
        free(x->reason);
        *x = (NotifyKill) {};
}

/* Merge the kill into the one of the same cgroup, killer and reason, or add it; counted beyond the names. */
static int kills_merge(NotifyKills *k, const char *cgroup, const char *by, const char *reason, uint64_t count) {
        NotifyKill *x;

        for (size_t i = 0; i < k->n_kills; i++) {
                x = &k->kills[i];
                if (streq(x->cgroup, cgroup) && streq(x->by, by) && streq(x->reason, reason)) {
                        x->count += count;
                        return 0;
                }
        }
        if (k->n_kills >= NOTIFY_KILL_NAMES) {
                k->more_events++;
                k->more_kills += count;
                return 0;
        }
        x = &k->kills[k->n_kills];
        *x = (NotifyKill) { strdup(cgroup), strdup(by), strdup(reason), count };
        if (!x->cgroup || !x->by || !x->reason) {
                kill_clear(x);
                return -ENOMEM;
        }
        k->n_kills++;
        return 0;
}

int notify_kills_add(NotifyKills *k, const char *cgroup, const char *by, const char *reason, uint64_t count,
                     uint64_t now_us, uint64_t min_interval_us) {
        int r = kills_merge(k, cgroup ?: "/", by ?: "unknown", reason ?: "unknown", count > 0 ? count : 1);

        if (r < 0)
                return r;
        return notify_kills_due(k, now_us, min_interval_us) == NOTIFY_SHOW ? NOTIFY_SHOW : NOTIFY_DEFER;
}

uint64_t notify_kills_deadline(const NotifyKills *k, uint64_t min_interval_us) {
        if (k->n_kills == 0)
                return UINT64_MAX;
        return k->last_try_us == 0 ? 0 : k->last_try_us + min_interval_us;
}

NotifyAction notify_kills_due(const NotifyKills *k, uint64_t now_us, uint64_t min_interval_us) {
        return now_us >= notify_kills_deadline(k, min_interval_us) ? NOTIFY_SHOW : NOTIFY_NOTHING;
}

void notify_kills_tried(NotifyKills *k, uint64_t now_us, bool ok) {
        if (ok)
                notify_kills_done(k);
        k->last_try_us = now_us;
}

void notify_kills_done(NotifyKills *k) {
        for (size_t i = 0; i < k->n_kills; i++)
                kill_clear(&k->kills[i]);
        *k = (NotifyKills) {};
}

/* Who killed and why, as one sentence about the killed cgroup ("it"). */
static void kill_sentence(FILE *f, const NotifyKill *x) {
        if (streq(x->by, "kernel") && streq(x->reason, "oom_kill")) {
                if (x->count == 1)
                        fputs("The kernel's OOM killer killed a process in it: out of memory.", f);
                else
                        fprintf(f, "The kernel's OOM killer killed %" PRIu64 " processes in it: out of memory.",
                                x->count);
                return;
        }
        if (streq(x->by, "systemd-oomd") && streq(x->reason, "memory-pressure"))
                fputs("systemd-oomd killed it: its memory pressure stayed over the limit", f);
        else if (streq(x->by, "systemd-oomd") && streq(x->reason, "memory-used"))
                fputs("systemd-oomd killed it: too much memory and swap in use", f);
        else
                fprintf(f, "%s killed it (%s)", x->by, x->reason);
        if (x->count > 1)
                fprintf(f, ", %" PRIu64 " times", x->count);
        fputs(".", f);
}

/* The body of several kills: one line each, "NAME, by KILLER (REASON[, N kills])", then the rest counted. */
static void kills_lines(FILE *f, const NotifyKills *k) {
        for (size_t i = 0; i < k->n_kills; i++) {
                const NotifyKill *x = &k->kills[i];

                fprintf(f, "%s%s, by %s (%s", i > 0 ? "\n" : "", notify_kill_name(x->cgroup), x->by, x->reason);
                if (x->count > 1)
                        fprintf(f, ", %" PRIu64 " kills", x->count);
                fputs(")", f);
        }
        if (k->more_events > 0)
                fprintf(f, "\nand %" PRIu64 " more", k->more_kills);
}

int notify_format_prekill(const char *cgroup, const char *by, char **ret_summary, char **ret_body) {
        _cleanup_free_ char *summary = NULL, *body = NULL;

        cgroup = cgroup ?: "/";
        by = by ?: "unknown";
        if (asprintf(&summary, "%s will be killed by %s", notify_kill_name(cgroup), by) < 0) {
                summary = NULL;
                return -ENOMEM;
        }
        if (asprintf(&body, "%s is about to kill it to free memory: save your work in it now.\n%s", by, cgroup) < 0) {
                body = NULL;
                return -ENOMEM;
        }
        *ret_summary = TAKE_PTR(summary);
        *ret_body = TAKE_PTR(body);
        return 0;
}

int notify_format_kills(const NotifyKills *k, char **ret_summary, char **ret_body) {
        _cleanup_free_ char *summary = NULL, *body = NULL;
        uint64_t total = k->more_kills;
        size_t size = 0;
        FILE *f;
        int r;

        for (size_t i = 0; i < k->n_kills; i++)
                total += k->kills[i].count;
        if (k->n_kills == 1 && k->more_events == 0)
                r = asprintf(&summary, "%s was killed", notify_kill_name(k->kills[0].cgroup));
        else
                r = asprintf(&summary, "%" PRIu64 " kills for lack of memory", total);
        if (r < 0) {
                summary = NULL;
                return -ENOMEM;
        }
        f = open_memstream(&body, &size);
        if (!f)
                return -ENOMEM;
        if (k->n_kills == 1 && k->more_events == 0) {
                kill_sentence(f, &k->kills[0]);
                fprintf(f, "\n%s", k->kills[0].cgroup);
        } else
                kills_lines(f, k);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret_summary = TAKE_PTR(summary);
        *ret_body = TAKE_PTR(body);
        return 0;
}
