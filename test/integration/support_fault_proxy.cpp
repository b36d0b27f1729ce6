// The fault proxy against a real redis-server: what passes, when, and how connections die. Raw
// sockets where a test must see exactly which bytes arrived and how the stream ended.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/blocking_client.hpp>
#include <support/fault_proxy.hpp>
#include <support/redis_server.hpp>

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace ct = corolock::test;
using ct::direction;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

constexpr std::string_view ping = "*1\r\n$4\r\nPING\r\n";  // 14 bytes
constexpr std::string_view pong = "+PONG\r\n";             // 7 bytes
constexpr std::string_view incr = "*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n";

/// A plain blocking TCP connection that tells how its stream ended.
class raw_connection {
public:
  explicit raw_connection(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
      throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error(std::string("connect failed: ") + std::strerror(errno));
    }
  }
  ~raw_connection() { ::close(fd_); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  /// False if the connection refused the bytes (reset).
  bool send(std::string_view data) {
    while (!data.empty()) {
      const auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0) {
        note_error(errno);
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// What arrives within `wait`, stopping early once `want` bytes came or the stream ended.
  std::string receive(std::size_t want, std::chrono::milliseconds wait) {
    std::string got;
    const auto deadline = steady::now() + wait;
    while (got.size() < want && !ended()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
      if (left <= 0ms)
        break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        continue;
      char buffer[65536];
      const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0)
        eof_ = true;
      else if (n < 0)
        note_error(errno);
      else
        got.append(buffer, static_cast<std::size_t>(n));
    }
    return got;
  }

  bool was_reset() const { return reset_; }
  bool saw_eof() const { return eof_; }
  bool ended() const { return reset_ || eof_; }

private:
  void note_error(int err) {
    if (err == ECONNRESET || err == EPIPE)
      reset_ = true;
    else if (err != EINTR && err != EAGAIN)
      throw std::runtime_error(std::string("socket error: ") + std::strerror(err));
  }

  int fd_ = -1;
  bool reset_ = false, eof_ = false;
};

/// Polls `condition` every 5 ms for up to `limit` (the proxy accepts and closes asynchronously).
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 3s) {
  const auto deadline = steady::now() + limit;
  while (!condition()) {
    if (steady::now() > deadline)
      return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::chrono::milliseconds ms_since(steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
}

/// Clients connected to the server (CLIENT LIST), the asking connection included.
std::size_t server_clients(ct::redis_server& server) {
  const auto list = server.command({"CLIENT", "LIST"});
  return static_cast<std::size_t>(std::count(list.begin(), list.end(), '\n')); // one line each
}

} // namespace

BOOST_AUTO_TEST_SUITE(support_fault_proxy)

BOOST_AUTO_TEST_CASE(passes_commands_and_a_1_mib_value_through) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  BOOST_TEST(proxy.port() != 0);
  BOOST_TEST(proxy.port() != server.port());
  BOOST_TEST(proxy.url() == "redis://127.0.0.1:" + std::to_string(proxy.port()));
  BOOST_TEST(proxy.url("pw") == "redis://:pw@127.0.0.1:" + std::to_string(proxy.port()));

  ct::blocking_client c("127.0.0.1", proxy.port());
  BOOST_TEST(ct::render(c.execute({"SET", "k", "v"})) == "OK");
  BOOST_TEST(ct::render(c.execute({"GET", "k"})) == "v");
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>('a' + (i * 7919) % 26);
  BOOST_TEST(ct::render(c.execute({"SET", "big", big})) == "OK");
  BOOST_TEST((ct::render(c.execute({"GET", "big"})) == big));
  BOOST_TEST(server.command({"STRLEN", "big"}) == "1048576"); // it really went to that server
  BOOST_TEST(eventually([&] { return proxy.stats().held_server_to_client == 0; }));
  auto s = proxy.stats();
  BOOST_TEST(s.accepted == 1u);
  BOOST_TEST(s.live == 1u);
  BOOST_TEST(s.bytes_client_to_server > (1u << 20));
  BOOST_TEST(s.bytes_server_to_client > (1u << 20));
  BOOST_TEST(s.held_client_to_server == 0u);
  BOOST_TEST(s.held_server_to_client == 0u);
}

