#include "backends/redis/engine_hook.hpp"

#include "backends/redis/lock_backend.hpp"
#include "core/engine.hpp"

#include <boost/assert.hpp>

namespace corolock::redis::detail {

engine_hook::engine_hook(const std::shared_ptr<corolock::detail::client_impl>& c) {
  auto b = std::make_unique<lock_backend>(c);
  backend_ = b.get();
  engine_ = core::engine::create(std::move(b));
}

engine_hook::~engine_hook() = default;

engine_hook& engine_hook::of(const std::shared_ptr<corolock::detail::client_impl>& c) {
  if (!c->extension)
    c->extension = std::make_unique<engine_hook>(c);
  auto* hook = dynamic_cast<engine_hook*>(c->extension.get());
  BOOST_ASSERT_MSG(hook, "a client's locks run on one lock layer");
  return *hook;
}

void engine_hook::on_reconnect() { backend_->on_reconnect(); }

void engine_hook::on_close(corolock::request& last) {
  // The backend first: its releases go into `last`, and it is closed when the engine's close
  // reaches it (the contenders the engine withdraws then send nothing of their own).
  backend_->close_into(last);
  engine_->close(std::chrono::milliseconds(0), [] {});
}

} // namespace corolock::redis::detail
