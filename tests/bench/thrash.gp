# SPDX-License-Identifier: MIT
# The thrash benchmark's delay distribution per step, from the CSV files of
# bench-thrash.py: every delivery's delay behind the direct reader
# (thrash-delays.csv: step, room, delay), one column of points per step,
# and each step's p50 and p99 (thrash.csv).
#   gnuplot -e "dir='OUT'; png='tests/bench/thrash.png'" tests/bench/thrash.gp
if (!exists("dir")) dir = '.'
if (!exists("sfx")) sfx = ''
if (!exists("png")) png = 'thrash.png'

set terminal pngcairo size 900,560 enhanced font 'DejaVu Sans,10'
set output png
set datafile separator ','
set key top right box opaque
set xlabel 'room left for file pages (MiB of MemAvailable after the anonymous hog)'
set ylabel 'delay behind the direct reader (ms)'
set title "pressured under thrashing: subscriber's delay per step (some 50ms 1s on /, 2 GiB VM, no swap)"
set grid ytics
set xrange [0.5:*]
set yrange [*:*]
set offsets 0, 0.5, 0, 0

delays = dir.'/thrash'.sfx.'-delays.csv'
steps = dir.'/thrash'.sfx.'.csv'
jitter(x) = x + (rand(0) - 0.5) * 0.3

plot delays using (jitter($1)):3 skip 1 with points pt 7 ps 0.5 lc rgb '#7f7f7f' title 'each delivery', \
     steps using ($0 + 1):10:xticlabels(1) skip 1 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'p50', \
     steps using ($0 + 1):11 skip 1 with linespoints lw 2 pt 5 lc rgb '#d62728' title 'p99'
