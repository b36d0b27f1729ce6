#include "backends/testing/backend.hpp"

#include <corolock/error.hpp>
#include <corolock/lock/semaphore.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace corolock::testing::detail {

namespace {
/// A lock as this backend prepares it, once per handle: its key in the store.
struct testing_lock final : core::lock_ticket {
  explicit testing_lock(lock_key k) : key(std::move(k)) {}
  const lock_key key;
};

/// A lease as this backend grants it: whose and which grant. Nothing here needs it to find the
/// lease (the store is keyed by lock and owner), so it checks the core instead: a release or
/// renewal must carry back the ticket of the grant it names (backend.hpp, contract 8).
struct testing_lease final : core::lease_ticket {
  testing_lease(std::string o, std::uint64_t t) : owner(std::move(o)), token(t) {}
  const std::string owner;
  const std::uint64_t token;
};

const lock_key& key_of(const core::lock_spec& s) { return core::ticket_of<testing_lock>(s).key; }

/// Whether `lease` carries its grant's ticket.
bool carries_its_ticket(const core::held& lease) {
  const auto* t = core::ticket_of<testing_lease>(lease);
  return t != nullptr && t->owner == lease.owner && t->token == lease.token;
}

const char* unreachable_words = "the testing store is unreachable";
const char* ticket_words = "the lease does not carry its grant's ticket (core::held::ticket)";
} // namespace

struct backend::bid_state {
  core::bid b;
  std::string owner;
  lock_key key;
  core::contender_events* events = nullptr;
  bool done = false;    // its event was delivered, or it was withdrawn: nothing more reaches the core
  bool decided = false; // its event is on its way: it is not sent again
  bool queued = false; // the store queued it: a grant message (or a look after a reconnect) follows
  bool resend = false; // a grant message lost on the way: looked for again once the link is back
};

class backend::contender_impl final : public core::contender {
public:
  contender_impl(std::weak_ptr<backend*> self, std::shared_ptr<bid_state> b)
      : self_(std::move(self)), b_(std::move(b)) {}
  ~contender_impl() override { withdraw(); }
  void withdraw() override {
    if (b_->done)
      return;
    if (auto s = self_.lock())
      (*s)->withdraw(b_);
    b_->done = true;
  }

private:
  std::weak_ptr<backend*> self_;
  std::shared_ptr<bid_state> b_;
};

// A timer on the store's clock: the store's timer queue runs it (manual clock: as the test moves
// time), and it fires on the client's executor.
class backend::timer_impl final : public core::timer {
public:
  timer_impl(std::shared_ptr<state> st, asio::any_io_executor ex)
      : st_(std::move(st)), ex_(std::move(ex)) {}
  ~timer_impl() override { disarm(); }
  void arm(steady::time_point at, std::function<void()> fire) override {
    disarm();
    auto off = std::make_shared<bool>(false);
    off_ = off;
    auto post = [ex = ex_, off, fire = std::move(fire)] {
      asio::post(ex, [off, fire] {
        if (!*off) {
          *off = true;
          fire();
        }
      });
    };
    if (at <= st_->now())
      post();
    else
      entry_ = st_->at(at, std::move(post));
  }
  void disarm() override {
    if (off_)
      *off_ = true;
    if (entry_) {
      *entry_ = true;
      st_->prune(); // a closed client leaves the io_context no timer of its own to wait for
    }
    off_.reset();
    entry_.reset();
  }

private:
  std::shared_ptr<state> st_;
  asio::any_io_executor ex_;
  std::shared_ptr<bool> off_;
  std::shared_ptr<bool> entry_;
};

