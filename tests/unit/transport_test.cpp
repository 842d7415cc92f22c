// The registry protocol driven through its transport seam by a scripted fake: token
// refresh, 413 to chunked uploads, Range resumes, retries and error mapping, without
// a server (milliseconds each).
#include <doctest/doctest.h>

#include "registry/client.hpp"
#include "registry/transfer.hpp"
#include "tests/unit/http_fakes.hpp"
#include "tests/unit/support.hpp"
#include "util/sha256.hpp"

#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace unit_transport_test {

using namespace test_support;
using registry::Request;
using registry::Response;

namespace {

// Drains a request body (as libcurl would) and returns it.
std::string body_of(const Request& q) {
  if (!q.reader) {
    return q.body;
  }
  std::string out;
  char buf[4096];
  while (std::size_t n = q.reader(buf, sizeof buf)) {
    out.append(buf, n);
  }
  return out;
}

// Plays a script: each step names the method and a piece of the URL it expects and
// answers. A response to a request with a sink is streamed into it, as Http does.
class FakeTransport : public registry::Transport {
public:
  struct Step {
    std::string method;
    std::string url_part;
    std::function<Response(const Request&)> answer;
  };
  void expect(std::string method, std::string url_part, std::function<Response(const Request&)> answer) {
    m_steps.push_back({std::move(method), std::move(url_part), std::move(answer)});
  }
  void expect(std::string method, std::string url_part, Response r) {
    expect(std::move(method), std::move(url_part), [r](const Request&) { return r; });
  }
  Response perform(const Request& q, const registry::TlsPolicy&) override {
    std::string auth = header(q, "Authorization");
    seen.push_back(q.method + " " + q.url + (auth.empty() ? "" : " [" + auth + "]"));
    if (m_steps.empty()) {
      FAIL("unexpected request " << q.method << " " << q.url);
    }
    Step s = m_steps.front();
    m_steps.pop_front();
    CHECK_MESSAGE(q.method == s.method, "request " << seen.size() << ": " << q.method << " " << q.url);
    CHECK_MESSAGE(q.url.find(s.url_part) != std::string::npos, "request " << seen.size() << ": " << q.url);
    Response r = s.answer(q);
    if (q.sink && r.status / 100 == 2 && !r.body.empty()) {
      if (q.on_body_start) {
        q.on_body_start(r.status);
      }
      q.sink(r.body.data(), r.body.size());
      r.body.clear();
    }
    return r;
  }
  bool done() const { return m_steps.empty(); }
  std::vector<std::string> seen;

private:
  std::deque<Step> m_steps;
};

struct Client {
  std::shared_ptr<FakeTransport> fake = std::make_shared<FakeTransport>();
  registry::Stats stats;
  std::shared_ptr<registry::Registry> reg;
  explicit Client(registry::Credential cred = {}, int attempts = 3) {
    registry::ClientOptions o;
    o.max_attempts = attempts;
    o.backoff_initial_s = 0;
    o.backoff_max_s = 0;
    reg = std::make_shared<registry::Registry>("reg.test", fake, o, cred, stats);
  }
};

const std::string k_challenge = R"(Bearer realm="https://auth.test/token",service="reg.test")";

oci::Descriptor blob_of(const std::string& bytes) {
  return oci::Descriptor{"application/octet-stream",
                         oci::Digest::sha256(util::sha256_hex(bytes)),
                         static_cast<std::int64_t>(bytes.size()),
                         {},
                         {}};
}

oci::BlobOpener opener(const std::string& bytes) {
  return [bytes](std::int64_t offset) -> oci::Reader {
    auto pos = std::make_shared<std::size_t>(static_cast<std::size_t>(offset));
    return [bytes, pos](char* buf, std::size_t len) {
      std::size_t n = std::min(len, bytes.size() - *pos);
      std::copy_n(bytes.data() + *pos, n, buf);
      *pos += n;
      return n;
    };
  };
}

} // namespace

