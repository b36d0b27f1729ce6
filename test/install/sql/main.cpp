// A consumer of corolock's MariaDB/MySQL and PostgreSQL stores, for run_install_test.cmake: makes a
// lock client of each (never connected), which links both libraries, their shared SQL code once,
// and their client libraries.
#include <corolock/mysql/config.hpp>
#include <corolock/mysql/lock_client.hpp>
#include <corolock/postgresql/config.hpp>
#include <corolock/postgresql/lock_client.hpp>

#include <boost/asio/io_context.hpp>

#include <iostream>

int main() {
  boost::asio::io_context io;
  corolock::mysql::lock_client maria{io.get_executor(),
                                     corolock::mysql::config::from_url("mysql://u@127.0.0.1:3306/db")};
  corolock::postgresql::lock_client pg{
      io.get_executor(), corolock::postgresql::config::from_url("postgresql://u@127.0.0.1:5432/db")};
  std::cout << "sql_clients=2\n";
}
