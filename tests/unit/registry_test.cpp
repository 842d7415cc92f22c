#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "registry/auth.hpp"
#include "registry/client.hpp"
#include "registry/http.hpp"
#include "registry/transfer.hpp"
#include "util/encoding.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>
#include <thread>

namespace unit_registry_test {

using test_support::contains;
using test_support::error_of;
using test_support::make_temp;
namespace fs = std::filesystem;

TEST_CASE("base64 round trip and the docker config alphabet") {
  CHECK(util::base64_encode("") == "");
  CHECK(util::base64_encode("f") == "Zg==");
  CHECK(util::base64_encode("fo") == "Zm8=");
  CHECK(util::base64_encode("foo") == "Zm9v");
  CHECK(util::base64_encode("alice:s3cr3t") == "YWxpY2U6czNjcjN0");
  std::string out;
  CHECK(util::base64_decode("YWxpY2U6czNjcjN0", out));
  CHECK(out == "alice:s3cr3t");
  CHECK(util::base64_decode("Zg", out)); // padding optional
  CHECK(out == "f");
  CHECK_FALSE(util::base64_decode("not base64!", out));
}

TEST_CASE("WWW-Authenticate challenges") {
  auto cs = registry::parse_challenges(
      R"(Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull,push")");
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].scheme == "bearer");
  CHECK(cs[0].params["realm"] == "https://auth.example.com/token");
  CHECK(cs[0].params["service"] == "registry.example.com");
  CHECK(cs[0].params["scope"] == "repository:a/b:pull,push");
  auto two = registry::parse_challenges(R"(Basic realm="Registry Realm", Bearer realm="x",error="invalid_token")");
  REQUIRE(two.size() == 2);
  CHECK(two[0].scheme == "basic");
  CHECK(two[0].params["realm"] == "Registry Realm");
  CHECK(two[1].params["error"] == "invalid_token");
  CHECK(registry::parse_challenges("").empty());
  // Text before the first scheme is not a challenge (found by fuzz_registry_answers).
  auto junk = registry::parse_challenges(R"(=x, Bearer realm="r")");
  REQUIRE(junk.size() == 2);
  CHECK(junk[0].scheme == "x");
  CHECK(junk[1].scheme == "bearer");
  CHECK(registry::parse_challenges("=").empty());
}

TEST_CASE("the system CAs are found where each distribution keeps them, or where SSL_CERT_* say") {
  auto tmp = make_temp("pi-trust-");
  std::string root = tmp.path().string();
  auto put = [&](const std::string& rel, const std::string& body = "-----BEGIN CERTIFICATE-----\n") {
    std::filesystem::create_directories(std::filesystem::path(root + rel).parent_path());
    util::write_file_atomic(root + rel, body);
  };
  auto none = registry::find_system_trust("", "", root);
  CHECK(none.file.empty());
  CHECK(none.dir.empty());
  CHECK(none.source == "none found");
  put("/etc/ssl/cert.pem"); // Alpine
  CHECK(registry::find_system_trust("", "", root).file == root + "/etc/ssl/cert.pem");
  put("/etc/pki/tls/certs/ca-bundle.crt"); // RHEL, Fedora: before Alpine's name
  auto rhel = registry::find_system_trust("", "", root);
  CHECK(rhel.file == root + "/etc/pki/tls/certs/ca-bundle.crt");
  CHECK(rhel.source == "probed");
  put("/etc/ssl/certs/ca-certificates.crt", ""); // an empty bundle is passed over
  CHECK(registry::find_system_trust("", "", root).file == root + "/etc/pki/tls/certs/ca-bundle.crt");
  put("/etc/ssl/certs/ca-certificates.crt"); // Debian first
  CHECK(registry::find_system_trust("", "", root).file == root + "/etc/ssl/certs/ca-certificates.crt");
  CHECK(registry::find_system_trust("", "", root).dir.empty()); // no hashed links yet
  put("/etc/ssl/certs/5ad8a5d6.0");
  CHECK(registry::find_system_trust("", "", root).dir == root + "/etc/ssl/certs");
  // As OpenSSL reads them: each variable replaces its own default, even over a bundle
  // that exists; the other default is still probed.
  auto env = registry::find_system_trust("/opt/ca.pem", "", root);
  CHECK(env.file == "/opt/ca.pem");
  CHECK(env.dir == root + "/etc/ssl/certs");
  CHECK(env.source == "SSL_CERT_FILE, probed");
  auto dir = registry::find_system_trust("", "/opt/certs", root);
  CHECK(dir.file == root + "/etc/ssl/certs/ca-certificates.crt");
  CHECK(dir.dir == "/opt/certs");
  CHECK(dir.source == "SSL_CERT_DIR, probed");
  auto both = registry::find_system_trust("/opt/ca.pem", "/opt/certs", root);
  CHECK(both.source == "SSL_CERT_FILE, SSL_CERT_DIR");
}

