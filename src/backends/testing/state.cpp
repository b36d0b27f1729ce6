#include "backends/testing/state.hpp"

#include <boost/asio/error.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace corolock::testing::detail {

std::int64_t lock_state::used() const {
  std::int64_t n = 0;
  for (const auto& h : holders)
    n += h.permits;
  return n;
}

// A manual clock starts far from zero so that "a moment before" never underflows.
state::state(asio::any_io_executor ex, store_options o)
    : options(o), ex_(std::move(ex)), manual_now_(steady::time_point{} + std::chrono::hours(24)) {
  if (options.clock == clock_mode::steady)
    steady_timer_.emplace(ex_);
}

state::~state() = default;

steady::time_point state::now() const {
  return options.clock == clock_mode::manual ? manual_now_ : steady::now();
}

std::shared_ptr<bool> state::at(steady::time_point t, std::function<void()> fn) {
  auto cancelled = std::make_shared<bool>(false);
  timers_.emplace(t, timer_entry{std::move(fn), cancelled});
  if (options.clock == clock_mode::steady && t < steady_armed_)
    rearm_steady();
  return cancelled;
}

bool state::run_one_due(steady::time_point limit) {
  if (timers_.empty() || timers_.begin()->first > limit)
    return false;
  auto node = timers_.extract(timers_.begin());
  if (options.clock == clock_mode::manual)
    manual_now_ = std::max(manual_now_, node.key());
  if (!*node.mapped().cancelled)
    node.mapped().fn();
  return true;
}

void state::advance(std::chrono::milliseconds d) {
  if (options.clock != clock_mode::manual)
    return;
  auto target = manual_now_ + d;
  while (run_one_due(target)) {
  }
  manual_now_ = target;
}

std::optional<steady::time_point> state::next_due() const {
  for (const auto& [t, e] : timers_)
    if (!*e.cancelled)
      return t;
  return std::nullopt;
}

std::shared_ptr<void> state::cancel_on_last_copy(std::shared_ptr<bool> cancelled) {
  return std::shared_ptr<void>(nullptr, [cancelled = std::move(cancelled),
                                         w = weak_from_this()](void*) {
    *cancelled = true;
    if (auto self = w.lock())
      self->prune();
  });
}

void state::prune() {
  if (options.clock != clock_mode::steady)
    return; // virtual time: the test moves the clock; a cancelled timer costs nothing there
  if (timers_.empty() || !*timers_.begin()->second.cancelled)
    return;
  rearm_steady();
}

void state::rearm_steady() {
  while (!timers_.empty() && *timers_.begin()->second.cancelled)
    timers_.erase(timers_.begin());
  if (timers_.empty()) {
    // Nothing live to wait for: no work left on the io_context for it.
    if (steady_armed_ != steady::time_point::max()) {
      steady_armed_ = steady::time_point::max();
      steady_timer_->cancel();
    }
    return;
  }
  if (timers_.begin()->first == steady_armed_)
    return; // armed for it already
  steady_armed_ = timers_.begin()->first;
  steady_timer_->expires_at(steady_armed_);
  steady_timer_->async_wait([w = weak_from_this()](error_code ec) {
    auto self = w.lock();
    if (ec == asio::error::operation_aborted || !self)
      return;
    self->steady_armed_ = steady::time_point::max();
    self->fire_due_steady();
  });
}

void state::fire_due_steady() {
  while (run_one_due(steady::now())) {
  }
  rearm_steady();
}

// --- connections and sessions -----------------------------------------------------------------

std::uint64_t state::connect(sink& s) {
  auto id = next_client_++;
  clients_[id] = &s;
  return id;
}

void state::disconnect(std::uint64_t client) {
  clients_.erase(client);
  if (options.leases == lease_mode::session) {
    if (auto s = session_of(client))
      end_session(s, false);
  }
  // A dead process's place in a queue goes (Redis: its waiter entry times out).
  purge([&](const entry& e) { return e.client == client && e.token == 0; });
}

std::uint64_t state::session_of(std::uint64_t client) const {
  for (const auto& [id, s] : sessions_)
    if (s.client == client)
      return id;
  return 0;
}

void state::links_changed() {
  auto clients = clients_; // a client may disconnect from its handler
  for (auto& [id, s] : clients)
    if (clients_.contains(id))
      s->link_changed();
}

std::uint64_t state::open_session(std::uint64_t client) {
  auto id = next_session_++;
  sessions_[id] = session{.client = client, .heard = now(), .watch = {}};
  watch_session(id);
  return id;
}

void state::watch_session(std::uint64_t id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end())
    return;
  it->second.watch = cancel_on_last_copy(at(it->second.heard + options.session_timeout, [this, id] {
    auto s = sessions_.find(id);
    if (s == sessions_.end())
      return;
    if (s->second.heard + options.session_timeout <= now())
      end_session(id, true);
    else
      watch_session(id);
  }));
}

