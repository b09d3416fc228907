#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python module `pressured` (client/python), blocking and asyncio:

- where it connects (argument, --user rule, $PRESSURED_SOCKET, default),
  and DaemonNotRunning, naming the socket, when nothing listens;
- every method against the built daemon: GetInfo, GetInterfaceDescription,
  GetStatus, GetProtection (on a fake tree), Inject, Reload, Reexecute,
  Subscribe on a quiet cgroup (level, psi, memory_events, removal) with its
  typed events;
- every varlink error the daemon answers, raised as its exception with its
  parameters (an unprivileged caller for PermissionDenied), and a call over
  the 64 KiB limit refused before it is sent;
- a subscription across a daemon restart: it reconnects and subscribes
  again by itself and says so (ReconnectedEvent); calls reconnect too;
- cancelling a task that iterates a subscription closes its connection
  (the daemon's client count falls back) without a warning;
- against pt.FakeVarlinkServer, what the daemon does not give on demand:
  level streams and watch_levels() (with a reconnect and the end at
  "removed"), GetHeadroom's answers with a limit and a reclaim target, every event kind (and one it does not know),
  errors it has no cause for, garbage, silence and a hang-up.
"""
import asyncio
import contextlib
import errno
import gc
import inspect
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import warnings

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT',
                                               os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

# meson puts the package the build put together (client/python in the build
# folder, with its generated _vocabulary.py) on PYTHONPATH; run by hand,
# find it from here.
MODULE_DIR = os.path.join(pt.BUILD_ROOT, 'client', 'python')
if not any(os.path.abspath(p) == os.path.abspath(MODULE_DIR) for p in sys.path):
    sys.path.insert(0, MODULE_DIR)
import pressured  # noqa: E402

check, check_eq = pt.check, pt.check_eq
WAIT = pt.scaled(10.0)  # bound on waits that normally take milliseconds


def raises(cls, fn, *args, **kwargs):
    """Call fn(*args, **kwargs), check that it raises exactly @cls, return the exception."""
    try:
        fn(*args, **kwargs)
    except pressured.PressuredError as e:
        check(type(e) is cls, f'{fn.__name__} raises {cls.__name__}', type(e).__name__, str(e))
        return e
    raise AssertionError(f'{fn.__name__}{args!r} raised nothing, expected {cls.__name__}')


async def araises(cls, awaitable):
    """Await @awaitable, check that it raises exactly @cls, return the exception."""
    try:
        await awaitable
    except pressured.PressuredError as e:
        check(type(e) is cls, f'raises {cls.__name__}', type(e).__name__, str(e))
        return e
    raise AssertionError(f'{awaitable!r} raised nothing, expected {cls.__name__}')


def check_attrs(e, **attrs):
    for k, v in attrs.items():
        got = getattr(e, k)
        check(got == v if not callable(v) else v(got), f'{type(e).__name__}.{k}', got, v)


def status(d):
    with pressured.Client(d.socket) as c:
        return c.get_status()


def acall(sock, method, *args, **kwargs):
    """Make one call with a fresh AsyncClient, closed afterwards."""
    async def run():
        async with pressured.AsyncClient(sock) as ac:
            return await getattr(ac, method)(*args, **kwargs)
    return asyncio.run(run())


async def await_true(pred, what):
    """Wait in asyncio until @pred() (a coroutine function) is true."""
    loop = asyncio.get_running_loop()
    end = loop.time() + WAIT
    while not await pred():
        check(loop.time() < end, f'timed out waiting for {what}')
        await asyncio.sleep(0.02)


# ---- where to connect; no daemon ----

@contextlib.contextmanager
def environ(**values):
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_socket_path():
    with environ(PRESSURED_SOCKET=None, XDG_RUNTIME_DIR='/run/user/1234'):
        check_eq(pressured.socket_path(), '/run/pressured/io.pressured', 'the system socket by default')
        check_eq(pressured.Client().socket, pressured.SYSTEM_SOCKET, 'Client uses the system socket')
        check_eq(pressured.socket_path(user=True), '/run/user/1234/pressured/io.pressured', 'user=True')
        check_eq(pressured.AsyncClient(user=True).socket, '/run/user/1234/pressured/io.pressured',
                 'AsyncClient user=True')
    with environ(PRESSURED_SOCKET='/tmp/elsewhere', XDG_RUNTIME_DIR='/run/user/1234'):
        check_eq(pressured.Client().socket, '/tmp/elsewhere', '$PRESSURED_SOCKET')
        check_eq(pressured.Client(user=True).socket, '/run/user/1234/pressured/io.pressured',
                 'user=True over $PRESSURED_SOCKET, as pressurectl --user')
        check_eq(pressured.Client('/tmp/arg').socket, '/tmp/arg', 'the argument over everything')
    with environ(XDG_RUNTIME_DIR=None):
        e = raises(pressured.ConnectionFailed, pressured.Client, user=True)
        check_attrs(e, errno=errno.ENXIO)


def test_not_running(tmp):
    missing = os.path.join(tmp, 'missing.sock')
    refused = os.path.join(tmp, 'refused.sock')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(refused)  # bound, never listening: ECONNREFUSED
    try:
        for path, err in ((missing, errno.ENOENT), (refused, errno.ECONNREFUSED)):
            c = pressured.Client(path)
            for fn in (c.get_status, c.connect, lambda: c.subscribe(level='low'),
                       lambda: pressured.watch_levels(socket=path)):
                e = raises(pressured.DaemonNotRunning, fn)
                check_attrs(e, socket=path, errno=err)
                check(path in str(e) and 'not running' in str(e), 'the message names the socket', str(e))
                check(isinstance(e, ConnectionError), 'DaemonNotRunning is a ConnectionError', type(e).__mro__)

            async def run():
                ac = pressured.AsyncClient(path)
                e = await araises(pressured.DaemonNotRunning, ac.get_status())
                check_attrs(e, socket=path, errno=err)
                await araises(pressured.DaemonNotRunning, ac.subscribe(level='low'))

                async def first_level():
                    async for _ in pressured.watch_levels_async(socket=path):
                        break
                await araises(pressured.DaemonNotRunning, first_level())
            asyncio.run(run())
    finally:
        s.close()


# Paths no daemon accepts, from the bytes a command line gives: pressurectl and the module say the same.
BAD_CGROUPS = [os.fsdecode(b'/a\xff'), '/a\tb', 'relative', '/a/../b', '/a/./b', '/' + 'x' * 256, '/' + 'a/' * 2100]


def test_cgroup_arguments(tmp):
    """Every call that takes a cgroup refuses a path no daemon accepts before it connects
    (InvalidCgroupPathArgument, a ValueError; not DaemonNotRunning, though there is no daemon), with
    the reason pressurectl gives for the same bytes."""
    missing = os.path.join(tmp, 'missing.sock')
    c = pressured.Client(missing)
    calls = [lambda cg: c.get_protection(cg), lambda cg: c.get_headroom(cg), lambda cg: c.inject('low', cg),
             lambda cg: c.subscribe(cg, level='low'), lambda cg: c.subscribe(cg, kills=True),
             lambda cg: c.watch_levels(cg), lambda cg: pressured.watch_levels(cg, socket=missing)]
    for bad in BAD_CGROUPS:
        res = pt.run_ctl('headroom', bad, socket=missing)
        check(res.returncode == 2, 'pressurectl refuses it too', bad[:20], res.returncode, res.stderr)
        said = res.stderr.splitlines()[0].split(': ', 2)[2].split('; give ')[0]
        for fn in calls:
            e = raises(pressured.InvalidCgroupPathArgument, fn, bad)
            check(isinstance(e, ValueError) and isinstance(e, pressured.PressuredError), 'its bases', type(e).__mro__)
            check_eq((e.cgroup, e.reason), (bad, said), f'the path and the reason pressurectl gives ({bad[:20]!r})')
            check(said in str(e) and 'not sent' in str(e), 'the message', str(e))

        async def run():
            ac = pressured.AsyncClient(missing)
            for fn in (lambda: ac.get_protection(bad), lambda: ac.get_headroom(bad), lambda: ac.inject('low', bad),
                       lambda: ac.subscribe(bad, level='low'), lambda: ac.watch_levels(bad)):
                try:
                    r = fn()
                    if inspect.isawaitable(r):
                        await r
                except pressured.InvalidCgroupPathArgument as e:
                    check_eq(e.reason, said, 'the same from the asyncio client')
                    continue
                raise AssertionError(f'the asyncio client took {bad[:20]!r}')
        asyncio.run(run())
    try:
        c.get_headroom(b'/a')
        raise AssertionError('a bytes path was taken')
    except TypeError:
        pass
    for good in (None, '', '/', '/a.b/..c/\u00e9t\u00e9'):
        raises(pressured.DaemonNotRunning, c.get_headroom, good)


# ---- the daemon's methods ----

def check_info(info, desc, svc):
    check(isinstance(info, pressured.Info) and info.product == 'pressured' and 'io.pressured' in info.interfaces,
          'GetInfo', info)
    check(info.raw.get('vendor') == info.vendor, 'Info.raw is the reply', info.raw)
    check(desc.startswith('#') or desc.startswith('interface'), 'an IDL text', desc[:80])
    check('interface io.pressured' in desc and 'method Subscribe(' in desc, 'the io.pressured interface', desc[:200])
    check('interface org.varlink.service' in svc, 'the org.varlink.service interface', svc[:200])


def check_status(st):
    check(isinstance(st, pressured.Status) and isinstance(st.version, str) and st.clients >= 1,
          'GetStatus', st)
    check(isinstance(st.cgroup, pressured.CgroupInfo) and isinstance(st.counters, dict)
          and 'events_read' in st.counters, 'typed status parts', st.cgroup, st.counters)
    check(all(isinstance(r, pressured.Registration) for r in st.registrations), 'typed registrations',
          st.registrations)
    check(st.raw['clients'] == st.clients, 'Status.raw is the reply', st.raw)


def test_calls(d, cg):
    c = pressured.Client(d.socket)
    check(c.connect() is c, 'connect() returns the client')
    check_info(c.get_info(), c.get_interface_description(),
               c.get_interface_description('org.varlink.service'))
    check_status(c.get_status())
    check_eq(c.inject('low', cg), 0, 'Inject with no subscriber reaches none')
    check_eq(c.inject('critical', cg, resource='memory'), 0, 'Inject with a resource')
    check_eq(c.reload(), None, 'Reload')
    check('version' in c.call('io.pressured.GetStatus'), 'call() returns the parameters')
    c.close()
    c.close()

    async def run():
        async with pressured.AsyncClient(d.socket) as ac:
            check(await ac.connect() is ac, 'AsyncClient.connect() returns the client')
            check_info(await ac.get_info(), await ac.get_interface_description(),
                       await ac.get_interface_description('org.varlink.service'))
            check_status(await ac.get_status())
            check_eq(await ac.inject('low', cg), 0, 'async Inject')
            check_eq(await ac.inject('low', cg, resource='memory'), 0, 'async Inject with a resource')
            check_eq(await ac.reload(), None, 'async Reload')
            check('version' in await ac.call('io.pressured.GetStatus'), 'async call()')
            # Several tasks on one client: answered one after the other.
            many = await asyncio.gather(*(ac.get_status() for _ in range(5)))
            check(all(isinstance(s, pressured.Status) for s in many), 'concurrent calls', many)
    asyncio.run(run())


def test_headroom_and_levels_real(d, cg):
    """GetHeadroom and level streams against this daemon: GetHeadroom's
    answers (the quiet cgroup has the memory controller only where cgroup2
    has it; elsewhere it is SourceUnavailable), and a level stream: the
    level now, then a change."""
    c = pressured.Client(d.socket)
    h = c.get_headroom()
    check(isinstance(h, pressured.Headroom) and isinstance(h.usage_bytes, int) and h.limit_bytes is None
          and isinstance(h.headroom_bytes, int) and h.reclaim_target_bytes is None, 'GetHeadroom of the system', h)
    try:
        h = c.get_headroom(cg)
        check(isinstance(h, pressured.Headroom) and isinstance(h.usage_bytes, int), 'GetHeadroom', h)
    except pressured.SourceUnavailable as e:
        check(not os.path.exists(os.path.join(pt.V2_ROOT, cg.lstrip('/'), 'memory.current')), 'only without', e)
        check_attrs(e, source='headroom', reason='the cgroup has no memory controller in any hierarchy')
    with c.watch_levels(cg) as w:
        lv = w.next_event(WAIT)
        check(isinstance(lv, pressured.LevelEvent) and lv.level == 'normal' and lv.seq == 1 and lv.missed == 0,
              'the current level', lv)
        c.inject('medium', cg)
        lv = w.next_event(WAIT)
        check(isinstance(lv, pressured.LevelEvent) and lv.level == 'medium' and lv.seq == 2 and
              w.current is lv, 'a change', lv)


def wait_subscriptions(d, n):
    pt.wait_for(lambda: status(d).subscriptions == n, what=f'{n} subscriptions')


def check_pressure(ev, cg, level, seq):
    check(isinstance(ev, pressured.PressureEvent), 'a PressureEvent', ev)
    check(ev.cgroup == cg and ev.level == level and ev.seq == seq and ev.synthetic is True
          and ev.source == 'inject' and ev.missed == 0 and ev.count == 1, 'the injected event', ev)
    check(isinstance(ev.time_us, int) and isinstance(ev.monotonic_us, int), 'timestamps', ev)
    check(ev.raw['kind'] == 'pressure' and ev.raw['seq'] == seq, 'PressureEvent.raw', ev.raw)


def test_subscribe(d, cg):
    c = pressured.Client(d.socket)
    with c.subscribe(cg, level='medium') as sub:
        check_eq(sub.parameters, {'cgroup': cg, 'level': 'medium'}, 'what Subscribe is called with')
        first = sub.next_event(WAIT)
        check(isinstance(first, pressured.SubscribedEvent) and first.cgroup == cg and first.trigger.level == 'medium'
              and isinstance(first.state, pressured.State), 'subscribed first', first)
        check_eq(c.inject('medium', cg), 1, 'Inject reaches the subscription')
        check_pressure(sub.next_event(WAIT), cg, 'medium', 1)
        check_eq(c.inject('critical', cg), 1, 'second Inject')
        check_pressure(next(iter(sub)), cg, 'critical', 2)
        check(not sub.closed and sub.reconnects == 0, 'still live', sub)
    check(sub.closed and sub.next_event(0) is None, 'closed: no more events', sub)
    wait_subscriptions(d, 0)

    # Closed from another thread while one waits in it: that iteration ends.
    sub = c.subscribe(cg, level='low')
    next(sub)
    got = []
    reader = threading.Thread(target=lambda: got.extend(sub))
    reader.start()
    wait_subscriptions(d, 1)
    sub.close()
    reader.join(WAIT)
    check(not reader.is_alive() and got == [], 'close() from another thread ends the iteration', got)
    wait_subscriptions(d, 0)

    # An explicit PSI trigger in pressurectl's notation.
    with c.subscribe(cg, psi='some 150ms 2s') as sub:
        first = next(sub)
        check_eq(first.trigger.psi, pressured.PsiTrigger(stall='some', threshold_us=150000, window_us=2000000),
                 'the trigger used')
        check_eq(sub.parameters['psi'], {'stall': 'some', 'threshold_us': 150000, 'window_us': 2000000},
                 'the trigger sent')
        check_eq(c.inject('medium', cg), 1, 'Inject reaches a psi subscription')
        ev = next(sub)
        check(isinstance(ev, pressured.PressureEvent) and ev.seq == 1, 'a pressure event', ev)
    wait_subscriptions(d, 0)

    async def run():
        async with pressured.AsyncClient(d.socket) as ac:
            async with ac.subscribe(cg, level='low') as sub:
                first = await sub.next_event(WAIT)
                check(isinstance(first, pressured.SubscribedEvent) and first.trigger.level == 'low',
                      'async subscribed', first)
                check_eq(await ac.inject('low', cg), 1, 'async Inject reaches it')
                async for ev in sub:
                    check_pressure(ev, cg, 'low', 1)
                    break
                check_eq(await ac.inject('medium', cg), 1, 'async Inject reaches it again')
                check_pressure(await sub.next_event(WAIT), cg, 'medium', 2)
                check(not sub.closed and sub.reconnects == 0, 'async still live', sub)
            check(sub.closed and await sub.next_event(0) is None, 'async closed', sub)
            # Awaited rather than entered: subscribed at once, closed by aclose().
            sub = await ac.subscribe(cg, vmpressure=None, psi=pressured.PsiTrigger.parse('full 1s 2s'))
            first = await sub.next_event(WAIT)
            check(first.trigger.psi.stall == 'full' and first.trigger.psi.threshold_us == 1000000,
                  'async psi', first)
            await sub.aclose()
    asyncio.run(run())
    wait_subscriptions(d, 0)


def test_reexecute(d, cg):
    c = pressured.Client(d.socket)
    with c.subscribe(cg, level='low') as sub:
        next(sub)
        generation = c.get_status().generation
        check_eq(c.reexecute(), None, 'Reexecute')
        check_eq(c.get_status().generation, generation + 1, 'a new process took over')
        acall(d.socket, 'reexecute')
        check_eq(c.get_status().generation, generation + 2, 'async Reexecute')
        check_eq(c.inject('low', cg), 1, 'the subscription was taken over')
        ev = sub.next_event(WAIT)
        check(isinstance(ev, pressured.PressureEvent) and ev.seq == 1 and sub.reconnects == 0,
              'nothing noticed: no reconnect', ev)


# ---- errors ----

def inject_as_user(sock, cg):
    """Run by pt.run_as() as an unprivileged user: what Inject and Reload raise."""
    out = []
    c = pressured.Client(sock)
    for fn in (lambda: c.inject('low', cg), c.reload):
        try:
            fn()
            out.append(None)
        except pressured.PressuredError as e:
            out.append([type(e).__name__, e.name, e.reason])

    async def run():
        try:
            await pressured.AsyncClient(sock).inject('low', cg)
        except pressured.PressuredError as e:
            return [type(e).__name__, e.name, e.reason]
    out.append(asyncio.run(run()))
    return out


def test_errors(d, cg):
    # An unprivileged caller first, before any thread of the fake servers runs.
    try:
        denied = pt.run_as('nobody', inject_as_user, d.socket, cg)
        for r in denied:
            check(r is not None and r[:2] == ['PermissionDenied', 'io.pressured.PermissionDenied'] and r[2],
                  'PermissionDenied with its reason', denied)
    except KeyError:
        pt.skip_part('no user "nobody" to be refused Inject')

    c = pressured.Client(d.socket)
    missing = cg + '-missing'
    cases = [
        (pressured.NoSuchCgroup, lambda x: x.subscribe(missing, level='low'), {'cgroup': missing}),
        (pressured.InvalidCgroupPath, lambda x: x.subscribe(cg + '/cgroup.procs', level='low'),
         {'cgroup': cg + '/cgroup.procs'}),
        (pressured.InvalidTrigger,
         lambda x: x.subscribe(cg, psi={'stall': 'some', 'threshold_us': 1, 'window_us': 1}),
         {'reason': lambda r: isinstance(r, str) and r}),
        (pressured.InvalidParameter, lambda x: x.subscribe(cg, level='extreme'), {'parameter': 'level'}),
        (pressured.MethodNotFound, lambda x: x.call('io.pressured.Frobnicate'), {'method': 'io.pressured.Frobnicate'}),
        (pressured.InterfaceNotFound, lambda x: x.get_interface_description('com.example.nope'),
         {'interface': 'com.example.nope'}),
        (pressured.ExpectedMore, lambda x: x.call('io.pressured.Subscribe', {'cgroup': cg, 'level': 'low'}), {}),
    ]
    for cls, fn, attrs in cases:
        e = raises(cls, fn, c)
        check_attrs(e, **attrs)
        check(e.name.endswith('.' + cls.__name__) and isinstance(e, pressured.VarlinkError), 'the error name', e.name)
        check(isinstance(e.parameters, dict), 'parameters', e.parameters)

    # Over the 64 KiB limit: not sent, and the client goes on.
    huge = '/' + 'x' * 70000
    e = raises(pressured.MessageTooLarge, c.subscribe, parameters={'cgroup': huge, 'level': 'low'})
    check(e.size > 65536 and e.limit == 65536 and isinstance(e, ValueError), 'MessageTooLarge', e.size, e.limit)
    raises(pressured.MessageTooLarge, c.call, 'io.pressured.GetProtection', {'cgroup': huge})
    check_status(c.get_status())

    # A rejected configuration names the file; the old one stays in force.
    with open(d.config) as f:
        good = f.read()
    d.write_config('[Levels]\nNoSuchKey=1\n')
    e = raises(pressured.ConfigurationRejected, c.reload)
    check_attrs(e, reason=lambda r: d.config in r and 'NoSuchKey' in r)

    async def run():
        async with pressured.AsyncClient(d.socket) as ac:
            e = await araises(pressured.ConfigurationRejected, ac.reload())
            check_attrs(e, reason=lambda r: d.config in r)
            for cls, fn, attrs in cases:
                e = await araises(cls, fn(ac))
                check_attrs(e, **attrs)
            await araises(pressured.MessageTooLarge, ac.call('io.pressured.GetHeadroom', {'cgroup': huge}))
            check_status(await ac.get_status())
    asyncio.run(run())
    d.write_config(good)
    c.reload()

    # A daemon without a v1 hierarchy, and with room for two clients only.
    v1 = tempfile.mkdtemp(prefix='pressured-py-v1-')
    try:
        with pt.Daemon(config_text='[Limits]\nMaxClients=2\n', cgroup_v1_root=v1) as d2:
            c2 = pressured.Client(d2.socket)
            e = raises(pressured.SourceUnavailable, c2.subscribe, vmpressure='low')
            check_attrs(e, source='vmpressure', reason=lambda r: isinstance(r, str) and r)

            async def unavailable():
                e = await araises(pressured.SourceUnavailable,
                                  pressured.AsyncClient(d2.socket).subscribe(vmpressure={'level': 'medium'}))
                check_attrs(e, source='vmpressure')
            asyncio.run(unavailable())

            # Hold both places (once the daemon has seen every earlier connection go).
            first, second = pressured.Client(d2.socket), pressured.Client(d2.socket)

            def alone():
                try:
                    return first.get_status().clients == 1
                except pressured.LimitExceeded:
                    return False
            pt.wait_for(alone, what='the earlier connections to leave')
            check_eq(second.get_status().clients, 2, 'two clients')
            with pressured.Client(d2.socket) as third:
                e = raises(pressured.LimitExceeded, third.get_status)
            check_attrs(e, limit='MaxClients', value=2)

            async def full():
                async with pressured.AsyncClient(d2.socket) as third:
                    e = await araises(pressured.LimitExceeded, third.get_status())
                check_attrs(e, limit='MaxClients', value=2)
            asyncio.run(full())
            first.close()
            second.close()
            c2.close()
    finally:
        shutil.rmtree(v1, ignore_errors=True)


# ---- a fake cgroup2 tree: protection, memory.events, removal ----

def rewrite(path, text):
    """Rewrite @path in place with one write, as the kernel updates memory.events."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, text.encode(), 0)
        os.ftruncate(fd, len(text.encode()))
    finally:
        os.close(fd)


def test_fake_tree(tmp):
    root = os.path.join(tmp, 'v2')
    events = {'low': 0, 'high': 0, 'max': 0, 'oom': 0, 'oom_kill': 0}
    pt.make_fake_tree(root, {'/': {'current': 1 << 30},
                             '/a': {'current': 1 << 28, 'min': 1 << 29, 'low': 0, 'events': events},
                             '/b': {'current': 1 << 20}})
    with pt.Daemon(cgroup_root=root) as d:
        c = pressured.Client(d.socket)
        prot = c.get_protection('/')
        nodes = {n.cgroup: n for n in prot}
        check(len(prot) == 3 and list(nodes)[0] == '/' and all(isinstance(n, pressured.ProtectionNode)
                                                               for n in prot.nodes), 'three nodes, root first', prot)
        check(nodes['/a'].usage == 1 << 28 and nodes['/a'].min == 1 << 29 and nodes['/a'].state == 'min',
              'the protected cgroup', nodes['/a'])
        check_eq(c.get_protection('/a').nodes[0].cgroup, '/a', 'a subtree')
        check_eq(acall(d.socket, 'get_protection', '/a').nodes[0].usage, 1 << 28,
                 'async GetProtection')

        with c.subscribe('/a', memory_events=True) as sub:
            first = next(sub)
            check(first.source == 'memory_events' and first.state.counters == events, 'the counters now', first)
            rewrite(os.path.join(root, 'a', 'memory.events'),
                    ''.join(f'{k} {1 if k == "high" else 0}\n' for k in events))
            ev = sub.next_event(WAIT)
            check(isinstance(ev, pressured.MemoryEventsEvent) and ev.counters['high'] == 1 and ev.delta['high'] == 1
                  and ev.seq == 1, 'a typed memory_events event', ev)

        async def removal():
            async with pressured.AsyncClient(d.socket).subscribe('/b', memory_events=True) as sub:
                await sub.next_event(WAIT)
                shutil.rmtree(os.path.join(root, 'b'))
                kinds = [type(ev) async for ev in sub]
                check_eq(kinds, [pressured.RemovedEvent], 'the stream ends with removed, no reconnect')
                check(sub.closed and sub.reconnects == 0, 'over', sub)
        asyncio.run(removal())


# ---- restarts ----

def test_reconnect(d, cg):
    c = pressured.Client(d.socket)
    sub = c.subscribe(cg, level='medium')
    once = c.subscribe(cg, level='low', reconnect=False)
    check(isinstance(sub.next_event(WAIT), pressured.SubscribedEvent)
          and isinstance(once.next_event(WAIT), pressured.SubscribedEvent), 'subscribed')
    check_eq(c.inject('medium', cg), 2, 'both reached')
    check_pressure(sub.next_event(WAIT), cg, 'medium', 1)
    check_pressure(once.next_event(WAIT), cg, 'medium', 1)

    d.stop()  # no fd store here: the connections end
    raises(pressured.ConnectionLost, once.next_event, WAIT)
    check(once.closed, 'without reconnect the subscription is over', once)
    # While the daemon is down the subscription keeps trying, and nothing comes.
    check(sub.next_event(0.3) is None and not sub.closed, 'no event while the daemon is down', sub)
    d.start()
    ev = sub.next_event(WAIT)
    check(isinstance(ev, pressured.ReconnectedEvent) and ev.cgroup == cg and ev.attempts >= 1 and ev.reason,
          'told it reconnected', ev)
    check(isinstance(sub.next_event(WAIT), pressured.SubscribedEvent) and sub.reconnects == 1,
          'subscribed again', sub)
    # The calls' connection ended too: a call opens a new one.
    check_eq(c.inject('medium', cg), 1, 'Inject on a new connection reaches the new subscription')
    check_pressure(sub.next_event(WAIT), cg, 'medium', 1)
    sub.close()
    wait_subscriptions(d, 0)

    async def run():
        async with pressured.AsyncClient(d.socket) as ac:
            async with ac.subscribe(cg, level='medium') as sub:
                await sub.next_event(WAIT)
                check_status(await ac.get_status())
                d.kill()  # a crash
                check(await sub.next_event(0.3) is None and not sub.closed, 'async: nothing while down', sub)
                d.start()
                kinds = [type(await sub.next_event(WAIT)) for _ in range(2)]
                check_eq(kinds, [pressured.ReconnectedEvent, pressured.SubscribedEvent], 'async resumption')
                check_eq(sub.reconnects, 1, 'async reconnects')
                check_status(await ac.get_status())  # idempotent: sent again on a new connection
                check_eq(await ac.inject('medium', cg), 1, 'async Inject after the restart')
                check_pressure(await sub.next_event(WAIT), cg, 'medium', 1)
    asyncio.run(run())
    wait_subscriptions(d, 0)


# ---- asyncio cancellation ----

def test_cancel(d, cg):
    leaks = []

    class Record(logging.Handler):
        def emit(self, record):
            leaks.append(record.getMessage())

    async def clients(ac):
        return (await ac.get_status()).clients

    async def run():
        asyncio.get_running_loop().slow_callback_duration = 3600
        async with pressured.AsyncClient(d.socket) as ac:
            base = await clients(ac)
            got = asyncio.Event()

            async def with_block():
                async with ac.subscribe(cg, level='low') as sub:
                    async for _ in sub:
                        got.set()

            held = []

            async def bare():
                # Still referenced after the task ends: only the cancellation can close it.
                held.append(ac.subscribe(cg, level='low'))
                async for _ in held[-1]:
                    got.set()

            async def levels():
                async for _ in ac.watch_levels(cg):
                    got.set()

            for consume in (with_block, bare):
                got.clear()
                task = asyncio.create_task(consume())
                await asyncio.wait_for(got.wait(), WAIT)  # subscribed, now waiting for the next event
                check_eq(await clients(ac), base + 1, f'{consume.__name__}: the subscription is a client')
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                check(task.cancelled(), 'the task was cancelled', task)
                await await_true(lambda: _eq(clients(ac), base), f'{consume.__name__}: the daemon sees it leave')
            check(held[0].closed, 'the cancelled subscription is closed', held)

            # Closed by another task while one iterates: that iteration just ends.
            sub = await ac.subscribe(cg, level='low')
            await sub.next_event(WAIT)

            async def drain():
                return [e async for e in sub]
            task = asyncio.create_task(drain())
            await await_true(lambda: _eq(clients(ac), base + 1), 'the subscription is a client')
            await asyncio.sleep(0)  # let it wait for an event
            await sub.aclose()
            check_eq(await asyncio.wait_for(task, WAIT), [], 'aclose() from another task ends the iteration')
            await await_true(lambda: _eq(clients(ac), base), 'the closed subscription left')

            # Cancelled while subscribing (or refused, on a daemon without level streams).
            task = asyncio.create_task(levels())
            await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, pressured.InvalidParameter):
                await task
            await await_true(lambda: _eq(clients(ac), base), 'the level watch left')
            check_eq((await ac.get_status()).subscriptions, 0, 'no subscription left')

    logger = logging.getLogger('asyncio')
    handler = Record(logging.WARNING)
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            asyncio.run(run(), debug=True)
            gc.collect()
    finally:
        logger.removeHandler(handler)
    noise = [str(w.message) for w in caught] + leaks
    check(not noise, 'no warning about unclosed sockets or pending tasks', noise)


