#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "layers/base_view.hpp"
#include "layers/tar.hpp"
#include "python/installed.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace unit_base_view_test {

namespace fs = std::filesystem;
using test_support::error_of;

namespace {

layers::TarMember dir(const std::string& p, std::uint32_t mode = 0755, std::int64_t uid = 0) {
  layers::TarMember m;
  m.path = p;
  m.type = '5';
  m.mode = mode;
  m.uid = uid;
  m.gid = uid;
  return m;
}

layers::TarMember file(const std::string& p, std::int64_t size = 1) {
  layers::TarMember m;
  m.path = p;
  m.type = '0';
  m.mode = 0644;
  m.size = size;
  return m;
}

layers::TarMember slink(const std::string& p, const std::string& target) {
  layers::TarMember m;
  m.path = p;
  m.type = '2';
  m.mode = 0777;
  m.link_target = target;
  return m;
}

// A Paddle-shaped tree: /tmp 1777, /home/paddle 0750 uid 1000, CUDA behind
// /etc/alternatives, merged /usr.
layers::BaseView paddle_like() {
  layers::BaseView v;
  v.begin_layer("sha256:1");
  for (auto m :
       {dir("usr"), dir("usr/lib"), dir("usr/lib/x86_64-linux-gnu"), slink("lib", "usr/lib"), dir("tmp", 01777),
        dir("home"), dir("home/paddle", 0750, 1000), dir("etc"), dir("etc/alternatives"), dir("usr/local"),
        dir("usr/local/cuda-12.0"), dir("usr/local/cuda-12.0/lib64"), file("usr/local/cuda-12.0/lib64/libcudart.so.12"),
        slink("etc/alternatives/cuda", "/usr/local/cuda-12.0"), slink("usr/local/cuda", "/etc/alternatives/cuda")}) {
    v.add_member(m);
  }
  return v;
}

} // namespace

