// A request sent until the store has run it: a release (engine::send_release), a give-back
// of an owner whose bid ended unsure (send_give_back), and whatever a backend hands over through
// backend::hooks::resend (a withdrawn owner's removal): the one resend queue of every store. Each
// is idempotent per owner (contract 3), so sending it again after a reply that never came is
// always safe; the resend stops at the first answer, or when the engine closes (the backend's close
// then gives back whatever is still out). A try waits 50 ms after an unanswered one, doubling to
// 2 s, or less: a store reachable again (hooks::reachable) is sent every waiting request at once.
// While it waits the engine holds it; its timer holds it only weakly, so closing the engine ends
// it.
#include "core/engine.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <optional>
#include <vector>

namespace corolock::core {

namespace {
/// The store did not answer: the release may or may not have run, and may run if sent again.
bool unanswered(error_code ec) {
  return ec == error::not_connected || ec == error::timeout || ec == error::connection_lost;
}
} // namespace

struct release_resend : std::enable_shared_from_this<release_resend> {
  std::weak_ptr<engine> eng;
  // What is sent: a release (the hot path of every unlock: kept out of a std::function, which
  // would allocate its capture once more per cycle), or any request a backend handed over.
  std::optional<core::held> lease;
  backend::send_once once;
  detail::stored_handler<handler<void(error_code, std::string)>> first;
  std::unique_ptr<timer> wait;
  std::chrono::milliseconds delay{50};

  /// The first try, on `e`'s backend; `h` (may be empty) gets its outcome.
  void start(engine& e, handler<void(error_code, std::string)> h) {
    eng = e.weak_from_this();
    if (h)
      first.set(std::move(h));
    send(e);
  }

  /// The first try, carrying `b`'s bid (engine::send_release_with_bid).
  std::unique_ptr<contender> start_with_bid(engine& e, handler<void(error_code, std::string)> h,
                                            bid b, std::string owner, contender_events& events) {
    eng = e.weak_from_this();
    if (h)
      first.set(std::move(h));
    return e.store().release_then_bid(
        *lease,
        [self = shared_from_this()](error_code ec, std::string words) {
          self->answered(ec, std::move(words));
        },
        std::move(b), std::move(owner), events);
  }

  /// One try; `e` is alive (its backend runs the release).
  void send(engine& e) {
    auto answer = [self = shared_from_this()](error_code ec, std::string words) {
      self->answered(ec, std::move(words));
    };
    if (lease)
      e.store().release(*lease, std::move(answer));
    else
      once(std::move(answer));
  }

  void answered(error_code ec, std::string words) {
    if (first) {
      auto h = first.take();
      std::move(h)(ec, words);
    }
    auto e = eng.lock();
    if (e && !e->closed()) // the observer's reachability (one test without an observer)
      unanswered(ec) ? e->store_silent(ec) : e->store_answered();
    if (!e || e->closed() || !unanswered(ec))
      return; // done: run, refused, or the engine's close has it
    if (!wait)
      wait = e->store().make_timer();
    e->resending_.insert(shared_from_this());
    wait->arm(e->store().now() + delay, [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        self->delay = std::min(self->delay * 2, std::chrono::milliseconds(2000));
        self->again();
      }
    });
  }

  /// The next try, now: it leaves the engine's set (the set holds it while it waits; the try's
  /// answer holds it while it runs).
  void again() {
    auto e = eng.lock();
    if (!e || e->closed())
      return;
    if (wait)
      wait->disarm();
    auto self = shared_from_this();
    e->resending_.erase(self);
    send(*e);
  }
};

void engine::send_until_answered(backend::send_once once,
                                 handler<void(error_code, std::string)> h) {
  auto r = std::make_shared<release_resend>();
  r->once = std::move(once);
  r->start(*this, std::move(h));
}

void engine::send_release(core::held lease, handler<void(error_code, std::string)> h) {
  auto r = std::make_shared<release_resend>();
  r->lease.emplace(std::move(lease));
  r->start(*this, std::move(h));
}

std::unique_ptr<contender> engine::send_release_with_bid(const core::held& lease,
                                                         handler<void(error_code, std::string)> h,
                                                         core::bid b, std::string owner,
                                                         contender_events& events) {
  auto r = std::make_shared<release_resend>();
  r->lease.emplace(lease);
  return r->start_with_bid(*this, std::move(h), std::move(b), std::move(owner), events);
}

void engine::send_give_back(core::bid b, std::string owner) {
  send_until_answered(
      [&s = *b_, b = std::move(b), owner = std::move(owner)](
          handler<void(error_code, std::string)> answer) { s.give_back(b, owner, std::move(answer)); },
      {});
}

void engine::resend_now() {
  std::vector<std::shared_ptr<release_resend>> waiting(resending_.begin(), resending_.end());
  for (const auto& r : waiting)
    r->again();
}

void engine::drop_resends() noexcept {
  for (const auto& r : resending_)
    if (r->wait)
      r->wait->disarm();
  resending_.clear();
}

} // namespace corolock::core