backend::backend(asio::any_io_executor ex, std::shared_ptr<state> st)
    : ex_(std::move(ex)), st_(std::move(st)), self_(std::make_shared<backend*>(this)) {
  traits_.store = "testing";
  traits_.leases = st_->options.leases == lease_mode::session ? core::lease_model::session
                                                               : core::lease_model::per_lock;
  traits_.fixed_lease = traits_.leases == core::lease_model::per_lock;
  traits_.read_write = true;
  traits_.semaphore = true;
  traits_.fifo = true;
  traits_.run_time_permits = true;
  traits_.marks = true;
  traits_.holder_token = true;
  traits_.notes = true;
  traits_.token_bucket = true;
  client_ = st_->connect(*this);
  id_ = "client-" + std::to_string(client_);
  was_reachable_ = reachable();
  if (traits_.leases == core::lease_model::session) {
    session_ = st_->open_session(client_);
    alive_until_ = st_->now() + st_->options.session_timeout;
    ping_timer_ = make_timer();
    ping();
  }
}

backend::~backend() {
  self_.reset();
  for (auto& [owner, b] : open_)
    b->done = true;
  st_->disconnect(client_);
}

std::unique_ptr<core::timer> backend::make_timer() {
  return std::make_unique<timer_impl>(st_, ex_);
}

std::string backend::new_owner() { return id_ + ":" + std::to_string(++owners_); }

std::shared_ptr<const core::lock_ticket> backend::prepare(const core::lock_spec& lock) const {
  ++prepared_;
  return ticket_for(lock);
}

std::shared_ptr<const core::lock_ticket> backend::ticket_for(const core::lock_spec& lock) {
  return std::make_shared<const testing_lock>(
      lock_key{lock.options.prefix, lock.name, static_cast<int>(lock.kind)});
}

error_code backend::check(const core::lock_spec& lock, std::string& words) const {
  if (!lock.options.watchdog && !traits_.fixed_lease) {
    words = "the testing store in session mode has no fixed lease (lock_options::watchdog = false)";
    return error::invalid_argument;
  }
  return {};
}

// --- requests ---------------------------------------------------------------------------------

void backend::run_at(steady::time_point t, std::function<void()> fn) {
  auto guarded = [ex = ex_, w = std::weak_ptr<backend*>(self_), fn = std::move(fn)] {
    asio::post(ex, [w, fn] {
      if (w.lock())
        fn();
    });
  };
  if (t <= st_->now())
    guarded();
  else
    st_->at(t, std::move(guarded));
}

void backend::send(const std::function<std::function<void()>()>& apply, fail_fn fail) {
  if (closed_ || !reachable()) {
    auto ec = closed_ ? error_code(error::closed) : error_code(error::not_connected);
    run_at(st_->now(), [fail = std::move(fail), ec] { fail(ec); });
    return;
  }
  auto reply = apply();
  ++st_->requests;
  auto op = ++ops_;
  inflight_.emplace(op, std::move(fail));
  auto sent = st_->now();
  if (lost_replies_ > 0) {
    --lost_replies_;
    time_out(op, sent);
    return;
  }
  run_at(sent + st_->options.latency, [this, op, sent, reply = std::move(reply)] {
    if (!inflight_.contains(op))
      return; // failed already (a dropped connection)
    if (!reachable()) {
      time_out(op, sent); // lost on the way
      return;
    }
    inflight_.erase(op);
    reply();
  });
}

void backend::time_out(std::uint64_t op, steady::time_point from) {
  run_at(from + st_->options.request_timeout, [this, op] {
    auto it = inflight_.find(op);
    if (it == inflight_.end())
      return;
    auto fail = std::move(it->second);
    inflight_.erase(it);
    fail(error::timeout);
  });
}

void backend::remove_at_store(const lock_key& k, const std::string& owner) {
  if (reachable()) {
    st_->remove(k, owner);
    return;
  }
  // Unreachable: the core's resend queue tries again, at the latest when the link is back.
  auto once = [self = std::weak_ptr<backend*>(self_), ex = ex_, k,
               owner](core::handler<void(error_code, std::string)> h) {
    if (auto s = self.lock())
      (*s)->remove_once(k, owner, std::move(h));
    else
      asio::post(ex, asio::append(std::move(h), error_code(error::closed), std::string()));
  };
  core::resend(hooks_, std::move(once));
}