bool state::ping(std::uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end())
    return false;
  it->second.heard = now();
  return true;
}

void state::end_session(std::uint64_t id, bool tell) {
  auto it = sessions_.find(id);
  if (it == sessions_.end())
    return;
  auto client = it->second.client;
  sessions_.erase(it);
  purge([&](const entry& e) { return e.session == id; });
  if (tell) {
    if (auto c = clients_.find(client); c != clients_.end())
      c->second->session_ended(id);
  }
}

// --- lock operations --------------------------------------------------------------------------

void state::grant(const lock_key& k, lock_state& l, entry e) {
  e.token = ++fences_[k];
  e.since = now();
  if (options.leases == lease_mode::per_lock) {
    e.expires = e.since + e.lease;
    watch_expiry(k, e);
  }
  l.holders.push_back(std::move(e));
}

state::bid_outcome state::bid(const lock_key& k, std::int64_t capacity, entry e, bool wait) {
  auto& l = locks_[k];
  // A count set at run time, else the latest bidder's view (as a Redis semaphore's default).
  capacity = count(k, capacity);
  l.capacity = capacity;
  bid_outcome out;
  if (auto h = std::find_if(l.holders.begin(), l.holders.end(),
                            [&](const entry& x) { return x.owner == e.owner; });
      h != l.holders.end()) {
    out.result = bid_result::granted; // the same bid again (a reply was lost): same grant
    out.token = h->token;
    out.from = h->since;
    return out;
  }
  if (std::any_of(l.queue.begin(), l.queue.end(),
                  [&](const entry& x) { return x.owner == e.owner; }))
    return out; // keeps its place
  if (e.permits > capacity || e.permits < 1) {
    out.result = bid_result::too_many;
  } else if (l.queue.empty() && l.used() + e.permits <= capacity) {
    grant(k, l, std::move(e));
    out.result = bid_result::granted;
    out.token = l.holders.back().token;
    out.from = l.holders.back().since;
    return out;
  } else if (!wait) {
    out.result = bid_result::taken;
  } else {
    l.queue.push_back(std::move(e));
    return out;
  }
  forget_if_empty(k);
  return out;
}

void state::grant_waiters(const lock_key& k) {
  auto it = locks_.find(k);
  if (it == locks_.end())
    return;
  auto& l = it->second;
  // FIFO: the first bid is served first; one that does not fit yet blocks those behind it.
  while (!l.queue.empty() && l.used() + l.queue.front().permits <= l.capacity) {
    auto e = std::move(l.queue.front());
    l.queue.pop_front();
    grant(k, l, std::move(e));
    const auto& h = l.holders.back();
    if (auto c = clients_.find(h.client); c != clients_.end())
      c->second->grant_message(k, h.owner, h.token, h.since, h.lease);
  }
  forget_if_empty(k);
}

std::int64_t state::count(const lock_key& k, std::int64_t fallback) const {
  auto it = counts_.find(k);
  return it == counts_.end() ? fallback : it->second;
}

void state::set_count(const lock_key& k, std::int64_t n) {
  counts_[k] = n;
  if (auto it = locks_.find(k); it != locks_.end()) {
    it->second.capacity = n;
    grant_waiters(k);
  }
}

state::usage state::usage_of(const lock_key& k) const {
  usage u;
  if (auto it = locks_.find(k); it != locks_.end()) {
    u.used = it->second.used();
    u.waiting = static_cast<std::int64_t>(it->second.queue.size());
  }
  return u;
}

void state::forget_if_empty(const lock_key& k) {
  auto it = locks_.find(k);
  if (it != locks_.end() && it->second.holders.empty() && it->second.queue.empty())
    locks_.erase(it);
}

void state::watch_expiry(const lock_key& k, entry& holder) {
  holder.expiry_watch = cancel_on_last_copy(at(holder.expires, [this, k, owner = holder.owner] {
    auto it = locks_.find(k);
    if (it == locks_.end())
      return;
    auto& hs = it->second.holders;
    auto h = std::find_if(hs.begin(), hs.end(), [&](const entry& x) { return x.owner == owner; });
    if (h == hs.end() || h->expires > now())
      return; // released, or renewed (a later timer watches it)
    hs.erase(h);
    grant_waiters(k);
    holder_left(k);
  }));
}

void state::remove(const lock_key& k, const std::string& owner) {
  auto it = locks_.find(k);
  if (it == locks_.end())
    return;
  auto& l = it->second;
  const auto held = std::erase_if(l.holders, [&](const entry& x) { return x.owner == owner; });
  std::erase_if(l.queue, [&](const entry& x) { return x.owner == owner; });
  grant_waiters(k);
  if (held > 0)
    holder_left(k);
}

