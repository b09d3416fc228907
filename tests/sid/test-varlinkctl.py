#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""varlinkctl of systemd 262 (Debian sid's, fetched by
tests/sid/fetch-systemd-sid.sh, never installed) against the daemon: its
IDL parser accepts daemon/protocol/io.pressured.varlink (validate-idl);
info and list-interfaces say what GetInfo says; introspect prints
io.pressured as the file declares it (the same types, methods, errors and
comment lines, parsed by tests/varlink_idl.py); list-methods names its methods;
call answers GetStatus; `call --more` streams a Subscribe, "subscribed"
first, then one "pressure" per injection in seq order, and the
subscription goes when varlinkctl does; the daemon's errors
(NoSuchCgroup, a Subscribe without "more") come out as varlinkctl's
failures naming them. Skipped, with the fetch script's reason, only
where the Debian mirror cannot give sid's systemd."""

import json
import os
import select
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sidlib  # noqa: E402

pt = sidlib.pt
sys.path.insert(0, os.path.join(pt.SOURCE_ROOT, 'tests'))
import varlink_idl  # noqa: E402

WAIT = 60.0 if pt.WRAPPER else 15.0
IDL = os.path.join(pt.SOURCE_ROOT, 'daemon', 'protocol', 'io.pressured.varlink')


def comments(text):
    """The comment lines, sorted: varlinkctl prints the types before the
    methods and leaves out comment lines with nothing on them."""
    return sorted(line.strip() for line in text.splitlines() if line.strip().startswith('#') and line.strip() != '#')


class Ctl:
    def __init__(self, root, address):
        self.root, self.address = root, address

    def cmd(self, *args):
        return sidlib.varlinkctl(self.root, *args)

    def run(self, *args, ok=True):
        argv, env = self.cmd(*args)
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT)
        if ok:
            pt.check(r.returncode == 0, f'varlinkctl {" ".join(args)} exited {r.returncode}', r.stderr)
        return r


def check_idl(ctl):
    with open(IDL) as f:
        text = f.read()
    ctl.run('validate-idl', IDL)
    shown = ctl.run('introspect', ctl.address, 'io.pressured').stdout
    want, got = varlink_idl.parse(text), varlink_idl.parse(shown)
    pt.check_eq(got.name, 'io.pressured', 'introspect: the interface')
    pt.check_eq(got.types, want.types, 'introspect: the types')
    pt.check_eq(got.methods, want.methods, 'introspect: the methods')
    pt.check_eq(got.errors, want.errors, 'introspect: the errors')
    pt.check_eq(comments(shown), comments(text), 'introspect: the comments')
    methods = ctl.run('list-methods', ctl.address, 'io.pressured').stdout.split()
    pt.check_eq(sorted(methods), sorted(f'io.pressured.{m}' for m in want.methods), 'list-methods')
    return len(want.types), len(want.methods), len(want.errors)


def check_info(ctl, d):
    v = pt.Varlink(d.socket)
    try:
        info = v.call_sync('org.varlink.service.GetInfo')['parameters']
    finally:
        v.close()
    out = ctl.run('info', ctl.address).stdout
    fields = {}
    key = None
    for line in out.splitlines():
        k, sep, value = line.partition(':')
        if sep and k.strip():
            key = k.strip()
            fields[key] = [value.strip()]
        elif key:
            fields[key].append(line.strip())
    for k in ('vendor', 'product', 'version', 'url'):
        pt.check_eq(fields.get(k.capitalize() if k != 'url' else 'URL'), [info[k]], f'info: {k}')
    pt.check_eq(sorted(fields.get('Interfaces', [])), sorted(info['interfaces']), 'info: interfaces')
    listed = ctl.run('list-interfaces', ctl.address).stdout.split()
    pt.check_eq(sorted(listed), sorted(info['interfaces']), 'list-interfaces')
    status = json.loads(ctl.run('call', '--json=short', ctl.address, 'io.pressured.GetStatus', '{}').stdout)
    pt.check_eq(status['version'], info['version'], 'call GetStatus: version')


def read_json(p, what):
    if not select.select([p.stdout], [], [], WAIT)[0]:
        raise TimeoutError(f'varlinkctl printed no {what} within {WAIT:.0f} s')
    line = p.stdout.readline()
    pt.check(line, f'varlinkctl ended before {what}', p.poll(), p.stderr.read() if p.poll() is not None else '')
    # With --more the replies come as JSON text sequences (RFC 7464): each after an RS.
    pt.check(line.startswith('\x1e'), f'{what}: no record separator', line)
    return json.loads(line[1:])


def check_stream(ctl, d, cgroup):
    argv, env = ctl.cmd('call', '--more', '--timeout=infinity', '--json=short', ctl.address,
                        'io.pressured.Subscribe', json.dumps({'cgroup': cgroup, 'level': 'low'}))
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_json(p, 'the subscribed event')['event']
        pt.check_eq((first['kind'], first['cgroup']), ('subscribed', cgroup), 'the first reply')
        pt.wait_for(lambda: d.status()['subscriptions'] == 1, timeout=WAIT, what='the subscription counted')
        for seq, level in enumerate(('critical', 'low', 'medium'), 1):
            pt.check_eq(d.inject(level, cgroup)['parameters']['delivered'], 1, f'Inject {level}')
            ev = read_json(p, f'event {seq}')['event']
            pt.check_eq((ev['kind'], ev['seq'], ev['level'], ev['synthetic']), ('pressure', seq, level, True),
                        f'reply {seq + 1}')
        p.terminate()
        p.wait(timeout=WAIT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    pt.wait_for(lambda: d.status()['subscriptions'] == 0, timeout=WAIT, what='the subscription gone with varlinkctl')


def check_errors(ctl, cgroup):
    r = ctl.run('call', '--more', '--json=short', ctl.address, 'io.pressured.Subscribe',
                json.dumps({'cgroup': cgroup + '/none', 'level': 'low'}), ok=False)
    pt.check(r.returncode != 0 and 'io.pressured.NoSuchCgroup' in r.stderr, 'a Subscribe on no cgroup', r)
    pt.check_eq(json.loads(r.stdout.lstrip('\x1e')), {'cgroup': cgroup + '/none'}, 'NoSuchCgroup\'s parameters')
    r = ctl.run('call', ctl.address, 'io.pressured.Subscribe', json.dumps({'cgroup': cgroup, 'level': 'low'}),
                ok=False)
    pt.check(r.returncode != 0 and "'more'" in r.stderr, 'a Subscribe without --more', r)


def main():
    root = pt.systemd_sid()
    d = pt.Daemon()
    ctl = Ctl(root, 'unix:' + d.socket)
    with pt.quiet_cgroup() as quiet, d:
        types, methods, errors = check_idl(ctl)
        check_info(ctl, d)
        check_stream(ctl, d, quiet)
        check_errors(ctl, quiet)
    print(f'varlinkctl {open(os.path.join(pt.SYSTEMD_SID, "ok")).read().strip()}: io.pressured with {types} types, '
          f'{methods} methods, {errors} errors; a Subscribe streamed', flush=True)
    pt.finish()


if __name__ == '__main__':
    main()
