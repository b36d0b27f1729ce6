// Chubby's lock-delay over a mutex and its marks (lock_delay.hpp says the rule and its reasons).
#include "core/lock_delay.hpp"

#include "core/engine.hpp"
#include "core/lease.hpp"
#include "core/marks.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "detail/guard_access.hpp"

#include <corolock/diagnostics.hpp>
#include <corolock/error.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/error.hpp>

#include <algorithm>

namespace corolock::core {

namespace {

/// One acquisition's lock-delay step, from its grant to its caller's completion. Runs on the
/// handle's executor; each store call and the timer hold it weakly or by a shared pointer until
/// they answer, and `done` makes every answer after the first completion a no-op.
class delay_step : public std::enable_shared_from_this<delay_step> {
public:
  using caller = detail::handler<void(error_code, guard)>;

  delay_step(const std::shared_ptr<engine>& e, std::shared_ptr<const lock_spec> spec,
             steady::time_point deadline, diagnostics* diag, caller h)
      : eng_(e), ex_(e->store().get_executor()), spec_(std::move(spec)), deadline_(deadline),
        diag_(diag), slot_(asio::get_associated_cancellation_slot(h)) {
    h_.set(std::move(h));
  }

  void granted(error_code ec, guard g) {
    if (ec) // no grant (taken, timeout, cancelled, closed, …): nothing of the step to undo
      return complete(ec, {}, std::move(g));
    g_ = std::move(g);
    if (slot_.is_connected()) // the wait's own handler was cleared from it before this ran
      slot_.assign([w = weak_from_this()](asio::cancellation_type) {
        if (auto s = w.lock())
          s->give_back(asio::error::operation_aborted, "cancelled during its lock-delay");
      });
    detail::guard_access::lease_of(g_)->add_lost_waiter([w = weak_from_this()](error_code lost) {
      if (auto s = w.lock(); s && lost == error::lease_lost)
        s->give_back(error::lease_lost, "the lease was lost during its lock-delay");
    });
    call_marks(marks_call::read, [self = shared_from_this()](error_code rec, std::vector<std::uint32_t> set,
                                                             std::string words) {
      if (rec)
        return self->give_back(rec, "reading the lock-delay mark: " + words);
      if (std::find(set.begin(), set.end(), lock_delay_mark) != set.end())
        return self->hold_back();
      self->call_marks(marks_call::add, [self](error_code aec, std::vector<std::uint32_t>, std::string w) {
        if (aec)
          return self->give_back(aec, "adding the lock-delay mark: " + w);
        self->complete_held();
      });
    });
  }

private:
  using marks_done = std::function<void(error_code, std::vector<std::uint32_t>, std::string)>;

  /// The mark was there: the last holder ended without a release. The lock is kept, and handed to
  /// the caller lock_delay from now — or given back at the caller's deadline if that comes first.
  void hold_back() {
    if (done_)
      return;
    auto e = eng_.lock();
    if (!e || e->closed())
      return give_back(error::closed, "the client closed during the lock-delay");
    const auto until = e->store().now() + spec_->options.lock_delay;
    const bool deadline_first = deadline_ < until;
    timer_ = e->store().make_timer();
    // The timer's arming holds the step until it fires or is disarmed (the step's only owner
    // meanwhile).
    timer_->arm(std::min(until, deadline_), [s = shared_from_this(), deadline_first] {
      if (deadline_first)
        return s->give_back(error::timeout, "the deadline came during the lock-delay (the last holder "
                                            "ended without a release)");
      s->complete_held(); // the mark is there already: ours to clear at the unlock
    });
  }

