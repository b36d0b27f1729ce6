// Private: what a lock handle (mutex, semaphore, shared_mutex) points to.
#pragma once

#include "lock/lease.hpp"

#include <corolock/lock/options.hpp>

#include <memory>

namespace corolock::detail {

class handle_state {
public:
  handle_state(const std::shared_ptr<client_impl>& c, std::shared_ptr<const lock_names> n,
               lock_options o)
      : client(c), ex(c->ex), names(std::move(n)), opts(std::move(o)) {}

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::shared_ptr<const lock_names> names;
  lock_options opts;
};

} // namespace corolock::detail
