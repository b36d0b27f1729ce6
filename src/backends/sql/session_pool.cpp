#include "backends/sql/session_pool.hpp"

#include <algorithm>
#include <utility>

namespace corolock::sql::detail {

using kind = sql_session_pool::action::kind;

sql_session_pool::sql_session_pool(std::size_t max_sessions, std::size_t max_idle)
    : max_sessions_(std::max<std::size_t>(max_sessions, 1)), max_idle_(max_idle) {}

sql_session_pool::session* sql_session_pool::find(session_id s) {
  const auto it = sessions_.find(s);
  return it == sessions_.end() ? nullptr : &it->second;
}

const sql_session_pool::session* sql_session_pool::find(session_id s) const {
  const auto it = sessions_.find(s);
  return it == sessions_.end() ? nullptr : &it->second;
}

// Nothing runs on the session and nothing is queued there: only then may it start a bid's wait
// (a blocking statement behind a one look would hold that look's grant hostage to the wait) or
// be closed (a queued statement would fail with not_connected).
bool sql_session_pool::idle(const session& s) { return !s.running && s.queued == 0 && s.trying.empty(); }

bool sql_session_pool::spare(const session& s) { return s.open && !s.blocking && s.held.empty() && idle(s); }

// A holding session that takes a one look of `key`: not all it holds being released, not holding
// or looking at the key already, nothing queued (the look would wait behind it).
bool sql_session_pool::can_share(const session& s, const std::string& key) {
  return s.open && !s.blocking && s.held.size() > s.releasing && !s.held.contains(key) && !s.trying.contains(key) &&
         s.queued == 0;
}

// Given to a bid's wait: no longer a spare (a later keep is told again).
void sql_session_pool::give_wait(session& s) {
  s.blocking = true;
  s.kept = false;
}

// ---- bids ----

sql_session_pool::actions sql_session_pool::bid(bid_id b, const std::string& key) {
  actions out;
  for (auto& [id, s] : sessions_)
    if (can_share(s, key)) {
      s.trying.insert(key); // a reader's and a writer's bid of one lock must not meet here
      out.push_back({kind::look, b, id});
      return out;
    }
  need_session({b, key, false}, out);
  return out;
}

sql_session_pool::actions sql_session_pool::taken(bid_id b, const std::string& key) {
  actions out;
  need_session({b, key, true}, out);
  return out;
}

void sql_session_pool::need_session(const waiter& w, actions& out) {
  for (auto& [id, s] : sessions_)
    if (spare(s)) {
      give_wait(s);
      out.push_back({kind::wait, w.bid, id});
      return;
    }
  // A session releasing all it holds is spare within a round trip, sooner than a new one: e.g. a
  // waiting session's grant answered before the former holder's unlock, and the next local
  // waiter's bid comes then. The bid waits for it (freed() serves it).
  std::size_t soon = 0;
  for (const auto& [id, s] : sessions_)
    soon += s.open && !s.blocking && !s.held.empty() && s.releasing == s.held.size() ? 1 : 0;
  if (sessions_.size() >= max_sessions_ || queue_.size() < soon) {
    queue_.push_back(w);
    out.push_back({kind::queue, w.bid, 0});
    return;
  }
  const session_id id = next_session_++;
  sessions_[id].opening_for = w.bid;
  out.push_back({kind::open, w.bid, id});
}

void sql_session_pool::withdrawn(bid_id b) {
  std::erase_if(queue_, [b](const waiter& w) { return w.bid == b; });
  for (auto& [id, s] : sessions_)
    if (s.opening_for == b)
      s.opening_for.reset();
}

// ---- sessions ----

sql_session_pool::actions sql_session_pool::opened(session_id id) {
  auto* s = find(id);
  if (s == nullptr)
    return {};
  s->open = true;
  if (const auto b = std::exchange(s->opening_for, std::nullopt)) {
    give_wait(*s);
    return {{kind::wait, *b, id}};
  }
  return freed(id);
}

sql_session_pool::actions sql_session_pool::ended(session_id id) {
  actions out;
  if (sessions_.erase(id) == 0)
    return out;
  // A place in the pool was freed: each queued bid looks again, once. (A loop until none waits
  // spun forever when a bid went back to wait for a releasing session:
  // a_session_lost_while_a_bid_waits_for_a_releasing_one_is_no_spin.)
  if (!queue_.empty() && sessions_.size() < max_sessions_ && !closing_)
    reconsider(out);
  return out;
}

void sql_session_pool::reconsider(actions& out) {
  const auto again = std::exchange(queue_, {});
  for (const auto& w : again)
    need_session(w, out);
}

void sql_session_pool::statement_queued(session_id id) {
  if (auto* s = find(id))
    ++s->queued;
}

void sql_session_pool::statement_started(session_id id) {
  if (auto* s = find(id)) {
    --s->queued;
    s->running = true;
  }
}

void sql_session_pool::statement_answered(session_id id) {
  if (auto* s = find(id))
    s->running = false;
}

// A session whose last statement answered: free (nothing held), or holding and able to take one
// more lock by a one look.
sql_session_pool::actions sql_session_pool::settled(session_id id) {
  const auto* s = find(id);
  if (s == nullptr || s->blocking || !idle(*s))
    return {};
  if (s->held.empty())
    return freed(id);
  actions out;
  serve(id, out);
  return out;
}

// A holding session offers a one look to the first queued bid that has not been found taken
// (the pool was full when it came): uncontended locks beyond max_sessions share the sessions that
// hold, as uncontended locks taken one after another do. One look at a time per session; the
// next when its answer came (settled).
void sql_session_pool::serve(session_id id, actions& out) {
  auto& s = sessions_.at(id);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->found_taken || !can_share(s, it->key))
      continue;
    s.trying.insert(it->key);
    out.push_back({kind::look, it->bid, id});
    queue_.erase(it);
    return;
  }
}

