// A diagnostics bound to one operation gets that operation's words, whatever token carries it:
// the binder alone, inside or outside Asio's adapters (as_tuple, redirect_error), with deferred,
// use_future or a plain callback, and beside a bound cancellation slot. Driven by real library
// operations that fail without a server: a semaphore asked for 0 permits (corolock's words) and
// a connect to a loopback port nobody listens on (the address and the system's reason).
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <future>
#include <optional>
#include <thread>

using namespace corolock;
using corolock::test::run_async;

namespace {

const error_code invalid = error::invalid_argument;
const std::string permit_words = "a permit count is 1 .. 2^40";

/// A loopback port nobody listens on (bound, then closed).
unsigned short closed_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

} // namespace

BOOST_AUTO_TEST_SUITE(diagnostics_tokens)

BOOST_AUTO_TEST_CASE(default_inner_token_throws_and_the_words_are_kept) {
  run_async([](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c{ex, client_config{}};
    semaphore s{c, "diag", 2};
    diagnostics why;
    std::optional<error_code> thrown;
    try {
      auto g = co_await s.acquire(0, bind_diagnostics(why));
    } catch (const boost::system::system_error& e) {
      thrown = e.code();
    }
    BOOST_TEST((thrown == invalid));
    BOOST_TEST(why.client_message() == permit_words);
    BOOST_TEST(why.server_message().empty());
    BOOST_TEST(why.message() == permit_words);
  });
}

BOOST_AUTO_TEST_CASE(inside_and_outside_asios_adapters) {
  run_async([](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c{ex, client_config{}};
    semaphore s{c, "diag", 2};
    diagnostics inner, outer, redirected;
    auto [e1, g1] = co_await s.acquire(0, bind_diagnostics(inner, asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(e1 == invalid);
    BOOST_TEST(inner.message() == permit_words);
    // The adapter outside: Asio's as_tuple handler passes the association on.
    auto [e2, g2] = co_await s.acquire(0, asio::as_tuple(bind_diagnostics(outer)));
    BOOST_TEST(e2 == invalid);
    BOOST_TEST(outer.message() == permit_words);
    error_code e3;
    auto g3 = co_await s.try_acquire(0, asio::redirect_error(bind_diagnostics(redirected), e3));
    BOOST_TEST(e3 == invalid);
    BOOST_TEST(redirected.message() == permit_words);
  });
}

BOOST_AUTO_TEST_CASE(deferred_callback_and_future) {
  asio::io_context io;
  client c{io.get_executor(), client_config{}};
  semaphore s{c, "diag", 2};

  diagnostics by_callback;
  std::optional<error_code> got;
  s.acquire(0, bind_diagnostics(by_callback, [&](error_code ec, guard) { got = ec; }));
  // Deferred: nothing starts, and nothing is written, until it is launched.
  diagnostics by_deferred;
  auto later = s.acquire(0, bind_diagnostics(by_deferred, asio::deferred));
  io.run();
  io.restart();
  BOOST_TEST((got == invalid));
  BOOST_TEST(by_callback.message() == permit_words);
  BOOST_TEST(by_deferred.empty());
  std::move(later)([&](error_code ec, guard) { got = ec; });
  io.run();
  io.restart();
  BOOST_TEST(by_deferred.message() == permit_words);

  diagnostics by_future;
  auto f = s.acquire(0, bind_diagnostics(by_future, asio::use_future));
  std::thread runner([&] { io.run(); });
  BOOST_CHECK_EXCEPTION(f.get(), boost::system::system_error,
                        [](const auto& e) { return e.code() == invalid; });
  runner.join();
  BOOST_TEST(by_future.message() == permit_words);
}

BOOST_AUTO_TEST_CASE(a_bound_cancellation_slot_still_reaches_the_operation) {
  // What an operation's initiation sees of its handler (the library's initiations do the same):
  // in both orders of binding, the slot and the diagnostics are visible.
  asio::io_context io;
  asio::cancellation_signal cancel;
  diagnostics why;
  auto token = asio::bind_cancellation_slot(cancel.slot(), bind_diagnostics(why, [](error_code) {}));
  auto check = [&](auto tok) {
    return asio::async_initiate<decltype(tok), void(error_code)>(
        [&](auto h) {
          BOOST_TEST(asio::get_associated_cancellation_slot(h).is_connected());
          BOOST_TEST(detail::diagnostics_for(h) == &why);
          asio::post(io, asio::append(std::move(h), error_code{}));
        },
        tok);
  };
  check(token);
  check(bind_diagnostics(why, asio::bind_cancellation_slot(cancel.slot(), [](error_code) {})));
  io.run();
}

BOOST_AUTO_TEST_CASE(words_are_the_operations_and_cleared_when_it_starts) {
  run_async([](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = client_config{};
    cfg.port = closed_port();
    cfg.connect_timeout = std::chrono::milliseconds(500);
    client bad{ex, cfg};
    diagnostics why;
    auto [ec] = co_await bad.connect(bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(ec == error::connect_failed);
    BOOST_TEST(why.client_message().find("cannot connect to 127.0.0.1:" + std::to_string(cfg.port)) !=
                   std::string::npos,
               why.client_message());
    // Reused for another operation: its old words go when the new one starts, replaced by its own.
    client offline{ex, client_config{}};
    mutex m{offline, "diag"};
    auto [e2, g] = co_await m.acquire(bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(e2 == error::not_connected);
    BOOST_TEST(why.client_message().starts_with("redis lock 'diag': no connection to the store"),
               why.message());
    BOOST_TEST(why.client_message().find("cannot connect") == std::string::npos, why.message());
  });
}

BOOST_AUTO_TEST_SUITE_END()
