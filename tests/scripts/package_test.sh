#!/usr/bin/env bash
# The Debian packages as a user gets them: scripts/package builds the .debs
# (incremental in build-package/; the first time, its compiles come from
# ccache when scripts/setup has built the same sources), they are unpacked with dpkg-deb -x into a temporary root, and
# tests/consumer is built against that root with find_package and with
# pkg-config, and run (build_consumer.sh); the unpacked zkr runs too. The
# Depends are checked: each package's own, and that apt accepts the three
# together on this system (a simulation, nothing is installed).
#
# Environment read: ZKR_SOURCE_DIR; PACKAGE_BUILD_DIR (scripts/package's,
# default build-package in the source tree).
set -euo pipefail
src=${ZKR_SOURCE_DIR:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { printf 'package_test: %s\n' "$*" >&2; exit 1; }

mapfile -t debs < <(cd "$src" && bash scripts/package)
((${#debs[@]} == 5)) || fail "scripts/package printed ${#debs[@]} packages, not 5"

declare -A deb_of
for deb in "${debs[@]}"; do
  deb_of[$(dpkg-deb -f "$deb" Package)]=$deb
  dpkg-deb -x "$deb" "$work/root"
done
version=$(dpkg-deb -f "${debs[0]}" Version)
runtime=$(printf '%s\n' "${!deb_of[@]}" | grep -E '^libzkrecipes[0-9]') ||
  fail "no runtime package among: ${!deb_of[*]}"
exporter=$(printf '%s\n' "${!deb_of[@]}" | grep -E '^libzkrecipes-prometheus[0-9]') ||
  fail "no exporter package among: ${!deb_of[*]}"
[[ -n ${deb_of[libzkrecipes-dev]:-} && -n ${deb_of[zkr]:-} &&
  -n ${deb_of[libzkrecipes-prometheus-dev]:-} ]] ||
  fail "expected libzkrecipes-dev, zkr and libzkrecipes-prometheus-dev among: ${!deb_of[*]}"

# Each package in its place: the runtime one holds the library named after
# its SONAME, the -dev one the link and the rest, zkr the command.
soname=$(readelf -d "$work"/root/usr/lib/*/libzkrecipes.so.*.*.* | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $runtime == "${soname%%.so*}${soname#*.so.}" ]] ||
  fail "runtime package $runtime is not named after the SONAME $soname"
# (Listings are read whole: grep -q would stop dpkg-deb with SIGPIPE.)
runtime_files=$(dpkg-deb -c "${deb_of[$runtime]}")
dev_files=$(dpkg-deb -c "${deb_of[libzkrecipes-dev]}")
grep -q "/$soname -> " <<<"$runtime_files" || fail "$runtime lacks the $soname link"
grep -q '/libzkrecipes.so -> ' <<<"$dev_files" || fail "libzkrecipes-dev lacks libzkrecipes.so"
for f in include/zkr/lock.hpp cmake/zkrecipes/zkrecipesConfig.cmake pkgconfig/zkrecipes.pc; do
  grep -q "/$f\$" <<<"$dev_files" || fail "libzkrecipes-dev lacks $f"
done
# The exporter's packages: the library after the same SONAME, and the header,
# link and CMake targets in its -dev package.
[[ $exporter == "libzkrecipes-prometheus${runtime#libzkrecipes}" ]] ||
  fail "exporter package $exporter is not named as the runtime one ($runtime)"
exporter_files=$(dpkg-deb -c "${deb_of[$exporter]}")
exporter_dev_files=$(dpkg-deb -c "${deb_of[libzkrecipes-prometheus-dev]}")
grep -q "/libzkrecipes-prometheus.so.[0-9]" <<<"$exporter_files" || fail "$exporter lacks the library"
for f in include/zkr/prometheus.hpp cmake/zkrecipes/zkrecipesPrometheusTargets.cmake \
  libzkrecipes-prometheus.so; do
  grep -q "/$f" <<<"$exporter_dev_files" || fail "libzkrecipes-prometheus-dev lacks $f"
done
! grep -q "prometheus" <<<"$dev_files" || fail "libzkrecipes-dev holds a file of the exporter"
zkr_dynamic=$(readelf -d "$work/root/usr/bin/zkr")
! grep -qE 'RPATH|RUNPATH' <<<"$zkr_dynamic" || fail "/usr/bin/zkr has a RUNPATH"

# Depends: ours with the exact version; the libraries the ELF files load
# (found by dpkg-shlibdeps, not written by hand), the C client's among them.
depends_on() { # PACKAGE WHAT
  local depends
  depends=$(dpkg-deb -f "${deb_of[$1]}" Depends)
  grep -qF -- "$2" <<<"$depends" || fail "$1 does not depend on $2: Depends: $depends"
}
depends_on libzkrecipes-dev "$runtime (= $version)"
depends_on zkr "$runtime (= $version)"
depends_on "$runtime" libzookeeper-mt2
depends_on "$exporter" "$runtime (= $version)"
depends_on "$exporter" libprometheus-cpp-pull
depends_on libzkrecipes-prometheus-dev "$exporter (= $version)"
depends_on libzkrecipes-prometheus-dev "libzkrecipes-dev (= $version)"
depends_on libzkrecipes-prometheus-dev prometheus-cpp-dev
# zkr reaches ZooKeeper only through the library: the C client is not among
# the libraries it loads itself (the benchmarks' floor, which would bring it,
# is not in the packaged zkr).
! grep -q 'libzookeeper' <<<"$zkr_dynamic" || fail "/usr/bin/zkr loads the C client itself"
apt-get install --simulate "${debs[@]}" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail "apt would not install the packages"; }

bash "$src/tests/scripts/build_consumer.sh" "$work/root/usr" "$work"
libdir=$(dirname "$(find "$work/root" -name "$soname")")
LD_LIBRARY_PATH=$libdir "$work/root/usr/bin/zkr" --version
# The packaged zkr carries only what its verbs need: no benchmark harness.
rc=0
LD_LIBRARY_PATH=$libdir "$work/root/usr/bin/zkr" bench --quick >"$work/bench.out" 2>&1 || rc=$?
((rc != 0)) && grep -q 'built without the benchmarks' "$work/bench.out" ||
  fail "the packaged zkr ran 'bench' (exit $rc): $(cat "$work/bench.out")"
echo "packages $runtime, libzkrecipes-dev, zkr, $exporter and libzkrecipes-prometheus-dev $version work from an unpacked root"
