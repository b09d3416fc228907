#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a fake cgroup2 tree for tests and benchmarks, or mutate one.

A fake tree is a directory laid out like a cgroup2 hierarchy: one
directory per cgroup holding memory.current, memory.min, memory.low,
memory.events and cgroup.events. The root has memory.current only, like
the real root on kernels that have it. Pass the directory to the daemon
with --cgroup-root.

  make-fake-cgroup-tree.py DIR --nodes N [--seed S] [--depth D] [--top]
      create N cgroups (the root not counted) below DIR, at most D levels
      deep; usages of parents are the sums of their children's plus some
      memory of their own, as the kernel's hierarchical counters are.
      --top also writes what `pressurectl top` reads besides: memory.high,
      memory.max and memory.pressure (random limits and averages).
      --psi writes memory.pressure, io.pressure and cpu.pressure (random
      averages and totals; cpu.pressure without a full line on every
      third cgroup, as older kernels write it) and random oom_kill
      counts in memory.events, for the per-cgroup metrics.

  make-fake-cgroup-tree.py DIR --flat N [--prefix P] [--psi]
      create N cgroups DIR/P1 ... DIR/PN side by side (default prefix
      "cg"), all with the --psi files; for benchmarks of a wide level.

  make-fake-cgroup-tree.py DIR --mutate PERCENT [--seed S]
      rewrite memory.current of PERCENT % of the cgroups in place (and
      fix their ancestors' usages so the tree stays consistent).

Output is deterministic for a given seed.
"""

import argparse
import os
import random
import sys

PAGE = 4096
GIB = 1 << 30
MAX = "max"


def write(path, text):
    # Rewrite in place: the reader keeps files open and pread()s them.
    with open(path, "w") as f:
        f.write(text)


def setting_text(value):
    return MAX if value is None else str(value)


def random_setting(rng):
    roll = rng.random()
    if roll < 0.45:
        return 0
    if roll < 0.50:
        return None  # unlimited
    return rng.randrange(1, 4 * GIB // PAGE) * PAGE


def psi_text(rng):
    some = [round(rng.random() * 20, 2) for _ in range(3)]
    full = [round(v * rng.random(), 2) for v in some]
    return (f"some avg10={some[0]:.2f} avg60={some[1]:.2f} avg300={some[2]:.2f} total={rng.randrange(10**9)}\n"
            f"full avg10={full[0]:.2f} avg60={full[1]:.2f} avg300={full[2]:.2f} total={rng.randrange(10**9)}\n")


def psi_files(d, rng, index):
    """memory/io/cpu.pressure of one cgroup; every third has no cpu full line."""
    write(os.path.join(d, "memory.pressure"), psi_text(rng))
    write(os.path.join(d, "io.pressure"), psi_text(rng))
    cpu = psi_text(rng)
    if index % 3 == 0:
        cpu = cpu.split("\n")[0] + "\n"
    write(os.path.join(d, "cpu.pressure"), cpu)


def events_text(oom_kill):
    return f"low 0\nhigh 0\nmax 0\noom {oom_kill}\noom_kill {oom_kill}\noom_group_kill 0\n"


def build_flat(root, count, seed, prefix):
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    for i in range(1, count + 1):
        d = os.path.join(root, f"{prefix}{i}")
        os.makedirs(d, exist_ok=True)
        write(os.path.join(d, "memory.current"), f"{rng.randrange(1 << 32)}\n")
        write(os.path.join(d, "memory.events"), events_text(rng.randrange(3)))
        psi_files(d, rng, i)


def build(root, nodes, seed, depth, top=False, psi=False):
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    # children[i]: list of child indices; index 0 is the root.
    parents = [None]
    paths = [""]
    levels = [0]
    for i in range(1, nodes + 1):
        # Prefer recent nodes as parents so the tree gets some depth.
        while True:
            p = rng.randrange(0, i) if rng.random() < 0.5 else rng.randrange(max(0, i - 8), i)
            if levels[p] < depth:
                break
        parents.append(p)
        levels.append(levels[p] + 1)
        paths.append(f"{paths[p]}/cg{i}")

    own = [rng.randrange(0, 512 * 1024 * 1024 // PAGE) * PAGE for _ in range(nodes + 1)]
    usage = list(own)
    for i in range(nodes, 0, -1):
        usage[parents[i]] += usage[i]

    for i in range(nodes + 1):
        d = root + paths[i]
        os.makedirs(d, exist_ok=True)
        write(os.path.join(d, "memory.current"), f"{usage[i]}\n")
        if i == 0:
            continue
        write(os.path.join(d, "memory.min"), setting_text(random_setting(rng)) + "\n")
        write(os.path.join(d, "memory.low"), setting_text(random_setting(rng)) + "\n")
        write(os.path.join(d, "memory.events"), events_text(rng.randrange(3) if psi else 0))
        populated = 1 if usage[i] > 0 else 0
        write(os.path.join(d, "cgroup.events"), f"populated {populated}\nfrozen 0\n")
        if top:
            write(os.path.join(d, "memory.high"), setting_text(random_setting(rng)) + "\n")
            write(os.path.join(d, "memory.max"), setting_text(random_setting(rng)) + "\n")
            write(os.path.join(d, "memory.pressure"), psi_text(rng))
        if psi:
            psi_files(d, rng, i)


def scan(root):
    """All cgroup directories below root (root first), as relative paths."""
    out = []
    for dirpath, dirnames, _ in os.walk(root):
        dirnames.sort()
        out.append(os.path.relpath(dirpath, root))
    return out


def read_value(path):
    with open(path) as f:
        return int(f.read().strip())


def mutate(root, percent, seed):
    rng = random.Random(seed)
    cgroups = [c for c in scan(root) if c != "."]
    count = round(len(cgroups) * percent / 100)
    changed = rng.sample(cgroups, min(count, len(cgroups)))
    for c in changed:
        path = os.path.join(root, c, "memory.current")
        old = read_value(path)
        new = max(0, old + rng.randrange(-64, 65) * 1024 * PAGE)
        delta = new - old
        write(path, f"{new}\n")
        # Charge the ancestors alike, root included.
        parent = os.path.dirname(c)
        while True:
            p = os.path.join(root, parent, "memory.current")
            write(p, f"{max(0, read_value(p) + delta)}\n")
            if parent in ("", "."):
                break
            parent = os.path.dirname(parent)
    return len(changed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--nodes", type=int, help="number of cgroups to create")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--depth", type=int, default=4, help="maximum depth below the root")
    ap.add_argument("--top", action="store_true",
                    help="also write memory.high, memory.max and memory.pressure")
    ap.add_argument("--psi", action="store_true",
                    help="also write memory/io/cpu.pressure and oom_kill counts")
    ap.add_argument("--flat", type=int, metavar="N", help="create N sibling cgroups")
    ap.add_argument("--prefix", default="cg", help="name prefix of --flat cgroups")
    ap.add_argument("--mutate", type=float, metavar="PERCENT",
                    help="rewrite the usage of PERCENT %% of the cgroups")
    args = ap.parse_args()

    if [args.nodes, args.mutate, args.flat].count(None) != 2:
        ap.error("give exactly one of --nodes, --flat and --mutate")
    if args.flat is not None:
        if args.flat < 0:
            ap.error("--flat must be >= 0")
        build_flat(args.dir, args.flat, args.seed, args.prefix)
    elif args.nodes is not None:
        if args.nodes < 0 or args.depth < 1:
            ap.error("--nodes must be >= 0 and --depth >= 1")
        build(args.dir, args.nodes, args.seed, args.depth, args.top, args.psi)
    else:
        if not 0 <= args.mutate <= 100:
            ap.error("--mutate takes a percentage")
        n = mutate(args.dir, args.mutate, args.seed)
        print(f"mutated {n} cgroups", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
