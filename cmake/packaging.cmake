# Debian packages with CPack: one .deb per install component.
#
#   runtime  libzkrecipes<SOVERSION>  the shared library and its SONAME link
#   dev      libzkrecipes-dev         headers, the .so link, the CMake package,
#                                     zkrecipes.pc
#   tool     zkr                      the zkr command
#   prometheus      libzkrecipes-prometheus<SOVERSION>  the metrics exporter
#   prometheus_dev  libzkrecipes-prometheus-dev         its header, .so link and
#                                     CMake targets (zkrecipes::prometheus)
#   (the last two only when prometheus-cpp was found; scripts/setup installs it)
#
# scripts/package configures a build of its own for this (the test build's
# flags, installed in /usr so that GNUInstallDirs picks Debian's multiarch
# libdir) and runs cpack; docs/building.md, "Packages", says what comes out.
# Included by the top-level CMakeLists.txt after every install rule, since
# include(CPack) reads them.
#
# Dependencies: the runtime and tool packages get theirs from dpkg-shlibdeps
# (the libraries the ELF files really load: libzookeeper-mt2, spdlog, fmt,
# libstdc++...), so the list cannot drift from the link line. The dev package
# depends on the runtime package of the same version only: the public headers
# include nothing but the standard library and each other, and the CMake
# package and zkrecipes.pc ask for nothing more when the library is shared
# (Libs.private matters only for a static link, and no static library is
# shipped). tests/scripts/build_consumer.sh fails the install and package
# tests on any other include; a header that must include Boost or spdlog
# needs its -dev package in CPACK_DEBIAN_DEV_PACKAGE_DEPENDS and that check
# widened. zkr/asio.hpp is the exception: it includes Boost.Asio, and only
# its users include it, so the package suggests Boost rather than depend.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zkrecipes)
set(CPACK_PACKAGE_VENDOR "zkrecipes")
set(CPACK_PACKAGE_CONTACT "zkrecipes maintainers <maintainers@users.noreply.a-seed-d005c4a3.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # name_version-release_arch.deb
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING IGNORE)  # one package per component
set(CPACK_COMPONENTS_ALL runtime dev)
if(TARGET zkr)  # ZKR_BUILD_TOOLS
  list(APPEND CPACK_COMPONENTS_ALL tool)
endif()
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # DEPENDS below become "pkg (= version)"

# Debian names a library package after its SONAME (Policy 8.1).
get_target_property(zkr_soversion zkrecipes SOVERSION)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "libzkrecipes${zkr_soversion}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "Fair, reentrant and multi-key locks over ZooKeeper with fencing tokens and a
lost-lock signal, a connection manager with retry policies. This package holds
the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libzkrecipes-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libboost1.81-dev")  # for zkr/asio.hpp alone
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "The headers, the CMake package (find_package(zkrecipes)) and the pkg-config
file (zkrecipes.pc) to build programs against libzkrecipes.")

# The Prometheus exporter in packages of its own: a service that does not
# scrape installs neither it nor prometheus-cpp.
if(TARGET zkrecipes-prometheus)
  list(APPEND CPACK_COMPONENTS_ALL prometheus prometheus_dev)
  set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_NAME "libzkrecipes-prometheus${zkr_soversion}")
  set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_SECTION libs)
  set(CPACK_COMPONENT_PROMETHEUS_DEPENDS runtime)
  set(CPACK_COMPONENT_PROMETHEUS_DESCRIPTION
      "zkrecipes-prometheus: counts a zkrecipes Client's lock waits, grants, holds,
losses, retries, connection states and requests into a prometheus-cpp
registry, and serves it for Prometheus to scrape. The shared library.")
  set(CPACK_DEBIAN_PROMETHEUS_DEV_PACKAGE_NAME libzkrecipes-prometheus-dev)
  set(CPACK_DEBIAN_PROMETHEUS_DEV_PACKAGE_SECTION libdevel)
  set(CPACK_COMPONENT_PROMETHEUS_DEV_DEPENDS prometheus dev)
  # Its targets link prometheus-cpp's, which a consumer's find_package needs.
  set(CPACK_DEBIAN_PROMETHEUS_DEV_PACKAGE_DEPENDS "prometheus-cpp-dev (>= 1.0)")
  set(CPACK_COMPONENT_PROMETHEUS_DEV_DESCRIPTION
      "zkr/prometheus.hpp and the CMake targets (find_package(zkrecipes COMPONENTS
prometheus), zkrecipes::prometheus) to build services against
libzkrecipes-prometheus.")
endif()

set(CPACK_DEBIAN_TOOL_PACKAGE_NAME zkr)
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_TOOL_DEPENDS runtime)
set(CPACK_COMPONENT_TOOL_DESCRIPTION
    "The zkr command: flock(1) across machines (zkr lock PATH -- CMD), listing
and cleaning lock trees, and the benchmarks (zkr bench).")

# dpkg-shlibdeps for the ELF files of runtime and tool. The zkr binary loads
# libzkrecipes, which is not installed on the build machine: the private dir
# lets dpkg-shlibdeps find it (it then has no package to name, which CPack's
# --ignore-missing-info allows; the component dependency above names it).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
get_target_property(zkr_library_dir zkrecipes BINARY_DIR)  # no output dir is set
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${zkr_library_dir}")
# DEBIAN/shlibs, so that packages built against ours depend on it correctly.
# The SONAME changes with every ABI break, hence ">=" within one SONAME.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

# A .deb installs in /usr, with the libdir GNUInstallDirs chose for that
# prefix at configure time: refuse to package a build configured for another
# prefix rather than ship /usr/local's layout under /usr.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_ZKR_CONFIGURED_PREFIX "${CMAKE_INSTALL_PREFIX}")  # CPack sees every CPACK_*
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/packaging_check.cmake)

include(CPack)
