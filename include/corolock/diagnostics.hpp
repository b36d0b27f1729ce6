/// @file
/// Why one operation failed, in words, kept by the caller for that operation alone.
///
/// ```cpp
/// corolock::diagnostics why;
/// auto [ec, g] = co_await m.acquire(corolock::bind_diagnostics(why, asio::as_tuple(asio::use_awaitable)));
/// if (ec == corolock::error::redis_error)
///   log(why.server_message());   // "WRONGTYPE Operation against a key holding the wrong kind of value"
/// ```
///
/// An error_code says what kind of failure it was; the words behind it (the server's error reply,
/// the address a connect could not reach) belong to the one operation that met them. A shared
/// "last error" on the client would be overwritten by the next failure of another coroutine, so
/// the words travel with the operation instead: bind a diagnostics object to the completion token.
/// It is cleared when the operation starts and written before its handler runs; like the buffers
/// of an Asio read, it must outlive the operation. Unbound, an operation keeps no words.
/// An acquisition of a mutex, shared_mutex or semaphore always says what and where: the store, the
/// lock, and what happened (for a timeout, whether its deadline passed or the store did not
/// answer). Other operations leave it empty for a code that says it all: timeout, not_connected,
/// closed (a redlock's timeout says how far its last attempt got). A cancellation
/// (operation_aborted) leaves it empty everywhere.
#pragma once

#include <corolock/detail/async.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace corolock {

namespace detail {
struct diagnostics_access;
} // namespace detail

/// The words behind one operation's error: bind one to the operation's token
/// (bind_diagnostics()). Cleared when the operation starts, written before its handler runs; it
/// must outlive the operation. Left empty by a cancellation, and by a code that says it all
/// (timeout, not_connected, closed) of an operation other than an acquisition.
class diagnostics {
public:
  /// The text of the server's error reply that made the operation fail (error::redis_error,
  /// including a refused subscription), e.g. "NOPERM this user has no permissions to access one
  /// of the keys used as arguments". Empty if the server said nothing.
  const std::string& server_message() const noexcept { return server_; }
  /// corolock's own words: why a connect failed (address and the system's reason, which
  /// certificate check, or the server's refusal of the credentials quoted inside), a semaphore
  /// request larger than its permits.
  const std::string& client_message() const noexcept { return client_; }
  /// Whichever of the two is set (the server's first).
  const std::string& message() const noexcept { return server_.empty() ? client_ : server_; }
  /// True when neither message is set.
  bool empty() const noexcept { return server_.empty() && client_.empty(); }
  /// Empties both messages (each operation that fills it does so first).
  void clear() noexcept {
    server_.clear();
    client_.clear();
  }

private:
  friend struct detail::diagnostics_access;
  std::string server_;
  std::string client_;
};

/// The diagnostics bound to a completion handler (null if none), in the manner of Asio's
/// associated_cancellation_slot: Asio's own adapters (as_tuple, redirect_error, ...) pass it on.
template <typename T, typename Default = diagnostics*>
struct associated_diagnostics;

namespace detail {

template <typename T, typename D, typename = void>
struct associated_diagnostics_impl {
  using type = D;
  static type get(const T&) noexcept { return nullptr; }
  static type get(const T&, D d) noexcept { return d; }
};

// A handler Asio wraps (as_tuple_handler, redirect_error_handler, ...) forwards to the one inside.
template <typename T, typename D>
struct associated_diagnostics_impl<
    T, D, std::void_t<typename asio::associator<associated_diagnostics, T, D>::type>>
    : asio::associator<associated_diagnostics, T, D> {};

} // namespace detail

template <typename T, typename Default>
struct associated_diagnostics : detail::associated_diagnostics_impl<T, Default> {};

/// A completion token whose handler carries a diagnostics (see bind_diagnostics).
template <typename Token>
struct diagnostics_token {
  diagnostics* diag; ///< where the operation's words go
  Token token;       ///< the token it wraps
};

/// `token`, with `d` to receive the words of the operation's failure. Any token: the default
/// (use_awaitable), as_tuple(use_awaitable), use_future, a callback; Asio's adapters may wrap it
/// (as_tuple(bind_diagnostics(d))) or be wrapped by it.
template <typename Token = default_token>
diagnostics_token<std::decay_t<Token>> bind_diagnostics(diagnostics& d, Token&& token = {}) {
  return {&d, std::forward<Token>(token)};
}

namespace detail {

/// The handler made for a diagnostics_token: the inner handler, plus where the words go.
template <typename Handler>
struct diagnostics_handler {
  diagnostics* diag;
  Handler handler;

  template <typename... Args>
  void operator()(Args&&... args) {
    std::move(handler)(std::forward<Args>(args)...);
  }
};

/// What an operation's initiation asks of its handler: where its words go (or null), cleared.
template <typename Handler>
diagnostics* diagnostics_for(const Handler& h) noexcept {
  diagnostics* d = associated_diagnostics<Handler>::get(h);
  if (d)
    d->clear();
  return d;
}

} // namespace detail

template <typename Handler, typename D>
struct associated_diagnostics<detail::diagnostics_handler<Handler>, D> {
  using type = diagnostics*;
  static type get(const detail::diagnostics_handler<Handler>& h) noexcept { return h.diag; }
  static type get(const detail::diagnostics_handler<Handler>& h, D) noexcept { return h.diag; }
};

} // namespace corolock

