// A lock_source owns its client's lock core: one engine over the store's backend, made once by
// the client (make_lock_core), and destroyed with the client after the client's own members (a
// client closes its core in its destructor, so what the backend still refers to is cut off first).
#include <corolock/lock_source.hpp>

#include "core/engine.hpp"
#include "core/source_access.hpp"

#include <boost/assert.hpp>

namespace corolock {

lock_source::lock_source() noexcept = default;
lock_source::~lock_source() = default;

const std::shared_ptr<core::engine>&
lock_source::make_lock_core(std::unique_ptr<core::backend> backend) {
  BOOST_ASSERT_MSG(!core_, "a client makes its lock core once");
  core_ = core::engine::create(std::move(backend));
  return core_;
}

void lock_source::set_observer(std::shared_ptr<lock_observer> observer) {
  core::source_access::core_of(*this).set_observer(std::move(observer));
}

} // namespace corolock
