# Installs the built tree into a private prefix, then configures, builds and runs consumers that
# find corolock as a downstream project does: proves the exported targets, the package config with
# its components, the pkg-config files and the installed headers are complete.
#   consumer/    find_package(corolock REQUIRED): corolock::corolock (core + Redis), as always
#   components/  COMPONENTS zookeeper testing, with find_package(OpenSSL) disabled: its link map, its
#                symbols and ldd show no Redis object, no OpenSSL, no libmariadb, no libpq
#   sql/         COMPONENTS mysql postgresql (when they were built): no Redis object
#   etcd/        COMPONENTS etcd (when it was built): Boost.JSON and OpenSSL found, no Redis object
#   probe/       a component that is not installed: REQUIRED fails naming it, OPTIONAL sets
#                corolock_<component>_FOUND to FALSE
# and the default and components consumers again, built from the pkg-config files alone.
#
# Run as: cmake -DBUILD_DIR=<built tree> -DSOURCE_DIR=<test/install> -DWORK_DIR=<scratch dir>
#               [-DBUILD_TYPE=..] [-DGENERATOR=..] [-DCXX=..] [-DLAUNCHER=..] [-DSANITIZE=..]
#               -P run_install_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run_install_test.cmake: ${var} is not set")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})  # a stale prefix could hide a file that is no longer installed
find_program(ldd ldd REQUIRED)
find_program(nm NAMES nm llvm-nm REQUIRED)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# expect(<what> <text> MATCHES|NOT_MATCHES <regex>)
function(expect what text how regex)
  if((how STREQUAL "MATCHES" AND NOT text MATCHES "${regex}") OR
     (how STREQUAL "NOT_MATCHES" AND text MATCHES "${regex}"))
    message(FATAL_ERROR "install test: ${what}: expected ${how} '${regex}' in:\n${text}")
  endif()
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB_RECURSE config_file ${prefix}/corolockConfig.cmake)
get_filename_component(package_dir "${config_file}" DIRECTORY)
file(GLOB package_files RELATIVE ${package_dir} ${package_dir}/*.cmake)
file(GLOB_RECURSE redis_library ${prefix}/libcorolock_redis.a ${prefix}/libcorolock_redis.so)
if(NOT package_dir OR NOT redis_library)
  message(FATAL_ERROR "install test: no corolockConfig.cmake or libcorolock_redis in ${prefix}")
endif()

set(common_args -DCMAKE_PREFIX_PATH=${prefix})
if(GENERATOR)
  list(APPEND common_args -G ${GENERATOR})
endif()
if(BUILD_TYPE)
  list(APPEND common_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
if(CXX)
  list(APPEND common_args -DCMAKE_CXX_COMPILER=${CXX})
endif()
if(LAUNCHER)
  list(APPEND common_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(SANITIZE)
  # A sanitized static library needs the sanitizer runtime in whatever links it.
  list(APPEND common_args "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}"
                          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()

# consumer(<name> [configure args...]): configures, builds and runs SOURCE_DIR/<name>; sets
# <name>_exe, <name>_output, <name>_map (its link map, when it writes one).
function(consumer name)
  set(build ${WORK_DIR}/${name})
  run("configuring the ${name} consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/${name} -B ${build}
      ${common_args} ${ARGN})
  run("building the ${name} consumer" ${CMAKE_COMMAND} --build ${build})
  find_program(exe consumer PATHS ${build} ${build}/${BUILD_TYPE} NO_DEFAULT_PATH NO_CACHE REQUIRED)
  run("running the ${name} consumer" ${exe})
  set(${name}_output "${last_output}" PARENT_SCOPE)
  set(${name}_exe ${exe} PARENT_SCOPE)
  set(map "")
  if(EXISTS ${build}/consumer.map)
    file(READ ${build}/consumer.map map)
  endif()
  set(${name}_map "${map}" PARENT_SCOPE)
endfunction()

# What an executable links: its shared libraries (ldd), and how many of the Redis library's own
# symbols (its code and data, shared_symbols.sh) it defines.
function(inspect exe)
  run("ldd ${exe}" ${ldd} ${exe})
  set(shared "${last_output}" PARENT_SCOPE)
  run("Redis symbols in ${exe}" bash ${SOURCE_DIR}/shared_symbols.sh ${nm} ${redis_library} ${exe})
  string(REGEX MATCHALL "[^\n]+" found "${last_output}")
  list(LENGTH found count)
  set(redis_symbols ${count} PARENT_SCOPE)
endfunction()

# 1. The default consumer: corolock::corolock, as before components existed.
consumer(consumer)
expect("default consumer output" "${consumer_output}" MATCHES "category=corolock\ntimeout=[^\n]+\ntls=1")
expect("default consumer output" "${consumer_output}" NOT_MATCHES "unknown")
inspect(${consumer_exe})
expect("default consumer: OpenSSL (TLS) linked" "${shared}" MATCHES "libssl")
expect("default consumer: a Redis user needs no SQL client library" "${shared}" NOT_MATCHES "libmariadb|libpq")
if(redis_symbols EQUAL 0) # the check below must be able to fail
  message(FATAL_ERROR "install test: the default consumer defines none of libcorolock_redis' symbols")
endif()
string(APPEND summary "package files: ${package_files}\n"
       "default consumer (corolock::corolock): ${consumer_output}"
       "  defines ${redis_symbols} of libcorolock_redis' symbols; ldd: libssl, no libmariadb, no libpq\n")

# 2. ZooKeeper and the testing store, no Redis: find_package(OpenSSL) must not even be asked.
consumer(components -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON)
expect("components consumer output" "${components_output}"
       MATCHES "testing_token=1\nzookeeper_chroot=/app\nstore_empty=1")
string(REGEX MATCHALL "libcorolock_[a-z]+\\.a\\([^)\n]+\\)" members "${components_map}")
list(REMOVE_DUPLICATES members)
list(LENGTH members member_count)
string(REGEX MATCHALL "libcorolock_[a-z]+\\.a" archives "${members}")
list(REMOVE_DUPLICATES archives)
expect("components consumer: link map" "${archives}" MATCHES "libcorolock_zookeeper")
expect("components consumer: link map" "${components_map}" NOT_MATCHES "libcorolock_redis|libssl|libcrypto|libmariadb|libpq")
inspect(${components_exe})
expect("components consumer: shared libraries" "${shared}" NOT_MATCHES "libssl|libcrypto|libmariadb|libpq|corolock_redis")
if(NOT redis_symbols EQUAL 0)
  message(FATAL_ERROR "install test: the components consumer defines ${redis_symbols} of libcorolock_redis' symbols")
endif()
string(APPEND summary "components consumer (zookeeper testing, find_package(OpenSSL) disabled): ${components_output}"
       "  link map: ${member_count} archive members from ${archives}, none from libcorolock_redis; "
       "0 of libcorolock_redis' symbols; ldd: no libssl, libcrypto, libmariadb, libpq\n")

# 3. The SQL stores, when this build has them.
if(EXISTS ${package_dir}/corolock-mysql-targets.cmake AND
   EXISTS ${package_dir}/corolock-postgresql-targets.cmake)
  consumer(sql)
  expect("sql consumer output" "${sql_output}" MATCHES "sql_clients=2")
  expect("sql consumer: link map" "${sql_map}" NOT_MATCHES "libcorolock_redis")
  inspect(${sql_exe})
  expect("sql consumer: shared libraries" "${shared}" MATCHES "libmariadb")
  expect("sql consumer: shared libraries" "${shared}" MATCHES "libpq")
  if(NOT redis_symbols EQUAL 0)
    message(FATAL_ERROR "install test: the sql consumer defines ${redis_symbols} of libcorolock_redis' symbols")
  endif()
  string(APPEND summary "sql consumer (mysql postgresql): ${sql_output}"
         "  ldd: libmariadb, libpq; link map: no libcorolock_redis; 0 of its symbols\n")
else()
  string(APPEND summary "sql consumer: skipped (corolock::mysql or corolock::postgresql not built)\n")
endif()

# 3b. The etcd store, when this build has it: Boost.JSON and OpenSSL (etcds://), no Redis.
if(EXISTS ${package_dir}/corolock-etcd-targets.cmake)
  consumer(etcd)
  expect("etcd consumer output" "${etcd_output}" MATCHES "etcd_hosts=2\netcd_tls=1")
  expect("etcd consumer: link map" "${etcd_map}" MATCHES "libcorolock_etcd")
  expect("etcd consumer: link map" "${etcd_map}" NOT_MATCHES "libcorolock_redis")
  inspect(${etcd_exe})
  expect("etcd consumer: shared libraries" "${shared}" MATCHES "libssl")
  expect("etcd consumer: shared libraries" "${shared}" NOT_MATCHES "libmariadb|libpq")
  # The TLS code both stores share (src/detail/tls.cpp) is compiled into each library: those
  # symbols, and only those, may be in both.
  run("Redis symbols in the etcd consumer" bash ${SOURCE_DIR}/shared_symbols.sh ${nm} ${redis_library} ${etcd_exe})
  string(REGEX MATCHALL "[^\n]+" found "${last_output}")
  list(FILTER found EXCLUDE REGEX "^_ZN8corolock6detail[0-9]+[a-z_]*tls")
  list(LENGTH found not_shared)
  if(NOT not_shared EQUAL 0)
    message(FATAL_ERROR "install test: the etcd consumer defines ${not_shared} of libcorolock_redis' symbols "
                        "beyond the shared TLS code: ${found}")
  endif()
  string(APPEND summary "etcd consumer (etcd): ${etcd_output}"
         "  ldd: libssl; link map: libcorolock_etcd, no libcorolock_redis; of its symbols only the "
         "${redis_symbols} of the shared TLS code\n")
else()
  string(APPEND summary "etcd consumer: skipped (corolock::etcd not built)\n")
endif()

# 4. A component that is not installed (as mysql is where libmariadb was absent at the build).
file(GLOB mysql_files ${package_dir}/corolock-mysql-*.cmake)
if(mysql_files)
  file(REMOVE ${mysql_files})
endif()
set(probe_args -S ${SOURCE_DIR}/probe ${common_args} -DCOMPONENTS=testing,mysql)
execute_process(COMMAND ${CMAKE_COMMAND} ${probe_args} -B ${WORK_DIR}/probe_required -DREQUIRED=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "install test: REQUIRED COMPONENTS mysql found a package without mysql:\n${out}")
endif()
# (CMake wraps the package's message at any space.)
expect("REQUIRED missing component" "${err}" MATCHES "required[ \n]+components[ \n]+missing:[ \n]+mysql: not installed")
string(REGEX MATCH "mysql: not installed[^\n]*" required_words "${err}")
run("OPTIONAL_COMPONENTS probe" ${CMAKE_COMMAND} ${probe_args} -B ${WORK_DIR}/probe_optional)
expect("OPTIONAL missing component" "${last_output}" MATCHES
       "corolock_testing_FOUND=TRUE\n-- probe: corolock_mysql_FOUND=FALSE\n-- probe: corolock_FOUND=(1|TRUE)")
string(APPEND summary "missing component mysql: REQUIRED fails with \"${required_words}\"; "
       "OPTIONAL_COMPONENTS gives corolock_mysql_FOUND=FALSE, corolock_FOUND=1\n")

# 5. The default and components consumers built without CMake, from the pkg-config files alone.
find_program(pkg_config NAMES pkg-config pkgconf REQUIRED)
find_file(pc_file corolock.pc PATHS ${prefix} PATH_SUFFIXES lib/pkgconfig lib64/pkgconfig
          NO_DEFAULT_PATH NO_CACHE REQUIRED)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
if(NOT CXX)
  set(CXX c++)
endif()
set(sanitize_flags)
if(SANITIZE)
  set(sanitize_flags -fsanitize=${SANITIZE})
endif()
function(pkg_config_consumer name)
  run("pkg-config ${ARGN}" ${pkg_config} --cflags --libs ${ARGN})
  string(STRIP "${last_output}" flags)
  set(${name}_pc_flags "${flags}" PARENT_SCOPE)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(exe ${WORK_DIR}/${name}_pkg_config)
  run("building the ${name} consumer with pkg-config" ${CXX} -std=c++20 ${sanitize_flags}
      ${SOURCE_DIR}/${name}/main.cpp -o ${exe} ${flags})
  run("running the ${name} pkg-config consumer" ${exe})
  set(${name}_pc_output "${last_output}" PARENT_SCOPE)
endfunction()
pkg_config_consumer(consumer corolock)
expect("pkg-config consumer output" "${consumer_pc_output}" MATCHES "category=corolock\ntimeout=[^\n]+\ntls=1")
if(EXISTS ${package_dir}/corolock-etcd-targets.cmake)
  pkg_config_consumer(etcd corolock-etcd)
  expect("pkg-config etcd output" "${etcd_pc_output}" MATCHES "etcd_hosts=2\netcd_tls=1")
  string(APPEND summary "pkg-config corolock-etcd: ${etcd_pc_flags}\n")
endif()
pkg_config_consumer(components corolock-zookeeper corolock-testing)
expect("pkg-config components flags" "${components_pc_flags}" NOT_MATCHES "corolock_redis|-lssl|-lcrypto")
expect("pkg-config components output" "${components_pc_output}" MATCHES "testing_token=1\nzookeeper_chroot=/app")
string(APPEND summary "pkg-config corolock: ${consumer_pc_flags}\n"
       "pkg-config corolock-zookeeper corolock-testing: ${components_pc_flags}\n")

message(STATUS "install test passed:\n${summary}")
file(REMOVE_RECURSE ${WORK_DIR})
