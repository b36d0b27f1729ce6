// HTTP/1.1 to etcd's JSON gateway (gateway.hpp).
#include "backends/etcd/gateway.hpp"

#include "backends/etcd/wire.hpp"
#include "detail/tls.hpp"

#include <corolock/error.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <deque>
#include <set>
#include <vector>

namespace corolock::etcd::detail {

namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using asio::ip::tcp;
using tuple_await = asio::as_tuple_t<asio::use_awaitable_t<>>;
constexpr tuple_await await_tuple{};
using clock = std::chrono::steady_clock;

struct gateway::connection {
  connection(const asio::any_io_executor& ex, state* o) : owner(o), stream(ex) {}
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
  /// The gateway's state, which outlives every connection: a connection lives in a call's
  /// coroutine, which holds the state, or in the state's idle list. Its destructor takes it out of
  /// state::busy — also when an io_context torn down destroys the call's coroutine unfinished.
  state* owner;
  beast::tcp_stream stream;                                     ///< plain: the stream; TLS: moved into tls
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls; ///< etcds://, once connected
  beast::flat_buffer buffer;
  std::size_t member = 0;
  bool used = false; ///< it carried a call before (an idle keep-alive: the member may have closed it)

  /// The TCP stream (under TLS, the one TLS runs over): its deadline, its socket.
  beast::tcp_stream& tcp() { return tls ? tls->next_layer() : stream; }
  /// `op(stream)` on the TLS stream or the plain one; both give the same awaitable.
  template <typename Op>
  auto io(Op op) {
    return tls ? op(*tls) : op(stream);
  }
};

/// Why no connection could be opened: each member's reason, and whether TLS refused one (a wrong
/// certificate or name does not heal: the call ends at once, error::tls_failed).
struct open_failure {
  std::string words;
  bool tls = false;
};

/// What one exchange with the cluster ended with.
struct exchanged {
  error_code ec;
  json::object reply;
  std::string words;
};

struct gateway::state {
  state(asio::any_io_executor e, config c) : ex(std::move(e)), cfg(std::move(c)) {
    if (cfg.tls)
      tls_ctx = corolock::detail::make_tls_context(
          {cfg.tls_ca_file, cfg.tls_ca_dir, cfg.tls_cert_file, cfg.tls_key_file, cfg.tls_verify}, tls_problem);
  }
  asio::any_io_executor ex;
  config cfg;
  std::shared_ptr<asio::ssl::context> tls_ctx; ///< etcds://: every connection's sessions
  std::string tls_problem;                     ///< why there is no tls_ctx (a file)
  std::string token;
  std::size_t current = 0; ///< the member calls go to
  bool closed = false;
  std::vector<std::unique_ptr<connection>> idle;
  std::set<connection*> busy; ///< closed by shutdown()
  std::size_t lock_calls = 0; ///< lock-lane calls holding a turn
  /// Lock-lane calls waiting for a turn, in order: each waits on its timer, which a turn ending
  /// (or shutdown) cancels.
  std::deque<std::shared_ptr<asio::steady_timer>> waiting;

  /// A turn for a lock-lane call, handed to the first one waiting when it ends (however the call's
  /// frame ends: an io_context torn down destroys it unfinished).
  struct turn {
    state* s = nullptr;
    turn() = default;
    explicit turn(state* o) : s(o) {}
    turn(turn&& o) noexcept : s(std::exchange(o.s, nullptr)) {}
    turn& operator=(turn&& o) noexcept {
      std::swap(s, o.s);
      return *this;
    }
    ~turn() {
      if (!s)
        return;
      --s->lock_calls;
      s->wake_next();
    }
  };
  void wake_next() {
    while (!waiting.empty() && (lock_calls < max_lock_calls || closed)) {
      ++lock_calls; // the turn passes to it: nothing can take it in between
      waiting.front()->cancel();
      waiting.pop_front();
    }
  }
  static asio::awaitable<turn> take_turn(std::shared_ptr<state> s) {
    if (s->lock_calls < max_lock_calls && s->waiting.empty()) {
      ++s->lock_calls;
      co_return turn(s.get());
    }
    auto t = std::make_shared<asio::steady_timer>(s->ex, asio::steady_timer::time_point::max());
    s->waiting.push_back(t); // counted by wake_next when woken; unwoken, nothing was counted
    struct leave_queue {
      state* s;
      const asio::steady_timer* t;
      bool woken = false;
      ~leave_queue() {
        if (!woken)
          std::erase_if(s->waiting, [this](const auto& w) { return w.get() == t; });
      }
    } leave{s.get(), t.get()};
    co_await t->async_wait(await_tuple);
    leave.woken = true;
    co_return turn(s.get());
  }

