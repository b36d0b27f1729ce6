#include "backends/redis/script_replies.hpp"

#include <charconv>
#include <cmath>
#include <initializer_list>

namespace corolock::redis::detail {

namespace {

/// "<what> answered <reply>", the reply cut short: words for diagnostics.
std::string unexpected(std::string_view what, const resp::value& r) {
  auto shown = resp::to_debug_string(r);
  if (shown.size() > 200) {
    shown.resize(200);
    shown += "...";
  }
  return "unexpected reply from " + std::string(what) + ": " + shown;
}

/// An array of exactly `n` integers.
bool integers(const resp::value& r, std::size_t n) {
  if (r.type != resp::type::array || r.children.size() != n)
    return false;
  for (const auto& v : r.children)
    if (v.type != resp::type::integer)
      return false;
  return true;
}

bool within(std::int64_t v, std::int64_t least, std::int64_t most) {
  return v >= least && v <= most;
}

} // namespace

void read_attempt_reply(const resp::value& r, std::chrono::milliseconds lease,
                        attempt_outcome& out) {
  constexpr std::string_view what = "the acquire script";
  if (r.is_error()) {
    out.ec = error::redis_error; // e.g. WRONGTYPE: a key of another type under the lock's name
    out.text = r.data;
    return;
  }
  if (integers(r, 2) && r.children[0].integer == -1 && r.children[1].integer >= 0) {
    // More permits wanted than the semaphore has (acquire_permits.lua).
    out.ec = error::invalid_argument;
    out.text = "wants more permits than the semaphore's " + std::to_string(r.children[1].integer);
    return;
  }
  const auto& v = r.children;
  if (integers(r, 3) && v[0].integer == 1 && within(v[1].integer, 1, max_fencing_token) &&
      within(v[2].integer, 1, lease.count())) {
    out.acquired = true;
    out.token = static_cast<std::uint64_t>(v[1].integer);
    out.pttl = std::chrono::milliseconds(v[2].integer);
    return;
  }
  if (integers(r, 3) && v[0].integer == 0 && within(v[1].integer, -1, max_reported_pttl) &&
      within(v[2].integer, 0, 1)) {
    out.acquired = false;
    out.pttl = std::chrono::milliseconds(v[1].integer);
    out.queued = v[2].integer == 1;
    return;
  }
  out.ec = error::unexpected_reply;
  out.text = unexpected(what, r);
}

release_reply read_release_reply(const resp::value& r, std::chrono::milliseconds handoff_lease,
                                 bool may_pass) {
  release_reply out;
  if (r.is_error()) {
    out.ec = error::redis_error;
    out.text = r.data;
    return out;
  }
  if (integers(r, 1) && within(r.children[0].integer, 0, 1)) {
    out.status = r.children[0].integer;
    return out;
  }
  const auto& v = r.children;
  if (handoff_lease.count() > 0 && integers(r, 3) &&
      (v[0].integer == 2 || (may_pass && v[0].integer == 3)) &&
      within(v[1].integer, 1, max_fencing_token) && within(v[2].integer, 1, handoff_lease.count())) {
    out.status = v[0].integer;
    out.token = static_cast<std::uint64_t>(v[1].integer);
    out.pttl = std::chrono::milliseconds(v[2].integer);
    return out;
  }
  out.ec = error::unexpected_reply;
  out.text = unexpected("the release script", r);
  return out;
}

renew_reply read_renew_reply(const resp::value& r) {
  if (r.is_error())
    return renew_reply::refused;
  if (r.type != resp::type::integer)
    return renew_reply::unexpected;
  switch (r.integer) {
  case 1:
    return renew_reply::held;
  case 0:
    return renew_reply::gone;
  default:
    return renew_reply::unexpected;
  }
}

permits_reply read_permits_reply(const resp::value& r, std::int64_t max_permits,
                                 std::int64_t set_to) {
  permits_reply out;
  if (r.is_error()) {
    out.ec = error::redis_error;
    out.text = r.data;
    return out;
  }
  const bool setting = set_to >= 0;
  const auto& v = r.children;
  if (integers(r, setting ? 2 : 3) && within(v[0].integer, 0, max_permits) &&
      (!setting || v[0].integer == set_to) && v[1].integer >= 0 &&
      (setting || v[2].integer >= 0)) {
    out.permits = v[0].integer;
    out.in_use = v[1].integer;
    out.waiting = setting ? 0 : v[2].integer;
    return out;
  }
  out.ec = error::unexpected_reply;
  out.text = unexpected(setting ? "the set_permits script" : "the permits status script", r);
  return out;
}

next_id_reply read_next_id_reply(const resp::value& r, std::uint32_t n, std::uint64_t max_sequence,
                                 std::int64_t epoch_seconds) {
  next_id_reply out;
  if (r.is_error()) { // e.g. WRONGTYPE: another value under the counter's key
    out.ec = error::redis_error;
    out.text = r.data;
    return out;
  }
  const auto& v = r.children;
  // Seconds of a clock within 2^40 of 1970 either way: the caller's day arithmetic cannot overflow.
  const bool clock_ok = r.type == resp::type::array && v.size() >= 2 &&
                        v[1].type == resp::type::integer &&
                        within(v[1].integer, -(std::int64_t{1} << 40), std::int64_t{1} << 40);
  if (clock_ok) {
    out.status = v[0].integer;
    out.unix_seconds = v[1].integer;
    const auto since_epoch = v[1].integer - epoch_seconds;
    switch (v[0].type == resp::type::integer ? v[0].integer : -100) {
    case 1:
      if (integers(r, 3) && within(since_epoch, 0, 0x7FFF'FFFF) &&
          within(v[2].integer, n, static_cast<std::int64_t>(max_sequence))) {
        out.last = static_cast<std::uint64_t>(v[2].integer);
        return out;
      }
      break;
    case -1:
      if (integers(r, 3))
        return out;
      break;
    case 0:
    case -2:
    case -3:
      if (integers(r, 2))
        return out;
      break;
    default:
      break;
    }
  }
  out = {};
  out.ec = error::unexpected_reply;
  out.text = unexpected("the id script", r);
  return out;
}

bucket_reply read_bucket_reply(const resp::value& r, double burst, std::int64_t count) {
  bucket_reply out;
  if (r.is_error()) { // e.g. WRONGTYPE: another value under the bucket's key
    out.ec = error::redis_error;
    out.text = r.data;
    return out;
  }
  const auto& v = r.children;
  if (r.type == resp::type::array && v.size() == 3 && v[0].type == resp::type::integer &&
      v[1].type == resp::type::integer && v[2].type == resp::type::blob_string) {
    const auto& d = v[2].data;
    double left = -1;
    auto [end, err] = std::from_chars(d.data(), d.data() + d.size(), left);
    // Reserved tokens leave the bucket below zero (each reservation owes its count, until the rate
    // pays it back).
    const bool left_ok = err == std::errc() && end == d.data() + d.size() && std::isfinite(left) &&
                         left <= burst; // false for a NaN too
    // Taken now leaves the bucket at zero or above; reserved (a wait) leaves it below zero.
    const bool taken = v[0].integer == 1 && ((v[1].integer == 0 && left >= 0) ||
                                             (within(v[1].integer, 1, max_bucket_wait_us) && left < 0));
    const bool refused = v[0].integer == 0 && within(v[1].integer, 1, max_bucket_wait_us) &&
                         left < static_cast<double>(count);
    if (left_ok && (taken || refused)) {
      out.taken = taken;
      out.wait = std::chrono::microseconds(v[1].integer);
      out.left = left;
      return out;
    }
  }
  out.ec = error::unexpected_reply;
  out.text = unexpected("the token bucket script", r);
  return out;
}

note_reply read_note_reply(const resp::value& r) {
  note_reply out;
  if (r.is_error()) { // e.g. WRONGTYPE: another value under the note's key
    out.ec = error::redis_error;
    out.text = r.data;
    return out;
  }
  const auto& v = r.children;
  if (r.type == resp::type::array && v.size() == 2 && v[0].type == resp::type::blob_string &&
      v[1].type == resp::type::blob_string) {
    // The whole term, digits only (from_chars takes no sign or space, but would stop early at
    // anything else), within a uint64. The value is any bytes.
    const auto& d = v[0].data;
    std::uint64_t term = 0;
    auto [end, err] = std::from_chars(d.data(), d.data() + d.size(), term);
    if (!d.empty() && err == std::errc() && end == d.data() + d.size()) {
      out.term = term;
      out.value = v[1].data;
      return out;
    }
  }
  out.ec = error::unexpected_reply;
  out.text = unexpected("the note script", r);
  return out;
}

} // namespace corolock::redis::detail
