#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "debian/control.hpp"
#include "debian/install.hpp"
#include "debian/lock.hpp"
#include "debian/repository.hpp"
#include "util/error.hpp"

#include <string>

namespace unit_debian_test {

using test_support::contains;

TEST_CASE("deb822 paragraphs round-trip with continuation lines and field order") {
  const std::string text = "Package: libgl1\nStatus: install ok installed\nDescription: GL\n legacy GL support\n .\n"
                           " more\n\nPackage: b\nVersion: 1\n";
  auto ps = debian::parse_paragraphs(text, "status");
  REQUIRE(ps.size() == 2);
  CHECK(ps[0].value("package") == "libgl1");
  CHECK(ps[0].value("Description") == "GL\n legacy GL support\n .\n more");
  CHECK(ps[0].text() + "\n" + ps[1].text() == text);
  CHECK(ps[1].line == 8);
  CHECK_THROWS_WITH_AS(debian::parse_paragraphs("Package: a\nnot a field\n", "Packages"),
                       doctest::Contains("Packages:2:"), util::Error);
  CHECK_THROWS_AS(debian::parse_paragraphs(" orphan continuation\n", "x"), util::Error);
}

TEST_CASE("a status paragraph: Status after Package, Conffiles before Description") {
  auto c = debian::parse_paragraphs("Package: x\nVersion: 1\nArchitecture: amd64\nMulti-Arch: same\nDescription: d\n",
                                    "control");
  auto p = debian::status_paragraph(c[0], {{"/etc/x.conf", "d41d8cd98f00b204e9800998ecf8427e"}}, "pkg");
  CHECK(p.text() == "Package: x\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\nMulti-Arch: same\n"
                    "Conffiles:\n /etc/x.conf d41d8cd98f00b204e9800998ecf8427e\nDescription: d\n");
  CHECK(debian::info_name(c[0]) == "x:amd64");
  std::string merged = debian::merged_status("Package: z\nVersion: 2\n\nPackage: a\nVersion: 3\n", {p});
  CHECK(merged.find("Package: a") < merged.find("Package: x"));
  CHECK(merged.find("Package: x") < merged.find("Package: z"));
}

debian::DebControl with_script(const std::string& name, const std::string& body) {
  debian::DebControl d;
  d.control = debian::parse_paragraphs("Package: pkg\nVersion: 1\nArchitecture: all\n", "control")[0];
  d.files[name] = body;
  return d;
}

TEST_CASE("maintainer scripts: debhelper's no-op sections pass, anything else is refused with its line") {
  CHECK_NOTHROW(debian::check_maintainer_scripts(
      with_script("postinst", "#!/bin/sh\nset -e\n# Automatically added by dh_installdeb/13.11.4\n"
                              "dpkg-maintscript-helper rm_conffile /etc/drirc 19.0.3-1\\~ -- \"$@\"\n"
                              "# End automatically added section\n"),
      "pkg"));
  CHECK_NOTHROW(debian::check_maintainer_scripts(
      with_script("postinst", "#!/bin/sh\nset -e\n# Automatically added by dh_python3\n"
                              "if command -v py3compile >/dev/null 2>&1; then\n\tpy3compile -p pkg \nfi\n"
                              "# End automatically added section\n"),
      "pkg"));
  CHECK_NOTHROW(debian::check_maintainer_scripts(with_script("prerm", "#!/bin/sh\nrm -rf /\n"), "pkg"));
  std::string alternatives =
      "#!/bin/sh -e\n\ncase \"$1\" in\n    configure)\n        update-alternatives \\\n"
      "            --install /usr/bin/lua lua-interpreter /usr/bin/lua5.1 110\n        ;;\nesac\n";
  util::Error e = test_support::error_of(
      [&] { debian::check_maintainer_scripts(with_script("postinst", alternatives), "lua5.1"); });
  CHECK(contains(e.what(), "lua5.1: its postinst"));
  CHECK(contains(e.what(), "line 5: 'update-alternatives"));
  // A helper line outside a debhelper section, or one that runs more, is not accepted.
  CHECK_THROWS_AS(debian::check_maintainer_scripts(with_script("preinst", "py3compile -p pkg\n"), "pkg"), util::Error);
  CHECK_THROWS_AS(debian::check_maintainer_scripts(
                      with_script("postinst", "# Automatically added by dh_python3\npy3compile -p pkg; rm -rf /x\n"
                                              "# End automatically added section\n"),
                      "pkg"),
                  util::Error);
}

TEST_CASE("a Release past its Valid-Until is refused, as apt refuses it") {
  const std::string rel = "Suite: bookworm-security\nValid-Until: Sat, 09 Dec 2023 10:00:00 UTC\n";
  CHECK_NOTHROW(debian::check_valid_until(rel, 1702000000, "InRelease"));       // 2023-12-08
  CHECK_THROWS_WITH_AS(debian::check_valid_until(rel, 1702200000, "InRelease"), // 2023-12-10
                       doctest::Contains("InRelease expired at Sat, 09 Dec 2023 10:00:00 UTC"), util::Error);
  CHECK_NOTHROW(debian::check_valid_until("Suite: bookworm\n", 4000000000, "InRelease"));
  CHECK_THROWS_AS(debian::check_valid_until("Valid-Until: soon\n", 0, "InRelease"), util::Error);
}

TEST_CASE("the Release's SHA256 list, and a lock that is not one") {
  auto files = debian::release_files(
      "Suite: bookworm\nSHA256:\n " + std::string(64, 'a') + " 12 main/binary-amd64/Packages.xz\n", "Release");
  REQUIRE(files.size() == 1);
  CHECK(files[0].first == "main/binary-amd64/Packages.xz");
  CHECK(files[0].second.size == 12);
  CHECK_THROWS_AS(debian::release_files("Suite: x\nMD5Sum:\n abc 1 f\n", "Release"), util::Error);
  CHECK_THROWS_WITH_AS(debian::parse_lock("[]", "debs.lock"), doctest::Contains("debs.lock is not a debs lock"),
                       util::Error);
  debian::Lock lock;
  lock.request.packages = {"libgl1"};
  lock.request.architecture = "amd64";
  lock.request.repositories.push_back(debian::Repository{"http://deb.example/debian", "bookworm", {"main"}, "k", ""});
  lock.release_sha256 = {std::string(64, 'b')};
  lock.signed_by = {"FPR"};
  lock.packages.push_back(debian::LockedPackage{"libgl1", "1.6.0-1", "amd64", "same", "pool/main/l/libgl1.deb",
                                                std::string(64, 'c'), 88448, "http://deb.example/debian"});
  debian::Lock back = debian::parse_lock(debian::lock_text(lock), "debs.lock");
  CHECK(back.packages == lock.packages);
  CHECK(debian::request_json(back.request) == debian::request_json(lock.request));
  std::string bad = debian::lock_text(lock);
  bad.replace(bad.find("pool/main"), 9, "../../etc");
  CHECK_THROWS_WITH_AS(debian::parse_lock(bad, "debs.lock"), doctest::Contains("is not a path under the repository"),
                       util::Error);
}

} // namespace unit_debian_test
