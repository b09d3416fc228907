/* SPDX-License-Identifier: MIT */
/*
 * The hook of `pressurectl watch --exec`: see hook.h. A run is spawned with
 * posix_spawnp() in a process group of its own (so a timeout kill reaches the
 * whole script, children included), stdin on /dev/null, stdout and stderr
 * shared with pressurectl (stdout on stderr with --json, which keeps stdout
 * for JSON), and the PRESSURE_* variables added to
 * pressurectl's environment. Its end is seen through a signalfd for SIGCHLD
 * (blocked while the hook exists), which works on every kernel and under
 * valgrind, where pidfd_open() does not. The run of the events and the
 * runs of warnings before a kill are each a HookRun: a pid, a deadline of
 * the next signal and what the messages name it by.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "duration.h"
#include "hook.h"
#include "util.h"
#include "vocabulary.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/*
 * The names the hook finds in its environment; any inherited value of them is replaced. The last,
 * PRESSURE_DEADLINE_US, is a warning's only: left out for other kinds.
 */
static const char *const env_names[] = {
        "PRESSURE_KIND",  "PRESSURE_LEVEL",     "PRESSURE_CGROUP", "PRESSURE_SOURCE", "PRESSURE_SEQ",
        "PRESSURE_MISSED", "PRESSURE_SYNTHETIC", "PRESSURE_EVENT",  "PRESSURE_COALESCED", "PRESSURE_DEADLINE_US",
};

/* What a run needs of an event, copied out of the library's pressure_event. */
typedef struct HookEvent {
        const char *kind, *level, *source; /* static strings, "" when the event has none */
        char *cgroup, *json;
        uint64_t seq, missed;
        uint64_t deadline_us;  /* a warning's; 0 for other kinds */
        bool synthetic;
} HookEvent;

/* One run of the hook: that of the events, or one of a warning before a kill. */
typedef struct HookRun {
        pid_t pid;             /* > 0 while it runs */
        uint64_t seq;          /* its event's seq, for the messages */
        uint64_t kill_at_usec; /* CLOCK_MONOTONIC of the next signal; UINT64_MAX: none */
        int kill_signal;       /* that signal: SIGTERM, then SIGKILL, then 0 */
        uint64_t grace_usec;   /* from SIGTERM to SIGKILL */
        bool prekill;          /* a warning's run: */
        bool done;             /* the done callback was called for it */
        uint64_t id, deadline_us;
        volatile sig_atomic_t *forward; /* its process group, for the signal handler */
} HookRun;

struct Hook {
        char *const *argv;
        uint64_t timeout_usec; /* 0: none */

        int sigchld_fd;        /* signalfd for SIGCHLD */
        sigset_t saved_mask;   /* the signal mask before SIGCHLD was blocked */

        HookRun run;                       /* the run of the events */
        HookRun prekill[HOOK_PREKILL_MAX]; /* the runs of warnings; pid 0: a free slot */
        HookPrekillDone done;
        void *done_userdata;

        /* The event waiting for the next run: pending_count > 0. */
        HookEvent pending;
        uint64_t pending_count;
};

/* The process groups of the runs, for the signal handler: [0] the events', then the warnings'; 0 for none. */
static volatile sig_atomic_t forward_pgids[1 + HOOK_PREKILL_MAX];

static void hook_event_clear(HookEvent *ev) {
        free(ev->cgroup);
        free(ev->json);
        *ev = (HookEvent) {};
}

static const char *str_or_empty(const char *s) {
        return s ? s : "";
}

static int hook_event_copy(const pressure_event *e, HookEvent *ret) {
        HookEvent ev = {
                .kind = str_or_empty(pressure_event_kind_to_string(pressure_event_get_kind(e))),
                .level = str_or_empty(pressure_level_to_string(pressure_event_get_level(e))),
                .source = str_or_empty(pressure_source_to_string(pressure_event_get_source(e))),
                .cgroup = strdup(str_or_empty(pressure_event_get_cgroup(e))),
                .json = strdup(str_or_empty(pressure_event_get_json(e))),
                .seq = pressure_event_get_seq(e),
                .missed = pressure_event_get_missed(e),
                .synthetic = pressure_event_is_synthetic(e),
        };

        if (!ev.cgroup || !ev.json) {
                hook_event_clear(&ev);
                return -ENOMEM;
        }
        *ret = ev;
        return 0;
}

