// The release's documents (builder/release_supply_chain.cpp) and the DEP-5 license
// reader they use (layers/copyright.cpp), on an archive written here and fake host
// packages.
#include "builder/release_supply_chain.hpp"
#include "layers/tar.hpp"
#include "signing/license.hpp"
#include "tests/unit/support.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <doctest/doctest.h>
#include <fstream>

namespace unit_release_supply_chain_test {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::contains;

template <typename F> util::Error expect_error(util::ErrorKind kind, F&& f) {
  util::Error e = test_support::error_of(std::forward<F>(f));
  CHECK(e.kind() == kind);
  return e;
}

const char* k_dep5_expat = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
                           "Upstream-Name: foo\n"
                           "\n"
                           "Files: *\n"
                           "Copyright: 2020 Someone\n"
                           "License: Expat\n"
                           "\n"
                           "Files: debian/*\n"
                           "License: GPL-2+\n";

std::string dep5_star(const std::string& license, const std::string& extra = "") {
  return "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\nFiles: *\nLicense: " + license +
         "\n" + extra;
}

builder::ReleaseFacts facts() {
  builder::ReleaseFacts f;
  f.version = "1.2.3";
  f.commit = "0123456789abcdef0123456789abcdef01234567";
  f.repository = "https://github.com/example/paddle-image";
  f.epoch = 1700000000;
  f.glibc_min = "2.34";
  f.command = {"scripts/release.sh", "--key", "rel.key"};
  f.tools = {{"paddle-image", "1.2.3"}, {"cmake", "3.25.1"}};
  f.os_id = "debian";
  f.os_version_id = "12";
  return f;
}

builder::HostPackages fake_host() {
  builder::HostPackages h;
  h.installed = [](const std::string& name) -> std::optional<layers::Package> {
    if (name == "libfoo1" || name == "libc6" || name == "libbar2+x") {
      layers::Package p;
      p.type = "deb";
      p.name = name;
      p.version = name == "libc6" ? "2.36-9+deb12u4" : "1.0-1";
      p.arch = "amd64";
      return p;
    }
    return std::nullopt;
  };
  h.copyright = [](const std::string& name) -> std::optional<std::string> {
    if (name == "libfoo1") {
      return std::string(k_dep5_expat);
    }
    if (name == "libc6") {
      return std::string("This is not machine-readable.\n");
    }
    return std::nullopt;
  };
  return h;
}

// NAME/lib/SONAME members (and one elsewhere that is no library) in a plain tar.
fs::path write_archive(const fs::path& dir, const std::map<std::string, std::string>& libs) {
  fs::path out = dir / "paddle-image-1.2.3-linux-amd64.tar.gz";
  std::ofstream f(out, std::ios::binary);
  {
    layers::TarBuilder tar(0, [&](const char* d, std::size_t n) { f.write(d, static_cast<std::streamsize>(n)); });
    tar.add_bytes("paddle-image-1.2.3-linux-amd64/libexec/paddle-image", "binary", 0755);
    for (const auto& [soname, bytes] : libs) {
      tar.add_bytes("paddle-image-1.2.3-linux-amd64/lib/" + soname, bytes);
    }
    tar.finish();
  }
  return out;
}

const json& find_by(const json& list, const std::string& key, const std::string& value) {
  for (const auto& x : list) {
    if (x.value(key, "") == value) {
      return x;
    }
  }
  FAIL("no element with " << key << " = " << value);
  static json none;
  return none;
}

bool has_rel(const json& doc, const std::string& from, const std::string& type, const std::string& to) {
  for (const auto& r : doc.at("relationships")) {
    if (r.at("spdxElementId") == from && r.at("relationshipType") == type && r.at("relatedSpdxElement") == to) {
      return true;
    }
  }
  return false;
}

} // namespace

