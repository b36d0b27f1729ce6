// The debug check that a client and its locks are called from the client's executor
// (src/detail/executor_check.hpp), on the in-memory testing store: a call from a thread that does not
// run the executor, while another thread runs it, aborts with words saying what was called and
// what to do; the correct uses (before io.run() from the thread that will run it, inside handlers,
// after io.run() returned, a strand on an io_context that several threads run) never trip it.
// Each case runs in a child process (a death test: fork, the child's stderr read back), so that an
// abort — expected or not — is seen as an outcome here. Skipped in a build without the check.
#include "detail/executor_check.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/mutex.hpp>
#include <corolock/lock/semaphore.hpp>
#include <corolock/testing/store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace corolock;
namespace ct = corolock::testing;

namespace {

struct child_outcome {
  bool aborted = false; // ended by SIGABRT
  int exit_code = -1;   // exited normally: its code
  std::string err;      // everything it wrote to stderr
};

/// Runs `body` in a child process; its stderr comes back in the outcome. A body that returns
/// exits 0; one that throws, 3; a child that hangs is ended by SIGALRM after 30 s.
child_outcome in_child(const std::function<void()>& body) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // Boost.Test's handlers (inherited) would turn the abort into an exit: the default ones back.
    for (int sig : {SIGABRT, SIGALRM, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
      std::signal(sig, SIG_DFL);
    ::close(fds[0]);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    ::alarm(30);
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "threw: %s\n", e.what());
      std::fflush(stderr);
      std::_Exit(3);
    }
    std::fflush(stderr);
    std::_Exit(0); // no atexit handlers, no Boost.Test teardown in the child
  }
  ::close(fds[1]);
  child_outcome out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0)
      break;
    out.err.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
  out.aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
  if (WIFEXITED(status))
    out.exit_code = WEXITSTATUS(status);
  return out;
}

/// The body died by the check: aborted, with words naming `what` and what to do.
void expect_refused(const std::function<void()>& body, const std::string& what) {
  auto out = in_child(body);
  BOOST_TEST(out.aborted, "the child was not aborted (exit " << out.exit_code << "): " << out.err);
  BOOST_TEST(out.err.find(what) != std::string::npos, "no '" << what << "' in: " << out.err);
  BOOST_TEST(out.err.find("not running the client's executor") != std::string::npos, out.err);
  BOOST_TEST(out.err.find("asio::post") != std::string::npos, out.err);
  BOOST_TEST(out.err.find("strand") != std::string::npos, out.err);
}

/// The body ran to its end: not aborted, exit 0.
void expect_allowed(const std::function<void()>& body) {
  auto out = in_child(body);
  BOOST_TEST(!out.aborted, "the check refused a correct use: " << out.err);
  BOOST_TEST(out.exit_code == 0, "exit " << out.exit_code << ": " << out.err);
}

/// In a child: a failed expectation ends it with exit 4 and words.
void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "failed: %s\n", what);
    std::fflush(stderr);
    std::_Exit(4);
  }
}

/// One store, a client and a semaphore on `ex`, on the manual clock: no timer keeps io.run() from
/// returning.
struct world {
  ct::store s;
  ct::client c;
  semaphore sem;
  explicit world(asio::any_io_executor ex) : s(ex, options()), c(ex, s), sem(c, "exec:sem", 3) {}
  static ct::store_options options() {
    ct::store_options o;
    o.clock = ct::clock_mode::manual;
    return o;
  }
};

/// Holds the lock on the executor (a checked call made there: the runner is known), then lets
/// `from_thread` run on a second thread while this thread keeps running the io_context; ends once
/// the thread is done.
void while_main_runs(asio::io_context& io, mutex& m,
                     const std::function<void(guard&)>& from_thread) {
  auto work = asio::make_work_guard(io);
  std::thread t;
  std::optional<guard> held;
  m.acquire([&](error_code ec, guard g) {
    require(!ec, "the first acquisition");
    held.emplace(std::move(g));
    t = std::thread([&] {
      from_thread(*held);
      asio::post(io, [&] { work.reset(); });
    });
  });
  io.run();
  t.join();
}

/// A world on one io_context and a mutex 'exec:runner' held on the executor; `from_thread` runs
/// on a second thread while this one runs the io_context, and must die of the check with `what`.
void refused_from_a_thread(const std::function<void(world&, mutex&, guard&)>& from_thread,
                           const std::string& what) {
  expect_refused(
      [&] {
        asio::io_context io;
        world w(io.get_executor());
        mutex m{w.c, "exec:runner"};
        while_main_runs(io, m, [&](guard& g) { from_thread(w, m, g); });
      },
      what);
}

bool check_on() { return detail::executor_check_on(); }

boost::test_tools::assertion_result check_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(check_on());
  r.message() << "the executor check is off in this build (COROLOCK_CHECK_EXECUTOR: on in Debug "
                 "builds, or -DCOROLOCK_CHECK_EXECUTOR=ON)";
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(executor_check, *boost::unit_test::precondition(check_built))

BOOST_AUTO_TEST_CASE(acquire_from_another_thread_while_one_runs_the_executor_aborts) {
  refused_from_a_thread([](world&, mutex& m, guard&) { m.acquire([](error_code, guard) {}); },
                        "corolock::mutex::acquire on lock 'exec:runner'");
}

BOOST_AUTO_TEST_CASE(try_acquire_and_a_semaphore_from_another_thread_abort) {
  refused_from_a_thread([](world&, mutex& m, guard&) { m.try_acquire([](error_code, guard) {}); },
                        "corolock::mutex::try_acquire");
  refused_from_a_thread([](world& w, mutex&, guard&) { w.sem.acquire(2, [](error_code, guard) {}); },
                        "corolock::semaphore::acquire on lock 'exec:sem'");
}

