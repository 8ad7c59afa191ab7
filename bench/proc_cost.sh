# Shared by the desktop benchmarks (sourced, not run): what a process tree costs, read from
# /proc. Memory figures are Private_Dirty (smaps_rollup) with RSS beside them; CPU is
# utime+stime in clock ticks.
# shellcheck shell=bash

descendants() { # pid and all its descendants
  local p=$1
  echo "$p"
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do descendants "$c"; done
}
ticks() { # utime+stime of the given pids, in clock ticks
  local t=0
  for p in "$@"; do
    [ -r /proc/"$p"/stat ] || continue
    t=$((t + $(awk '{sub(/.*\) /, ""); print $12 + $13}' /proc/"$p"/stat)))
  done
  echo "$t"
}
mem() { # "private_dirty_kB rss_kB nprocs" summed over the given pids
  local pd=0 rss=0 n=0
  for p in "$@"; do
    [ -r /proc/"$p"/smaps_rollup ] || continue
    pd=$((pd + $(awk '/^Private_Dirty:/ {print $2}' /proc/"$p"/smaps_rollup)))
    rss=$((rss + $(awk '/^Rss:/ {print $2}' /proc/"$p"/smaps_rollup)))
    n=$((n + 1))
  done
  echo "$pd $rss $n"
}
