#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""systemd-oomd's kills in kills streams, on a private system bus
(dbus-daemon with a permissive configuration, DBUS_SYSTEM_BUS_ADDRESS) with
a stand-in org.freedesktop.oom1 (oom1-standin): its Killed signal reaches
the subscribers on "/" and on the killed cgroup's ancestors with every
field, not one on another subtree; it is counted once; a signal with a bad
cgroup, an empty or overlong reason, or sent by a connection that does not own
org.freedesktop.oom1, is not delivered; "kill_sources" names systemd-oomd
only while the stand-in owns the name; the daemon holds no bus connection
before the first kills subscriber and after the last one, and with
[DBus] LowMemoryMonitor=yes shares the service's connection and drops its
matches with the last kills subscriber. A peer in a
cgroup namespace (a real cgroup2 directory) hears the kills below its root
named as it sees them."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0  # bound on waits that normally take milliseconds
STANDIN = os.path.join(pt.BUILD_ROOT, 'tests', 'integration', 'oom1-standin')

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""


class Bus:
    """A private dbus-daemon standing in for the system bus."""

    def __init__(self, tmp):
        self.socket = os.path.join(tmp, 'system_bus_socket')
        self.address = 'unix:path=' + self.socket
        conf = os.path.join(tmp, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(BUS_CONFIG.format(socket=self.socket))
        self.proc = subprocess.Popen(['dbus-daemon', '--config-file=' + conf, '--nofork', '--nopidfile'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        pt.wait_for(lambda: os.path.exists(self.socket), timeout=WAIT, what='the private bus')

    def call(self, *args):
        out = subprocess.run(['busctl', '--json=short', '--address=' + self.address, 'call', 'org.freedesktop.DBus',
                              '/org/freedesktop/DBus', 'org.freedesktop.DBus', *args],
                             capture_output=True, text=True, timeout=WAIT)
        return json.loads(out.stdout)['data'] if out.returncode == 0 else None

    def connections_of(self, pid):
        """The unique names of the connections process @pid holds."""
        names = self.call('ListNames')[0]
        return [n for n in names if n.startswith(':') and
                (self.call('GetConnectionUnixProcessID', 's', n) or [None])[0] == pid]

    def match_rules_of(self, pid):
        """The match rules of the connections of process @pid (dbus-daemon's Debug.Stats interface)."""
        out = subprocess.run(['busctl', '--json=short', '--address=' + self.address, 'call', 'org.freedesktop.DBus',
                              '/org/freedesktop/DBus', 'org.freedesktop.DBus.Debug.Stats', 'GetAllMatchRules'],
                             capture_output=True, text=True, timeout=WAIT)
        rules = json.loads(out.stdout)['data'][0]
        return [r for name in self.connections_of(pid) for r in rules.get(name, [])]

    def killed_matches_of(self, pid):
        return [r for r in self.match_rules_of(pid) if "member='Killed'" in r]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=WAIT)


class Standin:
    """oom1-standin: owns org.freedesktop.oom1 and emits Killed on request."""

    def __init__(self, bus):
        self.proc = subprocess.Popen([STANDIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=bus.address))

    def do(self, line):
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        pt.check(reply == 'ok', f'the stand-in did {line!r}', reply)

    def stop(self):
        self.proc.stdin.write('quit\n')
        self.proc.stdin.close()
        self.proc.wait(timeout=WAIT)


def event(v):
    return v.recv(timeout=WAIT)['parameters']['event']


def kill_sources(d, cgroup='/'):
    """kill_sources of a new subscription (which then ends)."""
    v = pt.Varlink(d.socket, timeout=WAIT)
    try:
        return event_of(v.subscribe(cgroup=cgroup, kills=True))['state']['kill_sources']
    finally:
        v.close()


def event_of(reply):
    return reply['parameters']['event']


def check_first_sources(d, ev, want, what):
    """kill_sources of the subscription that brought the daemon onto the bus: complete, unless the
    bounded wait for the bus ran out first (a daemon slowed down by valgrind), which the log says."""
    if 'did not tell about systemd-oomd in time' in d.log():
        pt.check(ev['state']['kill_sources'] in (want, [x for x in want if x != 'systemd-oomd']),
                 f'{what} (the wait ran out)', ev)
    else:
        pt.check_eq(ev['state']['kill_sources'], want, what)


def check_oomd_kill(ev, cgroup, reason, seq, what):
    pt.check(ev['kind'] == 'killed' and ev['cgroup'] == cgroup and ev['by'] == 'systemd-oomd' and
             ev['reason'] == reason, f'{what}: systemd-oomd killed {cgroup} ({reason})', ev)
    pt.check(ev['count'] == 1 and ev['seq'] == seq and ev['missed'] == 0 and isinstance(ev['time_us'], int) and
             isinstance(ev['monotonic_us'], int), f'{what}: count 1, seq {seq}, missed 0, the times', ev)
    pt.check(sorted(ev) == sorted(['kind', 'cgroup', 'by', 'reason', 'count', 'seq', 'missed', 'time_us',
                                   'monotonic_us']), f'{what}: every field and no other', ev)


def test_oomd(tmp, bus):
    fake = os.path.join(tmp, 'v2')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/system.slice': {}, '/system.slice/x.service': {},
                             '/user.slice': {}})
    standin = Standin(bus)
    stranger = Standin(bus)
    try:
        standin.do('own')
        with pt.Daemon(cgroup_root=fake, env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
            pt.check(bus.connections_of(d.pid) == [], 'no bus connection without a kills subscriber')
            whole = pt.Varlink(d.socket, timeout=WAIT)
            ev = event_of(whole.subscribe(kills=True))
            # The first kills subscription brought the daemon onto the bus; its "subscribed" waited for the match.
            check_first_sources(d, ev, ['kernel', 'systemd-oomd'],
                                'kill_sources of the first subscription on "/" with oomd')
            pt.wait_for(lambda: kill_sources(d) == ['kernel', 'systemd-oomd'], timeout=WAIT,
                        what='kill_sources of the next one')
            pt.check(len(bus.connections_of(d.pid)) == 1, 'one bus connection for the kills subscribers')
            slice_ = pt.Varlink(d.socket, timeout=WAIT)
            slice_.subscribe(cgroup='/system.slice', kills=True)
            user = pt.Varlink(d.socket, timeout=WAIT)
            user.subscribe(cgroup='/user.slice', kills=True)

            matches = bus.killed_matches_of(d.pid)
            pt.check(len(matches) == 1 and "sender='org.freedesktop.oom1'" in matches[0] and
                     "path='/org/freedesktop/oom1'" in matches[0] and
                     "interface='org.freedesktop.oom1.Manager'" in matches[0],
                     'one match on Killed for three kills registrations', matches)
            standin.do('kill /system.slice/x.service memory-pressure')
            check_oomd_kill(event(whole), '/system.slice/x.service', 'memory-pressure', 1, 'on /')
            check_oomd_kill(event(slice_), '/system.slice/x.service', 'memory-pressure', 1, 'on /system.slice')
            # The subscriber on /user.slice got nothing: its first event is the next kill, in its subtree.
            standin.do('kill /user.slice memory-used')
            check_oomd_kill(event(user), '/user.slice', 'memory-used', 1, 'on /user.slice, its own cgroup')
            check_oomd_kill(event(whole), '/user.slice', 'memory-used', 2, 'on /, the second kill')
            st = d.status()
            pt.check(st['counters']['kills_systemd_oomd'] == 2 and st['counters']['kills_kernel'] == 0,
                     'each Killed signal counted once', st['counters'])

            # What is not a kill by systemd-oomd is not delivered.
            standin.do('kill relative/path memory-used')
            standin.do('kill /system.slice/x.service ' + 'x' * 256)
            standin.do('kill /system.slice/x.service ')
            stranger.do('kill /system.slice/x.service memory-pressure')
            standin.do('kill /system.slice/x.service memory-used')
            check_oomd_kill(event(slice_), '/system.slice/x.service', 'memory-used', 2,
                            'after a bad cgroup, an overlong and an empty reason and a stranger\'s signal')
            check_oomd_kill(event(whole), '/system.slice/x.service', 'memory-used', 3, 'the same on /')
            pt.check('Ignoring a Killed signal of systemd-oomd with an invalid cgroup or reason.' in d.log(),
                     'the bad signals are logged')
            pt.check(d.status()['counters']['kills_systemd_oomd'] == 3, 'only the real kill counted',
                     d.status()['counters'])

            # systemd-oomd goes away: nobody to hear, but the streams go on.
            standin.do('release')
            pt.wait_for(lambda: kill_sources(d) == ['kernel'], timeout=WAIT,
                        what='kill_sources without systemd-oomd')
            pt.check_eq(kill_sources(d, '/user.slice'), ['kernel'], 'kill_sources on a cgroup without oomd')
            standin.do('own')
            pt.wait_for(lambda: 'systemd-oomd' in kill_sources(d), timeout=WAIT, what='systemd-oomd back')
            standin.do('kill /system.slice/x.service memory-pressure')
            check_oomd_kill(event(whole), '/system.slice/x.service', 'memory-pressure', 4, 'after oomd came back')

            # The last kills subscriber leaves: so does the bus connection.
            for v in (whole, slice_, user):
                v.close()
            pt.wait_for(lambda: d.status()['registrations'] == [], timeout=WAIT, what='no registration')
            pt.wait_for(lambda: bus.connections_of(d.pid) == [], timeout=WAIT,
                        what='the daemon to leave the bus')
    finally:
        standin.stop()
        stranger.stop()


def test_with_low_memory_monitor(tmp, bus):
    """[DBus] LowMemoryMonitor=yes holds the connection: kills share it, and take their matches with them."""
    fake = os.path.join(tmp, 'v2-lmm')
    pt.make_fake_tree(fake, {'/': {'current': 1 << 30}, '/system.slice': {}})
    standin = Standin(bus)
    try:
        standin.do('own')
        with pt.Daemon(cgroup_root=fake, env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address},
                       config_text='[DBus]\nLowMemoryMonitor=yes\n') as d:
            pt.wait_for(lambda: len(bus.connections_of(d.pid)) == 1, timeout=WAIT,
                        what='the LowMemoryMonitor service on the bus')
            pt.check(bus.killed_matches_of(d.pid) == [], 'no match on Killed without a kills subscriber')
            v = pt.Varlink(d.socket, timeout=WAIT)
            check_first_sources(d, event_of(v.subscribe(kills=True)), ['kernel', 'systemd-oomd'],
                                'the first kills subscription beside the service')
            pt.wait_for(lambda: 'systemd-oomd' in kill_sources(d), timeout=WAIT, what='systemd-oomd heard')
            pt.check(len(bus.connections_of(d.pid)) == 1 and len(bus.killed_matches_of(d.pid)) == 1,
                     'kills use the one connection the service holds')
            standin.do('kill /system.slice/y.service memory-used')
            check_oomd_kill(event(v), '/system.slice/y.service', 'memory-used', 1, 'beside the service')
            v.close()
            pt.wait_for(lambda: bus.killed_matches_of(d.pid) == [], timeout=WAIT,
                        what='the match to go with the last kills subscriber')
            pt.check(not any('org.freedesktop.oom1' in r for r in bus.match_rules_of(d.pid)),
                     'no match about systemd-oomd is left', bus.match_rules_of(d.pid))
            pt.check(len(bus.connections_of(d.pid)) == 1, 'the service keeps its connection')
    finally:
        standin.stop()


