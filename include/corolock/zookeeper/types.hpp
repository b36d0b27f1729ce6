/// @file
/// The values a ZooKeeper client hands its user: a node's Stat, how a node is created, a watch
/// event, the session's state, the server's error codes and the operations of a multi.
/// Plain data, no Asio: the wire codec (src/backends/zookeeper) and the client share them.
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace corolock::zookeeper {

/// A node's metadata as the server keeps it. `czxid` (the transaction that created the node) is
/// 64-bit and totally ordered across the ensemble: the fencing token of a lock node.
struct node_stat {
  std::int64_t czxid = 0;          ///< created by this transaction
  std::int64_t mzxid = 0;          ///< last modified by this transaction
  std::int64_t ctime = 0;          ///< created, ms since the epoch (server clock)
  std::int64_t mtime = 0;          ///< last modified, ms since the epoch
  std::int32_t version = 0;        ///< data version
  std::int32_t cversion = 0;       ///< children version
  std::int32_t aversion = 0;       ///< ACL version
  std::int64_t ephemeral_owner = 0;///< the owning session of an ephemeral node, else 0
  std::int32_t data_length = 0;    ///< bytes of data the node holds
  std::int32_t num_children = 0;   ///< how many children it has
  std::int64_t pzxid = 0;          ///< last change of the children

  /// Field by field.
  friend bool operator==(const node_stat&, const node_stat&) = default;
};

/// The server's flags for a new node. A container is deleted by the server once its last child
/// is gone (ZooKeeper 3.5+): lock folders do not pile up.
enum class create_mode : std::int32_t {
  persistent = 0,
  ephemeral = 1,
  persistent_sequential = 2,
  ephemeral_sequential = 3,
  container = 4,
};

/// The server's error codes (KeeperException.Code), as carried in a reply header.
enum class zk_error : std::int32_t {
  ok = 0,
  system_error = -1,
  runtime_inconsistency = -2,
  data_inconsistency = -3,
  connection_loss = -4,
  marshalling_error = -5,
  unimplemented = -6,
  operation_timeout = -7,
  bad_arguments = -8,
  unknown_session = -12,
  api_error = -100,
  no_node = -101,
  no_auth = -102,
  bad_version = -103,
  no_children_for_ephemerals = -108,
  node_exists = -110,
  not_empty = -111,
  session_expired = -112,
  invalid_callback = -113,
  invalid_acl = -114,
  auth_failed = -115,
  session_moved = -118,
  not_read_only = -119,
  no_watcher = -121,
  request_timeout = -122,
  quota_exceeded = -125,
  throttled_op = -127,
};

/// "ZNONODE (no such node)": the C client's name and a few words; "ZOO_ERROR(-42)" if unknown.
std::string to_string(zk_error e);

/// The server's answers are error codes of their own category ("zookeeper"), so a caller tests
/// `ec == zookeeper::zk_error::node_exists`; the session's end is corolock's error::session_expired.
const boost::system::error_category& error_category() noexcept;
/// The error_code of a server's answer `e` (category "zookeeper").
inline boost::system::error_code make_error_code(zk_error e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// WatchedEvent's type. `none` carries a session state change, never sent by the server.
enum class event_type : std::int32_t {
  none = -1,
  node_created = 1,
  node_deleted = 2,
  node_data_changed = 3,
  node_children_changed = 4,
  data_watch_removed = 5,
  child_watch_removed = 6,
};

/// A fired watch: one-shot, so a caller who wants to keep watching asks again.
struct watch_event {
  event_type type = event_type::none; ///< what happened to the node
  std::int32_t state = 3;   ///< the server's KeeperState (3: SyncConnected)
  std::string path;         ///< client path (the chroot taken off)

  /// Field by field.
  friend bool operator==(const watch_event&, const watch_event&) = default;
};

/// The session as this client sees it.
///   connecting: no session yet (first connect in progress).
///   connected: a server serves the session.
///   suspended: the connection dropped; the session may still live at the server (a reconnect
///              within the local deadline keeps it, its ephemeral nodes and watches).
///   expired:   the server said so, or the local deadline (the last proof of life plus the
///              negotiated timeout) passed without contact: for us the session is gone (with
///              config::new_session_after_expiry, connecting to a new session follows at once).
///   closed:    async_close() ended it.
enum class session_state { connecting, connected, suspended, expired, closed };

/// The state's name: "connecting", "connected", ...
const char* to_string(session_state s);

/// One operation of a multi (all or nothing): create a node, as client::create does.
struct create_op {
  std::string path;                           ///< the node's path (client path, absolute)
  std::string data;                           ///< the bytes it holds
  create_mode mode = create_mode::persistent; ///< how the server keeps it
};
/// One operation of a multi: delete a node, as client::remove does.
struct remove_op {
  std::string path;          ///< the node's path
  std::int32_t version = -1; ///< -1: any version
};
/// One operation of a multi: fail the whole multi (zk_error::bad_version, or no_node) unless the
/// node exists at that version; changes nothing.
struct check_op {
  std::string path;          ///< the node's path
  std::int32_t version = -1; ///< the data version it must have; -1: any (the node must exist)
};
/// One operation of a multi, any of the three kinds.
using multi_op = std::variant<create_op, remove_op, check_op>;

/// The outcome of one operation of a multi: `err` (ok, or the code that failed the multi; the
/// other operations then carry runtime_inconsistency or ok) and, for a create, the path made.
struct multi_result {
  zk_error err = zk_error::ok; ///< this operation's outcome
  std::string path;            ///< a create's node as made (with a sequence suffix); else empty

  /// Field by field.
  friend bool operator==(const multi_result&, const multi_result&) = default;
};

} // namespace corolock::zookeeper

/// @cond INTERNAL
template <>
struct boost::system::is_error_code_enum<corolock::zookeeper::zk_error> : std::true_type {};
/// @endcond
