// Redis behind the lock core's seam (lock_backend.hpp): traits, the Redis rules, bids, releases with
// their hand-off, batched renewals and close.
#include "backends/redis/lock_backend.hpp"

#include "backends/redis/backend_state.hpp"
#include "backends/redis/bid_run.hpp"
#include "backends/redis/grant_channel.hpp"
#include "backends/redis/script_requests.hpp"
#include "backends/redis/permits_admin.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"
#include "backends/redis/client/request_access.hpp"
#include "core/asio_timer.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <set>
#include <utility>

namespace corolock::redis::detail {

using corolock::detail::complete_later;
using corolock::redis::request;
using corolock::redis::response;
using std::chrono::milliseconds;

namespace {

constexpr core::backend_traits redis_traits{
    .store = "redis",
    .leases = core::lease_model::per_lock,
    .fixed_lease = true,
    .read_write = true,
    .semaphore = true,
    .fifo = true,
    .run_time_permits = true,
    .holder_token = true,
    .marks = true,
    .token_bucket = true,
    .notes = true,
};

/// One release of a held lock, sent again (same owner) while a dropped connection leaves its
/// outcome unknown; it may hand the lock to this client's open bid of the same mutex.
struct release_op : std::enable_shared_from_this<release_op> {
  std::shared_ptr<backend_state> s;
  std::shared_ptr<const lock_names> names;
  std::string owner;                 // Redis's
  std::shared_ptr<bid_run> handoff;  // offered the lock, if any
  bool pass = false;                 // non-fair: offered even behind other clients' waiters
  bool ride = false;                 // `handoff` is not queued: its bid rides on this release
  // Never move-assigned (see detail/completion.hpp).
  corolock::detail::stored_handler<core::handler<void(error_code, std::string)>> h;
  int tries = 0;

  void send() {
    auto c = s->client();
    if (!c || c->closed())
      return finish(error::closed, {}, true);
    s->track(names, owner);
    request req;
    const corolock::redis::detail::release_handoff offer{
        handoff ? handoff->redis_owner() : std::string(), pass, ride};
    corolock::redis::detail::push_release(req, *names, owner, tries > 0, handoff ? &offer : nullptr,
                                   handoff ? handoff->lease() : milliseconds(0),
                                   c->publish_verb());
    const auto sent_at = steady::now();
    c->exec(std::move(req), [self = shared_from_this(), sent_at](error_code ec,
                                                                         response r) {
      self->done(ec, r, sent_at);
    });
  }

  void done(error_code ec, const response& r, steady::time_point sent_at) {
    s->untrack(owner);
    auto c = s->client();
    if (!c)
      return finish(error::closed, {}, true);
    if (ec == error::connection_lost && ++tries < 3 && !c->closed()) {
      send();
      return;
    }
    if (ec)
      return finish(transport_error(*c, ec), {}, true);
    const auto& v = r.at(0);
    const auto got = corolock::redis::detail::read_release_reply(
        v, handoff ? handoff->lease() : milliseconds(0), pass);
    if (got.ec == error::redis_error) {
      c->note_server_error(v.data);
      return finish(got.ec, v.data, false);
    }
    if (got.ec)
      return finish(got.ec, got.text, true);
    if (pass)
      count_pass(got.status == 3);
    if (got.status >= 2) {
      // Given to this client's own bid: at once, with its full lease.
      std::exchange(handoff, nullptr)->handed(got.token, sent_at, got.pttl);
      return finish({}, {}, false);
    }
    // 0: not ours any more — the lease was lost, unnoticed until now.
    finish(got.status == 0 ? error_code(error::lease_lost) : error_code{}, {}, false);
  }

  // Bounds the passing over (lock_backend::release): a release that passed nobody over restarts
  // the count.
  void count_pass(bool passed) {
    if (!passed)
      s->passed_over.erase(names->key);
    else
      ++s->passed_over[names->key];
  }

