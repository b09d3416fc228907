/* SPDX-License-Identifier: MIT */
/*
 * pressurectl top: a live view of memory pressure across cgroups. It reads
 * the cgroup files itself (top-cgroup.c) and asks the daemon only for
 * GetStatus() (counters, episodes, the reclaim controller's cgroups) and,
 * while the protection columns are shown, GetProtection()
 * of the subtree shown: one short connection each per refresh, and nothing
 * at all when top is not running. Besides, it holds one subscription to
 * the kills of the whole system for as long as it runs, read at each
 * refresh: a cgroup killed in the last minute is marked (top-kills.c).
 *
 * The screen is drawn with ncurses (libncursesw): it reads terminfo for
 * whatever terminal it runs on, redraws only what changed, and gives back
 * the terminal's modes with endwin() on every exit path; a hand-written
 * ANSI renderer would have to redo all of that. Batch mode (--batch,
 * --json) does not touch the terminal at all.
 */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "duration.h"
#include "error-text.h"
#include "pressure.h"
#include "top.h"
#include "top-cgroup.h"
#include "top-kills.h"
#include "util.h"
#include "vocabulary.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX_WIDTH 1024 /* longest line drawn or printed (the name column is cut to fit) */
#define HEADER_LINES 5 /* above the column header: title, memory PSI, cpu and io PSI, daemon, cgroups */


typedef enum SortKey {
        SORT_SOME,
        SORT_FULL,
        SORT_CURRENT,
        SORT_EVENTS,
        SORT_PATH,
        SORT_EPISODE,
        SORT_CPU,
        SORT_IO,
        SORT_RECLAIM,
        _SORT_MAX,
} SortKey;

static const char *const sort_names[_SORT_MAX] = {
        [SORT_SOME] = "some",
        [SORT_FULL] = "full",
        [SORT_CURRENT] = "current",
        [SORT_EVENTS] = "events",
        [SORT_PATH] = "path",
        [SORT_EPISODE] = "episode",
        [SORT_CPU] = "cpu",
        [SORT_IO] = "io",
        [SORT_RECLAIM] = "reclaim",
};

/* The columns after the name, in the order shown. */
typedef enum TopColumn {
        COL_V,
        COL_USAGE,
        COL_HIGH,
        COL_MAX,
        COL_EMIN,
        COL_ELOW,
        COL_SOME,
        COL_FULL,
        COL_CPU,
        COL_IO,
        COL_EPISODE,
        COL_EV_HIGH,
        COL_EV_MAX,
        COL_EV_OOMK,
        COL_RECLAIM,
        COL_KILLED,
        _COL_MAX,
} TopColumn;

/* Each column is a space and its cells, right-aligned in its width. */
static const struct {
        const char *title;
        int width;
} columns[_COL_MAX] = {
        [COL_V] = { "V", 1 },           [COL_USAGE] = { "USAGE", 5 },   [COL_HIGH] = { "HIGH", 5 },
        [COL_MAX] = { "MAX", 5 },       [COL_EMIN] = { "EMIN", 5 },     [COL_ELOW] = { "ELOW", 5 },
        [COL_SOME] = { "SOME", 5 },     [COL_FULL] = { "FULL", 5 },     [COL_CPU] = { "CPU", 5 },
        [COL_IO] = { "IO", 5 },         [COL_EPISODE] = { "EPISODE", 7 }, [COL_EV_HIGH] = { "+HIGH", 5 },
        [COL_EV_MAX] = { "+MAX", 5 },   [COL_EV_OOMK] = { "+OOMK", 5 }, [COL_RECLAIM] = { "RECLAIM", 7 },
        [COL_KILLED] = { "KILLED", 7 },
};

/*
 * On a narrow screen, once the names are down to NAME_MIN columns, these give way, least useful
 * first; the column of the sort key never does.
 */
static const TopColumn give_way[] = {
        COL_EV_HIGH, COL_EV_MAX, COL_HIGH, COL_MAX, COL_EPISODE, COL_EV_OOMK, COL_ELOW, COL_EMIN,
        COL_V, COL_FULL, COL_USAGE, COL_SOME,
};

/* The names keep this many columns before a column gives way; an optional one needs NAME_ROOM_OPTIONAL. */
#define NAME_MIN 8
#define NAME_ROOM_OPTIONAL 16

typedef struct TopDaemon {
        bool reachable;
        char error[512];      /* why not reachable, or the daemon's error */
        char version[32];
        uint64_t clients, subscriptions, registrations;
        uint64_t episodes;    /* registrations with an active pressure episode, shown or not */
        uint64_t reclaim_cgroups; /* cgroups under proactive reclaim, shown or not */
        uint64_t events_read, events_delivered, at_usec;
        bool have_rates;
        double read_rate, delivered_rate;
        char protection_error[512]; /* GetProtection failed: why; empty if fine or not asked */
} TopDaemon;

typedef struct Top {
        /* options */
        const char *socket;
        bool user, json, batch;
        uint64_t iterations; /* 0 = until stopped */
        uint64_t delay_usec;
        char *subtree;
        TopRoots roots;

        /* view */
        SortKey sort;
        bool flat;
        bool show_protection;
        const char *ellipsis; /* where a name is cut: "…" in a UTF-8 locale, else "~" (one column either way) */
        bool shown[_COL_MAX]; /* the columns of the table drawn or printed (columns_batch(), columns_screen()) */
        int indent;          /* columns of indentation per tree level: 2, or 1 on a narrow screen */
        char filter[128];

        /* data */
        pressure_client *client;
        TopSnapshot snap;
        bool v2_memory;      /* a cgroup of the snapshot has cgroup2's memory controller: protection exists */
        TopSystem sys;
        TopDaemon daemon;
        int snapshot_error;  /* negative errno of the last top_snapshot_read() */
        uint64_t refreshes;
        uint64_t time_usec;  /* CLOCK_REALTIME of the last refresh */
        uint64_t mono_usec;  /* CLOCK_MONOTONIC of the last refresh */

        /* the kills subscription (whole system) and the kills of the last minute */
        TopKills *kills;
        size_t kills_marked;     /* cgroups shown that the last refresh marked */
        bool kills_confirmed;    /* the daemon answered the subscription */
        char kill_sources[64];   /* the killers it named, "kernel, systemd-oomd" */
        char kills_error[256];   /* why the subscription ended; empty while it goes on */

        /* the rows shown, in order */
        size_t *rows;
        size_t n_rows;
        size_t scroll;
} Top;

static void top_done(Top *t) {
        if (t->kills)
                top_kills_done(t->kills);
        free(t->kills);
        top_snapshot_done(&t->snap);
        top_roots_done(&t->roots);
        pressure_client_free(t->client);
        free(t->subtree);
        free(t->rows);
}

/* ---- formatting ------------------------------------------------------------------ */

/* "1.2G", "512M", "max", "-": at most 6 characters. */
static const char *fmt_size(char buf[static FORMAT_SIZE_MAX], uint64_t v) {
        if (v == TOP_NONE)
                return "-";
        if (v == TOP_UNLIMITED)
                return "max";
        if (v == 0)
                return "0";
        return format_size(buf, v);
}

/*
 * A PSI average kept in hundredths (as the kernel prints it) as the percent
 * shown: the same double strtod() reads from the kernel's text.
 */
static double psi_percent(uint32_t hundredths) {
        return hundredths / 100.0;
}

static const char *fmt_psi(char buf[static 16], bool present, double v) {
        if (!present)
                return "-";
        snprintf(buf, 16, v >= 99.995 ? "%.1f" : "%.2f", v);
        return buf;
}

static const char *fmt_count(char buf[static 16], uint64_t v) {
        if (v == TOP_NONE)
                return "-";
        /* At most 5 characters: 99999, 999k, 999M, then G. */
        if (v >= UINT64_C(1000000000))
                snprintf(buf, 16, "%uG", (unsigned) MIN(v / UINT64_C(1000000000), 9999));
        else if (v >= 1000000)
                snprintf(buf, 16, "%uM", (unsigned) (v / 1000000));
        else if (v >= 100000)
                snprintf(buf, 16, "%uk", (unsigned) (v / 1000));
        else
                snprintf(buf, 16, "%u", (unsigned) v);
        return buf;
}

/* How long an episode has lasted: "12s", "3m04s", "2h05m", "3d04h", "120d": at most 7 characters. */
static const char *fmt_duration(char buf[static 16], const TopCgroup *cg) {
        uint64_t s;

        if (cg->ep_since_us == TOP_NONE)
                return "-";
        s = cg->ep_duration_us / USEC_PER_SEC;
        if (s < 60)
                snprintf(buf, 16, "%us", (unsigned) s);
        else if (s < 3600)
                snprintf(buf, 16, "%um%02us", (unsigned) (s / 60), (unsigned) (s % 60));
        else if (s < 86400)
                snprintf(buf, 16, "%uh%02um", (unsigned) (s / 3600), (unsigned) (s / 60 % 60));
        else if (s < 100 * 86400)
                snprintf(buf, 16, "%ud%02uh", (unsigned) (s / 86400), (unsigned) (s / 3600 % 24));
        else
                snprintf(buf, 16, "%ud", (unsigned) MIN(s / 86400, 999999));
        return buf;
}