namespace {
std::string words_of(bool released, const core::lock_spec& lock) {
  return released ? std::string()
                  : "the testing store no longer lists the owner of lock '" + lock.name + "'";
}
std::string transport_words(error_code ec) {
  return ec == error::closed ? "the testing client is closed" : "no reply from the testing store";
}
} // namespace

// --- bids -------------------------------------------------------------------------------------

std::shared_ptr<backend::bid_state> backend::new_bid(core::bid b, std::string owner,
                                                     core::contender_events& events) {
  auto s = std::make_shared<bid_state>();
  s->key = key_of(*b.lock);
  s->b = std::move(b);
  s->owner = std::move(owner);
  s->events = &events;
  open_[s->owner] = s;
  return s;
}

std::unique_ptr<core::contender> backend::contend(core::bid b, std::string owner,
                                                  core::contender_events& events) {
  auto s = new_bid(std::move(b), std::move(owner), events);
  submit(s);
  return std::make_unique<contender_impl>(self_, s);
}

state::bid_outcome backend::place(const std::shared_ptr<bid_state>& b) {
  entry e;
  e.owner = b->owner;
  e.client = client_;
  e.session = session_;
  e.permits = b->b.permits;
  e.shared = b->b.shared;
  e.lease = b->b.lock->options.lease;
  return st_->bid(b->key, b->b.lock->capacity, std::move(e), b->b.wait);
}

void backend::submit(const std::shared_ptr<bid_state>& b) {
  if (b->done || b->decided)
    return;
  b->resend = false;
  if (closed_)
    return finish_failed(b, error::closed, "the testing client is closed");
  if (!reachable())
    return finish_unsure(b, error::not_connected, unreachable_words); // the core bids again
  if (st_->refusals > 0) {
    --st_->refusals;
    return finish_failed(b, st_->refusal_ec, st_->refusal_words);
  }
  send(
      [this, b] {
        auto o = place(b);
        return std::function<void()>([this, b, o] { on_bid_reply(b, o); });
      },
      [this, b](error_code ec) { on_bid_error(b, ec); });
}

void backend::on_bid_reply(const std::shared_ptr<bid_state>& b, state::bid_outcome o) {
  if (b->done || b->decided)
    return;
  switch (o.result) {
  case state::bid_result::granted: {
    auto g = make_grant(b->owner, o.token, o.from, b->b.lock->options.lease);
    return finish(b, [g](core::contender_events& ev) { ev.granted(g); });
  }
  case state::bid_result::taken:
    return finish(b, [](core::contender_events& ev) { ev.taken(); });
  case state::bid_result::too_many:
    return finish_failed(b, error::invalid_argument,
                         "the bid asks for more permits than lock '" + b->b.lock->name + "' has");
  case state::bid_result::queued:
    b->queued = true;
    return;
  }
}

void backend::on_bid_error(const std::shared_ptr<bid_state>& b, error_code ec) {
  if (b->done || b->decided)
    return;
  // The bid may have landed: the core bids again in the same owner or gives it back.
  finish_unsure(b, ec,
                ec == error::timeout ? "no reply from the testing store in time"
                : ec == error::connection_lost ? "the connection to the testing store dropped"
                                               : unreachable_words);
}

void backend::withdraw(const std::shared_ptr<bid_state>& b) {
  if (b->done)
    return;
  b->done = true;
  open_.erase(b->owner);
  if (!closed_)
    remove_at_store(b->key, b->owner); // also gives back a grant that raced the withdrawal
}

core::grant backend::make_grant(const std::string& owner, std::uint64_t token,
                                steady::time_point from, std::chrono::milliseconds lease) const {
  core::grant g;
  g.token = token;
  g.from = from;
  g.ticket = std::make_shared<testing_lease>(owner, token);
  ++tickets_;
  if (traits_.leases == core::lease_model::session) {
    g.session = session_;
    g.valid_for = std::max(std::chrono::milliseconds(0),
                           std::chrono::duration_cast<std::chrono::milliseconds>(alive_until_ - from));
  } else {
    g.valid_for = lease;
  }
  return g;
}

