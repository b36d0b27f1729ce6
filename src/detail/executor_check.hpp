// Private: the debug check that a client and its locks are used from the client's executor
// (docs/api.md, threading), built when COROLOCK_CHECK_EXECUTOR is 1 (CMake: on in Debug builds,
// forced by -DCOROLOCK_CHECK_EXECUTOR=ON|OFF); otherwise every function here is an empty inline
// and costs nothing.
//
// What it must tell apart. A call is safe when no other thread can be running the client's
// handlers at that moment: made from inside a handler on the executor (a coroutine, a callback),
// or while nobody runs the executor — before io.run() from the thread that will run it, after
// io.run() returned. It is a data race when another thread is inside run() of that io_context
// right now. Asio says whether *this* thread runs an executor (running_in_this_thread), never
// whether another one does, so a check on running_in_this_thread alone refuses every legitimate
// call made before io.run(). Hence a record, kept per io_context (an Asio service: it lives and
// dies with the io_context, so a later io_context at the same address starts clean):
//
//  - the runner: the last thread seen running that io_context — set by every checked call made on
//    the executor and by every completion corolock delivers through it (detail::complete_later, and
//    the waiting line's acquisitions), with a token that the thread's exit clears (a thread that
//    ran io.run() and was joined runs nothing any more);
//  - a call off the executor is refused only when the io_context is not stopped (io.run() has not
//    returned for lack of work or stop()) and the runner is another thread, still alive.
//
// So the correct uses pass: before io.run() nothing was recorded yet; after io.run() returned the
// io_context is stopped (or the runner is the caller itself, or a thread gone); inside handlers
// running_in_this_thread holds (for a strand, the strand's own, so a strand on a multi-threaded
// io_context is checked as the strand). What it cannot see, and lets through: a wrong-thread call
// before any corolock handler or checked call ran on the io_context (it looks like a pre-run call),
// and a call racing a thread of the same io_context that is not the recorded runner. One case can
// be refused although it was safe: another thread ran the io_context with run_for/run_one/poll,
// returned without the io_context stopping, is still alive, and this thread calls in without
// running it — use the io_context from one thread, or post the call to it. Executors recognised:
// an io_context's (any of its properties), a strand of it, a strand of an any_io_executor on it;
// others (a thread_pool, the system executor, a user's own) are not checked. Nor does it replace a
// strand: calls from two threads that both run an io_context without one are not told apart.
// Cost when on: per checked call and per delivery, a service lookup and a mutex.
//
// On a refused call it writes what was called, on which lock, and what to do, to stderr, then
// aborts (std::abort: a debug assertion, also under a death test).
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <string_view>

#ifndef COROLOCK_CHECK_EXECUTOR
#define COROLOCK_CHECK_EXECUTOR 0
#endif

namespace corolock::detail {

/// Whether this build of the library checks the executor (for tests).
bool executor_check_on() noexcept;

#if COROLOCK_CHECK_EXECUTOR
/// `what` (e.g. "corolock::mutex::acquire") is being called on lock `name` of a client whose
/// executor is `ex`: aborts with words if another thread is running that executor now; records
/// this thread as its runner if this thread runs it.
void check_executor(const boost::asio::any_io_executor& ex, const char* what,
                    std::string_view name);
/// This thread is running a handler posted to `ex` now (a completion corolock delivers).
void note_running(const boost::asio::any_io_executor& ex);

/// For detail::complete_later, whatever its executor type.
template <typename Executor>
void note_running_on(const Executor& ex) {
  note_running(boost::asio::any_io_executor(ex));
}
#else
inline void check_executor(const boost::asio::any_io_executor&, const char*,
                           std::string_view) noexcept {}
#endif

} // namespace corolock::detail
