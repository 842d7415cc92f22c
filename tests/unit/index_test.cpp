// The package-index client: the HTML (PEP 503) and JSON (PEP 691) page parsers, URL
// helpers and netrc, then PackageIndex driven through a scripted fake transport
// (negotiation, retries, resumed downloads, credentials, find-links), no server.
#include <doctest/doctest.h>

#include "python/index.hpp"
#include "tests/unit/http_fakes.hpp"
#include "tests/unit/support.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace unit_index_test {

using namespace test_support;
using python::IndexFile;
using registry::Request;
using registry::Response;

namespace {

const std::string k_hash_a(64, 'a');
const std::string k_hash_b(64, 'b');

std::string upper(std::string s) {
  for (auto& c : s) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return s;
}

// Plays a script of (URL piece, answer) steps; a 2xx answer to a request with a sink
// is streamed into it, as Http does.
class FakeTransport : public registry::Transport {
public:
  void expect(std::string url_part, std::function<Response(const Request&)> answer) {
    m_steps.push_back({std::move(url_part), std::move(answer)});
  }
  void expect(std::string url_part, Response r) {
    expect(std::move(url_part), [r](const Request&) { return r; });
  }
  Response perform(const Request& q, const registry::TlsPolicy&) override {
    seen.push_back(q.url);
    requests.push_back(q);
    if (m_steps.empty()) {
      FAIL("unexpected request " << q.method << " " << q.url);
    }
    auto s = m_steps.front();
    m_steps.pop_front();
    CHECK(q.method == "GET");
    CHECK_MESSAGE(q.url.find(s.first) != std::string::npos, "request " << seen.size() << ": " << q.url);
    Response r = s.second(q);
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
  std::vector<Request> requests;

private:
  std::deque<std::pair<std::string, std::function<Response(const Request&)>>> m_steps;
};

struct Index {
  std::shared_ptr<FakeTransport> fake = std::make_shared<FakeTransport>();
  registry::Stats stats;
  std::unique_ptr<python::PackageIndex> index;
  explicit Index(python::IndexSources sources, int attempts = 3) {
    registry::ClientOptions o;
    o.max_attempts = attempts;
    o.backoff_initial_s = 0.001;
    o.backoff_max_s = 0.001;
    index = std::make_unique<python::PackageIndex>(std::move(sources), fake, o, stats);
  }
};

python::IndexSources index_at(std::string url) {
  python::IndexSources s;
  s.indexes.push_back(std::move(url));
  return s;
}

std::vector<std::string> names_of(const std::vector<IndexFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    out.push_back(f.filename);
  }
  return out;
}

} // namespace

// ---- parse_html_page ----

TEST_CASE("parse_html_page resolves relative and absolute hrefs against the page and takes #sha256= fragments") {
  std::string html = "<!DOCTYPE html><html><body>\n"
                     "<a href=\"../../files/pkg-1.0-py3-none-any.whl#sha256=" +
                     upper(k_hash_a) +
                     "\">pkg-1.0-py3-none-any.whl</a><br/>\n"
                     "<A HREF='https://cdn.test/a/pkg-1.1.tar.gz#md5=abc'>pkg-1.1.tar.gz</A>\n"
                     "<a href=\"/packages/pkg-1.2-py3-none-any.whl\">x</a>\n"
                     "</body></html>";
  auto files = python::parse_html_page(html, "https://idx.test/simple/pkg/");
  REQUIRE(files.size() == 3);
  CHECK(files[0].filename == "pkg-1.0-py3-none-any.whl");
  CHECK(files[0].url == "https://idx.test/files/pkg-1.0-py3-none-any.whl");
  CHECK(files[0].sha256 == k_hash_a);
  CHECK(files[0].page == "https://idx.test/simple/pkg/");
  CHECK_FALSE(files[0].requires_python);
  CHECK_FALSE(files[0].yanked);
  CHECK_FALSE(files[0].metadata_sha256);
  CHECK(files[1].filename == "pkg-1.1.tar.gz");
  CHECK(files[1].url == "https://cdn.test/a/pkg-1.1.tar.gz");
  CHECK(files[1].sha256.empty()); // an md5 fragment is no sha256
  CHECK(files[2].url == "https://idx.test/packages/pkg-1.2-py3-none-any.whl");
}

TEST_CASE("parse_html_page resolves hrefs against <base href>") {
  std::string html = "<html><head><base href=\"https://cdn.test/dist/\"></head><body>"
                     "<a href=\"pkg-2.0-py3-none-any.whl\">pkg</a>"
                     "<a href=\"../up/pkg-2.1-py3-none-any.whl\">pkg</a></body></html>";
  auto files = python::parse_html_page(html, "https://idx.test/simple/pkg/");
  REQUIRE(files.size() == 2);
  CHECK(files[0].url == "https://cdn.test/dist/pkg-2.0-py3-none-any.whl");
  CHECK(files[1].url == "https://cdn.test/up/pkg-2.1-py3-none-any.whl");
  CHECK(files[0].page == "https://idx.test/simple/pkg/");

  SUBCASE("a relative <base href> is itself resolved against the page") {
    auto rel = python::parse_html_page("<base href=\"/mirror/\"><a href=\"pkg-1.0.zip\">x</a>",
                                       "https://idx.test/simple/pkg/");
    REQUIRE(rel.size() == 1);
    CHECK(rel[0].url == "https://idx.test/mirror/pkg-1.0.zip");
  }
}

