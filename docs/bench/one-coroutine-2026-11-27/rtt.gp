set terminal pngcairo size 900,540 font 'sans,11'
set output 'rtt.png'
set title 'W1 and W2 against added round-trip latency (delay proxy)'
set xlabel 'added round trip (ms)'
set ylabel 'cycles or acquisitions per second (log scale)'
set logscale y
set grid ytics
set key top right
set datafile missing 'NaN'
plot 'rtt.dat' using 1:2 with linespoints lw 1 pt 6 dt 2 lc rgb 'gray40' title 'floor W1 (cycles/s)', \
     'rtt.dat' using 1:3 with linespoints lw 2 pt 7 lc rgb 'blue' title 'zkr W1 (cycles/s)', \
     'rtt.dat' using 1:4 with linespoints lw 1 pt 4 dt 2 lc rgb 'gray20' title 'floor W2 (acquisitions/s)', \
     'rtt.dat' using 1:5 with linespoints lw 2 pt 5 lc rgb 'red' title 'zkr W2 (acquisitions/s)', \
     'rtt.dat' using 1:6 with linespoints lw 1 pt 9 lc rgb 'dark-green' title 'Curator W1 (cycles/s)', \
     'rtt.dat' using 1:7 with linespoints lw 1 pt 11 lc rgb 'orange' title 'Curator W2 (acquisitions/s)'