static uint64_t events_sum(const TopCgroup *cg) {
        uint64_t sum = 0;

        for (unsigned k = 0; k < _TOP_EV_MAX; k++) {
                uint64_t d = top_event_delta(cg, k);
                if (d != TOP_NONE)
                        sum += d;
        }
        return sum;
}

/* Width of the columns shown after the name, each with the space before it. */
static int fixed_width(const Top *t) {
        int w = 0;

        for (TopColumn c = 0; c < _COL_MAX; c++)
                if (t->shown[c])
                        w += 1 + columns[c].width;
        return w;
}

/* The KILLED cell: how long ago the latest kill of the last minute was, "12s"; "-" for none. */
static const char *fmt_killed(char buf[static 16], const Top *t, const TopCgroup *cg) {
        if (cg->kill_at_us == TOP_NONE)
                return "-";
        snprintf(buf, 16, "%us", (unsigned) ((t->mono_usec > cg->kill_at_us ? t->mono_usec - cg->kill_at_us : 0) /
                                             USEC_PER_SEC));
        return buf;
}

/* The RECLAIM cell: memory reclaimed from the cgroup so far; n/a where the kernel cannot, - where
 * the controller does not hold the cgroup. */
static const char *fmt_reclaim(char buf[static FORMAT_SIZE_MAX], const TopCgroup *cg) {
        if (!cg->has_reclaim)
                return "-";
        if (streq(cg->rc_state, "unsupported"))
                return "n/a";
        return fmt_size(buf, cg->rc_reclaimed);
}

/* The characters of the UTF-8 text @s up to byte @bytes: every byte but continuation bytes. */
static int utf8_chars(const char *s, size_t bytes) {
        int n = 0;

        for (size_t i = 0; i < bytes && s[i]; i++)
                n += ((unsigned char) s[i] & 0xC0) != 0x80;
        return n;
}

/* The byte where character @k of the UTF-8 text @s begins (its end if it has fewer). */
static size_t utf8_offset(const char *s, int k) {
        size_t i = 0;

        for (; s[i]; i++)
                if (((unsigned char) s[i] & 0xC0) != 0x80 && k-- == 0)
                        break;
        return i;
}

/* The indentation and name of a row as shown. */
static void row_name(const Top *t, const TopCgroup *cg, int *ret_indent, const char **ret_name) {
        if (t->flat) {
                *ret_indent = 0;
                *ret_name = cg->path;
        } else {
                *ret_indent = t->indent * (int) cg->depth;
                *ret_name = cg->name;
        }
}

/* The name column's width: as wide as the widest name, at most @avail (< 0: no limit). */
static int name_width(const Top *t, int avail) {
        int w = (int) strlen("CGROUP");

        for (size_t i = 0; i < t->n_rows; i++) {
                const TopCgroup *cg = &t->snap.cgroups[t->rows[i]];
                const char *name;
                int indent;

                row_name(t, cg, &indent, &name);
                w = MAX(w, indent + utf8_chars(name, SIZE_MAX));
        }
        if (avail >= 0 && w > avail)
                w = MAX(avail, 6);
        return MIN(w, MAX_WIDTH / 2);
}

static void format_column_header(const Top *t, char *buf, size_t size, int nw) {
        int n = snprintf(buf, size, "%-*s", nw, "CGROUP");

        for (TopColumn c = 0; c < _COL_MAX; c++)
                if (t->shown[c] && n >= 0 && (size_t) n < size)
                        n += snprintf(buf + n, size - (size_t) n, " %*s", columns[c].width, columns[c].title);
}

/* The cell of column @c in the row of @cg, in @buf or a constant. */
static const char *format_cell(const Top *t, const TopCgroup *cg, TopColumn c, char buf[static 16]) {
        switch (c) {
        case COL_V:
                return cg->current == TOP_NONE ? "" : cg->mem_v1 ? "1" : "2";
        case COL_USAGE:
                return fmt_size(buf, cg->current);
        case COL_HIGH:
                return fmt_size(buf, cg->high);
        case COL_MAX:
                return fmt_size(buf, cg->max);
        case COL_EMIN:
                return fmt_size(buf, cg->emin);
        case COL_ELOW:
                return fmt_size(buf, cg->elow);
        case COL_SOME:
                return fmt_psi(buf, cg->has_psi, psi_percent(cg->some_avg10));
        case COL_FULL:
                return fmt_psi(buf, cg->has_psi, psi_percent(cg->full_avg10));
        /* "some" avg10 of cpu.pressure and io.pressure. */
        case COL_CPU:
                return fmt_psi(buf, cg->has_cpu_psi, psi_percent(cg->cpu_some_avg10));
        case COL_IO:
                return fmt_psi(buf, cg->has_io_psi, psi_percent(cg->io_some_avg10));
        case COL_EPISODE:
                return fmt_duration(buf, cg);
        case COL_EV_HIGH:
                return fmt_count(buf, top_event_delta(cg, TOP_EV_HIGH));
        case COL_EV_MAX:
                return fmt_count(buf, top_event_delta(cg, TOP_EV_MAX));
        case COL_EV_OOMK:
                return fmt_count(buf, top_event_delta(cg, TOP_EV_OOM_KILL));
        case COL_RECLAIM:
                return fmt_reclaim(buf, cg);
        case COL_KILLED:
                return fmt_killed(buf, t, cg);
        default:
                return "";
        }
}

/*
 * @name in @width columns at @buf, padded: where it is longer, cut in the middle, a third of the
 * room for its start and the rest for its end with t->ellipsis between, so that a parent and its
 * child (in the flat view, the child's path is the parent's and more) never show the same text.
 * Returns the bytes written (snprintf's way).
 */
static int format_name(const Top *t, char *buf, size_t size, const char *name, int width) {
        int chars = utf8_chars(name, SIZE_MAX), head, tail;

        if (chars <= width || width < 3)
                return snprintf(buf, size, "%.*s%*s", (int) utf8_offset(name, MIN(chars, width)), name,
                                width - MIN(chars, width), "");
        head = (width - 1) / 3;
        tail = width - 1 - head;
        return snprintf(buf, size, "%.*s%s%s", (int) utf8_offset(name, head), name, t->ellipsis,
                        name + utf8_offset(name, chars - tail));
}

static void format_row(const Top *t, const TopCgroup *cg, char *buf, size_t size, int nw) {
        const char *name;
        int indent, n;

        row_name(t, cg, &indent, &name);
        n = snprintf(buf, size, "%*s", indent, "");
        if (n >= 0 && (size_t) n < size)
                n += format_name(t, buf + n, size - (size_t) n, name, MAX(nw - indent, 0));
        for (TopColumn c = 0; c < _COL_MAX; c++) {
                char cell[16];

                if (t->shown[c] && n >= 0 && (size_t) n < size)
                        n += snprintf(buf + n, size - (size_t) n, " %*s", columns[c].width, format_cell(t, cg, c, cell));
        }
}

/*
 * Whether the protection columns are shown and GetProtection is asked: asked for (p,
 * --no-protection), and where there is protection to show, cgroup2's memory controller (a
 * hybrid host's memory controller is v1's, which has no effective protection).
 */
static bool protection_shown(const Top *t) {
        return t->show_protection && t->v2_memory;
}

/* Whether column @c shows the sort key (the three counters for "events"). */
static bool column_sorts(const Top *t, TopColumn c) {
        static const TopColumn of[_SORT_MAX] = {
                [SORT_SOME] = COL_SOME, [SORT_FULL] = COL_FULL, [SORT_CURRENT] = COL_USAGE,
                [SORT_PATH] = _COL_MAX, [SORT_EPISODE] = COL_EPISODE, [SORT_CPU] = COL_CPU,
                [SORT_IO] = COL_IO, [SORT_RECLAIM] = COL_RECLAIM,
        };

        if (t->sort == SORT_EVENTS)
                return c == COL_EV_HIGH || c == COL_EV_MAX || c == COL_EV_OOMK;
        return of[t->sort] == c;
}

/*
 * Whether column @c has something to show: EMIN and ELOW while the protection columns are on,
 * RECLAIM while the daemon reclaims from any cgroup, KILLED while a cgroup shown was killed in
 * the last minute; the others always. The column of the sort key always shows.
 */
static bool column_applies(const Top *t, TopColumn c) {
        if (column_sorts(t, c))
                return true;
        switch (c) {
        case COL_EMIN:
        case COL_ELOW:
                return protection_shown(t);
        case COL_RECLAIM:
                return t->daemon.reclaim_cgroups > 0;
        case COL_KILLED:
                return t->kills_marked > 0;
        default:
                return true;
        }
}

