// Private: what a corolock::mutex handle points to.
#pragma once

#include "lock/lease.hpp"

#include <corolock/lock/options.hpp>

#include <memory>

namespace corolock::detail {

class mutex_state {
public:
  mutex_state(const std::shared_ptr<client_impl>& c, std::string name, lock_options o)
      : client(c), ex(c->ex), names(std::make_shared<lock_names>(o.prefix, std::move(name))),
        opts(std::move(o)) {}

  std::weak_ptr<client_impl> client;
  asio::any_io_executor ex;
  std::shared_ptr<const lock_names> names;
  lock_options opts;
};

} // namespace corolock::detail
