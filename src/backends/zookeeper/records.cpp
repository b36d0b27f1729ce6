#include "backends/zookeeper/records.hpp"

#include <type_traits>

namespace corolock::zookeeper::detail {

namespace {

template <typename T, typename F>
std::optional<T> decode_whole(std::string_view body, F read) {
  jute_reader in(body);
  T out = read(in);
  if (!in.ok())
    return std::nullopt;
  return out;
}

void write_create(jute_writer& w, const std::string& path, const std::string& data,
                  create_mode mode) {
  w.bytes(path);
  w.bytes(data);
  // One ACL: perms ALL (31) for world:anyone (ZooDefs.Ids.OPEN_ACL_UNSAFE).
  w.int32(1);
  w.int32(31);
  w.bytes("world");
  w.bytes("anyone");
  w.int32(static_cast<std::int32_t>(mode));
}

void write_multi_header(jute_writer& w, std::int32_t type, bool done, std::int32_t err) {
  w.int32(type);
  w.boolean(done);
  w.int32(err);
}

} // namespace

std::string encode(const connect_request& r) {
  jute_writer w;
  w.int32(r.protocol_version);
  w.int64(r.last_zxid_seen);
  w.int32(r.timeout_ms);
  w.int64(r.session_id);
  w.bytes(r.password);
  w.boolean(r.read_only);
  return w.take();
}

std::optional<connect_response> decode_connect_response(std::string_view body) {
  jute_reader in(body);
  connect_response r;
  r.protocol_version = in.int32();
  r.timeout_ms = in.int32();
  r.session_id = in.int64();
  r.password = in.bytes();
  if (!in.ok())
    return std::nullopt;
  if (!in.at_end()) // servers before 3.4 end without it
    r.read_only = in.boolean();
  return r;
}

reply_header read_reply_header(jute_reader& in) {
  reply_header h;
  h.xid = in.int32();
  h.zxid = in.int64();
  h.err = static_cast<zk_error>(in.int32());
  return h;
}

void write_request_header(jute_writer& out, std::int32_t xid, op type) {
  out.int32(xid);
  out.int32(static_cast<std::int32_t>(type));
}

void write_stat(jute_writer& out, const node_stat& s) {
  out.int64(s.czxid);
  out.int64(s.mzxid);
  out.int64(s.ctime);
  out.int64(s.mtime);
  out.int32(s.version);
  out.int32(s.cversion);
  out.int32(s.aversion);
  out.int64(s.ephemeral_owner);
  out.int32(s.data_length);
  out.int32(s.num_children);
  out.int64(s.pzxid);
}

node_stat read_stat(jute_reader& in) {
  node_stat s;
  s.czxid = in.int64();
  s.mzxid = in.int64();
  s.ctime = in.int64();
  s.mtime = in.int64();
  s.version = in.int32();
  s.cversion = in.int32();
  s.aversion = in.int32();
  s.ephemeral_owner = in.int64();
  s.data_length = in.int32();
  s.num_children = in.int32();
  s.pzxid = in.int64();
  return s;
}

op create_op_code(create_mode mode) {
  return mode == create_mode::container ? op::create_container : op::create2;
}

std::string encode_create(const std::string& path, const std::string& data, create_mode mode) {
  jute_writer w;
  write_create(w, path, data, mode);
  return w.take();
}

std::string encode_delete(const std::string& path, std::int32_t version) {
  jute_writer w;
  w.bytes(path);
  w.int32(version);
  return w.take();
}

std::string encode_set_data(const std::string& path, const std::string& data, std::int32_t version) {
  jute_writer w;
  w.bytes(path);
  w.bytes(data);
  w.int32(version);
  return w.take();
}

std::string encode_path_watch(const std::string& path, bool watch) {
  jute_writer w;
  w.bytes(path);
  w.boolean(watch);
  return w.take();
}

std::optional<create_response> decode_create2(std::string_view body) {
  return decode_whole<create_response>(body, [](jute_reader& in) {
    create_response r;
    r.path = in.bytes();
    r.node = read_stat(in);
    return r;
  });
}

std::optional<node_stat> decode_stat(std::string_view body) {
  return decode_whole<node_stat>(body, [](jute_reader& in) { return read_stat(in); });
}

std::optional<children_response> decode_children2(std::string_view body) {
  return decode_whole<children_response>(body, [](jute_reader& in) {
    children_response r;
    r.children = in.strings();
    r.parent = read_stat(in);
    return r;
  });
}

std::optional<data_response> decode_data(std::string_view body) {
  return decode_whole<data_response>(body, [](jute_reader& in) {
    data_response r;
    r.data = in.bytes();
    r.node = read_stat(in);
    return r;
  });
}

std::string encode_multi(const std::vector<multi_op>& ops) {
  jute_writer w;
  for (const auto& o : ops) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, create_op>) {
            // In a multi a plain create answers with its path alone (CreateResponse).
            const auto code = x.mode == create_mode::container ? op::create_container : op::create;
            write_multi_header(w, static_cast<std::int32_t>(code), false, -1);
            write_create(w, x.path, x.data, x.mode);
          } else if constexpr (std::is_same_v<T, remove_op>) {
            write_multi_header(w, static_cast<std::int32_t>(op::remove), false, -1);
            w.bytes(x.path);
            w.int32(x.version);
          } else {
            write_multi_header(w, static_cast<std::int32_t>(op::check), false, -1);
            w.bytes(x.path);
            w.int32(x.version);
          }
        },
        o);
  }
  write_multi_header(w, -1, true, -1);
  return w.take();
}

std::optional<std::vector<multi_result>> decode_multi(std::string_view body) {
  jute_reader in(body);
  std::vector<multi_result> out;
  for (;;) {
    const auto type = static_cast<op>(in.int32());
    const bool done = in.boolean();
    in.int32(); // the header's err: repeated in an error result's body
    if (!in.ok())
      return std::nullopt;
    if (done)
      break;
    multi_result r;
    switch (type) {
    case op::create:
      r.path = in.bytes();
      break;
    case op::create2:
      r.path = in.bytes();
      read_stat(in);
      break;
    case op::remove:
    case op::check:
      break;
    case op::error:
      r.err = static_cast<zk_error>(in.int32());
      break;
    default:
      return std::nullopt; // a result we never ask for (setData, getData ...)
    }
    out.push_back(std::move(r));
  }
  if (!in.ok())
    return std::nullopt;
  return out;
}

std::string encode(const set_watches& r) {
  jute_writer w;
  w.int64(r.relative_zxid);
  w.strings(r.data_watches);
  w.strings(r.exist_watches);
  w.strings(r.child_watches);
  return w.take();
}

watch_event read_watcher_event(jute_reader& in) {
  watch_event e;
  e.type = static_cast<event_type>(in.int32());
  e.state = in.int32();
  e.path = in.bytes();
  return e;
}

void write_watcher_event(jute_writer& out, const watch_event& e) {
  out.int32(static_cast<std::int32_t>(e.type));
  out.int32(e.state);
  out.bytes(e.path);
}

} // namespace corolock::zookeeper::detail
