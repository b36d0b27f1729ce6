// Private: Jute, ZooKeeper's serialization, without I/O. Every packet on the wire is a 4-byte
// big-endian length and that many bytes of one record (or a header followed by a record);
// integers are big-endian two's complement, a boolean is ONE byte (the C header's int32_t is its
// in-memory type, not its wire size), a string or buffer is an int32 length then its bytes (-1:
// null), a vector an int32 count then its elements (-1: null).
//
// The writer appends to a string; the reader walks a span and remembers the first overrun, so a
// decoder reads every field and checks ok() once at the end (no exceptions on the data path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace corolock::zookeeper::detail {

class jute_writer {
public:
  void int32(std::int32_t v);
  void int64(std::int64_t v);
  void boolean(bool v) { out_.push_back(v ? '\1' : '\0'); }
  /// A ustring or a buffer (the same on the wire).
  void bytes(std::string_view v);
  void strings(const std::vector<std::string>& v);
  /// Bytes already encoded (a record after its header).
  void raw(std::string_view v) { out_.append(v); }

  const std::string& data() const noexcept { return out_; }
  std::string take() { return std::move(out_); }
  /// Prepends the 4-byte length of what was written: the packet as it goes on the wire.
  std::string take_framed();

private:
  std::string out_;
};

class jute_reader {
public:
  explicit jute_reader(std::string_view in) : in_(in) {}

  std::int32_t int32();
  std::int64_t int64();
  bool boolean();
  /// A ustring or buffer; a null (-1) reads as empty.
  std::string bytes();
  std::vector<std::string> strings();

  /// False once a read ran past the end or met a negative length other than -1.
  bool ok() const noexcept { return ok_; }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }
  bool at_end() const noexcept { return pos_ == in_.size(); }

private:
  bool take(std::size_t n);

  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

/// Splits a byte stream into packets: feed what was read, take whole packets out. A length over
/// `max_packet` (the server's jute.maxbuffer is 1 MiB by default; ours is generous) or a negative
/// one is a protocol error: the stream cannot be resynchronized.
class frame_reader {
public:
  static constexpr std::size_t max_packet = 64 * 1024 * 1024;

  void feed(std::string_view bytes) { buf_.append(bytes); }
  /// The next whole packet's body into `out`; false if none is complete yet (or bad() is set).
  bool next(std::string& out);
  bool bad() const noexcept { return bad_; }
  void reset() {
    buf_.clear();
    pos_ = 0;
    bad_ = false;
  }

private:
  std::string buf_;
  std::size_t pos_ = 0;
  bool bad_ = false;
};

} // namespace corolock::zookeeper::detail