TEST_CASE(
    "given an expired token, when the registry answers 401, then a new token is fetched once and the request retried") {
  Client c;
  std::string manifest = R"({"schemaVersion":2,"config":{},"layers":[]})";
  c.fake->expect("GET", "https://reg.test/v2/", resp(401, {{"WWW-Authenticate", k_challenge}}));
  c.fake->expect("GET", "https://auth.test/token?service=reg.test&scope=repository%3Ateam%2Fapp%3Apull",
                 resp(200, {}, R"({"token":"t1","expires_in":300})"));
  c.fake->expect("GET", "/v2/team/app/manifests/v1", [](const Request& q) {
    CHECK(header(q, "Authorization") == "Bearer t1");
    return resp(401, {{"WWW-Authenticate", k_challenge}});
  });
  c.fake->expect("GET", "https://auth.test/token", resp(200, {}, R"({"token":"t2"})"));
  c.fake->expect("GET", "/v2/team/app/manifests/v1", [&](const Request& q) {
    CHECK(header(q, "Authorization") == "Bearer t2");
    return resp(200, {{"Content-Type", oci::media::k_manifest}}, manifest);
  });
  oci::ManifestBlob m = c.reg->get_manifest("team/app", "v1");
  CHECK(m.bytes == manifest);
  CHECK(m.media_type == oci::media::k_manifest);
  CHECK(c.fake->done());
}

TEST_CASE(
    "given credentials the registry keeps refusing, then the error is an auth error naming where they came from") {
  registry::Credential cred;
  cred.username = "u";
  cred.password = "secret-password";
  cred.source = "test config";
  Client c(cred);
  c.fake->expect("GET", "/v2/", resp(401, {{"WWW-Authenticate", R"(Basic realm="reg")"}}));
  c.fake->expect("GET", "/v2/team/app/manifests/v1", resp(401, {{"WWW-Authenticate", R"(Basic realm="reg")"}}));
  c.fake->expect("GET", "/v2/team/app/manifests/v1", resp(401, {{"WWW-Authenticate", R"(Basic realm="reg")"}}));
  auto e = error_of([&] { c.reg->get_manifest("team/app", "v1"); });
  CHECK(e.kind() == util::ErrorKind::auth);
  CHECK(contains(e.what(), "test config"));
  CHECK_FALSE(contains(e.what(), "secret-password"));
  CHECK(c.fake->done());
}

TEST_CASE("given a registry that refuses big bodies with 413, then the upload continues in chunks and stays chunked") {
  Client c;
  std::string data = "0123456789abcdef";
  oci::Descriptor d = blob_of(data);
  c.fake->expect("GET", "/v2/", resp(200));
  c.fake->expect("POST", "/v2/team/app/blobs/uploads/", resp(202, {{"Location", "/v2/team/app/blobs/uploads/u1"}}));
  c.fake->expect("PUT", "/v2/team/app/blobs/uploads/u1?digest=sha256%3A", resp(413));
  c.fake->expect("POST", "/v2/team/app/blobs/uploads/", resp(202, {{"Location", "/v2/team/app/blobs/uploads/u2"}}));
  c.fake->expect("PATCH", "/blobs/uploads/u2", [&](const Request& q) {
    CHECK(header(q, "Content-Range") == "0-15");
    CHECK(body_of(q) == data);
    return resp(202, {{"Location", "/v2/team/app/blobs/uploads/u2b"}, {"Range", "0-15"}});
  });
  c.fake->expect("PUT", "/blobs/uploads/u2b?digest=sha256%3A", resp(201));
  c.reg->upload_blob("team/app", d, opener(data));
  CHECK(c.fake->done());
  // The next blob goes straight to chunks.
  std::string more = "second blob";
  c.fake->expect("POST", "/blobs/uploads/", resp(202, {{"Location", "/v2/team/app/blobs/uploads/u3"}}));
  c.fake->expect("PATCH", "/blobs/uploads/u3", [&](const Request& q) {
    CHECK(body_of(q) == more);
    return resp(202, {{"Range", "0-10"}});
  });
  c.fake->expect("PUT", "/blobs/uploads/u3?digest=", resp(201));
  c.reg->upload_blob("team/app", blob_of(more), opener(more));
  CHECK(c.fake->done());
  CHECK(c.stats.blobs_uploaded == 2);
}

