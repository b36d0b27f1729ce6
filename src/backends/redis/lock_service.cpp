#include "backends/redis/lock_service.hpp"

#include "detail/diagnostics_access.hpp"
#include "backends/redis/acquire.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"
#include "backends/redis/waiting_line.hpp"
#include "redis/cluster/redirection.hpp"

#include <corolock/error.hpp>

#include <set>

namespace corolock::detail {

namespace {

/// Reads an acquire.lua (or acquire_permits.lua) reply (checked: lock/script_replies.hpp).
void read_attempt(client_impl& c, const resp::value& r, std::chrono::milliseconds lease,
                  attempt_outcome& out) {
  read_attempt_reply(r, lease, out);
  if (out.ec == error::redis_error)
    c.last_server_error = out.text;
  else if (out.ec == error::invalid_argument)
    c.last_server_error = "corolock: " + out.text;
}

/// A give-up that no master has run: Redis did not answer it in time, or a demoted master (found
/// through Sentinel, which drops the connection and asks for the new one) refused it.
bool give_up_unsettled(const client_impl& c, error_code ec, const response& r) {
  if (unreachable(ec))
    return true;
  return !ec && c.cfg.sentinel.enabled() && !r.empty() && r[0].is_error() &&
         r[0].error_code() == "READONLY";
}

/// A request that timed out while the connection was down failed for want of a connection.
error_code transport_error(const client_impl& c, error_code ec) {
  return ec == error::timeout && !c.locks->connected() ? error_code(error::not_connected) : ec;
}

} // namespace

void push_attempt(request& req, const lock_names& names, const std::string& owner,
                  std::chrono::milliseconds lease, attempt_mode mode,
                  std::chrono::milliseconds waiter_ttl, std::int64_t permits,
                  const char* publish) {
  const char* how = mode == attempt_mode::queue ? "queue" : "try";
  if (names.kind == lock_kind::mutex) {
    req.push_script(acquire_script(), {names.key, names.fence(), names.queue(), names.expiry()},
                    {owner, std::to_string(lease.count()), how,
                     std::to_string(waiter_ttl.count()), names.channel(), publish});
    return;
  }
  req.push_script(acquire_permits_script(), names.permit_keys(),
                  {owner, std::to_string(lease.count()), how, std::to_string(waiter_ttl.count()),
                   names.channel(), publish, std::to_string(permits),
                   std::to_string(names.default_permits)});
}

void push_release(request& req, const lock_names& names, const std::string& owner, bool retry,
                  const line_machine::handoff* handoff, std::chrono::milliseconds handoff_lease,
                  std::chrono::milliseconds waiter_ttl, const char* publish) {
  if (names.kind == lock_kind::permits) {
    // No hand-off: this client's own waiters hear of their grants like anyone else's.
    req.push_script(release_permits_script(), names.permit_keys(),
                    {owner, retry ? "1" : "0", names.channel(), publish,
                     std::to_string(names.default_permits)});
    return;
  }
  req.push_script(release_script(), {names.key, names.fence(), names.queue(), names.expiry()},
                  {owner, retry ? "1" : "0", handoff ? handoff->owner : std::string(),
                   std::to_string(handoff_lease.count()),
                   handoff ? handoff->requeue : std::string(),
                   std::to_string(waiter_ttl.count()), names.channel(), publish});
}

void push_renew(request& req, const lock_names& names, const std::string& owner,
                std::uint64_t token, std::chrono::milliseconds lease) {
  if (names.kind == lock_kind::permits)
    req.push_script(renew_permits_script(), {names.key, names.holder_ends()},
                    {owner, std::to_string(token), std::to_string(lease.count())});
  else
    req.push_script(renew_script(), {names.key},
                    {std::to_string(token) + ' ' + owner, std::to_string(lease.count())});
}

lock_service::lock_service(client_impl& c) : client(c), dog(c), acks(std::make_shared<replica_acks>(c)), sweep_timer_(c.ex) {}

lock_service::~lock_service() = default;

lock_service& lock_service::of(client_impl& c) {
  // Destroyed with the client_impl, which every lock operation keeps alive while it runs.
  if (!c.extension)
    c.extension = std::make_unique<lock_service>(c);
  return *find(c);
}

std::string lock_service::new_owner(std::chrono::milliseconds grant_lease) {
  std::string owner = client.id;
  owner += ':';
  owner += std::to_string(++acquisitions_);
  owner += ':';
  owner += std::to_string(grant_lease.count());
  return owner;
}

bool lock_service::ours(std::string_view owner) const noexcept {
  return owner.size() > client.id.size() && owner.starts_with(client.id) &&
         owner[client.id.size()] == ':';
}

std::shared_ptr<waiting_line> lock_service::line(const std::shared_ptr<const lock_names>& names,
                                                 std::chrono::milliseconds waiter_ttl,
                                                 std::int64_t permits) {
  // Permit callers wanting different counts wait in different lines (an owner queues for one
  // count); a mutex's key names its one line, which a release looks up for a hand-off.
  auto& slot = lines_[line_key(*names, permits)];
  if (!slot)
    slot = std::make_shared<waiting_line>(*this, names, waiter_ttl, permits);
  return slot;
}

std::string lock_service::line_key(const lock_names& names, std::int64_t permits) {
  return names.kind == lock_kind::mutex ? names.key : names.key + '#' + std::to_string(permits);
}

waiting_line* lock_service::find_line(const std::string& key) {
  auto it = lines_.find(key);
  return it == lines_.end() ? nullptr : it->second.get();
}

void lock_service::line_idle() {
  if (sweep_scheduled_ || closed_)
    return;
  // One timer for all idle lines: it drops those idle for a whole linger period.
  sweep_scheduled_ = true;
  sweep_timer_.expires_after(linger);
  sweep_timer_.async_wait([weak = client.weak_from_this()](error_code ec) {
    auto c = weak.lock();
    if (!ec && c && lock_service::find(*c))
      lock_service::find(*c)->sweep_idle_lines();
  });
}

void lock_service::line_done(const std::shared_ptr<waiting_line>& l) {
  if (closed_)
    return;
  // Posted, not erased here: the line's own member functions are on the stack.
  if (done_lines_.empty())
    asio::post(client.ex, [weak = client.weak_from_this()] {
      auto c = weak.lock();
      if (c && lock_service::find(*c))
        lock_service::find(*c)->drop_done_lines();
    });
  done_lines_.push_back(l);
}

void lock_service::drop_done_lines() {
  for (auto& weak : std::exchange(done_lines_, {})) {
    auto l = weak.lock();
    if (!l || !l->idle() || l->contended())
      continue; // gone already, or used again meanwhile
    if (auto it = lines_.find(line_key(*l->names(), l->permits()));
        it != lines_.end() && it->second == l)
      lines_.erase(it);
  }
}

void lock_service::sweep_idle_lines() {
  sweep_scheduled_ = false;
  const auto now = steady::now();
  bool any_left = false;
  for (auto it = lines_.begin(); it != lines_.end();) {
    if (it->second->idle() && now - it->second->idle_since() >= linger) {
      it = lines_.erase(it);
    } else {
      any_left = any_left || it->second->idle();
      ++it;
    }
  }
  if (any_left)
    line_idle(); // again, for those idle only briefly
}

std::weak_ptr<pending> lock_service::attempt(const lock_names& names, const std::string& owner,
                                             std::chrono::milliseconds lease, attempt_mode mode,
                                             std::chrono::milliseconds waiter_ttl,
                                             std::int64_t permits,
                                             std::function<void(attempt_outcome)> done,
                                             when_down w) {
  request req;
  // A try does not wait for a connection the client knows is down (client_config::request_timeout).
  req.opts().cancel_if_not_connected = w == when_down::fail_fast;
  push_attempt(req, names, owner, lease, mode, waiter_ttl, permits, client.publish_verb());
  const auto sent_at = steady::now();
  ++attempts_[owner].count;
  // Both kinds need the owner back: a line's attempt that waited out request_timeout unsent is
  // as unsent as a refused try, and its give-up must not hold close() for another request_timeout.
  auto completion = [weak = client.weak_from_this(), sent_at, lease, owner,
                     done = std::move(done)](error_code ec, response r) {
    auto c = weak.lock();
    if (!c)
      return;
    attempt_outcome out;
    out.sent_at = sent_at;
    if (ec)
      out.ec = transport_error(*c, ec);
    else
      read_attempt(*c, r.at(0), lease, out);
    if (!lock_service::find(*c)) {
      done(out);
      return;
    }
    // not_connected (refused, or timed out while the connection was down: a request written
    // earlier would have failed with connection_lost when it dropped), or taken back unwritten:
    // never written. Any other failure may have run it.
    auto& self = *lock_service::find(*c);
    bool given_up = false;
    if (auto it = self.attempts_.find(owner); it != self.attempts_.end()) {
      given_up = it->second.given_up;
      if (--it->second.count <= 0)
        self.attempts_.erase(it);
    }
    const bool taken_back = self.withdrawn_.erase(owner) > 0;
    const bool never_written = taken_back || out.ec == error::not_connected;
    if (ec && !never_written && !given_up)
      self.may_have_run_.insert(owner);
    else if (!ec)
      self.may_have_run_.erase(owner);
    const bool unsent = never_written && !self.may_have_run_.contains(owner);
    self.unsent_ = unsent ? &owner : nullptr;
    done(out);
    self.unsent_ = nullptr;
  };
  if (w == when_down::wait)
    return client.locks->exec_withdrawable(std::move(req), std::move(completion));
  client.locks->exec(std::move(req), std::move(completion));
  return {};
}

bool lock_service::withdraw(const std::weak_ptr<pending>& req, const std::string& owner) {
  if (may_have_run_.contains(owner) || !client.locks->withdraw(req))
    return false;
  withdrawn_.insert(owner);
  return true;
}

void lock_service::track(const std::shared_ptr<const lock_names>& names,
                         const std::string& owner) {
  auto& u = unsettled_[owner];
  u.names = names;
  ++u.count;
}

void lock_service::untrack(const std::string& owner) {
  auto it = unsettled_.find(owner);
  if (it != unsettled_.end() && --it->second.count <= 0)
    unsettled_.erase(it);
}

void lock_service::give_up(std::shared_ptr<const lock_names> names, std::string owner,
                           bool placed) {
  if (!placed && unsent_ && *unsent_ == owner)
    return; // its attempt never left, and nothing earlier of the owner may be in Redis
  may_have_run_.erase(owner);
  if (auto it = attempts_.find(owner); it != attempts_.end())
    it->second.given_up = true; // their outcome is settled by this give-up
  if (closed_ || client.closed)
    return; // close() releases everything still unsettled
  send_release(std::move(names), std::move(owner), 0);
}

void lock_service::send_release(std::shared_ptr<const lock_names> names, std::string owner,
                                int tries) {
  track(names, owner);
  request req;
  push_release(req, *names, owner, tries > 0, nullptr, {}, {}, client.publish_verb());
  client.locks->exec(std::move(req), [weak = client.weak_from_this(), names, owner,
                                      tries](error_code ec, response r) {
    auto c = weak.lock();
    if (!c || !lock_service::find(*c))
      return;
    auto& self = *lock_service::find(*c);
    self.untrack(owner);
    // Until a master has run it, ask again (release.lua is idempotent per owner), for the
    // client's life: a place left in the queue would be granted the lock, kept grant_lease for
    // nobody. Each try waits for a connection up to request_timeout, so a failover, a restart or
    // a stall costs one request per request_timeout.
    if (!c->closed && !self.closed_ && give_up_unsettled(*c, ec, r))
      self.send_release(names, owner, tries + 1);
  });
}

namespace {

/// One release of a held lease, sent again while its outcome is unknown.
struct release_op : std::enable_shared_from_this<release_op> {
  std::shared_ptr<client_impl> c;
  std::shared_ptr<lease> l;
  std::shared_ptr<waiting_line> line; // this client's waiters for the lock, if any
  std::optional<waiting_line::offer> offer;
  stored_handler<handler<void(error_code)>> h; // never move-assigned (see completion.hpp)
  asio::cancellation_slot slot;
  diagnostics* diag = nullptr; // the caller's, written only while h is still there
  diagnostics said;            // the words of the failure, until finish
  int tries = 0;
  // The local deadline had passed when the release began (lost() was already true): whatever
  // Redis says, the holder hears lease_lost. This also settles a retry that cannot tell whether
  // its first try released the lock or found it expired.
  bool past_deadline = false;
  bool followed_moved = false; // sent on to the slot's new owner once already

