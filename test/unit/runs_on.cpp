// detail::runs_on (include/corolock/detail/async.hpp): whether a handler runs on the executor that
// completes it, asked of the concrete handler before it is type-erased. A yes lets the connection
// call the handler from its completion batch; a wrong yes would run a strand's handler outside
// its strand, so every "no" below matters as much as the "yes".
#include <corolock/detail/async.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

namespace {
namespace asio = boost::asio;
namespace cd = corolock::detail;
} // namespace

BOOST_AUTO_TEST_SUITE(runs_on)

BOOST_AUTO_TEST_CASE(a_handler_without_an_executor_runs_on_the_one_completing_it) {
  asio::io_context io;
  const asio::any_io_executor ex = io.get_executor();
  BOOST_TEST(cd::runs_on([](int) {}, ex));
}

BOOST_AUTO_TEST_CASE(a_handler_bound_to_the_same_executor_runs_on_it) {
  asio::io_context io;
  const asio::any_io_executor ex = io.get_executor();
  BOOST_TEST(cd::runs_on(asio::bind_executor(ex, [](int) {}), ex));
}

BOOST_AUTO_TEST_CASE(another_io_context_is_another_executor) {
  asio::io_context io, other;
  const asio::any_io_executor ex = io.get_executor();
  const asio::any_io_executor theirs = other.get_executor();
  BOOST_TEST(!cd::runs_on(asio::bind_executor(theirs, [](int) {}), ex));
}

BOOST_AUTO_TEST_CASE(a_strand_over_the_same_io_context_is_not_the_same_executor) {
  asio::io_context io;
  const asio::any_io_executor ex = io.get_executor();
  auto strand = asio::make_strand(io);
  // Its own type: dispatched to, never called from outside the strand.
  BOOST_TEST(!cd::runs_on(asio::bind_executor(strand, [](int) {}), ex));
  // Erased into an any_io_executor, still not equal to the bare executor.
  const asio::any_io_executor erased_strand = strand;
  BOOST_TEST(!cd::runs_on(asio::bind_executor(erased_strand, [](int) {}), ex));
  // But the strand's own handlers, completed by that strand, run on it.
  BOOST_TEST(cd::runs_on([](int) {}, erased_strand));
}

BOOST_AUTO_TEST_SUITE_END()
