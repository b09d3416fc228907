#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Triggers and cgroups that cannot be registered.

On the kernels this was checked against (6.x) every PSI trigger that passes
the daemon's own rules is accepted by the kernel (the 2 s granularity for
unprivileged processes is handled by rounding, see test-psi-adjusted.py), so
no kernel-only refusal can be provoked. This test therefore checks that the
triggers the kernel refuses are refused by the daemon with InvalidTrigger
and a reason, before anything is registered, and that the kernel does
refuse each of them when written directly. A cgroup whose PSI the kernel
has switched off (cgroup.pressure = 0) gives SourceUnavailable, and a
"level" subscription on a cgroup that exists in neither hierarchy gives
NoSuchCgroup.

All of it needs only cgroup2 but the vmpressure subscription on the missing
cgroup (NoSuchCgroup), which needs a cgroup v1 memory hierarchy; on a pure
cgroup2 host that part is left out, saying so, and vmpressure must be
SourceUnavailable instead.
"""
import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernlib as kl  # noqa: E402
from kernlib import pt  # noqa: E402

REFUSED = [
    # (threshold_us, window_us)
    (100000, 12000000),    # window above 10 s
    (100000, 400000),      # window below 500 ms
    (0, 2000000),          # zero threshold
    (3000000, 2000000),    # threshold above the window
    (100000, 4294967295),  # window far too long (still a valid u32)
]


def expect_error(d, name, params, error):
    v, msg = kl.subscribe(d, cgroup=name, **params)
    try:
        pt.check(msg.get('error') == error, f'{params} gives {error}', msg)
        return msg['parameters']
    finally:
        v.close()


def main():
    pt.require_root('kernel registrations on real cgroups')
    with pt.real_cgroups(v1=pt.IF_PRESENT, v2=True, limit=None) as (name, v1, v2), pt.Daemon() as d:
        pressure = os.path.join(v2, 'memory.pressure')
        for threshold, window in REFUSED:
            for stall in ('some', 'full'):
                text = f'{stall} {threshold} {window}'
                pt.check(kl.kernel_psi_error(pressure, text) == errno.EINVAL,
                         f'the kernel accepts "{text}"; the daemon\'s rules are stricter than the kernel\'s')
                p = expect_error(d, name, {'psi': {'stall': stall, 'threshold_us': threshold,
                                                   'window_us': window}},
                                 'io.pressured.InvalidTrigger')
                pt.check(isinstance(p.get('reason'), str) and p['reason'], 'InvalidTrigger has a reason', p)
        st = d.status()
        pt.check(kl.registrations_on(d, name) == [] and st['counters']['registrations_created'] == 0,
                 'a refused trigger left a registration behind', st)

        # The kernel refuses triggers on a cgroup whose PSI is switched off.
        pt.write_file(os.path.join(v2, 'cgroup.pressure'), '0')
        try:
            p = expect_error(d, name, {'psi': kl.PSI_2S}, 'io.pressured.SourceUnavailable')
            pt.check(p.get('source') == 'psi' and p.get('reason'), 'SourceUnavailable names psi and a reason', p)
        finally:
            pt.write_file(os.path.join(v2, 'cgroup.pressure'), '1')
        # Once enabled again the same trigger works.
        v, _ = kl.subscribe_ok(d, cgroup=name, psi=kl.PSI_2S)
        v.close()

        missing = name + '-missing'
        pt.check(not os.path.exists(pt.V2_ROOT + missing), 'the missing cgroup exists', missing)
        pt.check(not v1 or not os.path.exists(pt.V1_MEMORY_ROOT + missing), 'the missing v1 cgroup exists', missing)
        for level in ('low', 'critical'):
            p = expect_error(d, missing, {'level': level}, 'io.pressured.NoSuchCgroup')
            pt.check(p.get('cgroup') == missing, 'NoSuchCgroup names the cgroup', p)
        p = expect_error(d, missing, {'psi': kl.PSI_2S}, 'io.pressured.NoSuchCgroup')
        pt.check(p.get('cgroup') == missing, 'NoSuchCgroup (psi) names the cgroup', p)
        if v1:
            p = expect_error(d, missing, {'vmpressure': {'level': 'low'}}, 'io.pressured.NoSuchCgroup')
            pt.check(p.get('cgroup') == missing, 'NoSuchCgroup (vmpressure) names the cgroup', p)
        else:
            kl.no_v1('NoSuchCgroup for vmpressure')
            kl.expect_no_vmpressure(d, missing)
    pt.finish()


if __name__ == '__main__':
    main()
