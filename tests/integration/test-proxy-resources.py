#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cpu and io pressure sockets ([MemoryPressure] CpuSocket=, IoSocket=)
with raw clients, as sd_event_add_cpu_pressure() and
sd_event_add_io_pressure() of systemd 261 use them: each client's
registration is a PSI one of the socket's resource, and an event of one
resource wakes only the clients of that resource's socket. A bad trigger
line on the cpu socket gets the default trigger; a cpu "full" trigger on
the whole system (which never fires) gets the default one too; with no PSI
for the resource at all the connection stays open and silent, logged once.
An empty CpuSocket= / IoSocket= turns that socket off, and a relative path
is a configuration error naming the key."""

import base64
import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 10.0
QUIET = 0.5   # how long a client that must not be woken is watched
RESOURCES = ('memory', 'cpu', 'io')


def proxied_by_resource(d):
    """{resource: [registration, ...]} of the registrations with proxied clients."""
    out = {}
    for r in d.status()['registrations']:
        if r['proxied']:
            out.setdefault(r['resource'], []).append(r)
    return out


def readable(s, timeout):
    return bool(select.select([s], [], [], timeout)[0])


def inject(v, cgroup, resource):
    return v.call_sync('io.pressured.Inject', {'cgroup': cgroup, 'level': 'low', 'resource': resource}
                       )['parameters']['delivered']


def check_only_matching_wake(d, clients):
    """An Inject of each resource wakes that resource's client, and no other."""
    regs = proxied_by_resource(d)
    v = pt.Varlink(d.socket)
    for resource in RESOURCES:
        cgroup = regs[resource][0]['cgroup']
        pt.check_eq(inject(v, cgroup, resource), 1, f'a {resource} Inject reaches the one {resource} client')
        got = clients[resource]
        pt.check(readable(got, WAIT), f'the {resource} client is woken by a {resource} event')
        pt.check_eq(got.recv(16), b'\n', f'one byte on the {resource} socket')
        for other in RESOURCES:
            if other != resource:
                pt.check(not readable(clients[other], QUIET),
                         f'a {resource} event does not wake the {other} client')
    v.close()


