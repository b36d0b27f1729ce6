// fd_waiter (src/detail/fd_waiter.hpp) on one end of a socket pair, the other end playing the
// server: the idle watch and the statement's wait share one read wait, and what it serves when it
// completes is told (the idle watch, the wait, or nobody).
#include "detail/fd_waiter.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>

#include <sys/socket.h>
#include <unistd.h>

namespace asio = boost::asio;
using waiter = corolock::detail::fd_waiter;

namespace {

// What a SQL session is to its waiter: the owner that holds it.
struct session {
  explicit session(asio::io_context& ctx) : w(ctx.get_executor()) {}
  waiter w;
};

struct pair_fixture {
  asio::io_context ctx;
  int library = -1, server = -1;
  std::shared_ptr<session> s = std::make_shared<session>(ctx);
  int inputs = 0;                  // idle watch's input() calls
  int ready = -1;                  // the last wait's outcome; -1: none yet

  pair_fixture() {
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) == 0);
    library = fds[0];
    server = fds[1];
    s->w.watch(library);
  }
  ~pair_fixture() {
    s.reset();
    poll();
    for (int fd : {library, server})
      if (fd >= 0)
        ::close(fd);
  }
  void watch_idle() { s->w.watch_idle(s, [this] { ++inputs; }); }
  void wait(unsigned events) {
    ready = -1;
    s->w.wait(events, std::nullopt, s, [this](unsigned r) { ready = static_cast<int>(r); });
  }
  // Runs what is ready. (The context stops whenever it runs out of work: restarted first.)
  std::size_t poll() {
    ctx.restart();
    return ctx.poll();
  }
  void speak() { BOOST_REQUIRE(::write(server, "x", 1) == 1); }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(fd_waiter, pair_fixture)

// The idle watch's read wait is handed to the wait: nothing is cancelled and armed anew (with the
// old cancel, its cancelled handler ran here), and the answer reaches the wait, not the watch.
BOOST_AUTO_TEST_CASE(the_idle_watch_hands_its_read_wait_to_the_wait) {
  watch_idle();
  BOOST_TEST(poll() == 0u);
  s->w.unwatch_idle();
  wait(waiter::readable);
  BOOST_TEST(poll() == 0u);
  BOOST_TEST(s->w.waiting());
  speak();
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::readable));
  BOOST_TEST(inputs == 0);
  BOOST_TEST(!s->w.waiting());
}

// After a statement, the watch is armed again: a server that closes the socket is noticed.
BOOST_AUTO_TEST_CASE(a_close_after_a_statement_is_noticed) {
  watch_idle();
  wait(waiter::readable);
  speak();
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::readable));
  char byte = 0;
  BOOST_REQUIRE(::read(library, &byte, 1) == 1);
  watch_idle();
  poll();
  BOOST_TEST(inputs == 0);
  ::shutdown(server, SHUT_RDWR);
  poll();
  BOOST_TEST(inputs == 1);
}

// Readiness met while the read wait served nobody (a wait for writable only) is not lost: the next
// watch is armed afresh and told at once.
BOOST_AUTO_TEST_CASE(readiness_that_came_while_unwatched_reaches_the_next_watch) {
  watch_idle();
  wait(waiter::writable);
  speak();
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::writable));
  BOOST_TEST(inputs == 0);
  watch_idle();
  poll();
  BOOST_TEST(inputs == 1);
}

// A wait for writable only whose library call ends at once (the answer already there): the session
// watches again from the wait's own completion, before the read wait that the wait's end cancelled
// has run its handler. That cancelled wait must not be taken for the new watch: a server that dies
// later is still noticed (issue 43: it was not; the watch was dropped with the cancelled wait).
BOOST_AUTO_TEST_CASE(a_watch_armed_as_a_write_only_wait_ends_still_notices_the_server_leave) {
  watch_idle();
  ready = -1;
  s->w.wait(waiter::writable, std::nullopt, s, [this](unsigned r) {
    ready = static_cast<int>(r);
    watch_idle(); // as sql_session::finish does when the statement ended in this step
  });
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::writable));
  BOOST_TEST(inputs == 0);
  ::shutdown(server, SHUT_RDWR);
  poll();
  BOOST_TEST(inputs == 1);
}

// The same after a wait that ended on its timeout (no descriptor event at all).
BOOST_AUTO_TEST_CASE(a_watch_armed_as_a_timed_wait_ends_still_notices_the_server_leave) {
  watch_idle();
  ready = -1;
  s->w.wait(0, std::chrono::milliseconds(0), s, [this](unsigned r) {
    ready = static_cast<int>(r);
    watch_idle();
  });
  while (ready < 0)
    ctx.restart(), ctx.run_one();
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::timed_out));
  BOOST_TEST(inputs == 0);
  ::shutdown(server, SHUT_RDWR);
  poll();
  BOOST_TEST(inputs == 1);
}

// A wait that took over the idle watch's read wait still ends, cancelled, at release().
BOOST_AUTO_TEST_CASE(release_ends_a_wait_that_took_over_the_watch) {
  watch_idle();
  wait(waiter::readable);
  s->w.release();
  poll();
  BOOST_TEST(ready == 0);
  BOOST_TEST(inputs == 0);
}

// The watch never keeps its owner alive, and its handler finds the owner gone.
BOOST_AUTO_TEST_CASE(the_watch_outlives_no_owner) {
  watch_idle();
  std::weak_ptr<session> gone = s;
  s.reset();
  BOOST_TEST(gone.expired());
  speak();
  poll();
  BOOST_TEST(inputs == 0);
}

// A wait keeps its owner alive until it ends, though its read wait was armed by the watch.
BOOST_AUTO_TEST_CASE(a_wait_keeps_its_owner_alive) {
  watch_idle();
  wait(waiter::readable);
  std::weak_ptr<session> held = s;
  s.reset();
  BOOST_TEST(!held.expired());
  speak();
  poll();
  BOOST_TEST(ready == static_cast<int>(waiter::readable));
  BOOST_TEST(held.expired());
}

BOOST_AUTO_TEST_SUITE_END()