/* Batch output: every column that applies. */
static void columns_batch(Top *t) {
        for (TopColumn c = 0; c < _COL_MAX; c++)
                t->shown[c] = column_applies(t, c);
}

/*
 * A screen of @cols columns: KILLED, RECLAIM, then CPU and IO only where they leave the names
 * NAME_ROOM_OPTIONAL columns; then, while the names would have fewer than NAME_MIN, the others
 * give way in the order of give_way[]. The sort key's column stays whatever the width.
 */
static void columns_screen(Top *t, int cols) {
        static const TopColumn optional[][2] = {
                { COL_KILLED, COL_KILLED }, { COL_RECLAIM, COL_RECLAIM }, { COL_CPU, COL_IO },
        };

        columns_batch(t);
        for (size_t i = 0; i < ELEMENTSOF(optional); i++)
                for (size_t k = 0; k < 2; k++)
                        t->shown[optional[i][k]] = column_sorts(t, optional[i][k]);
        for (size_t i = 0; i < ELEMENTSOF(optional); i++) {
                bool saved[2] = { t->shown[optional[i][0]], t->shown[optional[i][1]] };

                for (size_t k = 0; k < 2; k++)
                        t->shown[optional[i][k]] |= column_applies(t, optional[i][k]);
                if (cols - fixed_width(t) - 1 < NAME_ROOM_OPTIONAL)
                        for (size_t k = 0; k < 2; k++)
                                t->shown[optional[i][k]] = saved[k];
        }
        for (size_t i = 0; i < ELEMENTSOF(give_way) && cols - fixed_width(t) - 1 < NAME_MIN; i++)
                if (!column_sorts(t, give_way[i]))
                        t->shown[give_way[i]] = false;
}

/* The system's cpu and io "some" avg10 (/proc/pressure/cpu, io). */
static void format_header_cpu_io(const Top *t, char line[static MAX_WIDTH]) {
        char b[2][16];

        snprintf(line, MAX_WIDTH, "cpu PSI     some avg10 %s  io PSI  some avg10 %s",
                 t->sys.has_cpu_psi ? fmt_psi(b[0], true, psi_percent(t->sys.cpu_some_avg10)) : "-",
                 t->sys.has_io_psi ? fmt_psi(b[1], true, psi_percent(t->sys.io_some_avg10)) : "-");
}

/*
 * Append @sep and @clause to the line @buf if they fit in @width columns with room for the
 * ellipsis after them, else @sep and @brief if given and they fit; else mark @buf as cut
 * (*@cut). Once a clause is left out, every later one is, so that none shows without the ones
 * before it.
 */
static void add_clause(char *buf, int width, const char *sep, const char *clause, const char *brief, bool *cut) {
        size_t len = strlen(buf);
        int room = width - 2 - utf8_chars(buf, SIZE_MAX) - utf8_chars(sep, SIZE_MAX);

        if (*cut)
                return;
        if (utf8_chars(clause, SIZE_MAX) > room)
                clause = brief && utf8_chars(brief, SIZE_MAX) <= room ? brief : NULL;
        if (clause)
                snprintf(buf + len, MAX_WIDTH - len, "%s%s", sep, clause);
        else
                *cut = true;
}

/*
 * The daemon's line in @width columns: whole where it fits; else whole clauses only, an error
 * of the daemon said in a word where its sentence does not fit, and the ellipsis where clauses
 * were left out. Never a sentence cut in the middle.
 */
static void format_daemon_line(const Top *t, char line[static MAX_WIDTH], int width) {
        const TopDaemon *d = &t->daemon;
        char part[3][MAX_WIDTH];
        bool cut = false;

        if (!d->reachable) {
                snprintf(line, MAX_WIDTH, "daemon down");
                add_clause(line, width, ": ", d->error, NULL, &cut);
                if (protection_shown(t))
                        add_clause(line, width, " ", "(protection columns empty)", NULL, &cut);
        } else {
                snprintf(line, MAX_WIDTH, "daemon %s: %" PRIu64 " client%s", d->version, d->clients,
                         d->clients == 1 ? "" : "s");
                snprintf(part[0], sizeof(part[0]), "%" PRIu64 " registration%s", d->registrations,
                         d->registrations == 1 ? "" : "s");
                add_clause(line, width, ", ", part[0], NULL, &cut);
                snprintf(part[0], sizeof(part[0]), "%" PRIu64 " active episode%s", d->episodes,
                         d->episodes == 1 ? "" : "s");
                add_clause(line, width, ", ", part[0], NULL, &cut);
                if (d->have_rates)
                        snprintf(part[0], sizeof(part[0]), "events %.1f/s read, %.1f/s delivered", d->read_rate,
                                 d->delivered_rate);
                else
                        snprintf(part[0], sizeof(part[0]), "events -/s read, -/s delivered");
                add_clause(line, width, ", ", part[0], NULL, &cut);
                snprintf(part[1], sizeof(part[1]), "protection: %s", d->protection_error);
                if (d->protection_error[0])
                        add_clause(line, width, "; ", part[1], "protection: unavailable", &cut);
                snprintf(part[2], sizeof(part[2]), "kills: %s", t->kills_error);
                if (t->kills_error[0])
                        add_clause(line, width, "; ", part[2], "kills: unavailable", &cut);
        }
        if (cut)
                snprintf(line + strlen(line), MAX_WIDTH - strlen(line), " %s", t->ellipsis);
}

/* The header lines above the table; the daemon's in @width columns. */
static void format_header(const Top *t, char lines[HEADER_LINES][MAX_WIDTH], int width) {
        char b[2][16], tb[32], delay[32];
        struct tm tm;
        time_t now = (time_t) (t->time_usec / USEC_PER_SEC);

        if (!localtime_r(&now, &tm) || strftime(tb, sizeof(tb), "%H:%M:%S", &tm) == 0)
                snprintf(tb, sizeof(tb), "-");
        snprintf(delay, sizeof(delay), "%g", (double) t->delay_usec / 1e6);
        snprintf(lines[0], MAX_WIDTH, "pressurectl top  %s  every %ss  sort: %s  view: %s  filter: %s  %zu of %zu cgroups",
                 tb, delay, sort_names[t->sort], t->flat ? "flat" : "tree", t->filter[0] ? t->filter : "-",
                 t->n_rows, t->snap.n_cgroups);

        if (t->sys.has_psi)
                snprintf(lines[1], MAX_WIDTH,
                         "memory PSI  some avg10 %.2f avg60 %.2f  full avg10 %.2f avg60 %.2f  MemAvailable %s of %s",
                         psi_percent(t->sys.some_avg10), psi_percent(t->sys.some_avg60),
                         psi_percent(t->sys.full_avg10), psi_percent(t->sys.full_avg60),
                         fmt_size(b[0], t->sys.mem_available), fmt_size(b[1], t->sys.mem_total));
        else
                snprintf(lines[1], MAX_WIDTH, "memory PSI  not available  MemAvailable %s of %s",
                         fmt_size(b[0], t->sys.mem_available), fmt_size(b[1], t->sys.mem_total));
        format_header_cpu_io(t, lines[2]);

        format_daemon_line(t, lines[3], width);

        if (t->snapshot_error < 0)
                snprintf(lines[4], MAX_WIDTH, "cgroups: cannot read %s: %s", t->subtree, strerror(-t->snapshot_error));
        else
                snprintf(lines[4], MAX_WIDTH, "cgroups: v2 %s  v1 memory %s", t->roots.v2 ?: "-",
                         t->roots.v1_memory ?: "-");
}

/* ---- rows: filter, sort, tree -------------------------------------------------------- */

static double sort_value(const Top *t, const TopCgroup *cg) {
        switch (t->sort) {
        case SORT_SOME:
                return cg->has_psi ? cg->some_avg10 : -1.0;
        case SORT_FULL:
                return cg->has_psi ? cg->full_avg10 : -1.0;
        case SORT_CURRENT:
                return cg->current < TOP_UNLIMITED ? (double) cg->current : -1;
        case SORT_EVENTS:
                return (double) events_sum(cg);
        case SORT_EPISODE:
                return cg->ep_since_us != TOP_NONE ? (double) cg->ep_duration_us : -1;
        case SORT_CPU:
                return cg->has_cpu_psi ? cg->cpu_some_avg10 : -1.0;
        case SORT_IO:
                return cg->has_io_psi ? cg->io_some_avg10 : -1.0;
        case SORT_RECLAIM:
                return cg->has_reclaim ? (double) cg->rc_reclaimed : -1.0;
        default:
                return 0;
        }
}

static int row_compare(const void *a, const void *b, void *userdata) {
        const Top *t = userdata;
        const TopCgroup *x = &t->snap.cgroups[*(const size_t *) a], *y = &t->snap.cgroups[*(const size_t *) b];

        if (!t->flat && x->parent != y->parent)
                return x->parent < y->parent ? -1 : 1;
        if (t->sort != SORT_PATH) {
                double vx = sort_value(t, x), vy = sort_value(t, y);

                if (vx != vy)
                        return vx > vy ? -1 : 1;
        }
        return strcmp(x->path, y->path);
}