BOOST_AUTO_TEST_CASE(counters_count_bytes_and_connections) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  {
    raw_connection a(proxy.port()), b(proxy.port());
    BOOST_TEST(eventually([&] { return proxy.stats().live == 2; }));
    BOOST_TEST(a.send(ping));
    BOOST_TEST(a.receive(pong.size(), 2s) == pong);
    BOOST_TEST(b.send(ping));
    BOOST_TEST(b.receive(pong.size(), 2s) == pong);
    // A write is counted when the proxy learns it completed, a moment after the peer may read it.
    BOOST_TEST(eventually([&] { return proxy.stats().bytes_server_to_client == 2 * pong.size(); }));
    auto s = proxy.stats();
    BOOST_TEST(s.accepted == 2u);
    BOOST_TEST(s.bytes_client_to_server == 2 * ping.size());
    BOOST_TEST(s.bytes_server_to_client == 2 * pong.size());
    BOOST_TEST(s.resets == 0u);
  }
  // Both clients closed: the close goes through to the server, and the proxy forgets them.
  BOOST_TEST(eventually([&] { return proxy.stats().live == 0; }));
  BOOST_TEST(eventually([&] { return server_clients(server) == 1; }));
  BOOST_TEST(proxy.stats().accepted == 2u);
  BOOST_TEST(proxy.stats().resets == 0u);
}

BOOST_AUTO_TEST_CASE(delay_holds_every_chunk_for_its_duration_in_order) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  ct::blocking_client c("127.0.0.1", proxy.port());
  BOOST_TEST(ct::render(c.execute({"PING"})) == "PONG");

  proxy.delay(direction::both, 150ms);
  auto start = steady::now();
  BOOST_TEST(ct::render(c.execute({"PING"})) == "PONG");
  auto took = ms_since(start);
  BOOST_TEST(took >= 300ms); // 150 ms each way
  BOOST_TEST(took < 800ms);

  proxy.delay(direction::both, 0ms);
  proxy.delay(direction::server_to_client, 200ms);
  start = steady::now();
  BOOST_TEST(ct::render(c.execute({"PING"})) == "PONG");
  took = ms_since(start);
  BOOST_TEST(took >= 200ms);
  BOOST_TEST(took < 600ms);

  // Replies to commands sent 30 ms apart come back in order, the last at least the delay after it
  // was sent.
  proxy.delay(direction::server_to_client, 100ms);
  start = steady::now();
  for (int i = 0; i < 3; ++i) {
    c.send({"INCR", "n"});
    std::this_thread::sleep_for(30ms);
  }
  for (int i = 1; i <= 3; ++i)
    BOOST_TEST(ct::render(c.read()) == std::to_string(i));
  took = ms_since(start);
  BOOST_TEST(took >= 160ms); // the last INCR was sent at ~60 ms and delayed 100 ms
  BOOST_TEST(took < 500ms);

  proxy.delay(direction::both, 0ms);
  start = steady::now();
  BOOST_TEST(ct::render(c.execute({"PING"})) == "PONG");
  BOOST_TEST(ms_since(start) < 100ms);
}

BOOST_AUTO_TEST_CASE(blackhole_holds_data_until_lifted_then_delivers_it_in_order) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  raw_connection c(proxy.port());
  BOOST_TEST(c.send(ping));
  BOOST_TEST(c.receive(pong.size(), 2s) == pong);

  // Replies stall; the command itself goes through.
  proxy.blackhole(direction::server_to_client, true);
  BOOST_TEST(c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"));
  BOOST_TEST(c.send(ping));
  BOOST_TEST(eventually([&] { return server.command({"GET", "k"}) == "v"; }));
  BOOST_TEST(c.receive(1, 400ms).empty());
  BOOST_TEST(!c.ended()); // the link is silent, not closed
  BOOST_TEST(proxy.stats().held_server_to_client == std::string_view("+OK\r\n+PONG\r\n").size());
  proxy.blackhole(direction::server_to_client, false);
  BOOST_TEST(c.receive(12, 2s) == "+OK\r\n+PONG\r\n");

  // Commands stall; the server sees nothing until the lift.
  proxy.blackhole(direction::client_to_server, true);
  BOOST_TEST(c.send("*3\r\n$3\r\nSET\r\n$1\r\nj\r\n$1\r\nw\r\n"));
  std::this_thread::sleep_for(300ms);
  BOOST_TEST(server.command({"GET", "j"}) == "(nil)");
  BOOST_TEST(c.receive(1, 100ms).empty());
  proxy.blackhole(direction::client_to_server, false);
  BOOST_TEST(c.receive(5, 2s) == "+OK\r\n");
  BOOST_TEST(server.command({"GET", "j"}) == "w");
  BOOST_TEST(proxy.stats().resets == 0u);
}