TEST_CASE("parse_html_page reads data-requires-python, data-yanked and the PEP 658/714 metadata attributes") {
  std::string html = "<a href=\"a-1.0-py3-none-any.whl\" data-requires-python=\"&gt;=3.8,&lt;4\">a</a>\n"
                     "<a href=\"a-1.1-py3-none-any.whl\" data-yanked>a</a>\n"
                     "<a href=\"a-1.2-py3-none-any.whl\" data-yanked=\"\">a</a>\n"
                     "<a href=\"a-1.3-py3-none-any.whl\" data-yanked=\"broken &amp; withdrawn\">a</a>\n"
                     "<a href=\"a-1.4-py3-none-any.whl\" data-core-metadata=\"sha256=" +
                     upper(k_hash_b) +
                     "\">a</a>\n"
                     "<a href=\"a-1.5-py3-none-any.whl\" data-dist-info-metadata=\"sha256=" +
                     k_hash_a +
                     "\">a</a>\n"
                     "<a href=\"a-1.6-py3-none-any.whl\" data-core-metadata=\"true\">a</a>\n"
                     "<a href=\"a-1.7-py3-none-any.whl\" data-core-metadata=\"false\">a</a>\n"
                     "<a href=\"a-1.8-py3-none-any.whl\" data-core-metadata=\"sha256=" +
                     k_hash_b + "\" data-dist-info-metadata=\"sha256=" + k_hash_a + "\">a</a>\n";
  auto files = python::parse_html_page(html, "https://idx.test/simple/a/");
  REQUIRE(files.size() == 9);
  REQUIRE(files[0].requires_python);
  CHECK(*files[0].requires_python == ">=3.8,<4");
  CHECK_FALSE(files[0].yanked);

  REQUIRE(files[1].yanked);
  CHECK(files[1].yanked->empty());
  REQUIRE(files[2].yanked);
  CHECK(files[2].yanked->empty());
  REQUIRE(files[3].yanked);
  CHECK(*files[3].yanked == "broken & withdrawn");

  REQUIRE(files[4].metadata_sha256);
  CHECK(*files[4].metadata_sha256 == k_hash_b);
  REQUIRE(files[5].metadata_sha256);
  CHECK(*files[5].metadata_sha256 == k_hash_a);
  REQUIRE(files[6].metadata_sha256);
  CHECK(files[6].metadata_sha256->empty());
  CHECK_FALSE(files[7].metadata_sha256);
  REQUIRE(files[8].metadata_sha256);
  CHECK(*files[8].metadata_sha256 == k_hash_b); // data-core-metadata first
}

TEST_CASE("parse_html_page ignores links that are not distributions and anchors inside comments") {
  std::string html = "<a href=\"/simple/\">up</a>\n"
                     "<a href=\"README.txt\">readme</a>\n"
                     "<a name=\"top\">no href</a>\n"
                     "<a href=\"\">empty</a>\n"
                     "<!-- <a href=\"pkg-9.0-py3-none-any.whl\">hidden</a> -->\n"
                     "<!--\n<a href=\"pkg-9.1.tar.gz\">hidden too</a>\n-->\n"
                     "<a href=\"pkg-1.0.tar.gz\">pkg</a>\n"
                     "<a href=\"pkg-1.0.tar.bz2\">pkg</a>\n"
                     "<a href=\"pkg-1.0.tgz\">pkg</a>\n"
                     "<a href=\"pkg-1.0.zip\">pkg</a>\n"
                     "<a href=\"pkg-1.0.exe\">pkg</a>\n"
                     "<abbr title=\"x\">not a link</abbr>\n";
  auto files = python::parse_html_page(html, "https://idx.test/simple/pkg/");
  CHECK(names_of(files) == std::vector<std::string>{"pkg-1.0.tar.gz", "pkg-1.0.tar.bz2", "pkg-1.0.tgz", "pkg-1.0.zip"});
}

TEST_CASE("parse_html_page decodes %2B in file names and keeps the URL as served") {
  std::string html =
      "<a href=\"https://dl.test/whl/cu118/torch-2.6.1%2Bcu118-cp311-cp311-linux_x86_64.whl#sha256=" + k_hash_a +
      "\">torch-2.6.1+cu118-cp311-cp311-linux_x86_64.whl</a>";
  auto files = python::parse_html_page(html, "https://dl.test/whl/cu118/torch/");
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename == "torch-2.6.1+cu118-cp311-cp311-linux_x86_64.whl");
  CHECK(files[0].url == "https://dl.test/whl/cu118/torch-2.6.1%2Bcu118-cp311-cp311-linux_x86_64.whl");
  CHECK(files[0].sha256 == k_hash_a);
}

TEST_CASE("parse_html_page reports the page without its credentials") {
  auto files = python::parse_html_page("<a href=\"pkg-1.0.zip\">x</a>", "https://alice:s3cret@idx.test/simple/pkg/");
  REQUIRE(files.size() == 1);
  CHECK(files[0].page == "https://***@idx.test/simple/pkg/");
  CHECK_FALSE(contains(files[0].page, "s3cret"));
}

// ---- parse_json_page ----