void sql_session_pool::looking(session_id id, const std::string& key) {
  if (auto* s = find(id))
    s->trying.insert(key);
}

void sql_session_pool::looked(session_id id, const std::string& key) {
  if (auto* s = find(id))
    s->trying.erase(key);
}

void sql_session_pool::waiting(session_id id) {
  if (auto* s = find(id))
    give_wait(*s);
}

void sql_session_pool::wait_ended(session_id id) {
  if (auto* s = find(id))
    s->blocking = false;
}

void sql_session_pool::held(session_id id, const std::string& key, bool shared) {
  if (auto* s = find(id)) {
    s->held[key] = shared;
    s->kept = false;
  }
}

void sql_session_pool::unheld(session_id id, const std::string& key) {
  if (auto* s = find(id))
    s->held.erase(key);
}

void sql_session_pool::unheld_all(session_id id) {
  if (auto* s = find(id))
    s->held.clear();
}

// A session may have become free: serve the first bid queued for one, else keep or close it.
sql_session_pool::actions sql_session_pool::freed(session_id id) {
  auto* s = find(id);
  if (s == nullptr || !spare(*s))
    return {};
  if (closing_)
    return {{kind::close, 0, id}};
  if (!queue_.empty()) {
    const auto w = queue_.front();
    queue_.pop_front();
    give_wait(*s);
    return {{kind::wait, w.bid, id}};
  }
  const auto spares = std::count_if(sessions_.begin(), sessions_.end(), [](const auto& e) { return spare(e.second); });
  if (static_cast<std::size_t>(spares) > max_idle_)
    return {{kind::close, 0, id}};
  if (std::exchange(s->kept, true))
    return {}; // said already (a session is freed, then settled)
  return {{kind::keep, 0, id}};
}

void sql_session_pool::release_sent(session_id id) {
  if (auto* s = find(id))
    ++s->releasing;
}

sql_session_pool::actions sql_session_pool::released(session_id id, const std::string& key, bool unlocked) {
  auto* s = find(id);
  if (s == nullptr)
    return {};
  --s->releasing;
  if (unlocked)
    s->held.erase(key);
  auto out = freed(id);
  // Not freed after all (a failed unlock, a lock taken here meanwhile): the bids that counted on
  // it as a spare about to be free look again.
  if (const auto* still = find(id); still != nullptr && !still->held.empty())
    reconsider(out);
  return out;
}

void sql_session_pool::close() {
  closing_ = true;
  queue_.clear();
}

// ---- what the driver asks ----

bool sql_session_pool::holds_any(session_id id) const {
  const auto* s = find(id);
  return s != nullptr && !s->held.empty();
}

bool sql_session_pool::holds(session_id id, const std::string& key) const {
  const auto* s = find(id);
  return s != nullptr && s->held.contains(key);
}

bool sql_session_pool::holding(session_id id) const {
  const auto* s = find(id);
  return s != nullptr && s->open && !s->blocking && !s->held.empty();
}

} // namespace corolock::sql::detail