/// @cond INTERNAL
// The executor, allocator and cancellation slot of the inner handler stay its own.
template <template <typename, typename> class Associator, typename Handler, typename Default>
struct boost::asio::associator<Associator, corolock::detail::diagnostics_handler<Handler>, Default>
    : Associator<Handler, Default> {
  static typename Associator<Handler, Default>::type
  get(const corolock::detail::diagnostics_handler<Handler>& h) noexcept {
    return Associator<Handler, Default>::get(h.handler);
  }
  static auto get(const corolock::detail::diagnostics_handler<Handler>& h,
                  const Default& d) noexcept -> decltype(Associator<Handler, Default>::get(h.handler, d)) {
    return Associator<Handler, Default>::get(h.handler, d);
  }
};

namespace corolock::detail {
// Asio 1.81's own adapters (redirect_error, bind_cancellation_slot) ask the token inside them for
// its return_type: pass on the inner token's, where it has one.
template <typename Inner, typename = void>
struct diagnostics_return_type {};
template <typename Inner>
struct diagnostics_return_type<Inner, std::void_t<typename Inner::return_type>> {
  using return_type = typename Inner::return_type;
};
} // namespace corolock::detail

template <typename Token, typename... Signatures>
struct boost::asio::async_result<corolock::diagnostics_token<Token>, Signatures...>
    : corolock::detail::diagnostics_return_type<boost::asio::async_result<Token, Signatures...>> {
  template <typename Initiation>
  struct init_wrapper {
    corolock::diagnostics* diag;
    Initiation initiation;

    template <typename Handler, typename... Args>
    void operator()(Handler&& handler, Args&&... args) {
      std::move(initiation)(
          corolock::detail::diagnostics_handler<std::decay_t<Handler>>{
              diag, std::forward<Handler>(handler)},
          std::forward<Args>(args)...);
    }
  };

  template <typename Initiation, typename RawToken, typename... Args>
  static auto initiate(Initiation&& initiation, RawToken&& token, Args&&... args) {
    return asio::async_initiate<
        std::conditional_t<std::is_const_v<std::remove_reference_t<RawToken>>, const Token, Token>,
        Signatures...>(init_wrapper<std::decay_t<Initiation>>{token.diag,
                                                              std::forward<Initiation>(initiation)},
                       token.token, std::forward<Args>(args)...);
  }
};

namespace corolock::detail {

/// What `co_await op()` gives with the default token for a completion (error_code, Ts...).
template <typename... Ts>
struct awaited_value {
  using type = std::tuple<Ts...>;
};
template <>
struct awaited_value<> {
  using type = void;
};
template <typename T>
struct awaited_value<T> {
  using type = T;
};

/// The system_error the default token throws: the code, and the words behind it in what().
[[noreturn]] inline void throw_with_words(error_code ec, const diagnostics& words) {
  const auto& server = words.server_message();
  const auto& client = words.client_message();
  if (server.empty() && client.empty())
    throw boost::system::system_error(ec);
  if (server.empty() || client.empty())
    throw boost::system::system_error(ec, server.empty() ? client : server);
  throw boost::system::system_error(ec, client + ": " + server);
}

} // namespace corolock::detail

// The default token inside an adapter that changes the signature (as_tuple(bind_diagnostics(d)),
// whose signature has no error_code first): nothing to throw, so it is use_awaitable.
template <typename... Ts>
struct boost::asio::async_result<corolock::default_token, void(Ts...)> {
  using return_type = typename boost::asio::async_result<boost::asio::use_awaitable_t<>,
                                                         void(Ts...)>::return_type;

  template <typename Initiation, typename... Args>
  static return_type initiate(Initiation&& initiation, corolock::default_token, Args&&... args) {
    auto token = boost::asio::use_awaitable;
    return boost::asio::async_initiate<decltype(token), void(Ts...)>(
        std::forward<Initiation>(initiation), token, std::forward<Args>(args)...);
  }
};

// The default token: the operation runs as with as_tuple(use_awaitable) and its own diagnostics;
// an error is thrown with its words. A diagnostics the caller binds around the default token
// (bind_diagnostics(d)) is the one the operation fills; the exception then carries the code alone.
template <typename... Ts>
struct boost::asio::async_result<corolock::default_token, void(boost::system::error_code, Ts...)> {
  using return_type = boost::asio::awaitable<typename corolock::detail::awaited_value<Ts...>::type>;

  template <typename Initiation, typename... Args>
  static return_type initiate(Initiation initiation, corolock::default_token, Args... args) {
    corolock::diagnostics words;
    auto token = corolock::bind_diagnostics(words, boost::asio::as_tuple(boost::asio::use_awaitable));
    auto result = co_await boost::asio::async_initiate<decltype(token),
                                                       void(boost::system::error_code, Ts...)>(
        std::move(initiation), token, std::move(args)...);
    if (const auto& ec = std::get<0>(result))
      corolock::detail::throw_with_words(ec, words);
    if constexpr (sizeof...(Ts) == 1)
      co_return std::move(std::get<1>(result));
    else if constexpr (sizeof...(Ts) > 1)
      co_return std::apply([](auto&&, auto&&... values) {
        return std::tuple<Ts...>(std::move(values)...);
      }, std::move(result));
  }
};
/// @endcond