static bool is_hook_variable(const char *entry) {
        for (size_t i = 0; i < ELEMENTSOF(env_names); i++) {
                size_t n = strlen(env_names[i]);

                if (strncmp(entry, env_names[i], n) == 0 && entry[n] == '=')
                        return true;
        }
        return false;
}

static void strv_freep(char ***p) {
        if (*p)
                for (char **s = *p; *s; s++)
                        free(*s);
        free(*p);
}

/* pressurectl's environment without any PRESSURE_* of ours, then the event's variables. */
static int hook_env(const HookEvent *ev, uint64_t coalesced, char ***ret) {
        _cleanup_(strv_freep) char **env = NULL;
        size_t n = 0, k = 0;

        while (environ && environ[n])
                n++;
        env = calloc(n + ELEMENTSOF(env_names) + 1, sizeof(char *));
        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (is_hook_variable(environ[i]))
                        continue;
                env[k] = strdup(environ[i]);
                if (!env[k])
                        return -ENOMEM;
                k++;
        }

        const char *values[ELEMENTSOF(env_names)];
        char seq[24], missed[24], count[24], deadline[24] = "";

        (void) snprintf(seq, sizeof(seq), "%" PRIu64, ev->seq);
        (void) snprintf(missed, sizeof(missed), "%" PRIu64, ev->missed);
        (void) snprintf(count, sizeof(count), "%" PRIu64, coalesced);
        if (ev->deadline_us > 0)
                (void) snprintf(deadline, sizeof(deadline), "%" PRIu64, ev->deadline_us);
        values[0] = ev->kind;
        values[1] = ev->level;
        values[2] = ev->cgroup;
        values[3] = ev->source;
        values[4] = seq;
        values[5] = missed;
        values[6] = ev->synthetic ? "1" : "0";
        values[7] = ev->json;
        values[8] = count;
        values[9] = deadline;
        for (size_t i = 0; i < ELEMENTSOF(env_names) - (ev->deadline_us == 0); i++) {
                if (asprintf(&env[k], "%s=%s", env_names[i], values[i]) < 0) {
                        env[k] = NULL;
                        return -ENOMEM;
                }
                k++;
        }
        *ret = TAKE_PTR(env);
        return 0;
}

static void hook_run_init(HookRun *run, volatile sig_atomic_t *forward) {
        *run = (HookRun) { .kill_at_usec = UINT64_MAX, .forward = forward };
}

int hook_new(char *const *argv, uint64_t timeout_usec, Hook **ret) {
        sigset_t chld;
        Hook *h;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->argv = argv;
        h->timeout_usec = timeout_usec;
        hook_run_init(&h->run, &forward_pgids[0]);
        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                hook_run_init(&h->prekill[i], &forward_pgids[1 + i]);

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &chld, &h->saved_mask) < 0) {
                r = -errno;
                free(h);
                return r;
        }
        h->sigchld_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (h->sigchld_fd < 0) {
                r = -errno;
                (void) sigprocmask(SIG_SETMASK, &h->saved_mask, NULL);
                free(h);
                return r;
        }
        *ret = h;
        return 0;
}

void hook_set_prekill_done(Hook *h, HookPrekillDone done, void *userdata) {
        h->done = done;
        h->done_userdata = userdata;
}

/* What the messages call @run's event: "event seq 3", "warning 12" (a warning before a kill). */
static const char *run_name(char buf[static 64], const HookRun *run) {
        if (run->prekill)
                (void) snprintf(buf, 64, "warning %" PRIu64, run->id);
        else
                (void) snprintf(buf, 64, "event seq %" PRIu64, run->seq);
        return buf;
}

/* The warning of @run needs no more of the hook: say so, once. */
static void hook_prekill_done(Hook *h, HookRun *run) {
        if (!run->prekill || run->done)
                return;
        run->done = true;
        if (h->done)
                h->done(run->id, run->deadline_us, h->done_userdata);
}

static void hook_run_done(Hook *h, HookRun *run) {
        hook_prekill_done(h, run);
        *run->forward = 0;
        hook_run_init(run, run->forward);
}

static void hook_run_kill(Hook *h, HookRun *run) {
        if (run->pid <= 0)
                return;
        (void) kill(-run->pid, SIGKILL);
        (void) waitpid(run->pid, NULL, 0);
        run->done = true; /* the hook goes: nothing to say of its warning */
        hook_run_done(h, run);
}