static bool matches(const Top *t, const TopCgroup *cg) {
        return !t->filter[0] || strstr(cg->path, t->filter);
}

/* Append @i and its shown descendants in sorted order; @first/@count index the sorted children. */
static void add_subtree(Top *t, size_t i, const size_t *sorted, const size_t *first, const size_t *count,
                        const bool *keep) {
        if (!keep[i])
                return;
        t->rows[t->n_rows++] = i;
        for (size_t k = first[i]; k < first[i] + count[i]; k++)
                add_subtree(t, sorted[k], sorted, first, count, keep);
}

/* Recompute t->rows from the snapshot, the filter, the sort key and the view. */
static int build_rows(Top *t) {
        size_t n = t->snap.n_cgroups;
        _cleanup_free_ size_t *sorted = NULL, *first = NULL, *count = NULL;
        _cleanup_free_ bool *keep = NULL;
        size_t *rows;

        t->n_rows = 0;
        rows = reallocarray(t->rows, n ? n : 1, sizeof(size_t));
        if (!rows)
                return -ENOMEM;
        t->rows = rows;
        if (n == 0)
                return 0;

        if (t->flat) {
                for (size_t i = 0; i < n; i++)
                        if (matches(t, &t->snap.cgroups[i]))
                                t->rows[t->n_rows++] = i;
                qsort_r(t->rows, t->n_rows, sizeof(size_t), row_compare, t);
                return 0;
        }

        /* Tree: a cgroup is shown if it or a descendant matches; siblings sorted by the key. */
        sorted = calloc(n, sizeof(size_t));
        first = calloc(n, sizeof(size_t));
        count = calloc(n, sizeof(size_t));
        keep = calloc(n, sizeof(bool));
        if (!sorted || !first || !count || !keep)
                return -ENOMEM;
        for (size_t i = n; i-- > 0;) {
                const TopCgroup *cg = &t->snap.cgroups[i];

                keep[i] = keep[i] || matches(t, cg);
                if (keep[i] && cg->parent != SIZE_MAX)
                        keep[cg->parent] = true;
        }
        for (size_t i = 1; i < n; i++)
                sorted[i - 1] = i;
        qsort_r(sorted, n - 1, sizeof(size_t), row_compare, t);
        for (size_t k = 0; k < n - 1; k++) {
                size_t p = t->snap.cgroups[sorted[k]].parent;

                if (count[p]++ == 0)
                        first[p] = k;
        }
        add_subtree(t, 0, sorted, first, count, keep);
        return 0;
}

/* ---- refresh --------------------------------------------------------------------------- */

/* Why the call failed with @r, in the words of error-text.h: the sentence, which --json shows as is. */
static void daemon_error(pressure_client *c, int r, const pressure_error *error, char *buf, size_t size) {
        int exit_code;
        json_t *o = error_describe("top", pressure_client_get_socket(c), r, pressure_error_get_name(error),
                                   pressure_error_get_parameters(error), &exit_code);

        snprintf(buf, size, "%s", o ? json_string_value(json_object_get(o, "message")) : strerror(-r));
        json_decref(o);
}

/* The source names GetStatus uses, as static strings the snapshot can point to. */
static const char *episode_source(const char *s) {
        if (s && streq(s, "psi"))
                return "psi";
        if (s && streq(s, "vmpressure"))
                return "vmpressure";
        return "other";
}

/* The resource of a registration, likewise; memory when a daemon before 0.3 does not say. */
static const char *episode_resource(const char *s) {
        if (!s || streq(s, "memory"))
                return "memory";
        if (streq(s, "cpu"))
                return "cpu";
        if (streq(s, "io"))
                return "io";
        return "other";
}

/*
 * The active episodes in GetStatus's registrations: count them, and give each cgroup shown the
 * longest of its own. The duration is the daemon's duration_us (right even when top runs in
 * another time namespace), else now - active_since_us.
 */
static void apply_episodes(Top *t, json_t *regs, uint64_t now) {
        json_t *reg;
        size_t i;

        json_array_foreach(regs, i, reg) {
                json_t *ep = json_object_get(reg, "episode"), *since = json_object_get(ep, "active_since_us"),
                       *dur = json_object_get(ep, "duration_us");
                const char *path = json_string_value(json_object_get(reg, "cgroup"));
                TopCgroup *cg;
                uint64_t s, duration;

                if (!json_is_object(ep) || !json_is_integer(since) || json_integer_value(since) < 0)
                        continue;
                t->daemon.episodes++;
                cg = path ? top_snapshot_find(&t->snap, path) : NULL;
                if (!cg)
                        continue;
                s = (uint64_t) json_integer_value(since);
                if (json_is_integer(dur) && json_integer_value(dur) >= 0)
                        duration = (uint64_t) json_integer_value(dur);
                else
                        duration = now > s ? now - s : 0;
                if (cg->ep_since_us != TOP_NONE && cg->ep_duration_us >= duration)
                        continue;
                cg->ep_since_us = s;
                cg->ep_duration_us = duration;
                cg->ep_events = jget_u64(ep, "events");
                cg->ep_source = episode_source(json_string_value(json_object_get(reg, "source")));
                cg->ep_resource = episode_resource(json_string_value(json_object_get(reg, "resource")));
        }
}

/*
 * The entries of the proactive reclaim controller in @status: count them, and give each cgroup
 * shown its own. A state this pressurectl does not know is "unknown".
 */
static void apply_reclaim(Top *t, const pressure_status *status) {
        for (size_t i = 0; i < pressure_status_get_n_reclaim(status); i++) {
                const pressure_reclaim *rc = pressure_status_get_reclaim(status, i);
                const char *path = pressure_reclaim_get_cgroup(rc);
                const char *state = pressure_reclaim_state_to_string(pressure_reclaim_get_state(rc));
                TopCgroup *cg;

                t->daemon.reclaim_cgroups++;
                cg = path ? top_snapshot_find(&t->snap, path) : NULL;
                if (!cg)
                        continue;
                cg->has_reclaim = true;
                cg->rc_state = state ?: "unknown";
                cg->rc_reclaimed = pressure_reclaim_get_reclaimed_bytes(rc);
                cg->rc_last_step = pressure_reclaim_get_last_step_bytes(rc);
                cg->rc_floor = pressure_reclaim_get_floor_bytes(rc);
                cg->rc_has_stall = pressure_reclaim_get_stall_pct(rc, &cg->rc_stall) >= 0;
                cg->rc_has_io_stall = pressure_reclaim_get_io_stall_pct(rc, &cg->rc_io_stall) >= 0;
        }
}

/*
 * Mark a row changed when its episode began, ended or was replaced by another, when the reclaim
 * controller took it on, let it go or changed its state, or when it was killed (or its minute
 * of being marked is over); not because an episode or reclaim went on: a duration
 * that grows at every refresh, or bytes reclaimed at every interval, would keep such rows marked.
 */
static void mark_episode_changes(Top *t, const TopSnapshot *previous) {
        for (size_t k = 0; k < t->snap.n_cgroups; k++) {
                TopCgroup *cg = &t->snap.cgroups[k];
                const TopCgroup *old;

                if (cg->previous >= previous->n_cgroups)
                        continue;
                old = &previous->cgroups[cg->previous];
                if (old->ep_since_us != cg->ep_since_us || old->has_reclaim != cg->has_reclaim ||
                    old->kill_at_us != cg->kill_at_us ||
                    (cg->has_reclaim && !streq(old->rc_state, cg->rc_state)))
                        cg->changed = true;
        }
}

static void query_status(Top *t) {
        TopDaemon *d = &t->daemon, old = *d;
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        json_t *st, *counters;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        r = pressure_client_get_status(t->client, &status, &error);
        *d = (TopDaemon) {};
        if (r < 0) {
                daemon_error(t->client, r, error, d->error, sizeof(d->error));
                return;
        }
        st = json_loads(pressure_status_get_json(status), 0, NULL);
        if (!json_is_object(st)) {
                json_decref(st);
                snprintf(d->error, sizeof(d->error), "malformed GetStatus reply");
                return;
        }
        d->reachable = true;
        snprintf(d->version, sizeof(d->version), "%s",
                 json_is_string(json_object_get(st, "version")) ? json_string_value(json_object_get(st, "version")) : "?");
        d->clients = jget_u64(st, "clients");
        d->subscriptions = jget_u64(st, "subscriptions");
        d->registrations = json_array_size(json_object_get(st, "registrations"));
        apply_episodes(t, json_object_get(st, "registrations"), now);
        apply_reclaim(t, status);
        counters = json_object_get(st, "counters");
        d->events_read = jget_u64(counters, "events_read");
        d->events_delivered = jget_u64(counters, "events_delivered");
        d->at_usec = now;
        if (old.reachable && now > old.at_usec && d->events_read >= old.events_read &&
            d->events_delivered >= old.events_delivered) {
                double sec = (double) (now - old.at_usec) / 1e6;

                d->have_rates = true;
                d->read_rate = (double) (d->events_read - old.events_read) / sec;
                d->delivered_rate = (double) (d->events_delivered - old.events_delivered) / sec;
        }
        json_decref(st);
}