async def _eq(coro, value):
    return await coro == value


# ---- a fake daemon: level streams, headroom, every kind, errors, garbage ----

HEADROOM = {'usage_bytes': 300 << 20, 'limit_bytes': 512 << 20, 'limiting_cgroup': '/app.slice',
            'headroom_bytes': 212 << 20, 'reclaim_target_bytes': 0}
T = {'time_us': 1700000000000000, 'monotonic_us': 5000000}


def level(lv, seq, headroom, target, missed=0):
    return {'kind': 'level', 'cgroup': '/app.slice/app.service', 'level': lv, 'headroom_bytes': headroom,
            'reclaim_target_bytes': target, 'seq': seq, 'missed': missed} | T


def stream(*events):
    return [{'parameters': {'event': e}, 'continues': e['kind'] != 'removed'} for e in events]


EVERY_KIND = [
    {'kind': 'subscribed', 'cgroup': '/', 'source': 'kills', 'resource': 'memory', 'trigger': {},
     'adjusted': False, 'state': {'kill_sources': ['kernel']}},
    {'kind': 'pressure', 'cgroup': '/', 'source': 'psi', 'resource': 'memory', 'seq': 1, 'count': 2, 'missed': 0,
     'level': 'medium', 'psi': {'some_avg10': 12.5, 'some_avg60': 3.0, 'some_avg300': 1.0, 'some_total_us': 99},
     'protection': {'cgroup': '/', 'usage': 10, 'min': None, 'low': 5, 'emin': 0, 'elow': 5, 'min_usage': 0,
                    'low_usage': 5, 'children_min_usage': 0, 'children_low_usage': 0, 'state': 'none'}} | T,
    {'kind': 'memory_events', 'cgroup': '/', 'seq': 2, 'count': 1, 'missed': 0,
     'counters': {'oom': 1}, 'delta': {'oom': 1}} | T,
    {'kind': 'protection', 'cgroup': '/', 'seq': 3, 'count': 1, 'missed': 0, 'state': 'low', 'previous': 'none',
     'node': {'cgroup': '/', 'usage': 4, 'state': 'low'}} | T,
    {'kind': 'killed', 'cgroup': '/app.slice', 'by': 'systemd-oomd', 'reason': 'memory-pressure', 'seq': 4,
     'count': 1, 'missed': 0} | T,
    {'kind': 'cleared', 'cgroup': '/', 'source': 'psi', 'resource': 'memory', 'seq': 5, 'missed': 0,
     'duration_us': 4000000, 'events': 3, 'peak': 40.5, 'level': 'medium'} | T,
    level('low', 6, 100, 50),
    {'kind': 'from_the_future', 'cgroup': '/', 'seq': 7, 'novelty': [1, 2]},
    {'kind': 'removed', 'cgroup': '/', 'seq': 8, 'missed': 0} | T,
]
EVERY_TYPE = [pressured.SubscribedEvent, pressured.PressureEvent, pressured.MemoryEventsEvent,
              pressured.ProtectionEvent, pressured.KilledEvent, pressured.ClearedEvent, pressured.LevelEvent,
              pressured.UnknownEvent, pressured.RemovedEvent]