TEST_SUITE("base_view") {
  TEST_CASE("whiteouts, opaque directories and replacements apply as overlay file systems apply them") {
    layers::BaseView v;
    v.begin_layer("sha256:1");
    for (auto m :
         {dir("a"), file("a/x"), dir("a/sub"), file("a/sub/y"), dir("b"), file("b/z"), dir("c"), file("c/k")}) {
      v.add_member(m);
    }
    v.begin_layer("sha256:2");
    v.add_member(file("a/.wh.x"));        // x removed
    v.add_member(file("b/.wh..wh..opq")); // b's lower contents hidden
    v.add_member(file("b/new"));          // ... but this layer's own stays
    v.add_member(file("c"));              // a file replaces directory c and all under it
    v.add_member(file("a/.wh.sub"));      // a whole directory removed
    v.finish({});
    CHECK(v.find("a/x") == nullptr);
    CHECK(v.find("a/sub") == nullptr);
    CHECK(v.find("a/sub/y") == nullptr);
    CHECK(v.find("a") != nullptr);
    CHECK(v.find("b/z") == nullptr);
    CHECK(v.find("b/new") != nullptr);
    CHECK(v.find("b")->type == '5');
    CHECK(v.find("c")->type == '0');
    CHECK(v.find("c/k") == nullptr);
    CHECK(v.find("a")->layer == 0);
    CHECK(v.find("b/new")->layer == 1);
  }

  TEST_CASE("resolve follows absolute, relative and chained links; escapes and loops are refused") {
    layers::BaseView v = paddle_like();
    v.add_member(slink("usr/local/rel", "cuda-12.0/lib64"));
    v.add_member(slink("usr/local/up", "../../../etc"));
    v.add_member(slink("loop1", "loop2"));
    v.add_member(slink("loop2", "loop1"));
    v.add_member(slink("usr/local/dots", "./../local/./cuda"));
    v.finish({});
    std::vector<std::string> followed;
    CHECK(v.resolve("usr/local/cuda/lib64/warm.yml", false, &followed, "t") == "usr/local/cuda-12.0/lib64/warm.yml");
    CHECK(followed == std::vector<std::string>{"usr/local/cuda -> /etc/alternatives/cuda",
                                               "etc/alternatives/cuda -> /usr/local/cuda-12.0"});
    CHECK(v.resolve("lib/x86_64-linux-gnu/y", false, nullptr, "t") == "usr/lib/x86_64-linux-gnu/y");
    CHECK(v.resolve("usr/local/rel/a", false, nullptr, "t") == "usr/local/cuda-12.0/lib64/a");
    CHECK(v.resolve("usr/local/dots/x", false, nullptr, "t") == "usr/local/cuda-12.0/x");
    // The last component is followed only when asked (a directory entry).
    CHECK(v.resolve("usr/local/cuda", false, nullptr, "t") == "usr/local/cuda");
    CHECK(v.resolve("usr/local/cuda", true, nullptr, "t") == "usr/local/cuda-12.0");
    CHECK(v.resolve("tmp/warmup/det.yml", false, nullptr, "t") == "tmp/warmup/det.yml");
    auto up = error_of([&] { v.resolve("usr/local/up/x", false, nullptr, "spec.yaml:9:5"); });
    CHECK(up.kind() == util::ErrorKind::input);
    CHECK(std::string(up.what()).find("spec.yaml:9:5") != std::string::npos);
    CHECK(std::string(up.what()).find("usr/local/up -> ../../../etc leads outside the image root") !=
          std::string::npos);
    CHECK(std::string(error_of([&] { v.resolve("loop1/x", false, nullptr, "t"); }).what()).find("loop") !=
          std::string::npos);
  }

  TEST_CASE("apply_base_view: ancestors keep the base's metadata, links are followed, never replaced") {
    layers::BaseView v = paddle_like();
    v.finish({});
    auto tmp = test_support::make_temp("pi-view-test-");
    util::write_file_atomic(tmp.path() / "f", "x");
    layers::EntrySet set;
    int i = 0;
    for (const char* to : {"/tmp/warmup/det.yml", "/home/paddle/work/f", "/usr/local/cuda/lib64/warm.yml",
                           "/lib/x86_64-linux-gnu/y", "/opt/new/f"}) {
      fs::path src = tmp.path() / ("f" + std::to_string(++i)); // separate files: no hard links
      util::write_file_atomic(src, std::to_string(i));
      set.add(layers::CopyRule{src, to, {}, {}, {}, {}, false, "spec.yaml:3:5", {}, {}, {}, false});
    }
    set.finalize(layers::Owner{});
    auto followed = layers::apply_base_view(set, v, "layer 'app'");
    const auto& e = set.entries();
    CHECK(e.at("tmp").mode == 01777);
    CHECK(e.at("tmp/warmup").mode == 0755); // new: the rule's default
    CHECK(e.at("home/paddle").mode == 0750);
    CHECK(e.at("home/paddle").owner.uid == 1000);
    CHECK(e.at("home/paddle/work").owner.uid == 0);
    CHECK(e.count("usr/local/cuda") == 0); // the link is never turned into a directory
    CHECK(e.count("usr/local/cuda/lib64/warm.yml") == 0);
    CHECK(e.at("usr/local/cuda-12.0/lib64/warm.yml").type == layers::Entry::Type::file);
    CHECK(e.count("lib") == 0);
    CHECK(e.at("usr/lib/x86_64-linux-gnu/y").type == layers::Entry::Type::file);
    CHECK(e.at("usr/lib/x86_64-linux-gnu").type == layers::Entry::Type::dir);
    CHECK(e.at("opt/new").mode == 0755);
    CHECK(followed.size() == 3);
    // Two paths that land on one file are refused.
    layers::EntrySet twice;
    twice.add(layers::CopyRule{tmp.path() / "f", "/usr/local/cuda/x", {}, {}, {}, {}, false, "a", {}, {}, {}, false});
    twice.add(
        layers::CopyRule{tmp.path() / "f", "/usr/local/cuda-12.0/x", {}, {}, {}, {}, false, "b", {}, {}, {}, false});
    twice.finalize(layers::Owner{});
    CHECK(std::string(error_of([&] { layers::apply_base_view(twice, v, "layer 'x'"); }).what())
              .find("are the same path in the image") != std::string::npos);
    // A directory onto a base file is refused.
    layers::BaseView vf = paddle_like();
    vf.add_member(file("opt"));
    vf.finish({});
    layers::EntrySet onto;
    onto.add(layers::CopyRule{tmp.path() / "f", "/opt/x", {}, {}, {}, {}, false, "c", {}, {}, {}, false});
    onto.finalize(layers::Owner{});
    CHECK(std::string(error_of([&] { layers::apply_base_view(onto, vf, "layer 'y'"); }).what())
              .find("would replace a file of the base") != std::string::npos);
  }

  TEST_CASE("facts: interpreters, dpkg and glibc, Python distributions, CUDA and cuDNN; the view round-trips") {
    layers::BaseView v;
    v.begin_layer("sha256:1");
    v.add_member(file("usr/bin/python3.10"));
    std::string status = "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.35-0ubuntu3\n\n"
                         "Package: python3.10\nStatus: install ok installed\nArchitecture: amd64\nVersion: 3.10.12-1\n";
    v.add_member(file("var/lib/dpkg/status"), &status);
    std::string meta = "Metadata-Version: 2.1\nName: paddlepaddle-gpu\nVersion: 2.6.1\nRequires-Dist: opt-einsum "
                       "==3.3.0\nRequires-Dist: protobuf >=3.20.2\n\nlong description\n";
    std::string di = "usr/local/lib/python3.10/dist-packages/paddlepaddle_gpu-2.6.1.dist-info";
    v.add_member(file(di + "/METADATA"), &meta);
    std::string installer = "pip\n";
    v.add_member(file(di + "/INSTALLER"), &installer);
    std::string record =
        "paddle/__init__.py,sha256=x,10\n\"odd,name.py\",,\n" + di.substr(di.rfind('/') + 1) + "/RECORD,,\n";
    v.add_member(file(di + "/RECORD"), &record);
    std::string header = "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 1\n";
    v.add_member(file("usr/include/cudnn_version.h"), &header);
    v.add_member(dir("var/lib/xattr"));
    v.finish({"PATH=/usr/bin", "CUDA_VERSION=12.0.1"});
    const auto& f = v.facts();
    CHECK(f.interpreters == std::vector<std::string>{"/usr/bin/python3.10"});
    REQUIRE(f.glibc);
    CHECK(*f.glibc == std::pair{2, 35});
    CHECK(f.dpkg.size() == 2);
    auto dists = python::installed_distributions(v);
    REQUIRE(dists.size() == 1);
    CHECK(dists[0].name == "paddlepaddle-gpu");
    CHECK(dists[0].installer == "pip");
    CHECK(dists[0].requires_dist.size() == 2);
    CHECK(dists[0].has_record);
    CHECK(dists[0].files.size() == 3);
    CHECK(dists[0].files[1] == "odd,name.py");
    CHECK(dists[0].layer == "sha256:1");
    CHECK(python::purl(dists[0]) == "pkg:pypi/paddlepaddle-gpu@2.6.1");
    CHECK(f.cuda == "12.0.1");
    CHECK(f.cuda_source == "ENV CUDA_VERSION");
    CHECK(f.cudnn == "8.9.1");
    // The cache form.
    layers::BaseView back = layers::decompress_view(layers::compress_view(v), {"PATH=/usr/bin", "CUDA_VERSION=12.0.1"});
    CHECK(back.nodes() == v.nodes());
    CHECK(back.contents() == v.contents());
    CHECK(python::installed_distributions(back) == python::installed_distributions(v));
    CHECK(back.facts() == v.facts());
    CHECK(back.layers() == v.layers());
    CHECK(error_of([&] { layers::decompress_view("garbage", {}); }).kind() == util::ErrorKind::input);
  }

  TEST_CASE("a real layer: modes, owners and xattrs come from the tar; a bad digest is refused") {
    auto tmp = test_support::make_temp("pi-view-tar-");
    std::string bytes;
    {
      std::unique_ptr<struct archive, decltype(&archive_write_free)> a(archive_write_new(), archive_write_free);
      archive_write_set_format_pax_restricted(a.get());
      archive_write_open(
          a.get(), &bytes, nullptr,
          [](struct archive*, void* out, const void* buf, std::size_t n) -> la_ssize_t {
            static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
            return static_cast<la_ssize_t>(n);
          },
          nullptr);
      archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, "home/paddle/");
      archive_entry_set_filetype(e, AE_IFDIR);
      archive_entry_set_perm(e, 0750);
      archive_entry_set_uid(e, 1000);
      archive_entry_set_gid(e, 1000);
      archive_entry_copy_uname(e, "paddle");
      archive_entry_xattr_add_entry(e, "user.note", "v", 1);
      archive_write_header(a.get(), e);
      archive_entry_free(e);
      archive_write_close(a.get());
    }
    util::write_file_atomic(tmp.path() / "layer.tar", bytes);
    oci::Descriptor d;
    d.size = static_cast<std::int64_t>(bytes.size());
    d.digest = oci::Digest::parse("sha256:" + util::sha256_hex(bytes));
    layers::BaseView v;
    v.add_layer(layers::verified_layer_reader(util::file_reader(tmp.path() / "layer.tar", 0), d, "test"), "l");
    v.finish({});
    const layers::ViewNode* n = v.find("home/paddle");
    REQUIRE(n != nullptr);
    CHECK(n->mode == 0750);
    CHECK(n->owner.uid == 1000);
    CHECK(n->owner.uname == "paddle");
    CHECK(n->xattrs.at("user.note") == "v");
    oci::Descriptor wrong = d;
    wrong.digest = oci::Digest::parse("sha256:" + std::string(64, '0'));
    layers::BaseView w;
    CHECK(error_of([&] {
            w.add_layer(layers::verified_layer_reader(util::file_reader(tmp.path() / "layer.tar", 0), wrong, "test"),
                        "l");
          }).kind() == util::ErrorKind::integrity);
  }
}