BOOST_AUTO_TEST_CASE(a_guard_released_from_another_thread_aborts) {
  refused_from_a_thread([](world&, mutex&, guard& g) { g.unlock([](error_code) {}); },
                        "corolock::guard::unlock on lock 'exec:runner'");
  refused_from_a_thread([](world&, mutex&, guard& g) { guard dropped = std::move(g); },
                        "corolock::guard's destructor");
}

BOOST_AUTO_TEST_CASE(a_handle_made_on_another_thread_aborts) {
  refused_from_a_thread([](world& w, mutex&, guard&) { mutex other{w.c, "exec:made"}; },
                        "corolock::mutex on lock 'exec:made'");
}

BOOST_AUTO_TEST_CASE(a_call_off_the_strand_while_threads_run_it_aborts) {
  expect_refused(
      [] {
        asio::io_context io;
        auto work = asio::make_work_guard(io);
        auto strand = asio::make_strand(io);
        world w(strand);
        mutex m{w.c, "exec:strand"};
        std::vector<std::thread> threads;
        for (int i = 0; i < 2; ++i)
          threads.emplace_back([&] { io.run(); });
        // On the strand first (the runner is known), then from this thread, which runs nothing.
        auto g = asio::post(strand, asio::use_future([&] { return m.acquire(asio::use_future); }))
                     .get()
                     .get();
        m.try_acquire([](error_code, guard) {});
        work.reset();
        for (auto& t : threads)
          t.join();
      },
      "corolock::mutex::try_acquire on lock 'exec:strand'");
}

BOOST_AUTO_TEST_CASE(calls_before_and_after_run_from_the_running_thread_pass) {
  expect_allowed([] {
    asio::io_context io;
    world w(io.get_executor());
    mutex m{w.c, "exec:before"}; // made before io.run()
    std::optional<guard> g;
    m.acquire([&](error_code ec, guard got) {
      require(!ec, "acquire before run");
      g.emplace(std::move(got));
    });
    io.run();
    require(g && g->owns_lock(), "held after run");
    // After io.run() returned: release, acquire again, and run again.
    bool unlocked = false, again = false;
    g->unlock([&](error_code ec) { unlocked = !ec; });
    m.try_acquire([&](error_code ec, guard got) { again = !ec && got.owns_lock(); });
    io.restart();
    io.run();
    require(unlocked && again, "unlock and try_acquire after run");
    g.reset();
  });
}

BOOST_AUTO_TEST_CASE(calls_inside_handlers_and_coroutines_pass) {
  expect_allowed([] {
    asio::io_context io;
    world w(io.get_executor());
    mutex m{w.c, "exec:inside"};
    int done = 0;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          mutex made{w.c, "exec:made-inside"};
          auto g = co_await m.acquire();
          auto p = co_await w.sem.acquire(2);
          auto h = co_await made.acquire();
          co_await p.unlock();
          co_await g.unlock();
          ++done;
        },
        asio::detached);
    m.acquire([&](error_code ec, guard g) { // queued behind the coroutine, a callback
      require(!ec, "second acquire");
      g.unlock([&](error_code ec2) {
        require(!ec2, "unlock in a callback");
        ++done;
      });
    });
    io.run();
    require(done == 2, "both finished");
  });
}

BOOST_AUTO_TEST_CASE(calls_after_another_thread_ran_and_was_joined_pass) {
  expect_allowed([] {
    asio::io_context io;
    world w(io.get_executor());
    mutex m{w.c, "exec:joined"};
    std::optional<guard> g;
    m.acquire([&](error_code ec, guard got) {
      require(!ec, "acquire");
      g.emplace(std::move(got));
    });
    std::thread([&] { io.run(); }).join(); // ran there, returned, joined
    require(g && g->owns_lock(), "held");
    // The io_context is stopped: calls from here are fine; after restart() too (the thread that
    // ran it has exited).
    bool again = false;
    g->unlock([](error_code) {});
    io.restart();
    m.acquire([&](error_code ec, guard) { again = !ec; });
    io.run();
    require(again, "acquired again from this thread");
    g.reset();
  });
}

BOOST_AUTO_TEST_CASE(a_strand_on_several_threads_used_through_it_passes) {
  expect_allowed([] {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    auto strand = asio::make_strand(io);
    world w(strand);
    mutex m{w.c, "exec:strand-ok"}; // before the threads run
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&] { io.run(); });
    int inside = 0, most = 0;
    std::vector<std::future<void>> done;
    for (int i = 0; i < 8; ++i)
      done.push_back(asio::co_spawn(
          strand,
          [&]() -> asio::awaitable<void> {
            auto g = co_await m.acquire();
            most = std::max(most, ++inside);
            --inside;
            co_await g.unlock();
          },
          asio::use_future));
    for (auto& d : done)
      d.get();
    // From this thread, through the strand: posted there, the future awaited here.
    auto g = asio::post(strand, asio::use_future([&] { return m.acquire(asio::use_future); }))
                 .get()
                 .get();
    asio::post(strand, asio::use_future([&] { g.unlock([](error_code) {}); })).get();
    work.reset();
    for (auto& t : threads)
      t.join();
    require(most == 1, "one holder at a time");
    mutex after{w.c, "exec:after-join"}; // after every run() returned
    after.try_acquire([](error_code, guard) {});
    io.restart();
    io.run();
  });
}

BOOST_AUTO_TEST_SUITE_END()