TEST_CASE("parse_json_page reads the files of a PEP 691 project page") {
  std::string json = R"({
    "meta": {"api-version": "1.1"},
    "name": "pkg",
    "files": [
      {"filename": "pkg-1.0-py3-none-any.whl", "url": "https://files.test/p/pkg-1.0-py3-none-any.whl",
       "hashes": {"sha256": ")" +
                     upper(k_hash_a) +
                     R"(", "md5": "00"}, "requires-python": ">=3.8", "yanked": false,
       "core-metadata": {"sha256": ")" +
                     k_hash_b + R"("}},
      {"filename": "pkg-1.1-py3-none-any.whl", "url": "../../files/pkg-1.1-py3-none-any.whl",
       "hashes": {}, "yanked": true, "core-metadata": true},
      {"filename": "pkg-1.2-py3-none-any.whl", "url": "/files/pkg-1.2-py3-none-any.whl",
       "hashes": {"sha256": ")" +
                     k_hash_b + R"("}, "yanked": "security issue",
       "dist-info-metadata": {"sha256": ")" +
                     k_hash_a + R"("}},
      {"filename": "pkg-1.3-py3-none-any.whl", "url": "pkg-1.3-py3-none-any.whl", "hashes": {},
       "core-metadata": false, "dist-info-metadata": true},
      {"filename": "pkg-1.4.tar.gz", "url": "pkg-1.4.tar.gz", "hashes": {}, "core-metadata": false},
      {"filename": "pkg-1.5.exe", "url": "pkg-1.5.exe", "hashes": {}}
    ]
  })";
  auto files = python::parse_json_page(json, "https://idx.test/simple/pkg/");
  REQUIRE(files.size() == 5);

  CHECK(files[0].filename == "pkg-1.0-py3-none-any.whl");
  CHECK(files[0].url == "https://files.test/p/pkg-1.0-py3-none-any.whl");
  CHECK(files[0].sha256 == k_hash_a);
  REQUIRE(files[0].requires_python);
  CHECK(*files[0].requires_python == ">=3.8");
  CHECK_FALSE(files[0].yanked);
  REQUIRE(files[0].metadata_sha256);
  CHECK(*files[0].metadata_sha256 == k_hash_b);
  CHECK(files[0].page == "https://idx.test/simple/pkg/");

  CHECK(files[1].url == "https://idx.test/files/pkg-1.1-py3-none-any.whl");
  CHECK(files[1].sha256.empty());
  CHECK_FALSE(files[1].requires_python);
  REQUIRE(files[1].yanked);
  CHECK(files[1].yanked->empty());
  REQUIRE(files[1].metadata_sha256);
  CHECK(files[1].metadata_sha256->empty());

  CHECK(files[2].url == "https://idx.test/files/pkg-1.2-py3-none-any.whl");
  REQUIRE(files[2].yanked);
  CHECK(*files[2].yanked == "security issue");
  REQUIRE(files[2].metadata_sha256);
  CHECK(*files[2].metadata_sha256 == k_hash_a); // the dist-info-metadata fallback

  CHECK(files[3].url == "https://idx.test/simple/pkg/pkg-1.3-py3-none-any.whl");
  REQUIRE(files[3].metadata_sha256); // core-metadata false, the older key says true
  CHECK(files[3].metadata_sha256->empty());

  CHECK(files[4].filename == "pkg-1.4.tar.gz");
  CHECK_FALSE(files[4].metadata_sha256);
}

TEST_CASE("parse_json_page refuses a page that is not the JSON simple API, naming the page (without credentials)") {
  const std::string page = "https://alice:s3cret@idx.test/simple/pkg/";
  SUBCASE("malformed JSON") {
    auto e = error_of([&] { python::parse_json_page("{\"files\": [", page); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "idx.test/simple/pkg/"));
    CHECK(contains(e.what(), "malformed"));
    CHECK_FALSE(contains(e.what(), "s3cret"));
  }
  SUBCASE("an HTML page") {
    auto e = error_of([&] { python::parse_json_page("<html><a href=\"x.whl\">x</a></html>", page); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "idx.test/simple/pkg/"));
  }
  SUBCASE("JSON without a files array") {
    auto e = error_of([&] { python::parse_json_page(R"({"meta": {}, "name": "pkg"})", page); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "idx.test/simple/pkg/"));
    CHECK(contains(e.what(), "files"));
  }
  SUBCASE("a file entry without a url") {
    auto e = error_of([&] { python::parse_json_page(R"({"files": [{"filename": "pkg-1.0.zip"}]})", page); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "idx.test/simple/pkg/"));
  }
}

// ---- URL helpers ----

TEST_CASE("resolve_url resolves the reference forms index pages use") {
  const std::string base = "https://idx.test/simple/p/";
  CHECK(python::resolve_url(base, "../../files/x.whl") == "https://idx.test/files/x.whl");
  CHECK(python::resolve_url(base, "x.whl") == "https://idx.test/simple/p/x.whl");
  CHECK(python::resolve_url(base, "./x.whl") == "https://idx.test/simple/p/x.whl");
  CHECK(python::resolve_url(base, "../../../../x.whl") == "https://idx.test/x.whl");
  CHECK(python::resolve_url(base, "/packages/ab/x.whl") == "https://idx.test/packages/ab/x.whl");
  CHECK(python::resolve_url(base, "/a/../b/x.whl") == "https://idx.test/b/x.whl");
  CHECK(python::resolve_url(base, "//cdn.test/x.whl") == "https://cdn.test/x.whl");
  CHECK(python::resolve_url("http://idx.test/simple/p/", "//cdn.test/x.whl") == "http://cdn.test/x.whl");
  CHECK(python::resolve_url(base, "https://other.test/x.whl") == "https://other.test/x.whl");
  CHECK(python::resolve_url(base, "x.whl?token=1") == "https://idx.test/simple/p/x.whl?token=1");
  CHECK(python::resolve_url("https://idx.test/simple/p/?a=1", "?b=2") == "https://idx.test/simple/p/?b=2");
  CHECK(python::resolve_url("https://idx.test/simple/p/index.html?a=1", "x.whl") == "https://idx.test/simple/p/x.whl");
  CHECK(python::resolve_url("https://idx.test:8443/simple/p", "x.whl") == "https://idx.test:8443/simple/x.whl");
  CHECK(python::resolve_url("https://idx.test", "x.whl") == "https://idx.test/x.whl");
  // "://" in a relative link's query does not make it absolute.
  CHECK(python::resolve_url(base, "x.whl?u=https://a.test/") == "https://idx.test/simple/p/x.whl?u=https://a.test/");
}