TEST_CASE("given a chunk that fails, then the upload resumes after the bytes the registry acknowledges") {
  registry::ClientOptions o;
  o.max_attempts = 3;
  o.backoff_initial_s = 0;
  o.backoff_max_s = 0;
  o.chunk_size = 4;
  auto fake = std::make_shared<FakeTransport>();
  registry::Stats stats;
  auto reg = std::make_shared<registry::Registry>("reg.test", fake, o, registry::Credential{}, stats);
  std::string data = "abcdefghij";
  fake->expect("GET", "/v2/", resp(200));
  fake->expect("POST", "/blobs/uploads/", resp(202, {{"Location", "/v2/r/blobs/uploads/s"}}));
  fake->expect("PATCH", "/blobs/uploads/s", [](const Request& q) {
    CHECK(body_of(q) == "abcd");
    return resp(202, {{"Range", "0-3"}});
  });
  fake->expect("PATCH", "/blobs/uploads/s", [](const Request& q) -> Response {
    CHECK(header(q, "Content-Range") == "4-7");
    throw registry::TransportFailure("connection reset", 56, true);
  });
  fake->expect("GET", "/blobs/uploads/s", resp(204, {{"Range", "0-5"}})); // it kept two bytes
  fake->expect("PATCH", "/blobs/uploads/s", [](const Request& q) {
    CHECK(header(q, "Content-Range") == "6-9");
    CHECK(body_of(q) == "ghij");
    return resp(202, {{"Range", "0-9"}});
  });
  fake->expect("PUT", "/blobs/uploads/s?digest=", resp(201));
  reg->upload_blob("r", blob_of(data), opener(data));
  CHECK(fake->done());
}

TEST_CASE("given a download cut off mid-way, then it resumes with a Range request at the byte reached") {
  Client c;
  std::string data = "the whole blob, in two parts";
  oci::Descriptor d = blob_of(data);
  c.fake->expect("GET", "/v2/", resp(200));
  c.fake->expect("GET", "/v2/r/blobs/" + d.digest.str(), [&](const Request& q) -> Response {
    CHECK(header(q, "Range").empty());
    q.on_body_start(200);
    q.sink(data.data(), 10);
    throw registry::TransportFailure("connection reset by peer", 56, true);
  });
  c.fake->expect("GET", "/v2/r/blobs/" + d.digest.str(), [&](const Request& q) {
    CHECK(header(q, "Range") == "bytes=10-");
    return resp(206, {}, data.substr(10));
  });
  std::string got;
  c.reg->fetch_blob(
      "r", d, 0, [&](const char* p, std::size_t n) { got.append(p, n); }, [] { FAIL("no restart expected"); });
  CHECK(got == data);
  CHECK(c.stats.retries == 1);
}

TEST_CASE("given a server that ignores Range, then the image stream skips what it already passed on") {
  Client c;
  std::string data = "0123456789ABCDEFGHIJ";
  oci::Descriptor d = blob_of(data);
  std::string manifest = R"({"schemaVersion":2,"config":{},"layers":[]})";
  c.fake->expect("GET", "/v2/", resp(200));
  c.fake->expect("GET", "/v2/r/manifests/t", resp(200, {}, manifest));
  c.fake->expect("GET", "/v2/r/blobs/", [&](const Request& q) -> Response {
    q.on_body_start(200);
    q.sink(data.data(), 7);
    throw registry::TransportFailure("stalled", 28, true);
  });
  c.fake->expect("GET", "/v2/r/blobs/", [&](const Request& q) {
    CHECK(header(q, "Range") == "bytes=7-");
    return resp(200, {}, data); // the whole blob again
  });
  oci::ImageRef ref = oci::ImageRef::parse("reg.test/r:t");
  auto img = registry::open_registry_image(c.reg, ref);
  std::string got;
  img->read_blob(d, [&](const char* p, std::size_t n) { got.append(p, n); });
  CHECK(got == data);
}

