// Private: the byte stream under a connection — a plain socket (TCP or unix) or TLS over TCP.
//
// One concrete class rather than a virtual interface: the reader, the writer and the handshake
// call it the same way for every kind, and a plain socket pays one predictable branch per
// operation (no type-erased handler, no extra allocation). It models Asio's AsyncReadStream and
// AsyncWriteStream, so asio::async_write works on it.
//
// Each connect attempt calls reset() (a fresh socket) and, for TLS, start_tls() once the TCP
// connection is up: a new OpenSSL session per attempt, never one reused across a drop.
#pragma once

#include <corolock/detail/async.hpp>

#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include <optional>
#include <string>
#include <utility>

namespace corolock::redis::detail {

class transport {
public:
  using socket_type = asio::generic::stream_protocol::socket;
  using tls_stream = asio::ssl::stream<socket_type&>;
  using executor_type = asio::any_io_executor;

  explicit transport(asio::any_io_executor ex) : socket_(std::move(ex)) {}

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  /// The socket (under TLS: the one TLS runs over). Closing it aborts whatever is pending.
  socket_type& socket() noexcept { return socket_; }
  bool is_tls() const noexcept { return tls_.has_value(); }
  /// The TLS stream; only when is_tls().
  tls_stream& tls() noexcept { return *tls_; }

  /// A new, unopened socket, and no TLS.
  void reset() {
    tls_.reset();
    socket_ = socket_type(socket_.get_executor());
  }

  /// Puts a new TLS session over the (connected) socket: SNI unless `server_name` is an IP
  /// address, and when `verify`, the name or address the peer's certificate must carry.
  /// Returns false with `why` when OpenSSL refuses the name.
  bool start_tls(asio::ssl::context& ctx, const std::string& server_name, bool verify,
                 std::string& why);

  template <typename MutableBuffers, typename CompletionToken>
  auto async_read_some(const MutableBuffers& buffers, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
        initiate_read_some{this}, token, buffers);
  }

  template <typename ConstBuffers, typename CompletionToken>
  auto async_write_some(const ConstBuffers& buffers, CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(error_code, std::size_t)>(
        initiate_write_some{this}, token, buffers);
  }

private:
  struct initiate_read_some {
    transport* self;
    template <typename Handler, typename Buffers>
    void operator()(Handler&& h, const Buffers& b) const {
      if (self->tls_)
        self->tls_->async_read_some(b, std::forward<Handler>(h));
      else
        self->socket_.async_read_some(b, std::forward<Handler>(h));
    }
  };
  struct initiate_write_some {
    transport* self;
    template <typename Handler, typename Buffers>
    void operator()(Handler&& h, const Buffers& b) const {
      if (self->tls_)
        self->tls_->async_write_some(b, std::forward<Handler>(h));
      else
        self->socket_.async_write_some(b, std::forward<Handler>(h));
    }
  };

  socket_type socket_;
  std::optional<tls_stream> tls_; // refers to socket_
};

} // namespace corolock::redis::detail