  /// Cancellation (any type) stops the caller's wait, not the release: the guard is released
  /// either way, and the request goes on (and is retried) in the background.
  void watch_cancellation() {
    if (!h)
      return; // a dropped guard's release: nobody waits
    slot = asio::get_associated_cancellation_slot(h.get());
    if (!slot.is_connected())
      return;
    slot.assign([weak = weak_from_this()](asio::cancellation_type) {
      if (auto self = weak.lock(); self && self->h)
        complete_later(self->l->ex, self->h.take(), std::exchange(self->slot, {}),
                       error_code(asio::error::operation_aborted));
    });
  }

  void send() {
    auto& svc = *lock_service::find(*c);
    svc.track(l->names, l->owner);
    request req;
    push_release(req, *l->names, l->owner, tries > 0, offer ? &offer->handoff : nullptr,
                 offer ? offer->lease : std::chrono::milliseconds(0),
                 line ? line->waiter_ttl() : std::chrono::milliseconds(0), c->publish_verb());
    const auto sent_at = steady::now();
    c->locks->exec(std::move(req), [self = shared_from_this(), sent_at](error_code ec,
                                                                         response r) {
      self->done(ec, r, sent_at);
    });
  }

  void done(error_code ec, const response& r, steady::time_point sent_at) {
    lock_service::find(*c)->untrack(l->owner);
    if (ec == error::connection_lost && ++tries < 3 && !c->closed) {
      send();
      return;
    }
    if (ec)
      return finish(transport_error(*c, ec), true);
    const auto& v = r.at(0);
    const auto got = read_release_reply(v, offer ? offer->lease : std::chrono::milliseconds(0));
    const auto& rec = got.ec;
    if (rec == error::redis_error) {
      c->last_server_error = v.data;
      // A cluster node whose slot moved away (resharding, failover): the keys went with it.
      if (auto cluster = c->cluster_of.lock();
          cluster && !followed_moved && classify_cluster_error(v.data) == cluster_error_kind::moved) {
        followed_moved = true;
        release_on_new_owner(cluster, *c, v.data, l->names, l->owner, &said,
                             [self = shared_from_this()](error_code there) {
                               self->finish(!there && self->past_deadline
                                                ? error_code(error::lease_lost)
                                                : there,
                                            false);
                             });
        return;
      }
      diagnostics_access::server(&said, v.data);
      return finish(error::redis_error, false);
    }
    if (rec) {
      diagnostics_access::client(&said, got.text);
      return finish(rec, true);
    }
    const auto status = got.status;
    if (status == 2) {
      // Given to this client's own first waiter: at once, with its full lease.
      line->handed(offer->handoff, got.token, sent_at, got.pttl);
      offer.reset();
      return finish(past_deadline ? error_code(error::lease_lost) : error_code{}, false);
    }
    // 0: not ours any more — the lease was lost, unnoticed until now.
    finish(status == 0 || past_deadline ? error_code(error::lease_lost) : error_code{}, false);
  }

