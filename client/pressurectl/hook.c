/* SPDX-License-Identifier: MIT */
/*
 * The hook of `pressurectl watch --exec`: see hook.h. A run is spawned with
 * posix_spawnp() in a process group of its own (so a timeout kill reaches the
 * whole script, children included), stdin on /dev/null, stdout and stderr
 * shared with pressurectl (stdout on stderr with --json, which keeps stdout
 * for JSON), and the PRESSURE_* variables added to
 * pressurectl's environment. Its end is seen through a signalfd for SIGCHLD
 * (blocked while the hook exists), which works on every kernel and under
 * valgrind, where pidfd_open() does not.
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
#include "hook.h"
#include "util.h"
#include "vocabulary.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* The names the hook finds in its environment; any inherited value of them is replaced. */
static const char *const env_names[] = {
        "PRESSURE_KIND",  "PRESSURE_LEVEL",     "PRESSURE_CGROUP", "PRESSURE_SOURCE", "PRESSURE_SEQ",
        "PRESSURE_MISSED", "PRESSURE_SYNTHETIC", "PRESSURE_EVENT",  "PRESSURE_COALESCED",
};

/* What a run needs of an event, copied out of the library's pressure_event. */
typedef struct HookEvent {
        const char *kind, *level, *source; /* static strings, "" when the event has none */
        char *cgroup, *json;
        uint64_t seq, missed;
        bool synthetic;
} HookEvent;

struct Hook {
        char *const *argv;
        uint64_t timeout_usec; /* 0: none */

        int sigchld_fd;        /* signalfd for SIGCHLD */
        sigset_t saved_mask;   /* the signal mask before SIGCHLD was blocked */

        /* The run going on: pid > 0. */
        pid_t pid;
        uint64_t run_seq;      /* its event's seq, for the messages */
        uint64_t kill_at_usec; /* CLOCK_MONOTONIC of the next signal; UINT64_MAX: none */
        int kill_signal;       /* that signal: SIGTERM, then SIGKILL, then 0 */

        /* The event waiting for the next run: pending_count > 0. */
        HookEvent pending;
        uint64_t pending_count;
};

/* The process group of the running hook, for the signal handler; 0 when none runs. */
static volatile sig_atomic_t forward_pgid;

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
        char seq[24], missed[24], count[24];

        (void) snprintf(seq, sizeof(seq), "%" PRIu64, ev->seq);
        (void) snprintf(missed, sizeof(missed), "%" PRIu64, ev->missed);
        (void) snprintf(count, sizeof(count), "%" PRIu64, coalesced);
        values[0] = ev->kind;
        values[1] = ev->level;
        values[2] = ev->cgroup;
        values[3] = ev->source;
        values[4] = seq;
        values[5] = missed;
        values[6] = ev->synthetic ? "1" : "0";
        values[7] = ev->json;
        values[8] = count;
        for (size_t i = 0; i < ELEMENTSOF(env_names); i++) {
                if (asprintf(&env[k], "%s=%s", env_names[i], values[i]) < 0) {
                        env[k] = NULL;
                        return -ENOMEM;
                }
                k++;
        }
        *ret = TAKE_PTR(env);
        return 0;
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
        h->kill_at_usec = UINT64_MAX;

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

static void hook_run_done(Hook *h) {
        h->pid = 0;
        forward_pgid = 0;
        h->kill_at_usec = UINT64_MAX;
        h->kill_signal = 0;
}

Hook *hook_free(Hook *h) {
        if (!h)
                return NULL;
        if (h->pid > 0) {
                (void) kill(-h->pid, SIGKILL);
                (void) waitpid(h->pid, NULL, 0);
                hook_run_done(h);
        }
        hook_event_clear(&h->pending);
        safe_close(h->sigchld_fd);
        (void) sigprocmask(SIG_SETMASK, &h->saved_mask, NULL);
        free(h);
        return NULL;
}

void hook_freep(Hook **h) {
        *h = hook_free(*h);
}

/* Start a run for @ev standing for @coalesced events. Failures are reported and the event dropped. */
static void hook_spawn(Hook *h, const HookEvent *ev, uint64_t coalesced) {
        _cleanup_(strv_freep) char **env = NULL;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        sigset_t mask, defaults, forwarded, saved;
        pid_t pid;
        int r;

        r = hook_env(ev, coalesced, &env);
        if (r < 0) {
                cli_notice("hook: cannot build the environment of event seq %" PRIu64 ": %s",
                        ev->seq, strerror(-r));
                return;
        }

        sigemptyset(&mask);
        sigemptyset(&defaults);
        sigaddset(&defaults, SIGINT);
        sigaddset(&defaults, SIGTERM);
        sigaddset(&defaults, SIGHUP);
        sigaddset(&defaults, SIGPIPE);
        r = posix_spawnattr_init(&attr);
        if (r == 0) {
                r = posix_spawn_file_actions_init(&actions);
                if (r != 0)
                        (void) posix_spawnattr_destroy(&attr);
        }
        if (r != 0) {
                cli_notice("hook: cannot run '%s': %s", h->argv[0], strerror(r));
                return;
        }
        /* A process group of its own, the default signal mask and dispositions, stdin on /dev/null. */
        r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawnattr_setpgroup(&attr, 0);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &mask);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &defaults);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        /* With --json, pressurectl's stdout carries JSON only: the hook writes to stderr. */
        if (r == 0 && cli_get_json())
                r = posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
        /* A signal to pressurectl between the spawn and forward_pgid would miss the new run: hold them. */
        sigemptyset(&forwarded);
        sigaddset(&forwarded, SIGINT);
        sigaddset(&forwarded, SIGTERM);
        sigaddset(&forwarded, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &forwarded, &saved);
        if (r == 0)
                r = posix_spawnp(&pid, h->argv[0], &actions, &attr, h->argv, env);
        if (r == 0) {
                h->pid = pid;
                forward_pgid = pid;
        }
        (void) sigprocmask(SIG_SETMASK, &saved, NULL);
        (void) posix_spawn_file_actions_destroy(&actions);
        (void) posix_spawnattr_destroy(&attr);
        if (r != 0) {
                cli_notice("hook: cannot run '%s' (event seq %" PRIu64 "): %s", h->argv[0],
                        ev->seq, strerror(r));
                return;
        }

        h->run_seq = ev->seq;
        if (h->timeout_usec > 0) {
                h->kill_at_usec = now_usec(CLOCK_MONOTONIC) + h->timeout_usec;
                h->kill_signal = SIGTERM;
        }
}