typedef struct ProtectionUpdate {
        Top *top;
        const TopSnapshot *previous;
} ProtectionUpdate;

/* One node of the GetProtection reply: set emin/elow of its cgroup, mark it if they changed. */
static int on_protection_node(const char *cgroup, uint64_t emin, uint64_t elow, void *userdata) {
        ProtectionUpdate *u = userdata;
        TopCgroup *cg = top_snapshot_find(&u->top->snap, cgroup);
        const TopCgroup *old;

        if (!cg)
                return 0;
        cg->emin = emin;
        cg->elow = elow;
        old = top_snapshot_find(u->previous, cgroup);
        if (old && old->emin != TOP_NONE && (old->emin != emin || old->elow != elow))
                cg->changed = true;
        return 0;
}

/* emin/elow of the subtree shown, from the daemon's model. */
static void query_protection(Top *t, const TopSnapshot *previous) {
        _cleanup_(pressure_protection_unrefp) pressure_protection *p = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        ProtectionUpdate u = { .top = t, .previous = previous };
        int r;

        r = pressure_client_get_protection(t->client, t->subtree, &p, &error);
        if (r < 0) {
                daemon_error(t->client, r, error, t->daemon.protection_error, sizeof(t->daemon.protection_error));
                return;
        }
        for (size_t i = 0; i < pressure_protection_get_n_nodes(p); i++) {
                const pressure_protection_node *n = pressure_protection_get_node(p, i);
                uint64_t emin = TOP_NONE, elow = TOP_NONE;

                (void) pressure_protection_node_get_value(n, PRESSURE_PROTECTION_EMIN, &emin);
                (void) pressure_protection_node_get_value(n, PRESSURE_PROTECTION_ELOW, &elow);
                (void) on_protection_node(pressure_protection_node_get_cgroup(n),
                                          emin == PRESSURE_UNLIMITED ? TOP_UNLIMITED : emin,
                                          elow == PRESSURE_UNLIMITED ? TOP_UNLIMITED : elow, &u);
        }
}

/* ---- kills ------------------------------------------------------------------------------ */

/* The kills subscription: the killers the daemon names, each kill, or why it ended. */
static int on_kills_event(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        Top *t = userdata;
        const pressure_error *error;
        uint64_t id;
        size_t n;

        (void) sub;
        switch (pressure_event_get_kind(e)) {
        case PRESSURE_EVENT_SUBSCRIBED:
                t->kills_confirmed = true;
                t->kill_sources[0] = 0;
                t->kills_error[0] = 0;
                n = pressure_event_get_n_kill_sources(e);
                for (size_t i = 0; i < n; i++)
                        snprintf(t->kill_sources + strlen(t->kill_sources), sizeof(t->kill_sources) -
                                 strlen(t->kill_sources), "%s%s", i > 0 ? ", " : "", pressure_event_get_kill_source(e, i));
                break;
        case PRESSURE_EVENT_KILLED:
                if (top_kills_add(t->kills, pressure_event_get_cgroup(e), pressure_event_get_killed_by(e),
                                  pressure_event_get_reason(e), pressure_event_get_count(e),
                                  pressure_event_get_monotonic_us(e), pressure_event_get_time_us(e),
                                  now_usec(CLOCK_MONOTONIC)) < 0)
                        return -ENOMEM;
                break;
        case PRESSURE_EVENT_PREKILL:
                /* top only shows: it has nothing to save, so systemd-oomd need not wait for it. Whatever the
                 * daemon answers changes nothing on the screen. */
                if (pressure_event_get_prekill_id(e, &id) >= 0)
                        (void) pressure_client_acknowledge_prekill(t->client, id, NULL);
                break;
        case PRESSURE_EVENT_ERROR:
                error = pressure_event_get_error(e);
                t->kills_confirmed = false;
                if (streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(VARLINK_INVALID_PARAMETER)) &&
                    streq_ptr(pressure_error_get_parameter_string(error, "parameter"), "kills"))
                        snprintf(t->kills_error, sizeof(t->kills_error), "not reported by this daemon");
                else
                        daemon_error(t->client, pressure_error_get_errno(error), error, t->kills_error,
                                     sizeof(t->kills_error));
                break;
        default:
                break;
        }
        return 0;
}

/* Subscribe to the kills of the whole system, waiting for the daemon if it is not there yet. */
static int kills_subscribe(Top *t) {
        _cleanup_(pressure_selector_freep) pressure_selector *sel = NULL;
        int r;

        t->kills = calloc(1, sizeof(TopKills));
        if (!t->kills)
                return -ENOMEM;
        r = pressure_client_set_wait_for_daemon(t->client, 1);
        if (r >= 0)
                r = pressure_selector_new(&sel);
        if (r >= 0)
                r = pressure_selector_set_kills(sel);
        if (r >= 0)
                r = pressure_client_subscribe_async(t->client, sel, on_kills_event, t, NULL);
        return r;
}

/* Take in what the kills subscription brought since the last refresh, and forget kills over a minute old. */
static int kills_read(Top *t) {
        int r = 0;

        /* Each round reads what is ready on every connection; a few rounds drain a burst. */
        for (unsigned i = 0; i < 16 && (r = pressure_client_process(t->client)) > 0; i++)
                ;
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                snprintf(t->kills_error, sizeof(t->kills_error), "%s", strerror(-r));
        top_kills_expire(t->kills, t->mono_usec);
        return 0;
}

/* Whether some cgroup of @snap has its memory figures from cgroup2: the memory controller is there. */
static bool snapshot_v2_memory(const TopSnapshot *snap) {
        for (size_t i = 0; i < snap->n_cgroups; i++)
                if (!snap->cgroups[i].mem_v1 && snap->cgroups[i].current != TOP_NONE)
                        return true;
        return false;
}

/* Read everything once: system, cgroups, daemon. */
static int top_refresh(Top *t) {
        TopSnapshot snap = {};
        int r;

        t->time_usec = now_usec(CLOCK_REALTIME);
        t->mono_usec = now_usec(CLOCK_MONOTONIC);
        r = kills_read(t);
        if (r < 0)
                return r;
        top_system_read(&t->sys);
        r = top_snapshot_read(&t->roots, t->subtree, t->refreshes > 0 ? &t->snap : NULL, &snap);
        if (r == -ENOMEM)
                return r;
        t->snapshot_error = r < 0 ? r : 0;
        if (r >= 0) {
                TopSnapshot old = t->snap;

                t->snap = snap;
                t->v2_memory = snapshot_v2_memory(&t->snap);
                query_status(t);
                t->kills_marked = top_kills_apply(t->kills, &t->snap);
                mark_episode_changes(t, &old);
                if (protection_shown(t) && t->daemon.reachable)
                        query_protection(t, &old);
                top_snapshot_done(&old);
        } else {
                top_snapshot_done(&t->snap);
                t->kills_marked = 0;
                query_status(t);
        }
        t->refreshes++;
        return build_rows(t);
}

/* ---- batch output ------------------------------------------------------------------------ */

static void print_text(Top *t) {
        char header[HEADER_LINES][MAX_WIDTH], line[MAX_WIDTH];
        int nw = name_width(t, -1);

        columns_batch(t);
        format_header(t, header, MAX_WIDTH - 1);
        if (t->refreshes > 1)
                printf("\n");
        for (int i = 0; i < HEADER_LINES; i++)
                printf("%s\n", header[i]);
        format_column_header(t, line, sizeof(line), nw);
        printf("\n%s\n", line);
        for (size_t i = 0; i < t->n_rows; i++) {
                format_row(t, &t->snap.cgroups[t->rows[i]], line, sizeof(line), nw);
                printf("%s\n", line);
        }
        fflush(stdout);
}

/* A byte value for JSON: null when unlimited; NULL (leave the key out) when unknown. */
static json_t *json_size(uint64_t v) {
        if (v == TOP_NONE)
                return NULL;
        if (v == TOP_UNLIMITED)
                return json_null();
        return json_integer((json_int_t) v);
}

static void set_opt(json_t *o, const char *key, json_t *v) {
        if (v)
                json_object_set_new(o, key, v);
}