  static asio::awaitable<exchanged> exchange(std::shared_ptr<state> s, std::string target, std::string text);

  std::string where(std::size_t m) const {
    return cfg.hosts[m].host + ":" + std::to_string(cfg.hosts[m].port);
  }

  http::request<http::string_body> request(const std::string& target, std::string body, std::size_t m) const {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, where(m));
    req.set(http::field::content_type, "application/json");
    if (!token.empty())
      req.set(http::field::authorization, token);
    req.keep_alive(true);
    req.body() = std::move(body);
    req.prepare_payload();
    return req;
  }

  /// A connection to the current member, or to the next that answers (under TLS: whose handshake
  /// passed); null and `why` when none.
  asio::awaitable<std::unique_ptr<connection>> open(open_failure& why) {
    std::string& words = why.words;
    if (cfg.tls && !tls_ctx) {
      why.tls = true;
      words = tls_problem;
      co_return nullptr;
    }
    const std::size_t members = cfg.hosts.size();
    for (std::size_t tried = 0; tried < members && !closed; ++tried) {
      const auto m = current;
      auto c = std::make_unique<connection>(ex, this);
      c->member = m;
      tcp::resolver resolver(ex);
      auto [rec, found] = co_await resolver.async_resolve(cfg.hosts[m].host, std::to_string(cfg.hosts[m].port),
                                                         await_tuple);
      error_code ec = rec;
      if (!ec) {
        c->stream.expires_after(cfg.connect_timeout);
        auto [cec, at] = co_await c->stream.async_connect(found, await_tuple);
        ec = cec;
        static_cast<void>(at);
      }
      if (closed)
        break;
      std::string tls_words;
      if (!ec) {
        c->stream.socket().set_option(tcp::no_delay(true));
        if (tls_ctx)
          ec = co_await handshake(*c, m, tls_words);
        if (closed)
          break;
      }
      if (!ec)
        co_return c;
      if (!tls_words.empty())
        why.tls = true;
      words += (words.empty() ? "" : "; ") + where(m) + ": " +
               (!tls_words.empty()             ? tls_words
                : ec == beast::error::timeout ? "no connection within " + std::to_string(cfg.connect_timeout.count()) + " ms"
                                               : ec.message());
      if (current == m)
        current = (m + 1) % members;
    }
    co_return nullptr;
  }

  /// TLS over `c`'s new TCP connection to member `m`, within connect_timeout. On a refusal (a
  /// certificate, a name, a protocol), `tls_words` says what.
  asio::awaitable<error_code> handshake(connection& c, std::size_t m, std::string& tls_words) {
    c.tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(c.stream), *tls_ctx);
    const std::string& name = cfg.tls_server_name.empty() ? cfg.hosts[m].host : cfg.tls_server_name;
    if (!corolock::detail::prepare_tls_session(c.tls->native_handle(), name, cfg.tls_verify, tls_words))
      co_return error_code(error::tls_failed);
    c.tcp().expires_after(cfg.connect_timeout);
    auto [ec] = co_await c.tls->async_handshake(asio::ssl::stream_base::client, await_tuple);
    if (ec && ec != beast::error::timeout && corolock::detail::is_tls_error(ec))
      tls_words = "TLS handshake (verifying '" + (cfg.tls_verify ? name : std::string("nothing")) +
                  "') failed: " + corolock::detail::describe_tls_failure(c.tls->native_handle(), ec);
    co_return ec;
  }

  /// Member `m` left a request unanswered for request_timeout: partitioned from us, stalled or
  /// overloaded. With another member to go to, calls go there from now on, and every connection
  /// to `m` is closed — a watch on it would stay silent as long as the link does, and a waiter
  /// would never hear of the release; closed, its watch ends and the waiter looks again
  /// elsewhere. With one member there is nowhere to go: its watches stay, to serve when it answers.
  void pass_over(std::size_t m) {
    if (cfg.hosts.size() < 2)
      return;
    if (current == m)
      current = (m + 1) % cfg.hosts.size();
    std::erase_if(idle, [m](const std::unique_ptr<connection>& c) { return c->member == m; });
    for (auto* c : busy)
      if (c->member == m) {
        error_code ignored;
        c->tcp().socket().close(ignored);
      }
  }

  void keep(std::unique_ptr<connection> c) {
    busy.erase(c.get());
    if (!closed && c->member == current && idle.size() < 8) {
      c->used = true;
      idle.push_back(std::move(c));
    }
  }
};

