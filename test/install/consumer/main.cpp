// Prints a corolock error through the installed headers and library, for run_install_test.cmake.
// It also builds a TLS client (never connected): that links the library's connection code, and
// with it OpenSSL, which the installed package must bring along for a static libcorolock. It
// uses a name Asio deprecates (io_context::work): linking corolock must not take those away.
#include <corolock/error.hpp>
#include <corolock/redis/client.hpp>

#include <boost/asio/io_context.hpp>

#include <iostream>

int main() {
  const auto ec = corolock::make_error_code(corolock::error::timeout);
  std::cout << "category=" << ec.category().name() << '\n' << "timeout=" << ec.message() << '\n';
  boost::asio::io_context io;
  boost::asio::io_context::work deprecated_but_allowed(io);
  corolock::redis::client tls_client(io.get_executor(), "rediss://127.0.0.1:6380");
  std::cout << "tls=" << tls_client.config().tls << '\n';
}
