// The private MariaDB and PostgreSQL fixtures the SQL driver tests stand on: started on a free
// loopback port with their own data directory, restarted on the same port, paused, removed.
#include <support/mariadb_server.hpp>
#include <support/postgres_server.hpp>

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace ct = corolock::test;

namespace {

// `null_row` is how the server's CLI prints the row (2, NULL).
template <typename Server>
void starts_answers_restarts_and_leaves_nothing(const std::string& url_prefix, const std::string& null_row) {
  std::filesystem::path dir;
  {
    Server server;
    BOOST_TEST_MESSAGE(url_prefix << " data directory " << server.install_time().count() << " ms, first start "
                                  << server.start_time().count() << " ms");
    dir = server.dir();
    BOOST_TEST(server.url().starts_with(url_prefix + std::to_string(server.port()) + "/"));
    BOOST_TEST(server.sql("SELECT 1 + 1, NULL") == null_row);
    BOOST_CHECK_THROW(server.sql("SELEC 1"), std::runtime_error);
    const auto port = server.port();
    const auto pid = server.pid();
    server.kill();
    BOOST_TEST(!server.running());
    server.restart();
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.pid() != pid);
    BOOST_TEST(server.sql("SELECT 'back'") == "back");
    server.pause();
    server.resume();
    BOOST_TEST(server.sql("SELECT 'resumed'") == "resumed");
    server.stop();
    BOOST_TEST(!server.running());
  }
  BOOST_TEST(!std::filesystem::exists(dir));
}

} // namespace

BOOST_AUTO_TEST_SUITE(support_sql_servers)

BOOST_AUTO_TEST_CASE(mariadb_starts_answers_restarts_and_leaves_nothing) {
  starts_answers_restarts_and_leaves_nothing<ct::mariadb_server>("mysql://root@127.0.0.1:", "2\tNULL");
}

BOOST_AUTO_TEST_CASE(postgres_starts_answers_restarts_and_leaves_nothing) {
  starts_answers_restarts_and_leaves_nothing<ct::postgres_server>("postgresql://postgres@127.0.0.1:", "2|");
}

BOOST_AUTO_TEST_SUITE_END()
