// TLS (rediss://) against real redis-servers listening with TLS on loopback, with a throwaway CA
// and certificates the fixture makes (test/support/tls_material.hpp).
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/lock_checks.hpp>
#include <support/redis_server.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace corolock;
using namespace corolock::test;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {

redis_server_options with_tls(std::string auth_clients = "no") {
  redis_server_options o;
  o.tls = true;
  o.tls_auth_clients = std::move(auth_clients);
  return o;
}

/// The server's connections from corolock clients (CLIENT SETNAME corolock...): how many came in
/// on `port`, and how many on any other.
struct client_count {
  int on_port = 0;
  int elsewhere = 0;
};
client_count corolock_clients(redis_server& server, std::uint16_t port) {
  client_count n;
  std::istringstream lines(server.command({"CLIENT", "LIST"}));
  const std::string laddr = "laddr=127.0.0.1:" + std::to_string(port) + " ";
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" name=corolock") == std::string::npos)
      continue;
    (line.find(laddr) != std::string::npos ? n.on_port : n.elsewhere) += 1;
  }
  return n;
}

/// Open file descriptors of this process: a failed connect must not leave one behind.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

/// Connects a client with `cfg`; returns the error and what last_connect_error() said.
asio::awaitable<std::pair<error_code, std::string>> try_connect(client_config cfg) {
  client c(co_await asio::this_coro::executor, std::move(cfg));
  auto [ec] = co_await c.connect(tuple_awaitable);
  std::string why = c.last_connect_error();
  if (ec) {
    // Nothing runs in the background after a failed first connect.
    auto [ec2, r] = co_await c.exec(make("PING"), tuple_awaitable);
    BOOST_TEST(ec2 == error::not_connected);
  }
  co_return std::make_pair(ec, why);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls)

BOOST_AUTO_TEST_CASE(commands_and_a_contended_mutex_run_over_tls_only) {
  redis_server server(with_tls());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client a(ex, tls_config_for(server));
    client b(ex, tls_config_for(server));
    co_await a.connect();
    co_await b.connect();
    auto r = co_await a.exec(make("SET", "over-tls", "1"));
    BOOST_TEST(r[0].data == "OK");
    auto got = co_await b.exec(make("GET", "over-tls"));
    BOOST_TEST(got[0].data == "1");

    // b waits on a's lock: its wake-up can only come through pub/sub on the lock connection; a
    // missed message would leave it waiting for the 30 s lease.
    corolock::mutex ma(a, "tls-lock"), mb(b, "tls-lock");
    auto held = co_await ma.acquire();
    std::chrono::steady_clock::time_point released, acquired;
    event waited(ex);
    std::exception_ptr failure;
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      auto g = co_await mb.acquire_for(10s);
      acquired = std::chrono::steady_clock::now();
      co_await g.unlock();
    }, [&](std::exception_ptr e) {
      failure = e;
      waited.set();
    });
    BOOST_TEST(co_await eventually([&] {
      return !server.command_list({"PUBSUB", "CHANNELS"}).empty();
    }));
    released = std::chrono::steady_clock::now();
    co_await held.unlock();
    co_await waited.wait();
    if (failure)
      std::rethrow_exception(failure);
    BOOST_TEST(((acquired - released) < 2s));

    // Every connection of both clients (commands, locks) came in on the TLS port.
    auto n = corolock_clients(server, server.tls_port());
    BOOST_TEST(n.on_port >= 4);
    BOOST_TEST(n.elsewhere == 0);
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(a_server_certificate_from_another_ca_is_tls_failed) {
  redis_server server(with_tls());
  const auto fds = open_fds();
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto cfg = tls_config_for(server);
    cfg.tls_ca_file = server.tls_files().other_ca_cert().string();
    auto [ec, why] = co_await try_connect(cfg);
    BOOST_TEST(ec == error::tls_failed);
    BOOST_TEST(contains(ec.message(), "TLS"), ec.message());
    BOOST_TEST(contains(why, "certificate verify failed"), why);
    // The server sends its CA along or not: either way the chain ends at a CA we do not trust.
    BOOST_TEST((contains(why, "self-signed certificate in certificate chain") ||
                contains(why, "unable to get local issuer certificate")),
               why);
  });
  BOOST_TEST(open_fds() == fds);
  BOOST_TEST(corolock_clients(server, server.tls_port()).on_port == 0);
}

BOOST_AUTO_TEST_CASE(a_wrong_server_name_fails_unless_verification_is_off) {
  redis_server server(with_tls());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto wrong = tls_config_for(server);
    wrong.tls_server_name = "not-this-server.example";
    auto [ec, why] = co_await try_connect(wrong);
    BOOST_TEST(ec == error::tls_failed);
    BOOST_TEST(contains(why, "hostname mismatch"), why);

    // The certificate's DNS name works as well as its IP address (the default: host).
    auto by_name = tls_config_for(server);
    by_name.tls_server_name = "localhost";
    auto [ec_name, why_name] = co_await try_connect(by_name);
    BOOST_TEST(!ec_name, why_name);

    auto unverified = wrong;
    unverified.tls_verify = false;
    unverified.tls_ca_file = server.tls_files().other_ca_cert().string(); // not even the chain
    client c(ex, unverified);
    co_await c.connect();
    auto r = co_await c.exec(make("PING"));
    BOOST_TEST(r[0].data == "PONG");
    BOOST_TEST(corolock_clients(server, server.tls_port()).on_port >= 1);
  });
}

