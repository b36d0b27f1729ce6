#include "backends/redis/engine_hook.hpp"

#include "backends/redis/cluster_backend.hpp"
#include "backends/redis/lock_backend.hpp"
#include "core/engine.hpp"

#include <boost/assert.hpp>

namespace corolock::redis::detail {

engine_hook::engine_hook(const std::shared_ptr<corolock::detail::client_impl>& c) {
  // Known before connect: a handle may be made first.
  if (c->config().cluster.enabled()) {
    auto b = std::make_unique<cluster_backend>(c);
    cluster_ = b.get();
    engine_ = core::engine::create(std::move(b));
    return;
  }
  auto b = std::make_unique<lock_backend>(c);
  backend_ = b.get();
  engine_ = core::engine::create(std::move(b));
}

std::size_t engine_hook::channels() const {
  return backend_ ? backend_->channels() : cluster_->channels();
}

std::size_t engine_hook::owners_remembered() const {
  return backend_ ? backend_->owners_remembered() : cluster_->owners_remembered();
}

engine_hook::~engine_hook() = default;

engine_hook& engine_hook::of(const std::shared_ptr<corolock::detail::client_impl>& c) {
  if (!c->extension())
    c->set_extension(std::make_unique<engine_hook>(c));
  auto* hook = dynamic_cast<engine_hook*>(c->extension());
  BOOST_ASSERT_MSG(hook, "a client's locks run on one lock layer");
  return *hook;
}

void engine_hook::on_reconnect() {
  if (backend_)
    backend_->on_reconnect(); // a cluster client's own connections stay idle: its nodes reconnect
}

void engine_hook::on_close(corolock::request& last) {
  // The backend first: its releases go into `last`, and it is closed when the engine's close
  // reaches it (the contenders the engine withdraws then send nothing of their own). A cluster's
  // releases go out from each node's own close, which comes after this one.
  if (backend_)
    backend_->close_into(last);
  else
    cluster_->shut();
  engine_->close(std::chrono::milliseconds(0), [] {});
}

} // namespace corolock::redis::detail
