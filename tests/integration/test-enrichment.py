#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A pressure event on a cgroup whose protection is tracked carries that
cgroup's protection node, so a subscriber sees whether it was protected when
pressure hit; on an untracked cgroup it does not."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402

GIB = 1 << 30


def next_injected(sub):
    """The next injected event on @sub. The subscription is the whole
    system's (the one PSI registration a fake tree allows), so real pressure
    on the machine may send events of its own before it."""
    ev = sub.recv()['parameters']['event']
    while ev.get('source') != 'inject':
        ev = sub.recv()['parameters']['event']
    return ev


def main():
    pt.require_root('Inject is reserved to root')
    with tempfile.TemporaryDirectory(prefix='pressured-fake-') as root:
        pt.make_fake_tree(root, {
            '/': {'current': 3 * GIB},
            '/a': {'current': GIB, 'min': 2 * GIB, 'low': 0},
        })
        with pt.Daemon(cgroup_root=root) as d:
            # Pressure on "/" (the real /proc/pressure/memory) before tracking.
            watcher = pt.Varlink(d.socket)
            ev = watcher.subscribe(level='critical')['parameters']['event']
            pt.check(ev['kind'] == 'subscribed', 'subscribed', ev)
            r = d.inject('critical')
            pt.check(r['parameters']['delivered'] == 1, 'one subscriber reached', r)
            ev = next_injected(watcher)
            pt.check('protection' not in ev, 'no node while nothing is tracked', ev)

            # Track the whole tree: now the event says how "/" stood.
            prot = pt.Varlink(d.socket)
            sub = prot.subscribe(protection=True)['parameters']['event']
            pt.check(sub['state']['node']['cgroup'] == '/', 'protection tracks /', sub)
            d.inject('critical')
            ev = next_injected(watcher)
            node = ev.get('protection')
            pt.check(isinstance(node, dict), 'pressure event carries the protection node', ev)
            pt.check(node['cgroup'] == '/' and node['usage'] == 3 * GIB, 'the node of /', node)
            for k in ('min', 'low', 'emin', 'elow', 'min_usage', 'low_usage', 'children_min_usage',
                      'children_low_usage', 'state'):
                pt.check(k in node, 'node field ' + k, node)
            pt.check(node['children_min_usage'] == GIB, 'child /a contributes its usage under min', node)
            prot.close()
            watcher.close()
    pt.finish()


if __name__ == '__main__':
    main()
