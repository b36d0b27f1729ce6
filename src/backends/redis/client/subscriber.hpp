// Private: one Redis subscription per channel per connection, shared by every local listener.
#pragma once

#include "backends/redis/client/connection_impl.hpp"
#include "backends/redis/client/listener.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace corolock::redis::detail {

class subscriber : public std::enable_shared_from_this<subscriber> {
public:
  /// `sharded` uses SSUBSCRIBE/SUNSUBSCRIBE (Redis Cluster's sharded pub/sub).
  subscriber(connection_impl& conn, bool sharded);

  /// Adds a listener; the first listener of a channel sends SUBSCRIBE, which the connection writes
  /// before any request queued on it afterwards.
  void add(const std::string& channel, listener* l);
  /// Removes a listener; the last one sends UNSUBSCRIBE.
  void remove(const std::string& channel, listener* l);
  /// The server has confirmed the channel's subscription (since the last reconnect).
  bool confirmed(const std::string& channel) const;

  void on_push(resp::value&& v, steady::time_point published_after);
  void on_connected(bool reconnect);
  /// Forgets every channel and tells every listener (the client is closing).
  void close_all();

  std::size_t channels() const noexcept { return channels_.size(); }
  std::size_t listeners(const std::string& channel) const;
  connection_impl& connection() noexcept { return conn_; }

private:
  struct channel_state {
    std::vector<listener*> listeners;
    std::uint64_t generation = 0; // tells this subscription from an earlier one of the channel
    bool confirmed = false;
  };
  void send_subscribe(const std::string& channel, std::uint64_t generation, bool restore);
  void on_subscribe_reply(const std::string& channel, std::uint64_t generation, bool restore,
                          error_code ec, const response& r);

  connection_impl& conn_;
  bool sharded_;
  std::uint64_t generations_ = 0;
  std::unordered_map<std::string, channel_state> channels_;
};

} // namespace corolock::redis::detail
