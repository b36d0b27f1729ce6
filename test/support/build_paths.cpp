#include "support/build_paths.hpp"

namespace corolock::test {

const std::string& test_binary_dir() {
  static const std::string dir = COROLOCK_TEST_BINARY_DIR;
  return dir;
}

const std::string& source_dir() {
  static const std::string dir = COROLOCK_SOURCE_DIR;
  return dir;
}

} // namespace corolock::test
