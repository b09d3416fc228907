#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Prometheus endpoint of a running daemon: GET /metrics answers in the
text exposition format 0.0.4 (checked line by line), carries the series
users build dashboards on, agrees with GetStatus, 404s other paths, and a
client stuck halfway through its request does not block a scrape."""

import http.client
import math
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.environ['PRESSURED_SOURCE_ROOT'] + '/tests')
import pressured_test as pt  # noqa: E402

WAIT = 15.0  # bound on waits that normally take milliseconds

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL_NAME = r'[a-zA-Z_][a-zA-Z0-9_]*'
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
LABEL = LABEL_NAME + '=' + LABEL_VALUE
SAMPLE_RE = re.compile(r'^(%s)(?:\{((?:%s)(?:,%s)*,?)?\})? (\S+)(?: (-?[0-9]+))?$' % (NAME, LABEL, LABEL))
LABEL_RE = re.compile('(%s)=(%s)' % (LABEL_NAME, LABEL_VALUE))
HELP_RE = re.compile(r'^# HELP (%s) (.*)$' % NAME)
TYPE_RE = re.compile(r'^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$' % NAME)

REQUIRED = {
    'pressured_clients': 'gauge',
    'pressured_subscriptions': 'gauge',
    'pressured_registrations': 'gauge',
    'pressured_events_read_total': 'counter',
    'pressured_events_delivered_total': 'counter',
    'pressured_events_dropped_total': 'counter',
    'pressured_propagations_applied_total': 'counter',
    'pressured_propagations_skipped_total': 'counter',
    'pressured_delivery_latency_seconds': 'histogram',
    'pressured_resident_memory_bytes': 'gauge',
    'pressured_open_fds': 'gauge',
}


fail = pt.fail


def unescape(value):
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n' else m.group(1), value[1:-1])


def family_of(name, types):
    for suffix in ('_bucket', '_sum', '_count'):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) in ('histogram', 'summary'):
            return base
    return name


def parse_exposition(text):
    """Validate the text format; return ({family: type}, {(name, labels): value})."""
    if not text.endswith('\n'):
        fail('exposition does not end with a newline')
    types, helps, samples = {}, set(), {}
    seen_families, current = [], None
    for n, line in enumerate(text[:-1].split('\n'), 1):
        where = 'line %d %r' % (n, line)
        if line == '':
            continue
        if line.startswith('#'):
            m = HELP_RE.match(line)
            if m:
                if m.group(1) in helps:
                    fail('second HELP for %s at %s' % (m.group(1), where))
                if m.group(1) in seen_families:
                    fail('HELP after samples at %s' % where)
                helps.add(m.group(1))
                continue
            m = TYPE_RE.match(line)
            if m:
                if m.group(1) in types:
                    fail('second TYPE for %s at %s' % (m.group(1), where))
                if m.group(1) in seen_families:
                    fail('TYPE after samples at %s' % where)
                types[m.group(1)] = m.group(2)
                continue
            if line.startswith('# HELP') or line.startswith('# TYPE'):
                fail('malformed %s' % where)
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            fail('malformed sample %s' % where)
        name, labels, value = m.group(1), m.group(2) or '', m.group(3)
        try:
            v = float(value)
        except ValueError:
            fail('value does not parse as a float at %s' % where)
        if value.lower() in ('inf', 'infinity', 'nan') or (math.isinf(v) and value[0] not in '+-'):
            fail('non-canonical special value at %s' % where)
        label_pairs = tuple((k, unescape(val)) for k, val in LABEL_RE.findall(labels))
        if len({k for k, _ in label_pairs}) != len(label_pairs):
            fail('repeated label name at %s' % where)
        family = family_of(name, types)
        if family not in types:
            fail('sample of %s before its TYPE at %s' % (family, where))
        if family != current:
            if family in seen_families:
                fail('samples of %s are not grouped together (%s)' % (family, where))
            seen_families.append(family)
            current = family
        key = (name, tuple(sorted(label_pairs)))
        if key in samples:
            fail('duplicate series at %s' % where)
        samples[key] = v
    return types, samples


def check_histogram(name, samples):
    buckets = sorted(((float(dict(lbl)['le']), v) for (n, lbl), v in samples.items()
                      if n == name + '_bucket'), key=lambda b: b[0])
    if not buckets or not math.isinf(buckets[-1][0]):
        fail('%s has no le="+Inf" bucket' % name)
    for (le1, c1), (le2, c2) in zip(buckets, buckets[1:]):
        if c2 < c1:
            fail('%s buckets are not cumulative: le=%s %s > le=%s %s' % (name, le1, c1, le2, c2))
    count = samples.get((name + '_count', ()))
    total = samples.get((name + '_sum', ()))
    if count is None or total is None:
        fail('%s lacks _count or _sum' % name)
    if buckets[-1][1] != count:
        fail('%s +Inf bucket %s != count %s' % (name, buckets[-1][1], count))
    if total < 0:
        fail('%s_sum is negative' % name)


def get(port, path):
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=WAIT)
    try:
        c.request('GET', path)
        r = c.getresponse()
        return r.status, r.getheader('Content-Type'), r.read().decode()
    finally:
        c.close()


def wait_listening(port):
    deadline = time.monotonic() + WAIT
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                fail('the metrics endpoint never listened on port %d' % port)
            time.sleep(0.05)


def value(samples, name):
    """The value of a series, summed over its label sets (e.g. by source)."""
    values = [v for (n, _), v in samples.items() if n == name]
    if not values:
        fail('no sample %s' % name)
    return sum(values)


def episode_gauge(d, port):
    """pressured_episode_active: one series per registration labelled by
    cgroup, source, resource and trigger (values escaped), 1 while an episode is
    active. A cgroup whose name needs escaping is made when root."""
    import os
    import uuid
    subs = [pt.Varlink(d.socket)]
    subs[0].subscribe(psi={'stall': 'some', 'threshold_us': 1800000, 'window_us': 2000000})
    odd = None
    if os.geteuid() == 0 and os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')):
        odd = '/pressured-test-%s-q"b\\s' % uuid.uuid4().hex[:8]
        os.mkdir(pt.V2_ROOT + odd)
    try:
        if odd:
            subs.append(pt.Varlink(d.socket))
            first = subs[-1].subscribe(cgroup=odd, psi={'stall': 'some', 'threshold_us': 1800000,
                                                        'window_us': 2000000})
            if 'error' in first:
                fail('subscribe to %r: %r' % (odd, first))
        r = d.inject('medium')
        if r['parameters']['delivered'] != 1:
            fail('inject: %r' % r)
        _, _, body = get(port, '/metrics')
        types, samples = parse_exposition(body)
        if types.get('pressured_episode_active') != 'gauge':
            fail('pressured_episode_active: TYPE %r' % types.get('pressured_episode_active'))
        series = {dict(labels)['cgroup']: (dict(labels), v) for (n, labels), v in samples.items()
                  if n == 'pressured_episode_active'}
        want = {'/': 1} if not odd else {'/': 1, odd: 0}
        got = {cg: v for cg, (_, v) in series.items()}
        if got != want:
            fail('pressured_episode_active by cgroup: %r, want %r' % (got, want))
        for cg, (labels, _) in series.items():
            if labels.get('source') != 'psi' or labels.get('trigger') != 'some 1800ms 2s' or \
                    labels.get('resource') != 'memory':
                fail('pressured_episode_active labels of %s: %r' % (cg, labels))
        if odd and '\\"b\\\\s' not in body:
            fail('the cgroup label is not escaped as the text format wants:\n' + body)
    finally:
        for v in subs:
            v.close()
        if odd:
            pt.wait_for(lambda: not any(r['cgroup'] == odd for r in d.status()['registrations']),
                        what='the registration on the odd cgroup to go')
            os.rmdir(pt.V2_ROOT + odd)


def main():
    port = pt.free_port()
    with pt.Daemon(config_text='[Metrics]\nListen=127.0.0.1:%d\n' % port) as d:
        wait_listening(port)

        # Keep one varlink client connected so the gauges have something to count.
        v = pt.Varlink(d.socket)

        def settled():
            # The harness's readiness probe may not have been reaped yet.
            r = v.call_sync('io.pressured.GetStatus', {})
            if 'error' in r:
                fail('GetStatus: %r' % r)
            return r if r['parameters']['clients'] == 1 else None
        reply = pt.wait_for(settled, what='only this client connected')
        status = reply['parameters']

        code, ctype, body = get(port, '/metrics')
        if code != 200:
            fail('GET /metrics: %d' % code)
        if not ctype or not ctype.startswith('text/plain; version=0.0.4'):
            fail('Content-Type %r' % ctype)
        types, samples = parse_exposition(body)

        for name, want in REQUIRED.items():
            if types.get(name) != want:
                fail('%s: TYPE %r, want %s' % (name, types.get(name), want))
            if want != 'histogram':
                value(samples, name)
        check_histogram('pressured_delivery_latency_seconds', samples)
        if not any(n == 'pressured_delivery_latency_seconds_bucket' and dict(l).get('le') == '+Inf'
                   for n, l in samples):
            fail('no le="+Inf" bucket spelled +Inf')

        # The same numbers GetStatus reports (nothing happens in between).
        if value(samples, 'pressured_clients') != status['clients']:
            fail('pressured_clients %s != GetStatus clients %s' % (value(samples, 'pressured_clients'),
                                                                  status['clients']))
        if value(samples, 'pressured_clients') < 1:
            fail('pressured_clients does not count the connected client')
        if value(samples, 'pressured_subscriptions') != status['subscriptions']:
            fail('pressured_subscriptions disagrees with GetStatus')
        if value(samples, 'pressured_registrations') != len(status['registrations']):
            fail('pressured_registrations disagrees with GetStatus')
        for key in ('events_read', 'events_delivered', 'events_dropped',
                    'propagations_applied', 'propagations_skipped'):
            if value(samples, 'pressured_%s_total' % key) != status['counters'][key]:
                fail('pressured_%s_total disagrees with GetStatus' % key)
        if value(samples, 'pressured_resident_memory_bytes') <= 0:
            fail('pressured_resident_memory_bytes is not positive')
        if value(samples, 'pressured_open_fds') < 3:
            fail('pressured_open_fds is implausibly low')

        episode_gauge(d, port)

        # Other paths.
        code, _, _ = get(port, '/other')
        if code != 404:
            fail('GET /other: %d, want 404' % code)

        # A client that sends half a request and stalls does not block a scrape.
        slow = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
        slow.sendall(b'GET /metr')
        code, _, body2 = get(port, '/metrics')
        if code != 200 or 'pressured_clients' not in body2:
            fail('scrape while another client stalls: %d' % code)
        parse_exposition(body2)
        slow.close()

        # The daemon is still fine over varlink.
        if 'parameters' not in v.call_sync('io.pressured.GetStatus', {}):
            fail('GetStatus failed after the scrapes')
        v.close()
    pt.finish()


if __name__ == '__main__':
    main()
