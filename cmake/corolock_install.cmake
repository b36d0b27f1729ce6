include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS corolock corolock_warnings EXPORT corolockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET corolock_zookeeper) # COROLOCK_ZOOKEEPER: corolock::zookeeper for find_package users too
  install(TARGETS corolock_zookeeper EXPORT corolockTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# corolock::testing (always built): the in-memory store for users' own tests.
install(TARGETS corolock_testing EXPORT corolockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/corolock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT corolockTargets NAMESPACE corolock::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/corolock)

configure_package_config_file(cmake/corolockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/corolockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/corolock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/corolockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolockConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/corolockConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/corolock)

# For builds that do not use CMake: pkg-config --cflags --libs corolock
file(RELATIVE_PATH COROLOCK_PC_PREFIX_FROM_PCDIR
  ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(cmake/corolock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/corolock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
