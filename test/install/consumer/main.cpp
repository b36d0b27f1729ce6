// Prints a corolock error through the installed headers and library, for run_install_test.cmake.
#include <corolock/error.hpp>

#include <iostream>

int main() {
  const auto ec = corolock::make_error_code(corolock::error::timeout);
  std::cout << "category=" << ec.category().name() << '\n' << "timeout=" << ec.message() << '\n';
}
