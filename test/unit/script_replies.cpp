// The readers of corolock's script replies (src/backends/redis/script_replies.hpp), fed by hand: every shape
// and range a script can answer is read as it means; anything else is error::unexpected_reply.
#include <corolock/error.hpp>
#include <corolock/resp/value.hpp>

#include "backends/redis/script_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

using namespace corolock;
using namespace corolock::redis::detail;
using std::chrono::milliseconds;

namespace {

resp::value integer(std::int64_t n) {
  resp::value v;
  v.type = resp::type::integer;
  v.integer = n;
  return v;
}
resp::value ints(std::initializer_list<std::int64_t> ns) {
  resp::value v;
  v.type = resp::type::array;
  for (auto n : ns)
    v.children.push_back(integer(n));
  return v;
}
resp::value text(resp::type t, std::string_view s) {
  resp::value v;
  v.type = t;
  v.data = std::string(s);
  return v;
}

constexpr std::int64_t int_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t int_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t two_53 = std::int64_t{1} << 53;

attempt_outcome attempt(const resp::value& r, milliseconds lease = milliseconds(100)) {
  attempt_outcome out;
  read_attempt_reply(r, lease, out);
  return out;
}

/// Replies of the wrong shape that every reader refuses.
std::vector<resp::value> misshapen() {
  resp::value nested = ints({1, 2, 3});
  nested.children[1] = ints({7});
  resp::value as_set = ints({1, 2, 3});
  as_set.type = resp::type::set;
  resp::value as_map = ints({1, 2});
  as_map.type = resp::type::map;
  resp::value boolean = integer(1);
  boolean.type = resp::type::boolean;
  return {resp::value{},          text(resp::type::simple_string, "OK"),
          text(resp::type::blob_string, "1"), text(resp::type::double_, "1.5"),
          text(resp::type::big_number, "1"),  ints({}),
          nested,                 as_set,
          as_map,                 boolean,
          ints({1, 2, 3, 4, 5})};
}

} // namespace

BOOST_AUTO_TEST_SUITE(script_replies)