TEST_CASE("given 503s with Retry-After, then the request is retried and finally mapped to a registry error") {
  Client c({}, 3);
  c.fake->expect("GET", "/v2/", resp(200));
  for (int i = 0; i < 3; ++i) {
    c.fake->expect("HEAD", "/v2/r/blobs/", resp(503, {{"Retry-After", "0"}}));
  }
  auto e = error_of([&] { c.reg->blob_size("r", blob_of("x").digest); });
  CHECK(e.kind() == util::ErrorKind::registry);
  CHECK(contains(e.what(), "HTTP 503"));
  CHECK(c.stats.retries == 2);
  CHECK(c.fake->done());
}

TEST_CASE("given a 503 then a 200, then the caller sees one success") {
  Client c;
  c.fake->expect("GET", "/v2/", resp(200));
  c.fake->expect("HEAD", "/v2/r/blobs/", resp(503));
  c.fake->expect("HEAD", "/v2/r/blobs/", resp(200, {{"Content-Length", "42"}}));
  CHECK(c.reg->blob_size("r", blob_of("x").digest) == 42);
}

TEST_CASE("registry errors map to the exit-code classes") {
  SUBCASE("a digest the registry rejects is an integrity error") {
    Client c;
    std::string data = "bytes";
    c.fake->expect("GET", "/v2/", resp(200));
    c.fake->expect("POST", "/blobs/uploads/", resp(202, {{"Location", "/v2/r/blobs/uploads/x"}}));
    c.fake->expect("PUT", "/blobs/uploads/x", [&](const Request& q) {
      body_of(q);
      return resp(400, {}, R"({"errors":[{"code":"DIGEST_INVALID","message":"provided digest did not match"}]})");
    });
    auto e = error_of([&] { c.reg->upload_blob("r", blob_of(data), opener(data)); });
    CHECK(e.kind() == util::ErrorKind::integrity);
    CHECK(contains(e.what(), "DIGEST_INVALID"));
  }
  SUBCASE("a missing manifest names the OCI error code and how to list tags") {
    Client c;
    c.fake->expect("GET", "/v2/", resp(200));
    c.fake->expect("GET", "/v2/r/manifests/nope",
                   resp(404, {}, R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]})"));
    auto e = error_of([&] { c.reg->get_manifest("r", "nope"); });
    CHECK(e.kind() == util::ErrorKind::registry);
    CHECK(contains(e.what(), "MANIFEST_UNKNOWN"));
    CHECK(contains(e.hint(), "paddle-image tags"));
  }
  SUBCASE("an unknown host is a network error, not retried") {
    Client c;
    c.fake->expect("GET", "/v2/", [](const Request&) -> Response {
      throw registry::TransportFailure("Could not resolve host: reg.test", 6, false);
    });
    auto e = error_of([&] { c.reg->ping(); });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(contains(e.what(), "unknown host"));
    CHECK(c.stats.retries == 0);
  }
  SUBCASE("a manifest whose bytes do not match the digest asked for is an integrity error") {
    Client c;
    std::string other = R"({"schemaVersion":2})";
    std::string want = "sha256:" + std::string(64, 'a');
    c.fake->expect("GET", "/v2/", resp(200));
    c.fake->expect("GET", "/v2/r/manifests/" + want, resp(200, {}, other));
    auto e = error_of([&] { c.reg->get_manifest("r", want); });
    CHECK(e.kind() == util::ErrorKind::integrity);
  }
}