def connect_from(cgroup_dir, paths, line):
    """Connect to each of @paths from a child process that moved itself into
    @cgroup_dir (so that the daemon registers on that cgroup) and stays
    there, idle, until killed. Returns (its pid, {resource: connection})."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            with open(os.path.join(cgroup_dir, 'cgroup.procs'), 'w') as f:
                f.write('0')
            conns = [pt.unix_connect(paths[r], line) for r in RESOURCES]
            socket.send_fds(there, [b'x'], [c.fileno() for c in conns])
            while True:
                signal.pause()
        finally:
            os._exit(0)
    there.close()
    _, fds, _, _ = socket.recv_fds(here, 1, len(RESOURCES))
    here.close()
    pt.check_eq(len(fds), len(RESOURCES), 'the child passed a connection per socket')
    return pid, {r: socket.socket(fileno=fd) for r, fd in zip(RESOURCES, fds)}


def main():
    d = pt.Daemon()
    paths = {r: os.path.join(d.tmpdir, f'{r}-sock') for r in RESOURCES}
    d.write_config(f'[MemoryPressure]\nSocket={paths["memory"]}\nCpuSocket={paths["cpu"]}\n'
                   f'IoSocket={paths["io"]}\n')
    # A cgroup where nothing runs but the idle client: no real event can wake it.
    with pt.quiet_cgroup() as quiet, d:
        for r in ('cpu', 'io'):
            pt.check(f'Serving the {r}-pressure protocol on {paths[r]}.' in d.log(), f'the {r} socket is served')
            pt.check_eq(os.stat(paths[r]).st_mode & 0o777, 0o666, f'{r} socket mode')
        # 1.9 s of stall in 2 s: nothing the idle client does reaches it, injections only.
        child, clients = connect_from(pt.cgroup2_mount() + quiet, paths, b'some 1900000 2000000\n')
        try:
            pt.wait_for(lambda: sorted(proxied_by_resource(d)) == sorted(RESOURCES), timeout=WAIT,
                        what='one proxied registration per resource')
            st = d.status()
            pt.check_eq(st['proxied_clients'], 3, 'proxied clients of every resource are counted')
            for resource, regs in proxied_by_resource(d).items():
                pt.check(len(regs) == 1 and regs[0]['cgroup'] == quiet and regs[0]['source'] == 'psi' and
                         regs[0]['trigger']['psi']['threshold_us'] == 1900000,
                         f'the {resource} client has a PSI registration on its cgroup with its trigger', regs)
            text = pt.run_ctl('status', socket=d.socket).stdout
            for r in ('cpu', 'io'):
                pt.check(f'(psi {r} some' in text, f'pressurectl status names the {r} resource of proxied clients',
                         text)

            check_only_matching_wake(d, clients)
        finally:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)

        # A bad trigger line on the cpu socket: warned, and the default trigger of that resource.
        bad = pt.unix_connect(paths['cpu'], b'garbage\n')
        pt.wait_for(lambda: 'Proxied cpu client pid' in d.log() and 'did not ask for a valid PSI trigger' in d.log(),
                    timeout=WAIT, what='the bad cpu line is logged')
        pt.wait_for(lambda: any(r['trigger']['psi']['threshold_us'] == 200000
                                for r in proxied_by_resource(d).get('cpu', [])),
                    timeout=WAIT, what='the bad cpu line gets the default cpu trigger')
        bad.close()
        for s in clients.values():
            s.close()
        pt.wait_for(lambda: d.status()['proxied_clients'] == 0, timeout=WAIT, what='closed clients released')

    check_system_full_cpu()
    check_no_psi()
    check_config()
    check_env()
    pt.finish()


def check_system_full_cpu():
    """A cpu client whose cgroup is not in the hierarchy (a fake, empty one)
    watches the whole system, where "full" cpu pressure never fires: it gets
    the default trigger, and that is said."""
    root = os.path.join(tempfile.mkdtemp(prefix='pressured-empty-'), 'cg')
    os.makedirs(root)
    d = pt.Daemon(cgroup_root=root)
    cpu = os.path.join(d.tmpdir, 'cpu')
    d.write_config(f'[MemoryPressure]\nCpuSocket={cpu}\n')
    with d:
        c = pt.unix_connect(cpu, b'full 150000 2000000\n')
        pt.wait_for(lambda: proxied_by_resource(d).get('cpu'), timeout=WAIT, what='the full cpu client attached')
        reg = proxied_by_resource(d)['cpu'][0]
        pt.check(reg['cgroup'] == '/' and reg['trigger']['psi']['stall'] == 'some' and
                 reg['trigger']['psi']['threshold_us'] == 200000,
                 'a system-wide cpu "full" trigger becomes the default one', reg)
        pt.check('cpu "full" pressure is not defined for the whole system' in d.log(), 'and that is logged')
        c.close()


def check_no_psi():
    """No /proc/pressure/io (hidden in a mount namespace) and a cgroup tree
    without the peer: the io client cannot be registered, stays connected
    and silent, and that is logged once."""
    pt.require_root('hiding /proc/pressure needs a mount namespace')
    if subprocess.run(['unshare', '-m', 'true'], capture_output=True).returncode != 0:
        pt.skip_part('unshare -m does not work here: the no-PSI case is not tested')
        return
    root = os.path.join(tempfile.mkdtemp(prefix='pressured-empty-'), 'cg')
    os.makedirs(root)

    class HiddenPsi(pt.Daemon):
        def command(self):
            inner = ' '.join(shlex.quote(a) for a in super().command())
            return ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
                    f'mount -t tmpfs none /proc/pressure && exec {inner}']

    d = HiddenPsi(cgroup_root=root)
    io = os.path.join(d.tmpdir, 'io')
    d.write_config(f'[MemoryPressure]\nIoSocket={io}\n')
    with d:
        c = pt.unix_connect(io, b'some 150000 2000000\n')
        pt.wait_for(lambda: 'cannot watch /, it stays connected without events' in d.log(), timeout=WAIT,
                    what='the failed io registration is logged')
        pt.check_eq(d.log().count('cannot watch /, it stays connected'), 1, 'logged once')
        pt.check('/proc/pressure/io' in d.log(), 'the log names the missing file', d.log())
        st = d.status()
        pt.check_eq(st['proxied_clients'], 1, 'the io client is still connected')
        pt.check(not any(r['proxied'] for r in st['registrations']), 'and has no registration', st)
        pt.check(not readable(c, QUIET), 'the connection is neither closed nor written to')
        c.close()
        pt.wait_for(lambda: d.status()['proxied_clients'] == 0, timeout=WAIT, what='the silent client released')


def check_config():
    off = pt.Daemon(config_text='[MemoryPressure]\nCpuSocket=\nIoSocket=\n')
    with off:
        for r in ('cpu', 'io'):
            pt.check(not os.path.exists(os.path.join(off.tmpdir, f'{r}-pressure')), f'{r}: empty key, no socket')
            pt.check(f'The {r}-pressure socket is off.' in off.log(), f'{r}: said to be off', off.log())
        pt.check(os.path.exists(os.path.join(off.tmpdir, 'memory-pressure')), 'the memory socket stays on')
    on = pt.Daemon()
    with on:
        for r in ('cpu', 'io'):
            pt.check(os.path.exists(os.path.join(on.tmpdir, f'{r}-pressure')),
                     f'{r}: by default next to the varlink socket')
    bad = pt.Daemon(config_text='[MemoryPressure]\nIoSocket=relative/io\n')
    r = subprocess.run(bad.command(), capture_output=True, text=True, timeout=WAIT)
    pt.check(r.returncode != 0 and 'IoSocket=' in r.stderr and ':2:' in r.stderr,
             'a relative IoSocket= is an error naming file, line and key', r.returncode, r.stderr)


def check_env():
    """pressurectl memory-pressure-env --resource: systemd's variables of that
    resource, pointing at its socket next to the varlink one."""
    sock = '/somewhere/pressured/io.pressured'
    for resource, var, setting in (('memory', 'MEMORY', 'MemoryPressureWatch'), ('cpu', 'CPU', 'CPUPressureWatch'),
                                   ('io', 'IO', 'IOPressureWatch')):
        args = ['memory-pressure-env', '--psi', 'some 150ms 2s']
        if resource != 'memory':   # the default
            args += ['--resource', resource]
        r = pt.run_ctl(*args, socket=sock)
        write = base64.b64encode(b'some 150000 2000000\0').decode()
        pt.check_eq((r.returncode, r.stdout),
                    (0, f'[Service]\n{setting}=skip\n'
                        f'Environment={var}_PRESSURE_WATCH=/somewhere/pressured/{resource}-pressure\n'
                        f'Environment={var}_PRESSURE_WRITE={write}\n'),
                    f'memory-pressure-env --resource {resource}')
        env = json.loads(pt.run_ctl('--json', 'memory-pressure-env', '--resource', resource, socket=sock).stdout)
        pt.check_eq(sorted(env), [f'{var}_PRESSURE_WATCH', f'{var}_PRESSURE_WRITE'], f'--json --resource {resource}')
    r = pt.run_ctl('memory-pressure-env', '--resource', 'disk', socket=sock)
    pt.check(r.returncode == 2 and "invalid resource 'disk', expected memory, cpu or io" in r.stderr and not r.stdout,
             'an unknown --resource is a usage error naming the allowed values', r.returncode, r.stderr)
    if pt.have_bash_completion('the completion of memory-pressure-env --resource'):
        for words, want in ((['pressurectl', 'memory-pressure-env', '--res'], ['--resource']),
                            (['pressurectl', 'memory-pressure-env', '--resource', ''], ['cpu', 'io', 'memory'])):
            got = pt.complete(words)
            pt.check_eq(sorted(got), want, f'completion of {" ".join(words)!r}')


if __name__ == '__main__':
    main()