TEST_CASE("redact_url removes userinfo and keeps every other URL as it is") {
  CHECK(util::redact_url("https://alice:s3cret@idx.test/simple/") == "https://***@idx.test/simple/");
  CHECK(util::redact_url("https://token@idx.test:8443/simple/pkg/?x=1") == "https://***@idx.test:8443/simple/pkg/?x=1");
  CHECK(util::redact_url("https://idx.test/simple/") == "https://idx.test/simple/");
  CHECK(util::redact_url("https://idx.test/a@b/x.whl") == "https://idx.test/a@b/x.whl");
  CHECK(util::redact_url("file:///srv/wheels") == "file:///srv/wheels");
  CHECK(util::redact_url("/srv/wheels") == "/srv/wheels");
}

TEST_CASE("file_project names the project of a wheel or an sdist, normalised") {
  CHECK(python::file_project("Foo_Bar-1.0-py3-none-any.whl") == "foo-bar");
  CHECK(python::file_project("paddlepaddle_gpu-2.6.1.post118-cp311-cp311-linux_x86_64.whl") == "paddlepaddle-gpu");
  CHECK(python::file_project("my-cool-pkg-2.0.1.tar.gz") == "my-cool-pkg");
  CHECK(python::file_project("zope.interface-5.4.0.zip") == "zope-interface");
  CHECK(python::file_project("Some_Project-0.1.tgz") == "some-project");
  CHECK(python::file_project("py-2-3-1.0.tar.bz2") == "py-2-3");
  CHECK(python::file_project("README.txt") == "");
  CHECK(python::file_project("pkg-1.0.exe") == "");
  CHECK(python::file_project("noversion.tar.gz") == "");
  CHECK(python::file_project("foo.whl") == "");
}

TEST_CASE("netrc_lookup finds the machine's entry (with or without a port) and falls back to default") {
  auto dir = make_temp("pi-netrc-");
  auto netrc = dir.path() / "netrc";
  util::write_file_atomic(netrc, "machine other.test login carol password c1\n"
                                 "machine idx.test\n  login alice\n  password s1\n"
                                 "machine idx.test:8443 login dave password d1\n"
                                 "default login anon password a1\n");
  using Cred = std::pair<std::string, std::string>;
  CHECK(python::netrc_lookup(netrc, "idx.test") == Cred{"alice", "s1"});
  CHECK(python::netrc_lookup(netrc, "idx.test:9000") == Cred{"alice", "s1"}); // the host without its port
  CHECK(python::netrc_lookup(netrc, "other.test") == Cred{"carol", "c1"});
  CHECK(python::netrc_lookup(netrc, "unknown.test") == Cred{"anon", "a1"});

  SUBCASE("an entry naming the port matches that host:port") {
    auto exact = dir.path() / "netrc-port";
    util::write_file_atomic(exact, "machine idx.test:8443 login dave password d1\n");
    CHECK(python::netrc_lookup(exact, "idx.test:8443") == Cred{"dave", "d1"});
    CHECK_FALSE(python::netrc_lookup(exact, "idx.test"));
  }
  SUBCASE("no default entry and no match") {
    auto no_default = dir.path() / "netrc-nodefault";
    util::write_file_atomic(no_default, "machine idx.test login alice password s1\n");
    CHECK_FALSE(python::netrc_lookup(no_default, "unknown.test"));
  }
  SUBCASE("a missing file or none configured") {
    CHECK_FALSE(python::netrc_lookup(dir.path() / "absent", "idx.test"));
    CHECK_FALSE(python::netrc_lookup("", "idx.test"));
  }
}

// ---- PackageIndex over a scripted transport ----

TEST_CASE("PackageIndex asks for JSON and parses a JSON answer; the page is read once per project") {
  Index ix(index_at("https://idx.test/simple"));
  std::string json =
      R"({"meta":{"api-version":"1.0"},"name":"foo-bar","files":[{"filename":"foo_bar-1.0-py3-none-any.whl","url":"../../files/foo_bar-1.0-py3-none-any.whl","hashes":{"sha256":")" +
      k_hash_a + R"("}}]})";
  ix.fake->expect("https://idx.test/simple/foo-bar/", [&](const Request& q) {
    CHECK(contains(header(q, "Accept"), "application/vnd.pypi.simple.v1+json"));
    CHECK(contains(header(q, "Accept"), "text/html"));
    CHECK(header(q, "Authorization").empty());
    return resp(200, {{"Content-Type", "application/vnd.pypi.simple.v1+json; charset=utf-8"}}, json);
  });
  auto files = ix.index->files("Foo_Bar");
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename == "foo_bar-1.0-py3-none-any.whl");
  CHECK(files[0].url == "https://idx.test/files/foo_bar-1.0-py3-none-any.whl");
  CHECK(files[0].sha256 == k_hash_a);
  CHECK(ix.fake->done());
  CHECK(ix.index->files("foo.bar").size() == 1); // cached: no second request
  CHECK(ix.fake->seen.size() == 1);
  CHECK(ix.index->requests() == 1);
}

TEST_CASE("PackageIndex takes an HTML answer to the negotiation") {
  Index ix(index_at("https://idx.test/simple/"));
  ix.fake->expect("https://idx.test/simple/pkg/",
                  resp(200, {{"Content-Type", "text/html"}},
                       "<a href=\"/files/pkg-1.0-py3-none-any.whl#sha256=" + k_hash_b + "\">pkg</a>"));
  auto files = ix.index->files("pkg");
  REQUIRE(files.size() == 1);
  CHECK(files[0].url == "https://idx.test/files/pkg-1.0-py3-none-any.whl");
  CHECK(files[0].sha256 == k_hash_b);
  CHECK(ix.fake->seen == std::vector<std::string>{"https://idx.test/simple/pkg/"}); // one slash
}

