# Compiles through ccache (ZKR_CCACHE=ON; scripts/setup turns it on), set up so
# that two build trees of this source tree with the same flags share their
# objects: scripts/package's build of the .debs then finds the library and zkr
# already compiled by the test build, instead of compiling them again.
#
#   CCACHE_BASEDIR    the source tree: paths below it are hashed relative to
#                     the compiler's working directory, and build/src and
#                     build-package/src see the same relative paths
#   CCACHE_NOHASHDIR  so the working directory itself is left out of the hash;
#                     an object taken from the other tree keeps that tree's
#                     directory in its line tables (sources are named
#                     relative to it, so they still resolve)
#   CCACHE_DEPEND     the hash comes from the compiler's own -MD list of
#                     headers: no second preprocessor run on a miss, so a cold
#                     build costs what it did without ccache
#
# The cache is ccache's own (CCACHE_DIR, by default ~/.cache/ccache).
option(ZKR_CCACHE "Compile through ccache, sharing objects between build trees of this source tree" OFF)
if(ZKR_CCACHE)
  find_program(ZKR_CCACHE_PROGRAM ccache REQUIRED)
  set(zkr_ccache_launcher
      ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=true
      CCACHE_DEPEND=true ${ZKR_CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${zkr_ccache_launcher})
endif()
