// The quorum store's backend: see quorum_backend.hpp for what one try, a lease and a loss mean.
#include "composites/quorum/quorum_backend.hpp"

#include "core/asio_timer.hpp"
#include "core/engine.hpp"
#include "detail/random_id.hpp"

#include <corolock/diagnostics.hpp>
#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <deque>

namespace corolock::composites {

namespace {

std::string member_words(std::size_t i, std::size_t n) {
  return "quorum: member " + std::to_string(i + 1) + " of " + std::to_string(n);
}

/// A member's error that means "no answer" (contract 6: the bid ends unsure on it).
bool transport(error_code ec) {
  return ec == error::not_connected || ec == error::timeout || ec == error::connection_lost ||
         ec == error::session_expired || ec == error::closed ||
         ec == asio::error::operation_aborted;
}

/// The code an unsure bid carries for a member's transport error.
error_code unsure_code(error_code ec) {
  if (ec == asio::error::operation_aborted)
    return error::timeout; // cut at the per-member timeout
  if (ec == error::closed)
    return error::not_connected; // that member's client is closed: it cannot be reached
  return ec;
}

/// One bid: its tries, one at a time, until granted, taken, failed, unsure or withdrawn.
class quorum_try final : public std::enable_shared_from_this<quorum_try> {
public:
  quorum_try(std::shared_ptr<quorum_state> st, core::bid b, core::contender_events& ev)
      : st_(std::move(st)), bid_(std::move(b)), events_(&ev), n_(st_->members.size()),
        member_timer_(st_->make_timer()), retry_timer_(st_->make_timer()),
        answered_(n_, true) /* nothing in flight before the first try */, seen_(n_, 0),
        freed_(n_, 0) {
    for (std::size_t i = 0; i < n_; ++i) {
      cancels_.push_back(std::make_unique<asio::cancellation_signal>());
      diags_.push_back(std::make_unique<diagnostics>());
    }
  }

  void start() {
    if (bid_.wait) {
      ++st_->waiting[bid_.lock->name];
      counted_ = true;
      if (auto w = st_->watch_of(*bid_.lock, false)) // kept from an earlier bid
        take_up(std::move(w));
    }
    // Posted: contend() must not deliver an event inline (contract 1), nor start member
    // operations that might.
    asio::post(st_->ex, [self = shared_from_this()] { self->try_once(); });
  }

  /// No event follows; nothing of this bid stays on any member.
  void withdraw() {
    if (over_)
      return;
    finish();
    for (std::size_t i = 0; i < n_; ++i)
      if (!answered_[i])
        cancels_[i]->emit(asio::cancellation_type::all); // the member's core gives a late win back
    st_->give_back(bid_.lock, wins_);
  }

private:
  void try_once() {
    if (over_)
      return;
    ++round_;
    sleeping_ = false;
    // A try sent once the watches are in place is refused only while the lock is held, and the
    // release that ends that holding is heard.
    ordered_ = watch_ && watch_->ready();
    if (watch_)
      seen_ = watch_->heard;
    started_ = st_->now();
    pending_ = n_;
    wins_.clear();
    wins_.resize(n_);
    errors_.assign(n_, error_code{});
    answered_.assign(n_, false);
    const auto& lock = core::ticket_of<quorum_lock>(*bid_.lock);
    const auto bound = st_->options.member_timeout(bid_.lock->options.lease);
    member_timer_->arm(started_ + bound, [w = weak_from_this(), r = round_] {
      if (auto self = w.lock(); self && self->round_ == r && !self->over_)
        for (std::size_t i = 0; i < self->n_; ++i)
          if (!self->answered_[i])
            self->cancels_[i]->emit(asio::cancellation_type::all);
    });
    for (std::size_t i = 0; i < n_; ++i)
      lock.members[i].try_acquire(asio::bind_cancellation_slot(
          cancels_[i]->slot(),
          bind_diagnostics(*diags_[i],
                           asio::bind_executor(st_->ex, [self = shared_from_this(), i,
                                                         r = round_](error_code ec, guard g) {
                             self->member_done(r, i, ec, std::move(g));
                           }))));
  }

