// The core over one backend: engine::create, the handles it makes, close. See engine.hpp for what
// it runs and its invariants.
#include "core/engine.hpp"

#include "core/handle.hpp"
#include "core/keeper.hpp"
#include "core/lease.hpp"
#include "core/permits_admin.hpp"
#include "detail/printable_name.hpp"
#include "core/waiting_line.hpp"
#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <limits>
#include <vector>

namespace corolock::core {

std::shared_ptr<engine> engine::create(std::unique_ptr<backend> b) {
  auto e = std::make_shared<engine>(std::move(b));
  e->start();
  return e;
}

std::size_t engine::held() const noexcept { return keeper_->size(); }

engine::engine(std::unique_ptr<backend> b)
    : b_(std::move(b)), keeper_(std::make_shared<keeper>(*b_)) {}

engine::~engine() {
  if (closed_)
    return;
  closed_ = true;
  auto lines = std::exchange(lines_, {});
  for (auto& [_, l] : lines)
    l->close(error::closed);
  keeper_->close();
  drop_resends();
  tell_closers();
}

void engine::add_closer(const void* key, std::function<void()> at_close) {
  closers_[key] = std::move(at_close);
}

void engine::tell_closers() {
  auto closers = std::exchange(closers_, {});
  for (auto& [_, f] : closers)
    f();
}

template <typename F>
void engine::tell_parked(F f) {
  if (parked_.empty())
    return;
  const auto lines = std::exchange(parked_, {});
  for (const auto& l : lines) {
    f(*l);
    if (l->holds_back())
      parked_.insert(l);
  }
}

template <typename F>
void engine::for_each_line(F f) {
  std::vector<std::shared_ptr<waiting_line>> lines;
  lines.reserve(lines_.size());
  for (auto& [_, l] : lines_)
    lines.push_back(l);
  for (auto& l : lines)
    f(*l);
}

void engine::start() {
  backend::hooks h;
  std::weak_ptr<keeper> k = keeper_;
  h.session_alive = [k, w = weak_from_this()](std::uint64_t session, steady::time_point until) {
    if (auto p = k.lock())
      p->session_alive(session, until);
    if (auto e = w.lock())
      e->tell_parked([&](waiting_line& l) { l.session_alive(session, until); });
  };
  h.session_shortened = [k, w = weak_from_this()](std::uint64_t session, steady::time_point until) {
    if (auto p = k.lock())
      p->session_shortened(session, until);
    if (auto e = w.lock()) // alive, if only until `until`: a grant held back may go
      e->tell_parked([&](waiting_line& l) { l.session_alive(session, until); });
  };
  h.lease_gone = [k](const std::string& owner) {
    if (auto p = k.lock())
      p->lease_gone(owner);
  };
  h.session_lost = [k, w = weak_from_this()](std::uint64_t session, error_code) {
    if (auto p = k.lock())
      p->session_lost(session);
    if (auto e = w.lock())
      e->tell_parked([&](waiting_line& l) { l.session_lost(session); });
  };
  h.reconnected = [k] {
    if (auto p = k.lock())
      p->reconnected();
  };
  h.reachable = [w = weak_from_this()] {
    if (auto e = w.lock()) {
      e->store_answered();
      e->resend_now(); // what the store did not answer goes first: it came before the new bids
      e->for_each_line([](waiting_line& l) { l.reachable(); });
    }
  };
  h.resend = [w = weak_from_this()](backend::send_once once) {
    if (auto e = w.lock(); e && !e->closed())
      e->send_until_answered(std::move(once), {});
    else // closed (its close gives back what is out) or going: one try, its outcome dropped
      once([](error_code, std::string) {});
  };
  b_->set_hooks(std::move(h));
}

std::shared_ptr<handle> engine::make_handle(lock_kind kind, std::string name,
                                                 lock_options options, std::int64_t capacity,
                                                 const char* what) {
  lock_spec spec;
  spec.name = std::move(name);
  spec.kind = kind;
  spec.capacity = capacity;
  spec.options = std::move(options);
  check_handle(b_->traits(), spec, what);
  std::string words;
  if (auto ec = b_->check(spec, words))
    throw boost::system::system_error(ec, std::string(what) + " " + detail::printable_name(spec.name) + ": " + words);
  // The store's tag of the lock's line and its ticket (backend::prepare), once per handle.
  return std::make_shared<handle>(shared_from_this(), prepared(*b_, std::move(spec)));
}

engine::line_key engine::key_of(const lock_spec& spec, std::int64_t permits, bool shared) {
  const auto& o = spec.options;
  return {spec.kind, o.prefix, spec.name, spec.capacity, permits, shared, o.lease.count(),
          o.watchdog, spec.line_tag};
}

std::shared_ptr<waiting_line> engine::line_of(const std::shared_ptr<const lock_spec>& spec,
                                                   std::int64_t permits, bool shared) {
  auto& l = lines_[key_of(*spec, permits, shared)];
  if (!l)
    l = std::make_shared<waiting_line>(shared_from_this(), spec, permits, shared);
  return l;
}

std::shared_ptr<waiting_line> engine::line_if_any(const lock_spec& spec, std::int64_t permits,
                                                  bool shared) const {
  auto it = lines_.find(key_of(spec, permits, shared));
  return it == lines_.end() ? nullptr : it->second;
}

void engine::forget(const waiting_line& l) {
  auto it = lines_.find(key_of(*l.spec, l.permits, l.shared));
  if (it == lines_.end() || it->second.get() != &l)
    return;
  // Its two callers (waiting_line::run and a delivery) hold the line while they run: it goes when
  // they return, with no turn of the loop spent on it.
  lines_.erase(it);
}

std::size_t engine::waiting() const noexcept {
  std::size_t n = 0;
  for (const auto& [_, l] : lines_)
    n += l->callers();
  return n;
}

void engine::closing::finish(const asio::any_io_executor& ex) {
  if (bound)
    bound->disarm();
  if (h) {
    auto out = std::move(*h);
    h.reset();
    detail::complete_later(ex, std::move(out), {});
  }
}

void engine::close(std::chrono::milliseconds bound, handler<void()> h) {
  const auto ex = b_->get_executor();
  if (closed_) {
    // Idempotent: the backend closes once; a later close waits for nothing more.
    detail::complete_later(ex, std::move(h), {});
    return;
  }
  closed_ = true;
  for_each_line([](waiting_line& l) { l.close(error::closed); });
  keeper_->close(); // every lease lost, not given back one by one: the backend's close does it
  drop_resends();
  tell_closers();
  // The bound is the core's, on the backend's clock (virtual on the testing store): at it the
  // backend gives up what it still waits for, and the caller is answered then, not later.
  auto c = closing_ = std::make_shared<closing>();
  c->h.emplace(std::move(h));
  if (bound != std::chrono::milliseconds::max()) {
    c->bound = b_->make_timer();
    c->bound->arm(b_->now() + bound, [w = weak_from_this(), ex] {
      auto self = w.lock();
      if (!self || !self->closing_ || !self->closing_->h)
        return;
      self->b_->give_up();
      self->closing_->finish(ex);
    });
  }
  b_->close([c, ex] { c->finish(ex); });
}

} // namespace corolock::core
