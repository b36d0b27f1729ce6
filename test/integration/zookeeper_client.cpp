// The ZooKeeper client (include/corolock/zookeeper/client.hpp) against real private servers
// (test/support/zookeeper_server.hpp): the session, its pings, nodes and watches, a server restart
// within the session, a stopped server past the session timeout, the ensemble's leader killed,
// close(). Fixture calls that block (restart, kill, pause) run on a thread of their own, so the
// client's timers keep running meanwhile.
#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include <support/async_test.hpp>
#include <support/redis_server.hpp> // pick_free_port
#include <support/zookeeper_config.hpp>
#include <support/zookeeper_server.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <thread>

using namespace corolock;
using namespace corolock::test;
namespace zk = corolock::zookeeper;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

/// Runs `f` (a blocking fixture call that spawns nothing: a child dies with the thread that
/// spawned it) on a thread; the coroutine resumes when it returned.
asio::awaitable<void> offload(std::function<void()> f) {
  auto ex = co_await asio::this_coro::executor;
  event done(ex);
  std::exception_ptr error;
  std::thread t([&] {
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
    asio::post(ex, [&] { done.set(); });
  });
  co_await done.wait();
  t.join();
  if (error)
    std::rethrow_exception(error);
}

/// Every session state the client went through, in order.
struct state_log {
  std::vector<zk::session_state> seen;
  void attach(zk::client& c) {
    c.on_state([this](zk::session_state s) { seen.push_back(s); });
  }
  bool saw(zk::session_state s) const { return std::find(seen.begin(), seen.end(), s) != seen.end(); }
  // on_state is posted after the state flips: a poll of state() can see the new state first.
  bool last_is(zk::session_state s) const { return !seen.empty() && seen.back() == s; }
};

std::string names(const std::vector<zk::session_state>& states) {
  std::string out;
  for (auto s : states)
    out += (out.empty() ? "" : " ") + std::string(zk::to_string(s));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(zookeeper_client)

BOOST_AUTO_TEST_CASE(an_idle_session_is_kept_alive_by_pings) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(1000)));
    state_log states;
    states.attach(c);
    co_await c.connect();
    BOOST_TEST(c.negotiated_timeout().count() == 1000);
    const auto id = c.session_id();
    BOOST_TEST(id != 0);
    co_await sleep_for(milliseconds(3500)); // 3.5 session timeouts without a request
    BOOST_TEST((c.state() == zk::session_state::connected));
    BOOST_TEST(names(states.seen) == "connected");
    auto root = co_await c.exists("/", false);
    BOOST_TEST(root.has_value());
    BOOST_TEST(c.session_id() == id);
    BOOST_TEST((c.alive_until() > clock_type::now()));
    co_await c.close();
  });
}

BOOST_AUTO_TEST_CASE(ephemeral_sequential_nodes_are_listed_with_rising_czxid) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await c.connect();
    auto parent = co_await c.create("/locks", "", zk::create_mode::container);
    BOOST_TEST(parent.path == "/locks");
    std::vector<zk::created> made;
    for (int i = 0; i < 3; ++i)
      made.push_back(co_await c.create("/locks/n-", "x", zk::create_mode::ephemeral_sequential));
    for (int i = 0; i < 3; ++i) {
      BOOST_TEST(made[i].path == "/locks/n-000000000" + std::to_string(i));
      BOOST_TEST(made[i].node.ephemeral_owner == c.session_id());
      if (i > 0)
        BOOST_TEST(made[i].node.czxid > made[i - 1].node.czxid);
    }
    auto kids = co_await c.get_children("/locks", false);
    std::sort(kids.names.begin(), kids.names.end());
    BOOST_TEST(kids.names == (std::vector<std::string>{"n-0000000000", "n-0000000001", "n-0000000002"}),
               boost::test_tools::per_element());
    BOOST_TEST(kids.parent.num_children == 3);

    auto [ec, again] = co_await c.create("/locks", "", zk::create_mode::container,
                                         asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == zk::zk_error::node_exists));
    auto [ec2, none] = co_await c.get_children("/nothing", false, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec2 == zk::zk_error::no_node));
    co_await c.close();
  });
}