  void member_done(std::uint64_t round, std::size_t i, error_code ec, guard g) {
    if (over_ || round != round_) { // withdrawn meanwhile: a win goes back at once
      if (g.owns_lock()) {
        std::vector<guard> late;
        late.push_back(std::move(g));
        st_->give_back(bid_.lock, late);
      }
      return;
    }
    answered_[i] = true;
    errors_[i] = ec;
    if (!ec && g.owns_lock())
      wins_[i] = std::move(g);
    if (--pending_ == 0)
      decide();
  }

  void decide() {
    member_timer_->disarm();
    std::size_t won = 0, answered = 0;
    std::size_t first_error = n_;
    for (std::size_t i = 0; i < n_; ++i) {
      won += wins_[i].owns_lock();
      if (!errors_[i])
        ++answered;
      else if (first_error == n_)
        first_error = i;
    }
    const auto lease = bid_.lock->options.lease;
    const auto drift = st_->options.drift(lease);
    const auto elapsed = st_->now() - started_;
    if (won >= st_->quorum && lease - elapsed - drift > core::steady::duration::zero())
      return grant();
    for (std::size_t i = 0; i < n_; ++i)
      freed_[i] = wins_[i].owns_lock();
    st_->give_back(bid_.lock, wins_); // a minority, or a majority won too late: nothing is kept
    if (answered >= st_->quorum) { // the lock is busy (or split between bidders)
      if (!bid_.wait) {
        finish();
        return events_->taken();
      }
      sleep();
      return;
    }
    // Fewer than a quorum answered: what the members keep is known (nothing: every win is given
    // back), but the lock's state is not.
    const auto ec = errors_[first_error];
    std::string words = member_words(first_error, n_) + ": " +
                        (diags_[first_error]->empty() ? ec.message()
                                                      : diags_[first_error]->message()) +
                        " (" + std::to_string(answered) + " of " + std::to_string(n_) +
                        " members answered; the lock needs " + std::to_string(st_->quorum) + ")";
    if (ec == asio::error::operation_aborted)
      words = member_words(first_error, n_) + ": no answer within the per-member timeout of " +
              std::to_string(st_->options.member_timeout(lease).count()) + " ms (" +
              std::to_string(answered) + " of " + std::to_string(n_) +
              " members answered; the lock needs " + std::to_string(st_->quorum) + ")";
    finish();
    if (transport(ec))
      events_->unsure(unsure_code(ec), std::move(words));
    else
      events_->failed(ec, std::move(words));
  }

  /// Between two tries of a waiting bid: until the retry delay, or a wake-up (see
  /// quorum_backend.hpp, "Wake-up"). The first sleep starts the watches, if none are kept.
  void sleep() {
    const auto pause = st_->options.retry_delay;
    const auto jitter =
        std::uniform_int_distribution<std::int64_t>(0, pause.count() / 2)(st_->jitter);
    sleeping_ = true;
    retry_timer_->arm(st_->now() + pause + std::chrono::milliseconds(jitter),
                      [w = weak_from_this()] {
                        if (auto self = w.lock(); self && self->sleeping_)
                          self->try_once();
                      });
    if (!watch_)
      take_up(st_->watch_of(*bid_.lock, true));
    if (!watch_->ready())
      return; // on_ready wakes it
    if (!ordered_ || could_win())
      wake(); // the try went out before the watches, or news came while it was under way
  }

  void wake() {
    if (!sleeping_ || over_)
      return;
    retry_timer_->disarm();
    try_once();
  }

  /// This bid uses the lock's watches from now on.
  void take_up(std::shared_ptr<quorum_watch> w) {
    watch_ = std::move(w);
    watch_->linger->disarm();
    watch_->on_ready = [t = weak_from_this()] {
      if (auto self = t.lock())
        self->wake(); // what was released before the watches was not heard: look again
    };
    watch_->on_heard = [t = weak_from_this()](std::size_t) {
      if (auto self = t.lock(); self && self->sleeping_ && self->watch_->ready() &&
                                self->could_win())
        self->wake();
    };
  }

  /// Something was announced since the last try began, and the members that could be free make
  /// a quorum.
  bool could_win() const {
    std::size_t free = 0;
    bool news = false;
    if (!watch_)
      return false;
    for (std::size_t i = 0; i < n_; ++i) {
      const bool announced = watch_->heard[i] > seen_[i];
      news = news || announced;
      free += announced || freed_[i];
    }
    return news && free >= st_->quorum;
  }