TEST_CASE("PackageIndex never takes another project's file from a project's page") {
  Index ix(index_at("https://idx.test/simple/"));
  ix.fake->expect("https://idx.test/simple/xredir/",
                  resp(200, {{"Content-Type", "text/html"}},
                       "<a href=\"/files/gamma-0.5-py3-none-any.whl#sha256=" + k_hash_b +
                           "\">xredir-0.5-py3-none-any.whl</a><a href=\"/files/xredir-0.5-py3-none-any.whl#sha256=" +
                           k_hash_a + "\">xredir-0.5-py3-none-any.whl</a>"));
  auto files = ix.index->files("xredir");
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename == "xredir-0.5-py3-none-any.whl");
  CHECK(files[0].sha256 == k_hash_a);
}

TEST_CASE("a link whose text names another file than its URL is ignored (HTML text, PEP 691 filename)") {
  std::string html = "<a href=\"/files/pkg-1.0-py3-none-any.whl\">pkg-2.0-py3-none-any.whl</a>"
                     "<a href=\"/files/pkg-1.1-py3-none-any.whl\">download</a>"
                     "<a href=\"/files/pkg-1.2%2Bcu118-py3-none-any.whl\"> pkg-1.2+cu118-py3-none-any.whl </a>"
                     "<a href=\"/files/pkg-1.3-py3-none-any.whl\">pkg-1.3-py3-none-any.whl&#32;</a>"
                     "<a href=\"/files/pkg-1.4-py3-none-any.whl\">pkg-1.4-py3-none-any.whl&amp;x.whl</a>";
  auto files = python::parse_html_page(html, "https://idx.test/simple/pkg/");
  REQUIRE(files.size() == 5);
  CHECK(files[0].listed_as == "pkg-2.0-py3-none-any.whl");
  CHECK(files[1].listed_as.empty()); // not a file name: not compared
  CHECK(files[2].listed_as.empty()); // '+' is %2B in the URL
  CHECK(files[3].listed_as.empty());
  CHECK(files[4].listed_as == "pkg-1.4-py3-none-any.whl&x.whl");
  std::string json = R"({"files": [{"filename": "pkg-9.9-py3-none-any.whl", "url": "pkg-1.0-py3-none-any.whl",
                                    "hashes": {}}]})";
  auto j = python::parse_json_page(json, "https://idx.test/simple/pkg/");
  REQUIRE(j.size() == 1);
  CHECK(j[0].filename == "pkg-1.0-py3-none-any.whl");
  CHECK(j[0].listed_as == "pkg-9.9-py3-none-any.whl");

  Index ix(index_at("https://idx.test/simple/"));
  ix.fake->expect("https://idx.test/simple/pkg/", resp(200, {{"Content-Type", "text/html"}}, html));
  auto kept = ix.index->files("pkg");
  REQUIRE(kept.size() == 3);
  CHECK(kept[0].filename == "pkg-1.1-py3-none-any.whl");
}

TEST_CASE("PackageIndex: a project no index knows is an empty list, and a second index still counts") {
  python::IndexSources s;
  s.indexes = {"https://one.test/simple", "https://two.test/simple"};
  Index ix(s);
  ix.fake->expect("https://one.test/simple/pkg/", resp(404));
  ix.fake->expect("https://two.test/simple/pkg/", resp(410));
  CHECK(ix.index->files("pkg").empty());
  ix.fake->expect("https://one.test/simple/other/", resp(404));
  ix.fake->expect("https://two.test/simple/other/",
                  resp(200, {{"Content-Type", "text/html"}}, "<a href=\"other-1.0.zip\">x</a>"));
  auto files = ix.index->files("other");
  REQUIRE(files.size() == 1);
  CHECK(files[0].url == "https://two.test/simple/other/other-1.0.zip");
  CHECK(ix.fake->done());
}

TEST_CASE("PackageIndex retries a 503 and takes the 200 that follows") {
  Index ix(index_at("https://idx.test/simple"));
  ix.fake->expect("/simple/pkg/", resp(503));
  ix.fake->expect("/simple/pkg/", resp(200, {{"Content-Type", "text/html"}}, "<a href=\"pkg-1.0.zip\">x</a>"));
  CHECK(ix.index->files("pkg").size() == 1);
  CHECK(ix.stats.retries == 1);
  CHECK(ix.fake->done());

  SUBCASE("503 on every attempt is a registry error naming the page") {
    Index again(index_at("https://idx.test/simple"), 2);
    again.fake->expect("/simple/pkg/", resp(503));
    again.fake->expect("/simple/pkg/", resp(503));
    auto e = error_of([&] { again.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::registry);
    CHECK(contains(e.what(), "HTTP 503"));
    CHECK(contains(e.what(), "https://idx.test/simple/pkg/"));
  }
}

TEST_CASE("PackageIndex resumes a download cut mid-body with a Range request") {
  Index ix(index_at("https://idx.test/simple"));
  const std::string data = "0123456789abcdefghijklmnopqrstuvwxyz";
  IndexFile f;
  f.filename = "pkg-1.0-py3-none-any.whl";
  f.url = "https://files.test/p/pkg-1.0-py3-none-any.whl";
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) -> Response {
    CHECK(header(q, "Range").empty());
    q.on_body_start(200);
    q.sink(data.data(), 10);
    throw registry::TransportFailure("connection reset by peer", 56, true);
  });
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) {
    CHECK(header(q, "Range") == "bytes=10-");
    return resp(206, {{"Content-Range", "bytes 10-35/36"}}, data.substr(10));
  });
  std::string got;
  int restarts = 0;
  ix.index->download(
      f, [&](const char* p, std::size_t n) { got.append(p, n); }, [&] { ++restarts; });
  CHECK(got == data);
  CHECK(restarts == 0);
  CHECK(ix.stats.retries == 1);
  CHECK(ix.stats.bytes_downloaded == static_cast<std::int64_t>(data.size()));
  CHECK(ix.fake->done());
}

