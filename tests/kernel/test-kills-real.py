#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kills subscriptions on the real cgroup2 hierarchy, without a system bus:
on a cgroup, "kill_sources" names the kernel exactly when the cgroup has
memory.events (the memory controller), identical subscriptions share one
registration, and removing the cgroup (rmdir in cgroupfs) ends the streams
with "removed", with or without memory.events; on "/", a top-level cgroup
made while subscribed is watched (cgroupfs reports the mkdir to inotify)
and one removed is let go."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

NO_BUS = {'DBUS_SYSTEM_BUS_ADDRESS': 'unix:path=/nonexistent/pressured-test-no-bus'}


def check_cgroup(d, name):
    v2dir = pt.V2_ROOT + name
    has_events = os.path.exists(os.path.join(v2dir, 'memory.events'))
    clients = [kl.subscribe_ok(d, cgroup=name, kills=True) for _ in range(2)]
    try:
        ev = clients[0][1]
        pt.check(ev['source'] == 'kills' and ev['cgroup'] == name, 'subscribed to kills on a real cgroup', ev)
        pt.check_eq(ev['state']['kill_sources'], ['kernel'] if has_events else [],
                    'the kernel reports exactly where memory.events is')
        regs = kl.registrations_on(d, name)
        pt.check(len(regs) == 1 and regs[0]['source'] == 'kills' and regs[0]['subscribers'] == 2,
                 'one shared kills registration', regs)
        pt.remove_cgroup(v2dir)
        for v, _ in clients:
            msg = kl.wait_removed(v)
            pt.check(msg['parameters']['event']['cgroup'] == name and msg.get('continues') is not True,
                     'rmdir ends the kills stream with removed', msg)
        pt.wait_for(lambda: kl.registrations_on(d, name) == [], timeout=kl.REPLY_TIMEOUT,
                    what='the registration to go')
    finally:
        kl.close_all([v for v, _ in clients])


def check_system(d):
    v, ev = kl.subscribe_ok(d, kills=True)
    try:
        pt.check(ev['cgroup'] == '/' and ev['source'] == 'kills', 'subscribed to kills on "/"', ev)
        # A top-level cgroup made now (v2_cgroup_part() makes it at the root).
        with pt.v2_cgroup_part('kills-top') as name:
            if name is None:
                return
            pt.wait_for(lambda: f'Watching top-level cgroup {name} for kills.' in d.log(),
                        timeout=kl.REPLY_TIMEOUT, what='a top-level cgroup made now to be watched')
        # Still serving: another subscriber shares the registration on "/".
        w, _ = kl.subscribe_ok(d, kills=True)
        regs = kl.registrations_on(d, '/')
        pt.check(len(regs) == 1 and regs[0]['subscribers'] == 2, 'one registration on "/"', regs)
        w.close()
    finally:
        v.close()
    pt.wait_for(lambda: kl.registrations_on(d, '/') == [], timeout=kl.REPLY_TIMEOUT, what='the registration to go')


def main():
    pt.require_root('it makes and removes real cgroups')
    with pt.Daemon(env=NO_BUS) as d:
        with pt.v2_cgroup_part('kills') as name:
            if name:
                check_cgroup(d, name)
        check_system(d)
    pt.finish()


if __name__ == '__main__':
    main()
