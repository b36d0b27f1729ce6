// serve.hpp: GET /metrics over HTTP with Boost.Beast, the least a Prometheus scrape needs: one
// request a connection, then it closes (Prometheus reconnects at each scrape), nothing else served.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// Answers one request: GET /metrics with `body()`, in the exposition's content type; else 404.
inline asio::awaitable<void> http_answer(tcp::socket socket, std::function<std::string()> body) {
  beast::tcp_stream stream(std::move(socket));
  stream.expires_after(std::chrono::seconds(10)); // a client that sends nothing is dropped
  beast::flat_buffer buffer;
  http::request<http::empty_body> req;
  co_await http::async_read(stream, buffer, req, asio::use_awaitable);
  http::response<http::string_body> res{http::status::ok, req.version()};
  if (req.method() == http::verb::get && req.target() == "/metrics") {
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = body();
  } else {
    res.result(http::status::not_found);
  }
  res.keep_alive(false);
  res.prepare_payload();
  co_await http::async_write(stream, res, asio::use_awaitable);
  beast::error_code ignored; // the peer may be gone already: nothing to do about it
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

/// Accepts until the acceptor is closed (async_accept then throws, and co_spawn's `detached` drops
/// it, as it drops a connection's failure); each connection is answered by a coroutine of its own.
/// `body` is called on the acceptor's executor.
inline asio::awaitable<void> http_serve(tcp::acceptor& acceptor, std::function<std::string()> body) {
  for (;;) {
    auto socket = co_await acceptor.async_accept(asio::use_awaitable);
    asio::co_spawn(acceptor.get_executor(), http_answer(std::move(socket), body), asio::detached);
  }
}
