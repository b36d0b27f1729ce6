// The etcd client's lease as its session (lease_session.hpp).
#include "backends/etcd/lease_session.hpp"

#include "backends/etcd/wire.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

#include <charconv>
#include <optional>

namespace corolock::etcd::detail {

namespace json = boost::json;

namespace {
/// "http://host:port" as an endpoint; nullopt for another scheme (https: not served yet) or shape.
std::optional<endpoint> plain_endpoint(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (!url.starts_with(scheme))
    return std::nullopt;
  url.remove_prefix(scheme.size());
  if (const auto slash = url.find('/'); slash != std::string_view::npos)
    url = url.substr(0, slash);
  const auto colon = url.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return std::nullopt;
  unsigned port = 0;
  const auto digits = url.substr(colon + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc{} || end != digits.data() + digits.size() || port == 0 || port > 65535)
    return std::nullopt;
  auto host = url.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return endpoint{std::string(host), static_cast<std::uint16_t>(port)};
}
} // namespace

lease_session::lease_session(asio::any_io_executor ex, config cfg)
    : ex_(ex), gw_(std::make_shared<gateway>(ex, cfg)),
      ttl_(std::max<std::int64_t>(1, (cfg.lease.count() + 999) / 1000)), timer_(ex) {}

void lease_session::connect(std::function<void(error_code, std::string)> h) {
  started_ = true;
  // A user's token is the gateway's business (it authenticates before its first request).
  grant([self = shared_from_this(), h = std::move(h)](error_code ec, std::string words) mutable {
    if (!ec && self->gw_->get_config().follow_members)
      self->learn_members();
    h(ec, std::move(words));
  });
}

void lease_session::learn_members() {
  gw_->call("/v3/cluster/member/list", json::object{}, [w = weak_from_this()](error_code ec, json::object reply, std::string) {
    auto self = w.lock();
    if (!self || ec)
      return; // the URL's members serve on their own
    std::vector<endpoint> found;
    if (const auto* ms = reply.if_contains("members"); ms && ms->is_array())
      for (const auto& m : ms->as_array()) {
        const auto* urls = m.is_object() ? m.as_object().if_contains("clientURLs") : nullptr;
        if (!urls || !urls->is_array())
          continue;
        for (const auto& u : urls->as_array())
          if (u.is_string())
            if (auto e = plain_endpoint(std::string_view(u.as_string())))
              found.push_back(std::move(*e));
      }
    self->gw_->add_members(std::move(found));
  });
}

void lease_session::grant(std::function<void(error_code, std::string)> h) {
  const auto sent = clock::now();
  json::object body{{"TTL", std::to_string(ttl_.count())}};
  gw_->call("/v3/lease/grant", body,
            [self = shared_from_this(), sent, h = std::move(h)](error_code ec, json::object reply, std::string words) {
              if (self->closed_)
                return h(error::closed, "the etcd client is closed");
              const auto id = ec ? 0 : number(reply, "ID");
              if (!ec && id == 0) {
                ec = error::protocol_error;
                words = "etcd granted a lease without an ID";
              }
              if (ec)
                return h(ec, std::move(words));
              self->lease_ = id;
              self->answering_ = true;
              self->alive_until_ = sent + std::chrono::seconds(std::max<std::int64_t>(1, number(reply, "TTL")));
              if (self->told_.alive)
                self->told_.alive(id, self->alive_until_);
              self->schedule(self->every());
              h({}, {});
            },
            gateway::lane::session);
}

void lease_session::schedule(clock::duration after) {
  timer_.expires_after(after);
  timer_.async_wait([w = weak_from_this()](error_code ec) {
    if (auto self = w.lock(); self && !ec && !self->closed_)
      self->keepalive();
  });
}

void lease_session::keepalive() {
  // The cadence is kept from each send, answered or not: waiting for a slow answer before the next
  // third of the TTL starts would let two slow answers in a row (a member under load) outlast the
  // bound, although the member renewed the lease each time.
  schedule(every());
  if (in_flight_ >= 2)
    return; // the member has not answered the last two: a third would only queue behind them
  const auto sent = clock::now();
  const auto id = lease_;
  const auto seq = ++sent_;
  ++in_flight_;
  json::object body{{"ID", std::to_string(id)}};
  gw_->call("/v3/lease/keepalive", body,
            [w = weak_from_this(), sent, id, seq](error_code ec, json::object reply, std::string) {
              auto self = w.lock();
              if (!self)
                return;
              --self->in_flight_;
              if (self->closed_ || self->lease_ != id)
                return;
              // Only the latest keepalive heard says whether the store answers now; an older one's
              // answer may still move the bound.
              const bool latest = seq > self->heard_;
              if (latest)
                self->heard_ = seq;
              if (ec) { // unanswered: the bound stays; again soon, to the next member if need be
                if (!latest)
                  return;
                if (std::exchange(self->answering_, false) && self->told_.unreachable)
                  self->told_.unreachable();
                if (self->timer_.expiry() > clock::now() + self->retry_after())
                  self->schedule(self->retry_after());
                return;
              }
              const auto* result = reply.if_contains("result");
              const auto ttl = result && result->is_object() ? number(result->as_object(), "TTL") : 0;
              if (ttl <= 0) // expired or revoked: every key of it is gone
                return self->lease_gone(id);
              self->alive_until_ = std::max(self->alive_until_, sent + std::chrono::seconds(ttl));
              if (self->told_.alive)
                self->told_.alive(id, self->alive_until_);
              if (latest && !std::exchange(self->answering_, true) && self->told_.reachable)
                self->told_.reachable();
            },
            gateway::lane::session);
}

void lease_session::regrant() {
  grant([w = weak_from_this()](error_code ec, std::string) {
    auto self = w.lock();
    if (!self || self->closed_)
      return;
    if (ec) { // no lease yet: ask again soon
      self->answering_ = false;
      self->timer_.expires_after(self->retry_after());
      self->timer_.async_wait([w](error_code tec) {
        if (auto s = w.lock(); s && !tec && !s->closed_)
          s->regrant();
      });
      return;
    }
    if (self->told_.reachable)
      self->told_.reachable();
  });
}

void lease_session::lease_gone(std::int64_t id) {
  if (closed_ || id == 0 || lease_ != id)
    return; // told already, or another lease now
  lease_ = 0;
  timer_.cancel(); // the keepalive of the lease that is gone
  if (told_.lost)
    told_.lost(id);
  regrant();
}

void lease_session::close(std::function<void()> h) {
  if (closed_) {
    asio::post(ex_, std::move(h));
    return;
  }
  closed_ = true;
  timer_.cancel();
  const auto id = std::exchange(lease_, 0);
  if (id == 0) {
    gw_->shutdown();
    asio::post(ex_, std::move(h));
    return;
  }
  // The gateway still serves this one request although closed_ is set here (it reads its own).
  json::object body{{"ID", std::to_string(id)}};
  gw_->call("/v3/lease/revoke", body, [self = shared_from_this(), h = std::move(h)](error_code, json::object, std::string) {
    self->gw_->shutdown();
    h();
  }, gateway::lane::session);
}

void lease_session::give_up() {
  closed_ = true;
  timer_.cancel();
  gw_->shutdown();
}

} // namespace corolock::etcd::detail
