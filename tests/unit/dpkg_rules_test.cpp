// dpkg's rules as a debs layer applies them: versions and relations, the dpkg
// database of a base (owners, diversions, stat overrides), the status fields dpkg keeps,
// the scripts and triggers accepted, the loader cache's format, and DebsUnpack over
// real .deb files (built with dpkg-deb) on a base view with a dpkg database.
#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "builder/kinds/debs_unpack.hpp"
#include "debian/database.hpp"
#include "debian/install.hpp"
#include "debian/ld_cache.hpp"
#include "debian/version.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace unit_dpkg_rules_test {

using test_support::contains;
using test_support::error_of;
namespace fs = std::filesystem;

TEST_CASE("versions compare as dpkg --compare-versions") {
  CHECK(debian::compare_versions("1.0", "1.0") == 0);
  CHECK(debian::compare_versions("1.0~rc1", "1.0") < 0);
  CHECK(debian::compare_versions("1.0", "1.0-1") < 0);
  CHECK(debian::compare_versions("1:0.9", "2.0") > 0);
  CHECK(debian::compare_versions("2.36-9+deb12u4", "2.36-9+deb12u10") < 0);
  CHECK(debian::compare_versions("1.0a", "1.0+") < 0); // letters before other characters
  CHECK(debian::compare_versions("1.10", "1.9") > 0);
  CHECK(debian::compare_versions("0:1.0", "1.0") == 0);
  CHECK(debian::compare_versions("1.0-1~bpo1", "1.0-1") < 0);
}

TEST_CASE("Replaces relations: names, architecture qualifiers and version constraints") {
  auto r = debian::parse_relations("debianutils (<< 5.8-1), foo:any,\n bar (>= 2)", "Replaces");
  REQUIRE(r.size() == 3);
  CHECK(r[0] == debian::Relation{"debianutils", "", "<<", "5.8-1"});
  CHECK(r[1].arch == "any");
  CHECK(debian::relation_matches(r[0], "debianutils", "5.7-0.5"));
  CHECK_FALSE(debian::relation_matches(r[0], "debianutils", "5.8-1"));
  CHECK(debian::relation_matches(r[1], "foo", "9"));
  CHECK_FALSE(debian::relation_matches(r[2], "bar", "1.9"));
  CHECK(debian::relation_matches(debian::parse_relations("x (> 1)", "R")[0], "x", "1")); // obsolete '>' is '>='
  CHECK(contains(error_of([] { debian::parse_relations("a | b", "pkg: its Replaces field"); }).what(),
                 "pkg: its Replaces field: 'a | b'"));
  CHECK_THROWS_AS(debian::parse_relations("a (~ 1)", "R"), util::Error);
}

TEST_CASE("the status paragraph keeps what dpkg keeps: dpkg's own fields refused, index fields dropped") {
  auto control = [](const std::string& extra) {
    return debian::parse_paragraphs("Package: x\nVersion: 1\nArchitecture: amd64\n" + extra + "Description: d\n",
                                    "control")[0];
  };
  auto p = debian::status_paragraph(control("Filename: pool/x.deb\nSize: 10\nMD5sum: 00\nSHA256: 11\nX-Custom: k\n"),
                                    {}, "pkg");
  CHECK(p.text() == "Package: x\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\nX-Custom: k\n"
                    "Description: d\n");
  for (const char* field : {"Conffiles", "Status", "Config-Version", "Triggers-Pending", "triggers-awaited"}) {
    CAPTURE(field);
    util::Error e = error_of([&] {
      debian::status_paragraph(control(std::string(field) + ": /etc/passwd 00000000000000000000000000000000\n"), {},
                               "package evil 1");
    });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "package evil 1: its control file has a '" + std::string(field) + "' field"));
    CHECK(contains(e.what(), "not allowed in this context"));
  }
}

debian::DebControl with(const std::string& member, const std::string& body) {
  debian::DebControl d;
  d.control = debian::parse_paragraphs("Package: pkg\nVersion: 1\nArchitecture: all\n", "control")[0];
  d.files[member] = body;
  return d;
}

