// etcd over TLS (etcds://) against a private member that serves its client API over TLS too, with
// a throwaway CA and certificates (test/support/tls_material.hpp): locks and their watches run
// over TLS; a certificate from another CA, a wrong name, a missing client certificate and an
// unusable file each fail connect() with error::tls_failed in words, at once (a refusal that does
// not heal is not retried until request_timeout), and leave no lease behind.
#include <corolock/corolock.hpp>
#include <corolock/etcd/client.hpp>

#include <support/async_test.hpp>
#include <support/background_lock.hpp>
#include <support/etcd_server.hpp>
#include <support/process.hpp>
#include <support/tls_material.hpp>

#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>

using namespace corolock;
using namespace corolock::test;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

/// A member with TLS on its second client port, and the material it was made with.
struct tls_member {
  explicit tls_member(bool client_certs = false)
      : material(make_temp_dir("corolock-etcd-tls-")),
        server({}, etcd_tls{material.server_cert(), material.server_key(),
                            client_certs ? material.ca_cert() : std::filesystem::path()}) {}
  ~tls_member() {
    std::error_code ignored;
    std::filesystem::remove_all(material.dir(), ignored);
  }
  /// A config for the TLS port that trusts the fixture's CA.
  etcd::config config() const {
    auto cfg = etcd::config::from_url("etcds://127.0.0.1:" + std::to_string(server.tls_port()) +
                                      "?ca_file=" + material.ca_cert().string());
    cfg.lease = milliseconds(2000);
    cfg.request_timeout = milliseconds(3000);
    return cfg;
  }
  tls_material material;
  etcd_server server;
};

struct connect_result {
  error_code ec;
  std::string words;
  double ms = 0;
};

/// connect() with `cfg`: its error, its words and how long it took; the client closed.
asio::awaitable<connect_result> try_connect(etcd::config cfg) {
  etcd::client c(co_await asio::this_coro::executor, std::move(cfg));
  diagnostics why;
  const auto t0 = clock_type::now();
  auto [ec] = co_await c.connect(bind_diagnostics(why, as_tuple_awaitable));
  const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  co_await c.async_close();
  co_return connect_result{ec, why.message(), ms};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

BOOST_AUTO_TEST_SUITE(etcd_tls)

BOOST_AUTO_TEST_CASE(a_contended_mutex_runs_over_tls_and_its_waiter_is_woken_by_its_watch) {
  tls_member m;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    etcd::client a(ex, m.config()), b(ex, m.config());
    co_await a.connect();
    co_await b.connect();
    mutex ma{a, "order:42"}, mb{b, "order:42"};
    auto g = co_await ma.acquire();
    attempt w;
    start(ex, mb, w);
    co_await sleep_for(milliseconds(300));
    BOOST_TEST(!w.ec.has_value(), "the waiter must wait while the lock is held");
    const auto released = clock_type::now();
    co_await g.unlock();
    BOOST_REQUIRE(co_await done(w, milliseconds(3000)));
    BOOST_TEST(!*w.ec, w.ec->message());
    const double woken_ms = std::chrono::duration<double, std::milli>(clock_type::now() - released).count();
    BOOST_TEST_MESSAGE("waiter woken over TLS " << woken_ms << " ms after the release");
    BOOST_TEST(w.g.fencing_token() > g.fencing_token());
    co_await w.g.unlock();
    co_await a.async_close();
    co_await b.async_close();
  });
  BOOST_TEST(etcd_keys(m.server.port(), "").empty(), "keys left after both clients closed");
}

