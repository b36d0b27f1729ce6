#include "backends/redis/replica_acks.hpp"

#include "backends/redis/script_requests.hpp"
#include "backends/redis/script_replies.hpp"
#include "backends/redis/scripts.hpp"

#include <corolock/error.hpp>

#include <boost/asio/post.hpp>

namespace corolock::redis::detail {

namespace {
/// Locks acknowledged by one WAIT at most (a bound on one request's size).
constexpr std::size_t max_batch = 64;
/// Sends of a batch whose connection dropped before its replies came (outcome unknown).
constexpr int max_tries = 3;

client_config ack_connection_config(client_config cfg) {
  if (!cfg.client_name.empty())
    cfg.client_name += "-acks";
  return cfg;
}
} // namespace

replica_acks::replica_acks(const std::shared_ptr<lock_link>& c)
    : client_(c), ex_(c->executor()), cfg_(ack_connection_config(c->config())) {}

replica_acks::~replica_acks() {
  if (conn_)
    conn_->close();
}

void replica_acks::confirm(std::shared_ptr<const lock_names> names, std::string owner,
                           std::uint64_t token, std::chrono::milliseconds lease, int replicas,
                           std::chrono::milliseconds timeout,
                           std::function<void(const replica_ack&)> done) {
  if (closed_) {
    asio::post(ex_, [done = std::move(done)] { done({error::closed}); });
    return;
  }
  queue_.push_back({std::move(names), std::move(owner), token, lease, replicas, timeout,
                    std::move(done)});
  if (!conn_)
    start_connection();
  else
    send_next();
}

void replica_acks::start_connection() {
  conn_ = std::make_shared<connection_impl>(ex_, cfg_);
  connecting_ = true;
  conn_->start([weak = client_, me = weak_from_this(),
                conn = conn_](error_code ec) {
    auto c = weak.lock();
    auto self = me.lock();
    if (!c || !self || self->conn_ != conn)
      return; // gone, or closed meanwhile
    self->connecting_ = false;
    if (ec) {
      // Nobody can be told of acknowledgements: what waits fails now, the next lock tries again.
      self->conn_.reset();
      for (auto& it : std::exchange(self->queue_, {}))
        it.done({ec == error::connect_failed ? error_code(error::not_connected) : ec});
      return;
    }
    self->send_next();
  });
}

void replica_acks::send_next() {
  if (in_flight_ || connecting_ || closed_ || queue_.empty())
    return;
  // The batch: the waiting locks that ask for the same count and timeout, in order.
  const int replicas = queue_.front().replicas;
  const auto timeout = queue_.front().timeout;
  std::vector<item> batch;
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < max_batch;) {
    if (it->replicas == replicas && it->timeout == timeout) {
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  request req;
  for (auto& it : batch) {
    push_renew(req, *it.names, it.owner, it.token, it.lease);
    // EVAL, not EVALSHA: a NOSCRIPT reply is replayed after the whole request, after the WAIT,
    // which would then count an older write. (A replayed renewal still checks; it just runs late.)
    req.push("EVAL", mark_script().source(), "1", it.names->key);
  }
  req.push("WAIT", std::to_string(replicas), std::to_string(timeout.count()));
  // WAIT answers by its timeout; the client's request timeout bounds the rest of the trip.
  req.opts().timeout = timeout + cfg_.request_timeout;
  in_flight_ = true;
  const auto sent_at = steady::now();
  conn_->exec(std::move(req), [weak = client_, me = weak_from_this(),
                               batch = std::move(batch), sent_at](error_code ec,
                                                                  response r) mutable {
    auto c = weak.lock();
    if (auto self = me.lock(); c && self)
      self->finish(std::move(batch), ec, r, sent_at);
  });
}

void replica_acks::finish(std::vector<item> batch, error_code ec, const response& r,
                          steady::time_point sent_at) {
  in_flight_ = false;
  if (ec == error::connection_lost && !closed_) {
    // Unknown whether it ran: renewing and marking again is harmless; ahead of later arrivals.
    std::vector<item> failed;
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
      if (++it->tries < max_tries)
        queue_.push_front(std::move(*it));
      else
        failed.push_back(std::move(*it));
    }
    batch = std::move(failed);
  }
  const auto n = batch.size();
  error_code all = ec;
  std::string all_text;
  std::int64_t acknowledged = -1;
  if (!ec) {
    const auto& wait = r.at(r.size() - 1);
    if (wait.is_error()) {
      if (auto c = client_.lock())
        c->note_server_error(wait.data); // e.g. WAIT sent to a replica
      all_text = wait.data;
      all = error::redis_error;
    } else if (wait.type != resp::type::integer || wait.integer < 0) {
      all = error::unexpected_reply;
    } else {
      acknowledged = wait.integer;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto& it = batch[i];
    replica_ack out;
    out.sent_at = sent_at;
    out.ec = all;
    out.text = all_text;
    if (!all) {
      const auto& renewed = r.at(2 * i);
      const auto& marked = r.at(2 * i + 1);
      if (renewed.is_error() || marked.is_error()) {
        out.text = renewed.is_error() ? renewed.data : marked.data;
        if (auto c = client_.lock())
          c->note_server_error(out.text);
        out.ec = error::redis_error;
      } else {
        // Not ours any more (the lease ran out first): no mark was written, nothing to count.
        const auto r_renewed = read_renew_reply(renewed), r_marked = read_renew_reply(marked);
        out.held = r_renewed == renew_reply::held && r_marked == renew_reply::held;
        if (r_renewed == renew_reply::unexpected || r_marked == renew_reply::unexpected) {
          out.ec = error::unexpected_reply;
        } else if (out.held && acknowledged < it.replicas) {
          out.ec = error::not_replicated;
          out.text = std::to_string(acknowledged) + " of the " + std::to_string(it.replicas) +
                     " replicas wanted acknowledged in time";
        }
      }
    }
    it.done(out);
  }
  send_next();
}

void replica_acks::close() {
  closed_ = true;
  for (auto& it : std::exchange(queue_, {}))
    asio::post(ex_, [done = std::move(it.done)] { done({error::closed}); });
  if (conn_)
    conn_->close(); // a batch in flight fails with error::closed
  conn_.reset();
}

} // namespace corolock::redis::detail