TEST_CASE("scripts: a bare ldconfig is done by the layer; config scripts and triggers are checked") {
  CHECK(debian::check_maintainer_scripts(with("postinst", "#!/bin/sh\nset -e\n# refresh\nldconfig\n"), "pkg").ldconfig);
  CHECK(debian::check_maintainer_scripts(with("postinst", "#!/bin/sh -e\n/sbin/ldconfig\nexit 0\n"), "pkg").ldconfig);
  CHECK_FALSE(debian::check_maintainer_scripts(with("postinst", "#!/bin/sh\nset -e\n"), "pkg").ldconfig);
  util::Error config = error_of([] {
    debian::check_maintainer_scripts(with("config", "#!/bin/sh\n. /usr/share/debconf/confmodule\ndb_input high x\n"),
                                     "pkg");
  });
  CHECK(contains(config.what(), "pkg: its config"));
  CHECK(contains(config.what(), "line 2: '. /usr/share/debconf/confmodule'"));
  CHECK(contains(config.what(), "asks no debconf question"));
  CHECK(contains(
      error_of([] { debian::check_maintainer_scripts(with("postinst", "#!/usr/bin/perl\n# x\n"), "pkg"); }).what(),
      "runs /usr/bin/perl"));
  CHECK(
      debian::check_maintainer_scripts(with("triggers", "# made by dh_makeshlibs\nactivate-noawait ldconfig\n"), "pkg")
          .ldconfig);
  util::Error trig = error_of(
      [] { debian::check_maintainer_scripts(with("triggers", "activate-noawait update-initramfs\n"), "pkg"); });
  CHECK(contains(trig.what(), "its triggers file (line 1: 'activate-noawait update-initramfs')"));
  util::Error interest =
      error_of([] { debian::check_maintainer_scripts(with("triggers", "interest /usr/share/man\n"), "pkg"); });
  CHECK(contains(interest.what(), "'interest /usr/share/man'"));
  CHECK(contains(interest.what(), "postinst when the trigger fires"));
}

TEST_CASE("the dpkg database: owners by where files are, ownership moved, diversions and overrides") {
  std::map<std::string, std::string> files = {
      {"var/lib/dpkg/info/debianutils.list", "/.\n/bin\n/bin/which\n/usr/bin/tempfile\n"},
      {"var/lib/dpkg/info/libc6:amd64.list", "/.\n/lib/x86_64-linux-gnu/libc.so.6\n"},
      {"var/lib/dpkg/info/libc6:amd64.md5sums", "x"},
      {"var/lib/dpkg/status", "Package: debianutils\nStatus: install ok installed\nVersion: 5.7-0.5\n"},
      {"var/lib/dpkg/diversions", "/usr/bin/tool\n/usr/bin/tool.real\nwrapper\n/etc/x\n/etc/x.local\n:\n"},
      {"var/lib/dpkg/statoverride", "root staff 4750 /usr/bin/tool\n#1000 #1001 700 /srv/data\n"},
      {"etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"},
      {"etc/group", "root:x:0:\nstaff:x:50:\n"}};
  auto merged = [](const std::string& p) { return p.rfind("bin/", 0) == 0 ? "usr/" + p : p; };
  debian::Database db(files, merged);
  CHECK(db.owners("usr/bin/which") == std::vector<std::string>{"debianutils"});
  CHECK(db.owners("lib/x86_64-linux-gnu/libc.so.6") == std::vector<std::string>{"libc6:amd64"});
  CHECK(db.owners("usr/bin/none").empty());
  CHECK(db.version_of("debianutils") == "5.7-0.5");
  db.disown("usr/bin/which", "debianutils");
  CHECK(db.owners("usr/bin/which").empty());
  CHECK(db.changed_lists() ==
        std::map<std::string, std::string>{{"var/lib/dpkg/info/debianutils.list", "/.\n/bin\n/usr/bin/tempfile\n"}});
  REQUIRE(db.diversion("usr/bin/tool") != nullptr);
  CHECK(*db.diversion("usr/bin/tool") == debian::Diversion{"/usr/bin/tool", "/usr/bin/tool.real", "wrapper"});
  CHECK(db.diversion("etc/x")->package.empty()); // ':' is a local diversion
  REQUIRE(db.statoverride("usr/bin/tool") != nullptr);
  CHECK(*db.statoverride("usr/bin/tool") == debian::StatOverride{0, 50, "root", "staff", 04750});
  CHECK(db.statoverride("srv/data")->uid == 1000);
  CHECK(db.statoverride("srv/data")->user.empty());

  files["var/lib/dpkg/statoverride"] = "nobody root 755 /x\n";
  CHECK(
      contains(error_of([&] { debian::Database(files, merged); }).what(), "'nobody' is not in the base's etc/passwd"));
  files["var/lib/dpkg/statoverride"] = "root root 9z /x\n";
  CHECK(contains(error_of([&] { debian::Database(files, merged); }).what(), "statoverride:1: 'root root 9z /x'"));
  files["var/lib/dpkg/statoverride"] = "";
  files["var/lib/dpkg/diversions"] = "/a\n/b\n";
  CHECK(contains(error_of([&] { debian::Database(files, merged); }).what(), "2 lines, not triples"));
}