gateway::connection::~connection() { owner->busy.erase(this); }

gateway::gateway(asio::any_io_executor ex, config cfg) : s_(std::make_shared<state>(std::move(ex), std::move(cfg))) {}
gateway::~gateway() { shutdown(); }

const config& gateway::get_config() const noexcept { return s_->cfg; }
void gateway::add_members(std::vector<endpoint> found) {
  for (auto& e : found) {
    const bool known = std::any_of(s_->cfg.hosts.begin(), s_->cfg.hosts.end(),
                                   [&](const endpoint& k) { return k.host == e.host && k.port == e.port; });
    if (!known)
      s_->cfg.hosts.push_back(std::move(e));
  }
}

void gateway::shutdown() {
  s_->closed = true;
  s_->wake_next(); // the queued calls end closed
  s_->idle.clear();
  for (auto* c : s_->busy) {
    error_code ignored;
    c->tcp().socket().close(ignored);
  }
}

/// One request to the current member, or to the next when one cannot serve it (the file's comment).
asio::awaitable<exchanged> gateway::state::exchange(std::shared_ptr<state> s, std::string target, std::string text) {
  error_code ec;
  std::string words;
  json::object reply;
  const auto started = clock::now();
  constexpr auto retry_gap = std::chrono::milliseconds(100);
  for (int attempt = 0;; ++attempt) {
    if (s->closed) {
      ec = error::closed;
      words = "the etcd client is closed";
      break;
    }
    std::unique_ptr<connection> c;
    if (!s->idle.empty()) {
      c = std::move(s->idle.back());
      s->idle.pop_back();
    } else {
      open_failure why;
      c = co_await s->open(why);
      if (!c && !s->closed && !why.tls && clock::now() + retry_gap < started + s->cfg.request_timeout) {
        // No member now (one restarting, a leader being elected): the call waits for one
        // within its bound, as a request sent would wait for its reply.
        asio::steady_timer gap(s->ex, retry_gap);
        co_await gap.async_wait(await_tuple);
        continue;
      }
      if (!c) {
        ec = s->closed ? error_code(error::closed) : why.tls ? error_code(error::tls_failed) : error_code(error::not_connected);
        words = s->closed ? "the etcd client is closed"
                : why.tls ? "no etcd member could be reached over TLS (" + why.words + ")"
                          : "no etcd member answered within " + std::to_string(s->cfg.request_timeout.count()) +
                                " ms (" + why.words + ")";
        break;
      }
    }
    s->busy.insert(c.get());
    const bool reused = c->used;
    auto req = s->request(target, text, c->member);
    c->tcp().expires_after(s->cfg.request_timeout);
    auto [wec, wn] = co_await c->io([&](auto& st) { return http::async_write(st, req, await_tuple); });
    static_cast<void>(wn);
    http::response<http::string_body> res;
    error_code rec = wec;
    if (!wec) {
      auto [r, rn] = co_await c->io([&](auto& st) { return http::async_read(st, c->buffer, res, await_tuple); });
      rec = r;
      static_cast<void>(rn);
    }
    s->busy.erase(c.get());
    if (rec) {
      if (s->closed) {
        ec = error::closed;
        words = "the etcd client is closed";
        break;
      }
      if (!reused && corolock::detail::is_tls_error(rec) && rec != asio::ssl::error::stream_truncated) {
        // Under TLS 1.3 the member checks our certificate after our side of the handshake is
        // done: its refusal arrives as the first read.
        ec = error::tls_failed;
        words = "etcd member " + s->where(c->member) + ": TLS failed after the handshake (the member refused our "
                "certificate?): " + corolock::detail::describe_tls_failure(c->tls ? c->tls->native_handle() : nullptr, rec);
        break;
      }
      if (reused && attempt < 2 &&
          (wec || rec == http::error::end_of_stream || rec == asio::error::connection_reset ||
           rec == asio::ssl::error::stream_truncated))
        continue; // a keep-alive the member had closed: the call goes again, fresh
      ec = rec == beast::error::timeout ? error_code(error::timeout) : error_code(error::connection_lost);
      words = "etcd member " + s->where(c->member) +
              (rec == beast::error::timeout ? ": no reply within " + std::to_string(s->cfg.request_timeout.count()) + " ms"
                                            : ": the connection dropped with the request sent (" + rec.message() + ")");
      if (rec == beast::error::timeout)
        s->pass_over(c->member);
      if (c->tls && !reused && rec != beast::error::timeout)
        // Its alert can be lost: the member closed before our request reached it, and the reset
        // that answered the request discarded the alert unread.
        words += "; a member that requires a client certificate closes like this when it refuses ours";
      break;
    }
    const auto status = res.result_int();
    if (status == 200) {
      error_code jec;
      auto v = json::parse(res.body(), jec);
      if (jec || !v.is_object()) {
        ec = error::protocol_error;
        words = "etcd member " + s->where(c->member) + " sent a reply that is not a JSON object";
      } else {
        reply = std::move(v.as_object());
      }
      if (res.keep_alive())
        s->keep(std::move(c));
      break;
    }
    auto e = error_of(status, res.body());
    if (e.ec == error::not_connected && attempt + 1 < static_cast<int>(s->cfg.hosts.size()) + 1) {
      // This member cannot serve (no leader, stopping): the next one may.
      if (s->current == c->member)
        s->current = (c->member + 1) % s->cfg.hosts.size();
      words += (words.empty() ? "" : "; ") + s->where(c->member) + ": " + e.words;
      continue;
    }
    ec = e.ec;
    words = e.words;
    if (res.keep_alive())
      s->keep(std::move(c));
    break;
  }
  co_return exchanged{ec, std::move(reply), std::move(words)};
}

