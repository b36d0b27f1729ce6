#include "backends/redis/client/sentinel.hpp"

#include "backends/redis/client/connection_await.hpp"

#include <corolock/error.hpp>

#include <charconv>

namespace corolock::redis::detail {

namespace {
std::optional<std::uint16_t> parse_port(std::string_view text) {
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr != text.data() + text.size() || value == 0 || value > 65535)
    return std::nullopt;
  return static_cast<std::uint16_t>(value);
}
} // namespace

client_config sentinel_connection_config(const client_config& cfg, const sentinel_address& at) {
  client_config out;
  out.host = at.host;
  out.port = at.port;
  out.username = cfg.sentinel.username;
  out.password = cfg.sentinel.password;
  out.client_name = cfg.client_name.empty() ? std::string{} : cfg.client_name + "-sentinel";
  out.protocol = cfg.protocol;
  out.connect_timeout = cfg.sentinel.timeout;
  out.request_timeout = cfg.sentinel.timeout;
  out.health_check_interval = cfg.health_check_interval;
  out.reconnect_min = cfg.reconnect_min;
  out.reconnect_max = cfg.reconnect_max;
  out.reconnect = false;
  out.address_map = cfg.address_map; // a Sentinel is dialled through it too
  if (cfg.tls && cfg.sentinel.tls) {
    out.tls = true;
    out.tls_ca_file = cfg.tls_ca_file;
    out.tls_ca_dir = cfg.tls_ca_dir;
    out.tls_cert_file = cfg.tls_cert_file;
    out.tls_key_file = cfg.tls_key_file;
    out.tls_server_name = cfg.tls_server_name;
    out.tls_verify = cfg.tls_verify;
  }
  return out;
}

std::optional<server_address> parse_master_address(const resp::value& reply) {
  if (!reply.is_aggregate() || reply.children.size() != 2 || !reply.children[0].is_string() ||
      reply.children[0].data.empty())
    return std::nullopt;
  auto port = parse_port(reply.children[1].data);
  if (!port)
    return std::nullopt;
  return server_address{reply.children[0].data, *port};
}

std::optional<server_address> parse_switch_master(std::string_view payload,
                                                  std::string_view master_name) {
  std::string_view words[5];
  for (auto& w : words) {
    auto space = payload.find(' ');
    w = payload.substr(0, space);
    payload = space == std::string_view::npos ? std::string_view{} : payload.substr(space + 1);
  }
  auto port = parse_port(words[4]);
  if (words[0] != master_name || words[3].empty() || !port || !payload.empty())
    return std::nullopt;
  return server_address{std::string(words[3]), *port};
}

asio::awaitable<std::pair<error_code, response>> ask_once(asio::any_io_executor ex,
                                                          client_config cfg, request req) {
  auto conn = std::make_shared<connection_impl>(ex, std::move(cfg));
  if (auto cec = co_await start_connection(conn))
    co_return std::pair{cec, response{}};
  auto [ec, replies] = co_await exec_on(conn, std::move(req));
  conn->close();
  co_return std::pair{ec, std::move(replies)};
}

asio::awaitable<error_code> master_finder::find(asio::any_io_executor ex, server_address& out) {
  const auto& sentinels = cfg_.sentinel.addresses;
  bool answered = false, refused = false;
  for (std::size_t i = 0; i < sentinels.size(); ++i) {
    const std::size_t at = (first_ + i) % sentinels.size();
    request ask;
    ask.push("SENTINEL", "GET-MASTER-ADDR-BY-NAME", cfg_.sentinel.master_name);
    auto to_sentinel = sentinel_connection_config(cfg_, sentinels[at]); // named: GCC 12, co_await
    auto [ec, replies] = co_await ask_once(ex, std::move(to_sentinel), std::move(ask));
    refused = refused || ec == error::auth_failed;
    if (ec || replies.empty() || replies[0].is_error())
      continue; // down, slow, or refusing us: the next one may know
    answered = true;
    if (auto where = parse_master_address(replies[0])) {
      first_ = at;
      out = std::move(*where);
      co_return error_code{};
    }
  }
  if (answered)
    co_return error::no_master;
  // A Sentinel that refused our credentials is a clearer lead than one that was down.
  co_return refused ? error::auth_failed : error::sentinel_unreachable;
}

namespace {
// A coroutine of its own, so that the finder lives in its frame for as long as the search runs.
asio::awaitable<error_code> find_with(std::shared_ptr<master_finder> finder,
                                      asio::any_io_executor ex, server_address& out) {
  co_return co_await finder->find(ex, out);
}
} // namespace

std::function<asio::awaitable<error_code>(server_address&)>
master_locator(asio::any_io_executor ex, const client_config& cfg) {
  auto finder = std::make_shared<master_finder>(cfg);
  return [ex, finder](server_address& out) { return find_with(finder, ex, out); };
}

} // namespace corolock::redis::detail