TEST_CASE("ldconfig's order, directories and cache format") {
  CHECK(debian::ld_cache_libcmp("libz.so.10", "libz.so.9") > 0); // digits as numbers
  CHECK(debian::ld_cache_libcmp("libz.so", "libz.so.1") < 0);
  CHECK(debian::ld_cache_libcmp("liba.so", "libb.so") < 0);
  CHECK(debian::ld_cache_libcmp("lib1", "liba") > 0); // a digit after the other's letter sorts after
  std::map<std::string, std::string> conf = {
      {"etc/ld.so.conf.d/x86_64-linux-gnu.conf", "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n"
                                                 "/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n"},
      {"etc/ld.so.conf.d/libc.conf", "/usr/local/lib\n"},
      {"etc/ld.so.conf.d/zz-cuda.conf", "/usr/local/cuda/lib64/  # the toolkit\n"},
      {"etc/ld.so.conf.d/README", "/not/a/conf\n"}};
  auto dirs = debian::ld_search_dirs("include /etc/ld.so.conf.d/*.conf\n", conf, "x86_64-linux-gnu");
  CHECK(dirs == std::vector<std::string>{"/usr/local/lib", "/usr/local/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                                         "/usr/lib/x86_64-linux-gnu", "/usr/local/cuda/lib64", "/lib", "/usr/lib"});
  debian::LdCache c;
  c.generator = "test";
  c.hwcaps = {"x86-64-v3"};
  c.entries = {{0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1", 0, 0},
               {0x0303, "libfoo.so.2", "/opt/foo/libfoo.so.2", 0, 0},
               {0x0303, "libz.so.1", "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libz.so.1", 0, (1ULL << 62)},
               {0x0303, "libz.so.10", "/lib/x86_64-linux-gnu/libz.so.10", 0, 0}};
  debian::LdCache back = debian::parse_ld_cache(debian::write_ld_cache(c), "cache");
  CHECK(back.generator == "test");
  CHECK(back.hwcaps == c.hwcaps);
  REQUIRE(back.entries.size() == 4);
  CHECK(back.entries[0].key == "libz.so.10");   // descending, numbers as numbers
  CHECK(back.entries[1].hwcap == (1ULL << 62)); // a key's glibc-hwcaps entry first
  CHECK(back.entries[2].value == "/lib/x86_64-linux-gnu/libz.so.1");
  CHECK(back.entries[3].key == "libfoo.so.2");
  CHECK(debian::write_ld_cache(back) == debian::write_ld_cache(c));
  CHECK(contains(error_of([] { debian::parse_ld_cache("not a cache", "the base's /etc/ld.so.cache"); }).what(),
                 "the base's /etc/ld.so.cache: not a loader cache"));
  std::string cut = debian::write_ld_cache(c);
  cut.resize(60);
  CHECK_THROWS_AS(debian::parse_ld_cache(cut, "cache"), util::Error);
  // This machine's own cache (written by its ldconfig) reads and writes back alike.
  if (fs::exists("/etc/ld.so.cache")) {
    auto host = debian::parse_ld_cache(util::read_file("/etc/ld.so.cache"), "/etc/ld.so.cache");
    CHECK(!host.entries.empty());
    CHECK(contains(host.generator, "ldconfig"));
    CHECK(debian::parse_ld_cache(debian::write_ld_cache(host), "ours").entries == host.entries);
    for (const auto& e : host.entries) {
      if (e.key == "libc.so.6" && e.flags == debian::k_ld_flags_x86_64 && fs::exists(e.value)) {
        auto lib = debian::read_elf_library(e.value);
        REQUIRE(lib);
        CHECK(lib->soname == "libc.so.6");
        CHECK(lib->flags == e.flags);
      }
    }
  }
  CHECK_FALSE(debian::read_elf_library("/etc/passwd"));
}

// ---- DebsUnpack over real packages ----------------------------------------------------

struct Deb {
  std::string control; // the control file's extra fields
  std::vector<std::pair<std::string, std::string>>
      files;                                  // "usr/bin/x" -> content; "->T" content: a symlink; "/" end: a dir
  std::map<std::string, std::string> members; // conffiles, postinst, triggers
};

fs::path build_deb(const fs::path& dir, const std::string& name, const Deb& d) {
  fs::path root = dir / ("src-" + name);
  fs::create_directories(root / "DEBIAN");
  util::write_file_atomic(root / "DEBIAN/control", "Package: " + name + "\nVersion: 1.0\nArchitecture: amd64\n" +
                                                       "Maintainer: t <t@test.invalid>\n" + d.control +
                                                       "Description: test\n");
  for (const auto& [member, body] : d.members) {
    util::write_file_atomic(root / "DEBIAN" / member, body);
    fs::permissions(root / "DEBIAN" / member,
                    member == "postinst" || member == "config" ? fs::perms(0755) : fs::perms(0644));
  }
  for (const auto& [path, content] : d.files) {
    fs::path p = root / path;
    if (!path.empty() && path.back() == '/') {
      fs::create_directories(p);
      continue;
    }
    fs::create_directories(p.parent_path());
    if (content.rfind("->", 0) == 0) {
      fs::create_symlink(content.substr(2), p);
    } else {
      util::write_file_atomic(p, content);
    }
  }
  fs::path out = dir / (name + ".deb");
  auto r = util::run_process(
      {"dpkg-deb", "--root-owner-group", "--nocheck", "-Zgzip", "--build", root.string(), out.string()}, {},
      "dpkg-deb is part of dpkg");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return out;
}

void add(layers::BaseView& v, const std::string& path, char type, const std::string& content = "",
         const std::string& target = "") {
  layers::TarMember m;
  m.path = path;
  m.type = type;
  m.mode = type == '5' ? 0755 : 0644;
  m.size = static_cast<std::int64_t>(content.size());
  m.link_target = target;
  v.add_member(m, type == '0' && layers::BaseView::wants_content(path) ? &content : nullptr);
}

// A merged-/usr Debian base: /bin -> usr/bin, debianutils owning /usr/bin/which, a
// diversion of /usr/bin/tool by `wrapper`, a stat override for /usr/bin/tool.real.
layers::BaseView debian_base() {
  layers::BaseView v;
  v.begin_layer("sha256:" + std::string(64, '1'));
  for (const char* d : {"etc", "usr", "usr/bin", "usr/share", "usr/share/doc", "var", "var/lib", "var/lib/dpkg",
                        "var/lib/dpkg/info", "usr/lib", "opt"}) {
    add(v, d, '5');
  }
  add(v, "bin", '2', "", "usr/bin");
  add(v, "usr/bin/which", '0', "#!/bin/sh\n");
  add(v, "usr/share/zoneinfo", '5');
  add(v, "var/lib/dpkg/info/debianutils.list", '0', "/.\n/bin\n/bin/which\n");
  add(v, "var/lib/dpkg/status", '0',
      "Package: debianutils\nStatus: install ok installed\nVersion: 5.7-0.5\nArchitecture: amd64\n");
  add(v, "var/lib/dpkg/diversions", '0', "/usr/bin/tool\n/usr/bin/tool.real\nwrapper\n");
  add(v, "var/lib/dpkg/statoverride", '0', "root staff 4750 /usr/bin/tool.real\n");
  add(v, "etc/passwd", '0', "root:x:0:0:root:/root:/bin/sh\n");
  add(v, "etc/ld.so.conf", '0', "include /etc/ld.so.conf.d/*.conf\n");
  add(v, "etc/group", '0', "root:x:0:\nstaff:x:50:\n");
  v.finish({});
  return v;
}

debian::LockedPackage locked(const std::string& name) {
  debian::LockedPackage p;
  p.name = name;
  p.version = "1.0";
  p.architecture = "amd64";
  p.filename = "pool/" + name + ".deb";
  return p;
}

struct Unpacked {
  std::map<std::string, layers::Entry> entries;
  std::vector<std::string> said;
};

Unpacked unpack(const layers::BaseView& base, const fs::path& dir,
                const std::vector<std::pair<std::string, Deb>>& debs) {
  const auto& contents = base.contents();
  auto status = contents.find("var/lib/dpkg/status");
  fs::create_directories(dir / "staging");
  builder::DebsUnpack u(base, status == contents.end() ? "" : status->second, "amd64", dir / "staging");
  for (const auto& [name, d] : debs) {
    u.install(locked(name), build_deb(dir, name, d));
  }
  Unpacked out;
  out.entries = u.finish([&](const std::string& line) { out.said.push_back(line); });
  return out;
}

std::string content_of(const Unpacked& u, const std::string& path) {
  auto it = u.entries.find(path);
  REQUIRE_MESSAGE(it != u.entries.end(), path);
  return util::read_file(it->second.source);
}

TEST_CASE("DebsUnpack: dpkg's unpack rules against the base and the layer") {
  auto tmp = test_support::make_temp("pi-dpkg-rules-");
  layers::BaseView base = debian_base();
  int n = 0;
  auto fresh = [&] {
    fs::path d = tmp.path() / std::to_string(n++);
    fs::create_directories(d);
    return d;
  };

  SUBCASE("a base directory is never replaced by a symlink or a file") {
    util::Error e = error_of([&] { unpack(base, fresh(), {{"evil", Deb{"", {{"usr/share", "->/tmp"}}, {}}}}); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "package evil 1.0 ships /usr/share as a symlink, where the image below has the directory "
                             "/usr/share"));
    // Through /bin -> usr/bin: a file where the base's directory is.
    CHECK(contains(error_of([&] {
                     unpack(base, fresh(), {{"evil", Deb{"", {{"usr/share/zoneinfo", "x"}}, {}}}});
                   }).what(),
                   "ships /usr/share/zoneinfo as a file"));
    // A symlink to a directory is one too, but the very link it already is changes nothing.
    CHECK(contains(error_of([&] {
                     unpack(base, fresh(), {{"evil", Deb{"", {{"bin", "->/tmp"}}, {}}}});
                   }).what(),
                   "ships /bin as a symlink, where the image below has /bin, a symlink to the directory usr/bin"));
    CHECK_NOTHROW(unpack(base, fresh(), {{"merged", Deb{"", {{"bin", "->usr/bin"}}, {}}}}));
    // The legitimate twin: a directory that stays a directory, with a file in it.
    auto ok =
        unpack(base, fresh(), {{"tz", Deb{"", {{"usr/share/zoneinfo/", ""}, {"usr/share/zoneinfo/X", "tz"}}, {}}}});
    CHECK(ok.entries.at("usr/share/zoneinfo").type == layers::Entry::Type::dir);
  }

  SUBCASE("a directory of an earlier package of the layer stays one") {
    util::Error e = error_of([&] {
      unpack(
          base, fresh(),
          {{"a", Deb{"", {{"opt/tool/", ""}, {"opt/tool/x", "1"}}, {}}}, {"b", Deb{"", {{"opt/tool", "->/etc"}}, {}}}});
    });
    CHECK(contains(e.what(), "package b 1.0 ships /opt/tool as a symlink, where package a has a directory"));
  }

  SUBCASE("a base package's file is taken over only with Replaces, and its ownership moves") {
    util::Error e = error_of([&] { unpack(base, fresh(), {{"evil", Deb{"", {{"usr/bin/which", "pwned"}}, {}}}}); });
    CHECK(contains(e.what(), "package evil 1.0 ships /usr/bin/which, which is also in package debianutils 5.7-0.5 of "
                             "the base"));
    CHECK(contains(e.hint(), "Replaces: debianutils"));
    // Through the merged /usr: ./bin/which is /usr/bin/which.
    CHECK(contains(error_of([&] {
                     unpack(base, fresh(), {{"evil", Deb{"", {{"bin/which", "x"}}, {}}}});
                   }).what(),
                   "ships /bin/which, which is also in package debianutils"));
    // A version constraint the base's debianutils does not meet.
    CHECK_THROWS_AS(
        unpack(base, fresh(), {{"w", Deb{"Replaces: debianutils (<< 5.0)\n", {{"usr/bin/which", "w"}}, {}}}}),
        util::Error);
    auto ok = unpack(base, fresh(), {{"w", Deb{"Replaces: debianutils (<< 5.8)\n", {{"usr/bin/which", "w"}}, {}}}});
    CHECK(content_of(ok, "usr/bin/which") == "w");
    CHECK(content_of(ok, "var/lib/dpkg/info/debianutils.list") == "/.\n/bin\n");
    CHECK(contains(content_of(ok, "var/lib/dpkg/info/w.list"), "/usr/bin/which\n"));
  }

  SUBCASE("two packages of the layer: the second takes a file only with Replaces") {
    CHECK(contains(
        error_of([&] {
          unpack(base, fresh(), {{"a", Deb{"", {{"usr/bin/t", "a"}}, {}}}, {"b", Deb{"", {{"bin/t", "b"}}, {}}}});
        }).what(),
        "package b 1.0 ships /bin/t, which package a 1.0 of the same layer ships too"));
    auto ok = unpack(base, fresh(),
                     {{"a", Deb{"", {{"usr/bin/t", "a"}, {"usr/bin/u", "a"}}, {}}},
                      {"b", Deb{"Replaces: a\n", {{"usr/bin/t", "b"}}, {}}}});
    CHECK(content_of(ok, "usr/bin/t") == "b");
    CHECK(!contains(content_of(ok, "var/lib/dpkg/info/a.list"), "/usr/bin/t\n"));
    CHECK(contains(content_of(ok, "var/lib/dpkg/info/a.list"), "/usr/bin/u\n"));
  }

  SUBCASE("nothing is written into dpkg's or apt's own directories") {
    for (const char* path : {"var/lib/dpkg/info/libc6.list", "var/lib/dpkg/status", "var/lib/apt/lists/x_Packages",
                             "var/cache/apt/archives/x.deb"}) {
      CAPTURE(path);
      util::Error e = error_of([&] { unpack(base, fresh(), {{"evil", Deb{"", {{path, "/pwned\n"}}, {}}}}); });
      CHECK(contains(e.what(), "package evil 1.0 ships /" + std::string(path)));
      CHECK(contains(e.what(), "which dpkg and apt keep for their own records"));
    }
  }

  SUBCASE("conffiles come from the conffiles member and must be shipped as regular files") {
    auto ok = unpack(base, fresh(), {{"c", Deb{"", {{"etc/c.conf", "k=v\n"}}, {{"conffiles", "/etc/c.conf\n"}}}}});
    std::string status = content_of(ok, "var/lib/dpkg/status");
    CHECK(contains(status, "Package: c\nStatus: install ok installed\n"));
    CHECK(contains(status, "Conffiles:\n /etc/c.conf " + util::md5_hex("k=v\n") + "\n"));
    CHECK(contains(error_of([&] {
                     unpack(base, fresh(), {{"c", Deb{"", {{"etc/a", "x"}}, {{"conffiles", "/etc/passwd\n"}}}}});
                   }).what(),
                   "its conffiles member lists /etc/passwd, which the package does not ship as a regular file"));
  }

  SUBCASE("the base's diversions and stat overrides are applied") {
    auto ok = unpack(base, fresh(), {{"tool", Deb{"", {{"usr/bin/tool", "real tool"}}, {}}}});
    CHECK(ok.entries.count("usr/bin/tool") == 0);
    const layers::Entry& diverted = ok.entries.at("usr/bin/tool.real");
    CHECK(util::read_file(diverted.source) == "real tool");
    CHECK(diverted.mode == 04750);
    CHECK(diverted.owner.gid == 50);
    CHECK(diverted.owner.gname.str() == "staff");
    CHECK(contains(content_of(ok, "var/lib/dpkg/info/tool.list"), "/usr/bin/tool\n")); // as shipped
    // The diverting package itself writes the file where it is.
    auto own = unpack(base, fresh(), {{"wrapper", Deb{"", {{"usr/bin/tool", "wrapper"}}, {}}}});
    CHECK(own.entries.count("usr/bin/tool") == 1);
  }

  SUBCASE("a triggers file activating something else, or a config script, is refused") {
    CHECK(contains(
        error_of([&] {
          unpack(base, fresh(), {{"t", Deb{"", {{"usr/share/t", "x"}}, {{"triggers", "activate-noawait x\n"}}}}});
        }).what(),
        "'activate-noawait x'"));
  }
}

TEST_CASE("DebsUnpack: the ldconfig step lists a library of an ld.so.conf.d directory") {
  auto tmp = test_support::make_temp("pi-dpkg-ld-");
  std::string libc;
  for (const char* p : {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    if (fs::exists(p)) {
      libc = util::read_file(p); // a real x86-64 shared object with a SONAME (libc.so.6)
      break;
    }
  }
  if (libc.empty()) {
    MESSAGE("no x86-64 libc.so.6 here to stand for a library");
    return;
  }
  layers::BaseView base = debian_base();
  auto out =
      unpack(base, tmp.path(),
             {{"vendor",
               Deb{"",
                   {{"opt/vendor/lib/libvendor.so.6.1", libc}, {"etc/ld.so.conf.d/vendor.conf", "/opt/vendor/lib\n"}},
                   {{"triggers", "activate-noawait ldconfig\n"}}}}});
  auto cache = debian::parse_ld_cache(content_of(out, "etc/ld.so.cache"), "ours");
  REQUIRE(cache.entries.size() == 1);
  CHECK(cache.entries[0].key == "libc.so.6"); // the library's SONAME
  CHECK(cache.entries[0].value == "/opt/vendor/lib/libc.so.6");
  CHECK(cache.entries[0].flags == debian::k_ld_flags_x86_64);
  // ldconfig makes the SONAME's link when the package lacks it.
  REQUIRE(out.entries.count("opt/vendor/lib/libc.so.6") == 1);
  CHECK(out.entries.at("opt/vendor/lib/libc.so.6").link_target == "libvendor.so.6.1");
  CHECK(contains(out.said.back(), "1 of them this layer's"));
}

} // namespace unit_dpkg_rules_test
