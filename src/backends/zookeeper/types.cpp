#include <corolock/zookeeper/types.hpp>

namespace corolock::zookeeper {

std::string to_string(zk_error e) {
  switch (e) {
  case zk_error::ok: return "ZOK";
  case zk_error::system_error: return "ZSYSTEMERROR";
  case zk_error::runtime_inconsistency: return "ZRUNTIMEINCONSISTENCY (another operation of the multi failed)";
  case zk_error::data_inconsistency: return "ZDATAINCONSISTENCY";
  case zk_error::connection_loss: return "ZCONNECTIONLOSS (the connection dropped; outcome unknown)";
  case zk_error::marshalling_error: return "ZMARSHALLINGERROR";
  case zk_error::unimplemented: return "ZUNIMPLEMENTED";
  case zk_error::operation_timeout: return "ZOPERATIONTIMEOUT";
  case zk_error::bad_arguments: return "ZBADARGUMENTS";
  case zk_error::unknown_session: return "ZUNKNOWNSESSION";
  case zk_error::api_error: return "ZAPIERROR";
  case zk_error::no_node: return "ZNONODE (no such node)";
  case zk_error::no_auth: return "ZNOAUTH (not authorized)";
  case zk_error::bad_version: return "ZBADVERSION (version mismatch)";
  case zk_error::no_children_for_ephemerals: return "ZNOCHILDRENFOREPHEMERALS (an ephemeral node cannot have children)";
  case zk_error::node_exists: return "ZNODEEXISTS (the node exists)";
  case zk_error::not_empty: return "ZNOTEMPTY (the node has children)";
  case zk_error::session_expired: return "ZSESSIONEXPIRED";
  case zk_error::invalid_callback: return "ZINVALIDCALLBACK";
  case zk_error::invalid_acl: return "ZINVALIDACL";
  case zk_error::auth_failed: return "ZAUTHFAILED";
  case zk_error::session_moved: return "ZSESSIONMOVED";
  case zk_error::not_read_only: return "ZNOTREADONLY";
  case zk_error::no_watcher: return "ZNOWATCHER";
  case zk_error::request_timeout: return "ZREQUESTTIMEOUT";
  case zk_error::quota_exceeded: return "ZQUOTAEXCEEDED";
  case zk_error::throttled_op: return "ZTHROTTLEDOP";
  }
  return "ZOO_ERROR(" + std::to_string(static_cast<int>(e)) + ")";
}

namespace {
class category final : public boost::system::error_category {
public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int ev) const override { return to_string(static_cast<zk_error>(ev)); }
};
} // namespace

const boost::system::error_category& error_category() noexcept {
  static const category instance;
  return instance;
}

const char* to_string(session_state s) {
  switch (s) {
  case session_state::connecting: return "connecting";
  case session_state::connected: return "connected";
  case session_state::suspended: return "suspended";
  case session_state::expired: return "expired";
  case session_state::closed: return "closed";
  }
  return "state?";
}

} // namespace corolock::zookeeper