BOOST_AUTO_TEST_CASE(a_watch_fires_when_its_node_is_deleted) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client watcher(ex, zookeeper_config(server.url(), milliseconds(4000)));
    zk::client other(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await watcher.connect();
    co_await other.connect();
    std::vector<zk::watch_event> events;
    event fired(ex);
    watcher.on_watch([&](const zk::watch_event& e) {
      events.push_back(e);
      if (events.size() == 2)
        fired.set();
    });
    co_await other.create("/dir", "", zk::create_mode::persistent);
    co_await other.create("/dir/node", "", zk::create_mode::ephemeral);
    auto st = co_await watcher.exists("/dir/node", true);
    BOOST_TEST(st.has_value());
    co_await watcher.get_children("/dir", true);
    co_await other.remove("/dir/node");
    co_await fired.wait();
    BOOST_REQUIRE(events.size() == 2u);
    BOOST_TEST((events[0].type == zk::event_type::node_deleted));
    BOOST_TEST(events[0].path == "/dir/node");
    BOOST_TEST((events[1].type == zk::event_type::node_children_changed));
    BOOST_TEST(events[1].path == "/dir");
    co_await other.remove("/dir");
    co_await watcher.close();
    co_await other.close();
  });
}

BOOST_AUTO_TEST_CASE(set_data_bumps_the_version_fires_an_exists_watch_and_refuses_a_stale_version) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client watcher(ex, zookeeper_config(server.url(), milliseconds(4000)));
    zk::client other(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await watcher.connect();
    co_await other.connect();
    std::vector<zk::watch_event> events;
    event fired(ex);
    watcher.on_watch([&](const zk::watch_event& e) {
      events.push_back(e);
      fired.set();
    });
    co_await other.create("/node", "", zk::create_mode::ephemeral);
    auto before = co_await watcher.exists("/node", true);
    BOOST_REQUIRE(before.has_value());
    BOOST_TEST(before->version == 0);
    auto st = co_await other.set_data("/node", "granted");
    BOOST_TEST(st.version == 1);
    BOOST_TEST(st.data_length == 7);
    co_await fired.wait();
    BOOST_REQUIRE(events.size() == 1u);
    BOOST_TEST((events[0].type == zk::event_type::node_data_changed));
    BOOST_TEST(events[0].path == "/node");
    auto [stale, ignored] = co_await other.set_data("/node", "x", 0, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((stale == zk::zk_error::bad_version));
    auto [missing, none] = co_await other.set_data("/absent", "x", -1, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((missing == zk::zk_error::no_node));
    auto [bad, nothing] = co_await other.set_data("no-slash", "x", -1, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((bad == error::invalid_argument));
    co_await watcher.close();
    co_await other.close();
  });
}

BOOST_AUTO_TEST_CASE(a_multi_is_all_or_nothing) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await c.connect();
    // Named vectors: GCC 12 miscompiles a braced list of variants inside a co_await expression.
    std::vector<zk::multi_op> good{zk::create_op{"/m", "", zk::create_mode::persistent},
                                   zk::create_op{"/m/a", "", zk::create_mode::ephemeral_sequential},
                                   zk::check_op{"/m", 0}};
    auto ok = co_await c.multi(std::move(good));
    BOOST_REQUIRE(ok.size() == 3u);
    BOOST_TEST(ok[1].path == "/m/a0000000000");
    std::vector<zk::multi_op> bad{zk::create_op{"/n", "", zk::create_mode::persistent},
                                  zk::remove_op{"/m", 7}};
    auto [ec, failed] = co_await c.multi(std::move(bad), asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == zk::zk_error::bad_version));
    BOOST_REQUIRE(failed.size() == 2u);
    BOOST_TEST((failed[0].err == zk::zk_error::ok)); // would have succeeded; rolled back
    BOOST_TEST((failed[1].err == zk::zk_error::bad_version));
    BOOST_TEST(!(co_await c.exists("/n", false)).has_value());
    co_await c.close();
  });
}