  /// One marks call of the step. The store's answer goes to `then`; no answer (not connected, a
  /// request timeout, a lost connection) sends it again, 50 ms later doubling to 2 s, until the
  /// caller's deadline — the lock is held meanwhile, its lease renewed, as an acquisition rides
  /// through a short outage.
  void call_marks(marks_call what, marks_done then) {
    if (done_)
      return;
    auto e = eng_.lock();
    if (!e || e->closed())
      return give_back(error::closed, "the client closed during the lock-delay");
    auto said = std::make_shared<diagnostics>();
    marks_admin(e->store(), ex_, *spec_, what, what == marks_call::add ? lock_delay_mark : 0, said.get(),
                [self = shared_from_this(), said, what, then = std::move(then)](
                    error_code ec, std::vector<std::uint32_t> set) mutable {
                  if (ec == error::not_connected || ec == error::timeout || ec == error::connection_lost)
                    return self->call_again(what, std::move(then), said->message());
                  then(ec, std::move(set), said->message());
                });
  }

  void call_again(marks_call what, marks_done then, std::string words) {
    auto e = eng_.lock();
    if (done_ || !e || e->closed())
      return give_back(error::closed, "the client closed during the lock-delay");
    const auto now = e->store().now();
    if (now >= deadline_)
      return give_back(error::timeout, "the store did not answer the lock-delay mark's call by the "
                                       "deadline: " + words);
    if (!timer_)
      timer_ = e->store().make_timer();
    const auto wait = backoff_;
    backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(2000));
    timer_->arm(std::min(now + wait, deadline_), [s = shared_from_this(), what, then = std::move(then)]() mutable {
      s->call_marks(what, std::move(then));
    });
  }

  /// The step is over with the lock held: the caller gets the guard, whose clean unlock clears the
  /// mark.
  void complete_held() {
    if (done_)
      return;
    if (g_.lost())
      return give_back(error::lease_lost, "the lease was lost during its lock-delay");
    detail::guard_access::lease_of(g_)->clears_delay_mark = true;
    complete({}, {}, std::move(g_));
  }

  /// The step failed (or was cancelled) holding the grant: the lock is given back — its answer
  /// awaited, so the caller finds it free when it completes — and the mark left as it was.
  void give_back(error_code ec, std::string words) {
    if (done_)
      return;
    done_ = true;
    if (timer_)
      timer_->disarm();
    auto g = std::move(g_);
    if (!g.owns_lock())
      return finish(ec, std::move(words), guard{});
    auto self = shared_from_this();
    g.unlock([self, ec, words = std::move(words)](error_code) mutable {
      self->finish(ec, std::move(words), guard{});
    });
  }

  void complete(error_code ec, std::string words, guard g) {
    if (done_)
      return;
    done_ = true;
    if (timer_)
      timer_->disarm();
    finish(ec, std::move(words), std::move(g));
  }

  void finish(error_code ec, std::string words, guard g) {
    if (!h_)
      return;
    if (ec && !words.empty())
      detail::diagnostics_access::failure(diag_, ec, "lock " + spec_->name + ": " + words);
    detail::complete_later(ex_, h_.take(), slot_, ec, std::move(g));
  }

  std::weak_ptr<engine> eng_;
  asio::any_io_executor ex_;
  std::shared_ptr<const lock_spec> spec_;
  steady::time_point deadline_;
  diagnostics* diag_;
  asio::cancellation_slot slot_;
  detail::stored_handler<caller> h_; // never move-assigned (detail/completion.hpp)
  guard g_;
  std::unique_ptr<timer> timer_;
  std::chrono::milliseconds backoff_{50};
  bool done_ = false;
};

} // namespace

detail::handler<void(error_code, guard)> after_lock_delay(const std::shared_ptr<engine>& e,
                                                          std::shared_ptr<const lock_spec> spec,
                                                          steady::time_point deadline,
                                                          diagnostics* diag,
                                                          detail::handler<void(error_code, guard)> h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  auto step = std::make_shared<delay_step>(e, std::move(spec), deadline, diag, std::move(h));
  // The wait for the grant is cancelled through the caller's slot as before; then the step is.
  return asio::bind_cancellation_slot(slot, [step](error_code ec, guard g) { step->granted(ec, std::move(g)); });
}

void clear_lock_delay_mark(engine& e, const lease& l, std::function<void()> then) {
  marks_admin(e.store(), l.ex, *l.spec, marks_call::clear, 0, nullptr,
              [then = std::move(then)](error_code, std::vector<std::uint32_t>) { then(); });
}

} // namespace corolock::core
