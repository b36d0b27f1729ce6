#include "backends/redis/bid_run.hpp"

#include "backends/redis/grant_channel.hpp"
#include "backends/redis/script_requests.hpp"
#include "backends/redis/script_replies.hpp"
#include "core/asio_timer.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

namespace corolock::redis::detail {

using corolock::redis::request;
using corolock::redis::response;

namespace {

corolock::redis::detail::contender_machine::config config_of(const backend_state& s, const core::bid& b,
                                                      std::chrono::milliseconds waiter_ttl,
                                                      bool subscribed) {
  corolock::redis::detail::contender_machine::config cfg;
  cfg.wait = b.wait;
  cfg.subscribed = subscribed;
  if (auto c = s.client())
    cfg.pubsub_ordered = c->lock_pubsub_ordered();
  cfg.waiter_ttl = waiter_ttl;
  cfg.lease = b.lock->options.lease;
  cfg.replicas = tuning_of(*b.lock).min_replicas > 0;
  cfg.renew_on_confirm = b.lock->options.watchdog;
  return cfg;
}

} // namespace

bid_run::bid_run(std::shared_ptr<backend_state> s, core::bid b, std::string redis_owner,
                 core::contender_events& events)
    : s_(std::move(s)), bid_(std::move(b)), owner_(std::move(redis_owner)),
      names_(backend_state::names_of(bid_.lock)),
      waiter_ttl_(s_->timings().waiter_ttl), events_(&events),
      channel_(bid_.wait ? s_->channel_if_kept(names_->key) : nullptr),
      machine_(config_of(*s_, bid_, waiter_ttl_, channel_ && channel_->confirmed())) {}

bid_run::~bid_run() { forget(); }

void bid_run::forget() {
  if (std::exchange(forgotten_, true))
    return;
  if (channel_)
    channel_->leave(*this);
  if (std::exchange(offered_, false))
    if (auto it = s_->open.find(names_->key); it != s_->open.end()) {
      auto p = it->second.lock();
      if (!p || p.get() == this)
        s_->open.erase(it);
    }
  delist();
  if (timer_)
    timer_->disarm();
}

bool bid_run::ride() {
  auto c = s_->client();
  if (!c || c->closed() || s_->closed || !c->ready_for_locks()) {
    start(); // fails it, as a bid of its own would
    return false;
  }
  enlist();
  if (channel_) {
    channel_->join(shared_from_this());
    may_queue();
  }
  reached_ = true; // the release carries the owner: a withdrawal gives it up after it
  machine_.ride();
  run();
  return true;
}

void bid_run::ride_declined(error_code ec, bool unknown) {
  machine_.ride_declined(ec, unknown, steady::now());
  run();
}

void bid_run::start() {
  auto self = shared_from_this();
  auto c = s_->client();
  if (!c || c->closed() || s_->closed || !c->ready_for_locks()) {
    // Closed, or never connected: no request can go (an outage later is the attempts' business).
    contender_action a{contender_action::kind::failed};
    a.ec = !c || c->closed() || s_->closed ? error_code(error::closed)
                                         : error_code(error::not_connected);
    deliver(std::move(a));
    return;
  }
  if (auto it = s_->unsure_owners.find(owner_); it != s_->unsure_owners.end()) {
    reached_ = it->second; // the core bids again in this owner: what its earlier bids may have left
    s_->unsure_owners.erase(it);
  }
  enlist();
  if (channel_) {
    channel_->join(self); // kept from an earlier wait: grants are heard from the start
    may_queue();
  }
  machine_.start(steady::now());
  run();
}

void bid_run::enlist() noexcept {
  if (std::exchange(listed_, true))
    return;
  next_ = s_->running;
  if (next_)
    next_->prev_ = this;
  s_->running = this;
  ++s_->running_count;
}

void bid_run::delist() noexcept {
  if (!std::exchange(listed_, false))
    return;
  (prev_ ? prev_->next_ : s_->running) = next_;
  if (next_)
    next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  --s_->running_count;
}

void bid_run::may_queue() {
  // Only a bid queued in Redis can be handed a release of this client's (offer_handoff), and it
  // queues only once it listens on the lock's channel: a bid that finds the lock free is not
  // registered (two allocations and a hash each time, for nothing).
  if (names_->kind == corolock::redis::detail::lock_kind::mutex) {
    s_->open[names_->key] = shared_from_this();
    offered_ = true;
  }
}

void bid_run::withdraw() {
  events_ = nullptr;
  machine_.withdraw();
  run();
  forget();
}

void bid_run::run() {
  if (running_)
    return;
  running_ = true;
  auto keep = shared_from_this();
  for (auto actions = machine_.take_actions(); !actions.empty();
       actions = machine_.take_actions()) {
    for (auto& a : actions) {
      using k = contender_action::kind;
      switch (a.what) {
      case k::attempt: attempt(a.mode); break;
      case k::subscribe:
        // The channel is made when the lock is found taken: a bid that finds it free costs none.
        if (!channel_ && bid_.wait) {
          channel_ = s_->channel(names_);
          channel_->join(keep);
          may_queue();
        }
        if (channel_)
          channel_->subscribe(keep);
        break;
      case k::give_up:
        // Nothing of an owner whose requests never left the process can be in Redis: a give-up
        // would only wait for a connection (and hold a closing client for request_timeout).
        if (may_have_reached())
          s_->give_up(names_, owner_);
        break;
      case k::claim: claim(a.token); break;
      case k::confirm: confirm(a.token); break;
      case k::granted:
      case k::taken:
      case k::failed:
      case k::unsure: deliver(std::move(a)); break;
      case k::wake_at: arm(a.at); break;
      }
    }
  }
  running_ = false;
}

bool bid_run::may_have_reached() {
  if (reached_)
    return true;
  if (!in_flight_)
    return false;
  // An attempt not answered yet: unwritten if it can still be taken back. (A weak handle that
  // expired says nothing: the reply may be read, its completion not run yet.)
  auto c = s_->client();
  if (c && c->withdraw(attempt_)) {
    taken_back_ = true;
    return false;
  }
  return true; // written: it runs, or may have run
}

void bid_run::deliver(contender_action a) {
  if (a.what == contender_action::kind::granted)
    s_->held[owner_] = bid_.lock;
  if (a.what == contender_action::kind::unsure)
    s_->unsure_owners[owner_] = may_have_reached(); // for the core's next bid or give-back
  forget(); // over: the next bid of the lock may open
  // Never inline from the call that caused it (contract 1), and not after a withdrawal.
  asio::post(s_->ex, [self = shared_from_this(), a = std::move(a)]() mutable {
    auto* e = std::exchange(self->events_, nullptr);
    if (!e) {
      // Withdrawn before it heard: a grant goes back (its withdraw sent nothing: it was over).
      if (a.what == contender_action::kind::granted) {
        self->s_->held.erase(self->owner_);
        self->s_->give_up(self->names_, self->owner_);
      }
      return;
    }
    using k = contender_action::kind;
    switch (a.what) {
    case k::granted:
      e->granted({.token = a.token, .from = a.at, .valid_for = a.px});
      break;
    case k::taken: e->taken(); break;
    case k::unsure: e->unsure(a.ec, a.text); break;
    default:
      e->failed(a.ec, a.text); // none: the core says what and where
      break;
    }
  });
}

void bid_run::attempt(attempt_mode mode) {
  auto c = s_->client();
  if (!c || c->closed() || s_->closed) {
    asio::post(s_->ex, [w = weak_from_this()] {
      attempt_outcome out;
      out.ec = error::closed;
      if (auto self = w.lock()) {
        self->machine_.attempt_done(out, steady::now());
        self->run();
      }
    });
    return;
  }
  request req;
  // A one-look bid does not wait for a connection the client knows is down (request_timeout).
  req.opts().cancel_if_not_connected = !bid_.wait;
  const auto lease = bid_.lock->options.lease;
  corolock::redis::detail::push_attempt(req, *names_, owner_, lease, mode, waiter_ttl_, bid_.permits,
                                 c->publish_verb());
  const auto sent_at = steady::now();
  auto done = [w = weak_from_this(), sent_at, lease](error_code ec, response r) {
    auto self = w.lock();
    auto c = self ? self->s_->client() : nullptr;
    if (!c)
      return;
    attempt_outcome out;
    out.sent_at = sent_at;
    // not_connected: refused at once, or timed out while the connection was down (a request
    // written before would have failed with connection_lost when it dropped): never written.
    // Taken back: never written either. Anything else may have run.
    self->in_flight_ = false;
    self->attempt_.reset();
    const bool taken_back = std::exchange(self->taken_back_, false);
    if (ec) {
      out.ec = transport_error(*c, ec);
      if (!taken_back && out.ec != error::not_connected)
        self->reached_ = true;
    } else {
      self->reached_ = true;
      corolock::redis::detail::read_attempt_reply(r.at(0), lease, out);
      if (out.ec == error::redis_error)
        c->note_server_error(out.text);
      else if (out.ec == error::invalid_argument)
        c->note_server_error("corolock: " + out.text);
    }
    self->machine_.attempt_done(out, steady::now());
    self->run();
  };
  in_flight_ = true;
  // A waiting bid's attempt may wait for a connection (request_timeout): it can be taken back.
  if (bid_.wait)
    attempt_ = c->exec_withdrawable(std::move(req), std::move(done));
  else
    c->exec(std::move(req), std::move(done));
}

void bid_run::claim(std::uint64_t token) {
  auto c = s_->client();
  if (!c) {
    machine_.claimed({error::closed}, steady::now());
    return;
  }
  s_->track(names_, owner_); // a closing client releases it
  request req;
  corolock::redis::detail::push_renew(req, *names_, owner_, token, bid_.lock->options.lease);
  const auto sent_at = steady::now();
  c->exec(std::move(req), [w = weak_from_this(), sent_at](error_code ec, response r) {
    auto self = w.lock();
    if (!self)
      return;
    self->s_->untrack(self->owner_);
    check_outcome out;
    out.sent_at = sent_at;
    if (ec) {
      out.ec = ec;
    } else {
      switch (corolock::redis::detail::read_renew_reply(r.at(0))) {
      case renew_reply::held: out.held = true; break;
      case renew_reply::gone: break;
      case renew_reply::refused:
        out.ec = error::redis_error;
        out.text = r.at(0).data;
        break;
      case renew_reply::unexpected: out.ec = error::unexpected_reply; break;
      }
    }
    self->machine_.claimed(out, steady::now());
    self->run();
  });
}

void bid_run::confirm(std::uint64_t token) {
  auto c = s_->client();
  if (!c) {
    machine_.confirmed({error::closed}, steady::now());
    return;
  }
  if (!s_->acks)
    s_->acks = std::make_shared<corolock::redis::detail::replica_acks>(c);
  s_->track(names_, owner_); // a closing client releases it
  const auto& o = bid_.lock->options;
  const auto& t = tuning_of(*bid_.lock);
  s_->acks->confirm(names_, owner_, token, o.watchdog ? o.lease : std::chrono::milliseconds(0),
                    t.min_replicas, t.replica_timeout,
                    [w = weak_from_this()](const corolock::redis::detail::replica_ack& r) {
                      auto self = w.lock();
                      if (!self)
                        return;
                      self->s_->untrack(self->owner_);
                      self->machine_.confirmed({r.ec, r.held, r.sent_at, r.text}, steady::now());
                      self->run();
                    });
}

void bid_run::arm(steady::time_point at) {
  if (at == steady::time_point::max()) {
    if (timer_)
      timer_->disarm();
    return;
  }
  if (!timer_)
    timer_ = std::make_unique<core::asio_timer>(s_->ex);
  timer_->arm(at, [w = weak_from_this()] {
    if (auto self = w.lock()) {
      self->machine_.timer(steady::now());
      self->run();
    }
  });
}

void bid_run::grant_heard(std::uint64_t token, steady::time_point published_after,
                         std::chrono::milliseconds px) {
  machine_.grant_heard(token, published_after, px, steady::now());
  run();
}

void bid_run::granted_elsewhere(std::chrono::milliseconds grant_lease) {
  machine_.granted_elsewhere(grant_lease, steady::now());
  run();
}

void bid_run::subscribed(bool restored) {
  machine_.subscribed(restored, steady::now());
  run();
}

void bid_run::refused(error_code ec, std::string_view text) {
  machine_.refused(ec, text, steady::now());
  run();
}

void bid_run::handed(std::uint64_t token, steady::time_point from, std::chrono::milliseconds px) {
  machine_.handed(token, from, px, steady::now());
  run();
}

void bid_run::handoff_declined(bool unknown) {
  machine_.handoff_declined(unknown, steady::now());
  run();
}

redis_contender::~redis_contender() { run_->withdraw(); }

void redis_contender::withdraw() { run_->withdraw(); }

} // namespace corolock::redis::detail