TEST_CASE("the typed registry error maps status and OCI error codes to one kind, and so to one exit code") {
  using util::ErrorKind;
  CHECK(registry::error_kind(401, {"UNAUTHORIZED"}) == ErrorKind::auth);
  CHECK(registry::error_kind(403, {"DENIED"}) == ErrorKind::auth);
  CHECK(registry::error_kind(401, {}) == ErrorKind::auth);
  CHECK(registry::error_kind(400, {"DIGEST_INVALID"}) == ErrorKind::integrity);
  CHECK(registry::error_kind(400, {"BLOB_UPLOAD_INVALID", "SIZE_INVALID"}) == ErrorKind::integrity);
  CHECK(registry::error_kind(400, {"NAME_INVALID"}) == ErrorKind::registry);
  CHECK(registry::error_kind(404, {"BLOB_UNKNOWN"}) == ErrorKind::registry);
  CHECK(registry::error_kind(404, {"MANIFEST_UNKNOWN"}) == ErrorKind::registry);
  CHECK(registry::error_kind(429, {"TOOMANYREQUESTS"}) == ErrorKind::registry);
  CHECK(registry::error_kind(503, {}) == ErrorKind::registry);

  registry::RegistryError e(400, {"DIGEST_INVALID"}, "uploading");
  CHECK(e.kind() == ErrorKind::integrity);
  CHECK(util::exit_code(e.kind()) == 8);
  CHECK(e.status() == 400);
  CHECK(e.has_code("DIGEST_INVALID"));
  CHECK(util::exit_code(registry::RegistryError(403, {"DENIED"}, "x").kind()) == 5);
  CHECK(util::exit_code(registry::RegistryError(404, {"MANIFEST_UNKNOWN"}, "x").kind()) == 7);

  auto body = registry::parse_error_body(
      R"({"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry"},{"code":"DENIED"}]})");
  CHECK(body.codes == std::vector<std::string>{"BLOB_UNKNOWN", "DENIED"});
  CHECK(body.summary == "BLOB_UNKNOWN: blob unknown to registry; DENIED");
  auto html = registry::parse_error_body("<html>\nbad gateway</html>");
  CHECK(html.codes.empty());
  CHECK(html.summary == "<html> bad gateway</html>");
}

TEST_CASE("a refusal reaches the caller as a RegistryError carrying the status and the OCI codes") {
  SUBCASE("a missing manifest") {
    Client c;
    c.fake->expect("GET", "/v2/", resp(200));
    c.fake->expect("GET", "/v2/r/manifests/gone",
                   resp(404, {}, R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]})"));
    try {
      c.reg->get_manifest("r", "gone");
      FAIL("expected a RegistryError");
    } catch (const registry::RegistryError& e) {
      CHECK(e.status() == 404);
      CHECK(e.has_code("MANIFEST_UNKNOWN"));
      CHECK(e.kind() == util::ErrorKind::registry);
    }
  }
  SUBCASE("a denied push") {
    Client c;
    c.fake->expect("GET", "/v2/", resp(200));
    c.fake->expect(
        "PUT", "/v2/r/manifests/v1",
        resp(403, {}, R"({"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]})"));
    oci::ManifestBlob m;
    m.bytes = "{}";
    m.media_type = oci::media::k_manifest;
    m.digest = oci::Digest::sha256(util::sha256_hex(m.bytes));
    try {
      c.reg->put_manifest("r", "v1", m);
      FAIL("expected a RegistryError");
    } catch (const registry::RegistryError& e) {
      CHECK(e.status() == 403);
      CHECK(e.has_code("DENIED"));
      CHECK(e.kind() == util::ErrorKind::auth);
      CHECK(contains(e.what(), "no credentials were found for reg.test"));
    }
  }
  SUBCASE("an upload that keeps failing gives up with the last refusal") {
    Client c({}, 2);
    std::string data = "bytes";
    c.fake->expect("GET", "/v2/", resp(200));
    for (int i = 0; i < 2; ++i) {
      c.fake->expect("POST", "/blobs/uploads/", resp(202, {{"Location", "/v2/r/blobs/uploads/x"}}));
      c.fake->expect("PUT", "/blobs/uploads/x", [&](const Request& q) {
        body_of(q);
        return resp(503, {}, R"({"errors":[{"code":"UNAVAILABLE","message":"try later"}]})");
      });
    }
    try {
      c.reg->upload_blob("r", blob_of(data), opener(data));
      FAIL("expected a RegistryError");
    } catch (const registry::RegistryError& e) {
      CHECK(e.status() == 503);
      CHECK(e.has_code("UNAVAILABLE"));
      CHECK(e.kind() == util::ErrorKind::registry);
      CHECK(contains(e.what(), "failed after 2 attempts"));
    }
    CHECK(c.stats.retries == 1);
    CHECK(c.fake->done());
  }
}

