/* SPDX-License-Identifier: MIT */
/* The table of source operations; opening, closing and describing a Source. */
#include "event-util.h"
#include "source.h"
#include "util.h"

static const SourceOps *const source_ops[_SOURCE_MAX] = {
        [SOURCE_PSI] = &source_psi_ops,
        [SOURCE_VMPRESSURE] = &source_vmpressure_ops,
        [SOURCE_MEMORY_EVENTS] = &source_memory_events_ops,
        [SOURCE_PROTECTION] = &source_protection_ops,
        [SOURCE_KILLS] = &source_kills_ops,
};

const SourceOps *source_ops_get(SourceType t) {
        return t >= 0 && t < _SOURCE_MAX ? source_ops[t] : NULL;
}

static int source_init(Source *s, SourceEnv *env, const SourceCallbacks *cb, const SourceParams *p) {
        if (!source_ops_get(p->type))
                return -EINVAL;
        *s = (Source) {
                .env = env,
                .cb = cb,
                .type = p->type,
                .resource = p->type == SOURCE_PSI ? p->resource : RESOURCE_MEMORY,
                .requested = p->psi,
                .used = p->psi,
                .vm_level = p->vm_level,
                .vm_mode = p->vm_mode,
                .fd = -1,
                .aux_fd = -1,
                .last_state = -1,
                .cgroup = strdup(p->cgroup),
        };
        return s->cgroup ? 0 : -ENOMEM;
}

int source_open(Source *s, SourceEnv *env, const SourceCallbacks *cb, const SourceParams *p, int dirfd,
                SourceFailure *e) {
        int k = source_init(s, env, cb, p);

        if (k < 0)
                return k;
        k = source_ops_get(p->type)->open(s, dirfd, e);
        if (k < 0) {
                /* Nothing of a failed registration may stay behind. */
                source_close(s);
                return k;
        }
        s->ops = source_ops_get(p->type);
        return 0;
}

int source_adopt(Source *s, SourceEnv *env, const SourceCallbacks *cb, const SourceParams *p,
                 const SnapshotRegistration *saved, int fd, SourceFailure *e) {
        const SourceOps *ops = source_ops_get(p->type);
        int k = source_init(s, env, cb, p);

        if (k < 0) {
                safe_close(fd);
                return k;
        }
        s->requested = saved->requested;
        s->used = saved->used;
        s->adjusted = saved->adjusted;
        s->dir_ino = saved->dir_ino;
        if (ops->adopt && fd >= 0)
                k = ops->adopt(s, fd, e);
        else {
                safe_close(fd);
                /* Written anew: what the kernel accepted last time. */
                s->requested = saved->used.window_us ? saved->used : saved->requested;
                k = ops->open(s, -1, e);
                s->requested = saved->requested;
        }
        if (k < 0) {
                source_close(s);
                return k;
        }
        s->ops = ops;
        return 0;
}

void source_restore(Source *s, const SnapshotRegistration *saved) {
        if (s->ops && s->ops->restore)
                s->ops->restore(s, saved);
}

int source_export(const Source *s, SnapshotRegistration *ret) {
        ret->requested = s->requested;
        ret->used = s->used;
        ret->adjusted = s->adjusted;
        ret->dir_ino = s->dir_ino;
        ret->last_events = s->last_events;
        ret->last_state = s->last_state;
        return s->ops && s->ops->export ? s->ops->export(s, ret) : 0;
}

int source_store_fd(const Source *s) {
        return s->ops && s->ops->adopt ? s->fd : -1;
}

void source_close(Source *s) {
        if (s->ops && s->ops->close)
                s->ops->close(s);
        s->ops = NULL;
        event_free_and_null(&s->ev);
        event_free_and_null(&s->report);
        s->woke = 0;
        s->fd = safe_close(s->fd);
        s->aux_fd = safe_close(s->aux_fd);
        free(s->cgroup);
        s->cgroup = NULL;
}

int source_state(Source *s, SubscribedState *ret) {
        *ret = (SubscribedState) {};
        return s->ops && s->ops->state ? s->ops->state(s, ret) : 0;
}

int source_read_psi(const Source *s, PsiStats *ret) {
        if (s->type != SOURCE_PSI)
                return -EOPNOTSUPP;
        return psi_stats_read(s->fd, ret);
}

char *source_describe(const Source *s, char *buf, size_t size) {
        char trigger[PSI_TRIGGER_FORMAT_MAX];

        switch (s->type) {
        case SOURCE_PSI:
                if (psi_trigger_format(&s->used, PSI_TRIGGER_FORMAT_CONFIG, trigger, sizeof(trigger)) < 0)
                        snprintf(trigger, sizeof(trigger), "?");
                /* Memory is the default and goes without saying. */
                snprintf(buf, size, "the %s%sPSI trigger \"%s\"",
                         s->resource != RESOURCE_MEMORY ? resource_to_string(s->resource) : "",
                         s->resource != RESOURCE_MEMORY ? " " : "", trigger);
                break;
        case SOURCE_VMPRESSURE:
                snprintf(buf, size, "the vmpressure registration \"%s,%s\"", level_to_string(s->vm_level),
                         vmpressure_mode_to_string(s->vm_mode));
                break;
        case SOURCE_MEMORY_EVENTS:
                snprintf(buf, size, "the memory.events watch");
                break;
        case SOURCE_PROTECTION:
                snprintf(buf, size, "the protection tracking");
                break;
        default:
                snprintf(buf, size, "the %s watch", strna(source_type_to_string(s->type)));
        }
        return buf;
}