BOOST_AUTO_TEST_CASE(a_certificate_from_another_ca_or_for_another_name_is_tls_failed_at_once) {
  tls_member m;
  run_async([&](asio::any_io_executor) -> asio::awaitable<void> {
    auto foreign = m.config();
    foreign.tls_ca_file = m.material.other_ca_cert().string();
    auto r = co_await try_connect(foreign);
    BOOST_TEST((r.ec == error::tls_failed), r.ec.message());
    BOOST_TEST(contains(r.words, "certificate verify failed"), r.words);
    // Not retried until request_timeout (3 s): a wrong certificate does not heal.
    BOOST_TEST(r.ms < 1500.0, r.ms << " ms");

    auto named = m.config();
    named.tls_server_name = "elsewhere.example";
    r = co_await try_connect(named);
    BOOST_TEST((r.ec == error::tls_failed), r.ec.message());
    BOOST_TEST(contains(r.words, "hostname mismatch"), r.words);

    named.tls_verify = false; // tests only: any certificate, any name
    r = co_await try_connect(named);
    BOOST_TEST(!r.ec, r.ec.message() << ": " << r.words);

    // A plain client on the TLS port is not served.
    auto plain = etcd::config::from_url("etcd://127.0.0.1:" + std::to_string(m.server.tls_port()));
    plain.request_timeout = milliseconds(1000);
    r = co_await try_connect(plain);
    BOOST_TEST(!!r.ec);
    BOOST_TEST_MESSAGE("plain HTTP to the TLS port: " << r.ec.message() << ": " << r.words);
  });
  BOOST_TEST(etcd_keys(m.server.port(), "").empty());
}

BOOST_AUTO_TEST_CASE(a_member_that_requires_client_certificates_accepts_only_ours) {
  tls_member m(true);
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    // The member's refusal comes after our side of a TLS 1.3 handshake: as its alert (tls_failed),
    // or, when the member closed before our request reached it, as a reset that discarded the
    // alert unread (connect_failed, with the hint).
    const auto refused = [](const connect_result& r) {
      return (r.ec == error::tls_failed && contains(r.words, "bad certificate")) ||
             (r.ec == error::connect_failed && contains(r.words, "requires a client certificate"));
    };
    auto r = co_await try_connect(m.config());
    BOOST_TEST(refused(r), r.ec.message() << ": " << r.words);
    BOOST_TEST_MESSAGE("no client certificate: " << r.words);

    auto foreign = m.config();
    foreign.tls_cert_file = m.material.other_client_cert().string();
    foreign.tls_key_file = m.material.other_client_key().string();
    r = co_await try_connect(foreign);
    BOOST_TEST(refused(r), r.ec.message() << ": " << r.words);

    auto ours = m.config();
    ours.tls_cert_file = m.material.client_cert().string();
    ours.tls_key_file = m.material.client_key().string();
    etcd::client c(ex, ours);
    co_await c.connect();
    mutex mx{c, "client-cert-lock"};
    auto g = co_await mx.acquire();
    BOOST_TEST(g.fencing_token() > 0);
    co_await g.unlock();
    co_await c.async_close();
  });
  BOOST_TEST(etcd_keys(m.server.port(), "").empty());
}

BOOST_AUTO_TEST_CASE(unusable_tls_files_and_tls_fields_without_tls_are_clear_errors) {
  tls_member m;
  run_async([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto missing = m.config();
    missing.tls_ca_file = (m.material.dir() / "no-such.crt").string();
    auto r = co_await try_connect(missing);
    BOOST_TEST((r.ec == error::tls_failed), r.ec.message());
    BOOST_TEST((contains(r.words, "no-such.crt") && contains(r.words, "no such file")), r.words);

    auto mismatched = m.config();
    mismatched.tls_cert_file = m.material.client_cert().string();
    mismatched.tls_key_file = m.material.other_client_key().string();
    r = co_await try_connect(mismatched);
    BOOST_TEST((r.ec == error::tls_failed), r.ec.message());
    BOOST_TEST(contains(r.words, "does not belong to the certificate"), r.words);

    auto plain_with_files = etcd::config::from_url("etcd://127.0.0.1:" + std::to_string(m.server.port()));
    plain_with_files.tls_ca_file = m.material.ca_cert().string();
    BOOST_CHECK_EXCEPTION(etcd::client(ex, plain_with_files), boost::system::system_error,
                          [](const boost::system::system_error& e) {
                            return e.code() == error::invalid_argument && contains(e.what(), "tls off");
                          });
    co_return;
  });
  BOOST_TEST(etcd_keys(m.server.port(), "").empty());
}

BOOST_AUTO_TEST_SUITE_END()