class Fake:
    """Answers as a daemon of the contract would, and as no daemon should."""

    def __init__(self, path):
        self.calls = []
        self.level_streams = 0
        self.server = pt.FakeVarlinkServer(path, self.answer)
        self.path = path

    def answer(self, call):
        self.calls.append(call)
        method, params = call.get('method'), call.get('parameters', {})
        if method == 'io.pressured.GetHeadroom':
            if params.get('cgroup') is None:
                return [{'parameters': {'usage_bytes': 1 << 30, 'limit_bytes': None, 'limiting_cgroup': None,
                                        'headroom_bytes': 3 << 30, 'reclaim_target_bytes': 0}}]
            return [{'parameters': HEADROOM}]
        if method == 'io.pressured.Subscribe' and params.get('levels'):
            self.level_streams += 1
            if self.level_streams % 2 == 1:  # the current level, then two changes
                return stream(level('normal', 1, 212 << 20, 0), level('medium', 2, 20 << 20, 60 << 20, missed=1),
                              level('normal', 3, 200 << 20, 0))
            # After a reconnect: "subscribed" first this time, the level now, then the cgroup goes.
            sub = {'kind': 'subscribed', 'cgroup': params.get('cgroup', '/'), 'source': 'psi',
                   'resource': 'memory', 'trigger': {}, 'adjusted': False, 'state': {}}
            return stream(sub, level('low', 1, 90 << 20, 10 << 20), {'kind': 'removed', 'cgroup': '/'})
        if method == 'io.pressured.Subscribe' and params.get('kills'):
            return stream(*EVERY_KIND)
        if method == 'io.pressured.Subscribe' and params.get('bad_event'):
            return [{'parameters': {'event': {'no': 'kind'}}, 'continues': True}]
        return {
            'test.InternalError': [{'error': 'io.pressured.InternalError', 'parameters': {'reason': 'out of memory'}}],
            'test.NotImplemented': [{'error': 'org.varlink.service.MethodNotImplemented',
                                     'parameters': {'method': 'test.NotImplemented'}}],
            'test.Denied': [{'error': 'org.varlink.service.PermissionDenied', 'parameters': {}}],
            'test.Strange': [{'error': 'com.example.Strange', 'parameters': {'why': 42}}],
            'test.Garbage': [b'this is not json\0'],
            'test.Array': [b'[1, 2, 3]\0'],
            'test.Huge': [b'"' + b'x' * 4096],
            'test.NoParameters': [{'parameters': [1]}],
            'test.Streamed': [{'parameters': {}, 'continues': True}],
            'test.Silent': [],
            'test.HangUp': None,
        }.get(method, [{'error': 'org.varlink.service.MethodNotFound', 'parameters': {'method': method}}])

    def close(self):
        self.server.close()