namespace {

// A layer blob made of (path, content) files, with its descriptor.
std::pair<std::string, oci::Descriptor> blob_of(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string tar;
  layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
  for (const auto& [path, content] : files) {
    tb.add_bytes(path, content);
  }
  tb.finish();
  oci::Descriptor d;
  d.media_type = "application/vnd.oci.image.layer.v1.tar";
  d.digest = oci::Digest::sha256(util::sha256_hex(tar));
  d.size = static_cast<std::int64_t>(tar.size());
  return {tar, d};
}

// A reader over the blob of `blobs` that `d` names.
oci::Reader reader_of(const std::vector<std::pair<std::string, oci::Descriptor>>& blobs, const oci::Descriptor& d) {
  for (const auto& blob : blobs) {
    if (blob.second.digest == d.digest) {
      auto data = std::make_shared<std::string>(blob.first);
      auto pos = std::make_shared<std::size_t>(0);
      return [data, pos](char* buf, std::size_t n) {
        std::size_t k = std::min(n, data->size() - *pos);
        std::copy_n(data->data() + *pos, k, buf);
        *pos += k;
        return k;
      };
    }
  }
  throw util::Error(util::ErrorKind::internal, "no such blob");
}

} // namespace

TEST_CASE("cached_view: an image on a cached base reads only its own layers; a damaged cache is read again") {
  auto tmp = test_support::make_temp("pi-view-cache-");
  std::vector<std::pair<std::string, oci::Descriptor>> blobs = {
      blob_of({{"var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\nVersion: 2.35-0\n"}}),
      blob_of({{"usr/lib/python3/dist-packages/a-1.dist-info/METADATA", "Name: a\nVersion: 1\n"}}),
      blob_of({{"usr/local/lib/python3.10/dist-packages/b-2.dist-info/METADATA", "Name: b\nVersion: 2\n"}}),
  };
  std::vector<std::string> opened;
  auto open = [&](const oci::Descriptor& d) -> oci::Reader {
    opened.push_back(d.digest.str());
    return reader_of(blobs, d);
  };
  std::vector<oci::Descriptor> base = {blobs[0].second, blobs[1].second};
  std::vector<oci::Descriptor> image = {blobs[0].second, blobs[1].second, blobs[2].second};
  layers::ViewCacheOptions o;
  o.cache_dir = tmp.path();
  o.what = "test image";
  o.store = true;
  auto fresh = layers::cached_view(image, open, {"CUDA_VERSION=12.0.1"}, {}); // no cache: every layer
  CHECK(opened.size() == 3);
  opened.clear();
  layers::cached_view(base, open, {}, o);
  CHECK(opened.size() == 2);
  opened.clear();
  o.store = false;
  auto composed = layers::cached_view(image, open, {"CUDA_VERSION=12.0.1"}, o);
  CHECK(opened == std::vector<std::string>{blobs[2].second.digest.str()});
  CHECK(composed.nodes() == fresh.nodes());
  CHECK(composed.facts() == fresh.facts());
  CHECK(composed.facts().cuda == "12.0.1");
  CHECK(composed.inventory().packages == fresh.inventory().packages);
  CHECK(composed.inventory().packages.size() == 1);
  auto dists = python::installed_distributions(composed);
  CHECK(dists == python::installed_distributions(fresh));
  REQUIRE(dists.size() == 2);
  CHECK(dists[1].layer == blobs[2].second.digest.str());

  // The cache of the base again, from its file alone.
  opened.clear();
  auto again = layers::cached_view(base, open, {}, o);
  CHECK(opened.empty());
  CHECK(python::installed_distributions(again).size() == 1);

  // A damaged cache file is read again from the layers.
  for (const auto& e : fs::directory_iterator(tmp.path() / "base-view")) {
    util::write_file_atomic(e.path(), "garbage");
  }
  opened.clear();
  auto reread = layers::cached_view(image, open, {"CUDA_VERSION=12.0.1"}, o);
  CHECK(opened.size() == 3);
  CHECK(reread.nodes() == fresh.nodes());

  // A layer that is not what its descriptor says fails, naming the image.
  auto swapped = [&](const oci::Descriptor&) { return open(blobs[0].second); };
  auto e = error_of([&] { layers::cached_view({blobs[2].second}, swapped, {}, {}); });
  CHECK(e.kind() == util::ErrorKind::integrity);
  CHECK(test_support::contains(e.what(), blobs[2].second.digest.str()));
}

