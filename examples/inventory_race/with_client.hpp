// What the demo's coordinator and workers do in main: run one coroutine with a corolock::redis::client on
// its own io_context and turn how it ended into an exit code.
#pragma once

#include <corolock/corolock.hpp>

#include <boost/asio.hpp>
#include <fmt/core.h>

#include <exception>
#include <string>

namespace inventory_race {

/// Runs `program(client)` (an asio::awaitable<int>) to its end; returns its result, or 1 after
/// printing an exception as "`what` failed: ...". The client is closed either way: one left open
/// would keep io.run() reconnecting.
template <typename Program>
int with_client(const std::string& url, const char* what, Program program) {
  boost::asio::io_context io;
  corolock::redis::client redis(io.get_executor(), url);
  int status = 1;
  boost::asio::co_spawn(io, program(redis), [&](std::exception_ptr e, int rc) {
    redis.close();
    status = rc;
    if (e) {
      status = 1;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        fmt::print(stderr, "{} failed: {}\n", what, ex.what());
      }
    }
  });
  io.run();
  return status;
}

} // namespace inventory_race