def check_every_kind(events):
    check_eq([type(e) for e in events], EVERY_TYPE, 'one typed event per kind, unknown kinds generic')
    sub, pressure, mem, prot, killed, cleared, lv, unknown, removed = events
    check(sub.state.kill_sources == ['kernel'] and sub.adjusted is False, 'subscribed', sub)
    check(pressure.psi.some_avg10 == 12.5 and pressure.psi.full_avg10 is None and pressure.count == 2
          and pressure.protection.min is None and pressure.protection.low == 5 and pressure.synthetic is False,
          'pressure with its psi and protection', pressure)
    check(mem.counters == {'oom': 1} and mem.delta == {'oom': 1}, 'memory_events', mem)
    check(prot.state == 'low' and prot.previous == 'none' and prot.node.usage == 4, 'protection', prot)
    check(killed.by == 'systemd-oomd' and killed.reason == 'memory-pressure' and killed.cgroup == '/app.slice',
          'killed', killed)
    check(cleared.duration_us == 4000000 and cleared.events == 3 and cleared.peak == 40.5, 'cleared', cleared)
    check(lv.level == 'low' and lv.severity == 1 and lv.reconnected is False, 'level', lv)
    check(unknown.kind == 'from_the_future' and unknown.raw['novelty'] == [1, 2] and unknown.cgroup == '/',
          'an unknown kind keeps its dict', unknown)
    check(removed.seq == 8 and removed.time_us == T['time_us'], 'removed', removed)


