# Finds the multi-threaded ZooKeeper C client (Debian: libzookeeper-mt-dev), which
# ships neither a CMake package nor a pkg-config file. Defines ZooKeeper::zookeeper_mt.
find_path(ZooKeeper_INCLUDE_DIR zookeeper/zookeeper.h)
find_library(ZooKeeper_LIBRARY NAMES zookeeper_mt)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeper REQUIRED_VARS ZooKeeper_LIBRARY ZooKeeper_INCLUDE_DIR)
if(ZooKeeper_FOUND AND NOT TARGET ZooKeeper::zookeeper_mt)
  add_library(ZooKeeper::zookeeper_mt UNKNOWN IMPORTED)
  set_target_properties(ZooKeeper::zookeeper_mt PROPERTIES
    IMPORTED_LOCATION "${ZooKeeper_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ZooKeeper_INCLUDE_DIR}"
    # The C client declares its synchronous API only for threaded builds.
    INTERFACE_COMPILE_DEFINITIONS THREADED)
endif()
mark_as_advanced(ZooKeeper_INCLUDE_DIR ZooKeeper_LIBRARY)