  void grant() {
    auto l = std::make_shared<quorum_lease>();
    l->lock = bid_.lock;
    l->tokens.assign(n_, 0);
    for (std::size_t i = 0; i < n_; ++i)
      if (wins_[i].owns_lock())
        l->tokens[i] = wins_[i].fencing_token();
    l->members = std::move(wins_);
    watch(l);
    st_->leases.remove_if([](const std::weak_ptr<quorum_lease>& w) { return w.expired(); });
    st_->leases.push_back(l); // the live ones only: a long-lived source does not collect them
    core::grant g;
    g.token = 0; // no single token: quorum_source::member_tokens
    g.from = started_;
    g.valid_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        bid_.lock->options.lease - st_->options.drift(bid_.lock->options.lease));
    g.ticket = std::move(l);
    finish();
    events_->granted(std::move(g));
  }

  /// A member lost that leaves fewer than a quorum: the core checks its leases now (renew()
  /// answers "lost" for this one), so the holder is told at once, not at the next renewal.
  void watch(const std::shared_ptr<quorum_lease>& l) {
    for (auto& g : l->members)
      if (g.owns_lock())
        g.wait_lost(asio::bind_executor(
            st_->ex, [st = st_, w = std::weak_ptr<quorum_lease>(l)](error_code ec) {
              auto lease = w.lock();
              if (ec != error::lease_lost || !lease || st->closed)
                return;
              if (st->held(*lease) < st->quorum && st->hooks.reconnected)
                st->hooks.reconnected();
            }));
  }

  void finish() {
    over_ = true;
    sleeping_ = false;
    member_timer_->disarm();
    retry_timer_->disarm();
    if (auto w = std::exchange(watch_, nullptr))
      st_->leave_watch(w, *bid_.lock);
    if (counted_) {
      counted_ = false;
      auto it = st_->waiting.find(bid_.lock->name);
      if (it != st_->waiting.end() && --it->second == 0)
        st_->waiting.erase(it);
    }
  }

  std::shared_ptr<quorum_state> st_;
  core::bid bid_;
  core::contender_events* events_;
  std::size_t n_;
  std::unique_ptr<core::timer> member_timer_, retry_timer_;
  std::vector<std::unique_ptr<asio::cancellation_signal>> cancels_;
  std::vector<std::unique_ptr<diagnostics>> diags_;
  std::vector<guard> wins_;
  std::vector<error_code> errors_;
  std::vector<bool> answered_;
  std::size_t pending_ = 0;
  std::uint64_t round_ = 0;
  core::steady::time_point started_{};
  bool over_ = false;    // an event was delivered, or withdrawn
  bool counted_ = false; // in st_->waiting
  // Wake-up (quorum_backend.hpp): per member, the notices heard when the last try began, and
  // whether the last try won it (then gave it back).
  std::vector<std::uint64_t> seen_; // the watch's heard when the last try began
  std::vector<char> freed_;
  std::shared_ptr<quorum_watch> watch_; // the lock's, once taken up
  bool ordered_ = false;  // the last try went out after the watches were in place
  bool sleeping_ = false; // between two tries, the retry timer armed
};

class quorum_contender final : public core::contender {
public:
  explicit quorum_contender(std::shared_ptr<quorum_try> t) : try_(std::move(t)) {}
  ~quorum_contender() override = default;
  void withdraw() override { try_->withdraw(); }

private:
  std::shared_ptr<quorum_try> try_;
};

} // namespace

// ---- quorum_options ------------------------------------------------------------------------------

std::chrono::steady_clock::duration
quorum_options::drift(std::chrono::milliseconds lease) const noexcept {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double, std::milli>(lease.count() * clock_drift_factor)) +
         drift_floor;
}

std::chrono::milliseconds quorum_options::member_timeout(std::chrono::milliseconds lease) const noexcept {
  if (per_member_timeout.count() > 0)
    return per_member_timeout;
  return std::clamp(lease / 10, std::chrono::milliseconds(5), std::chrono::milliseconds(500));
}