TEST_CASE("token answers: token or access_token, a lifetime kept within 1 s .. 1 day") {
  auto t = registry::parse_token_response(R"({"token":"abc","expires_in":300})");
  CHECK(t.token == "abc");
  CHECK(t.lifetime_s == 300);
  CHECK(registry::parse_token_response(R"({"access_token":"x"})").lifetime_s == 60);
  CHECK(registry::parse_token_response(R"({"token":"","access_token":"y"})").token == "y");
  // A hostile or broken server cannot make the lifetime unbounded, negative or NaN.
  CHECK(registry::parse_token_response(R"({"token":"a","expires_in":1e308})").lifetime_s == 86400);
  CHECK(registry::parse_token_response(R"({"token":"a","expires_in":-5})").lifetime_s == 1);
  CHECK(registry::parse_token_response(R"({"token":"a","expires_in":"300"})").lifetime_s == 60);
  for (const char* bad : {"", "[]", "\"t\"", R"({"token":5})", R"({"token":null,"access_token":[]})", "{\"token\""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(registry::parse_token_response(bad), std::invalid_argument);
  }
}

TEST_CASE("credential-helper output: Username/Secret, <token> for identity tokens, errors never quote it") {
  auto c = registry::parse_helper_output(R"({"ServerURL":"h","Username":"alice","Secret":"s3cr3t"})", "pass", "cfg");
  REQUIRE(c);
  CHECK(c->username == "alice");
  CHECK(c->password == "s3cr3t");
  CHECK(c->source == "docker-credential-pass (cfg)");
  auto t = registry::parse_helper_output(R"({"Username":"<token>","Secret":"refresh"})", "pass", "cfg");
  REQUIRE(t);
  CHECK(t->identity_token == "refresh");
  CHECK_FALSE(registry::parse_helper_output("{}", "pass", "cfg"));
  for (const char* bad : {"s3cr3t-not-json", "[\"s3cr3t\"]", R"({"Username":"u","Secret":["s3cr3t"]})"}) {
    CAPTURE(bad);
    auto e = error_of([&] { (void)registry::parse_helper_output(bad, "pass", "cfg"); });
    CHECK(e.kind() == util::ErrorKind::auth);
    CHECK(contains(e.what(), "docker-credential-pass get printed"));
    CHECK_FALSE(contains(e.what(), "s3cr3t"));
  }
}

TEST_CASE("config keys match hosts with or without a scheme; Docker Hub has its own key") {
  CHECK(registry::key_matches("https://127.0.0.1:5000/v1/", "127.0.0.1:5000"));
  CHECK(registry::key_matches("http://127.0.0.1:5000", "127.0.0.1:5000"));
  CHECK_FALSE(registry::key_matches("127.0.0.1:5001", "127.0.0.1:5000"));
  CHECK(registry::key_matches("https://index.docker.io/v1/", "docker.io"));
  CHECK(registry::config_key("docker.io") == "https://index.docker.io/v1/");
  CHECK(registry::config_key("ghcr.io") == "ghcr.io");
}

TEST_CASE("credential lookup order and every entry form") {
  auto tmp = make_temp("pi-cred-");
  registry::AuthFiles f;
  f.docker_config_dir = tmp.path() / "docker";
  f.registry_auth_file = tmp.path() / "regauth.json";
  f.podman_auth_file = tmp.path() / "podman.json";
  fs::create_directories(f.docker_config_dir);
  registry::CredentialStore store(f);

  CHECK(store.lookup("r.example.com").anonymous());

  util::write_file_atomic(f.podman_auth_file, R"({"auths":{"r.example.com":{"auth":"cG9kOnB3"}}})");
  auto c = store.lookup("r.example.com");
  CHECK(c.username == "pod");
  CHECK(c.password == "pw");
  CHECK(contains(c.source, "podman.json"));

  util::write_file_atomic(f.docker_config_dir / "config.json",
                          R"({"auths":{"https://r.example.com":{"username":"dock","password":"pw2"},
                               "id.example.com":{"identitytoken":"refresh-me"}}})");
  c = store.lookup("r.example.com");
  CHECK(c.username == "dock");
  CHECK(contains(c.source, "config.json"));
  CHECK(store.lookup("id.example.com").identity_token == "refresh-me");

  util::write_file_atomic(f.registry_auth_file, R"({"auths":{"r.example.com":{"auth":"cmVnOnB3Mw=="}}})");
  c = store.lookup("r.example.com");
  CHECK(c.username == "reg");
  CHECK(contains(c.source, "$REGISTRY_AUTH_FILE"));

  registry::Credential flag;
  flag.username = "flag";
  flag.password = "pw4";
  flag.source = "--username/--password-stdin";
  store.set_explicit("r.example.com", flag);
  CHECK(store.lookup("r.example.com").username == "flag");
  CHECK(store.lookup("other.example.com").anonymous());
}

