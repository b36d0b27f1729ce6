// The etcd fixtures (etcd_server.hpp) and their HTTP: each request is one connection to the JSON
// gateway, made with Boost.Beast on a private io_context that this call runs to the end. Beast's
// synchronous calls ignore tcp_stream's deadline (it applies to asynchronous operations only), so
// the exchange is a coroutine on that io_context: the deadline covers connect, write and read, and
// a stopped member makes the call throw instead of blocking the test.
#include "etcd_server.hpp"
#include "process_state.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/system/system_error.hpp>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "redis_server.hpp" // pick_free_port

namespace corolock::test {

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;

constexpr auto request_timeout = std::chrono::milliseconds(5s);
constexpr auto start_timeout = std::chrono::milliseconds(30s);
constexpr int heartbeat_ms = 50;
constexpr int election_timeout_ms = 250;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Folders of tests that died: "corolock-etcd-" covers the clusters' too.
void sweep_once() {
  static std::once_flag swept;
  std::call_once(swept, [] { remove_orphaned_dirs("corolock-etcd-"); });
}

// --- HTTP to the gateway ---------------------------------------------------------------------

struct reply {
  unsigned status = 0;
  std::string body;
};

asio::awaitable<reply> exchange(std::uint16_t port, http::verb verb, std::string target, std::string body,
                                std::chrono::milliseconds timeout) {
  beast::tcp_stream stream(co_await asio::this_coro::executor);
  stream.expires_after(timeout);  // one deadline for the whole exchange
  co_await stream.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), port), asio::use_awaitable);
  http::request<http::string_body> message{verb, target, 11};
  message.set(http::field::host, fmt::format("127.0.0.1:{}", port));
  message.set(http::field::connection, "close");
  if (verb == http::verb::post) {
    message.set(http::field::content_type, "application/json");
    message.body() = std::move(body);
  }
  message.prepare_payload();
  co_await http::async_write(stream, message, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  co_await http::async_read(stream, buffer, response, asio::use_awaitable);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return reply{response.result_int(), std::move(response.body())};
}

// The reply, whatever its status; throws std::runtime_error when the member does not answer.
reply request(std::uint16_t port, http::verb verb, const std::string& target, std::string body = {},
              std::chrono::milliseconds timeout = request_timeout) {
  asio::io_context io;
  std::exception_ptr error;
  reply out;
  asio::co_spawn(io, exchange(port, verb, target, std::move(body), timeout),
                 [&](std::exception_ptr e, reply r) {
                   error = e;
                   out = std::move(r);
                 });
  io.run();
  if (error) {
    std::string why;
    try {
      std::rethrow_exception(error);
    } catch (const boost::system::system_error& e) {
      why = e.code().message(); // what() would add Asio's source location
    } catch (const std::exception& e) {
      why = e.what();
    }
    throw std::runtime_error(fmt::format("etcd at 127.0.0.1:{}: {} {}: no answer ({}; deadline {} ms)", port,
                                         verb == http::verb::post ? "POST" : "GET", target, why, timeout.count()));
  }
  return out;
}

// POST `body` to a /v3/ endpoint; the reply's JSON object, or std::runtime_error with etcd's words
// for an error ({"error": ..., "message": ..., "code": <gRPC code>}).
json::object post(std::uint16_t port, const std::string& target, const json::object& body) {
  const auto r = request(port, http::verb::post, target, json::serialize(body));
  json::value parsed;
  try {
    parsed = json::parse(r.body);
  } catch (const std::exception&) {
  }
  if (r.status / 100 != 2 || !parsed.is_object()) {
    std::string words = r.body;
    if (parsed.is_object() && parsed.as_object().contains("message")) {
      const auto& error = parsed.as_object();
      words = fmt::format("{} (gRPC code {})", json::value_to<std::string>(error.at("message")),
                          error.contains("code") ? json::serialize(error.at("code")) : "?");
    }
    throw std::runtime_error(
        fmt::format("etcd at 127.0.0.1:{}: POST {} {}: HTTP {}: {}", port, target, json::serialize(body), r.status, words));
  }
  return std::move(parsed.as_object());
}

// --- the gateway's encodings ------------------------------------------------------------------

