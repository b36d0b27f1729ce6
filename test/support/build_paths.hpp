// Where this build keeps what the tests reach at run time: the worker programs they spawn and the
// source tree they read. The paths are compiled into build_paths.cpp alone, so that every other
// test source compiles the same in any checkout and a fresh clone (CI) finds them in ccache.
#pragma once

#include <string>

namespace corolock::test {

/// The build's test/ directory: the worker programs (corolock_lock_worker, …) are there.
const std::string& test_binary_dir();
/// The checkout the build was configured from.
const std::string& source_dir();

} // namespace corolock::test
