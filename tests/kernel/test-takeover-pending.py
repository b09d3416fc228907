#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PSI trigger that fires, and vmpressure notifications that arrive,
while no process watches (between the old daemon's execve() at Reexecute
and the new one taking its registrations over) are delivered by the new
process. The daemon runs from a copy of its binary, which the test
replaces, as an upgrade would, by a script that waits for the test's word
before it executes the real binary; meanwhile a memory load in the
subscribed cgroups makes real pressure and stops again. The load is over
before the new process starts, so what it delivers happened in the gap."""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402


def some_total(v2):
    with open(os.path.join(v2, 'memory.pressure')) as f:
        for line in f:
            if line.startswith('some '):
                return int(line.split('total=')[1])
    return 0


def main():
    pt.require_root('PSI triggers on real cgroups, and Reexecute')
    tmp = tempfile.mkdtemp(prefix='pressured-upgrade-')
    real, binary = os.path.join(tmp, 'pressured.real'), os.path.join(tmp, 'pressured')
    go, started = os.path.join(tmp, 'go'), os.path.join(tmp, 'started')
    shutil.copy2(pt.PRESSURED, binary)
    pt.PRESSURED = binary
    try:
        with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limit='64M', limited=True) as (name, v1, v2), \
                pt.Daemon(log_level='debug') as d:
            psi, _ = kl.subscribe_ok(d, cgroup=name, psi=kl.PSI_2S)
            vm = kl.subscribe_ok(d, cgroup=name, vmpressure={'level': 'low'})[0] if v1 else None
            # The upgrade: the new binary waits for the word, then is the real one.
            os.rename(binary, real)
            with open(binary, 'w') as f:
                f.write(f'#!/bin/sh\n: > {started}\nwhile [ ! -e {go} ]; do sleep 0.05; done\nexec {real} "$@"\n')
            os.chmod(binary, 0o755)
            caller = pt.Varlink(d.socket, timeout=kl.REPLY_TIMEOUT)
            caller.call('io.pressured.Reexecute')
            pt.wait_for(lambda: os.path.exists(started), timeout=kl.REPLY_TIMEOUT,
                        what='the old process to execute the upgrade')
            gap_start = time.monotonic()
            before = some_total(v2)
            # The trigger fires when the stall grows by its threshold within one
            # window. On a loaded machine the load runs slowly and its stall is
            # spread out, so keep it going until some window (sampled every
            # 0.1 s) saw twice the threshold: the trigger has certainly fired.
            window_s = kl.PSI_2S['window_us'] / 1e6
            samples = []

            def window_stalled():
                now, total = time.monotonic(), some_total(v2)
                samples.append((now, total))
                while samples and now - samples[0][0] > window_s:
                    samples.pop(0)
                return total - samples[0][1] > 2 * kl.PSI_2S['threshold_us']

            with pt.memory_load(v1, v2, size_mb=200):
                pt.wait_for(window_stalled, timeout=kl.PRESSURE_TIMEOUT, interval=0.1,
                            what='a window of real memory stall past the trigger\'s threshold')
            stalled = some_total(v2) - before
            # Past two windows with no stall: no trigger could fire any more for what the load did.
            quiet_since = time.monotonic()
            pt.wait_for(lambda: time.monotonic() - quiet_since > 2.5 * kl.PSI_2S['window_us'] / 1e6 and
                        some_total(v2) - before == stalled, timeout=kl.PRESSURE_TIMEOUT,
                        interval=0.5, what='the stall to stop growing')
            open(go, 'w').close()
            reply = caller.recv(timeout=kl.REPLY_TIMEOUT)
            pt.check_eq(reply, {'parameters': {}}, 'the new process answers Reexecute')
            pt.check_eq(d.status()['generation'], 1, 'generation after the upgrade')

            pt.check('Took over the PSI trigger on %s, which fired meanwhile' % name in d.log(),
                     'the new process found the trigger fired', d.log()[-2000:])
            e, secs = kl.wait_pressure(psi, gap_start, timeout=kl.REPLY_TIMEOUT)
            pt.check((e['seq'], e['missed']) == (1, 0), 'the trigger that fired in the gap is the first event', e)
            print(f'{stalled} us of stall while no process watched; the PSI event came '
                  f'{secs:.2f} s after the gap began', flush=True)
            if vm:
                e, _ = kl.wait_pressure(vm, gap_start, timeout=kl.REPLY_TIMEOUT)
                pt.check(e['seq'] == 1 and e['count'] >= 1, 'vmpressure of the gap, counted', e)
                print(f'vmpressure: {e["count"]} notification(s) of the gap in one event', flush=True)
            else:
                pt.skip_part('no cgroup v1 memory hierarchy: vmpressure not tested')
            caller.close()
            psi.close()
            if vm:
                vm.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pt.finish()


if __name__ == '__main__':
    main()
