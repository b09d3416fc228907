#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real OOM kill in the cgroup v1 memory hierarchy, heard by a kills
subscription on a hybrid host (cgroup2 without the memory controller, the
cgroup made in both hierarchies as systemd makes its units): a process that
grows past the 32M limit of its v1 memory cgroup is killed by the kernel,
and the subscriber gets one "killed" event by the kernel, reason oom_kill,
on the cgroup; "subscribed" names the kernel among the killers and says
why systemd-oomd cannot report (no system bus here). pressurectl watch
--kills says the same in its header and prints the kill.

Skipped where it cannot happen: without root, without a cgroup v1 memory
hierarchy with memory.oom_control's oom_kill (Linux 4.13), or where
cgroup2 has the memory controller (memory.events reports there)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

NO_BUS = {'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/pressured-test-no-bus'}
HOG = 'b = []\nwhile True:\n    b.append(bytearray(1 << 20))\n'


def limit_swap(v1dir):
    """memory+swap as low as memory, so that the hog is killed, not swapped out."""
    path = os.path.join(v1dir, 'memory.memsw.limit_in_bytes')
    if os.path.exists(path):
        with open(path, 'w') as f:
            f.write('32M')


def main():
    pt.require_root('it makes real cgroups and runs a process into their memory limit')
    if not pt.have_v1_memory():
        pt.skip('no cgroup v1 memory hierarchy: its kills are not reported through memory.oom_control')
    with pt.real_cgroups(v1=True, v2=True, limit='32M') as (name, v1dir, v2dir):
        if os.path.exists(os.path.join(v2dir, 'memory.events')):
            pt.skip('cgroup2 has the memory controller here: memory.events reports the kills (test-kills-real)')
        if kl.v1_oom_kill(v1dir) is None:
            pt.skip('memory.oom_control has no oom_kill line (Linux before 4.13): the daemon says so instead')
        limit_swap(v1dir)
        with pt.Daemon(env=NO_BUS) as d:
            v, ev = kl.subscribe_ok(d, cgroup=name, kills=True)
            try:
                pt.check_eq(ev['state']['kill_sources'], ['kernel'], 'the kernel reports through cgroup v1')
                pt.check([u['source'] for u in ev['state']['unavailable_kill_sources']] == ['systemd-oomd'],
                         'systemd-oomd cannot, and the state says why', ev)
                watch = subprocess.Popen([pt.PRESSURECTL, '--socket', d.socket, 'watch', '--kills', name,
                                          '--count', '1', '--timeout', str(int(kl.REPLY_TIMEOUT * 3))],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                pt.wait_for(lambda: d.status()['subscriptions'] >= 2, timeout=kl.REPLY_TIMEOUT,
                            what='the watch to subscribe')
                hog = pt.run_in_cgroups([sys.executable, '-c', HOG], v1dir, v2dir, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
                rc = hog.wait(timeout=kl.PRESSURE_TIMEOUT)
                pt.check(rc == -9 and kl.v1_oom_kill(v1dir) >= 1, 'the kernel killed the hog in its v1 cgroup', rc)
                msg = v.recv(timeout=kl.REPLY_TIMEOUT * 2)
                ev = kl.event_of(msg)
                pt.check(ev['kind'] == 'killed' and ev['by'] == 'kernel' and ev['reason'] == 'oom_kill' and
                         ev['cgroup'] == name and ev['count'] >= 1 and ev['seq'] == 1,
                         'one "killed" by the kernel on the cgroup', ev)
                out, err = watch.communicate(timeout=kl.REPLY_TIMEOUT * 3)
                lines = out.splitlines()
                pt.check(watch.returncode == 0 and lines[0].startswith(f'Watching {name}: kills by kernel; '
                                                                       'systemd-oomd cannot report here: ') and
                         f'killed  {name}  by kernel (oom_kill' in out, 'pressurectl watch --kills', out, err)
                print(f'v1 OOM kill heard: {ev}', flush=True)
            finally:
                v.close()
    pt.finish()


if __name__ == '__main__':
    main()
