// Private: the lease the core grants over a core::backend — one acquisition held at the store.
//
// It knows its engine weakly: a lease outliving its engine (a guard kept after the client went)
// reads as lost (now() is the end of time) and its release completes with error::closed. While the
// engine lives, the keeper watches it from the grant until it leaves the held state (unwatch), and
// every store call it makes (release, give_back) runs on the backend's executor.
#pragma once

#include "core/backend.hpp"
#include "core/lease.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace corolock::core {

class engine_impl;

class engine_lease final : public lease {
public:
  engine_lease(const std::shared_ptr<engine_impl>& e, std::shared_ptr<const lock_spec> spec,
               std::string owner, const grant& g, detail::lease_timing t, std::int64_t permits,
               bool shared);

  const std::string& name() const noexcept override { return spec->name; }
  clock::time_point now() const override;
  void release(diagnostics* diag, detail::handler<void(error_code)> h) override;

  /// What the backend needs to release or renew it.
  held describe() const;

  std::weak_ptr<engine_impl> eng;
  std::shared_ptr<const lock_spec> spec;
  std::uint64_t session = 0;
  std::size_t slot = 0; ///< its place in the keeper (keeper.hpp)

protected:
  void unwatch() noexcept override;
  void give_back() override;
};

} // namespace corolock::core
