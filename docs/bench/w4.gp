set terminal pngcairo size 900,540 font 'sans,11'
set output 'w4.png'
set title 'W4: lock cycle latency vs other lock keys under the root'
set xlabel 'other lock keys already present (N)'
set ylabel 'latency (ms, log scale)'
set logscale y
set grid ytics
set key top left Left reverse
set datafile missing 'NaN'
plot 'w4.dat' using 0:3:xtic(2) with linespoints lw 2 pt 7 title 'flat p50', \
     'w4.dat' using 0:4 with linespoints lw 1 pt 6 dt 2 title 'flat p99', \
     'w4.dat' using 0:5 with linespoints lw 2 pt 5 title 'hashed p50', \
     'w4.dat' using 0:6 with linespoints lw 1 pt 4 dt 2 title 'hashed p99', \
     1.91417 with lines lc rgb 'gray50' lw 1 dt 3 title 'floor p50 (bare C client cycle)'