BOOST_AUTO_TEST_CASE(a_server_restart_within_the_session_keeps_it_its_nodes_and_watches) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(6000)));
    state_log states;
    states.attach(c);
    co_await c.connect();
    const auto id = c.session_id();
    co_await c.create("/e", "", zk::create_mode::ephemeral);
    BOOST_TEST(!(co_await c.exists("/later", true)).has_value()); // an exist watch
    std::vector<zk::watch_event> events;
    event fired(ex);
    c.on_watch([&](const zk::watch_event& e) {
      events.push_back(e);
      fired.set();
    });

    const auto down = clock_type::now();
    co_await offload([&] { server.kill(); });
    // On this thread: a fixture's child dies with the thread that spawned it (PR_SET_PDEATHSIG).
    // The client's timers wait meanwhile; the session timeout covers the JVM's start.
    server.restart();
    BOOST_TEST_MESSAGE("server killed and restarted in "
                       << std::chrono::duration_cast<milliseconds>(clock_type::now() - down).count() << " ms");
    BOOST_TEST(co_await eventually([&] { return c.state() == zk::session_state::connected &&
                                                states.saw(zk::session_state::suspended) &&
                                                states.last_is(zk::session_state::connected); }));
    BOOST_TEST(names(states.seen) == "connected suspended connected");
    BOOST_TEST(c.session_id() == id);
    auto e = co_await c.exists("/e", false);
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->ephemeral_owner == id);

    // The exist watch came back with SetWatches: another client's create fires it.
    zk::client other(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await other.connect();
    co_await other.create("/later", "", zk::create_mode::persistent);
    BOOST_REQUIRE(co_await eventually([&] { return fired.is_set(); }, milliseconds(5000)));
    BOOST_REQUIRE(events.size() == 1u);
    BOOST_TEST((events[0].type == zk::event_type::node_created));
    BOOST_TEST(events[0].path == "/later");
    co_await other.close();
    co_await c.close();
  });
}

// With new_session_after_expiry off, so the client stays expired and its requests fail (on, it asks
// for a new session at once: zookeeper_locks/after_its_session_expired_the_client_goes_on_…).
BOOST_AUTO_TEST_CASE(a_stopped_server_past_the_session_timeout_is_expiry_for_us) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto cfg = zookeeper_config(server.url(), milliseconds(1000));
    cfg.new_session_after_expiry = false;
    zk::client c(ex, cfg);
    state_log states;
    states.attach(c);
    co_await c.connect();
    co_await c.exists("/", false);
    co_await offload([&] { server.pause(); });
    const auto paused = clock_type::now();
    const auto bound = c.alive_until();
    BOOST_TEST((bound <= paused + milliseconds(1000)));
    BOOST_TEST(co_await eventually([&] { return c.state() == zk::session_state::expired; },
                                   milliseconds(5000)));
    const auto expired = clock_type::now();
    BOOST_TEST_MESSAGE("expired for us " << std::chrono::duration_cast<milliseconds>(expired - paused).count()
                                         << " ms after the pause; the local deadline was "
                                         << std::chrono::duration_cast<milliseconds>(bound - paused).count()
                                         << " ms after it");
    BOOST_TEST((expired >= bound));
    BOOST_TEST((expired <= bound + milliseconds(500)));
    BOOST_TEST(co_await eventually([&] { return states.last_is(zk::session_state::expired); }, milliseconds(1000)));
    BOOST_TEST(names(states.seen) == "connected suspended expired");
    auto [ec, st] = co_await c.exists("/", false, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == error::session_expired));
    co_await offload([&] { server.resume(); });
  });
}