BOOST_AUTO_TEST_CASE(an_attempt_reads_what_the_script_can_answer) {
  auto won = attempt(ints({1, 1'700'000'000'000'000, 100}));
  BOOST_TEST(!won.ec);
  BOOST_TEST(won.acquired);
  BOOST_TEST(won.token == 1'700'000'000'000'000u);
  BOOST_TEST(won.pttl.count() == 100);

  auto top = attempt(ints({1, two_53 - 1, 100}));
  BOOST_TEST(!top.ec);
  BOOST_TEST(top.token == std::uint64_t(two_53 - 1));

  auto taken = attempt(ints({0, -1, 0}));
  BOOST_TEST(!taken.ec);
  BOOST_TEST(!taken.acquired);
  BOOST_TEST(taken.pttl.count() == -1);
  BOOST_TEST(!taken.queued);
  auto queued = attempt(ints({0, 250, 1}));
  BOOST_TEST(queued.pttl.count() == 250);
  BOOST_TEST(queued.queued);
  BOOST_TEST(attempt(ints({0, 250, 2})).ec == error::unexpected_reply);  // 1 or 0 only
  BOOST_TEST(attempt(ints({0, 250, -1})).ec == error::unexpected_reply);

  auto too_many = attempt(ints({-1, 5}));
  BOOST_TEST(too_many.ec == error::invalid_argument);
  BOOST_TEST(too_many.text.find("5") != std::string::npos);

  auto refused = attempt(text(resp::type::simple_error, "WRONGTYPE corolock: x"));
  BOOST_TEST(refused.ec == error::redis_error);
  BOOST_TEST(refused.text == "WRONGTYPE corolock: x");
}

// The case: {1, -5, 100} made a guard with token 18446744073709551611.
BOOST_AUTO_TEST_CASE(an_attempt_refuses_tokens_leases_and_statuses_no_script_gives) {
  for (const auto& r : {ints({1, -5, 100}), ints({1, 0, 100}), ints({1, two_53, 100}),
                        ints({1, int_max, 100}), ints({1, int_min, 100}), ints({1, 7, 101}),
                        ints({1, 7, 0}), ints({1, 7, -1}), ints({0, -2, 0}), ints({0, 5, -2}),
                        ints({0, int_max, 0}), ints({0, (std::int64_t{1} << 40) + 1, 0}),
                        ints({2, 7, 100}), ints({-1, 7, 100}), ints({-1, -1}), ints({1, 7}),
                        ints({0, 5}), ints({1})}) {
    auto out = attempt(r);
    BOOST_TEST(out.ec == error::unexpected_reply, resp::to_debug_string(r));
    BOOST_TEST(!out.acquired);
    BOOST_TEST(out.text.find("unexpected reply") != std::string::npos);
  }
  for (const auto& r : misshapen()) {
    auto out = attempt(r);
    BOOST_TEST(out.ec == error::unexpected_reply, resp::to_debug_string(r));
  }
}

BOOST_AUTO_TEST_CASE(a_release_reads_only_its_four_answers) {
  BOOST_TEST(read_release_reply(ints({0}), milliseconds(0)).status == 0);
  BOOST_TEST(!read_release_reply(ints({1}), milliseconds(0)).ec);
  BOOST_TEST(read_release_reply(ints({1}), milliseconds(0)).status == 1);
  auto handed = read_release_reply(ints({2, 42, 300}), milliseconds(300));
  BOOST_TEST(!handed.ec);
  BOOST_TEST(handed.status == 2);
  BOOST_TEST(handed.token == 42u);
  BOOST_TEST(handed.pttl.count() == 300);
  BOOST_TEST(read_release_reply(text(resp::type::simple_error, "ERR x"), milliseconds(0)).ec ==
             error::redis_error);
  // Non-fair: handed past another client's first waiter, only when the release asked for it.
  auto passed = read_release_reply(ints({3, 43, 300}), milliseconds(300), true);
  BOOST_TEST(!passed.ec);
  BOOST_TEST(passed.status == 3);
  BOOST_TEST(passed.token == 43u);
  BOOST_TEST(read_release_reply(ints({3, 43, 300}), milliseconds(300)).ec ==
             error::unexpected_reply);
  BOOST_TEST(read_release_reply(ints({3, 43, 300}), milliseconds(0), true).ec ==
             error::unexpected_reply);
  BOOST_TEST(read_release_reply(ints({4, 43, 300}), milliseconds(300), true).ec ==
             error::unexpected_reply);

  for (auto [r, offered] : std::vector<std::pair<resp::value, int>>{
           {ints({2, 42, 300}), 0},      // no hand-off was offered
           {ints({2, -5, 300}), 300},    // a token no script gives
           {ints({2, two_53, 300}), 300},
           {ints({2, 42, 301}), 300},    // longer than the hand-off's lease
           {ints({2, 42, 0}), 300},
           {ints({3}), 300},
           {ints({-1}), 300},
           {ints({1, 2}), 300},
           {ints({2}), 300}}) {
    BOOST_TEST(read_release_reply(r, milliseconds(offered)).ec == error::unexpected_reply,
               resp::to_debug_string(r));
  }
  for (const auto& r : misshapen())
    BOOST_TEST(read_release_reply(r, milliseconds(300)).ec == error::unexpected_reply);
}

BOOST_AUTO_TEST_CASE(a_renewal_is_one_or_zero) {
  BOOST_TEST((read_renew_reply(integer(1)) == renew_reply::held));
  BOOST_TEST((read_renew_reply(integer(0)) == renew_reply::gone));
  BOOST_TEST((read_renew_reply(text(resp::type::simple_error, "LOADING")) == renew_reply::refused));
  for (auto n : {std::int64_t{2}, std::int64_t{-1}, int_min, int_max})
    BOOST_TEST((read_renew_reply(integer(n)) == renew_reply::unexpected));
  for (const auto& r : misshapen())
    BOOST_TEST((read_renew_reply(r) == renew_reply::unexpected), resp::to_debug_string(r));
}

BOOST_AUTO_TEST_CASE(a_permit_status_is_counted_in_range) {
  const std::int64_t max = std::int64_t{1} << 40;
  auto st = read_permits_reply(ints({5, 2, 1}), max);
  BOOST_TEST(!st.ec);
  BOOST_TEST(st.permits == 5);
  BOOST_TEST(st.in_use == 2);
  BOOST_TEST(st.waiting == 1);
  auto set = read_permits_reply(ints({2, 3}), max, 2); // lowered below what is held: allowed
  BOOST_TEST(!set.ec);
  BOOST_TEST(set.permits == 2);
  BOOST_TEST(set.in_use == 3);
  BOOST_TEST(read_permits_reply(text(resp::type::simple_error, "WRONGTYPE x"), max).ec ==
             error::redis_error);

  for (const auto& r : {ints({-1, 0, 0}), ints({max + 1, 0, 0}), ints({5, -1, 0}),
                        ints({5, 0, -1}), ints({5, 0}), ints({5, 0, 0, 0})})
    BOOST_TEST(read_permits_reply(r, max).ec == error::unexpected_reply, resp::to_debug_string(r));
  // set_permits must repeat the count it was asked to set (the reordered replay said 5).
  for (const auto& r : {ints({5, 0}), ints({2, -1}), ints({2, 0, 0}), ints({-2, 0})})
    BOOST_TEST(read_permits_reply(r, max, 2).ec == error::unexpected_reply,
               resp::to_debug_string(r));
  for (const auto& r : misshapen()) {
    BOOST_TEST(read_permits_reply(r, max).ec == error::unexpected_reply);
    BOOST_TEST(read_permits_reply(r, max, 2).ec == error::unexpected_reply);
  }
}

BOOST_AUTO_TEST_CASE(an_id_reply_is_checked_against_the_epoch_and_the_day) {
  const std::int64_t epoch = 1'600'000'000, now = 1'700'000'000;
  const std::uint64_t max_seq = 0xFFFF'FFFFu;
  auto ok = read_next_id_reply(ints({1, now, 10}), 3, max_seq, epoch);
  BOOST_TEST(!ok.ec);
  BOOST_TEST(ok.status == 1);
  BOOST_TEST(ok.unix_seconds == now);
  BOOST_TEST(ok.last == 10u);
  for (std::int64_t status : {0, -2, -3}) {
    auto r = read_next_id_reply(ints({status, now}), 1, max_seq, epoch);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.status == status);
  }
  BOOST_TEST(!read_next_id_reply(ints({-1, now, 4294967295}), 1, max_seq, epoch).ec);
  BOOST_TEST(read_next_id_reply(text(resp::type::simple_error, "WRONGTYPE x"), 1, max_seq, epoch)
                 .ec == error::redis_error);

  for (const auto& r : {ints({1, epoch - 1, 10}),                    // before the epoch
                        ints({1, epoch + 0x8000'0000LL, 10}),        // past 31 bits of seconds
                        ints({1, now, 2}),                           // fewer than the 3 asked for
                        ints({1, now, 0x1'0000'0000LL}),             // past the day's numbers
                        ints({1, now, -1}), ints({1, now}), ints({0, now, 1}), ints({-2}),
                        ints({5, now}), ints({1, int_min, 10}), ints({0, int_max})})
    BOOST_TEST(read_next_id_reply(r, 3, max_seq, epoch).ec == error::unexpected_reply,
               resp::to_debug_string(r));
  for (const auto& r : misshapen())
    BOOST_TEST(read_next_id_reply(r, 1, max_seq, epoch).ec == error::unexpected_reply);
}

/// A take_tokens.lua reply: {taken, wait µs, tokens left as a string}.
resp::value bucket(std::int64_t taken, std::int64_t wait, std::string_view left) {
  auto v = ints({taken, wait});
  v.children.push_back(text(resp::type::blob_string, left));
  return v;
}

BOOST_AUTO_TEST_CASE(a_bucket_take_is_taken_or_a_wait_with_fewer_tokens_than_asked) {
  auto taken = read_bucket_reply(bucket(1, 0, "1.0009999999999999"), 3, 1);
  BOOST_TEST(!taken.ec);
  BOOST_TEST(taken.taken);
  BOOST_TEST(taken.wait.count() == 0);
  BOOST_TEST(taken.left == 1.0009999999999999);
  auto refused = read_bucket_reply(bucket(0, 99900, "0.0010000000000000009"), 3, 1);
  BOOST_TEST(!refused.ec);
  BOOST_TEST(!refused.taken);
  BOOST_TEST(refused.wait.count() == 99900);
  BOOST_TEST(refused.left == 0.0010000000000000009);
  BOOST_TEST(!read_bucket_reply(bucket(0, max_bucket_wait_us, "0"), 3, 1).ec);
  BOOST_TEST(!read_bucket_reply(bucket(1, 0, "3"), 3, 1).ec);
  auto reserved = read_bucket_reply(bucket(1, 50000, "-0.5"), 3, 1); // owed: due in 50 ms
  BOOST_TEST(!reserved.ec);
  BOOST_TEST(reserved.taken);
  BOOST_TEST(reserved.wait.count() == 50000);
  BOOST_TEST(reserved.left == -0.5);
  BOOST_TEST(!read_bucket_reply(bucket(1, 90000, "-2.5"), 3, 1).ec); // behind an earlier reservation
  BOOST_TEST(read_bucket_reply(text(resp::type::simple_error, "WRONGTYPE x"), 3, 1).ec ==
             error::redis_error);

  for (const auto& r : {bucket(1, 5, "1"),                       // taken, yet a wait
                        bucket(0, 0, "0.5"),                     // refused without a wait
                        bucket(0, max_bucket_wait_us + 1, "0"),  // past the script's cap
                        bucket(0, -1, "0.5"), bucket(2, 0, "1"), bucket(-1, 0, "1"),
                        bucket(0, 100, "1"),                     // refused with enough tokens
                        bucket(1, 0, "3.5"),                     // more than the burst
                        bucket(1, 0, "-0.5"),                    // owed, yet no wait
                        bucket(1, 50000, "0.5"),                 // a wait, yet nothing owed
                        bucket(1, 50000, "-inf"),
                        bucket(1, 0, "nan"), bucket(1, 0, "inf"),
                        bucket(1, 0, ""), bucket(1, 0, "1x"), bucket(1, 0, " 1"),
                        ints({1, 0, 1}), ints({1, 0})})
    BOOST_TEST(read_bucket_reply(r, 3, 1).ec == error::unexpected_reply, resp::to_debug_string(r));
  for (const auto& r : misshapen())
    BOOST_TEST(read_bucket_reply(r, 3, 1).ec == error::unexpected_reply);
}

BOOST_AUTO_TEST_SUITE_END()