TEST_CASE("dep5_license: the Files: * paragraph's license as an SPDX expression") {
  std::map<std::string, signing::ExtractedLicense> ex;
  CHECK(signing::dep5_license(k_dep5_expat, "foo", ex) == "MIT");
  CHECK(signing::dep5_license(dep5_star("GPL-2+ or Artistic"), "perl", ex) == "GPL-2.0-or-later OR Artistic-1.0-Perl");
  CHECK(signing::dep5_license(dep5_star("BSD-3-clause, MIT"), "x", ex) == "BSD-3-Clause AND MIT");
  CHECK(signing::dep5_license(dep5_star("LGPL-2.1+ AND zlib"), "x", ex) == "LGPL-2.1-or-later AND Zlib");
  CHECK(ex.empty());
  SUBCASE("a name SPDX does not know: LicenseRef- with the stand-alone paragraph's text") {
    std::string text = dep5_star("OpenLDAP", "\nLicense: OpenLDAP\n The OpenLDAP Public License\n .\n Version 2.8\n");
    CHECK(signing::dep5_license(text, "libldap", ex) == "LicenseRef-OpenLDAP");
    REQUIRE(ex.count("LicenseRef-OpenLDAP") == 1);
    CHECK(ex.at("LicenseRef-OpenLDAP").name == "OpenLDAP");
    CHECK(ex.at("LicenseRef-OpenLDAP").text == "The OpenLDAP Public License\n.\nVersion 2.8");
    // another package naming it with another text gets an id of its own
    CHECK(signing::dep5_license(dep5_star("OpenLDAP"), "other", ex) == "LicenseRef-OpenLDAP-other");
    CHECK(ex.at("LicenseRef-OpenLDAP-other").text == "The license named 'OpenLDAP' in other's Debian copyright file");
    // "X with Y exception" is a name too
    CHECK(signing::dep5_license(dep5_star("GPL-3+ with Autoconf exception"), "ac", ex) ==
          "LicenseRef-GPL-3--with-Autoconf-exception");
  }
  SUBCASE("NOASSERTION when the file cannot say") {
    CHECK(signing::dep5_license("This package was debianized by...\nLicense: MIT\n", "old", ex) == "NOASSERTION");
    CHECK(signing::dep5_license(dep5_star("see the file COPYING in the source"), "prose", ex) == "NOASSERTION");
    CHECK(signing::dep5_license("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                                "Files: src/*\nLicense: MIT\n",
                                "nostar", ex) == "NOASSERTION");
    CHECK(signing::dep5_license(dep5_star(""), "empty", ex) == "NOASSERTION");
    CHECK(ex.empty());
  }
}

TEST_CASE("archive_sbom: each bundled library as the file in the archive inside its Debian package") {
  auto dir = test_support::make_temp("pi-release-");
  fs::path archive =
      write_archive(dir.path(), {{"libfoo.so.1", "abc"}, {"libfoo-extra.so.1", "def"}, {"libstray.so.0", "xyz"}});
  std::vector<builder::BundledLibrary> libs = builder::parse_bundled_libraries(
      "libfoo.so.1\tlibfoo1\t1.0-1\tamd64\nlibfoo-extra.so.1\tlibfoo1\t1.0-1\t\n\nlibstray.so.0\t\t\t\n");
  REQUIRE(libs.size() == 3);
  CHECK(libs[1].arch == "amd64"); // the default
  json doc = builder::archive_sbom(facts(), archive, libs, fake_host());
  CHECK(doc.at("spdxVersion") == "SPDX-2.3");
  CHECK(doc.at("creationInfo").at("created") == "2023-11-14T22:13:20Z");
  std::string sha = util::sha256_file_hex(archive);
  CHECK(doc.at("documentNamespace").get<std::string>().find("paddle-image-1.2.3-linux-amd64.tar.gz-") !=
        std::string::npos);
  const json& main = find_by(doc.at("packages"), "name", "paddle-image");
  CHECK(main.at("checksums").at(0).at("checksumValue") == sha);
  CHECK(main.at("downloadLocation") == "git+https://github.com/example/paddle-image@" + facts().commit);
  CHECK(main.at("externalRefs").at(0).at("referenceLocator") == "pkg:github/example/paddle-image@1.2.3");
  CHECK(has_rel(doc, "SPDXRef-DOCUMENT", "DESCRIBES", main.at("SPDXID")));

  const json& foo = find_by(doc.at("packages"), "name", "libfoo1");
  CHECK(foo.at("versionInfo") == "1.0-1");
  CHECK(foo.at("licenseDeclared") == "MIT");
  CHECK(foo.at("externalRefs").at(0).at("referenceLocator") ==
        "pkg:deb/debian/libfoo1@1.0-1?arch=amd64&distro=debian-12");
  CHECK(foo.at("comment").get<std::string>().find("lib/libfoo.so.1, lib/libfoo-extra.so.1") != std::string::npos);
  CHECK(doc.at("packages").size() == 2); // one package for both its libraries; none for the stray
  const json& file = find_by(doc.at("files"), "fileName", "./lib/libfoo.so.1");
  CHECK(file.at("checksums").at(0).at("checksumValue") == "a9993e364706816aba3e25717850c26c9cd0d89d"); // SHA-1 "abc"
  CHECK(file.at("checksums").at(1).at("checksumValue") == util::sha256_hex("abc"));
  CHECK(has_rel(doc, main.at("SPDXID"), "CONTAINS", foo.at("SPDXID")));
  CHECK(has_rel(doc, foo.at("SPDXID"), "CONTAINS", file.at("SPDXID")));
  const json& stray = find_by(doc.at("files"), "fileName", "./lib/libstray.so.0");
  CHECK(has_rel(doc, main.at("SPDXID"), "CONTAINS", stray.at("SPDXID")));
  CHECK(doc.at("files").size() == 3); // libexec/paddle-image is no bundled library

  // the same inputs, the same bytes; another archive, another namespace
  CHECK(builder::archive_sbom(facts(), archive, libs, fake_host()).dump() == doc.dump());
  util::create_dirs(dir.path() / "other", "other");
  fs::path other = write_archive(dir.path() / "other", {{"libfoo.so.1", "abd"}});
  std::vector<builder::BundledLibrary> one(libs.begin(), libs.begin() + 1);
  CHECK(builder::archive_sbom(facts(), other, one, fake_host()).at("documentNamespace") != doc.at("documentNamespace"));

  SUBCASE("a library the archive lacks is an input error naming it") {
    libs.push_back({"libgone.so.9", "libgone9", "1", "amd64"});
    auto e = expect_error(util::ErrorKind::input, [&] { builder::archive_sbom(facts(), archive, libs, fake_host()); });
    CHECK(contains(e.what(), "lacks lib/libgone.so.9"));
  }
}

TEST_CASE("deb_sbom: the .deb and its Depends at the versions installed here") {
  auto dir = test_support::make_temp("pi-release-");
  fs::path deb = dir.path() / "paddle-image_1.2.3-1_amd64.deb";
  util::write_file_atomic(deb, "!<arch>\n");
  builder::DebFields fields{"1.2.3-1", "amd64", "libc6 (>= 2.34), libfoo1:amd64 (>= 1.0) | libfoo0, libbar2+x"};
  json doc = builder::deb_sbom(facts(), deb, fields, fake_host());
  const json& main = find_by(doc.at("packages"), "name", "paddle-image");
  CHECK(main.at("versionInfo") == "1.2.3-1");
  CHECK(main.at("externalRefs").at(0).at("referenceLocator") == "pkg:deb/paddle-image/paddle-image@1.2.3-1?arch=amd64");
  REQUIRE(doc.at("packages").size() == 4);
  const json& libc = find_by(doc.at("packages"), "name", "libc6");
  CHECK(libc.at("versionInfo") == "2.36-9+deb12u4");
  CHECK(libc.at("licenseDeclared") == "NOASSERTION"); // its copyright file is not DEP-5
  CHECK(libc.at("externalRefs").at(0).at("referenceLocator") ==
        "pkg:deb/debian/libc6@2.36-9%2Bdeb12u4?arch=amd64&distro=debian-12");
  const json& foo = find_by(doc.at("packages"), "name", "libfoo1");
  CHECK(foo.at("comment").get<std::string>().find("Depends: libfoo1:amd64 (>= 1.0);") == 0);
  const json& bar = find_by(doc.at("packages"), "name", "libbar2+x");
  CHECK(bar.at("SPDXID") == "SPDXRef-Package-deb-libbar2-x");
  for (const auto* p : {&libc, &foo, &bar}) {
    CHECK(has_rel(doc, main.at("SPDXID"), "DEPENDS_ON", p->at("SPDXID")));
  }
  CHECK_FALSE(doc.contains("files"));
  fields.depends += ", libmissing3";
  auto e = expect_error(util::ErrorKind::input, [&] { builder::deb_sbom(facts(), deb, fields, fake_host()); });
  CHECK(contains(e.what(), "depends on libmissing3, which is not installed here"));
}

TEST_CASE("release_provenance: the source at its commit, the command, the bundled packages") {
  std::vector<builder::BundledLibrary> libs = {{"libz.so.1", "zlib1g", "1:1.2.13", "amd64"},
                                               {"libb.so.1", "libfoo1", "1.0-1", "amd64"},
                                               {"liba.so.1", "libfoo1", "1.0-1", "amd64"},
                                               {"libstray.so", "", "", "amd64"}};
  json p = builder::release_provenance(facts(), libs);
  const json& bd = p.at("buildDefinition");
  CHECK(bd.at("buildType") == builder::k_release_build_type);
  CHECK(bd.at("externalParameters").at("source").at("commit") == facts().commit);
  CHECK(bd.at("externalParameters").at("command").at(0) == "scripts/release.sh");
  CHECK(bd.at("externalParameters").at("source_date_epoch") == 1700000000);
  const json& deps = bd.at("resolvedDependencies");
  REQUIRE(deps.size() == 3); // the source, zlib1g, libfoo1
  CHECK(deps.at(0).at("uri") == "git+https://github.com/example/paddle-image");
  CHECK(deps.at(0).at("digest").at("gitCommit") == facts().commit);
  CHECK(deps.at(1).at("uri") == "pkg:deb/debian/zlib1g@1%3A1.2.13?arch=amd64&distro=debian-12");
  CHECK(deps.at(2).at("annotations").at("bundled") == json::array({"lib/liba.so.1", "lib/libb.so.1"}));
  const json& rd = p.at("runDetails");
  CHECK(rd.at("builder").at("id") == builder::k_release_builder_id);
  CHECK(rd.at("builder").at("version").at("cmake") == "3.25.1");
  CHECK(rd.at("builder").at("version").at("paddle-image") == "1.2.3");
  CHECK(rd.at("metadata").at("startedOn") == rd.at("metadata").at("finishedOn"));
}

TEST_CASE("release_facts: the build's settings, the tools without their names, the OS; the facts round-trip") {
  auto dir = test_support::make_temp("pi-release-");
  util::create_dirs(dir.path() / "build", "the build directory");
  util::write_file_atomic(dir.path() / "build/CMakeCache.txt",
                          "# comment\nCMAKE_BUILD_TYPE:STRING=Release\nPADDLE_IMAGE_WERROR:BOOL=ON\n"
                          "UNRELATED:STRING=x\nPADDLE_IMAGE_BUNDLE_RPATH:STRING=$ORIGIN/../lib\n");
  util::create_dirs(dir.path() / "etc", "etc");
  util::write_file_atomic(dir.path() / "etc/os-release",
                          "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n");
  builder::ReleaseFacts given = facts();
  given.tools = {{"cmake", "cmake version 3.25.1"}, {"tar", "tar (GNU tar) 1.34"}, {"python3", "Python 3.11.2"}};
  builder::ReleaseFacts f = builder::release_facts(given, dir.path() / "build", dir.path(), fake_host());
  CHECK(f.cmake == std::map<std::string, std::string>{{"CMAKE_BUILD_TYPE", "Release"},
                                                      {"PADDLE_IMAGE_BUNDLE_RPATH", "$ORIGIN/../lib"},
                                                      {"PADDLE_IMAGE_WERROR", "ON"}});
  CHECK(f.tools.at("cmake") == "3.25.1");
  CHECK(f.tools.at("tar") == "1.34");
  CHECK(f.tools.at("python3") == "3.11.2");
  CHECK(f.tools.at("libc6") == "2.36-9+deb12u4");
  CHECK(f.tools.at("os") == "Debian GNU/Linux 12 (bookworm)");
  CHECK(f.distro() == "debian-12");
  builder::ReleaseFacts back = builder::ReleaseFacts::from_json(f.to_json(), "facts.json");
  CHECK(back.to_json() == f.to_json());
  auto e = expect_error(util::ErrorKind::input, [&] {
    builder::ReleaseFacts::from_json(json{{"version", 1}}, "facts.json");
  });
  CHECK(contains(e.what(), "facts.json: not a release facts file"));
  expect_error(util::ErrorKind::input,
               [&] { builder::release_facts(given, dir.path() / "nowhere", dir.path(), fake_host()); });
}

} // namespace unit_release_supply_chain_test