TEST_CASE("the ping goes through the retry loop: a 503 then a 200 is one success") {
  Client c;
  c.fake->expect("GET", "https://reg.test/v2/", resp(503, {{"Retry-After", "0"}}));
  c.fake->expect("GET", "https://reg.test/v2/", [](const Request&) -> Response {
    throw registry::TransportFailure("connection reset by peer", 56, true);
  });
  c.fake->expect("GET", "https://reg.test/v2/", resp(200));
  c.reg->ping();
  CHECK(c.stats.retries == 2);
  CHECK(c.fake->done());
  c.reg->ping(); // once per registry
  CHECK(c.fake->done());
}

TEST_CASE("the ping of an --insecure host falls back to plain HTTP when TLS fails, without retrying") {
  registry::ClientOptions o;
  o.max_attempts = 3;
  o.backoff_initial_s = 0;
  o.backoff_max_s = 0;
  o.insecure.insert("reg.test");
  auto fake = std::make_shared<FakeTransport>();
  registry::Stats stats;
  auto reg = std::make_shared<registry::Registry>("reg.test", fake, o, registry::Credential{}, stats);
  fake->expect("GET", "https://reg.test/v2/", [](const Request& q) -> Response {
    CHECK(q.connect_timeout_s == 3);
    throw registry::TransportFailure("wrong version number", 35, true, true);
  });
  fake->expect("GET", "http://reg.test/v2/", resp(200));
  reg->ping();
  CHECK(reg->repo_url("r") == "http://reg.test/v2/r");
  CHECK(stats.retries == 0);
  CHECK(fake->done());
}

TEST_CASE("a loopback host without the flag: plain HTTP when nothing speaks TLS, a bad certificate stays an error") {
  registry::ClientOptions o;
  o.max_attempts = 1;
  registry::Stats stats;
  {
    auto fake = std::make_shared<FakeTransport>();
    auto reg = std::make_shared<registry::Registry>("127.0.0.1:5000", fake, o, registry::Credential{}, stats);
    fake->expect("GET", "https://127.0.0.1:5000/v2/", [](const Request&) -> Response {
      throw registry::TransportFailure("wrong version number", 35, true, true);
    });
    fake->expect("GET", "http://127.0.0.1:5000/v2/", resp(200));
    reg->ping();
    CHECK(reg->repo_url("r") == "http://127.0.0.1:5000/v2/r");
    CHECK(fake->done());
  }
  {
    auto fake = std::make_shared<FakeTransport>();
    auto reg = std::make_shared<registry::Registry>("localhost:5000", fake, o, registry::Credential{}, stats);
    fake->expect("GET", "https://localhost:5000/v2/", [](const Request&) -> Response {
      throw registry::TransportFailure("SSL certificate problem: self-signed certificate", 60, false, true);
    });
    auto e = error_of([&] { reg->ping(); });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(contains(e.what(), "TLS failed"));
    CHECK(fake->done());
  }
  {
    auto fake = std::make_shared<FakeTransport>();
    auto reg = std::make_shared<registry::Registry>("reg.test:5000", fake, o, registry::Credential{}, stats);
    fake->expect("GET", "https://reg.test:5000/v2/", [](const Request&) -> Response {
      throw registry::TransportFailure("wrong version number", 35, true, true);
    });
    CHECK(error_of([&] { reg->ping(); }).kind() == util::ErrorKind::network);
    CHECK(fake->done());
  }
}

