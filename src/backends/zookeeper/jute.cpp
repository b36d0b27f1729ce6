#include "backends/zookeeper/jute.hpp"

namespace corolock::zookeeper::detail {

namespace {

void put_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint64_t get_be(std::string_view in, std::size_t pos, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<unsigned char>(in[pos + i]);
  return v;
}

} // namespace

void jute_writer::int32(std::int32_t v) {
  put_be(out_, static_cast<std::uint32_t>(v), 4);
}

void jute_writer::int64(std::int64_t v) {
  put_be(out_, static_cast<std::uint64_t>(v), 8);
}

void jute_writer::bytes(std::string_view v) {
  int32(static_cast<std::int32_t>(v.size()));
  out_.append(v);
}

void jute_writer::strings(const std::vector<std::string>& v) {
  int32(static_cast<std::int32_t>(v.size()));
  for (const auto& s : v)
    bytes(s);
}

std::string jute_writer::take_framed() {
  std::string framed;
  framed.reserve(4 + out_.size());
  put_be(framed, out_.size(), 4);
  framed += out_;
  out_.clear();
  return framed;
}

bool jute_reader::take(std::size_t n) {
  if (!ok_ || remaining() < n) {
    ok_ = false;
    return false;
  }
  pos_ += n;
  return true;
}

std::int32_t jute_reader::int32() {
  if (!take(4))
    return 0;
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(get_be(in_, pos_ - 4, 4)));
}

std::int64_t jute_reader::int64() {
  if (!take(8))
    return 0;
  return static_cast<std::int64_t>(get_be(in_, pos_ - 8, 8));
}

bool jute_reader::boolean() {
  if (!take(1))
    return false;
  return in_[pos_ - 1] != 0;
}

std::string jute_reader::bytes() {
  const auto n = int32();
  if (n == -1 || !ok_)
    return {};
  if (n < 0) {
    ok_ = false;
    return {};
  }
  if (!take(static_cast<std::size_t>(n)))
    return {};
  return std::string(in_.substr(pos_ - static_cast<std::size_t>(n), static_cast<std::size_t>(n)));
}

std::vector<std::string> jute_reader::strings() {
  const auto n = int32();
  std::vector<std::string> out;
  if (n == -1 || !ok_)
    return out;
  // Each element takes at least its 4-byte length: a count the bytes left cannot hold is bad
  // data, caught before it sizes a vector.
  if (n < 0 || static_cast<std::size_t>(n) > remaining() / 4) {
    ok_ = false;
    return out;
  }
  out.reserve(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n && ok_; ++i)
    out.push_back(bytes());
  return out;
}

bool frame_reader::next(std::string& out) {
  if (bad_ || buf_.size() - pos_ < 4)
    return false;
  const auto len = static_cast<std::int32_t>(static_cast<std::uint32_t>(get_be(buf_, pos_, 4)));
  if (len < 0 || static_cast<std::size_t>(len) > max_packet) {
    bad_ = true;
    return false;
  }
  if (buf_.size() - pos_ - 4 < static_cast<std::size_t>(len))
    return false;
  out.assign(buf_, pos_ + 4, static_cast<std::size_t>(len));
  pos_ += 4 + static_cast<std::size_t>(len);
  // Keep the buffer from growing: drop what was consumed once it is most of it.
  if (pos_ > 4096 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return true;
}

} // namespace corolock::zookeeper::detail
