# Read by cpack before it packages (CPACK_PROJECT_CONFIG_FILE, set in
# packaging.cmake): a .deb installs in /usr, so the build must have been
# configured for /usr, or its libdir and paths would be /usr/local's.
if(CPACK_GENERATOR STREQUAL "DEB"
   AND NOT CPACK_ZKR_CONFIGURED_PREFIX STREQUAL CPACK_PACKAGING_INSTALL_PREFIX)
  message(FATAL_ERROR "zkrecipes: this build is configured for ${CPACK_ZKR_CONFIGURED_PREFIX}; "
                      "a .deb installs in ${CPACK_PACKAGING_INSTALL_PREFIX}: use scripts/package")
endif()
