#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "layers/cache.hpp"
#include "layers/compress.hpp"
#include "layers/docker_archive.hpp"
#include "layers/extract.hpp"
#include "layers/tar.hpp"
#include "layers/tree.hpp"
#include "layers/walk_memo.hpp"
#include "python/wheel.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>
#include <zstd.h>

namespace unit_layers_test {

namespace fs = std::filesystem;
using layers::Entry;
using test_support::contains;
using test_support::error_of;

namespace {

util::TempDir make_temp() {
  return test_support::make_temp("pi-layers-test-");
}

void write(const fs::path& p, const std::string& content, mode_t mode = 0644) {
  fs::create_directories(p.parent_path());
  util::write_file_atomic(p, content);
  REQUIRE(::chmod(p.c_str(), mode) == 0);
}

void set_mtime(const fs::path& p, int seconds_ago) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
}

layers::CopyRule rule(const fs::path& from, const std::string& to) {
  layers::CopyRule r;
  r.from = from;
  r.to = to;
  r.origin = "spec.yaml:1:1";
  return r;
}

std::vector<std::string> keys(const layers::EntrySet& set) {
  std::vector<std::string> out;
  for (const auto& [path, e] : set.entries()) {
    out.push_back(path);
  }
  return out;
}

std::string tar_bytes(const layers::EntrySet& set, std::int64_t mtime) {
  std::string out;
  layers::write_tar(set, layers::TarOptions{mtime}, [&](const char* d, std::size_t n) { out.append(d, n); });
  return out;
}

struct Header {
  std::string path;
  std::int64_t mtime = 0;
  std::int64_t uid = 0;
  std::int64_t gid = 0;
  std::string uname;
  unsigned perm = 0;
};

// Reads tar headers from memory with libarchive (for fields scan_tar does not report).
std::vector<Header> read_headers(const std::string& tar) {
  std::vector<Header> out;
  struct archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  REQUIRE(archive_read_open_memory(a, tar.data(), tar.size()) == ARCHIVE_OK);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    Header h;
    h.path = archive_entry_pathname(e);
    h.mtime = archive_entry_mtime(e);
    h.uid = archive_entry_uid(e);
    h.gid = archive_entry_gid(e);
    h.uname = archive_entry_uname(e) ? archive_entry_uname(e) : "";
    h.perm = archive_entry_perm(e);
    out.push_back(h);
  }
  archive_read_free(a);
  return out;
}

// Creates the same logical tree; `reverse` changes creation order and mtimes.
void make_tree(const fs::path& root, bool reverse) {
  std::vector<std::pair<std::string, std::string>> files = {
      {"app.py", "print('hello')\n"},
      {"pkg/__init__.py", ""},
      {"pkg/core.py", "def f():\n    return 42\n"},
      {"pkg/data/table.csv", "a,b\n1,2\n"},
      {"bin/tool", "#!/bin/sh\necho tool\n"},
  };
  if (reverse) {
    std::reverse(files.begin(), files.end());
  }
  int age = reverse ? 5000 : 10;
  for (const auto& [name, content] : files) {
    write(root / name, content, name == "bin/tool" ? 0755 : 0644);
    set_mtime(root / name, age);
    age += reverse ? -100 : 100;
  }
  fs::create_directory_symlink("pkg", root / "pkg-link");
  fs::create_hard_link(root / "app.py", root / "app-hardlink.py");
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t v = rng();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) {
      s[i + k] = static_cast<char>((v >> (8 * k)) & 0xff);
    }
  }
  return s;
}

std::string text_bytes(std::size_t n) {
  std::string s;
  std::size_t line = 0;
  while (s.size() < n) {
    s += "line " + std::to_string(line) + ": the quick brown fox jumps over the lazy dog " +
         std::to_string(line * 7919 % 1000) + "\n";
    ++line;
  }
  s.resize(n);
  return s;
}

std::string mixed_input() {
  return random_bytes(1536 * 1024, 1) + text_bytes(2 * 1024 * 1024) + random_bytes(700 * 1024 + 13, 2) +
         text_bytes(1300 * 1024 + 101);
}

struct Compressed {
  layers::BlobInfo info;
  std::string bytes;
  fs::path path;
};

Compressed compress(const std::string& input, const layers::CompressOptions& opts, const fs::path& out_path,
                    std::size_t piece = 100003) {
  Compressed c;
  c.path = out_path;
  util::AtomicFile out(out_path);
  {
    layers::LayerStream stream(opts, out);
    for (std::size_t i = 0; i < input.size(); i += piece) {
      stream.write(input.data() + i, std::min(piece, input.size() - i));
    }
    c.info = stream.finish();
  }
  out.commit();
  c.bytes = util::read_file(out_path);
  return c;
}

std::string decompress(const fs::path& p, const std::string& media_type) {
  std::string out;
  layers::decompress_file(p, media_type, [&](const char* d, std::size_t n) { out.append(d, n); });
  return out;
}

// Decodes a zstd blob with libzstd directly (independent of layers::decompress_file).
std::string zstd_decode(const std::string& blob) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{blob.data(), blob.size(), 0};
  std::size_t ret = 1;
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    ret = ZSTD_decompressStream(dctx, &o, &in);
    REQUIRE_FALSE(ZSTD_isError(ret));
    out.append(buf.data(), o.pos);
  }
  for (;;) { // drain what the decoder still holds
    ZSTD_inBuffer none{nullptr, 0, 0};
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    std::size_t r = ZSTD_decompressStream(dctx, &o, &none);
    REQUIRE_FALSE(ZSTD_isError(r));
    out.append(buf.data(), o.pos);
    if (o.pos == 0) {
      break;
    }
    ret = r;
  }
  ZSTD_freeDCtx(dctx);
  CHECK(ret == 0); // the frame was complete
  return out;
}

void check_same_info(const layers::BlobInfo& a, const layers::BlobInfo& b) {
  CHECK(a.digest == b.digest);
  CHECK(a.diff_id == b.diff_id);
  CHECK(a.size == b.size);
  CHECK(a.uncompressed_size == b.uncompressed_size);
  CHECK(a.media_type == b.media_type);
}

} // namespace