TEST_CASE("a broken auth entry or file is an input error naming the file, not the secret") {
  auto tmp = make_temp("pi-cred-");
  registry::AuthFiles f;
  f.docker_config_dir = tmp.path();
  util::write_file_atomic(tmp.path() / "config.json", R"({"auths":{"h":{"auth":"bm9jb2xvbg=="}}})"); // "nocolon"
  registry::CredentialStore store(f);
  auto e = error_of([&] { store.lookup("h"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "config.json"));
  CHECK_FALSE(contains(e.what(), "nocolon"));
  util::write_file_atomic(tmp.path() / "config.json", R"({"auths": )");
  e = error_of([&] { store.lookup("h"); });
  CHECK(contains(e.what(), "not valid JSON"));
  // A file cut off inside a secret: the JSON parser's own message would quote it
  // ("last read: ..."); found by fuzz_docker_config.
  util::write_file_atomic(tmp.path() / "config.json", R"({"auths":{"h":{"auth":"c2VjcmV0LXRva2VuLXZhbHVl)");
  e = error_of([&] { store.lookup("h"); });
  CHECK(contains(e.what(), "config.json: not valid JSON (a syntax error at byte"));
  CHECK_FALSE(contains(e.what(), "c2VjcmV0"));
  // A number too large for any type throws out_of_range from the parser, quoting it.
  util::write_file_atomic(tmp.path() / "config.json", R"({"auths":5500010E443673})");
  e = error_of([&] { store.lookup("h"); });
  CHECK(e.kind() == util::ErrorKind::input);
  CHECK(contains(e.what(), "config.json: not valid JSON (a number out of range)"));
  CHECK_FALSE(contains(e.what(), "5500010"));
}

TEST_CASE("login stores base64 user:password with mode 0600; logout removes it") {
  auto tmp = make_temp("pi-cred-");
  registry::AuthFiles f;
  f.docker_config_dir = tmp.path() / "d";
  registry::CredentialStore store(f);
  std::string where = store.store("127.0.0.1:5000", "alice", "s3cr3t");
  CHECK(where == (f.docker_config_dir / "config.json").string());
  struct stat st {};
  REQUIRE(::stat(where.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(contains(util::read_file(where), "YWxpY2U6czNjcjN0"));
  CHECK(store.lookup("127.0.0.1:5000").password == "s3cr3t");
  CHECK(store.erase("127.0.0.1:5000"));
  CHECK(store.lookup("127.0.0.1:5000").anonymous());
  CHECK_FALSE(store.erase("127.0.0.1:5000"));
}

TEST_CASE("a missing credential helper is an auth error naming the helper") {
  auto e = error_of([] { registry::run_credential_helper("pi-no-such-helper", "get", "h"); });
  CHECK(e.kind() == util::ErrorKind::auth);
  CHECK(contains(e.what(), "docker-credential-pi-no-such-helper"));
}

TEST_CASE("a credential helper that exits without reading its input is its exit status, with SIGPIPE at its default") {
  // paddle-image ignores SIGPIPE; a library caller (or a fuzz target) may not. The input
  // is larger than a pipe's buffer, so the write meets the closed pipe whatever the timing.
  auto tmp = make_temp("pi-helper-");
  util::write_file_atomic(tmp.path() / "docker-credential-pi-deaf", "#!/bin/sh\nexit 3\n");
  fs::permissions(tmp.path() / "docker-credential-pi-deaf", fs::perms::owner_all);
  std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (tmp.path().string() + ":" + saved_path).c_str(), 1);
  auto saved_handler = std::signal(SIGPIPE, SIG_DFL);
  int status = -1;
  std::string out = registry::run_credential_helper("pi-deaf", "store", std::string(1 << 20, 'x'), &status);
  std::signal(SIGPIPE, saved_handler);
  ::setenv("PATH", saved_path.c_str(), 1);
  CHECK(status == 3);
  CHECK(out.empty());
  sigset_t pending;
  sigpending(&pending);
  CHECK_FALSE(sigismember(&pending, SIGPIPE));
}

TEST_CASE("manifest media types are sniffed from the bytes") {
  CHECK(oci::sniff_media_type(R"({"mediaType":"application/vnd.docker.distribution.manifest.v2+json"})") ==
        "application/vnd.docker.distribution.manifest.v2+json");
  CHECK(oci::sniff_media_type(R"({"schemaVersion":2,"manifests":[]})") == oci::media::k_index);
  CHECK(oci::sniff_media_type(R"({"schemaVersion":2,"config":{},"layers":[]})") == oci::media::k_manifest);
  registry::ManifestData m;
  m.media_type = "application/vnd.docker.distribution.manifest.list.v2+json";
  CHECK(m.is_index());
}

TEST_CASE("parallel_for runs every item once and rethrows the first error") {
  std::atomic<int> sum{0};
  util::parallel_for(100, 4, [&](std::size_t i) { sum += static_cast<int>(i); });
  CHECK(sum == 4950);
  std::atomic<int> ran{0};
  auto e = error_of([&] {
    util::parallel_for(50, 3, [&](std::size_t i) {
      ++ran;
      if (i == 0) {
        throw util::Error(util::ErrorKind::network, "item 0 failed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  });
  CHECK(contains(e.what(), "item 0 failed"));
  CHECK(ran < 50); // the others stop taking new items
}

TEST_CASE("file_reader reads from an offset") {
  auto tmp = make_temp("pi-reader-");
  util::write_file_atomic(tmp.path() / "b", "0123456789");
  auto r = util::file_reader(tmp.path() / "b", 4);
  char buf[16];
  std::size_t n = r(buf, sizeof buf);
  CHECK(std::string(buf, n) == "456789");
  CHECK(r(buf, sizeof buf) == 0);
}

} // namespace unit_registry_test
