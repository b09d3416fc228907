/* SPDX-License-Identifier: MIT */
/* The per-cgroup families of /metrics, written from a CgroupScrape. */
#include <event2/buffer.h>
#include <stdio.h>

#include "metrics-cgroup.h"
#include "metrics-text.h"
#include "util.h"

typedef enum CgroupValue {
        VALUE_PSI_SOME,
        VALUE_PSI_FULL,
        VALUE_OOM_KILLS,
        VALUE_MEMORY_CURRENT,
} CgroupValue;

typedef struct CgroupFamily {
        const char *name, *type, *help;
        CgroupValue value;
        CgroupResource resource;
} CgroupFamily;

static const CgroupFamily families[] = {
        { "pressured_cgroup_pressure_memory_waiting_seconds_total", "counter",
          "Time some tasks of the cgroup waited for memory (PSI some total), in seconds.",
          VALUE_PSI_SOME, CGROUP_RESOURCE_MEMORY },
        { "pressured_cgroup_pressure_memory_stalled_seconds_total", "counter",
          "Time all non-idle tasks of the cgroup stalled on memory at once (PSI full total), in seconds.",
          VALUE_PSI_FULL, CGROUP_RESOURCE_MEMORY },
        { "pressured_cgroup_pressure_io_waiting_seconds_total", "counter",
          "Time some tasks of the cgroup waited for IO (PSI some total), in seconds.",
          VALUE_PSI_SOME, CGROUP_RESOURCE_IO },
        { "pressured_cgroup_pressure_io_stalled_seconds_total", "counter",
          "Time all non-idle tasks of the cgroup stalled on IO at once (PSI full total), in seconds.",
          VALUE_PSI_FULL, CGROUP_RESOURCE_IO },
        { "pressured_cgroup_pressure_cpu_waiting_seconds_total", "counter",
          "Time some runnable tasks of the cgroup waited for a CPU (PSI some total), in seconds.",
          VALUE_PSI_SOME, CGROUP_RESOURCE_CPU },
        { "pressured_cgroup_pressure_cpu_stalled_seconds_total", "counter",
          "Time all non-idle tasks of the cgroup waited for a CPU at once (PSI full total), in seconds.",
          VALUE_PSI_FULL, CGROUP_RESOURCE_CPU },
        { "pressured_cgroup_memory_oom_kills_total", "counter",
          "Processes of the cgroup killed by the kernel's OOM killer (memory.events oom_kill).",
          VALUE_OOM_KILLS, 0 },
        { "pressured_cgroup_memory_current_bytes", "gauge",
          "Memory charged to the cgroup and its descendants (memory.current), in bytes.",
          VALUE_MEMORY_CURRENT, 0 },
};

/* Whether @s has a value for @f; if so it is in *ret (microseconds for PSI, else the number). */
static bool family_value(const CgroupFamily *f, const CgroupSample *s, uint64_t *ret) {
        const PsiStats *psi = &s->psi[f->resource];

        switch (f->value) {
        case VALUE_PSI_SOME:
                *ret = psi->some.total_us;
                return s->has_psi[f->resource] && psi->has_some;
        case VALUE_PSI_FULL:
                *ret = psi->full.total_us;
                return s->has_psi[f->resource] && psi->has_full;
        case VALUE_OOM_KILLS:
                *ret = s->oom_kills;
                return s->has_oom_kills;
        case VALUE_MEMORY_CURRENT:
                *ret = s->memory_current;
                return s->has_memory_current;
        }
        return false;
}

static void write_family(struct evbuffer *out, const CgroupFamily *f, const CgroupScrape *s) {
        bool header = false;

        for (size_t i = 0; i < s->n_samples; i++) {
                MetricsLabel l = { "cgroup", s->samples[i].path };
                uint64_t v;

                if (!family_value(f, &s->samples[i], &v))
                        continue;
                if (!header) {
                        metrics_write_header(out, f->name, f->type, f->help);
                        header = true;
                }
                if (f->value == VALUE_PSI_SOME || f->value == VALUE_PSI_FULL)
                        metrics_write_sample_seconds(out, f->name, &l, 1, v);
                else
                        metrics_write_sample_u64(out, f->name, &l, 1, v);
        }
}

void metrics_write_cgroups(struct evbuffer *out, const CgroupScrape *s) {
        for (size_t i = 0; i < ELEMENTSOF(families); i++)
                write_family(out, &families[i], s);
        metrics_write_header(out, METRICS_CGROUP_OMITTED, "gauge",
                             "Cgroups matching [Metrics] Cgroups= left out of this scrape because of MaxCgroups=.");
        metrics_write_sample_u64(out, METRICS_CGROUP_OMITTED, NULL, 0, s->omitted);
}
