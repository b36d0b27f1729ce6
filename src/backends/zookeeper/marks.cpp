// A lock's marks on ZooKeeper (marks.hpp): one small run of requests per call.
#include "backends/zookeeper/marks.hpp"

#include "backends/zookeeper/folders.hpp"
#include "backends/zookeeper/lock_paths.hpp"
#include "detail/completion.hpp"

#include <corolock/error.hpp>
#include <corolock/zookeeper/client.hpp>

#include <algorithm>
#include <charconv>
#include <memory>

namespace corolock::zookeeper::detail {

namespace {

/// A folder vanishing under us (a container reaped between two requests, or an add's folder
/// missing) is met this often.
constexpr int max_rounds = 5;

/// A refusal for want of rights is the lock layer's permission_denied; other codes go on.
error_code marks_error(error_code ec) {
  if (ec == zk_error::no_auth || ec == zk_error::auth_failed)
    return error::permission_denied;
  return ec;
}

struct marks_run : std::enable_shared_from_this<marks_run> {
  client* zk = nullptr;
  std::string folder;
  core::marks_call what = core::marks_call::read;
  std::uint32_t index = 0;
  // Never move-assigned (see detail/completion.hpp).
  corolock::detail::stored_handler<
      core::handler<void(error_code, std::vector<std::uint32_t>, std::string)>>
      h;
  std::size_t removals = 0;         // clear: removals of marks not answered yet
  error_code removal_error;
  int rounds = 0;

  void start() {
    switch (what) {
    case core::marks_call::add: return add();
    case core::marks_call::read:
    case core::marks_call::clear: return list();
    }
  }

  // ---- add: the mark's node, its folders first if missing ------------------------------------
  void add() {
    zk->create(folder + "/" + std::to_string(index), "", create_mode::persistent,
               [self = shared_from_this()](error_code ec, const created&) { self->added(ec); });
  }
  void added(error_code ec) {
    if (!ec || ec == zk_error::node_exists)
      return finish({}, {}, {});
    if (ec == zk_error::no_node && ++rounds <= max_rounds) // its folder is missing: make it, then again
      return make_folders_above(*zk, folder + "/" + std::to_string(index),
                                [self = shared_from_this()](error_code fec, std::string words) {
                                  if (fec)
                                    return self->finish(fec, {}, std::move(words));
                                  self->add();
                                });
    finish(ec, {}, "cannot add mark " + std::to_string(index) + " in " + folder);
  }

  // ---- read and clear: the folder's children -----------------------------------------------
  void list() {
    zk->get_children(folder, false, [self = shared_from_this()](error_code ec, const children& c) {
      self->listed(ec, c.names);
    });
  }
  void listed(error_code ec, const std::vector<std::string>& names) {
    if (ec == zk_error::no_node) // no folder: no mark (and nothing to clear)
      return finish({}, {}, {});
    if (ec)
      return finish(ec, {}, "cannot read the marks in " + folder);
    if (what == core::marks_call::read) {
      std::vector<std::uint32_t> set;
      for (const auto& n : names) {
        std::uint32_t i = 0;
        auto [end, err] = std::from_chars(n.data(), n.data() + n.size(), i);
        if (err == std::errc() && end == n.data() + n.size()) // another node is not a mark
          set.push_back(i);
      }
      std::sort(set.begin(), set.end());
      return finish({}, std::move(set), {});
    }
    if (names.empty())
      return remove_folder();
    removals = names.size();
    for (const auto& n : names)
      zk->remove(folder + "/" + n, -1, [self = shared_from_this()](error_code rec) {
        self->removed(rec);
      });
  }
  void removed(error_code ec) {
    if (ec && ec != zk_error::no_node && !removal_error)
      removal_error = ec;
    if (--removals > 0)
      return;
    if (removal_error)
      return finish(removal_error, {}, "cannot remove the marks in " + folder);
    remove_folder();
  }
  void remove_folder() {
    zk->remove(folder, -1, [self = shared_from_this()](error_code ec) {
      if (!ec || ec == zk_error::no_node)
        return self->finish({}, {}, {});
      if (ec == zk_error::not_empty && ++self->rounds <= max_rounds) // an add landed meanwhile
        return self->list();
      self->finish(ec, {}, "cannot remove the marks folder " + self->folder);
    });
  }

  void finish(error_code ec, std::vector<std::uint32_t> set, std::string words) {
    if (!h)
      return;
    corolock::detail::complete_later(zk->get_executor(), h.take(), asio::cancellation_slot{},
                                     marks_error(ec), std::move(set), std::move(words));
  }
};

} // namespace

std::string marks_folder(const std::string& lock_dir) { return lock_dir + "%marks"; }

void zookeeper_marks(client& zk, std::string folder, core::marks_call what, std::uint32_t index,
                     core::handler<void(error_code, std::vector<std::uint32_t>, std::string)> h) {
  auto run = std::make_shared<marks_run>();
  run->zk = &zk;
  run->folder = std::move(folder);
  run->what = what;
  run->index = index;
  run->h.set(std::move(h));
  run->start();
}

} // namespace corolock::zookeeper::detail
