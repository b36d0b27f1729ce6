// The core over one backend: engine::create, the handles it makes, close. See engine.hpp and
// engine_impl.hpp for what it runs and its invariants.
#include "core/engine_impl.hpp"

#include "core/engine_lease.hpp"
#include "core/handle.hpp"
#include "core/permits_admin.hpp"
#include "core/printable_name.hpp"
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

namespace {

/// A caller's deadline (std::chrono::steady_clock, computed in the public headers) on the
/// backend's clock, converted once: the time left now, from the backend's now (saturating).
steady::time_point to_store_clock(steady::time_point deadline, steady::time_point store_now) {
  using rep = steady::rep;
  if (deadline == steady::time_point::max())
    return deadline;
  rep left = 0, at = 0;
  if (__builtin_sub_overflow(deadline.time_since_epoch().count(),
                             steady::now().time_since_epoch().count(), &left))
    return left < 0 ? steady::time_point::max() : steady::time_point::min();
  if (__builtin_add_overflow(store_now.time_since_epoch().count(), left, &at))
    return left > 0 ? steady::time_point::max() : steady::time_point::min();
  return steady::time_point(steady::duration(at));
}

class engine_handle final : public handle {
public:
  engine_handle(const std::shared_ptr<engine_impl>& e, std::shared_ptr<const lock_spec> s)
      : handle(e->store().get_executor(), std::move(s)), eng_(e) {}

  void acquire(std::int64_t permits, bool shared, steady::time_point deadline, bool try_only,
               diagnostics* diag, detail::handler<void(error_code, guard)> h) override {
    auto e = eng_.lock();
    if (!e || e->closed()) {
      detail::diagnostics_access::client(
          diag, waiting_line::words_for(e ? e->store().traits().store : "", spec->name,
                                        error::closed, false));
      detail::complete_later(ex, std::move(h), {}, error_code(error::closed), guard{});
      return;
    }
    if (permits < 1) {
      detail::diagnostics_access::client(diag, "an acquisition takes at least one permit");
      detail::complete_later(ex, std::move(h), {}, error_code(error::invalid_argument), guard{});
      return;
    }
    auto at = to_store_clock(deadline, e->store().now());
    e->line_of(spec, permits, shared)->arrive(at, try_only, diag, std::move(h));
  }

  void set_permits(std::int64_t permits, diagnostics* diag,
                   detail::handler<void(error_code, semaphore_status)> h) override {
    admin(permits, diag, std::move(h));
  }

  void status(diagnostics* diag,
              detail::handler<void(error_code, semaphore_status)> h) override {
    admin(std::nullopt, diag, std::move(h));
  }

  bool same_lock(const lease& l) const noexcept override {
    const auto* mine = dynamic_cast<const engine_lease*>(&l);
    return mine && !mine->eng.owner_before(eng_) && !eng_.owner_before(mine->eng) &&
           mine->spec->kind == spec->kind && mine->spec->name == spec->name;
  }

private:
  void admin(std::optional<std::int64_t> count, diagnostics* diag,
             detail::handler<void(error_code, semaphore_status)> h) {
    auto e = eng_.lock();
    if (e && !e->store().traits().run_time_permits) {
      // The base says so in words (invalid_argument: this store keeps no count).
      if (count)
        handle::set_permits(*count, diag, std::move(h));
      else
        handle::status(diag, std::move(h));
      return;
    }
    if (!e || e->closed()) {
      detail::complete_later(ex, std::move(h), {}, error_code(error::closed),
                             semaphore_status{});
      return;
    }
    permits_admin(e->store(), ex, *spec, count, diag, std::move(h));
  }

  std::weak_ptr<engine_impl> eng_;
};

} // namespace

std::shared_ptr<engine> engine::create(std::unique_ptr<backend> b) {
  auto e = std::make_shared<engine_impl>(std::move(b));
  e->start();
  return e;
}

engine_impl::engine_impl(std::unique_ptr<backend> b)
    : b_(std::move(b)), keeper_(std::make_shared<keeper>(*b_)) {}

engine_impl::~engine_impl() {
  if (closed_)
    return;
  closed_ = true;
  auto lines = std::exchange(lines_, {});
  for (auto& [_, l] : lines)
    l->close(error::closed);
  keeper_->close();
  drop_resends();
}

template <typename F>
void engine_impl::tell_parked(F f) {
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
void engine_impl::for_each_line(F f) {
  std::vector<std::shared_ptr<waiting_line>> lines;
  lines.reserve(lines_.size());
  for (auto& [_, l] : lines_)
    lines.push_back(l);
  for (auto& l : lines)
    f(*l);
}

void engine_impl::start() {
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

std::shared_ptr<handle> engine_impl::make_handle(lock_kind kind, std::string name,
                                                 lock_options options, std::int64_t capacity,
                                                 const char* what) {
  auto spec = std::make_shared<lock_spec>();
  spec->name = std::move(name);
  spec->kind = kind;
  spec->capacity = capacity;
  spec->options = std::move(options);
  check_handle(b_->traits(), *spec, what);
  std::string words;
  if (auto ec = b_->check(*spec, words))
    throw boost::system::system_error(ec, std::string(what) + " " + printable_name(spec->name) + ": " + words);
  spec->store_key = b_->store_key(*spec);
  spec->line_tag = b_->line_tag(*spec);
  return std::make_shared<engine_handle>(shared_from_this(), std::move(spec));
}

engine_impl::line_key engine_impl::key_of(const lock_spec& spec, std::int64_t permits, bool shared) {
  const auto& o = spec.options;
  return {spec.kind, o.prefix, spec.name, spec.capacity, permits, shared, o.lease.count(),
          o.watchdog, spec.line_tag};
}

std::shared_ptr<waiting_line> engine_impl::line_of(const std::shared_ptr<const lock_spec>& spec,
                                                   std::int64_t permits, bool shared) {
  auto& l = lines_[key_of(*spec, permits, shared)];
  if (!l)
    l = std::make_shared<waiting_line>(shared_from_this(), spec, permits, shared);
  return l;
}

void engine_impl::forget(const waiting_line& l) {
  auto it = lines_.find(key_of(*l.spec, l.permits, l.shared));
  if (it == lines_.end() || it->second.get() != &l)
    return;
  // Its two callers (waiting_line::run and a delivery) hold the line while they run: it goes when
  // they return, with no turn of the loop spent on it.
  lines_.erase(it);
}

std::size_t engine_impl::waiting() const noexcept {
  std::size_t n = 0;
  for (const auto& [_, l] : lines_)
    n += l->callers();
  return n;
}

void engine_impl::closing::finish(const asio::any_io_executor& ex) {
  if (bound)
    bound->disarm();
  if (h) {
    auto out = std::move(*h);
    h.reset();
    detail::complete_later(ex, std::move(out), {});
  }
}

void engine_impl::close(std::chrono::milliseconds bound, handler<void()> h) {
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