error_code quorum_options::validate(std::string& words) const {
  if (!(clock_drift_factor >= 0 && clock_drift_factor < 0.5))
    words = "quorum_options::clock_drift_factor must be in [0, 0.5), got " +
            std::to_string(clock_drift_factor);
  else if (drift_floor.count() < 0)
    words = "quorum_options::drift_floor must be at least 0, got " +
            std::to_string(drift_floor.count()) + " ms";
  else if (retry_delay.count() <= 0)
    words = "quorum_options::retry_delay must be above 0, got " +
            std::to_string(retry_delay.count()) + " ms";
  else if (per_member_timeout.count() < 0)
    words = "quorum_options::per_member_timeout must be at least 0 (0: lease/10), got " +
            std::to_string(per_member_timeout.count()) + " ms";
  else
    return {};
  return error::invalid_argument;
}

// ---- quorum_state ---------------------------------------------------------------------------------

core::steady::time_point quorum_state::now() const {
  if (auto e = clock.lock())
    return e->store().now();
  return core::steady::now();
}

std::unique_ptr<core::timer> quorum_state::make_timer() const {
  if (auto e = clock.lock())
    return e->store().make_timer();
  return std::make_unique<core::asio_timer>(ex);
}

std::size_t quorum_state::held(const quorum_lease& l) const {
  return static_cast<std::size_t>(std::count_if(l.members.begin(), l.members.end(), [](const guard& g) {
    return g.owns_lock() && !g.lost();
  }));
}

void quorum_state::announce(std::size_t i, const core::lock_spec& lock) const {
  if (i < notices.size() && notices[i] && !cores[i].expired())
    notices[i]->announce_release(lock);
}

namespace {
std::string watch_key(const core::lock_spec& lock) { return lock.options.prefix + '\0' + lock.name; }
} // namespace

std::shared_ptr<quorum_watch> quorum_state::watch_of(const core::lock_spec& lock, bool make) {
  const auto key = watch_key(lock);
  if (auto it = watches.find(key); it != watches.end())
    return it->second;
  if (!make)
    return nullptr;
  auto w = std::make_shared<quorum_watch>();
  w->heard.assign(members.size(), 0);
  w->watches.resize(members.size());
  w->linger = make_timer();
  watches.emplace(key, w);
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!notices[i])
      continue;
    ++w->unready;
    core::release_notices::watch_events ev;
    ev.ready = [weak = std::weak_ptr<quorum_watch>(w)] {
      if (auto self = weak.lock(); self && --self->unready == 0 && self->on_ready)
        self->on_ready();
    };
    ev.released = [weak = std::weak_ptr<quorum_watch>(w), i] {
      if (auto self = weak.lock()) {
        ++self->heard[i];
        if (self->on_heard)
          self->on_heard(i);
      }
    };
    w->watches[i] = notices[i]->watch_releases(lock, std::move(ev));
  }
  return w;
}

void quorum_state::leave_watch(const std::shared_ptr<quorum_watch>& w, const core::lock_spec& lock) {
  w->on_ready = nullptr;
  w->on_heard = nullptr;
  if (closed)
    return; // close() dropped the kept watches: this one goes with its bid
  w->linger->arm(now() + watch_linger, [st = weak_from_this(), key = watch_key(lock),
                                        weak = std::weak_ptr<quorum_watch>(w)] {
    auto self = st.lock();
    auto gone = weak.lock();
    if (!self || !gone)
      return;
    if (auto it = self->watches.find(key); it != self->watches.end() && it->second == gone) {
      self->watches.erase(it); // nobody took it up within the linger
      // Destroyed after this callback returns: the linger timer is the watch's own.
      asio::post(self->ex, [last = std::move(gone)] {});
    }
  });
}

void quorum_state::give_back(const std::shared_ptr<const core::lock_spec>& lock,
                             std::vector<guard>& guards, std::function<void()> done) {
  auto left = std::make_shared<std::size_t>(1); // 1: this call, so `done` runs once, at the end
  auto finish = std::make_shared<std::function<void()>>(std::move(done));
  auto one = [left, finish] {
    if (--*left == 0 && *finish)
      (*finish)();
  };
  for (std::size_t i = 0; i < guards.size(); ++i) {
    if (!guards[i].owns_lock())
      continue;
    ++*left;
    guard mine = std::move(guards[i]);
    // The state outlives nothing here: a late answer may come after the source is gone, and
    // then nobody is left to announce to.
    mine.unlock(asio::bind_executor(
        ex, [one, i, lock, w = weak_from_this()](error_code ec) {
          if (auto self = w.lock(); self && lock && ec != error::closed)
            self->announce(i, *lock);
          one();
        }));
  }
  one();
}