def check_levels(fake, first, changes, resumed):
    check(isinstance(first, pressured.LevelEvent) and first.level == 'normal' and first.headroom_bytes == 212 << 20
          and first.reclaim_target_bytes == 0 and first.seq == 1, 'the current level first', first)
    check_eq([(e.level, e.missed, e.reclaim_target_bytes) for e in changes],
             [('medium', 1, 60 << 20), ('normal', 0, 0)], 'then each change, back to normal')
    check(resumed.level == 'low' and resumed.reconnected is True and resumed.headroom_bytes == 90 << 20,
          'after a reconnect, the level now, marked', resumed)
    subscribes = [c for c in fake.calls if c.get('method') == 'io.pressured.Subscribe']
    check_eq(subscribes, [{'method': 'io.pressured.Subscribe', 'parameters': {'cgroup': '/app.slice/app.service',
                                                                               'levels': True}, 'more': True}] * 2,
             'Subscribe levels: true, sent again after the reconnect')


def test_fake(tmp):
    fake = Fake(os.path.join(tmp, 'fake.sock'))
    cg = '/app.slice/app.service'
    try:
        c = pressured.Client(fake.path)
        check_eq(c.get_headroom(cg), pressured.Headroom(**HEADROOM), 'GetHeadroom typed')
        whole = c.get_headroom()
        check(whole.limit_bytes is None and whole.limiting_cgroup is None and whole.headroom_bytes == 3 << 30,
              'GetHeadroom of the whole system', whole)
        check_eq(fake.calls[-1], {'method': 'io.pressured.GetHeadroom', 'parameters': {}}, 'no cgroup: none sent')

        # watch_levels(): the current level, changes, a reconnect, the end.
        with pressured.watch_levels(cg, socket=fake.path) as w:
            first = next(w)
            check(w.current is first, 'current is the last level read', w.current)
            changes = [next(w), next(w)]
            fake.server.drop_connections()
            resumed = w.next_event(WAIT)
            check_levels(fake, first, changes, resumed)
            check(list(w) == [] and w.removed and w.closed and w.reconnects == 1, 'over at removed', w)
        # The raw level stream: subscribe(levels=True) shows everything.
        fake.calls.clear()
        with c.subscribe(cg, levels=True) as sub:
            kinds = [next(sub).kind for _ in range(3)]
            check_eq(kinds, ['level'] * 3, 'subscribe(levels=True)')
            fake.server.drop_connections()
            kinds = [e.kind for e in sub]
            check_eq(kinds, ['reconnected', 'subscribed', 'level', 'removed'], 'the raw stream across a reconnect')

        with c.subscribe(kills=True) as sub:
            check_every_kind(list(sub))
        check_eq(pressured.parse_event(EVERY_KIND[4]).by, 'systemd-oomd', 'parse_event()')
        for bad in (None, [], {'kind': 3}, {'cgroup': '/'}):
            raises(pressured.ProtocolError, pressured.parse_event, bad)
        raises(pressured.ProtocolError, c.subscribe, parameters={'bad_event': True})

        for method, cls, attrs in (('test.InternalError', pressured.InternalError, {'reason': 'out of memory'}),
                                   ('test.NotImplemented', pressured.MethodNotImplemented,
                                    {'method': 'test.NotImplemented'}),
                                   ('test.Denied', pressured.PermissionDenied,
                                    {'name': 'org.varlink.service.PermissionDenied', 'reason': None}),
                                   ('test.Strange', pressured.VarlinkError,
                                    {'name': 'com.example.Strange', 'parameters': {'why': 42}})):
            check_attrs(raises(cls, c.call, method), **attrs)
        for method in ('test.Garbage', 'test.Array', 'test.NoParameters', 'test.Streamed'):
            raises(pressured.ProtocolError, c.call, method)
        raises(pressured.ProtocolError, pressured.Client(fake.path, max_reply_bytes=1024).call, 'test.Huge')
        raises(pressured.ConnectionLost, c.call, 'test.HangUp')
        e = raises(pressured.CallTimeout, pressured.Client(fake.path, timeout=0.2).call, 'test.Silent')
        check(isinstance(e, TimeoutError) and e.method == 'test.Silent', 'CallTimeout', e)
        check_eq(c.get_headroom(cg).headroom_bytes, 212 << 20, 'the client goes on after all that')

        fake.calls.clear()
        fake.level_streams = 0
        asyncio.run(fake_async(fake, cg))
    finally:
        fake.close()


