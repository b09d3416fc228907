#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The systemd units as built: systemd-analyze verify accepts them (with
and without the metrics drop-in), the service's offline security exposure
stays at or below 2.0, the contract's socket settings are there, and the
install rules put the units, the drop-in example and the man page where
the documentation says. The fd store is as large as the limits need and
fits under the fd limit the daemon starts with. The desktop notifier's user unit verifies in a
user manager, belongs to the graphical session and goes to the user unit
directory. The per-user daemon's user units (systemd/user/) verify in a
user manager, activate `pressured --user` on its four sockets in
$XDG_RUNTIME_DIR/pressured, 0600 in 0700, and go to the user unit
directory; started the way they say (systemd-socket-activate with their
sockets and names), the daemon serves `pressurectl --user`."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

SOURCE_ROOT = os.environ['PRESSURED_SOURCE_ROOT']
MAX_EXPOSURE = 2.0


fail = pt.fail


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


def unit_settings(text):
    """Section -> list of (key, value) pairs, in file order."""
    sections, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], [])
            continue
        key, sep, value = line.partition('=')
        if not sep or current is None:
            fail('unparseable unit line: %r' % line)
        current.append((key, value))
    return sections


def get(sections, section, key):
    values = [v for k, v in sections.get(section, []) if k == key]
    if not values:
        fail('[%s] %s= missing' % (section, key))
    return values[-1]


def exposure(unit_path, cwd):
    r = run(['systemd-analyze', 'security', '--offline=yes', '--no-pager', unit_path], cwd=cwd)
    out = r.stdout + r.stderr
    m = re.search(r'Overall exposure level for pressured\.service: ([0-9]+(?:\.[0-9]+)?)', out)
    if not m:
        fail('no exposure figure in systemd-analyze security output:\n' + out)
    return float(m.group(1)), out


def user_units():
    """The per-user daemon's units as built: the service, then its four sockets."""
    return [os.path.join(pt.BUILD_ROOT, 'systemd', 'user', 'pressured.service')] + \
        [os.path.join(SOURCE_ROOT, 'systemd', 'user', n) for n in
         ('pressured.socket', 'pressured-memory-pressure.socket', 'pressured-cpu-pressure.socket',
          'pressured-io-pressure.socket')]


def check_user_units():
    """pressured --user under the user's service manager: what the units say, and that it works."""
    service_path, *socket_paths = user_units()
    with open(service_path) as f:
        service_text = f.read()
    if re.search(r'@[a-z_]+@', service_text):
        fail('unsubstituted @variable@ in the built user unit pressured.service')
    service = unit_settings(service_text)
    exec_start = get(service, 'Service', 'ExecStart').split()
    if not (exec_start[0].startswith('/') and exec_start[0].endswith('/pressured') and exec_start[1:] == ['--user']):
        fail('the user unit pressured.service runs %s, not pressured --user' % exec_start)
    for key, want in [('Type', 'notify'), ('Restart', 'on-failure'), ('ExecReload', '/bin/kill -HUP $MAINPID')]:
        if get(service, 'Service', key) != want:
            fail('the user unit pressured.service %s=%s, want %s' % (key, get(service, 'Service', key), want))
    sockets = {}   # fd name -> path under %t
    for path in socket_paths:
        name = os.path.basename(path)
        with open(path) as f:
            sock = unit_settings(f.read())
        fdname = get(sock, 'Socket', 'FileDescriptorName')
        want_fdname = 'varlink' if name == 'pressured.socket' else name[len('pressured-'):-len('.socket')]
        for key, want in [('ListenStream', '%t/pressured/' + ('io.pressured' if fdname == 'varlink' else fdname)),
                          ('FileDescriptorName', want_fdname), ('SocketMode', '0600'), ('DirectoryMode', '0700')]:
            if get(sock, 'Socket', key) != want:
                fail('the user unit %s %s=%s, want %s' % (name, key, get(sock, 'Socket', key), want))
        if get(sock, 'Install', 'WantedBy') != 'sockets.target':
            fail('the user unit %s is not wanted by sockets.target' % name)
        if name != 'pressured.socket' and get(sock, 'Socket', 'Service') != 'pressured.service':
            fail('the user unit %s does not activate pressured.service' % name)
        if name not in get(service, 'Service', 'Sockets').split():
            fail('the user unit pressured.service Sockets= lacks %s' % name)
        sockets[fdname] = get(sock, 'Socket', 'ListenStream')

    with tempfile.TemporaryDirectory(prefix='pressured-user-daemon-') as tmp:
        runtime = os.path.join(tmp, 'runtime')
        os.mkdir(runtime, 0o700)
        with open(os.path.join(tmp, 'pressured.service'), 'w') as f:
            f.write(re.sub(r'(?m)^ExecStart=\S+', 'ExecStart=' + pt.PRESSURED, service_text))
        for path in socket_paths:
            shutil.copy(path, tmp)
        names = [os.path.basename(p) for p in socket_paths] + ['pressured.service']
        r = run(['systemd-analyze', '--user', 'verify', '--man=no'] + names, cwd=tmp,
                env=dict(os.environ, XDG_RUNTIME_DIR=runtime))
        complaints = [line for line in (r.stdout + r.stderr).splitlines() if 'pressured' in line]
        if r.returncode != 0 or complaints:
            fail('systemd-analyze --user verify of the per-user daemon\'s units (rc %d):\n%s%s'
                 % (r.returncode, r.stdout, r.stderr))
        run_user_daemon(tmp, runtime, sockets, exec_start[1:])


