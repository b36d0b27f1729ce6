// Private: etcd's v3 JSON gateway as data, no I/O — the bodies of the requests the lock backend
// sends and what it reads of the replies. The gateway is gRPC's JSON mapping: keys and values are
// base64, 64-bit numbers are JSON strings, and a field at its default (0, false, empty) is left
// out of a reply, so every read here takes a missing field as its default.
#pragma once

#include <corolock/detail/async.hpp>
#include <corolock/error.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::etcd::detail {

std::string base64(std::string_view bytes);
/// nullopt: not base64.
std::optional<std::string> unbase64(std::string_view text);
/// The end of the range of every key that starts with `prefix` (etcd's range_end): the prefix with
/// its last byte below 0xff raised by one and what follows it dropped; "\0" (every key) when there
/// is none.
std::string prefix_end(std::string_view prefix);

/// A 64-bit field of a reply: a JSON string of digits, a number, or missing (0).
std::int64_t number(const boost::json::object& o, std::string_view field);
/// A bytes field (base64), missing: empty.
std::string bytes(const boost::json::object& o, std::string_view field);

/// One key as a reply lists it.
struct key_value {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};
key_value key_value_of(const boost::json::object& kv);
/// The kvs of a RangeResponse (the object holding "kvs").
std::vector<key_value> kvs_of(const boost::json::object& range_response);
/// A TxnResponse's "succeeded" (its compares held; false when left out, as every default).
bool succeeded(const boost::json::object& txn_response);
/// header.revision of a response.
std::int64_t revision_of(const boost::json::object& response);

/// The order of a range's keys.
enum class order { by_key, newest_first, oldest_first };
/// A RangeRequest of the keys in [key, range_end) (range_end empty: `key` alone), in `o`, at most
/// `limit` (0: all), only those created at or before `max_create` (0: any).
boost::json::object range_request(std::string_view key, std::string_view range_end, std::int64_t limit,
                                  std::int64_t max_create, order o);
/// What the gateway's error body says ({"error": ..., "code": <gRPC code>, "message": ...}): the
/// corolock code and words.
struct gateway_error {
  error_code ec;
  std::string words;
};
gateway_error error_of(unsigned http_status, std::string_view body);

} // namespace corolock::etcd::detail