void backend::finish(const std::shared_ptr<bid_state>& b,
                     std::function<void(core::contender_events&)> ev) {
  // Decided now, delivered posted: a withdrawal in between still wins (and gives a grant back).
  b->decided = true;
  run_at(st_->now(), [this, b, ev = std::move(ev)] {
    if (b->done)
      return;
    b->done = true;
    open_.erase(b->owner);
    ev(*b->events);
  });
}

void backend::finish_failed(const std::shared_ptr<bid_state>& b, error_code ec,
                            std::string words) {
  finish(b, [ec, words = std::move(words)](core::contender_events& ev) { ev.failed(ec, words); });
}

void backend::finish_unsure(const std::shared_ptr<bid_state>& b, error_code ec,
                            std::string words) {
  finish(b, [ec, words = std::move(words)](core::contender_events& ev) { ev.unsure(ec, words); });
}

void backend::give_back(const core::bid& b, const std::string& owner,
                        core::handler<void(error_code, std::string)> h) {
  remove_once(key_of(*b.lock), owner, std::move(h));
}

void backend::remove_once(const lock_key& k, const std::string& owner,
                          core::handler<void(error_code, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(h));
  const auto answer = [this, hp](error_code ec, std::string words) {
    run_at(st_->now(), [hp, ec, words = std::move(words)] { std::move(*hp)(ec, words); });
  };
  if (closed_)
    return answer(error::closed, "the testing client is closed");
  if (!reachable())
    return answer(error::not_connected, unreachable_words);
  st_->remove(k, owner);
  answer({}, {});
}

void backend::grant_message(const lock_key& k, const std::string& owner, std::uint64_t token,
                            steady::time_point from, std::chrono::milliseconds lease) {
  // Called from inside the store's own bookkeeping: everything here is posted.
  if (!reachable())
    return; // the message is lost; the bid is sent again when the link is back
  auto delay = st_->options.latency;
  if (st_->delayed_grants > 0) {
    --st_->delayed_grants;
    delay += st_->grant_delay;
  }
  run_at(st_->now() + delay, [this, k, owner, token, from, lease] {
    auto it = open_.find(owner);
    if (it == open_.end()) {
      if (!closed_)
        remove_at_store(k, owner); // nobody wants it any more: give it back
      return;
    }
    if (!reachable()) {
      it->second->resend = true; // lost on the way
      return;
    }
    auto b = it->second;
    if (b->decided)
      return; // answered already (the same grant by a reply)
    auto g = make_grant(owner, token, from, lease);
    finish(b, [g](core::contender_events& ev) { ev.granted(g); });
  });
}

// --- release, renew, close --------------------------------------------------------------------

void backend::release(const core::held& lease, core::handler<void(error_code, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, std::move(words)));
  };
  if (!carries_its_ticket(lease)) {
    ++ticket_errors_;
    run_at(st_->now(), [done] { done(error::invalid_argument, ticket_words); });
    return;
  }
  send(
      [this, spec = lease.lock, owner = lease.owner, done] {
        const bool ours = st_->release(key_of(*spec), owner);
        return std::function<void()>([ours, done, spec] { done(released(ours), words_of(ours, *spec)); });
      },
      [done](error_code ec) { done(ec, transport_words(ec)); });
}

error_code backend::released(bool ours) noexcept {
  return ours ? error_code() : error_code(error::lease_lost);
}

bool backend::rides_release(const core::lock_spec& lock) const {
  return lock.kind == core::lock_kind::mutex;
}