bool state::release(const lock_key& k, const std::string& owner) {
  auto it = locks_.find(k);
  if (it == locks_.end())
    return false;
  auto n = std::erase_if(it->second.holders, [&](const entry& x) { return x.owner == owner; });
  grant_waiters(k);
  if (n > 0)
    holder_left(k);
  return n > 0;
}

bool state::renew(const lock_key& k, const std::string& owner, std::chrono::milliseconds lease,
                  bool check_only) {
  auto it = locks_.find(k);
  if (it == locks_.end())
    return false;
  for (auto& h : it->second.holders) {
    if (h.owner != owner)
      continue;
    if (!check_only && options.leases == lease_mode::per_lock) {
      h.expires = now() + lease;
      watch_expiry(k, h);
    }
    return true;
  }
  return false;
}

void state::drop_all(std::uint64_t client) {
  purge([&](const entry& e) { return e.client == client; });
}

void state::purge(const std::function<bool(const entry&)>& gone) {
  std::vector<lock_key> touched, left;
  for (auto& [k, l] : locks_) {
    const auto held = std::erase_if(l.holders, gone);
    if (held + std::erase_if(l.queue, gone) > 0)
      touched.push_back(k);
    if (held > 0)
      left.push_back(k);
  }
  for (const auto& k : touched)
    grant_waiters(k);
  for (const auto& k : left)
    holder_left(k);
}

void state::holder_left(const lock_key& k) {
  for (auto& [id, s] : clients_)
    s->lock_released(k);
}

// --- introspection ----------------------------------------------------------------------------

namespace {
holder_info info(const entry& e) { return {e.owner, e.token, e.permits, e.shared}; }
} // namespace

std::vector<holder_info> state::list(const std::string& prefix, const std::string& name,
                                     bool holders) const {
  std::vector<holder_info> out;
  for (auto it = locks_.lower_bound(lock_key{prefix, name, 0});
       it != locks_.end() && it->first.prefix == prefix && it->first.name == name; ++it) {
    if (holders)
      std::transform(it->second.holders.begin(), it->second.holders.end(),
                     std::back_inserter(out), info);
    else
      std::transform(it->second.queue.begin(), it->second.queue.end(), std::back_inserter(out),
                     info);
  }
  return out;
}

std::uint64_t state::token(const std::string& prefix, const std::string& name) const {
  std::uint64_t t = 0;
  for (auto it = fences_.lower_bound(lock_key{prefix, name, 0});
       it != fences_.end() && it->first.prefix == prefix && it->first.name == name; ++it)
    t = std::max(t, it->second);
  return t;
}

std::uint64_t state::holder_token(const lock_key& k) const {
  auto it = locks_.find(k);
  return it == locks_.end() || it->second.holders.empty() ? 0 : it->second.holders.front().token;
}

bool state::empty() const { return locks_.empty() && marks_.empty(); }

void state::add_mark(const std::string& prefix, const std::string& name, std::uint32_t index) {
  marks_[{prefix, name}].insert(index);
}

std::vector<std::uint32_t> state::marks(const std::string& prefix, const std::string& name) const {
  auto it = marks_.find({prefix, name});
  if (it == marks_.end())
    return {};
  return {it->second.begin(), it->second.end()};
}

core::lock_note state::note(const std::string& prefix, const std::string& name,
                            const std::optional<core::lock_note>& write) {
  auto& stored = notes_[{prefix, name}];
  if (write && write->term >= stored.term) {
    stored = *write;
    for (auto& [id, s] : clients_) // told as a server tells of a key's change
      s->note_written(prefix, name);
  }
  return stored;
}

void state::clear_marks(const std::string& prefix, const std::string& name) {
  marks_.erase({prefix, name});
}

core::bucket_answer state::take_tokens(const std::string& prefix, const std::string& name,
                                       const core::bucket_take& what) {
  const auto t = now();
  auto [it, fresh] = buckets_.try_emplace({prefix, name}, bucket{what.burst, t});
  auto& b = it->second;
  if (!fresh && t > b.at) {
    const double elapsed = std::chrono::duration<double>(t - b.at).count();
    b.tokens = std::min(what.burst, b.tokens + elapsed * what.rate);
  }
  b.at = std::max(b.at, t);
  core::bucket_answer out;
  const auto need = static_cast<double>(what.count);
  // How long until `need` tokens are in the bucket (0: there now).
  const auto due = [&](double have) {
    return have >= need ? std::chrono::microseconds(0)
                        : std::chrono::microseconds(std::max<std::int64_t>(
                              1, static_cast<std::int64_t>(std::ceil((need - have) * 1e6 / what.rate))));
  };
  out.wait = due(b.tokens);
  if (out.wait <= what.max_wait) { // there, or due within the caller's wait: reserved
    b.tokens -= need;
    out.taken = true;
  }
  out.left = b.tokens;
  return out;
}

} // namespace corolock::testing::detail
