// The folders above a node (folders.hpp).
#include "backends/zookeeper/folders.hpp"

#include "backends/zookeeper/lock_paths.hpp"

#include <corolock/zookeeper/client.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace corolock::zookeeper::detail {

namespace {

/// An empty container reaped above the one being made is met this often before giving up.
constexpr int max_rounds = 5;

struct folders_run : std::enable_shared_from_this<folders_run> {
  // The handler is moved in at construction, never move-assigned (see detail/completion.hpp).
  folders_run(client& c, std::string p, core::handler<void(error_code, std::string)> done)
      : zk(&c), parent(std::move(p)), h(std::move(done)) {}

  client* zk;
  std::string parent;               // the node's folder, the last to make
  std::vector<std::string> left;    // still to make, top first
  int rounds = 0;
  core::handler<void(error_code, std::string)> h;

  void start() {
    left = containers_of(parent);
    make_next();
  }
  void make_next() {
    zk->create(left.front(), "", create_mode::container,
               [self = shared_from_this()](error_code ec, const created&) { self->made(ec); });
  }
  void made(error_code ec) {
    if (!ec || ec == zk_error::node_exists) {
      left.erase(left.begin());
      if (left.empty())
        return std::move(h)(error_code{}, std::string{});
      return make_next();
    }
    if (ec == zk_error::no_node && ++rounds <= max_rounds) // one above was reaped: again
      return start();
    std::move(h)(ec, "cannot create the folder " + left.front());
  }
};

} // namespace

void make_folders_above(client& zk, const std::string& node, core::handler<void(error_code, std::string)> h) {
  const auto slash = node.rfind('/');
  if (slash == std::string::npos || slash == 0)
    return std::move(h)(error_code{}, std::string{}); // at the top: nothing above it
  auto run = std::make_shared<folders_run>(zk, node.substr(0, slash), std::move(h));
  run->start();
}

} // namespace corolock::zookeeper::detail