namespace {

// A layer tar with regular files and hard links ({path, "", target}), written as tar
// writers do (names as given, "./" prefixes included).
std::pair<std::string, oci::Descriptor>
linked_blob(const std::vector<std::tuple<std::string, std::string, std::string>>& members) {
  std::string bytes;
  {
    std::unique_ptr<struct archive, decltype(&archive_write_free)> a(archive_write_new(), archive_write_free);
    archive_write_set_format_pax_restricted(a.get());
    archive_write_open(
        a.get(), &bytes, nullptr,
        [](struct archive*, void* out, const void* buf, std::size_t n) -> la_ssize_t {
          static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
          return static_cast<la_ssize_t>(n);
        },
        nullptr);
    for (const auto& [path, content, target] : members) {
      archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, path.c_str());
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_perm(e, 0644);
      if (target.empty()) {
        archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
        archive_write_header(a.get(), e);
        archive_write_data(a.get(), content.data(), content.size());
      } else {
        archive_entry_set_hardlink(e, target.c_str());
        archive_entry_set_size(e, 0);
        archive_write_header(a.get(), e);
      }
      archive_entry_free(e);
    }
    archive_write_close(a.get());
  }
  oci::Descriptor d;
  d.media_type = "application/vnd.oci.image.layer.v1.tar";
  d.digest = oci::Digest::sha256(util::sha256_hex(bytes));
  d.size = static_cast<std::int64_t>(bytes.size());
  return {bytes, d};
}

} // namespace