TEST_CASE("PackageIndex restarts a resumed download when the server answers the Range with the whole file") {
  Index ix(index_at("https://idx.test/simple"));
  const std::string data = "the whole wheel, sent twice";
  IndexFile f;
  f.filename = "pkg-1.0-py3-none-any.whl";
  f.url = "https://files.test/p/pkg-1.0-py3-none-any.whl";
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) -> Response {
    q.on_body_start(200);
    q.sink(data.data(), 7);
    throw registry::TransportFailure("stalled", 28, true);
  });
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) {
    CHECK(header(q, "Range") == "bytes=7-");
    return resp(200, {}, data);
  });
  std::string got;
  int restarts = 0;
  ix.index->download(
      f, [&](const char* p, std::size_t n) { got.append(p, n); },
      [&] {
        ++restarts;
        got.clear();
      });
  CHECK(restarts == 1);
  CHECK(got == data);
  CHECK(ix.fake->done());
}

TEST_CASE("PackageIndex sends URL userinfo as Basic auth and never shows it in errors") {
  python::IndexSources s = index_at("https://alice:s%40cret@idx.test/simple");
  const std::string basic = "Basic YWxpY2U6c0BjcmV0"; // alice:s@cret
  auto no_secret = [](const std::string& text) {
    CHECK_FALSE(contains(text, "s%40cret"));
    CHECK_FALSE(contains(text, "s@cret"));
    CHECK_FALSE(contains(text, "alice"));
    CHECK_FALSE(contains(text, "YWxpY2U6c0BjcmV0"));
  };

  SUBCASE("the page request carries the header, not the userinfo") {
    Index ix(s);
    ix.fake->expect("/simple/pkg/", [&](const Request& q) {
      CHECK(q.url == "https://idx.test/simple/pkg/");
      CHECK(header(q, "Authorization") == basic);
      return resp(200, {{"Content-Type", "text/html"}}, "<a href=\"/files/pkg-1.0-py3-none-any.whl\">x</a>");
    });
    auto files = ix.index->files("pkg");
    REQUIRE(files.size() == 1);
    no_secret(files[0].page);
    no_secret(files[0].url); // links resolve against the page URL without its userinfo
    CHECK(files[0].url == "https://idx.test/files/pkg-1.0-py3-none-any.whl");
    // A file on the same host gets the index's credentials.
    ix.fake->expect("/files/pkg-1.0-py3-none-any.whl", [&](const Request& q) {
      CHECK_FALSE(contains(q.url, "@"));
      CHECK(header(q, "Authorization") == basic);
      return resp(200, {}, "bytes");
    });
    std::string got;
    ix.index->download(
        files[0], [&](const char* p, std::size_t n) { got.append(p, n); }, [] {});
    CHECK(got == "bytes");
  }
  SUBCASE("401 is an auth error") {
    Index ix(s);
    ix.fake->expect("/simple/pkg/", resp(401, {{"WWW-Authenticate", "Basic realm=\"idx\""}}));
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::auth);
    CHECK(contains(e.what(), "401"));
    CHECK(contains(e.what(), "idx.test"));
    no_secret(e.what());
    no_secret(e.hint());
  }
  SUBCASE("403 on a download is an auth error") {
    Index ix(s);
    IndexFile f;
    f.filename = "pkg-1.0-py3-none-any.whl";
    f.url = "https://idx.test/files/pkg-1.0-py3-none-any.whl";
    ix.fake->expect("/files/pkg-1.0-py3-none-any.whl", resp(403));
    auto e = error_of([&] {
      ix.index->download(
          f, [](const char*, std::size_t) {}, [] {});
    });
    CHECK(e.kind() == util::ErrorKind::auth);
    no_secret(e.what());
  }
  SUBCASE("a server error and a transport failure") {
    Index ix(s, 2);
    ix.fake->expect("/simple/pkg/", resp(500));
    ix.fake->expect("/simple/pkg/", resp(500));
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::registry);
    no_secret(e.what());
    ix.fake->expect("/simple/other/", [](const Request&) -> Response {
      throw registry::TransportFailure("Could not resolve host: idx.test", 6, false);
    });
    auto n = error_of([&] { ix.index->files("other"); });
    CHECK(n.kind() == util::ErrorKind::network);
    no_secret(n.what());
  }
}

