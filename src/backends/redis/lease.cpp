#include "backends/redis/lease.hpp"

#include "backends/redis/lock_service.hpp"

#include <corolock/error.hpp>

namespace corolock::detail {

lock_names::lock_names(const std::string& prefix, std::string lock_name)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}") {}

lock_names::lock_names(const std::string& prefix, std::string lock_name, std::string_view suffix,
                       std::int64_t permits)
    : name(std::move(lock_name)), key(prefix + "{" + name + "}"), kind(lock_kind::permits),
      default_permits(permits) {
  key += suffix;
}

lease::lease(const std::shared_ptr<client_impl>& c, std::shared_ptr<const lock_names> n,
             std::string o, std::uint64_t tok, lease_timing t)
    : core::lease(c->ex, std::move(o), tok, t), client(c), names(std::move(n)) {}

void lease::unwatch() noexcept {
  if (auto c = client.lock(); c && lock_service::find(*c) && dog_index != npos)
    lock_service::find(*c)->dog.remove(*this);
}

void lease::give_back() {
  if (auto c = client.lock(); c && !c->closed && lock_service::find(*c))
    lock_service::find(*c)->give_up(names, owner);
}

void lease::release(diagnostics* diag, handler<void(error_code)> h) {
  auto c = client.lock();
  if (!c || c->closed || !lock_service::find(*c)) {
    if (h)
      complete_later(ex, std::move(h), {}, error_code(error::closed));
    return;
  }
  lock_service::find(*c)->release(std::static_pointer_cast<lease>(shared_from_this()), diag, std::move(h));
}

} // namespace corolock::detail
