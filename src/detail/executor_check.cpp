// The executor check (design and reasoning: executor_check.hpp).
#include "detail/executor_check.hpp"

namespace corolock::detail {

bool executor_check_on() noexcept { return COROLOCK_CHECK_EXECUTOR != 0; }

} // namespace corolock::detail

#if COROLOCK_CHECK_EXECUTOR

#include "detail/printable_name.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

namespace corolock::detail {

namespace asio = boost::asio;

namespace {

// This thread's life as a runner record sees it: false once the thread has exited (joined).
struct thread_life {
  std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true);
  ~thread_life() { alive->store(false); }
};
thread_local thread_life this_thread_life;

// The last thread seen running one io_context, with its life. A service of that io_context: it is
// made on the first record and goes with the io_context.
class runner_record final : public asio::execution_context::service {
public:
  static asio::execution_context::id id;
  explicit runner_record(asio::execution_context& ctx) : service(ctx) {}

  void set() {
    const auto& life = this_thread_life.alive;
    std::lock_guard lock(m_);
    if (life_ == life)
      return;
    thread_ = std::this_thread::get_id();
    life_ = life;
  }
  /// The recorded runner when it is alive and not this thread; else none.
  std::optional<std::thread::id> other_alive() const {
    std::lock_guard lock(m_);
    if (!life_ || !life_->load() || life_ == this_thread_life.alive)
      return std::nullopt;
    return thread_;
  }

private:
  void shutdown() override {}
  mutable std::mutex m_;
  std::thread::id thread_{};
  std::shared_ptr<std::atomic<bool>> life_;
};
asio::execution_context::id runner_record::id;

// The io_context behind an executor, and whether this thread runs that executor now. Executors on
// an io_context are recognised by type: its own (any of its properties), a strand of it, a strand
// of an any_io_executor on it. For a strand, "runs it now" is the strand's own answer (inside one
// of its handlers); else whether this thread is inside run() of the io_context. Any other executor
// is not checked (io == nullptr).
struct located {
  asio::io_context* io = nullptr;
  bool on_it = false;
};

template <std::uintptr_t... Bits>
located locate_plain(const asio::any_io_executor& ex, std::integer_sequence<std::uintptr_t, Bits...>) {
  located at;
  auto one = [&](const auto* e) {
    if (e && !at.io)
      at = {&e->context(), e->running_in_this_thread()};
  };
  (one(ex.target<asio::io_context::basic_executor_type<std::allocator<void>, Bits>>()), ...);
  return at;
}

located locate(const asio::any_io_executor& ex) {
  if (const auto* s = ex.target<asio::strand<asio::io_context::executor_type>>())
    return {&s->get_inner_executor().context(), s->running_in_this_thread()};
  if (const auto* s = ex.target<asio::strand<asio::any_io_executor>>())
    return {locate(s->get_inner_executor()).io, s->running_in_this_thread()};
  // blocking.never 1, relationship.continuation 2, outstanding_work.tracked 4: all eight.
  return locate_plain(ex, std::make_integer_sequence<std::uintptr_t, 8>());
}

runner_record& record_of(asio::io_context& io) {
  return asio::use_service<runner_record>(static_cast<asio::execution_context&>(io));
}

[[noreturn]] void refuse(const char* what, std::string_view name, std::thread::id runner) {
  std::ostringstream words;
  words << "corolock: " << what << " on lock " << detail::printable_name(name)
        << " was called from a thread that is not running the client's executor, while another "
           "thread (id "
        << runner
        << ") runs it. A client and the locks made from it are used from the client's executor "
           "only, like an Asio socket (docs/api.md): make the call from a handler or coroutine "
           "on that executor — asio::post or asio::dispatch it there (from a plain thread, "
           "asio::post(ex, asio::use_future(...)) and wait for the future) — and when several "
           "threads run the io_context, give the client a strand (asio::make_strand). Aborting "
           "(COROLOCK_CHECK_EXECUTOR).\n";
  const auto text = words.str();
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::abort();
}

} // namespace

void check_executor(const asio::any_io_executor& ex, const char* what, std::string_view name) {
  if (!ex)
    return;
  const auto at = locate(ex);
  if (!at.io)
    return; // not on an io_context: not checked
  if (at.on_it) {
    record_of(*at.io).set();
    return;
  }
  if (at.io->stopped() || !asio::has_service<runner_record>(*at.io))
    return; // run() returned, or nothing of ours ever ran there: nobody runs it now
  if (auto runner = record_of(*at.io).other_alive())
    refuse(what, name, *runner);
}

void note_running(const asio::any_io_executor& ex) {
  if (!ex)
    return;
  const auto at = locate(ex);
  if (at.io && at.io->get_executor().running_in_this_thread())
    record_of(*at.io).set();
}

} // namespace corolock::detail

#endif