constexpr std::string_view base64_alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned n = static_cast<unsigned char>(in[i]) << 16 | static_cast<unsigned char>(in[i + 1]) << 8 |
                       static_cast<unsigned char>(in[i + 2]);
    for (int shift : {18, 12, 6, 0})
      out += base64_alphabet[(n >> shift) & 63];
  }
  if (i < in.size()) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size())
      n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += base64_alphabet[(n >> 18) & 63];
    out += base64_alphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? base64_alphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view in) {
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (const char c : in) {
    if (c == '=')
      break;
    const auto at = base64_alphabet.find(c);
    if (at == std::string_view::npos)
      throw std::runtime_error(fmt::format("etcd: not base64: '{}'", in));
    bits = bits << 6 | static_cast<unsigned>(at);
    if ((count += 6) >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

// A field of a reply: "" when left out (the gateway omits default values).
std::string text_field(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr)
    return {};
  if (v->is_string())
    return std::string(v->as_string());
  return json::serialize(*v);
}

// A 64-bit number of a reply: a JSON string ("42"), 0 when left out.
std::int64_t number_field(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (v == nullptr)
    return 0;
  if (v->is_int64())
    return v->as_int64();
  if (v->is_uint64())
    return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_string())
    return static_cast<std::int64_t>(std::stoull(std::string(v->as_string())));
  throw std::runtime_error(fmt::format("etcd: {} is not a number: {}", name, json::serialize(*v)));
}

const json::object& object_field(const json::object& o, std::string_view name) {
  static const json::object empty;
  const auto* v = o.if_contains(name);
  return v != nullptr && v->is_object() ? v->as_object() : empty;
}

// The end of the range of keys starting with `prefix`: the prefix with its last byte below 0xff
// incremented (and what follows dropped); "\0" (no end) when there is no such byte.
std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

} // namespace

// --- the store as an operator sees it ---------------------------------------------------------

std::vector<etcd_key> etcd_keys(std::uint16_t port, std::string_view prefix) {
  // An empty prefix: from "\0" to "\0" (no end), i.e. every key.
  const std::string from = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  const auto reply = post(port, "/v3/kv/range",
                          {{"key", base64_encode(from)}, {"range_end", base64_encode(prefix_end(prefix))}});
  std::vector<etcd_key> out;
  if (const auto* kvs = reply.if_contains("kvs"); kvs != nullptr && kvs->is_array()) {
    for (const auto& kv : kvs->as_array()) {
      const auto& o = kv.as_object();
      out.push_back({base64_decode(text_field(o, "key")), base64_decode(text_field(o, "value")),
                     number_field(o, "create_revision"), number_field(o, "mod_revision"), number_field(o, "lease")});
    }
  }
  // etcd sorts by key bytes already; std::string compares bytes as unsigned too.
  std::sort(out.begin(), out.end(), [](const etcd_key& a, const etcd_key& b) { return a.key < b.key; });
  return out;
}

void etcd_revoke(std::uint16_t port, std::int64_t lease) {
  (void)post(port, "/v3/lease/revoke", {{"ID", std::to_string(lease)}});
}

void etcd_put(std::uint16_t port, std::string_view key, std::string_view value) {
  (void)post(port, "/v3/kv/put", {{"key", base64_encode(key)}, {"value", base64_encode(value)}});
}

void etcd_delete(std::uint16_t port, std::string_view key) {
  (void)post(port, "/v3/kv/deleterange", {{"key", base64_encode(key)}});
}

void etcd_compact(std::uint16_t port, std::int64_t revision) {
  try {
    (void)post(port, "/v3/kv/compaction", {{"revision", std::to_string(revision)}, {"physical", true}});
  } catch (const std::runtime_error& e) {
    // Compacted up to there (or beyond) already: what the caller asked for holds.
    if (std::string_view(e.what()).find("required revision has been compacted") == std::string_view::npos)
      throw;
  }
}

std::int64_t etcd_revision(std::uint16_t port) {
  const auto reply = post(port, "/v3/kv/range", {{"key", base64_encode(std::string(1, '\0'))}, {"count_only", true}});
  return number_field(object_field(reply, "header"), "revision");
}