// ---- quorum_backend -------------------------------------------------------------------------------

quorum_backend::quorum_backend(std::shared_ptr<quorum_state> st) : st_(std::move(st)) {
  traits_.store = "quorum";
  traits_.leases = core::lease_model::per_lock;
  traits_.fixed_lease = true; // where every member serves it (check() asks them)
  traits_.read_write = false;
  traits_.semaphore = false;
  traits_.fifo = false;
  traits_.rising_token = false; // each member draws its own: a guard's token is 0
}

quorum_backend::~quorum_backend() = default;

std::string quorum_backend::new_owner() { return detail::random_id(); }

std::vector<mutex> quorum_backend::members_of(const core::lock_spec& lock) const {
  std::vector<mutex> ms;
  ms.reserve(st_->members.size());
  for (auto* m : st_->members)
    ms.emplace_back(*m, lock.name, lock.options);
  return ms;
}

error_code quorum_backend::check(const core::lock_spec& lock, std::string& words) const {
  if (lock.kind != core::lock_kind::mutex) {
    words = std::string("quorum: a ") +
            (lock.kind == core::lock_kind::read_write ? "shared_mutex" : "semaphore") +
            " is not served: a quorum over lock sources serves a mutex only (a read-write lock "
            "or permits held on a majority of members would not exclude a writer or bound the "
            "holders)";
    return error::invalid_argument;
  }
  // Each member's own rules (its traits, its store options): asked by making its mutex now.
  for (std::size_t i = 0; i < st_->members.size(); ++i) {
    try {
      mutex probe{*st_->members[i], lock.name, lock.options};
    } catch (const boost::system::system_error& e) {
      words = member_words(i, st_->members.size()) + " refuses the lock: " + e.what();
      return error::invalid_argument;
    }
  }
  return {};
}

std::shared_ptr<const core::lock_ticket> quorum_backend::prepare(const core::lock_spec& lock) const {
  auto t = std::make_shared<quorum_lock>();
  t->members = members_of(lock);
  return t;
}

std::unique_ptr<core::contender> quorum_backend::contend(core::bid b, std::string owner,
                                                         core::contender_events& events) {
  static_cast<void>(owner); // each member's core names its own owners
  auto t = std::make_shared<quorum_try>(st_, std::move(b), events);
  if (st_->closed) {
    asio::post(st_->ex, [&events] { events.failed(error::closed, "quorum: the source is closed"); });
    return std::make_unique<quorum_contender>(std::move(t));
  }
  t->start();
  return std::make_unique<quorum_contender>(std::move(t));
}

