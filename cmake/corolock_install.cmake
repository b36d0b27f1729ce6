# Installs the libraries, headers, CMake package and pkg-config files. The package has one
# component per store library; a component is installed when its library was built, as its own
# export file (corolock-<component>-targets.cmake) beside a file that finds what that library needs
# at a user's link (corolock-<component>-dependencies.cmake). corolockConfig.cmake loads the core
# and the components asked for:
#   find_package(corolock CONFIG REQUIRED)                          corolock::corolock (core + Redis),
#                                                                   and zookeeper/testing if installed
#   find_package(corolock CONFIG REQUIRED COMPONENTS zookeeper testing)  those and the core, no Redis
include(CMakePackageConfigHelpers)

set(corolock_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/corolock)
set(corolock_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH COROLOCK_PC_PREFIX_FROM_PCDIR
  ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
get_target_property(corolock_core_type corolock_core TYPE)
if(corolock_core_type STREQUAL "STATIC_LIBRARY")
  set(COROLOCK_STATIC TRUE) # a store's client library is then needed at the user's link
else()
  set(COROLOCK_STATIC FALSE)
endif()

# corolock_install_component(<component> TARGETS <targets> [DEPENDENCIES <cmake code>]
#                            PC_DESCRIPTION <text> [PC_REQUIRES <pkg-config modules>] [PC_LIBS <flags>])
# DEPENDENCIES runs in the user's find_package (static builds only) and sets
# corolock_<component>_FOUND FALSE with _corolock_reason when a dependency is missing.
function(corolock_install_component component)
  cmake_parse_arguments(arg "" "DEPENDENCIES;PC_DESCRIPTION;PC_REQUIRES;PC_LIBS" "TARGETS" ${ARGN})
  install(TARGETS ${arg_TARGETS} EXPORT corolock-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}) # the include directory comes with corolock::core
  install(EXPORT corolock-${component}-targets NAMESPACE corolock:: DESTINATION ${corolock_cmake_dir})

  set(dependencies "# What corolock::${component} needs at a user's link; included by corolockConfig.cmake.\n")
  if(COROLOCK_STATIC AND arg_DEPENDENCIES)
    string(APPEND dependencies "${arg_DEPENDENCIES}\n")
  endif()
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/corolock-${component}-dependencies.cmake "${dependencies}")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolock-${component}-dependencies.cmake
          DESTINATION ${corolock_cmake_dir})

  # pkg-config: corolock-<component>.pc (the core's Cflags come through Requires).
  set(COROLOCK_PC_NAME corolock-${component})
  set(COROLOCK_PC_DESCRIPTION "${arg_PC_DESCRIPTION}")
  set(COROLOCK_PC_REQUIRES "${arg_PC_REQUIRES}")
  set(COROLOCK_PC_LIBS "${arg_PC_LIBS}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/corolock-component.pc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/corolock-${component}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolock-${component}.pc DESTINATION ${corolock_pc_dir})
endfunction()

set(lib "-L\${libdir} -l")
corolock_install_component(core TARGETS corolock_core corolock_warnings
  PC_DESCRIPTION "corolock's store-neutral lock core (needs Boost >= 1.81 headers)"
  PC_LIBS "${lib}corolock_core -pthread")
if(TARGET corolock_redis)
  # A static libcorolock_redis.a names OpenSSL::SSL in its exported link interface.
  corolock_install_component(redis TARGETS corolock_redis corolock
    DEPENDENCIES [[
find_package(OpenSSL QUIET)
if(NOT OpenSSL_FOUND)
  set(corolock_redis_FOUND FALSE)
  set(_corolock_reason "OpenSSL (libssl-dev) not found")
endif()]]
    PC_DESCRIPTION "corolock's Redis client and locks"
    PC_REQUIRES "corolock-core openssl" # libcorolock_redis is static by default
    PC_LIBS "${lib}corolock_redis")
endif()
if(TARGET corolock_zookeeper)
  corolock_install_component(zookeeper TARGETS corolock_zookeeper
    PC_DESCRIPTION "corolock's ZooKeeper client and locks"
    PC_REQUIRES "corolock-core" PC_LIBS "${lib}corolock_zookeeper")
endif()
if(TARGET corolock_etcd)
  # A static libcorolock_etcd.a names Boost::json (its request and reply bodies) and OpenSSL::SSL
  # (etcds://) at the user's link.
  corolock_install_component(etcd TARGETS corolock_etcd
    DEPENDENCIES [[
find_package(Boost 1.81 QUIET CONFIG COMPONENTS json)
find_package(OpenSSL QUIET)
if(NOT TARGET Boost::json)
  set(corolock_etcd_FOUND FALSE)
  set(_corolock_reason "Boost.JSON (libboost-json-dev) not found")
elseif(NOT OpenSSL_FOUND)
  set(corolock_etcd_FOUND FALSE)
  set(_corolock_reason "OpenSSL (libssl-dev) not found")
endif()]]
    PC_DESCRIPTION "corolock's etcd client and locks"
    PC_REQUIRES "corolock-core openssl" PC_LIBS "${lib}corolock_etcd -lboost_json")
endif()
corolock_install_component(testing TARGETS corolock_testing
  PC_DESCRIPTION "corolock's in-memory testing store"
  PC_REQUIRES "corolock-core" PC_LIBS "${lib}corolock_testing")
# Both SQL libraries hash lock names with libcrypto (OpenSSL::Crypto in their link interface).
set(find_libcrypto [[
find_package(OpenSSL QUIET)
if(NOT TARGET OpenSSL::Crypto)
  set(corolock_${_corolock_component}_FOUND FALSE)
  set(_corolock_reason "OpenSSL's libcrypto (libssl-dev) not found")
endif()]])
if(TARGET corolock_mysql)
  corolock_install_component(mysql TARGETS corolock_mysql
    DEPENDENCIES "${find_libcrypto}
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBMARIADB QUIET IMPORTED_TARGET libmariadb)
endif()
if(NOT TARGET PkgConfig::LIBMARIADB)
  set(corolock_mysql_FOUND FALSE)
  set(_corolock_reason \"libmariadb (libmariadb-dev) not found by pkg-config\")
endif()"
    PC_DESCRIPTION "corolock's MariaDB/MySQL locks"
    PC_REQUIRES "corolock-core libmariadb libcrypto" PC_LIBS "${lib}corolock_mysql")
endif()
if(TARGET corolock_postgresql)
  get_target_property(found_by corolock_postgresql COROLOCK_CLIENT_FOUND_BY)
  if(found_by STREQUAL "pkg-config")
    set(find_libpq [[
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
endif()
if(NOT TARGET PkgConfig::LIBPQ)]])
    set(pc_requires "corolock-core libpq libcrypto")
    set(pc_libs "${lib}corolock_postgresql")
  else()
    set(find_libpq [[
find_package(PostgreSQL QUIET)
if(NOT TARGET PostgreSQL::PostgreSQL)]])
    set(pc_requires "corolock-core libcrypto")
    set(pc_libs "${lib}corolock_postgresql -lpq")
  endif()
  corolock_install_component(postgresql TARGETS corolock_postgresql
    DEPENDENCIES "${find_libcrypto}
${find_libpq}
  set(corolock_postgresql_FOUND FALSE)
  set(_corolock_reason \"libpq (libpq-dev) not found\")
endif()"
    PC_DESCRIPTION "corolock's PostgreSQL locks"
    PC_REQUIRES "${pc_requires}" PC_LIBS "${pc_libs}")
endif()

install(DIRECTORY include/corolock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

configure_package_config_file(cmake/corolockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/corolockConfig.cmake
  INSTALL_DESTINATION ${corolock_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/corolockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolockConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/corolockConfigVersion.cmake
  DESTINATION ${corolock_cmake_dir})

# For builds that do not use CMake: pkg-config --cflags --libs corolock (core + Redis, as always),
# or corolock-<component> for one store.
if(TARGET corolock)
  configure_file(cmake/corolock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/corolock.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/corolock.pc DESTINATION ${corolock_pc_dir})
endif()