std::unique_ptr<core::contender>
backend::release_then_bid(const core::held& lease, core::handler<void(error_code, std::string)> h,
                          core::bid b, std::string owner, core::contender_events& events) {
  // What a request cannot carry (a ticket error, a closed client, the store unreachable, a
  // scripted refusal of the bid) goes the two-request way, which says it as each part would.
  if (!carries_its_ticket(lease) || closed_ || !reachable() || st_->refusals > 0) {
    release(lease, std::move(h));
    return contend(std::move(b), std::move(owner), events);
  }
  auto hp = std::make_shared<core::handler<void(error_code, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, std::move(words)));
  };
  auto s = new_bid(std::move(b), std::move(owner), events);
  send(
      [this, s, spec = lease.lock, holder = lease.owner, done] {
        const bool ours = st_->release(key_of(*spec), holder);
        auto o = place(s); // right after the release, in the same step
        return std::function<void()>([this, s, o, ours, done, spec] {
          done(released(ours), words_of(ours, *spec));
          on_bid_reply(s, o);
        });
      },
      [this, s, done](error_code ec) {
        done(ec, transport_words(ec));
        on_bid_error(s, ec); // unsure: the store may hold the bid queued or granted
      });
  return std::make_unique<contender_impl>(self_, s);
}

void backend::permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
                      core::handler<void(error_code, semaphore_status, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, semaphore_status, std::string)>>(
      std::move(h));
  auto done = [hp](error_code ec, semaphore_status st, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, st, std::move(words)));
  };
  send(
      [this, k = key_of(lock), fallback = lock.capacity, count, done] {
        if (count)
          st_->set_count(k, *count);
        const auto u = st_->usage_of(k);
        semaphore_status st{st_->count(k, fallback), u.used, u.waiting};
        return std::function<void()>([st, done] { done({}, st, {}); });
      },
      [done](error_code ec) {
        done(ec, {}, transport_words(ec));
      });
}

void backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                    core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  using set = std::vector<std::uint32_t>;
  auto hp = std::make_shared<core::handler<void(error_code, set, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, set s, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, std::move(s), std::move(words)));
  };
  send(
      [this, prefix = lock.options.prefix, name = lock.name, what, index, done] {
        set out;
        switch (what) {
        case core::marks_call::add: st_->add_mark(prefix, name, index); break;
        case core::marks_call::read: out = st_->marks(prefix, name); break;
        case core::marks_call::clear: st_->clear_marks(prefix, name); break;
        }
        return std::function<void()>([out = std::move(out), done] { done({}, out, {}); });
      },
      [done](error_code ec) {
        done(ec, {}, transport_words(ec));
      });
}

void backend::note(const core::lock_spec& lock, std::optional<core::lock_note> write,
                   core::handler<void(error_code, core::lock_note, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, core::lock_note, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, core::lock_note n, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, std::move(n), std::move(words)));
  };
  send(
      [this, prefix = lock.options.prefix, name = lock.name, write = std::move(write), done] {
        auto n = st_->note(prefix, name, write);
        return std::function<void()>([n = std::move(n), done] { done({}, n, {}); });
      },
      [done](error_code ec) { done(ec, {}, transport_words(ec)); });
}

void backend::holder_token(const core::lock_spec& lock,
                           core::handler<void(error_code, std::uint64_t, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, std::uint64_t, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, std::uint64_t token, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, token, std::move(words)));
  };
  send(
      [this, k = key_of(lock), done] {
        const auto token = st_->holder_token(k);
        return std::function<void()>([token, done] { done({}, token, {}); });
      },
      [done](error_code ec) { done(ec, 0, transport_words(ec)); });
}

void backend::take_tokens(const core::lock_spec& lock, core::bucket_take what,
                          core::handler<void(error_code, core::bucket_answer, std::string)> h) {
  auto hp = std::make_shared<core::handler<void(error_code, core::bucket_answer, std::string)>>(std::move(h));
  auto done = [hp](error_code ec, core::bucket_answer a, std::string words) {
    asio::dispatch(asio::append(std::move(*hp), ec, a, std::move(words)));
  };
  send(
      [this, prefix = lock.options.prefix, name = lock.name, what, done] {
        const auto a = st_->take_tokens(prefix, name, what);
        return std::function<void()>([a, done] { done({}, a, {}); });
      },
      [done](error_code ec) { done(ec, {}, transport_words(ec)); });
}

