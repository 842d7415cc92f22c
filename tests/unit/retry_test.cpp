// The retrying transport on its own (registry/retry.hpp): the loop, Retry-After,
// transport failures thrown as they are, and no credentials of its own. The registry's
// token session and the index client's Basic auth are tested on top of it in
// transport_test.cpp and index_test.cpp.
#include <doctest/doctest.h>

#include "registry/retry.hpp"
#include "tests/unit/http_fakes.hpp"
#include "tests/unit/support.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace unit_retry_test {

using namespace test_support;
using registry::Attempt;
using registry::Call;
using registry::Request;
using registry::Response;
using registry::TransportFailure;

namespace {

// Answers requests from a queue; records each request's URL and headers.
class Script : public registry::Transport {
public:
  std::deque<std::function<Response(const Request&)>> answers;
  std::vector<Request> seen;
  Response perform(const Request& q, const registry::TlsPolicy&) override {
    seen.push_back(q);
    REQUIRE_FALSE(answers.empty());
    auto a = answers.front();
    answers.pop_front();
    return a(q);
  }
  void add(Response r) {
    answers.push_back([r](const Request&) { return r; });
  }
  void add_failure(std::string what, int code, bool retryable) {
    answers.push_back([=](const Request&) -> Response { throw TransportFailure(what, code, retryable); });
  }
};

struct Loop {
  std::shared_ptr<Script> script = std::make_shared<Script>();
  std::atomic<std::int64_t> retries{0};
  std::vector<std::string> lines;
  std::unique_ptr<registry::Retrying> t;
  explicit Loop(int attempts = 3) {
    registry::RetryOptions o;
    o.max_attempts = attempts;
    o.backoff_initial_s = 0;
    o.backoff_max_s = 0;
    o.log = [this](int, const std::string& l) { lines.push_back(l); };
    t = std::make_unique<registry::Retrying>(script, o, &retries);
  }
};

Call get(const std::string& url) {
  Call c;
  c.make = [url] {
    Request q;
    q.url = url;
    return q;
  };
  c.log_prefix = url + ": ";
  return c;
}

} // namespace

TEST_SUITE("retry") {
  TEST_CASE("retryable statuses: 408, 429 and 5xx but 501 and 505") {
    for (long s : {408L, 429L, 500L, 502L, 503L, 504L, 599L}) {
      CHECK_MESSAGE(registry::retryable_status(s), s);
    }
    for (long s : {200L, 201L, 301L, 400L, 401L, 403L, 404L, 416L, 501L, 505L}) {
      CHECK_FALSE_MESSAGE(registry::retryable_status(s), s);
    }
  }

  TEST_CASE("Retry-After in seconds, as an HTTP-date, absent, malformed and absurd") {
    CHECK(registry::retry_after_s(resp(503, {{"Retry-After", "7"}})) == 7);
    CHECK(registry::retry_after_s(resp(503)) == -1);
    CHECK(registry::retry_after_s(resp(503, {{"Retry-After", "soon"}})) == -1);
    // Far too many digits for an int: a long delay (capped by the loop), never a throw.
    CHECK(registry::retry_after_s(resp(503, {{"Retry-After", std::string(400, '9')}})) >= 1e9);
    // A date in the past is a negative delay (the loop waits 0).
    CHECK(registry::retry_after_s(resp(503, {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}})) < 0);
  }

  TEST_CASE("call retries 5xx and 429, then returns the answer that ends it, counting retries") {
    Loop l(4);
    l.script->add(resp(503));
    l.script->add(resp(429, {{"Retry-After", "0"}}));
    l.script->add(resp(200, {}, "ok"));
    auto r = l.t->call(get("https://h.test/a"));
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == "ok");
    CHECK(l.retries == 2);
    REQUIRE(l.lines.size() == 2);
    CHECK(contains(l.lines[0], "attempt 2 of 4"));
    CHECK(contains(l.lines[0], "https://h.test/a: HTTP 503"));
  }

  TEST_CASE("call returns the last refusal when the attempts run out; a final status is not retried") {
    Loop l(2);
    l.script->add(resp(500));
    l.script->add(resp(502));
    auto r = l.t->call(get("https://h.test/a"));
    REQUIRE(r);
    CHECK(r->status == 502);
    Loop n(3);
    n.script->add(resp(404));
    CHECK(n.t->call(get("https://h.test/b"))->status == 404);
    CHECK(n.script->seen.size() == 1);
    CHECK(n.retries == 0);
  }

  TEST_CASE("transport failures: a retryable one is retried, then thrown as it is; another is thrown at once") {
    Loop l(2);
    l.script->add_failure("Connection refused", 7, true);
    l.script->add_failure("Connection refused", 7, true);
    try {
      l.t->call(get("https://h.test/a"));
      FAIL("no throw");
    } catch (const TransportFailure& f) {
      CHECK(f.curl_code == 7);
      CHECK(std::string(f.what()) == "Connection refused");
    }
    CHECK(l.script->seen.size() == 2);

    Loop m(5);
    m.script->add_failure("Could not resolve host", 6, false);
    CHECK_THROWS_AS(m.t->call(get("https://h.test/a")), TransportFailure);
    CHECK(m.script->seen.size() == 1);

    Loop k(3);
    k.script->add_failure("reset", 56, true);
    k.script->add(resp(200));
    CHECK(k.t->call(get("https://h.test/a"))->status == 200);
  }

  TEST_CASE("fall_back stops the call without an answer; judge decides before the default") {
    Loop l(3);
    l.script->add_failure("TLS handshake failed", 35, true);
    Call c = get("https://h.test/v2/");
    c.fall_back = [](const TransportFailure& f) { return f.curl_code == 35; };
    CHECK_FALSE(l.t->call(c).has_value());

    Loop j(2);
    j.script->add(resp(401));
    j.script->add(resp(401));
    j.script->add(resp(200));
    int judged = 0;
    Call a = get("https://h.test/x");
    a.judge = [&](const Response& r) -> std::optional<Attempt::Verdict> {
      ++judged;
      return r.status == 401 ? std::optional(Attempt::Verdict::again) : std::nullopt;
    };
    // `again` is not counted against the attempts: two 401s and a 200 with max 2.
    CHECK(j.t->call(a)->status == 200);
    CHECK(judged == 3);
    CHECK(j.retries == 0);
  }

  TEST_CASE("the transport adds no credentials: what make() builds is what is sent") {
    Loop l;
    l.script->add(resp(401, {{"WWW-Authenticate", R"(Bearer realm="https://auth.test/token")"}}));
    auto r = l.t->call(get("https://h.test/private"));
    CHECK(r->status == 401);
    REQUIRE(l.script->seen.size() == 1);
    CHECK(l.script->seen[0].headers.empty());
    CHECK(l.script->seen[0].url == "https://h.test/private");
  }

  TEST_CASE("retry: abandon stops, running out of attempts is false") {
    Loop l(3);
    int n = 0;
    CHECK_FALSE(l.t->retry([&](int) {
      ++n;
      return Attempt::retry("busy");
    }));
    CHECK(n == 3);
    CHECK(l.retries == 2);
    CHECK_FALSE(l.t->retry([](int) { return Attempt::abandon(); }));
    CHECK(l.t->retry([](int attempt) { return attempt < 2 ? Attempt::retry("once") : Attempt::finish(); }));
  }
}

} // namespace unit_retry_test
