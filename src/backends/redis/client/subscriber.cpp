#include "backends/redis/client/subscriber.hpp"

#include <corolock/error.hpp>

#include <algorithm>

namespace corolock::redis::detail {

subscriber::subscriber(connection_impl& conn, bool sharded) : conn_(conn), sharded_(sharded) {}

void subscriber::add(const std::string& channel, listener* l) {
  auto [it, fresh] = channels_.try_emplace(channel);
  it->second.listeners.push_back(l);
  if (fresh) {
    it->second.generation = ++generations_;
    send_subscribe(channel, it->second.generation, false);
  }
}

void subscriber::send_subscribe(const std::string& channel, std::uint64_t generation,
                                bool restore) {
  request req;
  req.push(sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE", channel);
  auto on_reply = [weak = weak_from_this(), channel, generation, restore](error_code ec,
                                                                          response r) {
    if (auto self = weak.lock())
      self->on_subscribe_reply(channel, generation, restore, ec, r);
  };
  // Restoring after a reconnect goes ahead of the requests queued while disconnected.
  conn_.exec(std::move(req), std::move(on_reply), restore);
}

void subscriber::on_subscribe_reply(const std::string& channel, std::uint64_t generation,
                                    bool restore, error_code ec, const response& r) {
  auto it = channels_.find(channel);
  if (it == channels_.end() || it->second.generation != generation)
    return; // unsubscribed (and maybe subscribed again) meanwhile: a later reply decides
  if (ec == error::connection_lost || ec == error::not_connected || ec == error::closed)
    return; // the reconnect subscribes again (on_connected); close tells listeners itself
  std::string text;
  if (!ec && !r.empty() && r[0].is_error()) {
    ec = error::redis_error;
    text = r[0].data;
  }
  if (ec) {
    // Refused (NOPERM ...) or not answered in time: nobody listens to this channel any more.
    auto listeners = std::move(it->second.listeners);
    channels_.erase(it);
    if (ec == error::timeout) { // it may still be executed: make sure it ends
      request req;
      req.push(sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", channel);
      conn_.send(std::move(req));
    }
    for (auto* l : listeners)
      l->on_refused(ec, text);
    return;
  }
  it->second.confirmed = true;
  auto listeners = it->second.listeners; // a callback may add or remove listeners
  for (auto* l : listeners)
    l->on_subscribed(restore);
}

void subscriber::remove(const std::string& channel, listener* l) {
  auto it = channels_.find(channel);
  if (it == channels_.end())
    return;
  auto& ls = it->second.listeners;
  ls.erase(std::remove(ls.begin(), ls.end(), l), ls.end());
  if (ls.empty()) {
    channels_.erase(it);
    request req;
    req.push(sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", channel);
    conn_.send(std::move(req));
  }
}

bool subscriber::confirmed(const std::string& channel) const {
  auto it = channels_.find(channel);
  return it != channels_.end() && it->second.confirmed;
}

std::size_t subscriber::listeners(const std::string& channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.listeners.size();
}

void subscriber::on_push(resp::value&& v, steady::time_point published_after) {
  // ["message", channel, payload] or ["smessage", channel, payload]; unsolicited notices ignored.
  if (v.children.size() != 3 || !v.children[0].is_string())
    return;
  const std::string& kind = v.children[0].data;
  if (kind != "message" && kind != "smessage")
    return;
  auto it = channels_.find(v.children[1].data);
  if (it == channels_.end())
    return;
  auto snapshot = it->second.listeners; // a callback may add or remove listeners
  for (auto* l : snapshot)
    l->on_message(v.children[1].data, v.children[2].data, published_after);
}

void subscriber::on_connected(bool reconnect) {
  if (!reconnect)
    return;
  // Restore every subscription ahead of the requests queued while disconnected; each listener
  // hears on_subscribed(true) once its channel is confirmed again, and must look again then.
  for (auto& [name, state] : channels_) {
    state.confirmed = false;
    state.generation = ++generations_;
    send_subscribe(name, state.generation, true);
  }
}

void subscriber::close_all() {
  auto channels = std::exchange(channels_, {});
  for (auto& [_, state] : channels)
    for (auto* l : state.listeners)
      l->on_closed();
}

} // namespace corolock::redis::detail
