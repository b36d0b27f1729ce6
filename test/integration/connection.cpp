// The pipelined connection and the client against a real redis-server.
#include <corolock/corolock.hpp>

#include <support/async_test.hpp>
#include <support/client_helpers.hpp>
#include <support/redis_server.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/strand.hpp>

using namespace corolock;
using namespace corolock::test;
using namespace boost::asio::experimental::awaitable_operators;
namespace asio = boost::asio;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

namespace {
} // namespace

BOOST_AUTO_TEST_SUITE(connection)

BOOST_AUTO_TEST_CASE(set_get_in_one_request) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    request r;
    r.push("SET", "k", "v").push("GET", "k").push("INCR", "k");
    auto replies = co_await c.exec(r);
    BOOST_REQUIRE_EQUAL(replies.size(), 3u);
    BOOST_TEST(replies[0].data == "OK");
    BOOST_TEST(replies[1].data == "v");
    BOOST_TEST(replies[2].is_error()); // a server error is a value, not an exception
    BOOST_TEST(replies[2].error_code() == "ERR");
  });
}

BOOST_AUTO_TEST_CASE(hundred_thousand_requests_from_a_thousand_coroutines_match_their_replies) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    constexpr int coroutines = 1000, per_coroutine = 100;
    int mismatches = 0, finished = 0;
    event all_done(ex);
    for (int k = 0; k < coroutines; ++k) {
      asio::co_spawn(ex, [&, k]() -> asio::awaitable<void> {
        for (int i = 0; i < per_coroutine; ++i) {
          std::string token = std::to_string(k) + ":" + std::to_string(i);
          request r;
          r.push("ECHO", token);
          auto reply = co_await c.exec(std::move(r));
          if (reply.size() != 1 || reply[0].data != token)
            ++mismatches;
        }
        if (++finished == coroutines)
          all_done.set();
      }, asio::detached);
    }
    co_await all_done.wait();
    BOOST_TEST(mismatches == 0);
    auto stats = c.stats();
    BOOST_TEST(stats.replies >= 100000u);
    // Pipelining: far fewer socket writes than commands.
    BOOST_TEST(stats.writes * 10 < stats.commands, "writes " << stats.writes << " commands "
                                                           << stats.commands);
  });
}

BOOST_AUTO_TEST_CASE(server_not_running_is_a_clear_connect_error) {
  auto port = pick_free_port();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, "redis://127.0.0.1:" + std::to_string(port));
    auto [ec] = co_await c.connect(tuple_awaitable);
    BOOST_TEST(ec == error::connect_failed);
    BOOST_TEST(!ec.message().empty());
    // Nothing runs in the background; a request fails at once.
    auto [ec2, r] = co_await c.exec(make("PING"), tuple_awaitable);
    BOOST_TEST(ec2 == error::not_connected);
  });
}

BOOST_AUTO_TEST_CASE(wrong_password_is_auth_failed) {
  redis_server_options with_password;
  with_password.password = "s3cret";
  redis_server server(with_password);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.password = "wrong";
    client bad(ex, cfg);
    auto [ec] = co_await bad.connect(tuple_awaitable);
    BOOST_TEST(ec == error::auth_failed);
    // The server's own words are kept (src/backends/redis/client/handshake.cpp).
    BOOST_TEST(bad.last_connect_error().find("(HELLO: WRONGPASS ") != std::string::npos,
               bad.last_connect_error());

    cfg.password.clear();
    client none(ex, cfg);
    std::tie(ec) = co_await none.connect(tuple_awaitable);
    BOOST_TEST(ec == error::auth_failed);
    BOOST_TEST(none.last_connect_error().find("(HELLO: NOAUTH ") != std::string::npos,
               none.last_connect_error());

    client good(ex, config_for(server)); // the URL carries the right password
    co_await good.connect();
    auto r = co_await good.exec(make("PING"));
    BOOST_TEST(r[0].data == "PONG");
  });
}

BOOST_AUTO_TEST_CASE(acl_user_and_database_from_url) {
  redis_server server;
  server.command({"ACL", "SETUSER", "alice", "on", ">pw", "~*", "&*", "+@all"});
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, "redis://alice:pw@127.0.0.1:" + std::to_string(server.port()) + "/3");
    co_await c.connect();
    co_await c.exec(make("SET", "in-db-3", "1"));
    auto who = co_await c.exec(make("ACL", "WHOAMI"));
    BOOST_TEST(who[0].data == "alice");
  });
  BOOST_TEST(server.command({"EXISTS", "in-db-3"}) == "0");
  auto keyspace = server.command({"INFO", "keyspace"});
  BOOST_TEST(keyspace.find("db3:keys=1") != std::string::npos, keyspace);
}

