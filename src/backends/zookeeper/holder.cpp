// Who holds a lock on ZooKeeper (holder.hpp): a list, then the first node's Stat.
#include "backends/zookeeper/holder.hpp"

#include "backends/zookeeper/lock_recipe.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include <memory>
#include <optional>

namespace corolock::zookeeper::detail {

namespace {

/// A first node released between the list and its Stat is met this often before giving up.
constexpr int max_rounds = 5;

struct holder_read : std::enable_shared_from_this<holder_read> {
  client* zk = nullptr;
  std::string dir;
  int rounds = 0;
  // Never move-assigned (see detail/completion.hpp).
  corolock::detail::stored_handler<core::handler<void(error_code, std::uint64_t, std::string)>> h;

  void list() {
    zk->get_children(dir, false, [self = shared_from_this()](error_code ec, const children& c) {
      self->listed(ec, c.names);
    });
  }
  void listed(error_code ec, const std::vector<std::string>& names) {
    if (ec == zk_error::no_node) // no folder: nobody holds the lock
      return finish({}, 0, {});
    if (ec)
      return finish(ec, 0, "cannot list the lock's nodes in " + dir);
    std::optional<lock_node> first;
    for (const auto& n : names)
      if (auto node = parse_lock_node(n); node && node->kind == node_kind::mutex)
        if (!first || node->sequence < first->sequence)
          first = std::move(node);
    if (!first)
      return finish({}, 0, {});
    zk->exists(dir + "/" + first->name, false,
               [self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
                 self->looked(ec, st);
               });
  }
  void looked(error_code ec, const std::optional<node_stat>& st) {
    if (ec)
      return finish(ec, 0, "cannot read the holder's node in " + dir);
    if (st)
      return finish({}, static_cast<std::uint64_t>(st->czxid), {});
    if (++rounds < max_rounds) // released meanwhile: the next one may hold it now
      return list();
    finish(error::timeout, 0,
           "the holder of the lock in " + dir + " changed " + std::to_string(max_rounds) +
               " times while it was read");
  }
  void finish(error_code ec, std::uint64_t token, std::string words) {
    if (!h)
      return;
    if (ec == zk_error::no_auth || ec == zk_error::auth_failed)
      ec = error::permission_denied;
    corolock::detail::complete_later(zk->get_executor(), h.take(), asio::cancellation_slot{}, ec,
                                     token, std::move(words));
  }
};

} // namespace

void zookeeper_holder_token(client& zk, std::string lock_dir,
                            core::handler<void(error_code, std::uint64_t, std::string)> h) {
  auto run = std::make_shared<holder_read>();
  run->zk = &zk;
  run->dir = std::move(lock_dir);
  run->h.set(std::move(h));
  run->list();
}

} // namespace corolock::zookeeper::detail
