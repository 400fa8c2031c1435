set terminal pngcairo size 900,540 font 'sans,11'
set output 'w5.png'
set title 'W5: hand-off latency vs waiters queued behind the receiver'
set xlabel 'waiters (N)'
set ylabel 'latency (ms, log scale)'
set logscale y
set grid ytics
set key top left Left reverse
set datafile missing 'NaN'
plot 'w5.dat' using 0:3:xtic(2) with linespoints lw 2 pt 7 title 'p50', \
     'w5.dat' using 0:4 with linespoints lw 1 pt 6 dt 2 title 'p99', \
     1.91417 with lines lc rgb 'gray50' lw 1 dt 3 title 'floor p50 (bare C client cycle)'
