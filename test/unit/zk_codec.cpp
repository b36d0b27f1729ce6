// ZooKeeper's wire format (src/backends/zookeeper/jute.hpp, records.hpp) byte for byte, without a
// server: the requests as the server expects them, the replies as it sends them (built here with
// the same writer, field by field from zookeeper.jute), and the traps (a 1-byte boolean, the
// trailing readOnly byte, a multi's end marker, truncated data).
#include "backends/zookeeper/jute.hpp"
#include "backends/zookeeper/records.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <string_view>

using namespace corolock::zookeeper;
using namespace corolock::zookeeper::detail;

namespace {

std::string hex(std::string_view bytes) {
  std::string out;
  char buf[4];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

node_stat sample_stat() {
  return {.czxid = 0x100000002, .mzxid = 0x100000003, .ctime = 1700000000000, .mtime = 1700000000001,
          .version = 1, .cversion = 2, .aversion = 3, .ephemeral_owner = 0x7001,
          .data_length = 5, .num_children = 6, .pzxid = 0x100000004};
}

} // namespace

BOOST_AUTO_TEST_SUITE(zk_codec)

BOOST_AUTO_TEST_CASE(integers_are_big_endian_and_a_boolean_is_one_byte) {
  jute_writer w;
  w.int32(-2);
  w.int64(0x0102030405060708);
  w.boolean(true);
  w.boolean(false);
  w.bytes("ab");
  BOOST_TEST(hex(w.data()) == "fffffffe" "0102030405060708" "01" "00" "000000026162");
  jute_reader r(w.data());
  BOOST_TEST(r.int32() == -2);
  BOOST_TEST(r.int64() == 0x0102030405060708);
  BOOST_TEST(r.boolean());
  BOOST_TEST(!r.boolean());
  BOOST_TEST(r.bytes() == "ab");
  BOOST_TEST(r.ok());
  BOOST_TEST(r.at_end());
}

BOOST_AUTO_TEST_CASE(a_read_past_the_end_or_a_bad_length_is_remembered) {
  jute_reader short_int(std::string_view("\x00\x01", 2));
  BOOST_TEST(short_int.int32() == 0);
  BOOST_TEST(!short_int.ok());

  // A string that claims 16 bytes and has 1.
  jute_reader short_string(std::string_view("\x00\x00\x00\x10x", 5));
  short_string.bytes();
  BOOST_TEST(!short_string.ok());

  // -1 is null (empty), -2 is nonsense.
  jute_reader null_string(std::string_view("\xff\xff\xff\xff", 4));
  BOOST_TEST(null_string.bytes().empty());
  BOOST_TEST(null_string.ok());
  jute_reader negative(std::string_view("\xff\xff\xff\xfe", 4));
  negative.bytes();
  BOOST_TEST(!negative.ok());

  // A vector count the remaining bytes cannot hold is refused before it sizes anything.
  jute_reader huge_vector(std::string_view("\x7f\xff\xff\xff", 4));
  BOOST_TEST(huge_vector.strings().empty());
  BOOST_TEST(!huge_vector.ok());
}

BOOST_AUTO_TEST_CASE(frames_are_split_across_and_within_reads) {
  frame_reader f;
  std::string out;
  f.feed(std::string_view("\x00\x00\x00\x03" "ab", 6));
  BOOST_TEST(!f.next(out));
  f.feed(std::string_view("c\x00\x00\x00\x00\x00\x00\x00\x01z", 10));
  BOOST_TEST(f.next(out));
  BOOST_TEST(out == "abc");
  BOOST_TEST(f.next(out));
  BOOST_TEST(out.empty());
  BOOST_TEST(f.next(out));
  BOOST_TEST(out == "z");
  BOOST_TEST(!f.next(out));

  frame_reader bad;
  bad.feed(std::string_view("\xff\x00\x00\x00", 4));
  BOOST_TEST(!bad.next(out));
  BOOST_TEST(bad.bad());
}

BOOST_AUTO_TEST_CASE(connect_request_ends_with_the_read_only_byte) {
  connect_request req{.protocol_version = 0, .last_zxid_seen = 0x10, .timeout_ms = 3000,
                      .session_id = 0x1234, .password = std::string(16, '\x07')};
  jute_writer w;
  w.raw(encode(req));
  BOOST_TEST(hex(w.take_framed()) == "0000002d"           // 45 bytes follow
                                     "00000000"           // protocolVersion
                                     "0000000000000010"   // lastZxidSeen
                                     "00000bb8"           // timeOut 3000
                                     "0000000000001234"   // sessionId
                                     "00000010" "07070707070707070707070707070707" // passwd
                                     "00");               // readOnly
}

BOOST_AUTO_TEST_CASE(connect_response_with_or_without_the_read_only_byte) {
  jute_writer w;
  w.int32(0);
  w.int32(4000);
  w.int64(0x1000000abc);
  w.bytes(std::string(16, 'p'));
  auto old_server = decode_connect_response(w.data());
  BOOST_REQUIRE(old_server);
  BOOST_TEST(old_server->timeout_ms == 4000);
  BOOST_TEST(old_server->session_id == 0x1000000abc);
  BOOST_TEST(old_server->password == std::string(16, 'p'));
  BOOST_TEST(!old_server->read_only);
  w.boolean(true);
  auto new_server = decode_connect_response(w.data());
  BOOST_REQUIRE(new_server);
  BOOST_TEST(new_server->read_only);
  // Cut inside the password: malformed.
  BOOST_TEST(!decode_connect_response(w.data().substr(0, 20)));
}

BOOST_AUTO_TEST_CASE(request_header_and_bodies) {
  jute_writer w;
  write_request_header(w, -2, op::ping);
  BOOST_TEST(hex(w.take_framed()) == "00000008" "fffffffe" "0000000b");

  BOOST_TEST(hex(encode_create("/a", "x", create_mode::ephemeral_sequential)) ==
             "000000022f61"                        // path "/a"
             "0000000178"                          // data "x"
             "00000001" "0000001f"                 // one ACL, perms ALL
             "00000005776f726c64" "00000006616e796f6e65" // world:anyone
             "00000003");                          // flags: ephemeral sequential
  BOOST_TEST(static_cast<int>(create_op_code(create_mode::container)) == 19);
  BOOST_TEST(static_cast<int>(create_op_code(create_mode::ephemeral)) == 15);
  BOOST_TEST(hex(encode_delete("/a", -1)) == "000000022f61" "ffffffff");
  BOOST_TEST(hex(encode_path_watch("/a", true)) == "000000022f61" "01");
}

BOOST_AUTO_TEST_CASE(stat_is_eleven_fields_of_68_bytes) {
  jute_writer w;
  write_stat(w, sample_stat());
  BOOST_TEST(w.data().size() == 68u);
  BOOST_TEST(hex(w.data().substr(0, 8)) == "0000000100000002");
  auto back = decode_stat(w.data());
  BOOST_REQUIRE(back);
  BOOST_TEST((*back == sample_stat()));
  BOOST_TEST(!decode_stat(w.data().substr(0, 67)));
}

BOOST_AUTO_TEST_CASE(replies_with_a_stat) {
  jute_writer create2;
  create2.bytes("/lock/n-0000000007");
  write_stat(create2, sample_stat());
  auto c = decode_create2(create2.data());
  BOOST_REQUIRE(c);
  BOOST_TEST(c->path == "/lock/n-0000000007");
  BOOST_TEST(c->node.czxid == 0x100000002);

  jute_writer children;
  children.strings({"b", "a"});
  write_stat(children, sample_stat());
  auto ch = decode_children2(children.data());
  BOOST_REQUIRE(ch);
  BOOST_TEST(ch->children.size() == 2u);
  BOOST_TEST(ch->children[0] == "b");
  BOOST_TEST(ch->parent.num_children == 6);

  jute_writer data;
  data.bytes("hello");
  write_stat(data, sample_stat());
  auto d = decode_data(data.data());
  BOOST_REQUIRE(d);
  BOOST_TEST(d->data == "hello");
}

BOOST_AUTO_TEST_CASE(reply_header_and_watch_event) {
  jute_writer w;
  w.int32(-1);          // xid: a watch event
  w.int64(-1);
  w.int32(0);
  write_watcher_event(w, {.type = event_type::node_deleted, .state = 3, .path = "/a"});
  jute_reader r(w.data());
  auto h = read_reply_header(r);
  BOOST_TEST(h.xid == -1);
  BOOST_TEST((h.err == zk_error::ok));
  auto e = read_watcher_event(r);
  BOOST_TEST(r.ok());
  BOOST_TEST((e.type == event_type::node_deleted));
  BOOST_TEST(e.path == "/a");
  BOOST_TEST(hex(w.data()) == "ffffffff" "ffffffffffffffff" "00000000"
                              "00000002" "00000003" "000000022f61");
}

BOOST_AUTO_TEST_CASE(multi_request_ends_with_a_done_header) {
  std::vector<multi_op> ops{check_op{"/a", 2}, create_op{"/b", "", create_mode::container},
                            remove_op{"/c", -1}};
  BOOST_TEST(hex(encode_multi(ops)) ==
             "0000000d" "00" "ffffffff" "000000022f61" "00000002"            // check /a v2
             "00000013" "00" "ffffffff" "000000022f62" "00000000"            // createContainer /b
             "00000001" "0000001f" "00000005776f726c64" "00000006616e796f6e65" "00000004"
             "00000002" "00" "ffffffff" "000000022f63" "ffffffff"            // delete /c
             "ffffffff" "01" "ffffffff");                                   // done
}

BOOST_AUTO_TEST_CASE(multi_results_ok_and_failed) {
  jute_writer ok;
  ok.int32(1); ok.boolean(false); ok.int32(0); ok.bytes("/b");     // create
  ok.int32(2); ok.boolean(false); ok.int32(0);                     // delete
  ok.int32(13); ok.boolean(false); ok.int32(0);                    // check
  ok.int32(-1); ok.boolean(true); ok.int32(-1);
  auto r = decode_multi(ok.data());
  BOOST_REQUIRE(r);
  BOOST_REQUIRE(r->size() == 3u);
  BOOST_TEST((*r)[0].path == "/b");
  BOOST_TEST(((*r)[2].err == zk_error::ok));

  // A failed multi: every op is an error result, the culprit with its code.
  jute_writer failed;
  failed.int32(-1); failed.boolean(false); failed.int32(-103); failed.int32(-103);
  failed.int32(-1); failed.boolean(false); failed.int32(-2); failed.int32(-2);
  failed.int32(-1); failed.boolean(true); failed.int32(-1);
  auto f = decode_multi(failed.data());
  BOOST_REQUIRE(f);
  BOOST_REQUIRE(f->size() == 2u);
  BOOST_TEST(((*f)[0].err == zk_error::bad_version));
  BOOST_TEST(((*f)[1].err == zk_error::runtime_inconsistency));

  // No end marker: malformed.
  BOOST_TEST(!decode_multi(ok.data().substr(0, ok.data().size() - 9)));
}

BOOST_AUTO_TEST_CASE(set_watches_lists_three_kinds) {
  set_watches sw{.relative_zxid = 5, .data_watches = {"/d"}, .exist_watches = {}, .child_watches = {"/c"}};
  BOOST_TEST(hex(encode(sw)) == "0000000000000005" "00000001" "000000022f64" "00000000"
                                "00000001" "000000022f63");
}

BOOST_AUTO_TEST_CASE(error_codes_read_as_the_c_client_names_them) {
  BOOST_TEST(to_string(zk_error::no_node).starts_with("ZNONODE"));
  BOOST_TEST(to_string(zk_error::node_exists).starts_with("ZNODEEXISTS"));
  BOOST_TEST(to_string(zk_error::session_expired) == "ZSESSIONEXPIRED");
  BOOST_TEST(to_string(static_cast<zk_error>(-42)) == "ZOO_ERROR(-42)");
  BOOST_TEST(static_cast<int>(zk_error::no_node) == -101);
  BOOST_TEST(static_cast<int>(zk_error::node_exists) == -110);
  BOOST_TEST(static_cast<int>(zk_error::session_expired) == -112);
  BOOST_TEST(static_cast<int>(zk_error::connection_loss) == -4);
}

BOOST_AUTO_TEST_SUITE_END()
