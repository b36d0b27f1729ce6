#include "backends/redis/engine_hook.hpp"

#include "backends/redis/cluster_backend.hpp"
#include "backends/redis/lock_backend.hpp"
#include "core/engine.hpp"

#include <boost/assert.hpp>

namespace corolock::redis::detail {

engine_hook::engine_hook(std::shared_ptr<core::engine> engine) : engine_(std::move(engine)) {
  backend_ = dynamic_cast<lock_backend*>(&engine_->store());
  if (!backend_)
    cluster_ = &dynamic_cast<cluster_backend&>(engine_->store());
}

void engine_hook::attach(const std::shared_ptr<corolock::redis::detail::client_impl>& c,
                         std::shared_ptr<core::engine> engine) {
  BOOST_ASSERT_MSG(!c->extension(), "a client's locks run on one lock core");
  c->set_extension(std::make_unique<engine_hook>(std::move(engine)));
}

engine_hook* engine_hook::find(const corolock::redis::detail::client_impl& c) {
  return dynamic_cast<engine_hook*>(c.extension());
}

std::size_t engine_hook::channels() const {
  return backend_ ? backend_->channels() : cluster_->channels();
}

std::size_t engine_hook::owners_remembered() const {
  return backend_ ? backend_->owners_remembered() : cluster_->owners_remembered();
}

engine_hook::~engine_hook() = default;

void engine_hook::on_reconnect() {
  if (backend_)
    backend_->on_reconnect(); // a cluster client's own connections stay idle: its nodes reconnect
}

void engine_hook::on_close(corolock::redis::request& last) {
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
