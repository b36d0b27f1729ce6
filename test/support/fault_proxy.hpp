// A fault-injecting TCP proxy for tests: put it between a client and a real redis-server to make the
// link stall, slow down, break up writes or die, on command.
//
//   corolock::test::redis_server server;
//   corolock::test::fault_proxy proxy(server.port());
//   client c(ex, proxy.url());                    // the client talks to Redis through the proxy
//   proxy.blackhole(direction::server_to_client, true);   // replies stop arriving; nothing closes
//   ...
//   proxy.blackhole(direction::server_to_client, false);  // the held replies arrive, in order
//
// - Listens on 127.0.0.1 on a port the kernel picks; every accepted connection gets its own
//   connection to 127.0.0.1:<target port>. If that connection cannot be made (server down), the
//   accepted one is reset.
// - Runs its own io_context on its own thread, so it serves tests that run a coroutine on their
//   io_context as well as tests that block (blocking_client). Every method is thread-safe: it is
//   applied on the proxy's thread and has taken effect when it returns.
// - Faults are per direction and apply to current and future connections alike. A connection is
//   current once the proxy has accepted it (stats().accepted counts it), a moment after the client's
//   connect() returned: a test that needs it current waits for the count. Data is read as it
//   comes and queued per connection and direction; the faults decide when it is written out. While
//   a direction holds more than 16 MiB the proxy stops reading it, as a full TCP window would.
// - A reset is a real RST (SO_LINGER 0, then close) on both of the connection's sockets; a side that
//   closes gracefully is passed on as a half-close (shutdown(SHUT_WR)) once its data is delivered;
//   a side that resets or fails makes the proxy reset the other.
// - The header does not include Asio (pimpl); the destructor closes everything and joins the thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

namespace corolock::test {

/// Which way the bytes go. `both` applies a control to the two directions.
enum class direction { client_to_server = 1, server_to_client = 2, both = 3 };

/// A snapshot of the proxy's counters. A write is counted once the proxy's thread has seen it
/// complete, which may be a moment after the peer could read the bytes.
struct fault_proxy_stats {
  std::uint64_t accepted = 0;  ///< connections accepted, refused ones included
  std::uint64_t refused = 0;   ///< connections reset at once because of refuse(true)
  std::uint64_t live = 0;      ///< connections open now
  std::uint64_t resets = 0;    ///< connections the proxy reset (faults, failures, refusals)
  std::uint64_t bytes_client_to_server = 0;  ///< bytes written to servers
  std::uint64_t bytes_server_to_client = 0;  ///< bytes written to clients
  std::uint64_t held_client_to_server = 0;   ///< bytes read and not yet written, now
  std::uint64_t held_server_to_client = 0;
};

class fault_proxy {
public:
  using duration = std::chrono::steady_clock::duration;
  /// For drop_after: never reset (the default).
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  /// Starts listening at once; forwards to 127.0.0.1:target_port. Throws (a std::runtime_error) if
  /// it cannot listen.
  explicit fault_proxy(std::uint16_t target_port);
  /// Resets every connection, stops listening and joins the proxy's thread.
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  [[nodiscard]] std::uint16_t port() const noexcept;
  /// "redis://127.0.0.1:PORT", or "redis://:PASSWORD@127.0.0.1:PORT" (not escaped).
  [[nodiscard]] std::string url(std::string_view password = {}) const;

  /// Every chunk is written `d` after it was read (0: off). Order is kept, so a chunk never
  /// overtakes one read before it. Chunks already waiting follow the new delay.
  void delay(direction dir, duration d);

  /// On: nothing is written that way while both sockets stay open; what is read meanwhile is held.
  /// Off: the held data is delivered in order (TCP retransmitting after a partition heals).
  void blackhole(direction dir, bool on);

  /// Throws away the data held that way (not yet written), e.g. before lifting a blackhole.
  void discard(direction dir);

  /// Each connection is reset once it has written `bytes` more bytes that way: current connections
  /// count from now, new ones from their start. A write is cut at the limit, so exactly `bytes` get
  /// through. With 0, current connections are reset now and new ones as soon as they are accepted.
  /// `never` turns it off.
  void drop_after(direction dir, std::uint64_t bytes);

  /// Partial writes: every chunk is written in pieces of at most `max_bytes` (0: off), with `gap`
  /// between pieces, so the peer reads a reply a few bytes at a time.
  void fragment(direction dir, std::size_t max_bytes, duration gap = duration::zero());

  /// Resets every current connection (RST to the client and to the server).
  void reset_all();

  /// On: new connections are accepted and reset at once, as if nothing listened behind the proxy.
  /// The listener stays open (so the port cannot be lost to another process); a client sees its
  /// connect succeed and the first read or write fail with a reset. Current connections are kept.
  void refuse(bool on);

  /// Turns every fault off: no delay, no blackhole (held data is delivered), no drop_after, no
  /// fragmenting, no refusing.
  void heal();

  [[nodiscard]] fault_proxy_stats stats() const;

private:
  class impl;
  std::unique_ptr<impl> impl_;
};

} // namespace corolock::test
