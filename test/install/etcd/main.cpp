// A consumer of corolock's etcd store, for run_install_test.cmake: makes a client from an etcds://
// URL (never connected) and a mutex on it, which links the etcd library, its TLS and Boost.JSON.
#include <corolock/etcd/client.hpp>
#include <corolock/lock/mutex.hpp>

#include <boost/asio/io_context.hpp>

#include <iostream>

int main() {
  boost::asio::io_context io;
  corolock::etcd::client c{io.get_executor(), "etcds://127.0.0.1:2379,127.0.0.1:2380?lease=4s"};
  corolock::mutex m{c, "order:42"};
  std::cout << "etcd_hosts=" << c.get_config().hosts.size() << "\netcd_tls=" << c.get_config().tls << "\n";
}