async def fake_async(fake, cg):
    async with pressured.AsyncClient(fake.path) as ac:
        check_eq(await ac.get_headroom(cg), pressured.Headroom(**HEADROOM), 'async GetHeadroom')
        fake.calls.clear()
        async with pressured.watch_levels_async(cg, socket=fake.path) as w:
            first = await w.next_event(WAIT)
            check(w.current is first, 'async current', w.current)
            changes = [await w.__anext__(), await w.next_event(WAIT)]
            fake.server.drop_connections()
            resumed = await w.next_event(WAIT)
            check_levels(fake, first, changes, resumed)
            check([e async for e in w] == [] and w.removed and w.closed and w.reconnects == 1, 'async: removed', w)
        async with ac.watch_levels(cg) as w:
            check_eq((await w.next_event(WAIT)).level, 'normal', 'AsyncClient.watch_levels')

        async with ac.subscribe(kills=True) as sub:
            check_every_kind([e async for e in sub])
        await araises(pressured.ProtocolError, ac.subscribe(parameters={'bad_event': True}))
        check_attrs(await araises(pressured.InternalError, ac.call('test.InternalError')), reason='out of memory')
        check_attrs(await araises(pressured.MethodNotImplemented, ac.call('test.NotImplemented')),
                    method='test.NotImplemented')
        await araises(pressured.PermissionDenied, ac.call('test.Denied'))
        await araises(pressured.VarlinkError, ac.call('test.Strange'))
        for method in ('test.Garbage', 'test.Array', 'test.NoParameters', 'test.Streamed'):
            await araises(pressured.ProtocolError, ac.call(method))
        await araises(pressured.ProtocolError, pressured.AsyncClient(fake.path, max_reply_bytes=1024).call('test.Huge'))
        await araises(pressured.ConnectionLost, ac.call('test.HangUp'))
        slow = pressured.AsyncClient(fake.path, timeout=0.2)
        e = await araises(pressured.CallTimeout, slow.call('test.Silent'))
        check(isinstance(e, TimeoutError), 'async CallTimeout is a TimeoutError', e)
        await slow.close()
        check_eq((await ac.get_headroom(cg)).headroom_bytes, 212 << 20, 'the async client goes on')