void gateway::call(std::string target, const json::object& body, reply_handler h, lane l) {
  auto s = s_;
  asio::co_spawn(
      s->ex,
      [s, l, target = std::move(target), text = json::serialize(body), h = std::move(h)]() mutable -> asio::awaitable<void> {
        state::turn mine;
        if (l == lane::lock) {
          auto t = state::take_turn(s);
          mine = co_await std::move(t);
        }
        // With a user: a token first (etcd's auth/authenticate), and again once when the member
        // says the token is no longer valid (etcd's simple tokens expire: 5 minutes by default).
        const bool auth = !s->cfg.username.empty();
        for (int tries = 0;; ++tries) {
          if (auth && s->token.empty()) {
            json::object who{{"name", s->cfg.username}, {"password", s->cfg.password}};
            auto a = co_await state::exchange(s, "/v3/auth/authenticate", json::serialize(who));
            const auto* t = a.ec ? nullptr : a.reply.if_contains("token");
            if (!t || !t->is_string()) {
              if (!a.ec) {
                a.ec = error::protocol_error;
                a.words = "etcd authenticated without a token";
              } else if (a.ec == error::invalid_argument) {
                a.ec = error::auth_failed; // etcd's answer to a wrong password
              }
              co_return h(a.ec, {}, "etcd user '" + s->cfg.username + "': " + a.words);
            }
            s->token = std::string(t->as_string());
          }
          auto r = co_await state::exchange(s, target, text);
          if (auth && r.ec == error::auth_failed && tries == 0) {
            s->token.clear(); // expired or revoked: authenticate again, then this request again
            continue;
          }
          co_return h(r.ec, std::move(r.reply), std::move(r.words));
        }
      },
      asio::detached);
}

namespace {

class stream_watch final : public gateway::watch {
public:
  bool cancelled = false;
  gateway::connection* conn = nullptr;
  void cancel() override {
    cancelled = true;
    if (conn) {
      // Reset, not closed: a watch is one connection (the file's comment), and a waiter that is
      // woken often would otherwise leave a socket in TIME-WAIT per wake-up (a thousand per second
      // on a busy lock exhausts the ephemeral ports in half a minute).
      error_code ignored;
      conn->tcp().socket().set_option(asio::socket_base::linger(true, 0), ignored);
      conn->tcp().socket().close(ignored);
    }
  }
  ~stream_watch() override { cancel(); }
};

} // namespace

