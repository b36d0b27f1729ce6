#include "backends/redis/client/failover_watch.hpp"

#include "backends/redis/client/sentinel.hpp"

#include <corolock/error.hpp>

#include <random>

namespace corolock::redis::detail {

namespace {
constexpr std::string_view switch_channel = "+switch-master";

asio::awaitable<error_code> located() { co_return error_code{}; }
} // namespace

failover_watch::failover_watch(asio::any_io_executor ex, const client_config& cfg,
                               master_handler on_master)
    : ex_(ex), cfg_(cfg), on_master_(std::move(on_master)), retry_(ex),
      retry_delay_(cfg.reconnect_min, cfg.reconnect_max, std::random_device{}()) {
  auto watch_cfg = sentinel_connection_config(cfg_, cfg_.sentinel.addresses.front());
  watch_cfg.reconnect = true;
  conn_ = std::make_shared<connection_impl>(ex_, std::move(watch_cfg));
  // Each attempt goes to the next Sentinel: one that dropped us may be down for a while.
  auto turn = std::make_shared<std::size_t>(0);
  conn_->locate_ = [sentinels = cfg_.sentinel.addresses, turn](server_address& out) {
    const auto& s = sentinels[(*turn)++ % sentinels.size()];
    out = server_address{s.host, s.port};
    return located();
  };
}

failover_watch::~failover_watch() { close(); }

void failover_watch::start() { connect(); }

void failover_watch::close() {
  if (closed_)
    return;
  closed_ = true;
  retry_.cancel();
  if (subs_)
    subs_->close_all();
  conn_->close();
}

void failover_watch::connect() {
  // The connection retries by itself once it has been up; its first connect gives up on the first
  // failure, so until one Sentinel has answered the watch retries here.
  conn_->start([weak = weak_from_this()](error_code ec) {
    auto self = weak.lock();
    if (!self || self->closed_)
      return;
    if (!ec) {
      self->subscribe();
      return;
    }
    self->retry_.expires_after(self->retry_delay_.next());
    self->retry_.async_wait([weak = self->weak_from_this()](error_code wec) {
      if (auto s = weak.lock(); s && !wec && !s->closed_)
        s->connect();
    });
  });
}

void failover_watch::subscribe() {
  subs_ = std::make_shared<subscriber>(*conn_, false);
  std::weak_ptr<subscriber> weak = subs_;
  conn_->on_push_ = [weak](resp::value&& v, steady::time_point after) {
    if (auto s = weak.lock())
      s->on_push(std::move(v), after);
  };
  conn_->on_connected_ = [weak](bool reconnect) {
    if (auto s = weak.lock())
      s->on_connected(reconnect);
  };
  subs_->add(std::string(switch_channel), this);
}

void failover_watch::on_message(std::string_view channel, std::string_view payload,
                                steady::time_point) {
  if (channel != switch_channel)
    return;
  if (auto at = parse_switch_master(payload, cfg_.sentinel.master_name)) {
    ++switches_;
    on_master_(*at, true);
  }
}

void failover_watch::on_subscribed(bool) { ask_where_master_is(); }

void failover_watch::on_refused(error_code, std::string_view) {
  // This Sentinel will not let us listen (an ACL): try the next one.
  if (closed_)
    return;
  subs_->add(std::string(switch_channel), this);
  conn_->drop();
}

void failover_watch::ask_where_master_is() {
  request ask;
  ask.push("SENTINEL", "GET-MASTER-ADDR-BY-NAME", cfg_.sentinel.master_name);
  conn_->exec(std::move(ask), [weak = weak_from_this()](error_code ec, response r) {
    auto self = weak.lock();
    if (!self || self->closed_ || ec || r.empty())
      return;
    if (auto at = parse_master_address(r[0]))
      self->on_master_(*at, false);
  });
}

} // namespace corolock::redis::detail