def run_user_daemon(tmp, runtime, sockets, args):
    """Start the built daemon as the user units start it: their sockets,
    by their names, in a runtime directory; pressurectl --user finds it."""
    tool = shutil.which('systemd-socket-activate')
    if not tool:
        pt.skip_part('the per-user daemon started on its units\' sockets: systemd-socket-activate is not installed')
        return
    os.mkdir(os.path.join(runtime, 'pressured'), 0o700)
    names = list(sockets)
    cmd = [tool] + [a for n in names for a in ('-l', sockets[n].replace('%t', runtime))]
    cmd += ['--fdname=' + ':'.join(names), '-E', 'XDG_RUNTIME_DIR=' + runtime, pt.PRESSURED] + args
    env = {k: v for k, v in os.environ.items()
           if k not in ('LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES', 'NOTIFY_SOCKET', 'PRESSURED_SOCKET')}
    env['XDG_RUNTIME_DIR'] = runtime
    with open(os.path.join(tmp, 'daemon.log'), 'w+') as log:
        p = subprocess.Popen(cmd, env=env, stdout=log, stderr=log)
        try:
            varlink = os.path.join(runtime, 'pressured', 'io.pressured')
            pt.wait_for(lambda: os.path.exists(varlink) or p.poll() is not None, timeout=pt.scaled(15),
                        what='systemd-socket-activate listening')
            deadline = time.monotonic() + pt.scaled(15)
            while True:
                r = run([pt.PRESSURECTL, '--user', '--json', 'status'], env=env)
                if r.returncode == 0 or p.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if r.returncode != 0:
                log.seek(0)
                fail('pressurectl --user status against the activated per-user daemon (rc %d): %s\n%s'
                     % (r.returncode, r.stderr, log.read()))
            # Every socket came from the "service manager", none was bound by the daemon itself.
            log.seek(0)
            text = log.read()
            want = ['Serving on the socket passed by the service manager'] + [
                'Serving the %s protocol on the socket passed by the service manager' % n for n in names
                if n != 'varlink']
            if any(w not in text for w in want) or 'pressured: info: Listening on' in text:
                fail('the per-user daemon did not serve on the sockets of its units:\n' + text)
            p.send_signal(signal.SIGTERM)
            if p.wait(pt.scaled(15)) != 0:
                fail('the per-user daemon exited %d on SIGTERM' % p.returncode)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    print('the per-user daemon serves pressurectl --user on the sockets of its user units')