void quorum_backend::release(const core::held& lease, handler<void(error_code, std::string)> h) {
  auto* l = core::ticket_of<quorum_lease>(lease);
  if (!l) {
    asio::post(st_->ex, asio::append(std::move(h), error_code{}, std::string()));
    return;
  }
  // Each member's release is its own core's to send again until its store ran it: a later call
  // (the core resending after a transport error below) finds nothing left and succeeds.
  struct tally {
    tally(handler<void(error_code, std::string)> done, std::size_t n)
        : errors(n), said(n), h(std::move(done)) {}
    std::size_t ok = 0, lost = 0;
    std::vector<error_code> errors;  // [i]: member i's other error (not lease_lost), if any
    std::deque<diagnostics> said;    // [i]: its words; a deque: bound by address, must not move
    handler<void(error_code, std::string)> h; // never assigned: Asio 1.81's erased handler
                                              // recurses when move-assigned
  };
  const std::size_t n = l->members.size(), q = st_->quorum;
  auto t = std::make_shared<tally>(std::move(h), n);
  auto left = std::make_shared<std::size_t>(1);
  auto done = [t, n, q, ex = st_->ex] {
    error_code ec;
    std::string words;
    // The first member in the given order that failed otherwise, not the first to answer.
    const auto other = std::find_if(t->errors.begin(), t->errors.end(),
                                    [](error_code e) { return !!e; });
    const std::size_t first_other = static_cast<std::size_t>(other - t->errors.begin());
    if (t->ok == 0 && t->lost == 0 && other == t->errors.end()) {
      // nothing was left to release (a resend after a transport error)
    } else if (t->ok >= q) {
    } else if (t->lost > n - q) {
      ec = error::lease_lost;
      words = "quorum: only " + std::to_string(t->ok) + " of " + std::to_string(n) +
              " members still listed the holder (the lock needs " + std::to_string(q) + ")";
    } else if (other != t->errors.end()) {
      ec = *other;
      const auto& said = t->said[first_other];
      words = member_words(first_other, n) + ": " + (said.empty() ? ec.message() : said.message()) +
              (transport(ec) ? " (its client sends the release again)" : "");
    }
    asio::post(ex, asio::append(std::move(t->h), ec, std::move(words)));
  };
  auto one = [left, done] {
    if (--*left == 0)
      done();
  };
  for (std::size_t i = 0; i < n; ++i) {
    auto& g = l->members[i];
    if (!g.owns_lock())
      continue;
    ++*left;
    guard mine = std::move(g);
    mine.unlock(bind_diagnostics(
        t->said[i], asio::bind_executor(st_->ex, [t, i, one, lock = l->lock,
                                                  w = std::weak_ptr<quorum_state>(st_)](error_code ec) {
          if (auto st = w.lock(); st && lock && ec != error::closed)
            st->announce(i, *lock);
          if (!ec)
            ++t->ok;
          else if (ec == error::lease_lost)
            ++t->lost;
          else
            t->errors[i] = ec;
          one();
        })));
  }
  one();
}

void quorum_backend::give_back(const core::bid& b, const std::string& owner,
                               handler<void(error_code, std::string)> h) {
  // A bid ends only after every win of its tries was given back (each member's core sends the
  // release again until its store ran it): nothing of `owner` is ours to give back.
  static_cast<void>(b);
  static_cast<void>(owner);
  asio::post(st_->ex, asio::append(std::move(h), error_code{}, std::string()));
}

void quorum_backend::renew(std::vector<core::renewal> leases,
                           handler<void(std::vector<core::renew_outcome>)> h) {
  // The members' cores renew the member leases; the quorum lease holds while a quorum of them is
  // held. No I/O: the answer is what the member guards say now.
  std::vector<core::renew_outcome> out;
  out.reserve(leases.size());
  const auto now = st_->now();
  for (const auto& r : leases) {
    const auto* l = core::ticket_of<quorum_lease>(r.lease);
    core::renew_outcome o;
    o.what = l && st_->held(*l) >= st_->quorum ? core::renew_outcome::result::renewed
                                                : core::renew_outcome::result::lost;
    // The member leases were renewed at or after the grant; counted from now less the drift,
    // the quorum lease never outruns the majority it stands on by more than one renewal period
    // (and a member lost tells the core at once: watch()).
    o.sent_at = now - st_->options.drift(r.lease.lock->options.lease);
    out.push_back(o);
  }
  asio::post(st_->ex, asio::append(std::move(h), std::move(out)));
}

void quorum_backend::close(handler<void()> h) {
  st_->closed = true;
  st_->watches.clear(); // no more waiting bids: their watches (and linger timers) go
  closing_ = std::make_shared<handler<void()>>(std::move(h));
  auto left = std::make_shared<std::size_t>(1); // 1: this loop, so the handler runs once, at the end
  auto one = [left, c = closing_, ex = st_->ex] {
    if (--*left == 0 && *c) {
      asio::post(ex, std::move(*c));
      *c = nullptr;
    }
  };
  auto leases = std::move(st_->leases);
  st_->leases.clear();
  for (auto& w : leases)
    if (auto l = w.lock()) {
      ++*left;
      st_->give_back(l->lock, l->members, one);
    }
  one();
}

void quorum_backend::give_up() {
  // The members' releases under way are their own clients' (each bounded by its own close);
  // nothing of this backend waits on them any more.
  if (closing_ && *closing_) {
    asio::post(st_->ex, std::move(*closing_));
    *closing_ = nullptr;
  }
}

} // namespace corolock::composites
