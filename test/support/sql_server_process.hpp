// What the private database fixtures (mariadb_server, postgres_server) share: running a client
// program to its end with its output captured, watching a process stop and continue, sweeping the
// directories a killed test left behind. Plain POSIX, no Asio, as process.hpp.
#pragma once

#include "process.hpp"

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace corolock::test {

struct captured_run {
  exit_status status;
  std::string output;  ///< stdout and stderr together, as the program wrote them
};

/// Runs `argv` in `dir` until it ends (SIGKILL after `timeout`), capturing its output in a file
/// of `dir` (no pipes: the child may outlive a reader that gave up).
captured_run run_captured(std::vector<std::string> argv, const std::filesystem::path& dir,
                          std::chrono::milliseconds timeout);

/// The last `lines` lines of a text file (empty if it cannot be read).
[[nodiscard]] std::string file_tail(const std::filesystem::path& file, std::size_t lines);

/// Once per test process: removes every `<prefix>*` directory under $TMPDIR (or /tmp) whose
/// `owner` file names a process that is gone, calling `before_removal` on it first (to kill a
/// server that did not die with its test, e.g. one that changed user and so lost its
/// parent-death signal).
void sweep_orphaned_dirs(const std::string& prefix,
                         const std::function<void(const std::filesystem::path&)>& before_removal);

/// A directory made once per build by `make(dir)` (e.g. an initdb) and shared by every test
/// process of the build: `<build>/test/server-templates/<prefix>template`, made under a file lock
/// by the first process that asks (the others wait) and kept for the next runs, until a test
/// program built after it asks (its fixtures may make it another way). Fixtures copy it (copy_tree) instead of initialising a data directory
/// each: initdb takes a second, mariadb-install-db two, a copy a tenth — per test process, since
/// ctest runs each conformance case as its own process.
const std::filesystem::path& cached_template(const std::string& prefix,
                                             const std::function<void(const std::filesystem::path&)>& make);

/// `cp -a from to` (owners and modes kept: a PostgreSQL data directory must stay postgres's).
void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

/// Writes this process's pid to `<dir>/owner`, for sweep_orphaned_dirs.
void write_owner_file(const std::filesystem::path& dir);

} // namespace corolock::test