/* The "system" member: PSI of the whole system and MemAvailable/MemTotal. */
static void json_fill_system(const Top *t, json_t *sys) {
        if (t->sys.has_psi)
                json_object_set_new(sys, "psi", json_pack("{s:f,s:f,s:f,s:f}",
                                                          "some_avg10", psi_percent(t->sys.some_avg10),
                                                          "some_avg60", psi_percent(t->sys.some_avg60),
                                                          "full_avg10", psi_percent(t->sys.full_avg10),
                                                          "full_avg60", psi_percent(t->sys.full_avg60)));
        else
                json_object_set_new(sys, "psi", json_null());
        json_object_set_new(sys, "cpu_psi", t->sys.has_cpu_psi ?
                            json_pack("{s:f}", "some_avg10", psi_percent(t->sys.cpu_some_avg10)) : json_null());
        json_object_set_new(sys, "io_psi", t->sys.has_io_psi ?
                            json_pack("{s:f}", "some_avg10", psi_percent(t->sys.io_some_avg10)) : json_null());
        set_opt(sys, "mem_available", json_size(t->sys.mem_available));
        set_opt(sys, "mem_total", json_size(t->sys.mem_total));
}

/* The "daemon" member: reachable or why not, its figures from GetStatus. */
static void json_fill_daemon(const Top *t, json_t *d) {
        json_object_set_new(d, "reachable", json_boolean(t->daemon.reachable));
        if (!t->daemon.reachable) {
                json_object_set_new(d, "error", json_string(t->daemon.error));
                return;
        }
        json_object_set_new(d, "version", json_string(t->daemon.version));
        json_object_set_new(d, "clients", json_integer((json_int_t) t->daemon.clients));
        json_object_set_new(d, "subscriptions", json_integer((json_int_t) t->daemon.subscriptions));
        json_object_set_new(d, "registrations", json_integer((json_int_t) t->daemon.registrations));
        json_object_set_new(d, "active_episodes", json_integer((json_int_t) t->daemon.episodes));
        json_object_set_new(d, "reclaim_cgroups", json_integer((json_int_t) t->daemon.reclaim_cgroups));
        json_object_set_new(d, "events_read_per_sec",
                            t->daemon.have_rates ? json_real(t->daemon.read_rate) : json_null());
        json_object_set_new(d, "events_delivered_per_sec",
                            t->daemon.have_rates ? json_real(t->daemon.delivered_rate) : json_null());
        if (t->daemon.protection_error[0])
                json_object_set_new(d, "protection_error", json_string(t->daemon.protection_error));
}

/* The kills subscription in "daemon": the killers the daemon named (null until it answered), or why it ended. */
static void json_fill_kills(const Top *t, json_t *d) {
        json_t *a = NULL;

        if (t->kills_confirmed) {
                const char *p = t->kill_sources;

                a = json_array();
                while (a && *p) {
                        size_t n = strcspn(p, ",");

                        json_array_append_new(a, json_stringn(p, n));
                        p += n;
                        p += strspn(p, ", ");
                }
        }
        json_object_set_new(d, "kill_sources", a ?: json_null());
        if (t->kills_error[0])
                json_object_set_new(d, "kills_error", json_string(t->kills_error));
}

/* The "killed" member of a row: its latest kill of the last minute, or null. */
static json_t *json_killed(const TopCgroup *cg) {
        if (cg->kill_at_us == TOP_NONE)
                return json_null();
        return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "cgroup", cg->kill_cgroup, "by", cg->kill_by,
                         "reason", cg->kill_reason, "count", (json_int_t) cg->kills,
                         "monotonic_us", (json_int_t) cg->kill_at_us, "time_us", (json_int_t) cg->kill_time_us);
}

/* A stall figure for JSON: null when the daemon had none. */
static json_t *json_stall(bool present, double v) {
        return present ? json_real(v) : json_null();
}

/* The "reclaim" member of a row: the controller's entry in GetStatus's words, or null. */
static json_t *json_reclaim(const TopCgroup *cg) {
        if (!cg->has_reclaim)
                return json_null();
        return json_pack("{s:s,s:I,s:I,s:o,s:o,s:I}", "state", cg->rc_state,
                         "reclaimed_bytes", (json_int_t) cg->rc_reclaimed,
                         "last_step_bytes", (json_int_t) cg->rc_last_step,
                         "stall_pct", json_stall(cg->rc_has_stall, cg->rc_stall),
                         "io_stall_pct", json_stall(cg->rc_has_io_stall, cg->rc_io_stall),
                         "floor_bytes", (json_int_t) cg->rc_floor);
}

/* One row of the "cgroups" member; NULL if out of memory. */
static json_t *json_cgroup(const Top *t, const TopCgroup *cg) {
        json_t *c = json_object(), *ev = json_object();

        if (!c || !ev) {
                json_decref(c);
                json_decref(ev);
                return NULL;
        }
        json_object_set_new(c, "cgroup", json_string(cg->path));
        json_object_set_new(c, "depth", json_integer(cg->depth));
        json_object_set_new(c, "hierarchy", cg->current == TOP_NONE ? json_null() :
                                            json_string(cg->mem_v1 ? "v1" : "v2"));
        set_opt(c, "current", json_size(cg->current));
        set_opt(c, "high", json_size(cg->high));
        set_opt(c, "max", json_size(cg->max));
        if (protection_shown(t)) {
                set_opt(c, "emin", json_size(cg->emin));
                set_opt(c, "elow", json_size(cg->elow));
        }
        if (cg->has_psi) {
                json_object_set_new(c, "some_avg10", json_real(psi_percent(cg->some_avg10)));
                json_object_set_new(c, "full_avg10", json_real(psi_percent(cg->full_avg10)));
        }
        if (cg->has_cpu_psi)
                json_object_set_new(c, "cpu_some_avg10", json_real(psi_percent(cg->cpu_some_avg10)));
        if (cg->has_io_psi)
                json_object_set_new(c, "io_some_avg10", json_real(psi_percent(cg->io_some_avg10)));
        set_opt(ev, "high", json_size(top_event_delta(cg, TOP_EV_HIGH)));
        set_opt(ev, "max", json_size(top_event_delta(cg, TOP_EV_MAX)));
        set_opt(ev, "oom_kill", json_size(top_event_delta(cg, TOP_EV_OOM_KILL)));
        json_object_set_new(c, "events", ev);
        if (t->daemon.reachable)
                json_object_set_new(c, "episode", cg->ep_since_us == TOP_NONE ? json_null() :
                                    json_pack("{s:I,s:I,s:I,s:s,s:s}",
                                              "active_since_us", (json_int_t) cg->ep_since_us,
                                              "duration_us", (json_int_t) cg->ep_duration_us,
                                              "events", (json_int_t) cg->ep_events,
                                              "source", cg->ep_source, "resource", cg->ep_resource));
        if (t->daemon.reachable)
                json_object_set_new(c, "reclaim", json_reclaim(cg));
        json_object_set_new(c, "killed", json_killed(cg));
        json_object_set_new(c, "changed", json_boolean(cg->changed));
        return c;
}

static int print_json(Top *t) {
        _cleanup_free_ char *text = NULL;
        json_t *o = json_object(), *sys = json_object(), *d = json_object(), *roots = json_object(),
               *cgroups = json_array();

        if (!o || !sys || !d || !roots || !cgroups) {
                json_decref(o);
                json_decref(sys);
                json_decref(d);
                json_decref(roots);
                json_decref(cgroups);
                return -ENOMEM;
        }
        json_object_set_new(o, "time_us", json_integer((json_int_t) t->time_usec));
        json_object_set_new(o, "iteration", json_integer((json_int_t) t->refreshes));
        json_object_set_new(o, "sort", json_string(sort_names[t->sort]));
        json_object_set_new(o, "view", json_string(t->flat ? "flat" : "tree"));

        json_fill_system(t, sys);
        json_object_set_new(o, "system", sys);

        json_fill_daemon(t, d);
        json_fill_kills(t, d);
        json_object_set_new(o, "daemon", d);

        json_object_set_new(roots, "v2", t->roots.v2 ? json_string(t->roots.v2) : json_null());
        json_object_set_new(roots, "v1_memory", t->roots.v1_memory ? json_string(t->roots.v1_memory) : json_null());
        json_object_set_new(o, "roots", roots);
        if (t->snapshot_error < 0)
                json_object_set_new(o, "error", json_string(strerror(-t->snapshot_error)));

        for (size_t i = 0; i < t->n_rows; i++) {
                json_t *c = json_cgroup(t, &t->snap.cgroups[t->rows[i]]);

                if (c)
                        json_array_append_new(cgroups, c);
        }
        json_object_set_new(o, "cgroups", cgroups);

        text = json_dumps(o, JSON_DUMP_FLAGS);
        json_decref(o);
        if (!text)
                return -ENOMEM;
        printf("%s\n", text);
        fflush(stdout);
        return 0;
}

