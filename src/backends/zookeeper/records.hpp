// Private: the ZooKeeper records a lock needs, their numbers and their wire layout (Jute, see
// jute.hpp), without I/O. Layouts follow zookeeper.jute (org.apache.zookeeper.proto); the
// operation codes follow ZooDefs.OpCode. Request bodies are encoded without their RequestHeader:
// the session (session.hpp) puts the header with the xid it assigns in front.
//
// Wire traps kept here: ConnectRequest/ConnectResponse end with a readOnly boolean that older
// servers omit (decoded as false when absent); a create answers with Create2Response (path and
// Stat) because we ask with create2/createContainer; a multi's results end with a header whose
// `done` is true; watch events arrive with xid -1, ping replies with -2, SetWatches replies -8.
#pragma once

#include "backends/zookeeper/jute.hpp"

#include <corolock/zookeeper/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace corolock::zookeeper::detail {

/// ZooDefs.OpCode: the request types we send or read back in a multi's results.
enum class op : std::int32_t {
  notification = 0,
  create = 1,
  remove = 2, // "delete"
  exists = 3,
  get_data = 4,
  set_data = 5,
  get_children = 8,
  ping = 11,
  get_children2 = 12,
  check = 13,
  multi = 14,
  create2 = 15,
  create_container = 19,
  set_watches = 101,
  close_session = -11,
  error = -1,
};

/// The xids the server and the client reserve; ours count up from 1.
namespace xid {
inline constexpr std::int32_t watch_event = -1;
inline constexpr std::int32_t ping = -2;
inline constexpr std::int32_t set_watches = -8;
} // namespace xid

struct connect_request {
  std::int32_t protocol_version = 0;
  std::int64_t last_zxid_seen = 0;
  std::int32_t timeout_ms = 0;
  std::int64_t session_id = 0;
  std::string password;      ///< 16 bytes from the server; zeros for a new session
  bool read_only = false;
};
std::string encode(const connect_request& r); // the body (unframed)

struct connect_response {
  std::int32_t protocol_version = 0;
  std::int32_t timeout_ms = 0; ///< <= 0: the session we asked for is expired
  std::int64_t session_id = 0;
  std::string password;
  bool read_only = false;
};
std::optional<connect_response> decode_connect_response(std::string_view body);

struct reply_header {
  std::int32_t xid = 0;
  std::int64_t zxid = 0;
  zk_error err = zk_error::ok;
};
reply_header read_reply_header(jute_reader& in);
void write_request_header(jute_writer& out, std::int32_t xid, op type);

void write_stat(jute_writer& out, const node_stat& s);
node_stat read_stat(jute_reader& in);

/// Create2 / createContainer request, the ACL world:anyone with every permission.
std::string encode_create(const std::string& path, const std::string& data, create_mode mode);
/// The op a create with this mode is sent as (a container needs its own op code).
op create_op_code(create_mode mode);
std::string encode_delete(const std::string& path, std::int32_t version);
/// SetDataRequest: path, data, version (-1: any). The reply is the node's Stat (decode_stat).
std::string encode_set_data(const std::string& path, const std::string& data, std::int32_t version);
/// exists, getData, getChildren2: a path and a watch flag.
std::string encode_path_watch(const std::string& path, bool watch);

struct create_response {
  std::string path;
  node_stat node;
};
/// ExistsResponse is a Stat, GetChildren2Response children then Stat, GetDataResponse data then Stat.
struct children_response {
  std::vector<std::string> children;
  node_stat parent;
};
struct data_response {
  std::string data;
  node_stat node;
};
std::optional<create_response> decode_create2(std::string_view body);
std::optional<node_stat> decode_stat(std::string_view body);
std::optional<children_response> decode_children2(std::string_view body);
std::optional<data_response> decode_data(std::string_view body);

std::string encode_multi(const std::vector<multi_op>& ops);
/// One result per op; std::nullopt on malformed data.
std::optional<std::vector<multi_result>> decode_multi(std::string_view body);

struct set_watches {
  std::int64_t relative_zxid = 0;
  std::vector<std::string> data_watches;
  std::vector<std::string> exist_watches;
  std::vector<std::string> child_watches;
};
std::string encode(const set_watches& r);

watch_event read_watcher_event(jute_reader& in);
void write_watcher_event(jute_writer& out, const watch_event& e);

} // namespace corolock::zookeeper::detail