void backend::renew(std::vector<core::renewal> leases,
                    core::handler<void(std::vector<core::renew_outcome>)> h) {
  auto hp = std::make_shared<core::handler<void(std::vector<core::renew_outcome>)>>(std::move(h));
  auto done = [hp](std::vector<core::renew_outcome> out) {
    asio::dispatch(asio::append(std::move(*hp), std::move(out)));
  };
  auto n = leases.size();
  auto sent = st_->now();
  send(
      [this, leases = std::move(leases), sent, done] {
        std::vector<core::renew_outcome> out;
        for (const auto& r : leases) {
          // A lease without its grant's ticket is not renewed: the core's fault, seen as a loss.
          bool ours = carries_its_ticket(r.lease) &&
                      st_->renew(key_of(*r.lease.lock), r.lease.owner, r.lease.lock->options.lease,
                                 r.check_only);
          if (!carries_its_ticket(r.lease))
            ++ticket_errors_;
          out.push_back({ours ? core::renew_outcome::result::renewed
                              : core::renew_outcome::result::lost,
                         sent});
        }
        return std::function<void()>([out, done] { done(out); });
      },
      [n, done](error_code) { done(std::vector<core::renew_outcome>(n)); }); // all unknown
}

void backend::give_back_all() {
  st_->drop_all(client_);
  if (session_ != 0)
    st_->end_session(session_, false);
}

void backend::close(core::handler<void()> h) {
  auto hp = std::make_shared<core::handler<void()>>(std::move(h));
  if (closed_) {
    run_at(st_->now(), [hp] { asio::dispatch(std::move(*hp)); });
    return;
  }
  closed_ = true;
  end_note_watches(error::closed);
  for (auto& [owner, b] : open_)
    b->done = true; // the core has failed its callers already
  open_.clear();
  if (ping_timer_)
    ping_timer_->disarm();
  auto inflight = std::move(inflight_);
  inflight_.clear();
  for (auto& [op, fail] : inflight)
    run_at(st_->now(), [fail = std::move(fail)] { fail(error::closed); });
  if (reachable()) {
    give_back_all();
    run_at(st_->now(), [hp] { asio::dispatch(std::move(*hp)); });
    return;
  }
  // Unreachable: give back once the link is back, or leave it to the store's expiry when the
  // core's bound passes (give_up).
  closing_ = hp;
}

void backend::give_up() {
  if (auto c = std::exchange(closing_, nullptr))
    run_at(st_->now(), [c] { asio::dispatch(std::move(*c)); });
}

// --- the link ---------------------------------------------------------------------------------

void backend::set_reachable(bool r) {
  link_up_ = r;
  link_changed();
}

void backend::link_changed() {
  bool r = reachable();
  if (r == was_reachable_)
    return;
  was_reachable_ = r;
  if (r)
    link_up();
  else
    link_down();
}

void backend::link_down() {
  // Replies under way are lost (send() sees it); open bids end unsure after the transport bound if
  // the store is still away then (the core bids again for callers with a deadline).
  if (closed_)
    return;
  if (!down_timer_)
    down_timer_ = make_timer();
  down_timer_->arm(st_->now() + st_->options.request_timeout, [this] {
    if (reachable())
      return;
    std::vector<std::shared_ptr<bid_state>> open;
    for (auto& [owner, b] : open_)
      open.push_back(b);
    for (auto& b : open)
      finish_unsure(b, error::not_connected, unreachable_words); // the core decides
  });
}