BOOST_AUTO_TEST_CASE(discard_drops_held_data_and_the_connection_lives_on) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  raw_connection c(proxy.port());
  proxy.blackhole(direction::both, true);
  constexpr std::string_view set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
  BOOST_TEST(c.send(set));
  BOOST_TEST(eventually([&] { return proxy.stats().held_client_to_server == set.size(); }));
  proxy.discard(direction::client_to_server);
  BOOST_TEST(proxy.stats().held_client_to_server == 0u);
  proxy.blackhole(direction::both, false);
  BOOST_TEST(c.send(ping));
  BOOST_TEST(c.receive(pong.size(), 2s) == pong); // only the PING reached the server
  BOOST_TEST(server.command({"EXISTS", "k"}) == "0");
}

BOOST_AUTO_TEST_CASE(drop_after_resets_the_connection_after_exactly_that_many_bytes) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  {
    raw_connection c(proxy.port());
    BOOST_TEST(c.send(ping));
    BOOST_TEST(c.receive(pong.size(), 2s) == pong);
    proxy.drop_after(direction::server_to_client, 5); // counts from now
    BOOST_TEST(c.send(ping));
    BOOST_TEST(c.receive(100, 2s) == "+PONG"); // the cut write's 5 bytes, then the end
    BOOST_TEST(c.was_reset());
    BOOST_TEST(eventually([&] { return proxy.stats().live == 0; }));
  }
  { // A new connection gets the same budget, counted from its start.
    raw_connection c(proxy.port());
    BOOST_TEST(c.send(incr));
    BOOST_TEST(c.receive(100, 300ms) == ":1\r\n"); // 4 bytes of 5: still open
    BOOST_TEST(!c.ended());
    BOOST_TEST(c.send(incr));
    BOOST_TEST(c.receive(100, 2s) == ":");
    BOOST_TEST(c.was_reset());
  }
  BOOST_TEST(proxy.stats().resets == 2u);
  BOOST_TEST(server.command({"GET", "n"}) == "2");

  // The other way: a 1 MiB SET is cut after 1000 bytes; the server sees a reset, not the command.
  proxy.drop_after(direction::server_to_client, ct::fault_proxy::never);
  proxy.drop_after(direction::client_to_server, 1000);
  ct::blocking_client c("127.0.0.1", proxy.port());
  BOOST_CHECK_THROW(c.execute({"SET", "big", std::string(1 << 20, 'x')}), std::runtime_error);
  const auto s = proxy.stats();
  BOOST_TEST(s.resets == 3u);
  BOOST_TEST(s.bytes_client_to_server == 2 * ping.size() + 2 * incr.size() + 1000);
  BOOST_TEST(eventually([&] { return server_clients(server) == 1; }));
  BOOST_TEST(server.command({"EXISTS", "big"}) == "0");
}

BOOST_AUTO_TEST_CASE(reset_all_resets_both_sides_of_every_connection) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  raw_connection a(proxy.port()), b(proxy.port());
  for (auto* c : {&a, &b}) {
    BOOST_TEST(c->send(ping));
    BOOST_TEST(c->receive(pong.size(), 2s) == pong);
  }
  BOOST_TEST(server_clients(server) == 3u);
  proxy.reset_all();
  for (auto* c : {&a, &b}) {
    BOOST_TEST(c->receive(1, 2s).empty());
    BOOST_TEST(c->was_reset()); // RST, not a graceful close
  }
  BOOST_TEST(proxy.stats().resets == 2u);
  BOOST_TEST(proxy.stats().live == 0u);
  BOOST_TEST(eventually([&] { return server_clients(server) == 1; }));
  // Later connections are not affected.
  raw_connection c(proxy.port());
  BOOST_TEST(c.send(ping));
  BOOST_TEST(c.receive(pong.size(), 2s) == pong);
}

