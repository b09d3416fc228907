/* SPDX-License-Identifier: MIT */
/* The Prometheus text exposition format 0.0.4: headers, samples, histograms, process gauges. */
#include <dirent.h>
#include <event2/buffer.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "metrics-text.h"
#include "util.h"

/*
 * Escape for label values (@quote) and HELP text: backslash and newline,
 * and the double quote in label values. Runs of plain characters go in
 * one piece.
 */
static void write_escaped(struct evbuffer *out, const char *s, bool quote) {
        const char *special = quote ? "\\\n\"" : "\\\n";

        for (const char *p = s ? s : ""; *p;) {
                size_t n = strcspn(p, special);

                if (n > 0)
                        evbuffer_add(out, p, n);
                p += n;
                if (*p == 0)
                        break;
                evbuffer_add(out, *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : "\\\"", 2);
                p++;
        }
}

void metrics_write_label_value(struct evbuffer *out, const char *value) {
        write_escaped(out, value, true);
}

void metrics_write_header(struct evbuffer *out, const char *name, const char *type, const char *help) {
        evbuffer_add_printf(out, "# HELP %s ", name);
        write_escaped(out, help, false);
        evbuffer_add_printf(out, "\n# TYPE %s %s\n", name, type);
}

static void write_name_labels(struct evbuffer *out, const char *name, const MetricsLabel *labels, size_t n_labels) {
        evbuffer_add(out, name, strlen(name));
        if (n_labels == 0)
                return;
        evbuffer_add(out, "{", 1);
        for (size_t i = 0; i < n_labels; i++) {
                evbuffer_add_printf(out, "%s%s=\"", i > 0 ? "," : "", labels[i].name);
                metrics_write_label_value(out, labels[i].value);
                evbuffer_add(out, "\"", 1);
        }
        evbuffer_add(out, "}", 1);
}

/* Shortest of %.15g/%.17g that reads back as the same double. */
static void format_double(char buf[static 32], double v) {
        if (isnan(v)) {
                strcpy(buf, "NaN");
                return;
        }
        if (isinf(v)) {
                strcpy(buf, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        snprintf(buf, 32, "%.15g", v);
        if (strtod(buf, NULL) != v)
                snprintf(buf, 32, "%.17g", v);
}

void metrics_write_sample(struct evbuffer *out, const char *name,
                          const MetricsLabel *labels, size_t n_labels, double value) {
        char buf[32];

        format_double(buf, value);
        write_name_labels(out, name, labels, n_labels);
        evbuffer_add_printf(out, " %s\n", buf);
}

void metrics_write_sample_u64(struct evbuffer *out, const char *name,
                              const MetricsLabel *labels, size_t n_labels, uint64_t value) {
        write_name_labels(out, name, labels, n_labels);
        evbuffer_add_printf(out, " %" PRIu64 "\n", value);
}

/* Microseconds as an exact decimal number of seconds, without trailing zeros. */
static void format_usec_as_sec(char buf[static 32], uint64_t usec) {
        size_t n;

        snprintf(buf, 32, "%" PRIu64 ".%06" PRIu64, usec / USEC_PER_SEC, usec % USEC_PER_SEC);
        n = strlen(buf);
        while (buf[n - 1] == '0')
                buf[--n] = 0;
        if (buf[n - 1] == '.')
                buf[--n] = 0;
}

void metrics_write_sample_seconds(struct evbuffer *out, const char *name,
                                  const MetricsLabel *labels, size_t n_labels, uint64_t usec) {
        char buf[32];

        format_usec_as_sec(buf, usec);
        write_name_labels(out, name, labels, n_labels);
        evbuffer_add_printf(out, " %s\n", buf);
}

void metrics_histogram_write(struct evbuffer *out, const char *name, const char *help,
                             const MetricsHistogram *h) {
        char sample[256], le[32];
        uint64_t cumulative = 0;

        metrics_write_header(out, name, "histogram", help);

        snprintf(sample, sizeof(sample), "%s_bucket", name);
        for (size_t i = 0; i <= METRICS_HISTOGRAM_BOUNDS; i++) {
                cumulative += h->buckets[i];
                if (i < METRICS_HISTOGRAM_BOUNDS)
                        format_usec_as_sec(le, metrics_histogram_bounds_usec[i]);
                else
                        strcpy(le, "+Inf");
                metrics_write_sample_u64(out, sample, &(MetricsLabel) { "le", le }, 1, cumulative);
        }

        format_usec_as_sec(le, h->sum_usec);
        evbuffer_add_printf(out, "%s_sum %s\n", name, le);
        evbuffer_add_printf(out, "%s_count %" PRIu64 "\n", name, h->count);
}

static int count_open_fds(uint64_t *ret) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        uint64_t n = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        /* Not counting the directory's own fd. */
        *ret = n > 0 ? n - 1 : 0;
        return 0;
}

static int read_resident_bytes(uint64_t *ret) {
        _cleanup_free_ char *statm = NULL;
        unsigned long long size, resident;
        long page;
        int r;

        r = read_full_file("/proc/self/statm", 4096, &statm, NULL);
        if (r < 0)
                return r;
        if (sscanf(statm, "%llu %llu", &size, &resident) != 2)
                return -EBADMSG;
        page = sysconf(_SC_PAGESIZE);
        if (page <= 0)
                return -EINVAL;
        *ret = (uint64_t) resident * (uint64_t) page;
        return 0;
}

void metrics_write_process(struct evbuffer *out) {
        uint64_t v = 0;

        if (read_resident_bytes(&v) >= 0) {
                metrics_write_header(out, "pressured_resident_memory_bytes", "gauge",
                                     "Resident set size of the daemon in bytes.");
                metrics_write_sample_u64(out, "pressured_resident_memory_bytes", NULL, 0, v);
        }
        if (count_open_fds(&v) >= 0) {
                metrics_write_header(out, "pressured_open_fds", "gauge",
                                     "File descriptors the daemon has open.");
                metrics_write_sample_u64(out, "pressured_open_fds", NULL, 0, v);
        }
}