  void finish(error_code ec, bool unknown) {
    if (offer)
      line->handoff_declined(offer->handoff, unknown);
    if (ec == error::lease_lost)
      l->st = lease::state::lost;
    if (!h)
      return;
    if (ec && diag)
      *diag = std::move(said);
    complete_later(l->ex, h.take(), std::exchange(slot, {}), ec);
  }
};

} // namespace

error_code read_release(client_impl& c, const resp::value& v, std::int64_t& status) {
  auto got = read_release_reply(v, std::chrono::milliseconds(0));
  if (got.ec == error::redis_error)
    c.last_server_error = v.data;
  status = got.status;
  return got.ec;
}

void lock_service::release(std::shared_ptr<lease> l, diagnostics* diag,
                           handler<void(error_code)> h) {
  auto op = std::make_shared<release_op>();
  op->c = client.shared_from_this();
  op->l = std::move(l);
  op->h.set(std::move(h));
  op->diag = diag;
  op->past_deadline = steady::now() >= op->l->timing.valid_until;
  op->watch_cancellation();
  if (closed_) {
    op->finish(error::closed, false);
    return;
  }
  auto it = lines_.find(op->l->names->key);
  if (it != lines_.end()) {
    op->line = it->second;
    op->offer = op->line->offer_handoff();
  }
  op->send();
}

void lock_service::on_reconnect() { dog.verify_all(); }

void lock_service::on_close(request& last) {
  closed_ = true;
  sweep_timer_.cancel();
  // Everything this client holds, may have been granted, or waits for in Redis: one release each.
  std::set<std::string> seen;
  auto settle = [&](const std::shared_ptr<const lock_names>& names, const std::string& owner) {
    if (seen.insert(owner).second)
      push_release(last, *names, owner, false, nullptr, {}, {}, client.publish_verb());
  };
  for (auto& l : dog.close())
    settle(l->names, l->owner);
  std::vector<std::string> owners;
  for (auto& [_, line] : lines_) {
    owners.clear();
    line->close(owners);
    for (auto& o : owners)
      settle(line->names(), o);
  }
  for (auto& [owner, u] : unsettled_)
    settle(u.names, owner);
  unsettled_.clear();
  acks->close(); // its owners were tracked: released above
}

} // namespace corolock::detail