TEST_CASE("PackageIndex has its own auth over the shared transport: no token dance, its own wording") {
  SUBCASE("a Bearer challenge is not answered with a token request: one request, an auth error") {
    Index ix(index_at("https://idx.test/simple"));
    ix.fake->expect("/simple/pkg/", resp(401, {{"WWW-Authenticate", R"(Bearer realm="https://auth.test/token")"}}));
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::auth);
    CHECK(ix.fake->seen.size() == 1);
    CHECK(contains(e.what(), "no credentials were sent"));
    CHECK(contains(e.hint(), "netrc"));
  }
  SUBCASE("a TLS failure names the index host and the index's fixes, not a registry's") {
    Index ix(index_at("https://idx.test/simple"));
    ix.fake->expect("/simple/pkg/", [](const Request&) -> Response {
      throw registry::TransportFailure("SSL certificate problem: self-signed certificate", 60, false, true);
    });
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(contains(e.what(), "idx.test: TLS failed"));
    CHECK(contains(e.hint(), "index's CA"));
    CHECK_FALSE(contains(e.hint(), "paddle-image login"));
  }
  SUBCASE("a refused connection is retried, then reported with the number of attempts") {
    Index ix(index_at("https://idx.test/simple"), 2);
    for (int i = 0; i < 2; ++i) {
      ix.fake->expect("/simple/pkg/", [](const Request&) -> Response {
        throw registry::TransportFailure("Connection refused", 7, true);
      });
    }
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::network);
    CHECK(contains(e.what(), "gave up after 2 attempts"));
    CHECK(ix.stats.retries == 1);
  }
}

TEST_CASE("PackageIndex takes credentials for a host from netrc when the URL has none") {
  auto dir = make_temp("pi-index-netrc-");
  python::IndexSources s = index_at("https://idx.test/simple");
  s.netrc = dir.path() / "netrc";
  util::write_file_atomic(s.netrc, "machine idx.test login bob password hunter2\n");
  Index ix(s);
  ix.fake->expect("/simple/pkg/", [](const Request& q) {
    CHECK(header(q, "Authorization") == "Basic Ym9iOmh1bnRlcjI=");
    return resp(404);
  });
  CHECK(ix.index->files("pkg").empty());
  CHECK(ix.fake->done());
}

TEST_CASE("PackageIndex reads find-links pages once for all projects and keeps each project's files") {
  python::IndexSources s;
  s.indexes = {"https://idx.test/simple"};
  s.find_links = {"https://links.test/whl/stable.html"};
  Index ix(s);
  std::string page = "<a href=\"paddlepaddle_gpu-2.6.1.post118-cp311-cp311-linux_x86_64.whl\">a</a>\n"
                     "<a href=\"paddlepaddle-2.6.1-cp311-cp311-manylinux1_x86_64.whl\">b</a>\n"
                     "<a href=\"https://cdn.test/paddlepaddle_gpu-2.6.1.post120-cp311-cp311-linux_x86_64.whl\">c</a>\n"
                     "<a href=\"other_pkg-1.0.tar.gz\">d</a>\n";
  ix.fake->expect("https://idx.test/simple/paddlepaddle-gpu/", resp(404));
  ix.fake->expect("https://links.test/whl/stable.html", [&](const Request& q) {
    CHECK(contains(header(q, "Accept"), "text/html"));
    return resp(200, {{"Content-Type", "text/html"}}, page);
  });
  auto gpu = ix.index->files("paddlepaddle-gpu");
  CHECK(names_of(gpu) == std::vector<std::string>{"paddlepaddle_gpu-2.6.1.post118-cp311-cp311-linux_x86_64.whl",
                                                  "paddlepaddle_gpu-2.6.1.post120-cp311-cp311-linux_x86_64.whl"});
  CHECK(gpu[0].url == "https://links.test/whl/paddlepaddle_gpu-2.6.1.post118-cp311-cp311-linux_x86_64.whl");
  CHECK(gpu[0].page == "https://links.test/whl/stable.html");

  // The index first, then the flat page: no second fetch of the page.
  ix.fake->expect("https://idx.test/simple/paddlepaddle/",
                  resp(200, {{"Content-Type", "text/html"}}, "<a href=\"paddlepaddle-2.6.0.tar.gz\">x</a>"));
  auto cpu = ix.index->files("PaddlePaddle");
  CHECK(names_of(cpu) ==
        std::vector<std::string>{"paddlepaddle-2.6.0.tar.gz", "paddlepaddle-2.6.1-cp311-cp311-manylinux1_x86_64.whl"});
  ix.fake->expect("https://idx.test/simple/other-pkg/", resp(404));
  auto other = ix.index->files("other.pkg");
  CHECK(names_of(other) == std::vector<std::string>{"other_pkg-1.0.tar.gz"});
  CHECK(ix.fake->done());
  CHECK(std::count(ix.fake->seen.begin(), ix.fake->seen.end(), "https://links.test/whl/stable.html") == 1);
}

TEST_CASE("PackageIndex lists a local directory as find-links and downloads file:// URLs without the network") {
  auto dir = make_temp("pi-index-local-");
  auto wheels = dir.path() / "wheels";
  std::filesystem::create_directories(wheels);
  const std::string bytes(3000000, 'x'); // larger than one read buffer
  util::write_file_atomic(wheels / "pkg-1.0-py3-none-any.whl", bytes);
  util::write_file_atomic(wheels / "pkg-1.0.tar.gz", "sdist");
  util::write_file_atomic(wheels / "Pkg-0.9-py3-none-any.whl", "old");
  util::write_file_atomic(wheels / "other-1.0-py3-none-any.whl", "other");
  util::write_file_atomic(wheels / "notes.txt", "not a distribution");

  SUBCASE("a path") {
    python::IndexSources s;
    s.find_links = {wheels.string()};
    Index ix(s);
    auto files = ix.index->files("pkg");
    CHECK(names_of(files) ==
          std::vector<std::string>{"Pkg-0.9-py3-none-any.whl", "pkg-1.0-py3-none-any.whl", "pkg-1.0.tar.gz"});
    REQUIRE(files.size() == 3);
    CHECK(files[1].url == "file://" + (wheels / "pkg-1.0-py3-none-any.whl").string());
    std::string got;
    ix.index->download(
        files[1], [&](const char* p, std::size_t n) { got.append(p, n); }, [] { FAIL("no restart"); });
    CHECK(got == bytes);
    CHECK(ix.fake->seen.empty());
  }
  SUBCASE("a file:// URL") {
    python::IndexSources s;
    s.find_links = {"file://" + wheels.string()};
    Index ix(s);
    auto files = ix.index->files("other");
    REQUIRE(files.size() == 1);
    CHECK(files[0].url == "file://" + (wheels / "other-1.0-py3-none-any.whl").string());
    std::string got;
    ix.index->download(
        files[0], [&](const char* p, std::size_t n) { got.append(p, n); }, [] {});
    CHECK(got == "other");
    CHECK(ix.fake->seen.empty());
  }
  SUBCASE("a local HTML page of links") {
    util::write_file_atomic(dir.path() / "links.html", "<a href=\"wheels/pkg-1.0-py3-none-any.whl\">x</a>");
    python::IndexSources s;
    s.find_links = {(dir.path() / "links.html").string()};
    Index ix(s);
    auto files = ix.index->files("pkg");
    REQUIRE(files.size() == 1);
    CHECK(files[0].url == "file://" + (wheels / "pkg-1.0-py3-none-any.whl").string());
    std::string got;
    ix.index->download(
        files[0], [&](const char* p, std::size_t n) { got.append(p, n); }, [] {});
    CHECK(got == bytes);
  }
  SUBCASE("a missing path is an io error") {
    python::IndexSources s;
    s.find_links = {(dir.path() / "absent").string()};
    Index ix(s);
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::io);
    CHECK(contains(e.what(), "absent"));
  }
  SUBCASE("a missing file:// download is an io error") {
    python::IndexSources s;
    Index ix(s);
    IndexFile f;
    f.filename = "gone-1.0-py3-none-any.whl";
    f.url = "file://" + (wheels / "gone-1.0-py3-none-any.whl").string();
    auto e = error_of([&] {
      ix.index->download(
          f, [](const char*, std::size_t) {}, [] {});
    });
    CHECK(e.kind() == util::ErrorKind::io);
  }
}

TEST_CASE("PackageIndex checks PEP 658 metadata against the advertised hash") {
  Index ix(index_at("https://idx.test/simple"));
  const std::string meta = "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n";
  IndexFile f;
  f.filename = "pkg-1.0-py3-none-any.whl";
  f.url = "https://idx.test/files/pkg-1.0-py3-none-any.whl";
  f.metadata_sha256 = util::sha256_hex(meta);
  ix.fake->expect("https://idx.test/files/pkg-1.0-py3-none-any.whl.metadata", resp(200, {}, meta));
  CHECK(ix.index->metadata(f) == meta);
  f.metadata_sha256 = k_hash_a;
  ix.fake->expect("https://idx.test/files/pkg-1.0-py3-none-any.whl.metadata", resp(200, {}, meta));
  auto e = error_of([&] { ix.index->metadata(f); });
  CHECK(e.kind() == util::ErrorKind::integrity);
  CHECK(contains(e.what(), k_hash_a));
  CHECK(ix.fake->done());
}

TEST_CASE("PackageIndex: a resumed download asking past the end (416) is complete; a 404 is a registry error") {
  Index ix(index_at("https://idx.test/simple"));
  const std::string data = "complete";
  IndexFile f;
  f.filename = "pkg-1.0-py3-none-any.whl";
  f.url = "https://files.test/p/pkg-1.0-py3-none-any.whl";
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) -> Response {
    q.on_body_start(200);
    q.sink(data.data(), data.size());
    throw registry::TransportFailure("connection reset by peer", 56, true);
  });
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) {
    CHECK(header(q, "Range") == "bytes=8-");
    return resp(416);
  });
  std::string got;
  ix.index->download(
      f, [&](const char* p, std::size_t n) { got.append(p, n); }, [] { FAIL("no restart"); });
  CHECK(got == data);

  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [](const Request&) -> Response {
    throw registry::TransportFailure("connection refused", 7, true); // before any byte
  });
  ix.fake->expect("/p/pkg-1.0-py3-none-any.whl", [&](const Request& q) {
    CHECK(header(q, "Range").empty());
    return resp(404);
  });
  auto e = error_of([&] {
    ix.index->download(
        f, [](const char*, std::size_t) {}, [] {});
  });
  CHECK(e.kind() == util::ErrorKind::registry);
  CHECK(contains(e.what(), "HTTP 404"));
  CHECK(ix.fake->done());
}