// --- etcd_server ------------------------------------------------------------------------------

etcd_server::etcd_server(std::vector<std::string> flags) : etcd_server(std::move(flags), std::optional<etcd_tls>{}) {}

etcd_server::etcd_server(std::vector<std::string> flags, etcd_tls tls)
    : etcd_server(std::move(flags), std::optional<etcd_tls>(std::move(tls))) {}

etcd_server::etcd_server(std::vector<std::string> flags, std::optional<etcd_tls> tls)
    : dir_(make_temp_dir("corolock-etcd-")), name_("n1"), tls_(std::move(tls)), flags_(std::move(flags)) {
  sweep_once();
  try {
    std::ofstream(dir_ / "owner") << ::getpid() << '\n';
    (void)find_program("etcd"); // throws if there is none
    cluster_token_ = dir_.filename().string();
    // A port taken between pick_free_port and etcd's bind shows as a member that exits.
    for (int attempt = 1;; ++attempt) {
      port_ = pick_free_port();
      do {
        peer_port_ = pick_free_port();
      } while (peer_port_ == port_);
      if (tls_)
        do {
          tls_port_ = pick_free_port();
        } while (tls_port_ == port_ || tls_port_ == peer_port_);
      initial_cluster_ = fmt::format("{}=http://127.0.0.1:{}", name_, peer_port_);
      try {
        launch();
        await_ready(true);
        return;
      } catch (const std::runtime_error&) {
        if (attempt == 3 || read_file(dir_ / "etcd.log").find("address already in use") == std::string::npos)
          throw;
        process_.kill();
        std::filesystem::remove_all(dir_ / "data");
        std::filesystem::remove(dir_ / "etcd.log");
      }
    }
  } catch (...) {
    process_.kill();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

etcd_server::etcd_server(member_tag, etcd_cluster* cluster, std::string name, std::filesystem::path dir,
                         std::uint16_t port, std::uint16_t peer_port, std::string initial_cluster,
                         std::string cluster_token)
    : dir_(std::move(dir)), name_(std::move(name)), port_(port), peer_port_(peer_port),
      initial_cluster_(std::move(initial_cluster)), cluster_token_(std::move(cluster_token)), cluster_(cluster) {}

etcd_server::~etcd_server() {
  process_.kill(); // SIGKILL also ends a stopped process
  if (cluster_ == nullptr) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

void etcd_server::launch() {
  const auto peer = fmt::format("http://127.0.0.1:{}", peer_port_);
  const auto client = fmt::format("http://127.0.0.1:{}", port_);
  const auto listen = tls_ ? fmt::format("{},https://127.0.0.1:{}", client, tls_port_) : client;
  spawn_options spawn;
  spawn.output = dir_ / "etcd.log";  // flag errors and Go panics too, not only what zap logs
  spawn.working_dir = dir_;
  // The --initial-* flags only matter to the first start: later ones read the member from the WAL.
  std::vector<std::string> args{"etcd", "--name", name_, "--data-dir", (dir_ / "data").string(),
                                "--listen-client-urls", listen, "--advertise-client-urls", client,
                                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                "--initial-cluster", initial_cluster_, "--initial-cluster-token", cluster_token_,
                                "--initial-cluster-state", "new",
                                "--heartbeat-interval", std::to_string(heartbeat_ms),
                                "--election-timeout", std::to_string(election_timeout_ms),
                                "--auto-compaction-retention", "0", "--enable-pprof=false",
                                "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"};
  if (tls_) {
    args.insert(args.end(), {"--cert-file", tls_->cert.string(), "--key-file", tls_->key.string()});
    if (!tls_->client_ca.empty())
      args.insert(args.end(), {"--client-cert-auth", "--trusted-ca-file", tls_->client_ca.string()});
  }
  args.insert(args.end(), flags_.begin(), flags_.end());
  process_ = process(std::move(args), spawn);
  paused_ = false;
}

void etcd_server::await_ready(bool health) {
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  // /health makes a quorum read that etcd gives up after 1 s, and a read proposed before the first
  // leader is dropped and waits out that second: a short wait, asked again, sees the leader sooner.
  // Doubled after each silence up to 2 s, for a machine too busy to answer in 250 ms.
  auto patience = std::chrono::milliseconds(250);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running())
      throw std::runtime_error(fmt::format("etcd_server {}: exited during start-up ({}; port {}, peer port {}); log:\n{}",
                                           name_, process_.status().value_or(exit_status{}).to_string(), port_,
                                           peer_port_, log_tail()));
    if (health) {
      const auto asked = std::chrono::steady_clock::now();
      if (healthy(patience))
        return;
      if (std::chrono::steady_clock::now() - asked >= patience)
        patience = std::min<std::chrono::milliseconds>(patience * 2, 2s);
    } else {
      // Without a quorum the member never serves HTTP, but its listeners are bound early.
      asio::io_context io;
      tcp::socket socket(io);
      beast::error_code ec;
      socket.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port_), ec);
      if (!ec)
        return;
    }
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error(fmt::format("etcd_server {}: {} within {} s (port {}, peer port {}); log:\n{}", name_,
                                       health ? "/health not true" : "client port not open",
                                       std::chrono::duration_cast<std::chrono::seconds>(start_timeout).count(),
                                       port_, peer_port_, log_tail()));
}

