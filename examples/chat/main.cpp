// chat_server: one instance of a chat service that several processes share through one Redis.
//
//   chat_server --port 7001 --redis-url redis://127.0.0.1:6379 --name instance1
//               [--announce-lease-ms 1000] [--lock-lease-ms 2000] [--digest-ms 300]
//               [--key-prefix chat:] [--bind 127.0.0.1]
//
// --port 0 picks a free port; the log line "listening on HOST:PORT" names it. SIGINT/SIGTERM stop
// the instance cleanly (nicknames freed, announcer lock released).
#include "server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/core.h>

#include <csignal>
#include <cstdlib>
#include <string_view>

namespace {

[[noreturn]] void usage(std::string_view problem) {
  fmt::print(
      stderr,
      "chat_server: {}\n"
      "usage: chat_server --port P --redis-url URL --name NAME [--announce-lease-ms MS]\n"
      "                   [--lock-lease-ms MS] [--digest-ms MS] [--key-prefix P] [--bind ADDR]\n",
      problem);
  std::exit(2);
}

std::chrono::milliseconds millis(std::string_view flag, std::string_view v) {
  auto n = chat::to_int(v);
  if (!n || *n < 1 || *n > 86'400'000)
    usage(fmt::format("{} needs a number of milliseconds, got '{}'", flag, v));
  return std::chrono::milliseconds(*n);
}

} // namespace

int main(int argc, char** argv) {
  chat::server_options opts;
  std::string url = "redis://127.0.0.1:6379";
  bool have_port = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc)
      usage(fmt::format("{} needs a value", flag));
    std::string_view v = argv[++i];
    if (flag == "--port") {
      auto p = chat::to_int(v);
      if (!p || *p < 0 || *p > 65535)
        usage("bad port");
      opts.port = static_cast<std::uint16_t>(*p);
      have_port = true;
    } else if (flag == "--redis-url") {
      url = v;
    } else if (flag == "--name") {
      opts.name = v;
    } else if (flag == "--announce-lease-ms") {
      opts.announce_lease = millis(flag, v);
    } else if (flag == "--lock-lease-ms") {
      opts.lock_lease = millis(flag, v);
    } else if (flag == "--digest-ms") {
      opts.digest_interval = millis(flag, v);
    } else if (flag == "--key-prefix") {
      opts.key_prefix = v;
    } else if (flag == "--bind") {
      opts.bind = v;
    } else {
      usage(fmt::format("unknown option {}", flag));
    }
  }
  if (!have_port)
    usage("--port is required");
  if (!chat::valid_name(opts.name))
    usage("--name is required: 1-32 of A-Z a-z 0-9 _ . -");

  try {
    boost::asio::io_context io;
    auto cfg = corolock::redis::client_config::from_url(url);
    cfg.client_name = "chat-" + opts.name;
    corolock::redis::client redis(io.get_executor(), cfg);
    chat::server srv(redis, opts);

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (!ec) {
        srv.log(fmt::format("signal {}: shutting down", sig));
        srv.request_stop();
      }
    });

    int status = 0;
    boost::asio::co_spawn(io, srv.run(), [&](std::exception_ptr e) {
      signals.cancel(); // the last piece of work: io.run() returns once the server is done
      if (!e)
        return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        srv.log(fmt::format("fatal: {}", x.what()));
      }
      status = 1;
      redis.close();
    });
    io.run();
    return status;
  } catch (const std::exception& e) {
    fmt::print(stderr, "chat_server {}: {}\n", opts.name, e.what());
    return 1;
  }
}
