// Private: TCP keepalive on a database session's socket, so a server whose client vanished without
// a FIN still drops the session (and its locks) and we notice a server that vanished: after about
// idle + interval * count of silence (sql::session_options).
#pragma once

#include <corolock/sql/session_options.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace corolock::sql::detail {

/// True if every option was set (or keepalive is off); false leaves errno set.
inline bool set_tcp_keepalive(int fd, const sql::session_options& o) {
  const int on = o.keepalive_idle.count() > 0 ? 1 : 0;
  if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0)
    return false;
  if (!on)
    return true;
  const int idle = static_cast<int>(o.keepalive_idle.count());
  const int interval = static_cast<int>(o.keepalive_interval.count());
  const int count = o.keepalive_count;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) == 0 &&
         ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) == 0 &&
         ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count) == 0;
}

} // namespace corolock::sql::detail