BOOST_AUTO_TEST_CASE(unix_socket) {
  redis_server_options with_socket;
  with_socket.unix_socket = true;
  redis_server server(with_socket);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, "unix://" + server.unix_socket_path());
    co_await c.connect();
    auto r = co_await c.exec(make("PING"));
    BOOST_TEST(r[0].data == "PONG");
  });
}

BOOST_AUTO_TEST_CASE(resp2_protocol_with_pubsub_on_its_own_connection) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.protocol = 2;
    client c(ex, cfg);
    co_await c.connect();
    auto sub = c.subscribe("news");
    auto r = co_await c.exec(make("PING")); // still usable for commands while subscribed
    BOOST_TEST(r[0].data == "PONG");
    BOOST_TEST(co_await eventually([&] { return server.command({"PUBSUB", "NUMSUB", "news"}) == "news\n1"; }));
    co_await c.exec(make("PUBLISH", "news", "hello"));
    auto m = co_await sub.receive();
    BOOST_TEST(m.payload == "hello");
  });
}

BOOST_AUTO_TEST_CASE(reconnects_after_the_server_is_killed_and_restarted) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    co_await c.exec(make("SET", "before", "1"));
    server.kill();
    co_await sleep_for(50ms);
    server.restart();
    // A request queued while disconnected waits for the reconnect and then runs.
    auto r = co_await c.exec(make("SET", "after", "2"));
    BOOST_TEST(r[0].data == "OK");
    BOOST_TEST(c.stats().reconnects >= 1u);
  });
  BOOST_TEST(server.command({"GET", "after"}) == "2");
}

BOOST_AUTO_TEST_CASE(in_flight_request_fails_with_connection_lost_on_drop) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    // BLPOP blocks on the server: the request is written and its reply owed when we kill it.
    auto blocked = asio::co_spawn(ex, c.exec(make("BLPOP", "nothing", "0"), tuple_awaitable),
                                  asio::use_awaitable);
    co_await sleep_for(100ms);
    server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
    auto [ec, r] = co_await std::move(blocked);
    BOOST_TEST(ec == error::connection_lost);
    // And the connection recovers by itself.
    auto again = co_await c.exec(make("PING"));
    BOOST_TEST(again[0].data == "PONG");
  });
}

BOOST_AUTO_TEST_CASE(cancelled_before_write_never_reaches_the_server) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    server.kill(); // while down, requests queue without being written
    co_await sleep_for(50ms);
    asio::cancellation_signal cancel;
    bool done = false;
    error_code result;
    c.exec(make("SET", "cancelled", "1"),
           asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, response) {
             result = ec;
             done = true;
           }));
    co_await sleep_for(20ms);
    cancel.emit(asio::cancellation_type::terminal);
    co_await sleep_for(10ms);
    BOOST_TEST(done);
    BOOST_TEST(result == asio::error::operation_aborted);
    server.restart();
    auto r = co_await c.exec(make("GET", "cancelled"));
    BOOST_TEST(r[0].is_null());
  });
}

BOOST_AUTO_TEST_CASE(cancelled_after_write_discards_its_reply_and_keeps_the_connection) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    asio::steady_timer short_wait(ex, 50ms);
    // The race cancels the slow request once the timer wins; it was already written.
    auto result = co_await (c.exec(make("DEBUG", "SLEEP", "0.3"), tuple_awaitable) ||
                            short_wait.async_wait(asio::use_awaitable));
    BOOST_TEST(result.index() == 1u);
    // The next request gets its own reply, not the discarded one.
    auto r = co_await c.exec(make("ECHO", "mine"));
    BOOST_TEST(r[0].data == "mine");
    BOOST_TEST(c.stats().reconnects == 0u);
  });
}

BOOST_AUTO_TEST_CASE(request_timeout) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    request slow({.timeout = 100ms});
    slow.push("DEBUG", "SLEEP", "0.5");
    auto start = std::chrono::steady_clock::now();
    auto [ec, r] = co_await c.exec(std::move(slow), tuple_awaitable);
    BOOST_TEST(ec == error::timeout);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 400ms));
    auto next = co_await c.exec(make("ECHO", "after-timeout"));
    BOOST_TEST(next[0].data == "after-timeout");
  });
}