def namespace_tools():
    """Peer and agent_cmd of test-cgroup-namespace.py: a peer in a cgroup namespace driven over a pipe."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test-cgroup-namespace.py')
    spec = importlib.util.spec_from_file_location('cgroup_namespace_test', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Peer, mod.agent_cmd


def test_namespace(bus):
    Peer, agent_cmd = namespace_tools()
    with pt.v2_cgroup_part('kills-ns') as name:
        if name is None:
            return
        v2dir = pt.V2_ROOT + name
        os.mkdir(v2dir + '/job')
        standin = Standin(bus)
        peer = None
        try:
            standin.do('own')
            with pt.Daemon(env={'DBUS_SYSTEM_BUS_ADDRESS': bus.address}) as d:
                host = pt.Varlink(d.socket, timeout=WAIT)
                ev = event_of(host.subscribe(cgroup=name, kills=True))
                check_first_sources(d, ev, ['systemd-oomd'],
                                    'a real cgroup2 directory without memory.events: systemd-oomd only')
                pt.wait_for(lambda: kill_sources(d, name) == ['systemd-oomd'], timeout=WAIT,
                            what='systemd-oomd heard')
                peer = Peer(['unshare', '-C'] + agent_cmd(d.socket), v2dir)
                peer.connect('c')
                ev = event_of(peer.subscribe('c', kills=True))
                pt.check(ev['cgroup'] == '/' and ev['source'] == 'kills', 'the peer subscribes to its "/"', ev)
                regs = d.status()['registrations']
                pt.check(len(regs) == 1 and regs[0]['cgroup'] == name and regs[0]['subscribers'] == 2,
                         'the peer\'s "/" and the host\'s name share one registration', regs)
                standin.do('kill /elsewhere.slice memory-used')
                standin.do(f'kill {name}/job memory-pressure')
                check_oomd_kill(event(host), f'{name}/job', 'memory-pressure', 1, 'the host peer')
                check_oomd_kill(peer.recv('c', timeout=WAIT)['parameters']['event'], '/job', 'memory-pressure', 1,
                                'the peer in the namespace, as it names the cgroup')
                host.close()
        finally:
            if peer:
                peer.stop()
            standin.stop()
            os.rmdir(v2dir + '/job')


def main():
    if not shutil.which('dbus-daemon') or not shutil.which('busctl'):
        pt.skip('dbus-daemon and busctl are needed')
    tmp = tempfile.mkdtemp(prefix='pressured-kills-oomd-')
    bus = Bus(tmp)
    try:
        test_oomd(tmp, bus)
        test_with_low_memory_monitor(tmp, bus)
        test_namespace(bus)
    finally:
        bus.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
