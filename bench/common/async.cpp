#include "common/async.hpp"

#include <fmt/core.h>

namespace corolock::bench {

int run_main(std::function<asio::awaitable<int>()> main) {
  asio::io_context io(1); // one thread: Asio may skip some cross-thread work
  int status = 1;
  asio::co_spawn(io, main(), [&](std::exception_ptr e, int rc) {
    io.stop(); // whatever is still pending (timers of a client being torn down) is abandoned
    if (!e) {
      status = rc;
      return;
    }
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      fmt::print(stderr, "error: {}\n", ex.what());
    }
    status = 1;
  });
  io.run();
  return status;
}

} // namespace corolock::bench