Hook *hook_free(Hook *h) {
        if (!h)
                return NULL;
        hook_run_kill(h, &h->run);
        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                hook_run_kill(h, &h->prekill[i]);
        hook_event_clear(&h->pending);
        safe_close(h->sigchld_fd);
        (void) sigprocmask(SIG_SETMASK, &h->saved_mask, NULL);
        free(h);
        return NULL;
}

void hook_freep(Hook **h) {
        *h = hook_free(*h);
}

/* posix_spawn's settings of a run; 0 or a positive errno (and nothing to destroy). */
static int spawn_setup(posix_spawnattr_t *attr, posix_spawn_file_actions_t *actions) {
        sigset_t mask, defaults;
        int r;

        sigemptyset(&mask);
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGINT);
        sigaddset(&defaults, SIGTERM);
        sigaddset(&defaults, SIGHUP);
        sigaddset(&defaults, SIGPIPE);
        r = posix_spawnattr_init(attr);
        if (r != 0)
                return r;
        r = posix_spawn_file_actions_init(actions);
        if (r != 0) {
                (void) posix_spawnattr_destroy(attr);
                return r;
        }
        /* A process group of its own, the default signal mask and dispositions, stdin on /dev/null. */
        r = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawnattr_setpgroup(attr, 0);
        if (r == 0)
                r = posix_spawnattr_setsigmask(attr, &mask);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(attr, &defaults);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        /* With --json, pressurectl's stdout carries JSON only: the hook writes to stderr. */
        if (r == 0 && cli_get_json())
                r = posix_spawn_file_actions_adddup2(actions, STDERR_FILENO, STDOUT_FILENO);
        if (r != 0) {
                (void) posix_spawn_file_actions_destroy(actions);
                (void) posix_spawnattr_destroy(attr);
        }
        return r;
}

/*
 * Start @run for @ev standing for @coalesced events, for at most @limit_usec
 * before its first signal (0: no limit). Failures are reported; returns
 * whether it runs.
 */
static bool hook_spawn(Hook *h, HookRun *run, const HookEvent *ev, uint64_t coalesced, uint64_t limit_usec) {
        _cleanup_(strv_freep) char **env = NULL;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        sigset_t forwarded, saved;
        char name[64];
        pid_t pid;
        int r;

        run_name(name, run);
        r = hook_env(ev, coalesced, &env);
        if (r < 0) {
                cli_notice("hook: cannot build the environment of %s: %s", name, strerror(-r));
                return false;
        }
        r = spawn_setup(&attr, &actions);
        if (r != 0) {
                cli_notice("hook: cannot run '%s': %s", h->argv[0], strerror(r));
                return false;
        }
        /* A signal to pressurectl between the spawn and its forward slot would miss the new run: hold them. */
        sigemptyset(&forwarded);
        sigaddset(&forwarded, SIGINT);
        sigaddset(&forwarded, SIGTERM);
        sigaddset(&forwarded, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &forwarded, &saved);
        r = posix_spawnp(&pid, h->argv[0], &actions, &attr, h->argv, env);
        if (r == 0) {
                run->pid = pid;
                *run->forward = pid;
        }
        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        (void) posix_spawn_file_actions_destroy(&actions);
        (void) posix_spawnattr_destroy(&attr);
        if (r != 0) {
                cli_notice("hook: cannot run '%s' (%s): %s", h->argv[0], name, strerror(r));
                return false;
        }
        if (limit_usec > 0) {
                run->kill_at_usec = now_usec(CLOCK_MONOTONIC) + limit_usec;
                run->kill_signal = SIGTERM;
                run->grace_usec = MIN(limit_usec, HOOK_KILL_GRACE_MAX_USEC);
        }
        return true;
}

/* Start the run of the events for @ev, standing for @coalesced events. */
static void hook_start(Hook *h, const HookEvent *ev, uint64_t coalesced) {
        h->run.seq = ev->seq;
        (void) hook_spawn(h, &h->run, ev, coalesced, h->timeout_usec);
}

/* Run @ev (taken over) at once, or keep it for the next run while one is going on. */
static int hook_submit_copy(Hook *h, HookEvent ev) {
        if (h->run.pid > 0) {
                /* A run is going on: this event replaces the waiting one, and stands for it too. */
                hook_event_clear(&h->pending);
                h->pending = ev;
                h->pending_count++;
                return 0;
        }
        hook_start(h, &ev, 1);
        hook_event_clear(&ev);
        return 0;
}