static void sleep_usec(uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                               .tv_nsec = (long) (usec % USEC_PER_SEC * NSEC_PER_USEC) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int run_batch(Top *t) {
        for (;;) {
                int r = top_refresh(t);

                if (r < 0)
                        return r;
                if (t->json)
                        r = print_json(t);
                else
                        print_text(t);
                if (r < 0)
                        return r;
                if (t->iterations > 0 && t->refreshes >= t->iterations)
                        return 0;
                sleep_usec(t->delay_usec);
        }
}

/* ---- the full screen ---------------------------------------------------------------------- */

/* The write end of the self-pipe; signals become bytes the main loop polls for. */
static int signal_pipe[2] = { -1, -1 };

static void on_signal(int sig) {
        int saved = errno;
        unsigned char c = (unsigned char) sig;

        (void) !write(signal_pipe[1], &c, 1);
        errno = saved;
}

static const int caught_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH };

/* Route the signals that end top, and SIGWINCH, to the self-pipe. Before newterm(), so that
 * ncurses keeps its hands off them. */
static int signals_catch(void) {
        struct sigaction sa = { .sa_handler = on_signal };

        if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(caught_signals); i++)
                if (sigaction(caught_signals[i], &sa, NULL) < 0)
                        return -errno;
        return 0;
}

typedef struct Screen {
        SCREEN *screen;
        bool colors;
        bool editing;          /* reading a filter after '/' */
        char saved_filter[128];
} Screen;

/* Give the terminal back: normal modes, cursor, main screen. Safe to call twice. */
static void screen_end(Screen *s) {
        if (!s->screen)
                return;
        endwin();
        delscreen(s->screen);
        s->screen = NULL;
        fflush(stdout);
}

/* Draw @line at row @y, at most @cols columns of it (its UTF-8 characters, not its bytes). */
static void add_line(int y, const char *line, int cols) {
        mvaddnstr(y, 0, line, (int) utf8_offset(line, cols));
}

static void draw(Top *t, Screen *s) {
        char header[HEADER_LINES][MAX_WIDTH], line[MAX_WIDTH];
        int rows = LINES, cols = MIN(COLS, MAX_WIDTH - 1), table_rows, nw;

        erase();
        format_header(t, header, cols);
        for (int i = 0; i < HEADER_LINES && i < rows; i++)
                add_line(i, header[i], cols);
        columns_screen(t, cols);
        /* Where the names do not fit, indent by one column per level: more of each name shows. */
        t->indent = 2;
        if (name_width(t, -1) > cols - fixed_width(t) - 1)
                t->indent = 1;
        nw = name_width(t, cols - fixed_width(t) - 1);
        if (rows > HEADER_LINES + 1) {
                format_column_header(t, line, sizeof(line), nw);
                attron(A_REVERSE);
                mvaddnstr(HEADER_LINES, 0, line, cols);
                for (int x = (int) strlen(line); x < cols; x++)
                        mvaddch(HEADER_LINES, x, ' ');
                attroff(A_REVERSE);
        }
        table_rows = MAX(rows - HEADER_LINES - 2, 0);
        if (t->scroll + (size_t) table_rows > t->n_rows)
                t->scroll = t->n_rows > (size_t) table_rows ? t->n_rows - (size_t) table_rows : 0;
        for (int i = 0; i < table_rows && t->scroll + (size_t) i < t->n_rows; i++) {
                const TopCgroup *cg = &t->snap.cgroups[t->rows[t->scroll + (size_t) i]];
                attr_t a = A_NORMAL;

                /* An active episode or a kill in the last minute: red (underlined without colours);
                 * changed: bold, yellow unless the row is red already. */
                if (cg->ep_since_us != TOP_NONE || cg->kill_at_us != TOP_NONE)
                        a = s->colors ? COLOR_PAIR(2) : A_UNDERLINE;
                else if (cg->changed && s->colors)
                        a = COLOR_PAIR(1);
                if (cg->changed)
                        a |= A_BOLD;

                format_row(t, cg, line, sizeof(line), nw);
                attron(a);
                add_line(HEADER_LINES + 1 + i, line, cols);
                attroff(a);
        }
        if (rows > 1) {
                if (s->editing)
                        snprintf(line, sizeof(line), "filter by path: %s_   (Enter keeps it, Esc cancels)", t->filter);
                else
                        snprintf(line, sizeof(line), "s sort (%s)  / filter  t %s  %s%s%sarrows scroll  q quit",
                                 sort_names[t->sort], t->flat ? "tree" : "flat",
                                 /* no protection to show without cgroup2's memory controller */
                                 t->v2_memory ? "p " : "", t->v2_memory ? (t->show_protection ? "hide" : "show") : "",
                                 t->v2_memory ? " protection  " : "");
                attron(A_REVERSE);
                add_line(rows - 1, line, cols);
                attroff(A_REVERSE);
        }
        refresh();
}

/* Handle one key; returns true to quit. */
static bool handle_key(Top *t, Screen *s, int ch, bool *ret_refetch) {
        int page = MAX(LINES - HEADER_LINES - 2, 1);

        if (s->editing) {
                size_t len = strlen(t->filter);

                if (ch == '\n' || ch == '\r' || ch == KEY_ENTER)
                        s->editing = false;
                else if (ch == 27) { /* Esc */
                        snprintf(t->filter, sizeof(t->filter), "%s", s->saved_filter);
                        s->editing = false;
                } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
                        if (len > 0)
                                t->filter[len - 1] = 0;
                } else if (ch >= 32 && ch < 127 && len + 1 < sizeof(t->filter)) {
                        t->filter[len] = (char) ch;
                        t->filter[len + 1] = 0;
                }
                t->scroll = 0;
                return false;
        }

        switch (ch) {
        case 'q':
        case 'Q':
                return true;
        case 's':
                t->sort = (SortKey) ((t->sort + 1) % _SORT_MAX);
                t->scroll = 0;
                break;
        case '/':
                snprintf(s->saved_filter, sizeof(s->saved_filter), "%s", t->filter);
                s->editing = true;
                break;
        case 't':
                t->flat = !t->flat;
                t->scroll = 0;
                break;
        case 'p':
                t->show_protection = !t->show_protection;
                *ret_refetch = protection_shown(t);
                break;
        case KEY_DOWN:
        case 'j':
                t->scroll++;
                break;
        case KEY_UP:
        case 'k':
                if (t->scroll > 0)
                        t->scroll--;
                break;
        case KEY_NPAGE:
        case ' ':
                t->scroll += (size_t) page;
                break;
        case KEY_PPAGE:
                t->scroll = t->scroll > (size_t) page ? t->scroll - (size_t) page : 0;
                break;
        case KEY_HOME:
                t->scroll = 0;
                break;
        case KEY_END:
                t->scroll = t->n_rows;
                break;
        default:
                break;
        }
        return false;
}

/* Apply the terminal's current size (after SIGWINCH). */
static void screen_resize(void) {
        struct winsize ws;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_row > 0 && ws.ws_col > 0)
                resizeterm(ws.ws_row, ws.ws_col);
}

/* Take the terminal over with curses: keys without echo or waiting, no cursor, colours if any. */
static int screen_start(Screen *s) {
        setlocale(LC_ALL, "");
        s->screen = newterm(NULL, stdout, stdin);
        if (!s->screen) {
                fprintf(stderr, "pressurectl: top: cannot use the terminal '%s'\n", strna(getenv("TERM")));
                return -ENOTTY;
        }
        cbreak();
        noecho();
        nonl();
        keypad(stdscr, TRUE);
        nodelay(stdscr, TRUE);
        set_escdelay(25);
        curs_set(0);
        if (has_colors() && start_color() == OK) {
                use_default_colors();
                s->colors = init_pair(1, COLOR_YELLOW, -1) == OK && init_pair(2, COLOR_RED, -1) == OK;
        }
        return 0;
}

/* Drain the signal pipe, following a terminal resize; the terminating signal caught, or 0. */
static int signals_read(void) {
        unsigned char sig;
        int fatal = 0;

        while (read(signal_pipe[0], &sig, 1) == 1) {
                if (sig == SIGWINCH)
                        screen_resize();
                else
                        fatal = sig;
        }
        return fatal;
}

/* Handle the keys typed since the last call; true if one of them quits. */
static bool keys_read(Top *t, Screen *s, bool *refetch) {
        int ch;

        while ((ch = getch()) != ERR) {
                if (ch == KEY_RESIZE)
                        continue;
                if (handle_key(t, s, ch, refetch))
                        return true;
        }
        return false;
}

