// Private: the lock core on a Redis client. The client (a lock_source) owns its engine over the
// Redis backend (lock_backend.hpp; on a cluster client cluster_backend.hpp, which puts a
// lock_backend on each master's client); this hook shares it and hangs on the client_impl as its
// client_extension, attached when the first handle made the engine and destroyed with the
// client_impl. The client knows no lock; through this hook its reconnects reach the backend
// (every lease checked at once) and its close reaches the engine and the backend: waiting callers
// fail with closed, leases end, and one release per held lock, open bid and give-up in flight goes
// into the client's last request on the lock connection, sent before that connection closes (the
// same bound as any request: request_timeout).
#pragma once

#include "backends/redis/client/client_impl.hpp"

#include <memory>

namespace corolock::core {
class engine;
}

namespace corolock::redis::detail {

class lock_backend;
class cluster_backend;

class engine_hook final : public corolock::redis::detail::client_extension {
public:
  /// Hangs the hook of `engine` (over a lock_backend or cluster_backend of `c`) on `c`.
  static void attach(const std::shared_ptr<corolock::redis::detail::client_impl>& c,
                     std::shared_ptr<core::engine> engine);
  /// The hook hung on `c`, or null before its first lock handle.
  static engine_hook* find(const corolock::redis::detail::client_impl& c);

  explicit engine_hook(std::shared_ptr<core::engine> engine);
  ~engine_hook() override;

  core::engine& engine() noexcept { return *engine_; }
  /// Lock channels kept and owners remembered, over the client (every node of a cluster): for
  /// tests.
  std::size_t channels() const;
  std::size_t owners_remembered() const;

  void on_reconnect() override;
  void on_close(corolock::redis::request& last) override;

private:
  std::shared_ptr<core::engine> engine_;
  lock_backend* backend_ = nullptr;    // owned by engine_: a standalone or Sentinel client's
  cluster_backend* cluster_ = nullptr; // owned by engine_: a cluster client's
};

} // namespace corolock::redis::detail