BOOST_AUTO_TEST_CASE(each_request_times_out_at_its_own_deadline) {
  // The connection's request_timeout deadlines share one timer; a request with a timeout of its
  // own, due earlier, must not wait for theirs, and none may fire early.
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.request_timeout = 300ms;
    client c(ex, cfg), sleeper(ex, config_for(server));
    co_await c.connect();
    co_await sleeper.connect();
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    std::vector<std::pair<char, clock::duration>> done; // which request, when
    auto timed = [&](char name, request r, clock::duration delay) -> asio::awaitable<void> {
      co_await sleep_for(delay);
      auto [ec, resp] = co_await c.exec(std::move(r), tuple_awaitable);
      BOOST_TEST(ec == error::timeout, name);
      done.emplace_back(name, clock::now() - t0);
    };
    auto stall_server = [&]() -> asio::awaitable<void> {
      co_await sleeper.exec(make("DEBUG", "SLEEP", "0.8"), tuple_awaitable);
    };
    request own({.timeout = 50ms});
    own.push("PING");
    co_await ((stall_server() && timed('a', make("PING"), 20ms)) &&
              (timed('b', make("PING"), 120ms) && timed('c', std::move(own), 120ms)));
    BOOST_REQUIRE_EQUAL(done.size(), 3u);
    // c (due at 170 ms) first, then a (320 ms), then b (420 ms); each at or after its deadline.
    BOOST_TEST(done[0].first == 'c');
    BOOST_TEST(done[1].first == 'a');
    BOOST_TEST(done[2].first == 'b');
    BOOST_TEST((done[0].second >= 170ms && done[0].second < 310ms)); // not held up by a's timer
    BOOST_TEST((done[1].second >= 320ms && done[1].second < 520ms));
    BOOST_TEST((done[2].second >= 420ms && done[2].second < 700ms));
    // Their late replies are discarded: the next request gets its own.
    auto next = co_await c.exec(make("ECHO", "after"));
    BOOST_TEST(next[0].data == "after");
  });
}

BOOST_AUTO_TEST_CASE(cancel_if_not_connected_fails_fast_while_down) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    server.kill();
    co_await sleep_for(100ms);
    request r({.cancel_if_not_connected = true});
    r.push("PING");
    auto [ec, _] = co_await c.exec(std::move(r), tuple_awaitable);
    BOOST_TEST(ec == error::not_connected);
  });
}

BOOST_AUTO_TEST_CASE(scripts_are_loaded_ahead_of_use_and_noscript_falls_back_to_load_and_retry) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    static const script answer("return tonumber(ARGV[1]) + 1");
    request r;
    r.push_script(answer, {}, {"41"});
    auto first = co_await c.exec(r);
    BOOST_TEST(first[0].integer == 42);
    BOOST_TEST(c.stats().script_loads == 0u); // loaded in the same write: no NOSCRIPT to recover
    auto again = co_await c.exec(r);
    BOOST_TEST(again[0].integer == 42);
    // Flushed by another client: the call meets NOSCRIPT, nothing after it ran: replayed.
    BOOST_TEST(server.command({"SCRIPT", "FLUSH"}) == "OK");
    request tail;
    tail.push("ECHO", "a").push_script(answer, {}, {"2"});
    auto replayed = co_await c.exec(tail);
    BOOST_TEST(replayed[0].data == "a");
    BOOST_TEST(replayed[1].integer == 3);
    BOOST_TEST(c.stats().script_loads == 1u);
    BOOST_TEST(server.command({"SCRIPT", "EXISTS", answer.sha1()}) == "1");
  });
}

