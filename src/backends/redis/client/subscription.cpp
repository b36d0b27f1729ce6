#include "detail/completion.hpp"
#include "detail/diagnostics_access.hpp"
#include "backends/redis/client/client_impl.hpp"
#include "backends/redis/client/cluster/cluster_nodes.hpp"

#include <corolock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include <deque>

namespace corolock::redis {
using corolock::detail::stored_handler;
using corolock::detail::complete_later;
using corolock::detail::diagnostics_access;
using corolock::detail::handler;
namespace detail {

class subscription_state : public listener,
                           public std::enable_shared_from_this<subscription_state> {
public:
  subscription_state(std::shared_ptr<client_impl> c, std::string ch)
      : client_(c), ex_(c->ex), channel_(std::move(ch)) {}

  void on_message(std::string_view channel, std::string_view payload,
                  steady::time_point) override {
    queue_.push_back(message{std::string(channel), std::string(payload), false});
    deliver();
  }
  void on_subscribed(bool restored) override {
    if (!restored)
      return;
    queue_.push_back(message{channel_, {}, true});
    deliver();
  }
  void on_refused(error_code ec, std::string_view text) override {
    registered_ = false;
    closed_ = true;
    failure_ = ec;
    failure_text_ = text;
    if (auto c = client_.lock(); c && !text.empty())
      c->last_server_error = std::string(text);
    deliver();
  }
  void on_closed() override {
    registered_ = false;
    closed_ = true;
    deliver();
  }

  void receive(diagnostics* diag, handler<void(error_code, message)> h) {
    if (waiting_) {
      // One receive at a time, as with Asio's own I/O objects.
      asio::post(ex_, asio::append(std::move(h), error_code(error::invalid_argument), message{}));
      return;
    }
    waiting_.set(std::move(h));
    diag_ = diag;
    slot_ = asio::get_associated_cancellation_slot(waiting_.get());
    if (slot_.is_connected()) {
      slot_.assign([weak = weak_from_this()](asio::cancellation_type) {
        if (auto s = weak.lock(); s && s->waiting_)
          s->complete(asio::error::operation_aborted, {});
      });
    }
    deliver();
  }

  void unsubscribe() {
    if (registered_) {
      registered_ = false;
      if (auto c = client_.lock(); c && c->user_subs)
        c->user_subs->remove(channel_, this);
    }
    closed_ = true;
    deliver();
  }

  const std::string& channel() const { return channel_; }
  std::size_t pending() const { return queue_.size(); }
  void mark_registered() { registered_ = true; }

private:
  void deliver() {
    if (!waiting_)
      return;
    if (!queue_.empty()) {
      auto m = std::move(queue_.front());
      queue_.pop_front();
      complete({}, std::move(m));
    } else if (closed_) {
      if (failure_)
        diagnostics_access::of(diag_, failure_, failure_text_);
      complete(failure_ ? failure_ : error_code(error::closed), {});
    }
  }
  void complete(error_code ec, message m) {
    auto h = waiting_.take();
    auto slot = slot_;
    slot_ = {};
    diag_ = nullptr;
    complete_later(ex_, std::move(h), slot, ec, std::move(m));
  }

  std::weak_ptr<client_impl> client_;
  asio::any_io_executor ex_;
  std::string channel_;
  std::deque<message> queue_;
  stored_handler<handler<void(error_code, message)>> waiting_;
  asio::cancellation_slot slot_;
  diagnostics* diag_ = nullptr; // the waiting receive's
  error_code failure_;          // why the server ended the subscription, if it did
  std::string failure_text_;    // and in its words
  bool registered_ = false;
  bool closed_ = false;
};

} // namespace detail

subscription::subscription(std::shared_ptr<detail::subscription_state> state)
    : state_(std::move(state)) {}

subscription& subscription::operator=(subscription&& other) noexcept {
  if (this != &other) {
    if (state_)
      state_->unsubscribe();
    state_ = std::move(other.state_);
  }
  return *this;
}

subscription::~subscription() {
  if (state_)
    state_->unsubscribe();
}

const std::string& subscription::channel() const {
  static const std::string none;
  return state_ ? state_->channel() : none;
}

std::size_t subscription::pending() const { return state_ ? state_->pending() : 0; }

void subscription::unsubscribe() {
  if (state_)
    state_->unsubscribe();
}

void subscription::async_receive_impl(diagnostics* diag,
                                      corolock::detail::handler<void(error_code, message)> h) {
  if (!state_) {
    // A moved-from subscription has no executor of its own: complete on the handler's.
    corolock::detail::complete_later(asio::system_executor(), std::move(h), {},
                           error_code(error::closed), message{});
    return;
  }
  state_->receive(diag, std::move(h));
}

subscription client::subscribe(std::string channel) {
  if (channel.empty())
    throw boost::system::system_error(error::invalid_argument, "empty channel name");
  if (impl_->closed())
    throw boost::system::system_error(error::closed, "subscribe after close");
  // On a cluster: classic SUBSCRIBE on one master, which hears what is PUBLISHed on any node.
  auto on = impl_;
  if (impl_->cfg.cluster.enabled()) {
    on = impl_->cluster ? impl_->cluster->subscription_node(channel) : nullptr;
    if (on && on->pubsub)
      // A RESP2 node's one pub/sub connection carries the lock layer's sharded channels.
      throw boost::system::system_error(error::invalid_argument,
                                        "subscribe on a cluster needs RESP3 (protocol 3)");
    if (!on)
      throw boost::system::system_error(error::not_connected,
                                        impl_->cluster ? "subscribe: no master connected"
                                                       : "subscribe before connect");
  }
  if (!on->user_subs)
    throw boost::system::system_error(error::not_connected, "subscribe before connect");
  auto state = std::make_shared<detail::subscription_state>(on, std::move(channel));
  on->user_subs->add(state->channel(), state.get());
  state->mark_registered();
  return subscription(std::move(state));
}

} // namespace corolock::redis
