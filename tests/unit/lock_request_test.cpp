#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "builder/lock_request.hpp"
#include "util/error.hpp"

#include <string>
#include <vector>

namespace unit_lock_request_test {

using test_support::contains;
using test_support::error_of;

TEST_CASE("lock request: a spec file is needed, index URLs must be http(s)") {
  util::Error no_spec = error_of([] { builder::check_lock_request("", "req.txt", {}); });
  CHECK(no_spec.kind() == util::ErrorKind::usage);
  CHECK(std::string(no_spec.what()) == "lock needs --spec FILE (and --layer NAME when it has several wheels layers)");
  CHECK(contains(no_spec.hint(), "paddle-image lock req.txt -o requirements.lock --spec spec.yaml"));

  util::Error bad_url = error_of([] {
    builder::check_lock_request("spec.yaml", "req.txt", {"https://ok.example/simple", "ftp://x/s"});
  });
  CHECK(bad_url.kind() == util::ErrorKind::usage);
  CHECK(std::string(bad_url.what()) == "--index-url ftp://x/s: not an http(s) URL");

  CHECK_NOTHROW(builder::check_lock_request("spec.yaml", "req.txt", {"http://a.example/simple", "https://b/simple"}));
  CHECK_NOTHROW(builder::check_lock_request("spec.yaml", "req.txt", {}));
}

TEST_CASE("lock request: no -o or -o - writes the lock to stdout") {
  CHECK(builder::lock_to_stdout(""));
  CHECK(builder::lock_to_stdout("-"));
  CHECK_FALSE(builder::lock_to_stdout("requirements.lock"));
}

TEST_CASE("lock report: the lock text on stdout, the output path otherwise, credentials redacted") {
  python::LockResult r;
  r.text = "alpha==1.0 \\\n    --hash=sha256:aa\n";
  r.lines.push_back({"alpha", "1.0", {"alpha-1.0-py3-none-any.whl"}});
  r.warnings.push_back("a warning");
  r.sources.sources.indexes = {"https://user:s3cret@mirror.example/simple"};
  r.sources.sources.find_links = {"https://user:s3cret@files.example/wheels/"};
  r.sources.described = "-i/--index-url";

  nlohmann::json out = builder::lock_report(r, "req.txt", "-", false);
  CHECK(out["output"].is_null());
  CHECK(out["lock"] == r.text);
  CHECK(out["requirements"] == "req.txt");
  CHECK(out["index_from"] == "-i/--index-url");
  CHECK(out["all_platforms"] == false);
  CHECK(out["lines"] ==
        nlohmann::json::parse(R"([{"name":"alpha","version":"1.0","files":["alpha-1.0-py3-none-any.whl"]}])"));
  CHECK(out["warnings"] == nlohmann::json::array({"a warning"}));
  CHECK_FALSE(contains(out.dump(), "s3cret"));
  CHECK(contains(out["indexes"][0].get<std::string>(), "mirror.example/simple"));
  CHECK(contains(out["find_links"][0].get<std::string>(), "files.example/wheels/"));

  nlohmann::json file = builder::lock_report(r, "req.txt", "requirements.lock", true);
  CHECK(file["output"] == "requirements.lock");
  CHECK_FALSE(file.contains("lock"));
  CHECK(file["all_platforms"] == true);
}

} // namespace unit_lock_request_test
