#include "lock/hand_over.hpp"

#include "lock/lock_service.hpp"
#include "lock/scripts.hpp"

#include <corolock/error.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

namespace corolock::detail {

namespace {

/// The head to hand the lock to, if there is one that can take it now.
waiter* receiver(client_impl& c, const lock_names& names) {
  if (!c.locks || c.closed)
    return nullptr;
  wait_queue* q = c.locks->find_queue(names.key);
  waiter* w = q ? q->head() : nullptr;
  if (!w || w->attempting || w->offer || !w->owner)
    return nullptr;
  if (q->hand_overs_in_row >= max_hand_overs_in_row) {
    q->hand_overs_in_row = 0; // this one goes through Redis, for the other processes' sake
    return nullptr;
  }
  ++q->hand_overs_in_row;
  return w;
}

void wake(waiter* w, bool must_try) {
  if (!w)
    return;
  w->must_try = must_try;
  w->cv.cancel();
}

} // namespace

asio::awaitable<error_code> release_or_hand_over(std::shared_ptr<client_impl> c,
                                                 std::shared_ptr<lease> l) {
  // The next caller of this process may be a few posts away from its queue (it was promoted when
  // this lease's acquisition ended, and its coroutine is starting): give it those.
  for (int i = 0; i < 3 && !c->closed && c->locks && c->locks->contender_on_its_way(l->names->key); ++i)
    co_await asio::post(c->ex, asio::use_awaitable);
  waiter* w = receiver(*c, *l->names);
  if (!w)
    co_return co_await release_in_redis(c, l->names, l->owner, l->token);

  auto offer = std::make_shared<hand_over_offer>();
  offer->to = w;
  w->offer = offer;
  const std::string to_owner = *w->owner;
  const std::string lease_ms = std::to_string(w->lease.count());
  error_code ec = error::connection_lost;
  std::uint64_t token = 0;
  for (int attempt = 0; attempt < 3 && ec == error::connection_lost; ++attempt) {
    request req;
    req.push_script(hand_over_script(), {l->names->key, l->names->fence},
                    {l->owner, to_owner, lease_ms});
    if (attempt == 0) // a retry may find the first try's lease: count from the first try
      offer->sent_at = std::chrono::steady_clock::now();
    // Like a release, it runs to the end whatever happens to the caller.
    auto [xec, replies] = co_await c->main.exec(std::move(req), to_the_end());
    ec = xec;
    if (ec)
      continue; // connection_lost: the script is idempotent, ask again
    std::int64_t given = 0;
    ec = integer_reply(*c, replies.at(0), given);
    if (!ec && given <= 0)
      ec = error::not_owner; // our lease was lost: the waiter must try for itself
    else if (!ec)
      token = static_cast<std::uint64_t>(given);
  }

  if (token != 0) {
    offer->st = hand_over_offer::state::granted;
    offer->token = token;
    if (offer->to)
      wake(offer->to, false);
    else // the waiter gave up meanwhile: the lock is in its name, give it back
      release_detached(c, l->names, to_owner, token);
    co_return error_code{};
  }
  offer->st = hand_over_offer::state::refused;
  if (ec != error::not_owner && ec != error::redis_error && !c->closed) {
    // Outcome unknown: the lock may be ours still, or the waiter's. Ours is released (owner-checked);
    // a waiter still there resolves its part by trying (the acquire script gives an owner that holds
    // its token back); if it is gone, its part is released too.
    release_detached(c, l->names, l->owner, l->token);
    if (!offer->to)
      release_detached(c, l->names, to_owner, 0);
  }
  wake(offer->to, true);
  co_return ec;
}

void release_or_hand_over_detached(const std::shared_ptr<client_impl>& c,
                                   std::shared_ptr<lease> l) {
  asio::co_spawn(c->ex, release_or_hand_over(c, std::move(l)), asio::detached);
}

} // namespace corolock::detail