int hook_submit(Hook *h, const pressure_event *e) {
        HookEvent ev;
        int r;

        r = hook_event_copy(e, &ev);
        if (r < 0) {
                cli_notice("hook: cannot keep event seq %" PRIu64 ": %s",
                        pressure_event_get_seq(e), strerror(-r));
                return r;
        }
        return hook_submit_copy(h, ev);
}

int hook_submit_level(Hook *h, const char *cgroup, const char *level, uint64_t seq, uint64_t missed,
                      const char *json) {
        /* HookEvent holds static names: those of the interface. */
        HookEvent ev = { .kind = IDL_EVENT_KIND_NAME(LEVEL), .level = "", .source = "", .cgroup = strdup(cgroup),
                         .json = strdup(json), .seq = seq, .missed = missed };

        for (size_t i = 0; i < _IDL_STREAM_LEVEL_MAX; i++)
                if (streq(level, idl_stream_level_table[i]))
                        ev.level = idl_stream_level_table[i];
        if (!ev.cgroup || !ev.json) {
                hook_event_clear(&ev);
                cli_notice("hook: cannot keep event seq %" PRIu64 ": %s", seq, strerror(ENOMEM));
                return -ENOMEM;
        }
        return hook_submit_copy(h, ev);
}

/* A free slot for a warning's run, or NULL. */
static HookRun *prekill_slot(Hook *h) {
        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                if (h->prekill[i].pid <= 0)
                        return &h->prekill[i];
        return NULL;
}

int hook_submit_prekill(Hook *h, const HookPrekill *p) {
        HookEvent ev = { .kind = IDL_EVENT_KIND_NAME(PREKILL), .level = "", .source = "",
                         .cgroup = (char *) p->cgroup, .json = (char *) p->json, .seq = p->seq,
                         .missed = p->missed, .deadline_us = p->deadline_us };
        HookRun none = { .prekill = true, .id = p->id, .deadline_us = p->deadline_us };
        uint64_t now = now_usec(CLOCK_MONOTONIC), limit;
        HookRun *run = prekill_slot(h);

        if (p->deadline_us <= now)
                cli_notice("hook: warning %" PRIu64 " came after its deadline; not running '%s' for it", p->id,
                           h->argv[0]);
        else if (!run)
                cli_notice("hook: %d runs for warnings go on already; not running '%s' for warning %" PRIu64,
                           HOOK_PREKILL_MAX, h->argv[0], p->id);
        else {
                run->prekill = true;
                run->id = p->id;
                run->seq = p->seq;
                run->deadline_us = p->deadline_us;
                limit = p->deadline_us - now;
                if (h->timeout_usec > 0)
                        limit = MIN(limit, h->timeout_usec);
                if (hook_spawn(h, run, &ev, 1, limit))
                        return 0;
                hook_run_init(run, run->forward);
        }
        hook_prekill_done(h, &none);
        return 0;
}

static bool hook_any_prekill(const Hook *h) {
        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                if (h->prekill[i].pid > 0)
                        return true;
        return false;
}

int hook_get_fd(const Hook *h) {
        return h->run.pid > 0 || hook_any_prekill(h) ? h->sigchld_fd : -1;
}

uint64_t hook_get_timeout(const Hook *h) {
        uint64_t at = h->run.pid > 0 ? h->run.kill_at_usec : UINT64_MAX, now;

        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                if (h->prekill[i].pid > 0)
                        at = MIN(at, h->prekill[i].kill_at_usec);
        if (at == UINT64_MAX)
                return UINT64_MAX;
        now = now_usec(CLOCK_MONOTONIC);
        return at > now ? at - now : 0;
}

/* Reap @run if it ended and say how, unless it ended well. Returns true if it ended. */
static bool hook_reap(Hook *h, HookRun *run) {
        siginfo_t si = {};
        char name[64];

        if (waitid(P_PID, (id_t) run->pid, &si, WEXITED | WNOHANG) < 0) {
                cli_notice("hook: cannot wait for '%s': %m", h->argv[0]);
                return false;
        }
        if (si.si_pid == 0)
                return false;
        run_name(name, run);
        if (si.si_code == CLD_EXITED && si.si_status != 0)
                cli_notice("hook '%s' (%s) exited with status %d", h->argv[0], name, si.si_status);
        else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
                cli_notice("hook '%s' (%s) was killed by signal SIG%s%s", h->argv[0], name,
                           strna(sigabbrev_np(si.si_status)), si.si_code == CLD_DUMPED ? " (core dumped)" : "");
        hook_run_done(h, run);
        return true;
}