void etcd_server::await_peer_serving() {
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running())
      throw std::runtime_error(fmt::format("etcd_server {}: exited during start-up ({}; port {}, peer port {}); log:\n{}",
                                           name_, process_.status().value_or(exit_status{}).to_string(), port_,
                                           peer_port_, log_tail()));
    try {
      if (request(peer_port_, http::verb::get, "/version", {}, 250ms).status == 200)
        return;
    } catch (const std::runtime_error&) {
    }
    std::this_thread::sleep_for(10ms);
  }
  throw std::runtime_error(fmt::format("etcd_server {}: peer port {} not served within {} s; log:\n{}", name_,
                                       peer_port_, std::chrono::duration_cast<std::chrono::seconds>(start_timeout).count(),
                                       log_tail()));
}

bool etcd_server::healthy(std::chrono::milliseconds timeout) const {
  try {
    const auto r = request(port_, http::verb::get, "/health", {}, timeout);
    const auto parsed = json::parse(r.body);
    return r.status == 200 && parsed.is_object() && text_field(parsed.as_object(), "health") == "true";
  } catch (const std::exception&) {
    return false;
  }
}

bool etcd_server::has_quorum() {
  if (cluster_ == nullptr)
    return true;
  int up = 1; // itself
  for (auto& m : cluster_->members_)
    if (&m != this && m.running() && !m.paused())
      ++up;
  return up * 2 > cluster_->size();
}

std::string etcd_server::address() const {
  return fmt::format("127.0.0.1:{}", port_);
}

std::string etcd_server::url() const {
  return "etcd://" + address();
}

std::string etcd_server::log_tail(std::size_t lines) const {
  const auto log = read_file(dir_ / "etcd.log");
  std::size_t begin = log.size();
  for (std::size_t seen = 0; seen <= lines && begin > 0; ++seen) {
    const auto nl = log.rfind('\n', begin - 1);
    if (nl == std::string::npos)
      return log;
    begin = nl;
  }
  return log.substr(begin);
}

bool etcd_server::running() {
  return process_.running();
}

void etcd_server::kill() {
  process_.kill();
  process_ = process{};
  paused_ = false;
}

void etcd_server::start() {
  if (process_.running())
    kill();
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  for (;;) {
    const auto log_before = read_file(dir_ / "etcd.log").size();
    launch();
    try {
      await_ready(has_quorum());
      return;
    } catch (const std::runtime_error&) {
      // Same ports: one may have been taken meanwhile, or not released yet; try again shortly.
      if (std::chrono::steady_clock::now() >= deadline ||
          read_file(dir_ / "etcd.log").find("address already in use", log_before) == std::string::npos)
        throw;
      process_.kill();
      std::this_thread::sleep_for(100ms);
    }
  }
}

void etcd_server::pause() {
  if (!process_.running())
    return; // killed or dead: nothing to stop, and no state 'T' to wait 5 s for
  process_.signal(SIGSTOP);
  wait_for_state(process_.pid(), true);
  paused_ = true;
}

