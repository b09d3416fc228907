#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PSI trigger with a 1 s window on a cgroup2 directory. Without
CAP_SYS_RESOURCE the kernel accepts only windows that are multiples of 2 s,
so the daemon registers 200ms/2s for 100ms/1s and says "adjusted": true;
with the capability the trigger is used as asked. Identical requests share
the adjusted registration."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

ASKED = {'stall': 'some', 'threshold_us': 100000, 'window_us': 1000000}
ROUNDED = {'stall': 'some', 'threshold_us': 200000, 'window_us': 2000000}


def main():
    pt.require_root('PSI triggers on a real cgroup')
    with pt.real_cgroups(v1=False, v2=True) as (name, _, v2), pt.Daemon() as d:
        privileged = kl.has_cap(d.pid, kl.CAP_SYS_RESOURCE)
        # What the kernel itself says about a 1 s window from this process.
        kernel_1s = kl.kernel_psi_error(os.path.join(v2, 'memory.pressure'), 'some 100000 1000000')
        print(f'daemon has CAP_SYS_RESOURCE: {privileged}; the kernel '
              f'{"accepts" if kernel_1s is None else "refuses"} a 1 s window from this test', flush=True)
        expected = ASKED if privileged else ROUNDED

        a, ev = kl.subscribe_ok(d, cgroup=name, psi=ASKED)
        b, ev_b = kl.subscribe_ok(d, cgroup=name, psi=ASKED)
        try:
            for e in (ev, ev_b):
                pt.check(e['source'] == 'psi', 'source', e)
                pt.check(e['adjusted'] is (not privileged), 'adjusted', privileged, e)
                pt.check(e['trigger'].get('psi') == expected, 'trigger in use', expected, e)
            regs = kl.registrations_on(d, name)
            pt.check(len(regs) == 1 and regs[0]['subscribers'] == 2, 'one shared registration', regs)
            pt.check(regs[0]['trigger'].get('psi') == expected, 'GetStatus trigger', regs)
        finally:
            kl.close_all((a, b))
    pt.finish()


if __name__ == '__main__':
    main()