std::shared_ptr<gateway::watch> gateway::open_watch(const json::object& create_request,
                                                    std::function<void(const json::object&)> on_result,
                                                    std::function<void(error_code, std::string)> on_end) {
  auto w = std::make_shared<stream_watch>();
  json::object body;
  body["create_request"] = create_request;
  auto s = s_;
  asio::co_spawn(
      s->ex,
      [s, ww = std::weak_ptr<stream_watch>(w), text = json::serialize(body), on_result = std::move(on_result),
       on_end = std::move(on_end)]() mutable -> asio::awaitable<void> {
        const auto gone = [&] {
          auto w = ww.lock();
          return !w || w->cancelled;
        };
        if (s->closed || gone()) {
          if (!gone())
            on_end(error::closed, "the etcd client is closed");
          co_return;
        }
        open_failure why;
        auto c = co_await s->open(why);
        if (!c) {
          if (!gone())
            on_end(s->closed ? error_code(error::closed) : why.tls ? error_code(error::tls_failed) : error_code(error::not_connected),
                   "no etcd member answered (" + why.words + ")");
          co_return;
        }
        if (auto w = ww.lock()) {
          if (w->cancelled)
            co_return;
          w->conn = c.get();
        } else {
          co_return;
        }
        // The watch forgets the connection when this frame goes, however it goes (an io_context
        // torn down destroys it unfinished).
        struct forget {
          std::weak_ptr<stream_watch> w;
          ~forget() {
            if (auto p = w.lock())
              p->conn = nullptr;
          }
        } forget_connection{ww};
        s->busy.insert(c.get());
        auto req = s->request("/v3/watch", text, c->member);
        c->tcp().expires_after(s->cfg.request_timeout);
        auto [wec, wn] = co_await c->io([&](auto& st) { return http::async_write(st, req, await_tuple); });
        static_cast<void>(wn);
        http::response_parser<http::string_body> parser;
        parser.body_limit(boost::none);
        std::string lines;
        auto on_chunk = [&lines](std::uint64_t, std::string_view body, error_code& ec) {
          lines.append(body);
          ec = {};
          return body.size();
        };
        parser.on_chunk_body(on_chunk);
        error_code ec = wec;
        if (!ec) {
          auto [hec, hn] = co_await c->io([&](auto& st) { return http::async_read_header(st, c->buffer, parser, await_tuple); });
          ec = hec;
          static_cast<void>(hn);
        }
        if (!ec && parser.get().result_int() != 200) {
          auto [bec, bn] = co_await c->io([&](auto& st) { return http::async_read(st, c->buffer, parser, await_tuple); });
          static_cast<void>(bec);
          static_cast<void>(bn);
          auto e = error_of(parser.get().result_int(), lines.empty() ? parser.get().body() : lines);
          s->busy.erase(c.get());
          if (auto w = ww.lock()) {
            w->conn = nullptr;
            if (!w->cancelled)
              on_end(e.ec, std::move(e.words));
          }
          co_return;
        }
        c->tcp().expires_never();
        while (!ec && !parser.is_done()) {
          auto [rec, rn] = co_await c->io([&](auto& st) { return http::async_read_some(st, c->buffer, parser, await_tuple); });
          static_cast<void>(rn);
          ec = rec;
          if (gone())
            break;
          std::size_t start = 0;
          for (auto nl = lines.find('\n'); nl != std::string::npos; nl = lines.find('\n', start)) {
            error_code jec;
            auto v = json::parse(std::string_view(lines).substr(start, nl - start), jec);
            start = nl + 1;
            if (!jec && v.is_object())
              if (const auto* r = v.as_object().if_contains("result"); r && r->is_object()) {
                on_result(r->as_object());
                if (gone())
                  break;
              }
          }
          lines.erase(0, start);
          if (gone())
            break;
        }
        s->busy.erase(c.get());
        auto w = ww.lock();
        if (w)
          w->conn = nullptr; // the connection goes with this frame
        if (!w || w->cancelled)
          co_return;
        on_end(error::connection_lost,
               "the watch stream of etcd member " + s->where(c->member) + " ended" +
                   (ec ? " (" + ec.message() + ")" : std::string()));
      },
      asio::detached);
  return w;
}

} // namespace corolock::etcd::detail
