// doctor aggregate's reading, combining and verdicts (doctor/fleet.hpp), and
// needs_as_requires, the inverse of needs_from_requires (doctor/image.hpp).
#include "doctor/fleet.hpp"
#include "doctor/image.hpp"
#include "support.hpp"

#include <doctest/doctest.h>

namespace unit_doctor_fleet_test {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;

namespace {

// A report as `doctor --json` writes it: checks with ids and statuses, and a node name
// unless `node` is empty.
json report(const std::string& node, const std::vector<std::pair<std::string, std::string>>& checks) {
  json j = {{"checks", json::array()}, {"facts", json::object()}};
  for (const auto& [id, status] : checks) {
    j["checks"].push_back({{"id", id}, {"status", status}, {"evidence", "e"}});
  }
  if (!node.empty()) {
    j["node"] = node;
  }
  return j;
}

doctor::Report host_report(const std::vector<doctor::Status>& statuses) {
  doctor::Report r;
  for (auto s : statuses) {
    doctor::CheckResult c;
    c.id = "x";
    c.status = s;
    r.checks.push_back(c);
  }
  return r;
}

} // namespace

TEST_SUITE("doctor fleet") {
  TEST_CASE("parse_reports: one document, or one per line, or documents spanning lines") {
    auto one = doctor::parse_reports(report("a", {{"gpu.count", "PASS"}}).dump(2), "f.json");
    REQUIRE(one.size() == 1);
    CHECK(one[0]["node"] == "a");

    std::string lines = report("a", {}).dump() + "\n" + report("b", {}).dump() + "\n\n" + report("c", {}).dump();
    auto three = doctor::parse_reports(lines, "nodes.jsonl");
    REQUIRE(three.size() == 3);
    CHECK(three[0]["node"] == "a");
    CHECK(three[1]["node"] == "b");
    CHECK(three[2]["node"] == "c");

    // Pretty-printed documents one after the other: each ends where it parses.
    auto two = doctor::parse_reports(report("a", {}).dump(2) + "\n" + report("b", {}).dump(2) + "\n", "stdin");
    REQUIRE(two.size() == 2);
    CHECK(two[1]["node"] == "b");

    CHECK(doctor::parse_reports("", "empty").empty());
    CHECK(doctor::parse_reports("\n  \n", "blank").empty());
  }

  TEST_CASE("parse_reports: text left that does not parse is an input error naming the file and line") {
    auto e = error_of([] { doctor::parse_reports("{\"checks\": []}\n{\"checks\": [\nnot json\n", "nodes.jsonl"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(std::string(e.what()) == "nodes.jsonl: not doctor JSON (unparsable near line 3)");
    CHECK(e.hint() == "collect with paddle-image doctor --json");
    auto garbage = error_of([] { doctor::parse_reports("garbage", "stdin"); });
    CHECK(std::string(garbage.what()) == "stdin: not doctor JSON (unparsable near line 1)");
  }

  TEST_CASE("aggregate: nodes in order, each check's statuses naming the nodes") {
    doctor::Fleet f = doctor::aggregate({
        report("n1", {{"driver.version", "PASS"}, {"fabric.manager", "FAIL"}}),
        report("n2", {{"driver.version", "PASS"}, {"fabric.manager", "PASS"}, {"runtime.cdi", "WARN"}}),
        report("n3", {{"driver.version", "WARN"}, {"fabric.manager", "FAIL"}}),
    });
    CHECK(f.nodes == std::vector<std::string>{"n1", "n2", "n3"});
    CHECK(f.by_check.at("driver.version").at("PASS") == std::vector<std::string>{"n1", "n2"});
    CHECK(f.by_check.at("driver.version").at("WARN") == std::vector<std::string>{"n3"});
    CHECK(f.by_check.at("fabric.manager").at("FAIL") == std::vector<std::string>{"n1", "n3"});
    CHECK(f.by_check.at("runtime.cdi").at("WARN") == std::vector<std::string>{"n2"});
    CHECK(f.any_fail());

    json j = doctor::to_json(f);
    CHECK(j["nodes"] == json({"n1", "n2", "n3"}));
    CHECK(j["checks"]["fabric.manager"] == json({{"FAIL", {"n1", "n3"}}, {"PASS", {"n2"}}}));
    CHECK(j["checks"]["runtime.cdi"] == json({{"WARN", {"n2"}}}));

    // Checks in id order, FAIL before WARN, PASS and SKIP not listed.
    CHECK(doctor::to_text(f) == "3 node(s)\n"
                                "WARN  driver.version: n3\n"
                                "FAIL  fabric.manager: n1, n3\n"
                                "WARN  runtime.cdi: n2\n");
  }

  TEST_CASE("aggregate defaults: unnamed nodes are nodeN by their place, a check without id or status is '?'") {
    json odd = report("", {});
    odd["checks"].push_back(json::object());
    doctor::Fleet f = doctor::aggregate({report("named", {}), report("", {{"gpu.count", "PASS"}}), odd});
    // The number counts every report, named ones included.
    CHECK(f.nodes == std::vector<std::string>{"named", "node2", "node3"});
    CHECK(f.by_check.at("?").at("?") == std::vector<std::string>{"node3"});
    CHECK(f.by_check.at("gpu.count").at("PASS") == std::vector<std::string>{"node2"});
    CHECK_FALSE(f.any_fail());
    CHECK(doctor::to_text(f) == "3 node(s)\nno check failed on any node\n");
  }

  TEST_CASE("aggregate: no reports is an empty table that fails nothing") {
    doctor::Fleet f = doctor::aggregate({});
    CHECK(f.nodes.empty());
    CHECK_FALSE(f.any_fail());
    CHECK(doctor::to_json(f) == json({{"nodes", json::array()}, {"checks", json::object()}}));
    CHECK(doctor::to_text(f) == "0 node(s)\nno check failed on any node\n");
  }

  TEST_CASE("aggregate: a report without checks is an input error") {
    for (const json& bad : {json::array(), json({{"node", "a"}}), json("text")}) {
      auto e = error_of([&] { doctor::aggregate({report("ok", {}), bad}); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(std::string(e.what()) == "a report has no 'checks' (not doctor --json output)");
    }
  }

  TEST_CASE("host verdict: a FAIL fails; a WARN only with strict; SKIP and PASS never") {
    using S = doctor::Status;
    CHECK_FALSE(doctor::host_failed(host_report({}), true));
    CHECK_FALSE(doctor::host_failed(host_report({S::pass, S::skip}), true));
    CHECK(doctor::host_failed(host_report({S::pass, S::fail}), false));
    CHECK_FALSE(doctor::host_failed(host_report({S::pass, S::warn}), false));
    CHECK(doctor::host_failed(host_report({S::pass, S::warn}), true));
  }

  TEST_CASE("needs_as_requires: every stated need, in key order, empty ones left out") {
    doctor::ImageNeeds n;
    CHECK(doctor::needs_as_requires(n) == "");
    n.cuda = "12.6";
    n.archs = {"sm_80", "sm_90a"};
    CHECK(doctor::needs_as_requires(n) == "cuda=12.6,sm=80,sm=90a");
    n.driver_min = "560.28.03";
    n.driver_min_compat = "525.60.13";
    n.require_cuda = "12.4";
    n.paddle = "3.0.0";
    n.gpu_memory_mib = 40960;
    CHECK(doctor::needs_as_requires(n) == "cuda=12.6,driver=560.28.03,driver_compat=525.60.13,require_cuda=12.4,"
                                          "paddle=3.0.0,sm=80,sm=90a,gpu_memory=40960Mi");
    // Facts --requires has no key for are not passed on.
    doctor::ImageNeeds other;
    other.cudnn = "8.9";
    other.python = "3.10";
    CHECK(doctor::needs_as_requires(other) == "");
  }

  TEST_CASE("needs_as_requires is the inverse of needs_from_requires") {
    for (const std::string text :
         {"cuda=12.6", "sm=90", "paddle=3.0.0b1,sm=80,sm=90a",
          "cuda=12.6,driver=560.28.03,driver_compat=525.60.13,require_cuda=12.4,paddle=2.6.1.post117,sm=80,sm=90,"
          "gpu_memory=46068Mi"}) {
      CAPTURE(text);
      CHECK(doctor::needs_as_requires(doctor::needs_from_requires(text)) == text);
    }
    // Other spellings come back in the canonical one, with the same needs.
    doctor::ImageNeeds n = doctor::needs_from_requires("sm=9.0, sm=sm_80 ,gpu_memory=40Gi,cuda=12.6");
    std::string canonical = doctor::needs_as_requires(n);
    CHECK(canonical == "cuda=12.6,sm=90,sm=80,gpu_memory=40960Mi");
    doctor::ImageNeeds back = doctor::needs_from_requires(canonical);
    CHECK(back.cuda == n.cuda);
    CHECK(back.archs == n.archs);
    CHECK(back.archs == std::vector<std::string>{"sm_90", "sm_80"});
    CHECK(back.gpu_memory_mib == 40960);
  }
}

} // namespace unit_doctor_fleet_test