  void finish(error_code ec, std::string words, bool unknown) {
    if (handoff && ride)
      std::exchange(handoff, nullptr)->ride_declined(unknown || ec == error::closed ? ec : error_code{},
                                                     unknown);
    else if (handoff)
      std::exchange(handoff, nullptr)->handoff_declined(unknown);
    if (h)
      complete_later(s->ex, h.take(), asio::cancellation_slot{}, ec, std::move(words));
  }
};

/// One request of a lock's admin calls (set_permits / status, marks, a bucket's take) on the lock
/// connection, made by `make` for each try and sent again (`resends` times at most) when its
/// connection dropped before the reply: only for an idempotent request (a take is not: 0). `read`
/// gets the reply answered, or the error and its words: closed (the client gone or closed), or the
/// transport's (no words).
using admin_make = std::function<void(request&, const lock_link&)>;
using admin_read = std::function<void(error_code, const response&, std::string words)>;

void admin_request(const std::shared_ptr<backend_state>& s, admin_make make, admin_read read,
                   int resends = 2) {
  auto c = s->client();
  if (!c || c->closed() || s->closed)
    return read(error::closed, {}, "the client was closed");
  request req;
  make(req, *c);
  c->exec(std::move(req), [s, make = std::move(make), read = std::move(read),
                           resends](error_code ec, response r) mutable {
    auto c = s->client();
    if (!c)
      return read(error::closed, {}, "the client was closed");
    if (ec == error::connection_lost && resends > 0 && !c->closed())
      return admin_request(s, std::move(make), std::move(read), resends - 1);
    if (ec)
      return read(transport_error(*c, ec), {}, {});
    read({}, r, {});
  });
}

/// A caller's handler, kept where a std::function (copyable) carries it.
template <typename Signature>
using shared_handler = std::shared_ptr<corolock::detail::stored_handler<core::handler<Signature>>>;

template <typename Signature>
shared_handler<Signature> share(core::handler<Signature> h) {
  auto out = std::make_shared<corolock::detail::stored_handler<core::handler<Signature>>>();
  out->set(std::move(h));
  return out;
}

/// The members of a SMEMBERS reply that are marks (decimal indexes), ascending; false if the
/// reply is no set.
bool read_marks(const resp::value& reply, std::vector<std::uint32_t>& set) {
  if (reply.type != resp::type::set && reply.type != resp::type::array)
    return false;
  for (const auto& member : reply.children) {
    const auto& d = member.data;
    std::uint32_t i = 0;
    auto [end, err] = std::from_chars(d.data(), d.data() + d.size(), i);
    if (err == std::errc() && end == d.data() + d.size()) // another member is not a mark
      set.push_back(i);
  }
  std::sort(set.begin(), set.end());
  return true;
}

} // namespace

error_code check_redis_lock(const core::lock_spec& lock, std::string& words) {
  // The name's length and the lease's range are the core's (check_handle): here, the prefix's
  // length (any bytes: lock_names.hpp encodes its braces).
  if (auto ec = lock.options.validate()) {
    words = "lease 10 ms..24 h, prefix <= 256 bytes";
    return ec;
  }
  if (!lock.options.store.empty() && !lock.options.store.get<lock_tuning>()) {
    words = "lock_options::store holds another type than redis::lock_tuning";
    return error::invalid_argument;
  }
  const auto& t = tuning_of(lock);
  if (auto ec = t.validate(lock.options.lease, &words))
    return ec;
  if (!t.fair && lock.kind != core::lock_kind::mutex) {
    words = "fair = false is a mutex's option (a semaphore and a shared_mutex are fair)";
    return error::invalid_argument;
  }
  return {};
}

std::string redis_line_tag(const core::lock_spec& lock) {
  const auto& t = tuning_of(lock);
  // What changes a bid: the replicas asked for and their wait; fairness and its bound.
  return std::to_string(t.min_replicas) + '/' + std::to_string(t.replica_timeout.count()) + '/' +
         (t.fair ? std::string("fair") : std::to_string(t.max_passed_over));
}

const core::backend_traits& redis_lock_traits() noexcept { return redis_traits; }

lock_backend::lock_backend(const std::shared_ptr<corolock::redis::detail::lock_link>& c,
                           std::string owner_id)
    : s_(std::make_shared<backend_state>(c, std::move(owner_id))) {}

lock_backend::~lock_backend() {
  s_->closed = true;
  s_->sweep_timer.cancel();
}

void lock_backend::on_reconnect() {
  if (s_->hooks.reconnected)
    s_->hooks.reconnected();
  if (s_->hooks.reachable)
    s_->hooks.reachable();
}

const core::backend_traits& lock_backend::traits() const noexcept { return redis_traits; }

std::size_t lock_backend::channels() const noexcept { return s_->channels.size(); }

std::size_t lock_backend::owners_remembered() const noexcept {
  return s_->running_count + s_->unsettled.size();
}

asio::any_io_executor lock_backend::get_executor() const { return s_->ex; }

core::steady::time_point lock_backend::now() const { return steady::now(); }

std::unique_ptr<core::timer> lock_backend::make_timer() {
  return std::make_unique<core::asio_timer>(s_->ex);
}

std::string lock_backend::new_owner() { return s_->id + ':' + std::to_string(++s_->owners); }

std::string lock_backend::new_owner(const core::lock_spec& lock) {
  return s_->redis_owner(new_owner(), lock);
}

bool lock_backend::known_unreachable() const noexcept {
  auto c = s_->client();
  return !c || c->closed() || s_->closed || !c->ready_for_locks(); // never connected, or closed
}

error_code lock_backend::check(const core::lock_spec& lock, std::string& words) const {
  return check_redis_lock(lock, words);
}

std::string lock_backend::line_tag(const core::lock_spec& lock) const {
  return redis_line_tag(lock);
}

std::shared_ptr<const core::lock_ticket> lock_backend::prepare(const core::lock_spec& lock) const {
  return std::make_shared<const redis_lock>(lock);
}

std::unique_ptr<core::contender> lock_backend::contend(core::bid b, std::string owner,
                                                       core::contender_events& events) {
  auto run = std::make_shared<bid_run>(s_, std::move(b), std::move(owner), events);
  run->start();
  return std::make_unique<redis_contender>(std::move(run));
}

void lock_backend::give_back(const core::bid& b, const std::string& owner,
                             core::handler<void(error_code, std::string)> h) {
  s_->give_back(backend_state::names_of(b.lock), owner, std::move(h));
}

namespace {
std::shared_ptr<release_op> release_op_of(const std::shared_ptr<backend_state>& s,
                                          const core::held& lease,
                                          core::handler<void(error_code, std::string)>&& h) {
  auto op = std::make_shared<release_op>();
  op->s = s;
  op->names = backend_state::names_of(lease.lock);
  op->owner = lease.owner;
  op->h.set(std::move(h));
  s->held.erase(op->owner);
  return op;
}
} // namespace

bool lock_backend::can_ride(const core::lock_spec& lock) noexcept {
  // A non-fair mutex keeps its next bid queued: its release passes that bid ahead of other
  // clients' waiters (release.lua ARGV[7]), which a bid not yet in the queue could not be.
  return lock.kind == core::lock_kind::mutex && tuning_of(lock).fair;
}

bool lock_backend::rides_release(const core::lock_spec& lock) const { return can_ride(lock); }

std::unique_ptr<core::contender>
lock_backend::release_then_bid(const core::held& lease,
                               core::handler<void(error_code, std::string)> h, core::bid b,
                               std::string owner, core::contender_events& events) {
  auto op = release_op_of(s_, lease, std::move(h));
  auto run = std::make_shared<bid_run>(s_, std::move(b), std::move(owner), events);
  if (s_->closed) {
    op->finish(error::closed, {}, true);
    run->start(); // fails it: closed
  } else {
    if (run->ride()) {
      op->handoff = run;
      op->ride = true;
    }
    op->send();
  }
  return std::make_unique<redis_contender>(std::move(run));
}

void lock_backend::release(const core::held& lease,
                           core::handler<void(error_code, std::string)> h) {
  auto op = release_op_of(s_, lease, std::move(h));
  if (s_->closed)
    return op->finish(error::closed, {}, true);
  // Permit locks have no hand-off: this client's own bids hear of their grants like anyone else's.
  if (!s_->open.empty())
    if (auto it = s_->open.find(op->names->key); it != s_->open.end())
      if (auto run = it->second.lock(); run && run->offer_handoff())
        op->handoff = std::move(run);
  if (const auto& t = tuning_of(*lease.lock); !t.fair) {
    auto passed = s_->passed_over.find(op->names->key);
    const bool counted = passed != s_->passed_over.end();
    op->pass = op->handoff && (!counted || passed->second < t.max_passed_over);
    if (!op->pass && counted) // a fair release: the first waiter gets the lock, the count restarts
      s_->passed_over.erase(passed);
  }
  op->send();
}

void lock_backend::forget_held(const std::string& redis_owner) { s_->held.erase(redis_owner); }

void lock_backend::adopt_held(const std::string& redis_owner,
                              std::shared_ptr<const core::lock_spec> lock) {
  if (!s_->closed)
    s_->held[redis_owner] = std::move(lock);
}

void lock_backend::permits(const core::lock_spec& lock, std::optional<std::int64_t> count,
                           core::handler<void(error_code, semaphore_status, std::string)> h) {
  // set_permits.lua / permits_status.lua. A copy of the names: the call may outlive the handle
  // whose spec keeps them (an admin call, rare).
  auto names = std::make_shared<const lock_names>(backend_state::names(lock));
  auto hp = share(std::move(h));
  admin_request(
      s_,
      [names, count](request& req, const lock_link& c) {
        corolock::redis::detail::push_permits_admin(req, *names, count, c.publish_verb());
      },
      [s = s_, hp, count](error_code ec, const response& r, std::string words) {
        semaphore_status st;
        if (!ec) {
          auto got = corolock::redis::detail::read_permits_admin(r, count);
          if (got.ec == error::redis_error)
            if (auto c = s->client())
              c->note_server_error(got.text);
          ec = got.ec;
          st = got.status;
          words = std::move(got.text);
        }
        complete_later(s->ex, hp->take(), asio::cancellation_slot{}, ec, st, std::move(words));
      });
}

void lock_backend::marks(const core::lock_spec& lock, core::marks_call what, std::uint32_t index,
                         core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  // The set "<lock key>:empty": the lock's key as lock_names encodes it (any name works and, on a
  // Cluster, the set is in the lock's slot). SADD, SMEMBERS and DEL are idempotent.
  auto key = corolock::redis::detail::lock_key(lock.options.prefix, lock.name) + ":empty";
  auto hp = share(std::move(h));
  admin_request(
      s_,
      [key, what, index](request& req, const lock_link&) {
        switch (what) {
        case core::marks_call::add: req.push("SADD", key, std::to_string(index)); break;
        case core::marks_call::read: req.push("SMEMBERS", key); break;
        case core::marks_call::clear: req.push("DEL", key); break;
        }
      },
      [s = s_, hp, key, what](error_code ec, const response& r, std::string words) {
        std::vector<std::uint32_t> set;
        if (!ec && r.at(0).is_error()) { // e.g. WRONGTYPE: something else is under the key
          ec = error::redis_error;
          words = r[0].data;
          if (auto c = s->client())
            c->note_server_error(words);
        } else if (!ec && what == core::marks_call::read && !read_marks(r[0], set)) {
          ec = error::unexpected_reply;
          words = "SMEMBERS of " + key + " read no set";
        }
        complete_later(s->ex, hp->take(), asio::cancellation_slot{}, ec, std::move(set),
                       std::move(words));
      });
}

namespace {
/// `x` as the shortest decimal that reads back as it (a script's argument).
std::string decimal(double x) {
  char text[32]; // enough for any double
  auto [end, err] = std::to_chars(text, text + sizeof text, x);
  return err == std::errc() ? std::string(text, end) : std::string();
}
} // namespace

void lock_backend::take_tokens(const core::lock_spec& lock, core::bucket_take what,
                               core::handler<void(error_code, core::bucket_answer, std::string)> h) {
  // take_tokens.lua on the hash "<lock key>:bucket" (lock_names::bucket_suffix: on a Cluster, in
  // the lock's slot), the lock's names as its handle prepared them. Not idempotent: never resent,
  // so `make` runs once, within this call, while `lock` (and its names) are there.
  auto rate = decimal(what.rate), burst = decimal(what.burst), count = std::to_string(what.count),
       max_wait = std::to_string(what.max_wait.count());
  auto hp = share(std::move(h));
  admin_request(
      s_,
      [&names = backend_state::names(lock), rate, burst, count, max_wait](request& req, const lock_link&) {
        request_access::push_script(req, take_tokens_script(),
                                    {request_access::piece(names.key, lock_names::bucket_suffix)},
                                    {rate, burst, count, max_wait});
      },
      [s = s_, hp, what](error_code ec, const response& r, std::string words) {
        core::bucket_answer answer;
        if (!ec) {
          auto got = read_bucket_reply(r.at(0), what.burst, what.count);
          if (got.ec == error::redis_error)
            if (auto c = s->client())
              c->note_server_error(got.text);
          ec = got.ec;
          words = std::move(got.text);
          answer = core::bucket_answer{got.taken, got.wait, got.left};
        }
        complete_later(s->ex, hp->take(), asio::cancellation_slot{}, ec, answer, std::move(words));
      },
      0);
}

void lock_backend::note(const core::lock_spec& lock, std::optional<core::lock_note> write,
                        core::handler<void(error_code, core::lock_note, std::string)> h) {
  run_note(s_, lock, std::move(write), std::move(h));
}

void run_note(const std::shared_ptr<backend_state>& s, const core::lock_spec& lock,
              std::optional<core::lock_note> write,
              core::handler<void(error_code, core::lock_note, std::string)> h) {
  // note.lua on the hash "<lock key>:note" (note_key: named by the prefix and name as the marks'
  // set, so on a Cluster it is in the lock's slot). The script compares the terms and writes in
  // one step of the server, so no other client's write comes between; a write sent again after a
  // lost reply finds its own term stored and writes the same note, or finds a higher one and
  // leaves it: resent as marks are. A write that stores publishes its term on the channel of the
  // note's key, with this client's verb (a cluster node's: SPUBLISH), for the note's watchers.
  auto key = note_key(lock.options.prefix, lock.name);
  std::optional<std::pair<std::string, std::string>> args; // term, value
  if (write)
    args.emplace(std::to_string(write->term), std::move(write->value));
  auto hp = share(std::move(h));
  admin_request(
      s,
      [key, args = std::move(args)](request& req, const lock_link& link) {
        if (args)
          request_access::push_script(req, note_script(), {key},
                                      {args->first, args->second, link.publish_verb()});
        else
          request_access::push_script(req, note_script(), {key}, {});
      },
      [s, hp](error_code ec, const response& r, std::string words) {
        core::lock_note now;
        if (!ec) {
          auto got = read_note_reply(r.at(0));
          if (got.ec == error::redis_error)
            if (auto c = s->client())
              c->note_server_error(got.text);
          ec = got.ec;
          words = std::move(got.text);
          if (!ec)
            now = core::lock_note{got.term, std::move(got.value)};
        }
        complete_later(s->ex, hp->take(), asio::cancellation_slot{}, ec, std::move(now),
                       std::move(words));
      });
}

void lock_backend::holder_token(const core::lock_spec& lock,
                                core::handler<void(error_code, std::uint64_t, std::string)> h) {
  // A mutex's key holds '<token> <owner>' while held (its PX the lease): GET reads it, nothing
  // else is touched. No key: nobody holds the lock.
  auto key = corolock::redis::detail::lock_key(lock.options.prefix, lock.name);
  auto hp = share(std::move(h));
  admin_request(
      s_, [key](request& req, const lock_link&) { req.push("GET", key); },
      [s = s_, hp, key](error_code ec, const response& r, std::string words) {
        std::uint64_t token = 0;
        if (!ec && r.at(0).is_error()) { // WRONGTYPE: something else is under the key
          ec = error::redis_error;
          words = r[0].data;
          if (auto c = s->client())
            c->note_server_error(words);
        } else if (!ec && !r[0].is_null()) {
          const auto& v = r[0].data;
          auto [end, parsed] = std::from_chars(v.data(), v.data() + v.size(), token);
          if (parsed != std::errc{} || end == v.data() + v.size() || *end != ' ') {
            ec = error::unexpected_reply;
            words = "the key " + key + " holds no lock ('<token> <owner>')";
            token = 0;
          }
        }
        complete_later(s->ex, hp->take(), asio::cancellation_slot{}, ec, token, std::move(words));
      });
}

void lock_backend::renew(std::vector<core::renewal> leases,
                         core::handler<void(std::vector<core::renew_outcome>)> h) {
  std::vector<core::renew_outcome> out(leases.size());
  auto c = s_->client();
  if (!c || c->closed() || s_->closed || leases.empty()) {
    complete_later(s_->ex, std::move(h), asio::cancellation_slot{}, std::move(out));
    return;
  }
  request req;
  auto shortest = leases.front().lease.lock->options.lease;
  for (const auto& l : leases) {
    const auto& spec = *l.lease.lock;
    corolock::redis::detail::push_renew(req, backend_state::names(spec), l.lease.owner, l.lease.token,
                                 l.check_only ? milliseconds(0) : spec.options.lease);
    shortest = std::min(shortest, spec.options.lease);
  }
  // Do not wait longer than a third of the shortest lease for an answer: its renewal is then
  // retried (on a connection that may have come back meanwhile).
  req.opts().timeout =
      std::min(c->config().request_timeout, std::max(shortest / 3, milliseconds(1)));
  const auto sent_at = steady::now();
  c->exec(std::move(req), [out = std::move(out), h = std::move(h), sent_at,
                                  ex = s_->ex](error_code ec, response replies) mutable {
    using result = core::renew_outcome::result;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto got = !ec && i < replies.size() ? corolock::redis::detail::read_renew_reply(replies[i])
                                                 : renew_reply::unexpected;
      out[i].sent_at = sent_at;
      out[i].what = got == renew_reply::held   ? result::renewed
                    : got == renew_reply::gone ? result::lost
                                               : result::unknown; // no answer, an error reply
    }
    complete_later(ex, std::move(h), asio::cancellation_slot{}, std::move(out));
  });
}

