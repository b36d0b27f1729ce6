#include "redis/subscriber.hpp"

#include <algorithm>

namespace corolock::detail {

subscriber::subscriber(connection& conn, bool sharded) : conn_(conn), sharded_(sharded) {}

void subscriber::add(const std::string& channel, listener* l) {
  auto [it, fresh] = channels_.try_emplace(channel);
  it->second.push_back(l);
  if (fresh) {
    request req;
    req.push(sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE", channel);
    conn_.send(std::move(req));
  }
}

void subscriber::remove(const std::string& channel, listener* l) {
  auto it = channels_.find(channel);
  if (it == channels_.end())
    return;
  auto& ls = it->second;
  ls.erase(std::remove(ls.begin(), ls.end(), l), ls.end());
  if (ls.empty()) {
    channels_.erase(it);
    request req;
    req.push(sharded_ ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", channel);
    conn_.send(std::move(req));
  }
}

std::size_t subscriber::listeners(const std::string& channel) const {
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.size();
}

void subscriber::on_push(resp::value&& v) {
  // ["message", channel, payload] or ["smessage", channel, payload]; confirmations are ignored.
  if (v.children.size() != 3 || !v.children[0].is_string())
    return;
  const std::string& kind = v.children[0].data;
  if (kind != "message" && kind != "smessage")
    return;
  auto it = channels_.find(v.children[1].data);
  if (it == channels_.end())
    return;
  // A callback may add or remove listeners: walk a snapshot.
  auto snapshot = it->second;
  for (auto* l : snapshot)
    l->on_message(v.children[1].data, v.children[2].data);
}

void subscriber::on_connected(bool reconnect) {
  if (!reconnect || channels_.empty())
    return;
  // Restore every subscription ahead of the requests queued while disconnected, then tell the
  // listeners: a message published meanwhile is lost, so waiters must look again.
  std::vector<std::string> names;
  names.reserve(channels_.size());
  for (const auto& [name, _] : channels_)
    names.push_back(name);
  request req;
  req.push_range(sharded_ ? "SSUBSCRIBE" : "SUBSCRIBE", names);
  conn_.exec_first(std::move(req), {});
  std::vector<listener*> all;
  for (const auto& [_, ls] : channels_)
    all.insert(all.end(), ls.begin(), ls.end());
  for (auto* l : all)
    l->on_resubscribed();
}

void subscriber::close_all() {
  auto channels = std::move(channels_);
  channels_.clear();
  for (auto& [_, ls] : channels)
    for (auto* l : ls)
      l->on_closed();
}

} // namespace corolock::detail