def main():
    if not shutil.which('systemd-analyze'):
        pt.skip('systemd-analyze is not installed')

    built_service = os.path.join(pt.BUILD_ROOT, 'systemd', 'pressured.service')
    socket_unit = os.path.join(SOURCE_ROOT, 'systemd', 'pressured.socket')
    # Built: it names the configuration file's installed path.
    dropin = os.path.join(pt.BUILD_ROOT, 'systemd', 'pressured-metrics.conf')
    with open(built_service) as f:
        service_text = f.read()
    with open(socket_unit) as f:
        socket_text = f.read()

    # configure_file() substituted everything.
    if re.search(r'@[a-z_]+@', service_text):
        fail('unsubstituted @variable@ in the built pressured.service')
    service = unit_settings(service_text)
    exec_start = get(service, 'Service', 'ExecStart')
    if not (exec_start.startswith('/') and exec_start.endswith('/pressured')):
        fail('ExecStart=%s is not an absolute path to pressured' % exec_start)

    # What the contract and the man page promise.
    sock = unit_settings(socket_text)
    for key, want in [('ListenStream', '/run/pressured/io.pressured'),
                      ('FileDescriptorName', 'varlink'),
                      ('SocketMode', '0666'),
                      ('DirectoryMode', '0755')]:
        if get(sock, 'Socket', key) != want:
            fail('pressured.socket %s=%s, want %s' % (key, get(sock, 'Socket', key), want))
    if get(sock, 'Install', 'WantedBy') != 'sockets.target':
        fail('pressured.socket is not wanted by sockets.target')
    # One unit per proxy socket: FileDescriptorName= names every socket of a unit alike.
    proxy_units = []
    for resource in ('memory', 'cpu', 'io'):
        name = 'pressured-%s-pressure.socket' % resource
        proxy_units.append(os.path.join(SOURCE_ROOT, 'systemd', name))
        with open(proxy_units[-1]) as f:
            mp = unit_settings(f.read())
        for key, want in [('ListenStream', '/run/pressured/%s-pressure' % resource),
                          ('FileDescriptorName', '%s-pressure' % resource),
                          ('Service', 'pressured.service'),
                          ('SocketMode', '0666')]:
            if get(mp, 'Socket', key) != want:
                fail('%s %s=%s, want %s' % (name, key, get(mp, 'Socket', key), want))
        if get(mp, 'Install', 'WantedBy') != 'sockets.target':
            fail('%s is not wanted by sockets.target' % name)
        # Sockets= hands it to the service; Wants= starts it with a plain "systemctl start pressured".
        for key in ('Sockets', 'Wants', 'After'):
            if name not in (get(service, 'Service' if key == 'Sockets' else 'Unit', key) or '').split():
                fail('pressured.service %s= lacks %s' % (key, name))
    # systemd-oomd's pre-kill hook: a socket file in oomd's directory, handed over as "prekill".
    prekill_unit = os.path.join(SOURCE_ROOT, 'systemd', 'pressured-prekill.socket')
    proxy_units.append(prekill_unit)
    with open(prekill_unit) as f:
        pk = unit_settings(f.read())
    for key, want in [('ListenStream', '/run/systemd/oomd.prekill.hook/pressured'),
                      ('FileDescriptorName', 'prekill'),
                      ('Service', 'pressured.service'),
                      ('SocketMode', '0666'),
                      ('DirectoryMode', '0755')]:
        if get(pk, 'Socket', key) != want:
            fail('pressured-prekill.socket %s=%s, want %s' % (key, get(pk, 'Socket', key), want))
    if get(pk, 'Install', 'WantedBy') != 'sockets.target':
        fail('pressured-prekill.socket is not wanted by sockets.target')
    for key in ('Sockets', 'Wants', 'After'):
        if 'pressured-prekill.socket' not in (get(service, 'Service' if key == 'Sockets' else 'Unit', key) or '').split():
            fail('pressured.service %s= lacks pressured-prekill.socket' % key)
    if 'pressured-prekill.socket' not in get(service, 'Install', 'Also').split():
        fail('enabling pressured.service does not enable pressured-prekill.socket')
    # systemd-report's socket (pressured(8), "systemd-report"), at the name systemd-report keeps our metrics by.
    report_unit = os.path.join(SOURCE_ROOT, 'systemd', 'pressured-report.socket')
    with open(report_unit) as f:
        report = unit_settings(f.read())
    for key, want in [('ListenStream', '/run/systemd/report/io.pressured'),
                      ('FileDescriptorName', 'report'),
                      ('Service', 'pressured.service'),
                      ('SocketMode', '0666')]:
        if get(report, 'Socket', key) != want:
            fail('pressured-report.socket %s=%s, want %s' % (key, get(report, 'Socket', key), want))
    if get(report, 'Install', 'WantedBy') != 'sockets.target':
        fail('pressured-report.socket is not wanted by sockets.target')
    for key in ('Sockets', 'Wants', 'After'):
        if 'pressured-report.socket' not in (get(service, 'Service' if key == 'Sockets' else 'Unit', key) or '').split():
            fail('pressured.service %s= lacks pressured-report.socket' % key)
    if 'pressured-report.socket' not in get(service, 'Install', 'Also').split():
        fail('enabling pressured.service does not enable pressured-report.socket')
    # No watchdog: it would wake the daemon with nobody subscribed.
    watchdog = [v for k, v in service.get('Service', []) if k == 'WatchdogSec']
    if watchdog:
        fail('pressured.service sets WatchdogSec=%s; the idle daemon must not wake' % watchdog[-1])
    for key, want in [('Type', 'notify'),
                      ('ExecReload', '/bin/kill -HUP $MAINPID'),
                      ('RuntimeDirectory', 'pressured'),
                      ('RuntimeDirectoryPreserve', 'yes'),
                      ('RestrictAddressFamilies', 'AF_UNIX'),
                      ('ReadWritePaths', '/sys/fs/cgroup'),
                      ('ProtectSystem', 'strict')]:
        if get(service, 'Service', key) != want:
            fail('pressured.service %s=%s, want %s' % (key, get(service, 'Service', key), want))
    # The fd store holds a connection per client and a registration fd per trigger, and what it hands
    # back must fit under the soft fd limit the process starts with (systemd installs the fds first).
    store = int(get(service, 'Service', 'FileDescriptorStoreMax') or 0)
    if store < 4096 + 1024 + 2 * (16 + 4) + 10:
        fail('FileDescriptorStoreMax=%d is below MaxClients= + MaxRegistrations= + twice MaxCalls= + 4 + 10 '
             'at their defaults' % store)
    nofile = int((get(service, 'Service', 'LimitNOFILE') or '1024').split(':')[0])
    if nofile < store + 64:
        fail('LimitNOFILE=%d leaves no room for the %d fds of the store at a restart' % (nofile, store))
    if get(service, 'Service', 'Restart') != 'on-failure':
        fail('pressured.service does not restart after a crash')
    # These would make cgroup files read-only or hide /proc/pressure.
    for key, bad in [('ProtectControlGroups', 'yes'), ('ProcSubset', 'pid')]:
        if [v for k, v in service['Service'] if k == key and v == bad]:
            fail('pressured.service must not set %s=%s' % (key, bad))

    with tempfile.TemporaryDirectory(prefix='pressured-units-') as tmp:
        # verify checks that ExecStart= exists: point it at the built daemon.
        test_service = re.sub(r'(?m)^ExecStart=.*$', 'ExecStart=' + pt.PRESSURED, service_text)
        with open(os.path.join(tmp, 'pressured.service'), 'w') as f:
            f.write(test_service)
        shutil.copy(socket_unit, tmp)
        for unit in proxy_units + [report_unit]:
            shutil.copy(unit, tmp)
        units = ['pressured.socket'] + [os.path.basename(u) for u in proxy_units + [report_unit]] + ['pressured.service']

        r = run(['systemd-analyze', 'verify', '--man=no'] + units, cwd=tmp)
        complaints = [line for line in (r.stdout + r.stderr).splitlines() if 'pressured' in line]
        if r.returncode != 0 or complaints:
            fail('systemd-analyze verify (rc %d):\n%s%s' % (r.returncode, r.stdout, r.stderr))

        score, out = exposure('pressured.service', tmp)
        print('pressured.service exposure: %.1f' % score)
        if score > MAX_EXPOSURE:
            fail('exposure %.1f > %.1f:\n%s' % (score, MAX_EXPOSURE, out))
        # The base unit denies IP: the check must see that.
        if not re.search(r'✓ RestrictAddressFamilies=~AF_\(INET\|INET6\)', out):
            fail('base unit allows Internet sockets:\n' + out)

        # With the metrics drop-in the unit still verifies, and it really
        # allows AF_INET (so the drop-in was read).
        os.mkdir(os.path.join(tmp, 'pressured.service.d'))
        shutil.copy(dropin, os.path.join(tmp, 'pressured.service.d', 'metrics.conf'))
        r = run(['systemd-analyze', 'verify', '--man=no'] + units, cwd=tmp)
        complaints = [line for line in (r.stdout + r.stderr).splitlines() if 'pressured' in line]
        if r.returncode != 0 or complaints:
            fail('systemd-analyze verify with the drop-in (rc %d):\n%s%s' % (r.returncode, r.stdout, r.stderr))
        env = dict(os.environ, SYSTEMD_UNIT_PATH=tmp + ':')
        r = run(['systemd-analyze', 'security', '--offline=yes', '--no-pager', 'pressured.service'],
                cwd=tmp, env=env)
        m = re.search(r'Overall exposure level for pressured\.service: ([0-9.]+)', r.stdout + r.stderr)
        if not m:
            fail('no exposure figure with the drop-in:\n' + r.stdout + r.stderr)
        print('pressured.service + metrics drop-in exposure: %s' % m.group(1))
        if not re.search(r'✗ RestrictAddressFamilies=~AF_\(INET\|INET6\)', r.stdout):
            fail('the metrics drop-in was not applied:\n' + r.stdout)

    # The user unit of pressurectl notify.
    notify_unit = os.path.join(pt.BUILD_ROOT, 'systemd', 'pressured-notify.service')
    with open(notify_unit) as f:
        notify_text = f.read()
    if re.search(r'@[a-z_]+@', notify_text):
        fail('unsubstituted @variable@ in the built pressured-notify.service')
    notify = unit_settings(notify_text)
    exec_start = get(notify, 'Service', 'ExecStart')
    if not (exec_start.startswith('/') and exec_start.endswith('/pressurectl notify')):
        fail('pressured-notify.service ExecStart=%s does not run pressurectl notify' % exec_start)
    for section, key, want in [('Install', 'WantedBy', 'graphical-session.target'),
                               ('Unit', 'PartOf', 'graphical-session.target'),
                               ('Unit', 'After', 'graphical-session.target'),
                               ('Service', 'Restart', 'on-failure')]:
        if get(notify, section, key) != want:
            fail('pressured-notify.service %s=%s, want %s' % (key, get(notify, section, key), want))
    with tempfile.TemporaryDirectory(prefix='pressured-user-units-') as tmp:
        runtime = os.path.join(tmp, 'runtime')
        os.mkdir(runtime, 0o700)
        with open(os.path.join(tmp, 'pressured-notify.service'), 'w') as f:
            f.write(re.sub(r'(?m)^ExecStart=\S+', 'ExecStart=' + pt.PRESSURECTL, notify_text))
        r = run(['systemd-analyze', '--user', 'verify', '--man=no', 'pressured-notify.service'], cwd=tmp,
                env=dict(os.environ, XDG_RUNTIME_DIR=runtime))
        complaints = [line for line in (r.stdout + r.stderr).splitlines() if 'pressured' in line]
        if r.returncode != 0 or complaints:
            fail('systemd-analyze --user verify pressured-notify.service (rc %d):\n%s%s'
                 % (r.returncode, r.stdout, r.stderr))

    # Install locations (what DESTDIR is prefixed to).
    meson = shutil.which('meson')
    if meson:
        r = run([meson, 'introspect', '--installed', pt.BUILD_ROOT])
        if r.returncode != 0:
            fail('meson introspect --installed: ' + r.stderr)
        installed = {os.path.realpath(k): v for k, v in json.loads(r.stdout).items()}

        def dest(src):
            d = installed.get(os.path.realpath(src))
            if not d:
                fail('%s is not installed' % src)
            return d

        unitdir = os.path.dirname(dest(built_service))
        if os.path.dirname(dest(socket_unit)) != unitdir:
            fail('pressured.socket and pressured.service go to different directories')
        if os.path.dirname(dest(prekill_unit)) != unitdir:
            fail('pressured-prekill.socket and pressured.service go to different directories')
        if not unitdir.endswith('/systemd/system'):
            fail('units installed to %s, not a systemd system unit directory' % unitdir)
        if not dest(dropin).endswith('/doc/pressured/examples/pressured-metrics.conf'):
            fail('metrics drop-in example installed to %s' % dest(dropin))
        if not os.path.dirname(dest(notify_unit)).endswith('/systemd/user'):
            fail('pressured-notify.service installed to %s, not a systemd user unit directory' % dest(notify_unit))
        man = dest(os.path.join(pt.BUILD_ROOT, 'daemon', 'pressured.8'))
        if not man.endswith('/man8/pressured.8'):
            fail('pressured.8 installed to %s' % man)
        user_dir = os.path.dirname(dest(notify_unit))
        for unit in user_units():
            if os.path.dirname(dest(unit)) != user_dir:
                fail('the user unit %s is installed to %s, not with pressured-notify.service in %s'
                     % (os.path.basename(unit), dest(unit), user_dir))

    check_user_units()

    pt.finish()


if __name__ == '__main__':
    main()