/* Run @ev (taken over) at once, or keep it for the next run while one is going on. */
static int hook_submit_copy(Hook *h, HookEvent ev) {
        if (h->pid > 0) {
                /* A run is going on: this event replaces the waiting one, and stands for it too. */
                hook_event_clear(&h->pending);
                h->pending = ev;
                h->pending_count++;
                return 0;
        }
        hook_spawn(h, &ev, 1);
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

int hook_get_fd(const Hook *h) {
        return h->pid > 0 ? h->sigchld_fd : -1;
}

uint64_t hook_get_timeout(const Hook *h) {
        uint64_t now;

        if (h->pid <= 0 || h->kill_at_usec == UINT64_MAX)
                return UINT64_MAX;
        now = now_usec(CLOCK_MONOTONIC);
        return h->kill_at_usec > now ? h->kill_at_usec - now : 0;
}

static void format_seconds(char buf[static 32], uint64_t usec) {
        (void) snprintf(buf, 32, "%g s", (double) usec / 1e6);
}

/* Reap the run if it ended and say how, unless it ended well. Returns true if it ended. */
static bool hook_reap(Hook *h) {
        siginfo_t si = {};

        if (waitid(P_PID, (id_t) h->pid, &si, WEXITED | WNOHANG) < 0) {
                cli_notice("hook: cannot wait for '%s': %m", h->argv[0]);
                return false;
        }
        if (si.si_pid == 0)
                return false;
        if (si.si_code == CLD_EXITED && si.si_status != 0)
                cli_notice("hook '%s' (event seq %" PRIu64 ") exited with status %d", h->argv[0],
                        h->run_seq, si.si_status);
        else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
                cli_notice("hook '%s' (event seq %" PRIu64 ") was killed by signal SIG%s%s",
                        h->argv[0], h->run_seq, strna(sigabbrev_np(si.si_status)),
                        si.si_code == CLD_DUMPED ? " (core dumped)" : "");
        hook_run_done(h);
        return true;
}

/* Signal a run that is over its time: SIGTERM at the timeout, SIGKILL after the grace. */
static void hook_check_time(Hook *h) {
        uint64_t grace = MIN(h->timeout_usec, HOOK_KILL_GRACE_MAX_USEC);
        char a[32], b[32];

        if (h->pid <= 0 || h->kill_signal == 0 || now_usec(CLOCK_MONOTONIC) < h->kill_at_usec)
                return;
        format_seconds(a, h->timeout_usec);
        if (h->kill_signal == SIGTERM) {
                cli_notice("hook '%s' (event seq %" PRIu64 ") ran over its %s timeout, sending SIGTERM", h->argv[0],
                           h->run_seq, a);
                h->kill_signal = SIGKILL;
                h->kill_at_usec = now_usec(CLOCK_MONOTONIC) + grace;
                (void) kill(-h->pid, SIGTERM);
        } else {
                format_seconds(b, grace);
                cli_notice("hook '%s' (event seq %" PRIu64 ") still running %s after SIGTERM, sending SIGKILL",
                           h->argv[0], h->run_seq, b);
                h->kill_signal = 0;
                h->kill_at_usec = UINT64_MAX;
                (void) kill(-h->pid, SIGKILL);
        }
}

void hook_process(Hook *h) {
        struct signalfd_siginfo si[8];

        /* Empty the signalfd; whether the run ended, waitid() says (SIGCHLDs merge, and may be stale). */
        while (read(h->sigchld_fd, si, sizeof(si)) > 0)
                ;
        if (h->pid > 0 && !hook_reap(h))
                hook_check_time(h);
        if (h->pid <= 0 && h->pending_count > 0) {
                HookEvent ev = h->pending;
                uint64_t n = h->pending_count;

                h->pending = (HookEvent) {};
                h->pending_count = 0;
                hook_spawn(h, &ev, n);
                hook_event_clear(&ev);
        }
}

bool hook_busy(const Hook *h) {
        return h->pid > 0 || h->pending_count > 0;
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
        pid_t pgid = forward_pgid;

        if (pgid > 0)
                (void) kill(-pgid, sig);
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
