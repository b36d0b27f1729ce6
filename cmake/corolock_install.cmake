include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS corolock corolock_warnings EXPORT corolockTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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