TEST_SUITE("layers") {

  TEST_CASE("extract: include globs keep what they name and what lies below a named directory") {
    CHECK(layers::included({}, "anything/at/all"));
    CHECK(layers::included({"inference.*"}, "inference.pdmodel"));
    CHECK_FALSE(layers::included({"inference.*"}, "README.txt"));
    CHECK(layers::included({"sub"}, "sub/config.json"));
    CHECK(layers::included({"sub/"}, "sub/deeper/x"));
    CHECK_FALSE(layers::included({"sub"}, "subway/x"));
    CHECK(layers::included({"*.txt"}, "a/b.txt")); // '*' crosses '/'
  }

  TEST_CASE("extract: a tar's members land inside, stripped; a member climbing out is refused before it is written") {
    util::TempDir tmp(std::filesystem::temp_directory_path());
    auto write_tar = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& files) {
      struct archive* a = archive_write_new();
      archive_write_set_format_pax_restricted(a);
      archive_write_add_filter_gzip(a);
      REQUIRE(archive_write_open_filename(a, (tmp.path() / name).c_str()) == ARCHIVE_OK);
      for (const auto& [path, data] : files) {
        struct archive_entry* e = archive_entry_new();
        archive_entry_set_pathname(e, path.c_str());
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0755);
        archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
        archive_write_header(a, e);
        archive_write_data(a, data.data(), data.size());
        archive_entry_free(e);
      }
      archive_write_close(a);
      archive_write_free(a);
    };
    write_tar("ok.tar.gz", {{"top/a/x.txt", "x"}, {"top/b.bin", "bb"}, {"toplevel", "skip"}});
    layers::ExtractOptions o;
    o.strip_components = 1;
    layers::ExtractResult r = layers::extract_archive(tmp.path() / "ok.tar.gz", tmp.path() / "out", o, "ok");
    CHECK(r.members == 2);
    CHECK(r.skipped == 1);
    CHECK(util::read_file(tmp.path() / "out/a/x.txt") == "x");
    struct stat st {};
    REQUIRE(::stat((tmp.path() / "out/b.bin").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0755);
    write_tar("bad.tar.gz", {{"top/ok", "1"}, {"top/../../evil", "2"}});
    try {
      layers::extract_archive(tmp.path() / "bad.tar.gz", tmp.path() / "bad", {}, "https://h/bad.tar.gz");
      FAIL("extracted");
    } catch (const util::Error& e) {
      CHECK(e.kind() == util::ErrorKind::integrity);
      CHECK(contains(e.what(), "https://h/bad.tar.gz: member 'top/../../evil' climbs out with '..'"));
    }
    CHECK_FALSE(std::filesystem::exists(tmp.path() / "evil"));
    CHECK_FALSE(std::filesystem::exists(tmp.path().parent_path() / "evil"));
  }

  TEST_CASE("normalize_image_path") {
    CHECK(layers::normalize_image_path("/a/./b/", "o") == "a/b");
    CHECK(layers::normalize_image_path("/a//b", "o") == "a/b");
    CHECK(layers::normalize_image_path("/a/b/../c", "o") == "a/c");
    CHECK(layers::normalize_image_path("/", "o") == "");
    CHECK(layers::normalize_image_path("/a/..", "o") == "");
    auto e = error_of([] { layers::normalize_image_path("/../etc", "spec.yaml:3:5"); });
    CHECK(e.kind() == util::ErrorKind::input);
    CHECK(contains(e.what(), "spec.yaml:3:5"));
    CHECK(contains(e.what(), "escapes the image root"));
    CHECK(error_of([] { layers::normalize_image_path("/a/../../b", "o"); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("excluded matches basenames without '/' and relative paths with '/'") {
    CHECK(layers::excluded({"*.pyc"}, "a/b/c.pyc"));
    CHECK(layers::excluded({"__pycache__"}, "pkg/__pycache__"));
    CHECK(layers::excluded({"__pycache__/"}, "pkg/__pycache__"));
    CHECK_FALSE(layers::excluded({"*.pyc"}, "a/b/c.py"));
    CHECK(layers::excluded({"secret/key.pem"}, "secret/key.pem"));
    CHECK(layers::excluded({"/secret/key.pem"}, "secret/key.pem"));
    CHECK_FALSE(layers::excluded({"secret/key.pem"}, "other/secret/key.pem"));
    CHECK(layers::excluded({"docs/*"}, "docs/a/b.md")); // '*' crosses '/'
    CHECK_FALSE(layers::excluded({}, "anything"));
    // '*' does not match a leading dot in a basename (FNM_PERIOD), but the literal name does.
    CHECK_FALSE(layers::excluded({"*"}, "a/.hidden"));
    CHECK(layers::excluded({".git"}, ".git"));
  }

  TEST_CASE("EntrySet: parents created, sorted, modes normalised, owners applied") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "app.py", "print(1)\n", 0600);
    write(src / "run.sh", "#!/bin/sh\n", 0700);
    write(src / "group-exec", "x", 0650);
    write(src / "lib" / "mod.py", "x = 1\n", 0640);
    fs::permissions(src / "lib", fs::perms::owner_all);

    layers::EntrySet set;
    auto r = rule(src, "/opt/app/");
    r.owner = layers::Owner{1000, 1001, "app", "grp"};
    set.add(r);
    layers::Owner parent_owner{0, 0, "root", "root"};
    set.finalize(parent_owner);

    const auto& es = set.entries();
    CHECK(keys(set) == std::vector<std::string>{"opt", "opt/app", "opt/app/app.py", "opt/app/group-exec", "opt/app/lib",
                                                "opt/app/lib/mod.py", "opt/app/run.sh"});
    auto k = keys(set);
    CHECK(std::is_sorted(k.begin(), k.end()));

    const Entry& opt = es.at("opt");
    CHECK(opt.type == Entry::Type::dir);
    CHECK(opt.mode == 0755);
    CHECK(opt.owner == parent_owner);

    CHECK(es.at("opt/app").type == Entry::Type::dir);
    CHECK(es.at("opt/app").owner == r.owner);
    CHECK(es.at("opt/app/app.py").mode == 0644);
    CHECK(es.at("opt/app/app.py").type == Entry::Type::file);
    CHECK(es.at("opt/app/app.py").size == 9);
    CHECK(es.at("opt/app/app.py").source == src / "app.py");
    CHECK(es.at("opt/app/app.py").owner == r.owner);
    CHECK(es.at("opt/app/run.sh").mode == 0755);
    CHECK(es.at("opt/app/group-exec").mode == 0755); // any exec bit is kept as 0755
    CHECK(es.at("opt/app/lib").mode == 0755);        // 0700 directory normalised
    CHECK(es.at("opt/app/lib/mod.py").mode == 0644); // 0640 normalised
    CHECK(set.total_size() == 9 + 10 + 1 + 6);

    SUBCASE("forced modes") {
      layers::EntrySet forced;
      auto fr = rule(src, "/x");
      fr.file_mode = 0600;
      fr.dir_mode = 0750;
      forced.add(fr);
      forced.finalize({});
      CHECK(forced.entries().at("x").mode == 0750);
      CHECK(forced.entries().at("x/lib").mode == 0750);
      CHECK(forced.entries().at("x/run.sh").mode == 0600);
      CHECK(forced.entries().at("x/app.py").mode == 0600);
    }
  }

  TEST_CASE("EntrySet: single files are copied into a directory or renamed") {
    auto tmp = make_temp();
    write(tmp.path() / "tool.py", "x", 0755);
    layers::EntrySet set;
    set.add(rule(tmp.path() / "tool.py", "/usr/local/bin/"));
    set.add(rule(tmp.path() / "tool.py", "/opt/renamed"));
    set.add(rule(tmp.path() / "tool.py", "/"));
    set.finalize({});
    CHECK(keys(set) == std::vector<std::string>{"opt", "opt/renamed", "tool.py", "usr", "usr/local", "usr/local/bin",
                                                "usr/local/bin/tool.py"});
    CHECK(set.entries().at("opt/renamed").mode == 0755);
  }

  TEST_CASE("split_entries: parts in path order, their directories with them, hard links beside their file") {
    std::map<std::string, Entry> all;
    auto add = [&](const std::string& path, Entry::Type type, std::int64_t size = 0, const std::string& target = {}) {
      Entry e;
      e.path = path;
      e.type = type;
      e.size = size;
      e.link_target = target;
      e.mode = type == Entry::Type::dir ? 0750 : 0644;
      all[path] = e;
    };
    add("a", Entry::Type::dir);
    add("a/b", Entry::Type::dir);
    add("a/b/f1", Entry::Type::file, 100);
    add("a/b/f2", Entry::Type::file, 100);
    add("a/b/s", Entry::Type::symlink, 0, "f1");
    add("a/c", Entry::Type::file, 100);
    add("a/h", Entry::Type::hardlink, 0, "a/b/f1");
    add("z", Entry::Type::file, 100);
    auto names = [](const std::map<std::string, Entry>& part) {
      std::vector<std::string> out;
      for (const auto& [path, e] : part) {
        out.push_back(path);
      }
      return out;
    };

    // 400 bytes in parts of 150: a part ends with the file that reaches 150.
    auto parts = layers::split_entries(all, 150, 16);
    REQUIRE(parts.size() == 2);
    CHECK(names(parts[0]) == std::vector<std::string>{"a", "a/b", "a/b/f1", "a/b/f2", "a/b/s", "a/h"});
    CHECK(names(parts[1]) == std::vector<std::string>{"a", "a/c", "z"});
    CHECK(parts[1].at("a").mode == 0750); // the directory again, as it is
    // Every entry is in some part, as it was.
    std::map<std::string, Entry> joined;
    for (const auto& part : parts) {
      joined.insert(part.begin(), part.end());
    }
    CHECK(names(joined) == names(all));

    // One byte a part: one file a part, up to max_parts.
    CHECK(layers::split_entries(all, 1, 16).size() == 4);
    CHECK(layers::split_entries(all, 1, 2).size() == 2);
    CHECK(layers::split_entries(all, 1, 3).size() <= 3);
    // No split when the files fit in one part, or none asked.
    CHECK(names(layers::split_entries(all, 400, 16).at(0)) == names(all));
    CHECK(layers::split_entries(all, 400, 16).size() == 1);
    CHECK(layers::split_entries(all, 0, 16).size() == 1);
    CHECK(layers::split_entries({}, 150, 16).size() == 1);
  }

  TEST_CASE("EntrySet: excludes by basename and by path") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "keep.py", "k");
    write(src / "mod.pyc", "c");
    write(src / "pkg" / "__pycache__" / "mod.cpython-311.pyc", "c");
    write(src / "pkg" / "real.py", "r");
    write(src / "secret" / "key.pem", "s");
    write(src / "other" / "secret" / "key.pem", "o");
    auto r = rule(src, "/app");
    r.exclude = {"*.pyc", "__pycache__", "secret/key.pem"};
    layers::EntrySet set;
    set.add(r);
    set.finalize({});
    CHECK(keys(set) == std::vector<std::string>{"app", "app/keep.py", "app/other", "app/other/secret",
                                                "app/other/secret/key.pem", "app/pkg", "app/pkg/real.py",
                                                "app/secret"});
  }

  TEST_CASE("EntrySet: symlinks") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "lib" / "mod.py", "m");
    write(src / "app.py", "a");

    SUBCASE("relative links inside the tree are kept") {
      fs::create_symlink("lib/mod.py", src / "link");
      fs::create_symlink("../app.py", src / "lib" / "up");
      layers::EntrySet set;
      set.add(rule(src, "/app"));
      set.finalize({});
      const auto& link = set.entries().at("app/link");
      CHECK(link.type == Entry::Type::symlink);
      CHECK(link.link_target == "lib/mod.py");
      CHECK(link.mode == 0777);
      CHECK(set.entries().at("app/lib/up").link_target == "../app.py");
    }
    SUBCASE("a relative link escaping the source tree is refused") {
      fs::create_symlink("../../etc/passwd", src / "lib" / "escape");
      layers::EntrySet set;
      auto e = error_of([&] { set.add(rule(src, "/app")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "spec.yaml:1:1"));
      CHECK(contains(e.what(), "points outside the source tree"));
      CHECK(contains(e.what(), "../../etc/passwd"));
    }
    SUBCASE("an absolute link is refused unless allow_absolute_symlinks") {
      fs::create_symlink("/usr/bin/python3", src / "python");
      layers::EntrySet refused;
      auto e = error_of([&] { refused.add(rule(src, "/app")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "/usr/bin/python3"));
      CHECK(contains(e.hint(), "allow_absolute_symlinks"));

      layers::EntrySet allowed;
      auto r = rule(src, "/app");
      r.allow_absolute_symlinks = true;
      allowed.add(r);
      allowed.finalize({});
      CHECK(allowed.entries().at("app/python").type == Entry::Type::symlink);
      CHECK(allowed.entries().at("app/python").link_target == "/usr/bin/python3");
    }
    SUBCASE("excluding an escaping link avoids the error") {
      fs::create_symlink("/etc/passwd", src / "bad");
      auto r = rule(src, "/app");
      r.exclude = {"bad"};
      layers::EntrySet set;
      CHECK_NOTHROW(set.add(r));
      CHECK(set.entries().count("app/bad") == 0);
    }
  }

  TEST_CASE("EntrySet: directory rules") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "a.py", "a");
    layers::CopyRule d;
    d.to = "/data/models/";
    d.directory = true;
    d.dir_mode = 0700;
    d.owner = layers::Owner{1000, 1000, {}, {}};
    d.origin = "spec.yaml:4:9";

    SUBCASE("the directory, empty, with its parents") {
      layers::EntrySet set;
      set.add(d);
      set.finalize({});
      const auto& e = set.entries().at("data/models");
      CHECK(e.type == Entry::Type::dir);
      CHECK(e.mode == 0700);
      CHECK(e.owner.uid == 1000);
      CHECK(set.entries().at("data").type == Entry::Type::dir);
      CHECK(set.entries().at("data").mode == 0755);
      CHECK(set.entries().at("data").owner.uid == 0);
      CHECK(set.entries().size() == 2);
    }
    SUBCASE("its mode and owner win over a directory a copy rule made there, before or after") {
      layers::EntrySet before;
      before.add(rule(src, "/data/models/"));
      before.add(d);
      before.finalize({});
      CHECK(before.entries().at("data/models").mode == 0700);
      CHECK(before.entries().at("data/models/a.py").type == Entry::Type::file);
      layers::EntrySet after;
      after.add(d);
      after.add(rule(src, "/data/models/"));
      after.finalize({});
      CHECK(after.entries().at("data/models").mode == 0700);
      CHECK(after.entries().at("data/models").owner.uid == 1000);
    }
    SUBCASE("a file at the path is a clash naming the rule; '/' makes nothing") {
      layers::EntrySet set;
      set.add(rule(src / "a.py", "/data/models"));
      auto e = error_of([&] { set.add(d); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "spec.yaml:4:9"));
      CHECK(contains(e.what(), "both a directory and a file"));
      layers::CopyRule root = d;
      root.to = "/";
      layers::EntrySet none;
      CHECK(contains(error_of([&] { none.add(root); }).what(), "makes nothing"));
    }
  }

  TEST_CASE("EntrySet: hardlinks are detected") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "a.bin", "same inode content");
    fs::create_hard_link(src / "a.bin", src / "b.bin");
    write(src / "c.bin", "same inode content"); // equal bytes, different inode
    layers::EntrySet set;
    set.add(rule(src, "/d"));
    set.finalize({});
    const auto& a = set.entries().at("d/a.bin");
    const auto& b = set.entries().at("d/b.bin");
    const auto& c = set.entries().at("d/c.bin");
    CHECK(a.type == Entry::Type::file);
    CHECK(a.size == 18);
    CHECK(b.type == Entry::Type::hardlink);
    CHECK(b.link_target == "d/a.bin");
    CHECK(b.size == 0);
    CHECK(c.type == Entry::Type::file);
    CHECK(set.total_size() == 36);
  }

  TEST_CASE("EntrySet: one file copied to two paths with other metadata is not a hard link") {
    auto tmp = make_temp();
    fs::path src = tmp.path() / "src";
    write(src / "train.py", "print('train')\n");
    layers::EntrySet set;
    set.add(rule(src, "/app/"));
    auto entry_point = rule(src / "train.py", "/usr/local/bin/train");
    entry_point.file_mode = 0755;
    entry_point.owner.uid = 1000;
    entry_point.owner.gid = 1000;
    set.add(entry_point);
    auto same = rule(src / "train.py", "/srv/train.py"); // same mode and owner as /app/train.py
    set.add(same);
    set.finalize({});
    const auto& app = set.entries().at("app/train.py");
    const auto& bin = set.entries().at("usr/local/bin/train");
    const auto& srv = set.entries().at("srv/train.py");
    CHECK(app.type == Entry::Type::file);
    CHECK(app.mode == 0644);
    REQUIRE(bin.type == Entry::Type::file); // its own data and header, not a link to app/train.py
    CHECK(bin.mode == 0755);
    CHECK(bin.owner.uid == 1000);
    CHECK(bin.size == app.size);
    CHECK(srv.type == Entry::Type::hardlink); // identical metadata: a link is still fine
    CHECK(srv.link_target == "app/train.py");
  }

  TEST_CASE("EntrySet: errors") {
    auto tmp = make_temp();
    write(tmp.path() / "src" / "f", "x");

    SUBCASE("to: with ../ escaping the root") {
      layers::EntrySet set;
      auto e = error_of([&] { set.add(rule(tmp.path() / "src", "/app/../../etc")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "escapes the image root"));
      CHECK(set.entries().empty());
    }
    SUBCASE("missing source") {
      layers::EntrySet set;
      auto e = error_of([&] { set.add(rule(tmp.path() / "nope", "/app")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "does not exist"));
    }
    SUBCASE("a fifo is refused") {
      REQUIRE(::mkfifo((tmp.path() / "src" / "pipe").c_str(), 0644) == 0);
      layers::EntrySet set;
      auto e = error_of([&] { set.add(rule(tmp.path() / "src", "/app")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "fifo"));
    }
    SUBCASE("one path both file and directory") {
      layers::EntrySet set;
      set.add(rule(tmp.path() / "src" / "f", "/x"));
      auto e = error_of([&] { set.add(rule(tmp.path() / "src", "/x")); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "both a directory and a file"));
    }
    SUBCASE("a later rule overrides an earlier file") {
      write(tmp.path() / "g", "longer content");
      layers::EntrySet set;
      set.add(rule(tmp.path() / "src" / "f", "/x"));
      set.add(rule(tmp.path() / "g", "/x"));
      CHECK(set.entries().at("x").source == tmp.path() / "g");
      CHECK(set.entries().at("x").size == 14);
    }
  }

  TEST_CASE("write_tar is byte-identical for trees created in different order with different mtimes") {
    auto t1 = make_temp();
    auto t2 = make_temp();
    make_tree(t1.path() / "src", false);
    make_tree(t2.path() / "src", true);
    REQUIRE(fs::last_write_time(t1.path() / "src" / "app.py") != fs::last_write_time(t2.path() / "src" / "app.py"));

    auto build = [](const fs::path& src) {
      layers::EntrySet set;
      auto r = rule(src, "/app");
      r.owner = layers::Owner{1000, 1000, "app", "app"};
      set.add(r);
      set.finalize({});
      return set;
    };
    auto s1 = build(t1.path() / "src");
    auto s2 = build(t2.path() / "src");
    std::string a = tar_bytes(s1, 315532800);
    std::string b = tar_bytes(s2, 315532800);
    CHECK(a.size() % 512 == 0);
    CHECK(a.size() > 1024);
    CHECK(a == b);
    // The epoch matters: it is every entry's mtime.
    CHECK(tar_bytes(s1, 315532801) != a);

    auto headers = read_headers(a);
    REQUIRE(headers.size() == s1.entries().size());
    for (const auto& h : headers) {
      CAPTURE(h.path);
      CHECK(h.mtime == 315532800);
      CHECK(h.uid == 1000);
      CHECK(h.gid == 1000);
      CHECK(h.uname == "app");
    }
    CHECK(headers.front().path == "app/");
  }

  TEST_CASE("scan_tar reads back the members write_tar produced") {
    auto tmp = make_temp();
    make_tree(tmp.path() / "src", false);
    layers::EntrySet set;
    set.add(rule(tmp.path() / "src", "/srv/app/"));
    set.finalize({});
    std::string tar = tar_bytes(set, 0);
    util::write_file_atomic(tmp.path() / "layer.tar", tar);

    std::map<std::string, layers::TarMember> members;
    std::map<std::string, std::string> contents;
    std::vector<std::string> order;
    layers::scan_tar(
        tmp.path() / "layer.tar",
        [&](const layers::TarMember& m) {
          members[m.path] = m;
          order.push_back(m.path);
          return true;
        },
        [&](const layers::TarMember& m, const std::string& content) { contents[m.path] = content; });

    CHECK(order == keys(set));
    CHECK(members.at("srv").type == '5');
    CHECK(members.at("srv/app").type == '5');
    CHECK(members.at("srv/app/app-hardlink.py").size == 15);
    CHECK(members.at("srv/app/pkg/core.py").type == '0');
    CHECK(members.at("srv/app/pkg-link").type == '2');
    CHECK(members.at("srv/app/pkg-link").link_target == "pkg");
    // "app-hardlink.py" sorts before "app.py", so it holds the data and app.py links to it.
    CHECK(members.at("srv/app/app-hardlink.py").type == '0');
    CHECK(members.at("srv/app/app.py").type == '1');
    CHECK(members.at("srv/app/app.py").link_target == "srv/app/app-hardlink.py");
    CHECK(contents.at("srv/app/app-hardlink.py") == "print('hello')\n");
    CHECK(contents.at("srv/app/pkg/core.py") == "def f():\n    return 42\n");
    CHECK(contents.at("srv/app/pkg/__init__.py").empty());
    CHECK(contents.count("srv/app/app.py") == 0); // hardlinks carry no content
    CHECK(contents.count("srv/app/pkg") == 0);

    SUBCASE("also through gzip compression") {
      layers::CompressOptions opts;
      auto c = compress(tar, opts, tmp.path() / "layer.tar.gz");
      std::vector<std::string> gz_order;
      layers::scan_tar(
          c.path,
          [&](const layers::TarMember& m) {
            gz_order.push_back(m.path);
            return false;
          },
          [](const layers::TarMember&, const std::string&) {});
      CHECK(gz_order == order);
    }
    SUBCASE("a corrupt tar is an error") {
      util::write_file_atomic(tmp.path() / "bad.tar", tar.substr(0, 700));
      CHECK_THROWS_AS(layers::scan_tar(
                          tmp.path() / "bad.tar", [](const layers::TarMember&) { return true; },
                          [](const layers::TarMember&, const std::string&) {}),
                      util::Error);
    }
  }

  TEST_CASE("write_tar refuses a source whose size changed after it was gathered") {
    auto tmp = make_temp();
    write(tmp.path() / "src" / "f", "12345");
    layers::EntrySet set;
    set.add(rule(tmp.path() / "src", "/a"));
    set.finalize({});
    SUBCASE("grew") {
      write(tmp.path() / "src" / "f", "1234567890");
      auto e = error_of([&] { tar_bytes(set, 0); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "grew"));
    }
    SUBCASE("shrank") {
      write(tmp.path() / "src" / "f", "1");
      auto e = error_of([&] { tar_bytes(set, 0); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "shrank"));
    }
  }

  TEST_CASE("TarBuilder writes generated members") {
    auto tmp = make_temp();
    std::string tar;
    {
      layers::TarBuilder tb(42, [&](const char* d, std::size_t n) { tar.append(d, n); });
      tb.add_dir("dir");
      tb.add_bytes("dir/a.txt", "alpha");
      tb.add_stream("dir/b.txt", 4, [](const layers::ByteSink& sink) { sink("beta", 4); });
      auto e =
          error_of([&] { tb.add_stream("dir/c.txt", 10, [](const layers::ByteSink& sink) { sink("short", 5); }); });
      CHECK(e.kind() == util::ErrorKind::integrity);
    }
    // The archive was left unfinished by the error above; check what was written.
    auto headers = read_headers(tar);
    REQUIRE(headers.size() >= 3);
    CHECK(headers[0].path == "dir/");
    CHECK(headers[1].path == "dir/a.txt");
    CHECK(headers[1].mtime == 42);
    CHECK(headers[2].path == "dir/b.txt");
  }

  TEST_CASE("LayerStream gzip: round trip, diff_id and digest") {
    auto tmp = make_temp();
    std::string input = text_bytes(300000) + random_bytes(50000, 9);
    layers::CompressOptions opts;
    auto c = compress(input, opts, tmp.path() / "blob");
    CHECK(decompress(c.path, c.info.media_type) == input);
    CHECK(c.info.media_type == "application/vnd.oci.image.layer.v1.tar+gzip");
    CHECK(c.info.diff_id == oci::Digest::sha256(util::sha256_hex(input)));
    CHECK(c.info.digest == oci::Digest::sha256(util::sha256_hex(c.bytes)));
    CHECK(c.info.size == static_cast<std::int64_t>(c.bytes.size()));
    CHECK(c.info.uncompressed_size == static_cast<std::int64_t>(input.size()));
    CHECK(c.bytes.size() < input.size());

    SUBCASE("fixed gzip header: no name, mtime 0, OS 255") {
      REQUIRE(c.bytes.size() > 18);
      const unsigned char want[10] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff};
      for (int i = 0; i < 10; ++i) {
        CAPTURE(i);
        CHECK(static_cast<unsigned char>(c.bytes[static_cast<std::size_t>(i)]) == want[i]);
      }
      // The trailer's ISIZE is the input length (little endian).
      std::size_t n = c.bytes.size();
      std::uint32_t isize = 0;
      for (int i = 0; i < 4; ++i) {
        isize |= static_cast<std::uint32_t>(static_cast<unsigned char>(c.bytes[n - 4 + static_cast<std::size_t>(i)]))
                 << (8 * i);
      }
      CHECK(isize == input.size());
    }
    SUBCASE("the same input fed in other piece sizes gives the same bytes") {
      auto d = compress(input, opts, tmp.path() / "blob2", 7);
      CHECK(d.bytes == c.bytes);
    }
    SUBCASE("the level changes the output") {
      layers::CompressOptions fast;
      fast.level = 1;
      auto d = compress(input, fast, tmp.path() / "blob3");
      CHECK(d.info.diff_id == c.info.diff_id);
      CHECK(decompress(d.path, d.info.media_type) == input);
    }
    SUBCASE("a truncated blob is an integrity error") {
      util::write_file_atomic(tmp.path() / "cut", c.bytes.substr(0, c.bytes.size() - 10));
      auto e = error_of([&] { decompress(tmp.path() / "cut", c.info.media_type); });
      CHECK(e.kind() == util::ErrorKind::integrity);
    }
  }

  TEST_CASE("BlobCheck: a layer blob against its record, in any piece sizes") {
    auto tmp = make_temp();
    std::string tar;
    {
      layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
      tb.add_bytes("app/train.py", text_bytes(200000));
      tb.finish();
    }
    for (auto kind : {oci::Compression::gzip, oci::Compression::zstd, oci::Compression::none}) {
      CAPTURE(static_cast<int>(kind));
      layers::CompressOptions opts;
      opts.kind = kind;
      auto c = compress(tar, opts, tmp.path() / "blob");
      CHECK(layers::blob_mismatch(c.path, c.info).empty());
      for (std::size_t piece : {1, 3, 5, 4096}) {
        CAPTURE(piece);
        layers::BlobCheck check(c.info);
        for (std::size_t i = 0; i < c.bytes.size(); i += piece) {
          check.write(c.bytes.data() + i, std::min(piece, c.bytes.size() - i));
        }
        CHECK(check.finish().empty());
      }
      CHECK(layers::blob_head_mismatch(c.bytes.substr(0, 65536), c.info.media_type).empty());

      layers::BlobInfo wrong = c.info;
      wrong.diff_id = oci::Digest::sha256(util::sha256_hex("x"));
      CHECK(contains(layers::blob_mismatch(c.path, wrong), "its record's diff_id is"));
      wrong = c.info;
      wrong.uncompressed_size += 1;
      CHECK(contains(layers::blob_mismatch(c.path, wrong), "bytes of content, its record says"));
      wrong = c.info;
      wrong.digest = oci::Digest::sha256(util::sha256_hex("y"));
      CHECK(contains(layers::blob_mismatch(c.path, wrong), "its record names"));
    }
    // A gzip blob whose record says zstd (or the other way), and a gzip of something
    // that is not a tar.
    auto gz = compress(tar, layers::CompressOptions{}, tmp.path() / "gz");
    layers::BlobInfo as_zstd = gz.info;
    as_zstd.media_type = layers::media_type_for(oci::Compression::zstd);
    CHECK(contains(layers::blob_mismatch(gz.path, as_zstd), "is not zstd"));
    CHECK(contains(layers::blob_head_mismatch(gz.bytes.substr(0, 100), as_zstd.media_type), "is not zstd"));
    auto text = compress(text_bytes(100000), layers::CompressOptions{}, tmp.path() / "text");
    CHECK(contains(layers::blob_head_mismatch(text.bytes, text.info.media_type), "tar header"));
    CHECK(layers::blob_mismatch(text.path, text.info).empty()); // the whole check does not ask for a tar
  }

  TEST_CASE("a docker-archive's RepoTags must each be REPOSITORY:TAG") {
    auto tmp = make_temp();
    auto archive = [&](const std::string& repo_tag) {
      std::string tar;
      layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
      tb.add_bytes("config.json", R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}})");
      tb.add_bytes("manifest.json",
                   nlohmann::json::array(
                       {{{"Config", "config.json"}, {"RepoTags", {repo_tag}}, {"Layers", nlohmann::json::array()}}})
                       .dump());
      tb.finish();
      fs::path f = tmp.path() / "a.tar";
      util::write_file_atomic(f, tar);
      return f;
    };
    CHECK(layers::ArchiveImage(archive("team/app:v1"), "a").repo_tags() == std::vector<std::string>{"team/app:v1"});
    CHECK(layers::ArchiveImage(archive("ubuntu:22.04"), "a").repo_tags().size() == 1);
    for (const char* bad : {"x/y:v1 --label evil=1", "x/y",
                            "x/y@sha256:"
                            "0000000000000000000000000000000000000000000000000000000000000000",
                            ""}) {
      CAPTURE(bad);
      auto e = error_of([&] { layers::ArchiveImage(archive(bad), "a"); });
      CHECK(e.kind() == util::ErrorKind::input);
      CHECK(contains(e.what(), "RepoTags entry"));
    }
  }

  TEST_CASE("LayerStream gzip: empty input") {
    auto tmp = make_temp();
    auto c = compress("", layers::CompressOptions{}, tmp.path() / "empty");
    CHECK(decompress(c.path, c.info.media_type).empty());
    CHECK(c.info.diff_id.hex == util::sha256_hex(""));
    CHECK(c.info.uncompressed_size == 0);
  }

  TEST_CASE("LayerStream gzip: output is identical for 1, 2 and 3 threads on a multi-MiB mixed input") {
    auto tmp = make_temp();
    std::string input = mixed_input();
    REQUIRE(input.size() > 5 * 1024 * 1024);
    layers::CompressOptions opts;
    opts.threads = 1;
    auto one = compress(input, opts, tmp.path() / "t1");
    opts.threads = 2;
    auto two = compress(input, opts, tmp.path() / "t2");
    opts.threads = 3;
    auto three = compress(input, opts, tmp.path() / "t3");
    CHECK(one.bytes == two.bytes);
    CHECK(one.bytes == three.bytes);
    check_same_info(one.info, two.info);
    check_same_info(one.info, three.info);
    CHECK(decompress(two.path, two.info.media_type) == input);
    CHECK(one.info.diff_id.hex == util::sha256_hex(input));
    // The text parts compress; the random parts do not grow much.
    CHECK(one.info.size < static_cast<std::int64_t>(input.size()));
  }

  TEST_CASE("LayerStream gzip: an incompressible chunk is stored, barely larger than the input") {
    auto tmp = make_temp();
    std::string input = random_bytes(3 * 1024 * 1024 + 4321, 77);
    auto c = compress(input, layers::CompressOptions{}, tmp.path() / "rnd");
    auto in = static_cast<std::int64_t>(input.size());
    CHECK(c.info.size > in);
    CHECK(c.info.size <= in + in / 1000 + 64); // 5 bytes per 64 KiB block + header/trailer
    CHECK(decompress(c.path, c.info.media_type) == input);
  }

  TEST_CASE("LayerStream zstd: round trip and identical output for 1 and 2 threads") {
    auto tmp = make_temp();
    std::string input = mixed_input();
    layers::CompressOptions opts;
    opts.kind = layers::Compression::zstd;
    opts.level = 3;
    opts.threads = 1;
    auto one = compress(input, opts, tmp.path() / "z1");
    opts.threads = 2;
    auto two = compress(input, opts, tmp.path() / "z2");
    CHECK(one.bytes == two.bytes);
    check_same_info(one.info, two.info);
    CHECK(one.info.media_type == "application/vnd.oci.image.layer.v1.tar+zstd");
    CHECK(one.info.diff_id.hex == util::sha256_hex(input));
    CHECK(one.info.digest.hex == util::sha256_hex(one.bytes));
    CHECK(one.info.size < static_cast<std::int64_t>(input.size()));
    // Round trip both with libzstd directly and through layers::decompress_file.
    CHECK(zstd_decode(one.bytes) == input);
    CHECK(decompress(one.path, one.info.media_type) == input);
    auto empty = compress("", opts, tmp.path() / "zempty");
    CHECK(decompress(empty.path, empty.info.media_type).empty());
    // zstd frame magic.
    CHECK(one.bytes.substr(0, 4) == std::string("\x28\xb5\x2f\xfd", 4));
  }

  TEST_CASE("decompress_file reports a truncated zstd blob as an integrity error") {
    auto tmp = make_temp();
    layers::CompressOptions opts;
    opts.kind = layers::Compression::zstd;
    auto c = compress(text_bytes(200000), opts, tmp.path() / "z");
    std::string cut = c.bytes.substr(0, c.bytes.size() / 2);
    util::write_file_atomic(tmp.path() / "cut", cut);
    CHECK(error_of([&] { decompress(tmp.path() / "cut", c.info.media_type); }).kind() == util::ErrorKind::integrity);
  }

  TEST_CASE("LayerStream none: output is the input") {
    auto tmp = make_temp();
    std::string input = text_bytes(12345);
    layers::CompressOptions opts;
    opts.kind = layers::Compression::none;
    auto c = compress(input, opts, tmp.path() / "plain");
    CHECK(c.bytes == input);
    CHECK(c.info.digest == c.info.diff_id);
    CHECK(c.info.media_type == "application/vnd.oci.image.layer.v1.tar");
    CHECK(decompress(c.path, c.info.media_type) == input);
  }

  TEST_CASE("LayerStream refuses out-of-range levels; media types map both ways") {
    auto tmp = make_temp();
    util::AtomicFile out(tmp.path() / "x");
    layers::CompressOptions gz;
    gz.level = 10;
    CHECK(error_of([&] { layers::LayerStream s(gz, out); }).kind() == util::ErrorKind::input);
    layers::CompressOptions zs;
    zs.kind = layers::Compression::zstd;
    zs.level = 20;
    CHECK(error_of([&] { layers::LayerStream s(zs, out); }).kind() == util::ErrorKind::input);

    for (auto c : {layers::Compression::gzip, layers::Compression::zstd, layers::Compression::none}) {
      CHECK(layers::compression_from_media_type(layers::media_type_for(c)) == c);
    }
    CHECK(layers::compression_from_media_type(oci::media::k_docker_layer_gzip) == layers::Compression::gzip);
    CHECK(error_of([] { layers::compression_from_media_type("text/plain"); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("LayerCache get_or_build: built once, then reused") {
    auto tmp = make_temp();
    layers::LayerCache cache(tmp.path() / "cache");
    std::string input = text_bytes(200000);
    int calls = 0;
    auto produce = [&](util::AtomicFile& out, nlohmann::json& extra) {
      ++calls;
      extra["entries"] = 7;
      layers::LayerStream s(layers::CompressOptions{}, out);
      s.write(input.data(), input.size());
      return s.finish();
    };
    std::string key(64, 'a');

    CHECK_FALSE(cache.lookup(key).has_value());
    bool rebuilt = false;
    nlohmann::json extra1;
    auto first = cache.get_or_build(key, produce, rebuilt, extra1);
    CHECK(rebuilt);
    CHECK(calls == 1);
    CHECK(extra1["entries"] == 7);
    CHECK(cache.blobs().has(first.digest));
    CHECK(static_cast<std::int64_t>(fs::file_size(cache.blobs().blob_path(first.digest))) == first.size);
    CHECK(util::sha256_file_hex(cache.blobs().blob_path(first.digest)) == first.digest.hex);
    CHECK(first.diff_id.hex == util::sha256_hex(input));
    CHECK(cache.size_bytes() == first.size);

    rebuilt = true;
    nlohmann::json extra2;
    auto second = cache.get_or_build(key, produce, rebuilt, extra2);
    CHECK_FALSE(rebuilt);
    CHECK(calls == 1); // produce not called
    check_same_info(first, second);
    CHECK(extra2["entries"] == 7);

    auto looked = cache.lookup(key);
    REQUIRE(looked.has_value());
    check_same_info(first, *looked);

    SUBCASE("a second key producing the same bytes shares the blob") {
      nlohmann::json extra3;
      auto third = cache.get_or_build(std::string(64, 'b'), produce, rebuilt, extra3);
      CHECK(rebuilt);
      CHECK(calls == 2);
      check_same_info(first, third);
      std::size_t blobs = 0;
      for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path() / "cache" / "blobs" / "sha256")) {
        ++blobs;
      }
      CHECK(blobs == 1);
      CHECK(fs::is_empty(tmp.path() / "cache" / ".tmp"));

      auto pr = cache.prune(0);
      CHECK(pr.layers_removed == 2);
      CHECK(pr.blobs_removed == 1);
      CHECK(pr.bytes_before == first.size);
      CHECK(pr.bytes_after == 0);
    }
    SUBCASE("a missing blob is a miss and is rebuilt") {
      fs::remove(cache.blobs().blob_path(first.digest));
      CHECK_FALSE(cache.lookup(key).has_value());
      nlohmann::json extra3;
      auto again = cache.get_or_build(key, produce, rebuilt, extra3);
      CHECK(rebuilt);
      CHECK(calls == 2);
      check_same_info(first, again);
    }
    SUBCASE("prune with a large limit keeps everything") {
      auto pr = cache.prune(std::int64_t{1} << 40);
      CHECK(pr.layers_removed == 0);
      CHECK(pr.blobs_removed == 0);
      CHECK(pr.bytes_after == pr.bytes_before);
      CHECK(cache.lookup(key).has_value());
    }
    SUBCASE("prune with max 0 removes everything") {
      auto pr = cache.prune(0);
      CHECK(pr.layers_removed == 1);
      CHECK(pr.blobs_removed == 1);
      CHECK(pr.bytes_before == first.size);
      CHECK(pr.bytes_after == 0);
      CHECK(cache.size_bytes() == 0);
      CHECK_FALSE(cache.lookup(key).has_value());
      CHECK(fs::is_empty(tmp.path() / "cache" / "keys"));
      CHECK(fs::is_empty(tmp.path() / "cache" / "blobs" / "sha256"));
      // And it is rebuilt afterwards.
      nlohmann::json extra3;
      cache.get_or_build(key, produce, rebuilt, extra3);
      CHECK(rebuilt);
      CHECK(calls == 2);
    }
  }

  TEST_CASE("LayerCache: a failing producer leaves no key and no blob") {
    auto tmp = make_temp();
    layers::LayerCache cache(tmp.path() / "cache");
    bool rebuilt = false;
    nlohmann::json extra;
    auto e = error_of([&] {
      cache.get_or_build(
          "k",
          [](util::AtomicFile& out, nlohmann::json&) -> layers::BlobInfo {
            out.write("partial");
            throw util::Error(util::ErrorKind::input, "source vanished");
          },
          rebuilt, extra);
    });
    CHECK(contains(e.what(), "source vanished"));
    CHECK_FALSE(cache.lookup("k").has_value());
    CHECK(fs::is_empty(tmp.path() / "cache" / "blobs" / "sha256"));
    CHECK(fs::is_empty(tmp.path() / "cache" / ".tmp"));
  }

  TEST_CASE("LayerCache: a typed record is stored beside the blob and read back on a hit") {
    auto tmp = make_temp();
    layers::LayerCache cache(tmp.path() / "cache");
    std::string input = text_bytes(5000);
    python::WheelInventory inv;
    inv.wheels.push_back({"purepkg", "1.0", "purepkg-1.0-py3-none-any.whl", std::string(64, 'c'), 4});
    int calls = 0;
    auto produce = [&](util::AtomicFile& out, layers::LayerRecord& rec) {
      ++calls;
      rec.entries = 12;
      rec.wheels = python::to_json(inv);
      layers::LayerStream s(layers::CompressOptions{}, out);
      s.write(input.data(), input.size());
      return s.finish();
    };
    std::string key(64, 'd');
    bool rebuilt = false;
    layers::LayerRecord first;
    cache.get_or_build(key, produce, rebuilt, first);
    CHECK(rebuilt);
    layers::LayerRecord second;
    cache.get_or_build(key, produce, rebuilt, second);
    CHECK_FALSE(rebuilt);
    CHECK(calls == 1);
    REQUIRE(second.entries.has_value());
    CHECK(*second.entries == 12);
    REQUIRE(second.wheels.has_value());
    auto back = python::wheel_inventory_from_json(*second.wheels);
    REQUIRE(back.wheels.size() == 1);
    CHECK(back.wheels[0].filename == "purepkg-1.0-py3-none-any.whl");
    CHECK(back.wheels[0].files == 4);

    // The stored (JSON) form: only the fields that are set.
    nlohmann::json extra;
    REQUIRE(cache.lookup(key, &extra).has_value());
    CHECK(extra == layers::to_json(second));
    CHECK(extra.dump() ==
          R"({"entries":12,"wheels":[{"filename":"purepkg-1.0-py3-none-any.whl","files":4,)"
          R"("name":"purepkg","sha256":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",)"
          R"("version":"1.0"}]})");
    CHECK(layers::to_json(layers::LayerRecord{}) == nlohmann::json::object());
    auto copy_only = layers::layer_record_from_json(nlohmann::json::parse(R"({"entries":3})"));
    CHECK(copy_only.entries == std::optional<std::size_t>(3));
    CHECK_FALSE(copy_only.wheels.has_value());

    SUBCASE("a record that does not parse is a miss, and is rebuilt") {
      std::vector<std::string> logged;
      layers::LayerCache logging(tmp.path() / "cache", [&](const std::string& l) { logged.push_back(l); });
      nlohmann::json bad = nlohmann::json::parse(util::read_file(tmp.path() / "cache" / "keys" / (key + ".json")));
      bad["extra"]["wheels"] = "not a list";
      util::write_file_atomic(tmp.path() / "cache" / "keys" / (key + ".json"), bad.dump());
      layers::LayerRecord third;
      logging.get_or_build(key, produce, rebuilt, third);
      CHECK(rebuilt);
      CHECK(calls == 2);
      REQUIRE(third.wheels.has_value());
      CHECK(python::wheel_inventory_from_json(*third.wheels).wheels.size() == 1);
      REQUIRE(logged.size() == 1);
      CHECK(contains(logged[0], "ignoring key file"));
    }
  }

  TEST_CASE("walk memo: what a walk stat'ed, written and read back; any difference is seen") {
    auto tmp = make_temp();
    const fs::path src = tmp.path() / "src";
    write(src / "a.txt", "a");
    write(src / "odd\nname\t:1", "newline and a colon in a name");
    write(src / "sub" / "b.txt", "b");
    fs::create_symlink("a.txt", src / "sub" / "link");
    fs::create_directories(src / "skipped");
    write(src / "skipped" / "c.txt", "c");

    layers::WalkMemo memo;
    layers::EntrySet set;
    set.set_threads(2);
    set.set_walk_log(&memo.log);
    layers::CopyRule rule;
    rule.from = src;
    rule.to = "/app/";
    rule.exclude = {"skipped"};
    set.add(rule);
    REQUIRE(memo.log.roots.size() == 1);
    CHECK(memo.log.roots[0].first == src.string());
    // src and sub were read; the excluded directory was neither stat'ed nor read.
    REQUIRE(memo.log.dirs.size() == 2);
    std::size_t children = 0;
    for (const auto& d : memo.log.dirs) {
      CHECK_FALSE(contains(d.host, "skipped"));
      for (const auto& c : d.children) {
        CHECK(c.name != "skipped");
      }
      children += d.children.size();
    }
    CHECK(children == 5); // a.txt, the odd name and sub; b.txt and link in sub
    memo.key = "k1";
    memo.landing = "below";
    memo.tree = nlohmann::json::array({nlohmann::json::array({"app", "5", 493, 0, 0, "", "", ""})});
    memo.links = {"usr/local\nlib"};
    const fs::path file = tmp.path() / "walks" / "m";
    layers::write_walk_memo(file, memo);
    CHECK(layers::walk_memo_key(file) == "k1");

    auto back = layers::read_walk_memo(file);
    REQUIRE(back.has_value());
    CHECK(back->key == "k1");
    CHECK(back->landing == "below");
    CHECK(back->tree == memo.tree);
    CHECK(back->links == memo.links);
    REQUIRE(back->log.dirs.size() == memo.log.dirs.size());
    for (std::size_t i = 0; i < memo.log.dirs.size(); ++i) {
      CHECK(back->log.dirs[i].host == memo.log.dirs[i].host);
      REQUIRE(back->log.dirs[i].children.size() == memo.log.dirs[i].children.size());
      for (std::size_t c = 0; c < memo.log.dirs[i].children.size(); ++c) {
        CHECK(back->log.dirs[i].children[c].name == memo.log.dirs[i].children[c].name);
        CHECK(back->log.dirs[i].children[c].sig == memo.log.dirs[i].children[c].sig);
      }
    }
    CHECK(layers::walk_unchanged(back->log, 1));
    CHECK(layers::walk_unchanged(back->log, 4));

    SUBCASE("every truncation of the file is refused, not half read") {
      std::string text = util::read_file(file);
      for (std::size_t n = 0; n < text.size(); n += 7) {
        util::write_file_atomic(file, text.substr(0, n));
        CHECK_FALSE(layers::read_walk_memo(file).has_value());
      }
      util::write_file_atomic(file, text + "x");
      CHECK_FALSE(layers::read_walk_memo(file).has_value());
      fs::remove(file);
      CHECK_FALSE(layers::read_walk_memo(file).has_value());
      CHECK(layers::walk_memo_key(file).empty());
    }
    SUBCASE("a new file in an excluded directory is no change; one beside it is") {
      write(src / "skipped" / "d.txt", "d");
      CHECK(layers::walk_unchanged(memo.log, 2));
      write(src / "sub" / "d.txt", "d");
      CHECK_FALSE(layers::walk_unchanged(memo.log, 2));
    }
    SUBCASE("a rewritten file of the same size") {
      std::ofstream(src / "sub" / "b.txt", std::ios::in | std::ios::out | std::ios::binary) << "B";
      CHECK_FALSE(layers::walk_unchanged(memo.log, 2));
    }
    SUBCASE("the source directory replaced") {
      fs::rename(src, tmp.path() / "old");
      fs::create_directories(src);
      CHECK_FALSE(layers::walk_unchanged(memo.log, 2));
    }
    SUBCASE("a directory that went") {
      fs::remove_all(src / "sub");
      CHECK_FALSE(layers::walk_unchanged(memo.log, 2));
    }
  }

} // TEST_SUITE