// A request [A: SET k new][B: GET k] must read what A wrote. The case: B loaded on the
// server, A not. Before the fix only A was replayed, after B had read: B said "old". Now A is
// loaded in the same write ahead of the request.
BOOST_AUTO_TEST_CASE(a_request_of_two_scripts_keeps_its_order_when_one_is_missing) {
  redis_server server;
  static const script set_k("redis.call('set', KEYS[1], ARGV[1]) return 1");
  static const script get_k("return redis.call('get', KEYS[1])");
  BOOST_TEST(server.command({"SET", "k", "old"}) == "OK");
  BOOST_TEST(server.command({"SCRIPT", "LOAD", get_k.source()}) == get_k.sha1());
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    request r;
    r.push_script(set_k, {"k"}, {"new"}).push_script(get_k, {"k"}, {});
    auto replies = co_await c.exec(r);
    BOOST_TEST(replies.at(0).integer == 1);
    BOOST_TEST(replies.at(1).data == "new");

    // Both flushed under a live session: both refused, nothing ran after the first, both
    // replayed in order.
    BOOST_TEST(server.command({"SCRIPT", "FLUSH"}) == "OK");
    BOOST_TEST(server.command({"SET", "k", "old"}) == "OK");
    r.clear();
    r.push_script(set_k, {"k"}, {"newer"}).push_script(get_k, {"k"}, {});
    replies = co_await c.exec(r);
    BOOST_TEST(replies.at(0).integer == 1);
    BOOST_TEST(replies.at(1).data == "newer");

    // Flushed under a live session and B alone loaded again by someone else before the request
    // runs: A is refused and B reads "old". A replay of A would write after B's read (before the
    // fix: k became "new" behind B's back); A's reply stays NOSCRIPT and k stays as B read it.
    BOOST_TEST(server.command({"SCRIPT", "FLUSH"}) == "OK");
    BOOST_TEST(server.command({"SCRIPT", "LOAD", get_k.source()}) == get_k.sha1());
    BOOST_TEST(server.command({"SET", "k", "old"}) == "OK");
    r.clear();
    r.push_script(set_k, {"k"}, {"new"}).push_script(get_k, {"k"}, {});
    replies = co_await c.exec(r);
    BOOST_TEST(replies.at(0).is_error());
    BOOST_TEST(replies.at(0).error_code() == "NOSCRIPT");
    BOOST_TEST(replies.at(1).data == "old");
    BOOST_TEST(server.command({"GET", "k"}) == "old");
    // The session took the hint: the next use loads A again, ahead of the request.
    replies = co_await c.exec(r);
    BOOST_TEST(replies.at(1).data == "new");
  });
}

BOOST_AUTO_TEST_CASE(concurrent_noscript_fallbacks_all_succeed) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    static const script plus_one("return tonumber(ARGV[1]) + 1");
    int ok = 0, finished = 0;
    std::string first_error;
    event all_done(ex);
    for (int i = 0; i < 200; ++i) {
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        request r;
        r.push_script(plus_one, {}, {std::to_string(i)});
        auto reply = co_await c.exec(std::move(r));
        if (reply[0].integer == i + 1)
          ++ok;
        else if (first_error.empty())
          first_error = resp::to_debug_string(reply[0]);
        if (++finished == 200)
          all_done.set();
      }, asio::detached);
    }
    co_await all_done.wait();
    BOOST_TEST(ok == 200, "first failure: " << first_error);
    // 200 NOSCRIPTs from one burst: the script is loaded once, not once per request.
    auto stats = server.command({"INFO", "commandstats"});
    BOOST_TEST(stats.find("cmdstat_script|load:calls=1,") != std::string::npos, stats);
  });
}

BOOST_AUTO_TEST_CASE(subscriptions_are_shared_and_released) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    {
      auto a = c.subscribe("room");
      auto b = c.subscribe("room");
      co_await c.exec(make("PUBLISH", "room", "hi"));
      auto ma = co_await a.receive();
      auto mb = co_await b.receive();
      BOOST_TEST(ma.payload == "hi");
      BOOST_TEST(mb.payload == "hi");
    }
    co_await c.exec(make("PING")); // after the UNSUBSCRIBE
    auto stats = server.command({"INFO", "commandstats"});
    BOOST_TEST(stats.find("cmdstat_subscribe:calls=1,") != std::string::npos, stats);
    BOOST_TEST(server.command_list({"PUBSUB", "CHANNELS"}).empty());
  });
}

BOOST_AUTO_TEST_CASE(subscription_restored_after_reconnect) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto sub = c.subscribe("events");
    co_await c.exec(make("PING"));
    server.kill();
    co_await sleep_for(50ms);
    server.restart();
    auto notice = co_await sub.receive();
    BOOST_TEST(notice.reconnected); // listeners learn that messages may have been missed
    co_await c.exec(make("PING"));
    BOOST_TEST(server.command({"PUBSUB", "NUMSUB", "events"}) == "events\n1");
    server.command({"PUBLISH", "events", "back"});
    auto m = co_await sub.receive();
    BOOST_TEST(m.payload == "back");
  });
}

BOOST_AUTO_TEST_CASE(health_check_detects_a_silent_server) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = config_for(server);
    cfg.health_check_interval = 100ms;
    client c(ex, cfg);
    co_await c.connect();
    server.pause(); // TCP stays up, nothing answers
    auto start = std::chrono::steady_clock::now();
    auto [ec, r] = co_await c.exec(make("PING"), tuple_awaitable);
    BOOST_TEST(ec == error::connection_lost);
    BOOST_TEST((std::chrono::steady_clock::now() - start < 2s));
    server.resume();
    auto back = co_await c.exec(make("PING"));
    BOOST_TEST(back[0].data == "PONG");
  });
}