BOOST_AUTO_TEST_CASE(the_leader_killed_the_client_moves_to_another_member_with_its_session) {
  zookeeper_ensemble ensemble;
  const auto leader = ensemble.leader();
  // The leader first in the list, so the client sits on the member that is killed.
  std::string url = "zookeeper://" + ensemble[leader].address();
  for (std::size_t i = 0; i < ensemble.size(); ++i)
    if (i != leader)
      url += "," + ensemble[i].address();
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(url, milliseconds(8000)));
    state_log states;
    states.attach(c);
    co_await c.connect();
    BOOST_TEST(c.member() == 0u);
    const auto id = c.session_id();
    auto before = co_await c.create("/e", "", zk::create_mode::ephemeral);
    co_await offload([&] { ensemble[leader].kill(); });
    const auto killed = clock_type::now();
    BOOST_TEST(co_await eventually([&] { return c.state() == zk::session_state::connected &&
                                                states.saw(zk::session_state::suspended); },
                                   milliseconds(8000)));
    BOOST_TEST_MESSAGE("back on the session "
                       << std::chrono::duration_cast<milliseconds>(clock_type::now() - killed).count()
                       << " ms after the kill, on member " << c.member());
    BOOST_TEST(c.member() != 0u);
    BOOST_TEST(c.session_id() == id);
    auto e = co_await c.exists("/e", false);
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(e->czxid == before.node.czxid);
    auto after = co_await c.create("/f", "", zk::create_mode::ephemeral);
    BOOST_TEST(after.node.czxid > before.node.czxid);
    co_await c.close();
  }, std::chrono::seconds(60));
}

BOOST_AUTO_TEST_CASE(close_removes_the_session_ephemeral_nodes_at_once) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client owner(ex, zookeeper_config(server.url(), milliseconds(10000)));
    zk::client other(ex, zookeeper_config(server.url(), milliseconds(10000)));
    co_await owner.connect();
    co_await other.connect();
    co_await owner.create("/mine", "", zk::create_mode::ephemeral);
    BOOST_TEST((co_await other.exists("/mine", false)).has_value());
    const auto t0 = clock_type::now();
    co_await owner.close();
    BOOST_TEST((owner.state() == zk::session_state::closed));
    BOOST_TEST(!(co_await other.exists("/mine", false)).has_value());
    BOOST_TEST((clock_type::now() - t0 < milliseconds(5000))); // not the 10 s session timeout
    auto [ec, st] = co_await owner.exists("/", false, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == error::closed));
    co_await other.close();
  });
}

BOOST_AUTO_TEST_CASE(a_cancelled_operation_ends_at_once_and_its_late_reply_is_dropped) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await c.connect();
    co_await offload([&] { server.pause(); }); // the reply cannot come before the cancellation
    asio::cancellation_signal signal;
    auto [ec, st] = co_await cancelled_after(
        c.exists("/", false, asio::bind_cancellation_slot(signal.slot(), asio::as_tuple(asio::use_awaitable))),
        signal, milliseconds(50), asio::cancellation_type::terminal);
    BOOST_TEST((ec == asio::error::operation_aborted));
    co_await offload([&] { server.resume(); });
    // The cancelled request's reply arrives first and is matched and dropped; the session goes on.
    auto root = co_await c.exists("/", false);
    BOOST_TEST(root.has_value());
    BOOST_TEST((c.state() == zk::session_state::connected));
    co_await c.close();
  });
}

BOOST_AUTO_TEST_CASE(a_chroot_is_below_the_server_root) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client root(ex, zookeeper_config(server.url(), milliseconds(4000)));
    zk::client app(ex, zookeeper_config(server.url() + "/app", milliseconds(4000)));
    co_await root.connect();
    co_await app.connect();
    co_await root.create("/app", "", zk::create_mode::persistent);
    auto made = co_await app.create("/x-", "", zk::create_mode::ephemeral_sequential);
    BOOST_TEST(made.path == "/x-0000000000");
    BOOST_TEST((co_await root.exists("/app/x-0000000000", false)).has_value());
    co_await root.close();
    co_await app.close();
  });
}

