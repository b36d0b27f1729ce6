// A fake Redis for tests of what the client does with replies no real server gives: it listens on
// 127.0.0.1 (a port the kernel picks), reads the commands of every connection with corolock's own
// RESP parser, and writes whatever `answer` returns for each — raw RESP bytes, so a test can send
// any shape, any range, any type. Runs on the test's executor (coroutines, no thread of its own).
//
//   fake_redis fake(ex, [](const std::vector<std::string>& words) { return ":1\r\n"; });
//   client c(ex, fake.config());        // RESP2, no client name: nothing is said before the first
//                                       // request, so `answer` sees only what the test causes
//
// An empty answer closes the connection. stop() (or the destructor) closes every connection.
#pragma once

#include <corolock/redis/config.hpp>
#include <corolock/resp/parser.hpp>

#include <boost/asio.hpp>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace corolock::test {

class fake_redis {
public:
  using answer_fn = std::function<std::string(const std::vector<std::string>& words)>;

  fake_redis(boost::asio::any_io_executor ex, answer_fn answer)
      : st_(std::make_shared<state>(ex, std::move(answer))) {
    namespace ip = boost::asio::ip;
    st_->acceptor.open(ip::tcp::v4());
    st_->acceptor.set_option(ip::tcp::acceptor::reuse_address(true));
    st_->acceptor.bind({ip::make_address_v4("127.0.0.1"), 0});
    st_->acceptor.listen();
    boost::asio::co_spawn(ex, accept_loop(st_), boost::asio::detached);
  }
  ~fake_redis() { stop(); }
  fake_redis(const fake_redis&) = delete;
  fake_redis& operator=(const fake_redis&) = delete;

  std::uint16_t port() const { return st_->acceptor.local_endpoint().port(); }
  /// A client configuration for it: RESP2 and no client name (no handshake), quick reconnects.
  client_config config(std::chrono::milliseconds request_timeout) const {
    client_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = port();
    cfg.protocol = 2;
    cfg.client_name.clear();
    cfg.request_timeout = request_timeout;
    cfg.reconnect_min = std::chrono::milliseconds(10);
    cfg.reconnect_max = std::chrono::milliseconds(50);
    return cfg;
  }
  /// Commands read so far, on every connection.
  std::uint64_t commands() const noexcept { return st_->commands; }

  void stop() {
    boost::system::error_code ignored;
    st_->acceptor.close(ignored);
    for (auto& s : st_->sockets)
      s.close(ignored);
  }

private:
  using tcp = boost::asio::ip::tcp;
  struct state {
    state(boost::asio::any_io_executor ex, answer_fn a) : acceptor(ex), answer(std::move(a)) {}
    tcp::acceptor acceptor;
    answer_fn answer;
    std::list<tcp::socket> sockets;
    std::uint64_t commands = 0;
  };
  std::shared_ptr<state> st_;

  static boost::asio::awaitable<void> accept_loop(std::shared_ptr<state> st) {
    for (;;) {
      auto [ec, socket] = co_await st->acceptor.async_accept(
          boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec)
        co_return;
      st->sockets.push_back(std::move(socket));
      boost::asio::co_spawn(st->acceptor.get_executor(), serve(st, std::prev(st->sockets.end())),
                            boost::asio::detached);
    }
  }

  static boost::asio::awaitable<void> serve(std::shared_ptr<state> st,
                                            std::list<tcp::socket>::iterator socket) {
    constexpr auto tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    resp::parser parser;
    std::string in, out;
    char buf[4096];
    for (;;) {
      auto [ec, n] = co_await socket->async_read_some(boost::asio::buffer(buf), tuple);
      if (ec)
        break;
      in.append(buf, n);
      out.clear();
      bool close = false;
      for (;;) {
        boost::system::error_code perr;
        const auto used = parser.consume(in, perr);
        in.erase(0, used);
        if (perr) {
          close = true;
          break;
        }
        if (!parser.ready())
          break;
        std::vector<std::string> words;
        for (auto& part : parser.take().children)
          words.push_back(std::move(part.data));
        ++st->commands;
        auto reply = st->answer(words);
        if (reply.empty()) {
          close = true;
          break;
        }
        out += reply;
      }
      if (!out.empty()) {
        auto [wec, written] = co_await boost::asio::async_write(*socket, boost::asio::buffer(out),
                                                                tuple);
        if (wec)
          break;
      }
      if (close)
        break;
    }
    boost::system::error_code ignored;
    socket->close(ignored);
    // The socket stays in the list until the fake is destroyed: stop() may still walk it.
  }
};

} // namespace corolock::test