TEST_CASE("the token fetch goes through the retry loop: a 503 then a 200 from the token endpoint is retried") {
  Client c;
  std::string manifest = R"({"schemaVersion":2,"config":{},"layers":[]})";
  c.fake->expect("GET", "/v2/", resp(401, {{"WWW-Authenticate", k_challenge}}));
  c.fake->expect("GET", "https://auth.test/token", resp(503, {{"Retry-After", "0"}}));
  c.fake->expect("GET", "https://auth.test/token",
                 [](const Request&) -> Response { throw registry::TransportFailure("connection refused", 7, true); });
  c.fake->expect("GET", "https://auth.test/token", resp(200, {}, R"({"token":"t1"})"));
  c.fake->expect("GET", "/v2/r/manifests/v1", [&](const Request& q) {
    CHECK(header(q, "Authorization") == "Bearer t1");
    return resp(200, {{"Content-Type", oci::media::k_manifest}}, manifest);
  });
  CHECK(c.reg->get_manifest("r", "v1").bytes == manifest);
  CHECK(c.stats.retries == 2);
  CHECK(c.fake->done());
}

TEST_CASE("a token endpoint that keeps failing ends the retry loop with a typed error") {
  SUBCASE("503 for ever is a registry error naming the token server") {
    Client c({}, 2);
    c.fake->expect("GET", "/v2/", resp(401, {{"WWW-Authenticate", k_challenge}}));
    c.fake->expect("GET", "https://auth.test/token", resp(503));
    c.fake->expect("GET", "https://auth.test/token", resp(503));
    auto e = error_of([&] { c.reg->blob_size("r", blob_of("x").digest); });
    CHECK(e.kind() == util::ErrorKind::registry);
    CHECK(contains(e.what(), "token server auth.test answered HTTP 503"));
    CHECK(c.stats.retries == 1);
    CHECK(c.fake->done());
  }
  SUBCASE("refused credentials are an auth error, not retried") {
    Client c({}, 3);
    c.fake->expect("GET", "/v2/", resp(401, {{"WWW-Authenticate", k_challenge}}));
    c.fake->expect("GET", "https://auth.test/token", resp(401));
    auto e = error_of([&] { c.reg->blob_size("r", blob_of("x").digest); });
    CHECK(e.kind() == util::ErrorKind::auth);
    CHECK(contains(e.what(), "refused the credentials"));
    CHECK(c.stats.retries == 0);
    CHECK(c.fake->done());
  }
  SUBCASE("a transport failure on every attempt is a network error") {
    Client c({}, 2);
    c.fake->expect("GET", "/v2/", resp(401, {{"WWW-Authenticate", k_challenge}}));
    for (int i = 0; i < 2; ++i) {
      c.fake->expect("GET", "https://auth.test/token", [](const Request&) -> Response {
        throw registry::TransportFailure("connection refused", 7, true);
      });
    }
    auto e = error_of([&] { c.reg->blob_size("r", blob_of("x").digest); });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(contains(e.what(), "getting a token for reg.test from auth.test"));
    CHECK(contains(e.what(), "gave up after 2 attempts"));
    CHECK(c.fake->done());
  }
}

// registry/transfer.cpp RemotePipe (issue 34): the background download's exception is
// kept across the thread and rethrown, whole, by the reader.
TEST_CASE("given a blob download that fails mid-way, then the pipe's reader rethrows that error") {
  Client c({}, 1);
  std::string data(300000, 'q');
  oci::Descriptor d = blob_of(data);
  std::string manifest = R"({"schemaVersion":2,"config":{},"layers":[]})";
  c.fake->expect("GET", "/v2/", resp(200));
  c.fake->expect("GET", "/v2/r/manifests/t", resp(200, {}, manifest));
  c.fake->expect("GET", "/v2/r/blobs/", [&](const Request& q) -> Response {
    q.on_body_start(200);
    q.sink(data.data(), 1000);
    throw util::Error(util::ErrorKind::io, "cannot write the download: No space left on device");
  });
  oci::ImageRef ref = oci::ImageRef::parse("reg.test/r:t");
  auto img = registry::open_registry_image(c.reg, ref);
  auto e = error_of([&] {
    oci::Reader read = img->open_blob(d, 0);
    char buf[4096];
    while (read(buf, sizeof buf) > 0) {
    }
  });
  CHECK(e.kind() == util::ErrorKind::io);
  CHECK(contains(e.what(), "No space left on device"));
}

} // namespace unit_transport_test
