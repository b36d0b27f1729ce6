// Private: a connection's start() and exec() as awaitables, for the library's own coroutines
// (connecting a client, asking a Sentinel or a cluster node, the lock layer's one-off scripts).
#pragma once

#include "backends/redis/client/connection_impl.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <utility>

namespace corolock::redis::detail {

/// connection_impl::start, awaited: the outcome of the first connect.
asio::awaitable<error_code> start_connection(std::shared_ptr<connection_impl> c);

/// connection_impl::exec, awaited.
asio::awaitable<std::pair<error_code, response>> exec_on(std::shared_ptr<connection_impl> c,
                                                          request req);

} // namespace corolock::redis::detail
