#include "blocking_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace corolock::test {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw std::runtime_error(fmt::format("{}: {}", what, std::strerror(err)));
}

void render_into(const reply& r, std::string& out) {
  switch (r.type) {
  case reply::kind::nil:
    out += "(nil)";
    break;
  case reply::kind::error:
    out += "(error) ";
    out += r.text;
    break;
  case reply::kind::array:
    for (std::size_t i = 0; i < r.elements.size(); ++i) {
      if (i != 0) {
        out += '\n';
      }
      render_into(r.elements[i], out);
    }
    break;
  default:
    out += r.text;
  }
}

} // namespace

std::string render(const reply& r) {
  std::string out;
  render_into(r, out);
  return out;
}

blocking_client::blocking_client(const std::string& host, std::uint16_t port,
                                 std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    throw std::runtime_error(fmt::format("blocking_client: '{}' is not an IPv4 address", host));
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    fail("socket", errno);
  }
  set_timeouts();
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Linux bounds a blocking connect by SO_SNDTIMEO, so no non-blocking dance is needed.
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(fmt::format("connect to {}:{}", host, port), err);
  }
}

blocking_client::blocking_client(const std::string& unix_path, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (unix_path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error(fmt::format("blocking_client: unix socket path too long: {}", unix_path));
  }
  std::memcpy(addr.sun_path, unix_path.c_str(), unix_path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    fail("socket", errno);
  }
  set_timeouts();
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(fmt::format("connect to {}", unix_path), err);
  }
}

blocking_client::~blocking_client() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

blocking_client::blocking_client(blocking_client&& other) noexcept
    : fd_(other.fd_), timeout_(other.timeout_), buffer_(std::move(other.buffer_)), pos_(other.pos_) {
  other.fd_ = -1;
}

blocking_client& blocking_client::operator=(blocking_client&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = other.fd_;
    timeout_ = other.timeout_;
    buffer_ = std::move(other.buffer_);
    pos_ = other.pos_;
    other.fd_ = -1;
  }
  return *this;
}

void blocking_client::set_timeouts() {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout_.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

reply blocking_client::execute(std::initializer_list<std::string_view> args) {
  return execute(std::vector<std::string>(args.begin(), args.end()));
}

reply blocking_client::execute(const std::vector<std::string>& args) {
  send(args);
  return read();
}

void blocking_client::send(const std::vector<std::string>& args) {
  std::string out = fmt::format("*{}\r\n", args.size());
  for (const auto& a : args) {
    out += fmt::format("${}\r\n", a.size());
    out += a;
    out += "\r\n";
  }
  write_all(out);
}

reply blocking_client::read() {
  return parse();
}

void blocking_client::write_all(std::string_view data) {
  if (fd_ < 0) {
    throw std::runtime_error("blocking_client: not connected");
  }
  while (!data.empty()) {
    const auto n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      fail("send", errno == EAGAIN ? ETIMEDOUT : errno);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

char blocking_client::get() {
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
    char chunk[4096];
    ssize_t n;
    do {
      n = ::recv(fd_, chunk, sizeof chunk, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      fail("recv", errno == EAGAIN ? ETIMEDOUT : errno);
    }
    if (n == 0) {
      throw std::runtime_error("recv: connection closed by the server");
    }
    buffer_.assign(chunk, static_cast<std::size_t>(n));
  }
  return buffer_[pos_++];
}

std::string blocking_client::line() {
  std::string out;
  for (char c = get(); c != '\r'; c = get()) {
    out += c;
  }
  if (get() != '\n') {
    throw std::runtime_error("RESP: CR not followed by LF");
  }
  return out;
}

reply blocking_client::parse() {
  reply r;
  const char type = get();
  std::string head = line();
  switch (type) {
  case '+':
    r.type = reply::kind::simple;
    r.text = std::move(head);
    break;
  case '-':
    r.type = reply::kind::error;
    r.text = std::move(head);
    break;
  case ':':
    r.type = reply::kind::integer;
    r.text = std::move(head);
    break;
  case '$': {
    const long long size = std::stoll(head);
    if (size < 0) {
      r.type = reply::kind::nil;
      break;
    }
    r.type = reply::kind::bulk;
    r.text.reserve(static_cast<std::size_t>(size));
    for (long long i = 0; i < size; ++i) {
      r.text += get();
    }
    if (get() != '\r' || get() != '\n') {
      throw std::runtime_error("RESP: bulk string not terminated by CRLF");
    }
    break;
  }
  case '*': {
    const long long size = std::stoll(head);
    if (size < 0) {
      r.type = reply::kind::nil;
      break;
    }
    r.type = reply::kind::array;
    for (long long i = 0; i < size; ++i) {
      r.elements.push_back(parse());
    }
    break;
  }
  default:
    throw std::runtime_error(fmt::format("RESP: unexpected type byte '{}'", type));
  }
  return r;
}

} // namespace corolock::test