void etcd_server::resume() {
  process_.signal(SIGCONT);
  wait_for_state(process_.pid(), false);
  paused_ = false;
}

// --- etcd_cluster -----------------------------------------------------------------------------

etcd_cluster::etcd_cluster(int members) : dir_(make_temp_dir("corolock-etcd-cluster-")) {
  sweep_once();
  try {
    if (members < 1)
      throw std::invalid_argument(fmt::format("etcd_cluster: {} members", members));
    std::ofstream(dir_ / "owner") << ::getpid() << '\n';
    (void)find_program("etcd");
    const auto token = dir_.filename().string();
    for (int attempt = 1;; ++attempt) {
      std::vector<std::uint16_t> taken;
      const auto fresh = [&taken] {
        for (;;) {
          const auto port = pick_free_port();
          if (std::find(taken.begin(), taken.end(), port) == taken.end()) {
            taken.push_back(port);
            return port;
          }
        }
      };
      std::vector<std::pair<std::uint16_t, std::uint16_t>> ports; // client, peer
      std::string initial_cluster;
      for (int i = 0; i < members; ++i) {
        ports.emplace_back(fresh(), fresh());
        initial_cluster += fmt::format("{}m{}=http://127.0.0.1:{}", i ? "," : "", i + 1, ports.back().second);
      }
      for (int i = 0; i < members; ++i) {
        auto dir = dir_ / fmt::format("m{}", i + 1);
        std::filesystem::create_directories(dir);
        members_.emplace_back(etcd_server::member_tag{}, this, fmt::format("m{}", i + 1), std::move(dir),
                              ports[i].first, ports[i].second, initial_cluster, token);
      }
      try {
        // One after the other, each once it serves its peers: a new member asks the others whether
        // it was bootstrapped, and a peer that accepts but does not answer yet (it is asking too)
        // costs it a second (3.4's fixed bootstrap timeout), refused costs nothing. Launched
        // together, three members were ready after 1-2.5 s, so launched ~0.25 s.
        for (auto& m : members_) {
          m.launch();
          m.await_peer_serving();
        }
        for (auto& m : members_)
          m.await_ready(true);
        return;
      } catch (const std::runtime_error&) {
        const bool port_taken = std::any_of(members_.begin(), members_.end(), [](const etcd_server& m) {
          return read_file(m.dir() / "etcd.log").find("address already in use") != std::string::npos;
        });
        if (attempt == 3 || !port_taken)
          throw;
        // Fresh ports for all: the others' data directories already name the old peer URLs.
        members_.clear();
        for (int i = 0; i < members; ++i)
          std::filesystem::remove_all(dir_ / fmt::format("m{}", i + 1));
      }
    }
  } catch (...) {
    members_.clear();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

etcd_cluster::~etcd_cluster() {
  members_.clear();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string etcd_cluster::url() const {
  std::string out = "etcd://";
  for (std::size_t i = 0; i < members_.size(); ++i)
    out += (i ? "," : "") + members_[i].address();
  return out;
}

int etcd_cluster::leader() const {
  int best = -1;
  std::int64_t best_term = -1;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const auto& m = members_[i];
    if (m.pid() <= 0 || m.paused())
      continue;
    try {
      // Answered from the member's own raft state, with or without a quorum.
      const auto r = request(m.port(), http::verb::post, "/v3/maintenance/status", "{}", 1s);
      const auto parsed = json::parse(r.body);
      if (r.status != 200 || !parsed.is_object())
        continue;
      const auto& status = parsed.as_object();
      const auto id = text_field(object_field(status, "header"), "member_id");
      const auto term = number_field(status, "raftTerm");
      if (!id.empty() && id == text_field(status, "leader") && term > best_term) {
        best = static_cast<int>(i);
        best_term = term;
      }
    } catch (const std::exception&) {
      // Dead or not serving: not the leader.
    }
  }
  return best;
}

int etcd_cluster::await_leader(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (const int i = leader(); i >= 0)
      return i;
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error(fmt::format("etcd_cluster: no member leads after {} ms ({})", timeout.count(), url()));
    std::this_thread::sleep_for(20ms);
  }
}

} // namespace corolock::test
