#include "backends/redis/grant_channel.hpp"

#include "backends/redis/bid_run.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>

namespace corolock::redis::detail {

bool parse_grant(std::string_view payload, std::uint64_t& token, std::string_view& owner) {
  if (payload.size() < 5 || payload.substr(0, 2) != "g ")
    return false;
  payload.remove_prefix(2);
  auto space = payload.find(' ');
  if (space == std::string_view::npos)
    return false;
  auto [end, ec] = std::from_chars(payload.data(), payload.data() + space, token);
  if (ec != std::errc() || end != payload.data() + space)
    return false;
  owner = payload.substr(space + 1);
  return !owner.empty();
}

std::chrono::milliseconds grant_lease_of(std::string_view owner) {
  auto colon = owner.rfind(':');
  long long ms = 0;
  if (colon != std::string_view::npos)
    std::from_chars(owner.data() + colon + 1, owner.data() + owner.size(), ms);
  return std::chrono::milliseconds(ms);
}

grant_channel::grant_channel(std::shared_ptr<backend_state> s,
                             std::shared_ptr<const lock_names> names)
    : s_(s), names_(std::move(names)), channel_(names_->channel()) {}

grant_channel::~grant_channel() { drop(); }

void grant_channel::drop() {
  if (!std::exchange(added_, false))
    return;
  confirmed_ = false;
  auto s = s_.lock();
  auto c = s ? s->client() : nullptr;
  if (c)
    c->stop_listening(channel_, this);
}

void grant_channel::join(const std::shared_ptr<bid_run>& b) { bids_.push_back(b); }

void grant_channel::leave(const bid_run& b) {
  std::erase_if(bids_, [&](const std::weak_ptr<bid_run>& w) {
    auto p = w.lock();
    return !p || p.get() == &b;
  });
  if (!bids_.empty())
    return;
  auto s = s_.lock();
  if (!s)
    return;
  if (!added_) {
    // Never subscribed (its bids found the lock free): nothing to keep for a later wait. Kept, it
    // cost every held lock a channel for the linger, and a sweep of them all.
    s->forget_channel(*this, names_->key);
    return;
  }
  idle_since_ = steady::now();
  s->channel_idle();
}

void grant_channel::subscribe(const std::shared_ptr<bid_run>& b) {
  auto s = s_.lock();
  if (!s)
    return;
  if (confirmed_) {
    asio::post(s->ex, [w = std::weak_ptr<bid_run>(b)] {
      if (auto p = w.lock())
        p->subscribed(false);
    });
    return;
  }
  if (added_)
    return;
  auto c = s->client();
  if (!c)
    return;
  added_ = true; // before listen(): what it calls back may find the channel added
  if (!c->listen(channel_, this))
    added_ = false; // not connected yet: the bid's attempts fail on a client without its lock connection
}

std::vector<std::shared_ptr<bid_run>> grant_channel::live() const {
  std::vector<std::shared_ptr<bid_run>> all;
  for (const auto& w : bids_)
    if (auto p = w.lock())
      all.push_back(std::move(p));
  return all;
}

void grant_channel::on_message(std::string_view, std::string_view payload,
                               steady::time_point published_after) {
  std::uint64_t token = 0;
  std::string_view owner;
  auto s = s_.lock();
  if (!s || !parse_grant(payload, token, owner))
    return;
  if (!s->ours(owner)) {
    // Another client's waiter has it now: if that client died, it is free after the grant lease.
    for (auto& b : live())
      b->granted_elsewhere(grant_lease_of(owner));
    return;
  }
  // One of ours: its bid's.
  for (auto& b : live())
    if (b->redis_owner() == owner) {
      b->grant_heard(token, published_after, grant_lease_of(owner));
      return;
    }
  // An owner whose bid is over. Held, the lock is its holder's; a give-up or release of it in
  // flight settles it. Otherwise its place outlived its acquisition: after a failover the new
  // master still queues an owner whose grant and release reached only the old one (writes the
  // replica never got). Nobody claims that grant: given back now (release.lua is idempotent per
  // owner), not kept grant_lease for nobody — once per stale place.
  std::string done(owner);
  if (!s->held.contains(done) && !s->unsettled.contains(done))
    s->give_up(names_, std::move(done));
}

void grant_channel::on_subscribed(bool restored) {
  confirmed_ = true;
  for (auto& b : live())
    b->subscribed(restored);
}

void grant_channel::on_refused(error_code ec, std::string_view text) {
  added_ = confirmed_ = false; // the subscriber forgot us
  if (auto s = s_.lock(); s && !text.empty())
    if (auto c = s->client())
      c->note_server_error(std::string(text));
  for (auto& b : live())
    b->refused(ec, text);
}

void grant_channel::on_closed() { added_ = confirmed_ = false; }

} // namespace corolock::redis::detail