// Nothing listens on the port: the refusal is the answer (issue 42, item 7), at once, not after
// the client's bound (twice the session timeout: 8 000 ms here).
BOOST_AUTO_TEST_CASE(no_server_is_connect_failed_with_the_members_named) {
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    const auto port = pick_free_port();
    zk::client c(ex, zookeeper_config("zookeeper://127.0.0.1:" + std::to_string(port), milliseconds(4000)));
    diagnostics why;
    const auto asked = std::chrono::steady_clock::now();
    auto [ec] = co_await c.connect(bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
    const auto took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count();
    BOOST_TEST_MESSAGE("connect() to a refused port: " << ec.message() << " in " << took << " ms: "
                       << why.client_message());
    BOOST_TEST(took < 1000.0);
    BOOST_TEST(why.client_message().find("refused") != std::string::npos, why.client_message());
    BOOST_TEST((ec == error::connect_failed));
    BOOST_TEST(why.client_message().find("127.0.0.1:" + std::to_string(port)) != std::string::npos,
               why.client_message());
    BOOST_TEST(ec.message().find("Redis") == std::string::npos, ec.message()); // the code's words name no store
  });
}

// Issue 42, item 2: a request longer than the server's packet limit (jute.maxbuffer, 1 MiB by
// default) would make the server drop the connection, and be written again after each reconnect.
// It is refused before it is sent, with words; the session goes on, untouched.
BOOST_AUTO_TEST_CASE(a_request_past_the_server_s_packet_limit_is_refused_with_words_and_never_sent) {
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await c.connect();
    const auto id = c.session_id();
    diagnostics why;
    auto [ec, made] = co_await c.create("/big", std::string(1100 * 1024, 'x'), zk::create_mode::ephemeral,
                                        bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST_MESSAGE("a create of 1 100 KiB: " << ec.message() << ": " << why.client_message());
    BOOST_TEST((ec == error::invalid_argument), ec.message());
    BOOST_TEST(why.client_message().find("packet limit") != std::string::npos, why.client_message());
    co_await sleep_for(milliseconds(200));
    BOOST_TEST((c.state() == zk::session_state::connected));
    BOOST_TEST(c.session_id() == id);
    BOOST_TEST(!(co_await c.exists("/big", false)).has_value());
    auto fits = co_await c.create("/fits", std::string(1000 * 1024, 'x'), zk::create_mode::ephemeral);
    BOOST_TEST(fits.path == "/fits");
    co_await c.close();
  });
}

BOOST_AUTO_TEST_CASE(a_bad_url_or_path_is_invalid_argument) {
  asio::io_context io;
  for (const char* url : {"redis://127.0.0.1:2181", "zookeeper://", "zookeeper://h:0", "zookeeper://h:x",
                          "zookeeper://h:1,", "zookeeper://h/a//b", "zookeeper://h?session_timeout=0",
                          "zookeeper://h?colour=red"}) {
    try {
      zk::client c(io.get_executor(), url);
      BOOST_ERROR("accepted " << url);
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((e.code() == error::invalid_argument), url << ": " << e.what());
    }
  }
  zookeeper_server server;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    zk::client c(ex, zookeeper_config(server.url(), milliseconds(4000)));
    co_await c.connect();
    for (const char* path : {"", "relative", "/trailing/", "/a//b"}) {
      diagnostics why;
      auto [ec, st] = co_await c.exists(path, false, bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
      BOOST_TEST((ec == error::invalid_argument), path);
      BOOST_TEST(!why.empty());
    }
    co_await c.close();
  });
}

BOOST_AUTO_TEST_SUITE_END()