BOOST_AUTO_TEST_CASE(close_completes_pending_requests) {
  redis_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    client c(ex, config_for(server));
    co_await c.connect();
    auto blocked = asio::co_spawn(ex, c.exec(make("BLPOP", "nothing", "0"), tuple_awaitable),
                                  asio::use_awaitable);
    co_await sleep_for(50ms);
    c.close();
    auto [ec, r] = co_await std::move(blocked);
    BOOST_TEST(ec == error::closed);
    auto [ec2, r2] = co_await c.exec(make("PING"), tuple_awaitable);
    BOOST_TEST(ec2 == error::closed);
  });
}

BOOST_AUTO_TEST_CASE(use_future_and_callbacks_work) {
  redis_server server;
  asio::io_context io;
  client c(io.get_executor(), config_for(server));
  std::thread runner([&] {
    auto work = asio::make_work_guard(io);
    io.run_for(20s);
  });
  asio::post(io, asio::use_future([&] { return c.connect(asio::use_future); })).get().get();
  // The client is single-threaded: initiate on its executor, wait for the future here.
  auto fut = asio::post(io, asio::use_future([&] {
                          return c.exec(make("ECHO", "future"), asio::use_future);
                        })).get();
  auto reply = fut.get();
  BOOST_TEST(reply[0].data == "future");
  std::promise<std::string> p;
  asio::post(io, [&] {
    c.exec(make("ECHO", "callback"), [&](error_code ec, response r) {
      p.set_value(ec ? ec.message() : r[0].data);
    });
  });
  BOOST_TEST(p.get_future().get() == "callback");
  asio::post(io, [&] { c.close(); });
  io.stop();
  runner.join();
}

// The replies parsed from one read complete together (one posted batch): their handlers still run
// in request order, each on its own executor (a strand's handler inside the strand), and one that
// throws loses none of the others: they run once the caller goes on running the io_context.
BOOST_AUTO_TEST_CASE(a_reply_burst_completes_in_order_and_a_throwing_handler_loses_none) {
  redis_server server;
  asio::io_context io;
  client c(io.get_executor(), config_for(server));
  auto run_until = [&](auto done) {
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < give_up) {
      try {
        io.run_one_for(100ms);
      } catch (const std::runtime_error& e) {
        BOOST_TEST(std::string(e.what()) == "handler 2 throws");
      }
    }
  };
  bool connected = false;
  c.connect([&](error_code ec) {
    BOOST_TEST(!ec);
    connected = true;
  });
  run_until([&] { return connected; });
  BOOST_REQUIRE(connected);

  auto strand = asio::make_strand(io);
  std::vector<int> order;
  bool strand_handler_in_strand = false;
  constexpr int n = 6;
  for (int i = 0; i < n; ++i) {
    auto record = [&, i](error_code ec, response r) {
      BOOST_TEST(!ec);
      BOOST_TEST(r.at(0).data == std::to_string(i));
      order.push_back(i);
      if (i == 2)
        throw std::runtime_error("handler 2 throws");
    };
    if (i == 4)
      c.exec(make("ECHO", std::to_string(i)),
             asio::bind_executor(strand, [&, record](error_code ec, response r) mutable {
               strand_handler_in_strand = strand.running_in_this_thread();
               record(ec, std::move(r));
             }));
    else
      c.exec(make("ECHO", std::to_string(i)), record);
  }
  run_until([&] { return order.size() == n; });
  BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(strand_handler_in_strand);
  // The connection is still in step after the throw.
  std::string after;
  c.exec(make("ECHO", "after"), [&](error_code ec, response r) { after = ec ? ec.message() : r.at(0).data; });
  run_until([&] { return !after.empty(); });
  BOOST_TEST(after == "after");
  c.close();
}

// connect() completes as every other operation does: posted to the client's executor, then run on
// the handler's own executor (a strand the handler is bound to), not called from the client's.
BOOST_AUTO_TEST_CASE(connect_completes_on_the_handlers_executor) {
  redis_server server;
  asio::io_context io;
  auto strand = asio::make_strand(io);
  client c(io.get_executor(), config_for(server));
  bool done = false, inline_call = true, in_strand = false;
  c.connect(asio::bind_executor(strand, [&](error_code ec) {
    BOOST_TEST(!ec);
    in_strand = strand.running_in_this_thread();
    done = true;
  }));
  inline_call = done;
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!done && std::chrono::steady_clock::now() < give_up)
    io.run_one_for(100ms);
  BOOST_REQUIRE(done);
  BOOST_TEST(!inline_call);
  BOOST_TEST(in_strand);
  c.close();
}

BOOST_AUTO_TEST_SUITE_END()
