// Private: one Redis subscription per channel per client, shared by every local listener.
#pragma once

#include <corolock/redis/connection.hpp>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace corolock::detail {

/// Something that wants the messages of a channel. Callbacks run on the client's executor, from
/// the connection's reader: they must not block and should only record or wake.
class listener {
public:
  virtual ~listener() = default;
  virtual void on_message(std::string_view channel, std::string_view payload) = 0;
  /// The connection came back and the subscription was restored: messages may have been missed.
  virtual void on_resubscribed() = 0;
  /// The client closed: no message will come any more.
  virtual void on_closed() {}
};

class subscriber {
public:
  /// `sharded` uses SSUBSCRIBE/SUNSUBSCRIBE (Redis Cluster's sharded pub/sub).
  subscriber(connection& conn, bool sharded);

  /// Adds a listener; the first listener of a channel sends SUBSCRIBE. Ordered before any request
  /// queued on the same connection afterwards, so "subscribe, then try" cannot miss a message.
  void add(const std::string& channel, listener* l);
  /// Removes a listener; the last one sends UNSUBSCRIBE.
  void remove(const std::string& channel, listener* l);

  void on_push(resp::value&& v);
  void on_connected(bool reconnect);
  /// Forgets every channel and tells every listener (the client is closing).
  void close_all();

  std::size_t channels() const noexcept { return channels_.size(); }
  std::size_t listeners(const std::string& channel) const;

private:
  connection& conn_;
  bool sharded_;
  std::unordered_map<std::string, std::vector<listener*>> channels_;
};

} // namespace corolock::detail