/*
 * Signal @run if it is over its time: SIGTERM at its timeout or its warning's deadline (the warning
 * is then done with), SIGKILL after the grace.
 */
static void hook_check_time(Hook *h, HookRun *run) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char a[32], b[32], name[64];

        if (run->pid <= 0 || run->kill_signal == 0 || now < run->kill_at_usec)
                return;
        run_name(name, run);
        format_seconds(h->timeout_usec, a, sizeof(a));
        format_seconds(run->grace_usec, b, sizeof(b));
        if (run->kill_signal == SIGKILL) {
                cli_notice("hook '%s' (%s) still running %s s after SIGTERM, sending SIGKILL", h->argv[0], name, b);
                run->kill_signal = 0;
                run->kill_at_usec = UINT64_MAX;
                (void) kill(-run->pid, SIGKILL);
                return;
        }
        if (run->prekill && now >= run->deadline_us)
                cli_notice("hook '%s' (%s) is still running at the warning's deadline, sending SIGTERM", h->argv[0],
                           name);
        else
                cli_notice("hook '%s' (%s) ran over its %s s timeout, sending SIGTERM", h->argv[0], name, a);
        run->kill_signal = SIGKILL;
        run->kill_at_usec = now + run->grace_usec;
        (void) kill(-run->pid, SIGTERM);
        hook_prekill_done(h, run);
}

static void hook_process_run(Hook *h, HookRun *run) {
        if (run->pid > 0 && !hook_reap(h, run))
                hook_check_time(h, run);
}

void hook_process(Hook *h) {
        struct signalfd_siginfo si[8];

        /* Empty the signalfd; whether a run ended, waitid() says (SIGCHLDs merge, and may be stale). */
        while (read(h->sigchld_fd, si, sizeof(si)) > 0)
                ;
        for (size_t i = 0; i < HOOK_PREKILL_MAX; i++)
                hook_process_run(h, &h->prekill[i]);
        hook_process_run(h, &h->run);
        if (h->run.pid <= 0 && h->pending_count > 0) {
                HookEvent ev = h->pending;
                uint64_t n = h->pending_count;

                h->pending = (HookEvent) {};
                h->pending_count = 0;
                hook_start(h, &ev, n);
                hook_event_clear(&ev);
        }
}

bool hook_busy(const Hook *h) {
        return h->run.pid > 0 || h->pending_count > 0 || hook_any_prekill(h);
}

void hook_drop_pending(Hook *h) {
        hook_event_clear(&h->pending);
        h->pending_count = 0;
}

void hook_drain(Hook *h) {
        while (hook_busy(h)) {
                uint64_t left = hook_get_timeout(h);
                struct pollfd p = { .fd = hook_get_fd(h), .events = POLLIN };
                int ms = left == UINT64_MAX ? -1 : (int) MIN((left + 999) / 1000, (uint64_t) INT32_MAX);

                if (p.fd >= 0 && poll(&p, 1, ms) < 0 && errno != EINTR) {
                        cli_notice("hook: cannot wait for '%s': %m", h->argv[0]);
                        return;
                }
                hook_process(h);
        }
}

static void forward_signal(int sig) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        int saved_errno = errno;

        for (size_t i = 0; i < ELEMENTSOF(forward_pgids); i++) {
                pid_t pgid = forward_pgids[i];

                if (pgid > 0)
                        (void) kill(-pgid, sig);
        }
        /* Die of the signal as if there were no handler: it is blocked here, and comes at the return. */
        (void) sigaction(sig, &sa, NULL);
        (void) raise(sig);
        errno = saved_errno;
}

void hook_forward_signals(void) {
        static const int signals[] = { SIGINT, SIGTERM, SIGHUP };

        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                struct sigaction old, sa = { .sa_handler = forward_signal };

                if (sigaction(signals[i], NULL, &old) < 0 || old.sa_handler == SIG_IGN)
                        continue;
                sigemptyset(&sa.sa_mask);
                (void) sigaction(signals[i], &sa, NULL);
        }
}
