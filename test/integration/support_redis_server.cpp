// The fixtures every other integration test stands on: if these fail, read nothing into the rest.
#include <support/blocking_client.hpp>
#include <support/process.hpp>
#include <support/redis_server.hpp>

#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

namespace ct = corolock::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(support_redis_server)

BOOST_AUTO_TEST_CASE(server_answers_ping_on_a_loopback_port) {
  ct::redis_server server;
  BOOST_TEST(server.port() != 0);
  BOOST_TEST(server.host() == "127.0.0.1");
  BOOST_TEST(server.url() == "redis://127.0.0.1:" + std::to_string(server.port()));
  BOOST_TEST(server.pid() > 0);
  BOOST_TEST(server.command({"PING"}) == "PONG");
  // Persistence is off, so kill/restart tests really start from nothing.
  BOOST_TEST(server.command_list({"CONFIG", "GET", "save"}) == (std::vector<std::string>{"save", ""}));
  BOOST_TEST(server.command_list({"CONFIG", "GET", "appendonly"}) == (std::vector<std::string>{"appendonly", "no"}));
  BOOST_TEST(server.command({"DEBUG", "SLEEP", "0"}) == "OK");
}

BOOST_AUTO_TEST_CASE(command_renders_replies_like_redis_cli) {
  ct::redis_server server;
  BOOST_TEST(server.command({"SET", "k", "v"}) == "OK");
  BOOST_TEST(server.command({"GET", "k"}) == "v");
  BOOST_TEST(server.command({"GET", "missing"}) == "(nil)");
  BOOST_TEST(server.command({"INCR", "n"}) == "1");
  BOOST_TEST(server.command({"DBSIZE"}) == "2");
  BOOST_TEST(server.command({"SET", "bin", std::string_view{"a\r\nb\0c", 6}}) == "OK");
  BOOST_TEST(server.command({"STRLEN", "bin"}) == "6");
  BOOST_TEST(server.command({"RPUSH", "l", "x", "y"}) == "2");
  BOOST_TEST(server.command({"LRANGE", "l", "0", "-1"}) == "x\ny");
  BOOST_TEST(server.command_list({"LRANGE", "l", "0", "-1"}) == (std::vector<std::string>{"x", "y"}));
  BOOST_TEST(server.command_list({"LRANGE", "none", "0", "-1"}).empty());
  BOOST_TEST(server.command({"NOSUCHCOMMAND"}).starts_with("(error) ERR unknown command"));
  BOOST_CHECK_THROW(server.command_list({"GET", "k"}), std::runtime_error);
  BOOST_CHECK_THROW(server.command_list({"NOSUCHCOMMAND"}), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(kill_and_restart_keep_the_port_and_lose_the_data) {
  ct::redis_server server;
  const auto port = server.port();
  const auto first_pid = server.pid();
  BOOST_TEST(server.command({"SET", "k", "v"}) == "OK");

  server.kill();
  BOOST_TEST(!server.running());
  BOOST_CHECK_THROW(server.command({"PING"}), std::runtime_error);

  server.restart();
  BOOST_TEST(server.running());
  BOOST_TEST(server.port() == port);
  BOOST_TEST(server.pid() != first_pid);
  BOOST_TEST(server.command({"GET", "k"}) == "(nil)");
  BOOST_TEST(server.command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(stop_is_graceful_and_restart_works_after_it) {
  ct::redis_server server;
  const auto port = server.port();
  server.stop();
  BOOST_TEST(!server.running());
  BOOST_TEST(server.pid() == -1);
  BOOST_TEST(server.log_tail(50).find("ready to exit") != std::string::npos);
  server.restart();
  BOOST_TEST(server.port() == port);
  BOOST_TEST(server.command({"PING"}) == "PONG");
  server.restart();  // restart of a running server stops it first
  BOOST_TEST(server.command({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_CASE(restart_waits_for_the_port_to_be_released) {
  ct::redis_server server;
  const auto port = server.port();
  server.kill();

  // Hold the port for a while, as a socket of the dead server or a fast neighbour might.
  const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(holder, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(holder, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::listen(holder, 1) == 0);
  std::thread release([holder] {
    std::this_thread::sleep_for(300ms);
    ::close(holder);
  });

  server.restart();
  release.join();
  BOOST_TEST(server.port() == port);
  BOOST_TEST(server.command({"PING"}) == "PONG");
  BOOST_TEST(server.log_tail(200).find("Address already in use") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(paused_server_answers_nothing_until_resumed) {
  ct::redis_server server;
  auto client = server.connect();
  BOOST_TEST(ct::render(client.execute({"SET", "k", "v"})) == "OK");
  server.pause();
  BOOST_TEST(server.running());
  ct::blocking_client impatient(server.host(), server.port(), 200ms);  // the kernel still accepts
  BOOST_CHECK_THROW(impatient.execute({"PING"}), std::runtime_error);
  server.resume();
  BOOST_TEST(ct::render(client.execute({"GET", "k"})) == "v");
}

BOOST_AUTO_TEST_CASE(group_servers_are_independent) {
  ct::redis_server_group group(3);
  BOOST_TEST(group.size() == 3u);
  BOOST_TEST(group[0].port() != group[1].port());
  BOOST_TEST(group[1].port() != group[2].port());
  BOOST_TEST(group[0].port() != group[2].port());
  BOOST_TEST(group[0].command({"SET", "k", "0"}) == "OK");
  BOOST_TEST(group[1].command({"DBSIZE"}) == "0");
  BOOST_TEST(group[2].command({"DBSIZE"}) == "0");
  const auto urls = group.urls();
  BOOST_TEST(urls.size() == 3u);
  BOOST_TEST(urls[2] == group[2].url());
  int running = 0;
  for (auto& s : group) {
    running += s.running() ? 1 : 0;
  }
  BOOST_TEST(running == 3);
}

BOOST_AUTO_TEST_CASE(unix_socket_serves_the_same_data) {
  ct::redis_server_options options;
  options.unix_socket = true;
  ct::redis_server server(options);
  const auto& path = server.unix_socket_path();
  BOOST_TEST(!path.empty());
  BOOST_TEST(std::filesystem::is_socket(path));
  struct stat st {};
  BOOST_TEST(::stat(path.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);

  BOOST_TEST(server.command({"SET", "k", "over tcp"}) == "OK");
  ct::blocking_client local(path);
  BOOST_TEST(ct::render(local.execute({"GET", "k"})) == "over tcp");
}

BOOST_AUTO_TEST_CASE(password_server_refuses_unauthenticated_clients) {
  ct::redis_server_options options;
  options.password = "secret";
  ct::redis_server server(options);
  BOOST_TEST(server.url() == "redis://:secret@127.0.0.1:" + std::to_string(server.port()));
  BOOST_TEST(server.command({"PING"}) == "PONG");  // command() authenticates

  auto anonymous = server.connect(false);
  const auto refused = anonymous.execute({"PING"});
  BOOST_TEST(refused.is_error());
  BOOST_TEST(refused.text.starts_with("NOAUTH"));
  BOOST_TEST(anonymous.execute({"AUTH", "wrong"}).text.starts_with("WRONGPASS"));
  BOOST_TEST(ct::render(anonymous.execute({"AUTH", "secret"})) == "OK");
  BOOST_TEST(ct::render(anonymous.execute({"PING"})) == "PONG");
}

BOOST_AUTO_TEST_CASE(directory_is_removed_and_server_gone_after_destruction) {
  std::filesystem::path dir;
  pid_t pid = -1;
  std::uint16_t port = 0;
  {
    ct::redis_server server;
    dir = server.dir();
    pid = server.pid();
    port = server.port();
    BOOST_TEST(std::filesystem::exists(server.log_file()));
    server.pause();  // even a paused server must go
  }
  BOOST_TEST(!std::filesystem::exists(dir));
  BOOST_TEST(::kill(pid, 0) == -1);
  BOOST_CHECK_THROW(ct::blocking_client("127.0.0.1", port, 500ms), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(start_failure_reports_the_server_log) {
  ct::redis_server_options options;
  options.args = {"--no-such-directive", "1"};
  try {
    ct::redis_server server(options);
    BOOST_FAIL("a server with a bad directive started");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string{e.what()}.find("no-such-directive") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(process_reports_exit_codes_signals_and_missing_programs) {
  ct::process ok({"sh", "-c", "exit 3"});
  const auto status = ok.wait();
  BOOST_TEST(status.exited());
  BOOST_TEST(status.code == 3);

  ct::process sleeper({"sleep", "30"});
  BOOST_TEST(sleeper.running());
  BOOST_TEST(!sleeper.wait_for(10ms).has_value());
  const auto killed = sleeper.kill();
  BOOST_TEST(killed.signaled());
  BOOST_TEST(killed.signal == SIGKILL);

  ct::process polite({"sleep", "30"});
  BOOST_TEST(polite.terminate(1s).signal == SIGTERM);

  BOOST_CHECK_THROW(ct::process({"corolock-no-such-program"}), std::runtime_error);
  BOOST_CHECK_THROW(ct::process({"/nonexistent/program"}), std::system_error);
  BOOST_TEST(std::filesystem::exists(ct::self_exe()));
}

BOOST_AUTO_TEST_CASE(process_does_not_leak_the_test_file_descriptors) {
  // A child holding a copy of a test's socket would keep that connection open after the test
  // closed it. An fd opened without O_CLOEXEC, at a number no shell uses, must not reach the child.
  const int plain = ::open("/dev/null", O_RDONLY);
  BOOST_REQUIRE(plain >= 0);
  const int high = ::fcntl(plain, F_DUPFD, 100);
  ::close(plain);
  BOOST_REQUIRE(high >= 100);
  const std::string check = "test -e /proc/self/fd/" + std::to_string(high);
  ct::process child({"sh", "-c", check});
  const auto status = child.wait();
  ::close(high);
  BOOST_TEST(status.code == 1, "the child inherited fd " << high);
}

BOOST_AUTO_TEST_SUITE_END()