TEST_CASE("hard-linked METADATA and dpkg status are read, from the same layer or a lower one") {
  const std::string site = "usr/local/lib/python3.10/dist-packages";
  const std::string status = "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n";
  std::vector<std::pair<std::string, oci::Descriptor>> blobs = {
      // Lower layer: conda's pkgs/-style store, under paths the view does not keep.
      linked_blob({{"./opt/store/meta-a", "Name: a\nVersion: 1.0\n", ""}, {"./opt/store/status", status, ""}}),
      // Same layer: the first path of the inode is a file, the second a link to it.
      linked_blob({{"./opt/blob-b", "Name: b\nVersion: 2.0\n", ""},
                   {"./" + site + "/b-2.0.dist-info/METADATA", "", "./opt/blob-b"},
                   {site + "/a-1.0.dist-info/METADATA", "", "opt/store/meta-a"},
                   {"var/lib/dpkg/status", "", "./opt/store/status"}}),
  };
  auto open = [&](const oci::Descriptor& d) -> oci::Reader { return reader_of(blobs, d); };
  auto tmp = test_support::make_temp("pi-view-links-");
  layers::ViewCacheOptions o;
  o.cache_dir = tmp.path();
  o.store = true;
  o.what = "linked base";
  for (int round = 0; round < 2; ++round) { // read from the layers, then from the cache
    CAPTURE(round);
    auto view = layers::cached_view({blobs[0].second, blobs[1].second}, open, {}, o);
    auto dists = python::installed_distributions(view);
    REQUIRE(dists.size() == 2);
    CHECK(dists[0].name == "a");
    CHECK(dists[0].version == "1.0");
    CHECK(dists[1].name == "b");
    CHECK(dists[1].version == "2.0");
    REQUIRE(view.facts().glibc.has_value());
    CHECK(view.facts().glibc->second == 36);
    CHECK(view.inventory().packages.size() == 1);
    const layers::ViewNode* n = view.find(site + "/b-2.0.dist-info/METADATA");
    REQUIRE(n != nullptr);
    CHECK(n->target == "opt/blob-b"); // "./" stripped, as the member paths are
  }
}

} // namespace unit_base_view_test
