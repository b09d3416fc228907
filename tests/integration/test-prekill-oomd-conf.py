#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The deadline of a warning follows systemd-oomd's own
PrekillHookTimeoutSec=, read where oomd reads it, at each call, less 250
ms; [Prekill] Deadline= overrides it.

The daemon runs in a private mount namespace in which /etc/systemd,
/run/systemd, /usr/local/lib and /usr/lib/systemd are directories of the
test (bind mounts): nothing of this machine's configuration is read or
written. Each step changes oomd's files, without a reload, and checks the
deadline the next warning carries (deadline_us - monotonic_us, both the
daemon's): none (1 s, oomd's least, less the margin), a vendor drop-in, an
administrator's drop-in sorting after it, a runtime one after both, the
runtime one masked by a link to /dev/null in /etc, a value oomd ignores,
then Deadline= by a reload.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402
import prekill_test as pk  # noqa: E402

check, check_eq = pt.check, pt.check_eq

# The directories oomd reads, and the test's own in their place.
MOUNTS = (('etc-systemd', '/etc/systemd'), ('run-systemd', '/run/systemd'),
          ('usr-local-lib', '/usr/local/lib'), ('usr-lib-systemd', '/usr/lib/systemd'))


class NamespacedDaemon(pt.Daemon):
    """The daemon in a private mount namespace over the test's tree @tree."""

    def __init__(self, tree, **kw):
        super().__init__(**kw)
        self.tree = tree

    def command(self):
        binds = '; '.join(f'mount --bind {os.path.join(self.tree, src)} {dst}' for src, dst in MOUNTS)
        return ['unshare', '--mount', '--propagation', 'private', 'sh', '-ec', binds + '; exec "$@"',
                'sh'] + super().command()


def write(tree, rel, text):
    path = os.path.join(tree, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def deadline_after(d, hook, victim):
    """A warning now: how long after its call its deadline is, in microseconds."""
    kills = pt.Varlink(d.socket)
    kills.subscribe(kills=True, cgroup=victim)
    oomd = pk.Oomd(hook)
    oomd.notify(victim)
    ev = pk.event(kills)
    pk.acknowledge(d.socket, ev['id'])
    check_eq(oomd.answer(), {'parameters': {}}, 'answered')
    kills.close()
    oomd.close()
    return ev['deadline_us'] - ev['monotonic_us']


def main():
    pt.require_root('a private mount namespace and real cgroups')
    for tool in ('unshare', 'mount'):
        if not pt.shutil.which(tool):
            pt.skip(f'{tool} (util-linux, mount) is not installed')
    r = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'true'], capture_output=True, text=True)
    if r.returncode != 0:
        pt.skip(f'no private mount namespace here: {r.stderr.strip()}')
    tree = pt.tempfile.mkdtemp(prefix='pressured-oomd-conf-')
    try:
        for src, _ in MOUNTS:
            os.mkdir(os.path.join(tree, src))
        with pt.quiet_cgroup() as victim:
            d = NamespacedDaemon(tree)
            hook = os.path.join(d.tmpdir, 'hook')
            d.write_config(f'[Prekill]\nSocket={hook}\n')
            with d:
                check_eq(deadline_after(d, hook, victim), 750_000, 'no PrekillHookTimeoutSec=: 1 s less 250 ms')
                write(tree, 'usr-lib-systemd/oomd.conf.d/10-vendor.conf', '[OOM]\nPrekillHookTimeoutSec=3s\n')
                check_eq(deadline_after(d, hook, victim), 2_750_000, 'a vendor drop-in, read without a reload')
                write(tree, 'etc-systemd/oomd.conf.d/50-admin.conf', '[OOM]\nPrekillHookTimeoutSec=5s\n')
                check_eq(deadline_after(d, hook, victim), 4_750_000, 'the administrator\'s drop-in sorts after it')
                write(tree, 'run-systemd/oomd.conf.d/60-runtime.conf', '[OOM]\nPrekillHookTimeoutSec=1min 500ms\n')
                check_eq(deadline_after(d, hook, victim), 60_250_000, 'a runtime drop-in after both, a time span')
                os.symlink('/dev/null', os.path.join(tree, 'etc-systemd/oomd.conf.d/60-runtime.conf'))
                check_eq(deadline_after(d, hook, victim), 4_750_000, 'masked by a link to /dev/null in /etc')
                write(tree, 'usr-local-lib/systemd/oomd.conf.d/70-local.conf', '[OOM]\nPrekillHookTimeoutSec=500ms\n')
                check_eq(deadline_after(d, hook, victim), 4_750_000, 'a value oomd ignores (below 1 s) changes nothing')
                write(tree, 'usr-local-lib/systemd/oomd.conf.d/70-local.conf', '[OOM]\nPrekillHookTimeoutSec=2s\n')
                check_eq(deadline_after(d, hook, victim), 1_750_000, '/usr/local/lib is read too')
                d.write_config(f'[Prekill]\nSocket={hook}\nDeadline=1.5s\n')
                v = pt.Varlink(d.socket)
                check_eq(v.call_sync('io.pressured.Reload'), {'parameters': {}}, 'reload')
                v.close()
                check_eq(deadline_after(d, hook, victim), 1_500_000, '[Prekill] Deadline= wins')
                log = d.log()
            check('less 250ms' in log, 'the log says where the deadline came from', log[-2000:])
    finally:
        pt.shutil.rmtree(tree, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