void backend::link_up() {
  if (down_timer_)
    down_timer_->disarm();
  if (closed_) {
    if (auto c = std::exchange(closing_, nullptr)) {
      give_back_all();
      run_at(st_->now(), [c] { asio::dispatch(std::move(*c)); });
    }
    return;
  }
  if (traits_.leases == core::lease_model::session && !st_->ping(session_)) {
    new_session(session_, error::session_expired); // it expired while we were away
    return;
  }
  if (traits_.leases == core::lease_model::per_lock && hooks_.reconnected)
    run_at(st_->now(), [this] { hooks_.reconnected(); });
  if (hooks_.reachable)
    run_at(st_->now(), [this] { hooks_.reachable(); });
  // Note writes may have been missed meanwhile: every watched note is read again.
  if (!note_watchers_.empty())
    run_at(st_->now(), [this] { read_notes([](const note_watcher&) { return true; }); });
  // Release notices may have been lost meanwhile: every watcher hears of a possible one.
  if (!watchers_.empty())
    run_at(st_->now(), [this] { notify_watchers([](const release_watcher&) { return true; }); });
  // Grant messages may have been lost meanwhile: look again, same owners.
  std::vector<std::shared_ptr<bid_state>> again;
  for (auto& [owner, b] : open_)
    if (b->resend || b->queued)
      again.push_back(b);
  for (auto& b : again)
    submit(b);
}

void backend::drop_connection() {
  auto inflight = std::move(inflight_);
  inflight_.clear();
  for (auto& [op, fail] : inflight)
    run_at(st_->now(), [fail = std::move(fail)] { fail(error::connection_lost); });
  // Open bids lose their connection too: they end unsure (the core asks again in the same name).
  std::vector<std::shared_ptr<bid_state>> open;
  for (auto& [owner, b] : open_)
    open.push_back(b);
  run_at(st_->now(), [this, open] {
    for (auto& b : open) {
      if (b->done || closed_)
        continue;
      finish_unsure(b, error::connection_lost, "the connection to the testing store dropped");
    }
    // Reconnected at once.
    if (reachable() && !closed_) {
      was_reachable_ = false;
      link_changed();
    }
  });
}

// --- sessions ---------------------------------------------------------------------------------

void backend::ping() {
  if (closed_)
    return;
  auto period = st_->options.session_timeout / 3;
  ping_timer_->arm(st_->now() + period, [this] { ping(); });
  if (!reachable())
    return;
  auto sent = st_->now();
  auto s = session_;
  send(
      [this, s, sent] {
        bool alive = st_->ping(s);
        return std::function<void()>([this, s, sent, alive] {
          if (s != session_)
            return;
          if (alive) {
            alive_until_ = std::max(alive_until_, sent + st_->options.session_timeout);
            if (hooks_.session_alive)
              hooks_.session_alive(s, alive_until_);
          } else {
            new_session(s, error::session_expired);
          }
        });
      },
      [](error_code) {}); // the local bound (alive_until_) decides
}

void backend::session_ended(std::uint64_t session) {
  if (!reachable())
    return; // learnt when the link is back
  run_at(st_->now(), [this, session] {
    if (session == session_ && !closed_)
      new_session(session, error::session_expired);
  });
}

void backend::expire_session() {
  if (session_ != 0)
    st_->end_session(session_, true);
}

void backend::new_session(std::uint64_t ended, error_code why) {
  if (ended != session_ || closed_)
    return;
  session_ = st_->open_session(client_);
  alive_until_ = st_->now() + st_->options.session_timeout;
  if (hooks_.session_lost)
    run_at(st_->now(), [this, ended, why] { hooks_.session_lost(ended, why); });
  // The store dropped the old session's bids: they end unsure (the core bids again, under the new
  // session, for callers with a deadline).
  std::vector<std::shared_ptr<bid_state>> open;
  for (auto& [owner, b] : open_)
    open.push_back(b);
  for (auto& b : open) {
    if (b->done)
      continue;
    b->queued = false;
    finish_unsure(b, why, "the session with the testing store ended");
  }
}

} // namespace corolock::testing::detail