static int run_screen(Top *t) {
        _cleanup_(screen_end) Screen s = {};
        uint64_t next;
        int r, fatal = 0;

        if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
                fprintf(stderr, "pressurectl: top: not a terminal; use --batch or --json\n");
                return -ENOTTY;
        }
        r = signals_catch();
        if (r < 0)
                return r;
        r = screen_start(&s);
        if (r < 0)
                return r;
        t->ellipsis = streq(nl_langinfo(CODESET), "UTF-8") ? "\u2026" : "~";

        r = top_refresh(t);
        next = now_usec(CLOCK_MONOTONIC) + t->delay_usec;
        while (r >= 0) {
                struct pollfd p[2] = {
                        { .fd = STDIN_FILENO, .events = POLLIN },
                        { .fd = signal_pipe[0], .events = POLLIN },
                };
                uint64_t now;
                bool refetch = false;

                draw(t, &s);
                now = now_usec(CLOCK_MONOTONIC);
                if (now >= next) {
                        if (t->iterations > 0 && t->refreshes >= t->iterations)
                                break;
                        r = top_refresh(t);
                        next = now + t->delay_usec;
                        continue;
                }
                if (poll(p, 2, (int) ((next - now + 999) / 1000)) < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (p[1].revents & POLLIN) {
                        fatal = signals_read();
                        if (fatal)
                                break;
                }
                if (keys_read(t, &s, &refetch))
                        break;
                if (refetch) {
                        r = top_refresh(t);
                        next = now_usec(CLOCK_MONOTONIC) + t->delay_usec;
                } else
                        r = build_rows(t);
        }
        screen_end(&s);
        if (fatal) {
                /* Terminal restored: now die of the signal, so the caller sees why. */
                signal(fatal, SIG_DFL);
                raise(fatal);
                _exit(128 + fatal);
        }
        return r;
}

/* ---- command line ------------------------------------------------------------------------ */

static void top_help(void) {
        printf("pressurectl [OPTIONS] top [CGROUP] [-d SEC] [--batch] [--iterations N]\n\n"
               "A live view of memory pressure across the cgroups below CGROUP (default: all):\n"
               "usage and limits, effective protection from the daemon, PSI some/full avg10, the\n"
               "some avg10 of cpu and io pressure (where the screen has room), the active\n"
               "pressure episode of the daemon's registrations, memory.events counts since\n"
               "top started, while the daemon's reclaim controller runs, the memory it\n"
               "reclaimed and, for a minute after a kill by the kernel or systemd-oomd, how\n"
               "long ago it was, one row per cgroup. Keys: s sort (some, full, current, events,\n"
               "path, episode, cpu, io, reclaim),\n"
               "/ filter by path, t tree or flat, p protection columns, arrows scroll, q quit.\n\n"
               "Options:\n"
               "  -d --delay SEC            refresh every SEC seconds (default 1, fractions allowed)\n"
               "  -b --batch                print the table as plain text at every refresh\n"
               "  -n --iterations N         exit after N refreshes\n"
               "     --json                 print one JSON object per refresh (implies --batch)\n"
               "     --no-protection        start without the EMIN/ELOW columns (no GetProtection)\n"
               "     --cgroup-root DIR      cgroup2 hierarchy to read (default: from mountinfo)\n"
               "     --cgroup-v1-root DIR   cgroup v1 memory hierarchy to read (default: from\n"
               "                            mountinfo); either option turns off discovery of both\n");
}

/* Apply one option of top's command line to @t; returns 0, or the exit status to end with. */
static int top_parse_option(Top *t, int opt, const char *arg, bool *roots_given) {
        switch (opt) {
        case 'h':
                top_help();
                return 0;
        case 'j':
                t->json = true;
                cli_set_json(true);
                break;
        case 's':
                t->socket = arg;
                break;
        case 'u':
                t->user = true;
                break;
        case 'd':
                if (parse_seconds(arg, 86400 * USEC_PER_SEC, &t->delay_usec) < 0)
                        return usage_error("top ", "invalid delay '%s', expected seconds from 0 to 86400 (fractions allowed)",
                                           arg);
                break;
        case 'b':
                t->batch = true;
                break;
        case 'n':
                if (parse_uint(arg, UINT64_MAX, &t->iterations) < 0 || t->iterations == 0)
                        return usage_error("top ", "invalid iterations '%s', expected a whole number from 1 to %" PRIu64,
                                           arg, UINT64_MAX);
                break;
        case 'P':
                t->show_protection = false;
                break;
        case 'R':
        case 'V': {
                char **dst = opt == 'R' ? &t->roots.v2 : &t->roots.v1_memory;

                free(*dst);
                *dst = strdup(arg);
                if (!*dst)
                        return EXIT_DAEMON_ERROR;
                *roots_given = true;
                break;
        }
        default:
                return usage_error("top ", NULL);
        }
        return -1;
}

/*
 * Parse top's command line into @t; *@roots_given tells whether it named
 * the hierarchy roots. Returns -1 to go on, or the exit status to end with.
 */
static int top_parse(Top *t, int argc, char **argv, bool *roots_given) {
        static const struct option options[] = {
                { "help",           no_argument,       NULL, 'h' },
                { "json",           no_argument,       NULL, 'j' },
                { "socket",         required_argument, NULL, 's' },
                { "user",           no_argument,       NULL, 'u' },
                { "delay",          required_argument, NULL, 'd' },
                { "batch",          no_argument,       NULL, 'b' },
                { "iterations",     required_argument, NULL, 'n' },
                { "no-protection",  no_argument,       NULL, 'P' },
                { "cgroup-root",    required_argument, NULL, 'R' },
                { "cgroup-v1-root", required_argument, NULL, 'V' },
                {}
        };
        int opt, r;

        while ((opt = getopt_long(argc, argv, "hd:bn:", options, NULL)) >= 0) {
                r = top_parse_option(t, opt, optarg, roots_given);
                if (r >= 0)
                        return r;
        }
        if (optind < argc) {
                r = cgroup_arg("top ", argv[optind++], &t->subtree);
                if (r != 0)
                        return r;
        }
        if (optind < argc)
                return usage_error("top ", "unexpected argument '%s'", argv[optind]);
        if (!t->subtree && !(t->subtree = strdup("/")))
                return EXIT_DAEMON_ERROR;
        if (t->json)
                t->batch = true;
        if (!t->batch && t->delay_usec < 50 * USEC_PER_MSEC)
                t->delay_usec = 50 * USEC_PER_MSEC; /* a screen refreshed faster helps nobody */
        return -1;
}

/*
 * Find the hierarchies in /proc/self/mountinfo unless the command line named
 * them, and connect the client. Returns -1 to go on, or the exit status to end with.
 */
static int top_setup(Top *t, bool roots_given) {
        int r;

        if (!roots_given) {
                r = top_roots_from_mountinfo(&t->roots);
                if (r < 0)
                        return cli_fail("top", r, "cannot read /proc/self/mountinfo: %s", strerror(-r));
        }
        if (!t->roots.v2 && !t->roots.v1_memory)
                return cli_fail("top", 0, "no cgroup hierarchy found (no cgroup2 or v1 memory mount)");

        r = pressure_client_new(&t->client);
        if (r >= 0 && t->socket)
                r = pressure_client_set_socket(t->client, t->socket);
        else if (r >= 0 && t->user)
                r = pressure_client_set_user(t->client);
        if (r >= 0)
                r = pressure_client_set_call_timeout(t->client, USEC_PER_SEC / 2);
        if (r >= 0)
                r = kills_subscribe(t);
        if (r == -ENOMEM)
                return cli_fail("top", r, "cannot set up the client: %s", strerror(-r));
        if (r < 0)
                return usage_error("top ", "cannot set up the client: %s", strerror(-r));
        return -1;
}

/*
 * Keep the cgroup files open between refreshes (a pread() each instead of
 * open, read, close), within the fd limit, raised to its hard limit for this.
 */
static void raise_fd_budget(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
                (void) getrlimit(RLIMIT_NOFILE, &rl);
        }
        top_set_fd_budget(rl.rlim_cur > 128 ? (unsigned) MIN(rl.rlim_cur - 128, 1u << 20) : 0);
}

/**
 * top_main - the top command.
 * @argc: arguments from the command name on
 * @argv: likewise
 * @socket: the global --socket, or NULL
 * @user: the global --user
 * @json: the global --json
 *
 * Returns the exit status: 0, 1 (error), 2 (usage). A terminating signal
 * in the full-screen view restores the terminal and then ends the process
 * by that signal.
 */
int top_main(int argc, char **argv, const char *socket, bool user, bool json) {
        _cleanup_(top_done) Top t = {
                .socket = socket, .user = user, .json = json,
                .delay_usec = USEC_PER_SEC, .show_protection = true, .indent = 2, .ellipsis = "~",
        };
        bool roots_given = false;
        int r;

        r = top_parse(&t, argc, argv, &roots_given);
        if (r >= 0)
                return r;
        r = top_setup(&t, roots_given);
        if (r >= 0)
                return r;
        raise_fd_budget();
        if (t.batch)
                /* One write per refresh; run_batch() flushes after each. */
                setvbuf(stdout, NULL, _IOFBF, 1 << 16);

        r = t.batch ? run_batch(&t) : run_screen(&t);
        if (r == -ENOTTY)
                return EXIT_USAGE;
        if (r < 0)
                return cli_fail("top", r, "%s", strerror(-r));
        return 0;
}

int cmd_top(int argc, char **argv) {
        return top_main(argc, argv, arg_socket, arg_user, arg_json);
}
