// A release, or a give-back of an owner whose bid ended unsure, sent until the store has run it
// (engine_impl::send_release, send_give_back): the one give-back queue of every store. Both are
// idempotent per owner (contract 3), so sending one again after a reply that never came is always
// safe; the resend stops at the first answer, or when the engine closes (the backend's close then
// gives back whatever is still out). While it waits for its next try the engine holds it; its
// timer holds it only weakly, so closing the engine ends it.
#include "core/engine_impl.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <optional>

namespace corolock::core {

namespace {
/// The store did not answer: the release may or may not have run, and may run if sent again.
bool unanswered(error_code ec) {
  return ec == error::not_connected || ec == error::timeout || ec == error::connection_lost;
}
} // namespace

struct release_resend : std::enable_shared_from_this<release_resend> {
  std::weak_ptr<engine_impl> eng;
  core::held lease;               // a release
  std::optional<core::bid> given; // or a give-back of lease.owner's bid
  detail::stored_handler<handler<void(error_code, std::string)>> first;
  std::unique_ptr<timer> wait;
  std::chrono::milliseconds delay{50};

  void send(engine_impl& e) {
    auto answer = [self = shared_from_this()](error_code ec, std::string words) {
      self->answered(ec, std::move(words));
    };
    if (given)
      e.store().give_back(*given, lease.owner, std::move(answer));
    else
      e.store().release(lease, std::move(answer));
  }

  void answered(error_code ec, std::string words) {
    if (first) {
      auto h = first.take();
      std::move(h)(ec, words);
    }
    auto e = eng.lock();
    if (!e || e->closed() || !unanswered(ec))
      return; // done: run, refused, or the engine's close has it
    if (!wait)
      wait = e->store().make_timer();
    e->resending_.insert(shared_from_this());
    wait->arm(e->store().now() + delay, [weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self)
        return;
      auto e = self->eng.lock();
      if (!e || e->closed())
        return;
      // Leave the engine's set after this call returns: the timer is ours.
      asio::post(e->store().get_executor(), [e, self] { e->resending_.erase(self); });
      self->delay = std::min(self->delay * 2, std::chrono::milliseconds(2000));
      self->send(*e);
    });
  }
};

void engine_impl::send_release(core::held lease, handler<void(error_code, std::string)> h) {
  auto r = std::make_shared<release_resend>();
  r->eng = weak_from_this();
  r->lease = std::move(lease);
  if (h)
    r->first.set(std::move(h));
  r->send(*this);
}

void engine_impl::send_give_back(core::bid b, std::string owner) {
  auto r = std::make_shared<release_resend>();
  r->eng = weak_from_this();
  r->lease.owner = std::move(owner);
  r->given.emplace(std::move(b));
  r->send(*this);
}

void engine_impl::drop_resends() noexcept {
  for (const auto& r : resending_)
    if (r->wait)
      r->wait->disarm();
  resending_.clear();
}

} // namespace corolock::core