bool lock_backend::shut(request& req) {
  auto c = s_->client();
  if (std::exchange(s_->closed, true))
    return false;
  s_->sweep_timer.cancel();
  // Everything this client holds, may have been granted, or waits for in Redis: one release each.
  std::set<std::string> seen;
  auto settle = [&](const std::shared_ptr<const lock_names>& names, const std::string& owner) {
    if (c && seen.insert(owner).second)
      corolock::redis::detail::push_release(req, *names, owner, false, nullptr, {},
                                     c->publish_verb());
  };
  for (auto& [owner, lock] : s_->held)
    settle(backend_state::names_of(lock), owner);
  std::vector<std::shared_ptr<bid_run>> running; // kept alive while asked (and listed first)
  for (auto* r = s_->running; r != nullptr; r = r->next_running())
    if (auto p = r->weak_from_this().lock())
      running.push_back(std::move(p));
  for (auto& r : running)
    if (r->may_have_reached())
      settle(r->names(), r->redis_owner());
  for (auto& [owner, u] : s_->unsettled)
    settle(u.first, owner);
  s_->held.clear();
  s_->unsettled.clear();
  for (auto& [_, ch] : s_->channels)
    ch->drop();
  s_->channels.clear();
  if (s_->acks)
    s_->acks->close();
  return true;
}

void lock_backend::close_into(request& last) { shut(last); }

void lock_backend::close(core::handler<void()> h) {
  auto c = s_->client();
  request req;
  if (!shut(req) || !c || c->closed() || req.empty()) {
    complete_later(s_->ex, std::move(h), asio::cancellation_slot{});
    return;
  }
  // Bounded by the client's request_timeout, as every request on its lock connection: give_up()
  // has nothing of its own to stop (the connection is the client's, closed by its own close()).
  c->exec(std::move(req), [h = std::move(h), ex = s_->ex](error_code, response) mutable {
    complete_later(ex, std::move(h), asio::cancellation_slot{});
  });
}

void lock_backend::give_up() {}

void lock_backend::set_hooks(hooks h) { s_->hooks = std::move(h); }

} // namespace corolock::redis::detail