TEST_CASE("parse_json_page reads the PEP 700 size; HTML pages have none") {
  auto files = python::parse_json_page(
      R"({"files":[{"filename":"a-1.0.zip","url":"a-1.0.zip","hashes":{},"size":1234},{"filename":"a-1.1.zip","url":"a-1.1.zip","hashes":{}}]})",
      "https://idx.test/simple/a/");
  REQUIRE(files.size() == 2);
  CHECK(files[0].size == 1234);
  CHECK(files[1].size == -1);
  CHECK(python::parse_html_page("<a href=\"a-1.0.zip\">a</a>", "https://idx.test/simple/a/").at(0).size == -1);
}

TEST_CASE("PackageIndex refuses a plain-HTTP index unless the host is allowed, before any request") {
  python::IndexSources s = index_at("http://user:s3cret@idx.test:8080/simple");
  {
    Index ix(s);
    auto e = error_of([&] { ix.index->files("pkg"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "plain HTTP"));
    CHECK(contains(e.hint(), "--insecure-registry idx.test:8080"));
    CHECK_FALSE(contains(e.what(), "s3cret"));
  }
  registry::ClientOptions o;
  o.insecure.insert("idx.test:8080");
  auto fake = std::make_shared<FakeTransport>();
  registry::Stats stats;
  python::PackageIndex allowed(s, fake, o, stats);
  fake->expect("/simple/pkg/", [&](const Request& q) {
    CHECK(q.url == "http://idx.test:8080/simple/pkg/");
    return resp(404, {}, "");
  });
  CHECK(allowed.files("pkg").empty());
}

TEST_CASE("PackageIndex: a loopback index is a secure origin, judged from the literal host") {
  for (const char* root :
       {"http://127.0.0.1:3141/root/pypi/+simple", "http://localhost:8081/simple", "http://[::1]:8081/simple"}) {
    Index ix(index_at(root));
    std::string page = std::string(root) + "/pkg/";
    ix.fake->expect("/pkg/", [&](const Request& q) {
      CHECK(q.url == page);
      return resp(404, {}, "");
    });
    INFO(root);
    CHECK(ix.index->files("pkg").empty());
  }
  for (const char* root :
       {"http://localhost.example.com/simple", "http://127.0.0.1.nip.io/simple", "http://10.0.0.1/simple"}) {
    Index ix(index_at(root));
    INFO(root);
    CHECK(error_of([&] { ix.index->files("pkg"); }).kind() == util::ErrorKind::input);
  }
}

} // namespace unit_index_test