BOOST_AUTO_TEST_CASE(a_server_that_requires_client_certificates_accepts_only_ours) {
  redis_server server(with_tls("yes"));
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto [ec, why] = co_await try_connect(tls_config_for(server));
    BOOST_TEST(ec == error::tls_failed, why);

    // A certificate from a CA the server does not trust.
    auto foreign = tls_config_for(server);
    foreign.tls_cert_file = server.tls_files().other_client_cert().string();
    foreign.tls_key_file = server.tls_files().other_client_key().string();
    auto [ec_foreign, why_foreign] = co_await try_connect(foreign);
    BOOST_TEST(ec_foreign == error::tls_failed, why_foreign);

    auto with_cert = tls_config_for(server);
    with_cert.tls_cert_file = server.tls_files().client_cert().string();
    with_cert.tls_key_file = server.tls_files().client_key().string();
    client c(ex, with_cert);
    co_await c.connect();
    corolock::mutex m(c, "client-cert-lock");
    auto g = co_await m.acquire();
    BOOST_TEST(server.command({"EXISTS", "corolock:{client-cert-lock}"}) == "1");
    co_await g.unlock();
  });
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(the_client_reconnects_over_tls_after_the_server_restarts) {
  redis_server server(with_tls());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, tls_config_for(server));
    co_await c.connect();
    co_await c.exec(make("SET", "before", "1"));
    corolock::mutex m(c, "restart-lock");
    {
      auto g = co_await m.acquire();
      co_await g.unlock();
    }
    server.restart(); // same ports, same certificates, empty dataset
    // Both connections (commands, locks) notice the drop and come back, each on a new TLS
    // session. (A request sent before the client has read the server's goodbye would go out on
    // the old socket and fail with connection_lost, as over plain TCP.)
    BOOST_TEST(co_await eventually([&] { return c.stats().reconnects >= 2; }));
    auto r = co_await c.exec(make("SET", "after", "2"));
    BOOST_TEST(r[0].data == "OK");
    auto g = co_await m.acquire_for(5s); // the lock connection came back too
    co_await g.unlock();
    auto n = corolock_clients(server, server.tls_port());
    BOOST_TEST(n.on_port >= 2);
    BOOST_TEST(n.elsewhere == 0);
  });
  BOOST_TEST(server.command({"GET", "after"}) == "2");
  expect_clean(server);
}

BOOST_AUTO_TEST_CASE(unusable_tls_files_are_clear_errors_and_leave_nothing) {
  redis_server server(with_tls());
  const auto& files = server.tls_files();
  const auto garbage = server.dir() / "not-a-certificate.pem";
  std::ofstream(garbage) << "this is not PEM\n";
  const auto fds = open_fds();
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto missing_ca = tls_config_for(server);
    missing_ca.tls_ca_file = (server.dir() / "no-such-ca.crt").string();
    auto [ec1, why1] = co_await try_connect(missing_ca);
    BOOST_TEST(ec1 == error::tls_failed);
    BOOST_TEST(contains(why1, missing_ca.tls_ca_file), why1);
    BOOST_TEST(contains(why1, "no such file"), why1);

    auto bad_ca = tls_config_for(server);
    bad_ca.tls_ca_file = garbage.string();
    auto [ec2, why2] = co_await try_connect(bad_ca);
    BOOST_TEST(ec2 == error::tls_failed);
    BOOST_TEST(contains(why2, "CA file '" + garbage.string() + "'"), why2);

    auto missing_key = tls_config_for(server);
    missing_key.tls_cert_file = files.client_cert().string();
    missing_key.tls_key_file = (server.dir() / "no-such.key").string();
    auto [ec3, why3] = co_await try_connect(missing_key);
    BOOST_TEST(ec3 == error::tls_failed);
    BOOST_TEST(contains(why3, missing_key.tls_key_file), why3);

    auto mismatched = tls_config_for(server);
    mismatched.tls_cert_file = files.client_cert().string();
    mismatched.tls_key_file = files.server_key().string();
    auto [ec4, why4] = co_await try_connect(mismatched);
    BOOST_TEST(ec4 == error::tls_failed);
    BOOST_TEST(contains(why4, "does not belong"), why4);

    auto missing_dir = tls_config_for(server);
    missing_dir.tls_ca_dir = (server.dir() / "no-such-dir").string();
    auto [ec5, why5] = co_await try_connect(missing_dir);
    BOOST_TEST(ec5 == error::tls_failed);
    BOOST_TEST(contains(why5, "not a directory"), why5);

    auto cert_without_key = tls_config_for(server);
    cert_without_key.tls_cert_file = files.client_cert().string();
    auto [ec6, why6] = co_await try_connect(cert_without_key);
    BOOST_TEST(ec6 == error::invalid_argument);
  });
  BOOST_TEST(open_fds() == fds);
  BOOST_TEST(corolock_clients(server, server.tls_port()).on_port == 0);
}

BOOST_AUTO_TEST_CASE(the_tls_handshake_counts_against_connect_timeout) {
  // A TCP listener that never speaks TLS: a paused server accepts (the kernel does) and stays
  // silent, so only connect_timeout can end the handshake.
  redis_server server(with_tls());
  server.pause();
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto cfg = tls_config_for(server);
    cfg.connect_timeout = 300ms;
    auto start = std::chrono::steady_clock::now();
    auto [ec, why] = co_await try_connect(cfg);
    BOOST_TEST(ec == error::connect_failed);
    BOOST_TEST(contains(why, "TLS handshake"), why);
    BOOST_TEST((since(start) < 2s));
  });
  server.resume();
}

BOOST_AUTO_TEST_SUITE_END()