def test_types():
    check_eq(pressured.PsiTrigger.parse('full 100ms 1s').to_dict(),
             {'stall': 'full', 'threshold_us': 100000, 'window_us': 1000000}, 'PsiTrigger.parse')
    for bad in ('some 150ms', 'any 1s 2s', 'some 150 2s', 'some 1m 2s'):
        try:
            pressured.PsiTrigger.parse(bad)
        except ValueError:
            continue
        raise AssertionError(f'PsiTrigger.parse({bad!r}) accepted')
    check_eq(pressured.Vmpressure(level='low', mode='local').to_dict(), {'level': 'low', 'mode': 'local'},
             'Vmpressure.to_dict')
    check_eq([pressured.LevelEvent(level=lv).severity for lv in pressured.LEVELS + ('odd',)], [0, 1, 2, 3, None],
             'LevelEvent.severity')


def main():
    pt.require_root('Inject, Reload and Reexecute are reserved to root; the quiet cgroup is made in the hierarchy')
    test_socket_path()
    test_types()
    tmp = tempfile.mkdtemp(prefix='pressured-py-')
    try:
        test_not_running(tmp)
        test_cgroup_arguments(tmp)
        with pt.quiet_cgroup() as cg, pt.Daemon(config_text='[Levels]\nClearAfterSec=600\n') as d:
            test_errors(d, cg)
            test_calls(d, cg)
            test_headroom_and_levels_real(d, cg)
            test_subscribe(d, cg)
            test_reexecute(d, cg)
            test_reconnect(d, cg)
            test_cancel(d, cg)
        test_fake_tree(tmp)
        test_fake(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