TEST_CASE("add_missing_parents creates every missing ancestor once, siblings or not, and keeps present ones") {
  std::map<std::string, layers::Entry> in;
  auto file = [&](const std::string& p) {
    layers::Entry e;
    e.path = p;
    in.emplace(p, e);
  };
  layers::Entry x;
  x.path = "x";
  x.type = layers::Entry::Type::dir;
  x.mode = 0700;
  in.emplace("x", x);
  for (const char* p : {"x/y/z/f1", "x/y/z/f2", "x/y/g", "x/q/f3", "x/f4", "top", "a/b/c/d/e", "a/b2/f"}) {
    file(p);
  }
  layers::EntrySet set;
  set.replace_entries(std::move(in));
  layers::Owner owner;
  owner.uid = 7;
  set.add_missing_parents(owner);
  std::vector<std::string> dirs;
  for (const auto& [p, e] : set.entries()) {
    if (e.type == layers::Entry::Type::dir) {
      dirs.push_back(p);
      CHECK(e.mode == (p == "x" ? 0700u : 0755u));
      CHECK(e.owner.uid == (p == "x" ? 0 : 7));
    }
  }
  CHECK(dirs == std::vector<std::string>{"a", "a/b", "a/b/c", "a/b/c/d", "a/b2", "x", "x/q", "x/y", "x/y/z"});
  CHECK(set.entries().size() == 9 + 8);
}

} // namespace unit_layers_test