BOOST_AUTO_TEST_CASE(refuse_resets_new_connections_and_keeps_current_ones) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  raw_connection before(proxy.port());
  // connect() returns once the kernel has the connection; the proxy accepts it a moment later, and
  // refuse() applies to what it accepts from then on.
  BOOST_TEST_REQUIRE(eventually([&] { return proxy.stats().live == 1; }));
  proxy.refuse(true);
  {
    raw_connection refused(proxy.port()); // the connect itself succeeds (the listener stays)
    BOOST_TEST(refused.receive(1, 2s).empty());
    BOOST_TEST(refused.was_reset());
  }
  BOOST_TEST(proxy.stats().refused == 1u);
  BOOST_TEST(proxy.stats().accepted == 2u);
  BOOST_TEST(before.send(ping));
  BOOST_TEST(before.receive(pong.size(), 2s) == pong);
  BOOST_CHECK_THROW(ct::blocking_client("127.0.0.1", proxy.port()).execute({"PING"}),
                    std::runtime_error);
  proxy.refuse(false);
  BOOST_TEST(ct::render(ct::blocking_client("127.0.0.1", proxy.port()).execute({"PING"})) == "PONG");
  BOOST_TEST(proxy.stats().refused == 2u);
}

BOOST_AUTO_TEST_CASE(a_dead_server_behind_the_proxy_looks_like_a_reset) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  server.kill();
  {
    raw_connection c(proxy.port());
    BOOST_TEST(c.receive(1, 2s).empty());
    BOOST_TEST(c.was_reset());
  }
  server.restart();
  BOOST_TEST(ct::render(ct::blocking_client("127.0.0.1", proxy.port()).execute({"PING"})) == "PONG");
  BOOST_TEST(proxy.stats().resets == 1u);
}

BOOST_AUTO_TEST_CASE(fragment_writes_a_reply_a_few_bytes_at_a_time) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  server.command({"SET", "k", "0123456789"});
  proxy.fragment(direction::server_to_client, 2, 30ms);
  ct::blocking_client c("127.0.0.1", proxy.port());
  auto start = steady::now();
  BOOST_TEST(ct::render(c.execute({"GET", "k"})) == "0123456789"); // 17 bytes: 9 pieces, 8 gaps
  auto took = ms_since(start);
  BOOST_TEST(took >= 240ms);
  BOOST_TEST(took < 1000ms);
  // Without a gap the pieces arrive whole and in order.
  proxy.fragment(direction::server_to_client, 2, 0ms);
  raw_connection r(proxy.port());
  BOOST_TEST(r.send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
  BOOST_TEST(r.receive(17, 2s) == "$10\r\n0123456789\r\n");
  proxy.heal();
  start = steady::now();
  BOOST_TEST(ct::render(c.execute({"GET", "k"})) == "0123456789");
  BOOST_TEST(ms_since(start) < 100ms);
}

BOOST_AUTO_TEST_CASE(serves_a_corolock_client_on_another_io_context) {
  ct::redis_server server;
  ct::fault_proxy proxy(server.port());
  ct::run_async([&](boost::asio::any_io_executor ex) -> boost::asio::awaitable<void> {
    corolock::redis::client c(ex, proxy.url());
    co_await c.connect();
    corolock::redis::request r;
    r.push("PING");
    proxy.delay(direction::client_to_server, 100ms);
    auto start = steady::now();
    auto reply = co_await c.exec(r);
    BOOST_TEST(reply[0].data == "PONG");
    BOOST_TEST(ms_since(start) >= 100ms);
    c.close();
  }, 10s);
  BOOST_TEST(proxy.stats().accepted >= 1u);
}

BOOST_AUTO_TEST_SUITE_END()
