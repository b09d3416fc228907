# SPDX-License-Identifier: MIT
# Fan-out latency against the number of subscribers, from fanout.csv (written
# by bench-fanout). Run by run-benchmarks.sh:
#   gnuplot -e "csv='OUT/fanout.csv'; png='tests/bench/latency.png'" tests/bench/plot.gp
# The floor (a minimal writer sending the same bytes to as many sockets) is
# drawn as its own lines, dashed; its write loop alone is the dotted line,
# the daemon's counterpart (injection accepted to its reply arriving, which
# it queues after writing every subscriber) the solid green one.
if (!exists("csv")) csv = 'fanout.csv'
if (!exists("png")) png = 'latency.png'

set terminal pngcairo size 900,560 enhanced font 'DejaVu Sans,10'
set output png
set datafile separator ','
set key top left box opaque
set logscale xy
set xrange [0.7:6000]
set xlabel 'subscribers on one registration'
set ylabel 'inject-to-receive latency (µs)'
set title 'pressured fan-out: latency percentiles vs a minimal writer (floor)'
set grid xtics ytics mxtics mytics
set xtics (1, 10, 100, 1000, 4000)

is(mode, col) = (strcol(1) eq mode ? column(col) : 1/0)

plot csv using 2:(is('daemon', 6)) skip 1 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'daemon p50', \
     csv using 2:(is('daemon', 7)) skip 1 with linespoints lw 2 pt 5 lc rgb '#d62728' title 'daemon p99', \
     csv using 2:(is('floor', 6)) skip 1 with linespoints lw 1.5 dt 2 pt 6 lc rgb '#1f77b4' title 'floor p50', \
     csv using 2:(is('floor', 7)) skip 1 with linespoints lw 1.5 dt 2 pt 4 lc rgb '#d62728' title 'floor p99', \
     csv using 2:(is('daemon', 11)) skip 1 with linespoints lw 2 pt 9 lc rgb '#2ca02c' title 'daemon: accept to Inject reply (all written)', \
     csv using 2:(is('floor', 11)) skip 1 with linespoints lw 1.5 dt 3 pt 8 lc rgb '#2ca02c' title 'floor: time to write all sockets'
