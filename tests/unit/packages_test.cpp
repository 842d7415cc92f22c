#include <doctest/doctest.h>

#include "tests/unit/support.hpp"

#include "layers/base_view.hpp"
#include "layers/compress.hpp"
#include "layers/packages.hpp"
#include "layers/tar.hpp"
#include "python/installed.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace unit_packages_test {

namespace fs = std::filesystem;
using layers::Package;
using test_support::contains;
using test_support::error_of;

namespace {

// A tar of the given (path, content) files; a path ending in '/' is a directory.
std::string make_tar(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string tar;
  layers::TarBuilder tb(0, [&](const char* d, std::size_t n) { tar.append(d, n); });
  for (const auto& [path, content] : members) {
    if (!path.empty() && path.back() == '/') {
      tb.add_dir(path.substr(0, path.size() - 1));
    } else {
      tb.add_bytes(path, content);
    }
  }
  tb.finish();
  return tar;
}

// A stream over `bytes` (kept alive by the caller), handed out in small pieces.
std::function<std::size_t(char*, std::size_t)> reader_of(const std::string& bytes) {
  auto pos = std::make_shared<std::size_t>(0);
  return [&bytes, pos](char* buf, std::size_t n) {
    std::size_t k = std::min({n, bytes.size() - *pos, std::size_t{7000}});
    std::copy_n(bytes.data() + *pos, k, buf);
    *pos += k;
    return k;
  };
}

// The dpkg inventory of a view and its Python distributions as the SBOM lists them, in
// one list sorted by (type, name, version, location).
layers::Inventory with_python(const layers::BaseView& view) {
  layers::Inventory inv = view.inventory();
  for (const auto& d : python::installed_distributions(view)) {
    inv.packages.push_back(Package{"pypi", d.name, d.version, "", d.location, d.layer});
  }
  std::sort(inv.packages.begin(), inv.packages.end(), [](const Package& a, const Package& b) {
    return std::tie(a.type, a.name, a.version, a.location) < std::tie(b.type, b.name, b.version, b.location);
  });
  return inv;
}

// The inventory of the tree the layers (bytes, digest), bottom to top, leave.
layers::Inventory inventory(const std::vector<std::pair<std::string, std::string>>& bottom_to_top) {
  layers::BaseView view;
  for (const auto& [bytes, digest] : bottom_to_top) {
    view.add_layer(reader_of(bytes), digest);
  }
  view.finish({});
  return with_python(view);
}

std::string compressed(const std::string& tar, layers::Compression kind, const fs::path& path) {
  layers::CompressOptions opts;
  opts.kind = kind;
  opts.level = kind == layers::Compression::zstd ? 3 : 6;
  util::AtomicFile out(path);
  {
    layers::LayerStream stream(opts, out);
    stream.write(tar.data(), tar.size());
    stream.finish();
  }
  out.commit();
  return util::read_file(path);
}

Package pkg(std::string type, std::string name, std::string version, std::string arch, std::string location,
            std::string layer) {
  return Package{std::move(type), std::move(name),     std::move(version),
                 std::move(arch), std::move(location), std::move(layer)};
}

const std::string k_base = "sha256:" + std::string(64, 'b');
const std::string k_upper = "sha256:" + std::string(64, 'u');

const char* k_status = "Package: libc6\n"
                       "Status: install ok installed\n"
                       "Priority: optional\n"
                       "Architecture: amd64\n"
                       "Multi-Arch: same\n"
                       "Version: 2.36-9+deb12u4\n"
                       "Description: GNU C Library: Shared libraries\n"
                       " Contains the standard libraries that are used by nearly all programs on\n"
                       " the system.\n"
                       "\n"
                       "Package: oldpkg\n"
                       "Status: deinstall ok config-files\n"
                       "Architecture: all\n"
                       "Version: 0.9\n"
                       "\n"
                       "Package: libstdc++6\n"
                       "Status: install ok installed\n"
                       "Architecture: amd64\n"
                       "Version: 12.2.0-14\n"
                       "Depends: gcc-12-base (= 12.2.0-14), libc6 (>= 2.36)\n";

const char* k_os_release = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
                           "NAME=\"Debian GNU/Linux\"\n"
                           "VERSION_ID=\"12\"\n"
                           "VERSION_CODENAME=bookworm\n"
                           "ID=debian\n";

std::string base_layer() {
  return make_tar({
      {"etc/", ""},
      {"etc/os-release", k_os_release},
      {"usr/lib/python3/dist-packages/", ""},
      {"usr/lib/python3/dist-packages/six-1.16.0.dist-info/", ""},
      {"usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\nSummary: Python 2 and 3 compatibility utilities\n\n"
       "Name: not-a-header\nVersion: 0\n"},
      {"usr/lib/python3/dist-packages/six-1.16.0.dist-info/RECORD", "six.py,,\n"},
      {"usr/lib/python3/dist-packages/Foo_Bar-0.1.egg-info", "Metadata-Version: 1.1\nName: Foo_Bar\nVersion: 0.1\n"},
      {"usr/local/lib/python3.11/site-packages/requests-2.31.0.dist-info/METADATA",
       "Metadata-Version: 2.1\r\nName: requests\r\nVersion: 2.31.0\r\n"},
      {"usr/share/doc/METADATA", "Name: not-python\nVersion: 1\n"},
      {"var/lib/dpkg/status", k_status},
  });
}

std::string upper_layer() {
  return make_tar({
      {"usr/local/lib/python3.11/site-packages/.wh.requests-2.31.0.dist-info", ""},
      {"usr/local/lib/python3.11/site-packages/requests-2.32.3.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: requests\nVersion: 2.32.3\n"},
      // re-shipped in place: replaces the base layer's copy
      {"usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA",
       "Metadata-Version: 2.1\nName: six\nVersion: 1.16.0\n"},
  });
}

} // namespace

TEST_SUITE("packages") {
  TEST_CASE("packages: parse_dpkg_status keeps installed stanzas and skips malformed ones") {
    auto all = layers::parse_dpkg_status(k_status, true);
    REQUIRE(all.size() == 2);
    CHECK(all[0] == pkg("deb", "libc6", "2.36-9+deb12u4", "amd64", "var/lib/dpkg/status", ""));
    CHECK(all[1] == pkg("deb", "libstdc++6", "12.2.0-14", "amd64", "var/lib/dpkg/status", ""));

    std::string odd = "Package: held\nStatus: hold ok installed\nVersion: 1.0\nArchitecture: arm64\n\n"
                      "Package: half\nStatus: install ok half-configured\nVersion: 1.0\n\n"
                      "Package: broken\nStatus: install ok installed\nthis line has no colon\nVersion: 1\n\n"
                      "Package: noversion\nStatus: install ok installed\n\n"
                      "Status: install ok installed\nVersion: 3\n\n\n"
                      "package: lowercase-fields\nstatus: install  ok  installed\nversion: 2:1.0~rc1\n";
    auto kept = layers::parse_dpkg_status(odd, true);
    REQUIRE(kept.size() == 2);
    CHECK(kept[0].name == "held");
    CHECK(kept[0].arch == "arm64");
    CHECK(kept[1].name == "lowercase-fields");
    CHECK(kept[1].version == "2:1.0~rc1");

    // status.d style: no Status field is fine, a Status that is not installed is not.
    auto control =
        layers::parse_dpkg_status("Package: base-files\nVersion: 12.4+deb12u5\nArchitecture: amd64\n", false);
    REQUIRE(control.size() == 1);
    CHECK(control[0].name == "base-files");
    CHECK(layers::parse_dpkg_status("Package: base-files\nVersion: 12.4+deb12u5\n", true).empty());
    CHECK(layers::parse_dpkg_status("Package: x\nStatus: purge ok not-installed\nVersion: 1\n", false).empty());
    CHECK(layers::parse_dpkg_status("", true).empty());
    CHECK(layers::parse_dpkg_status("\x01\x02 garbage\n\n : \n", true).empty());
  }

  TEST_CASE("packages: the inventory of a base layer (dpkg status, os-release, dist-info, egg-info file)") {
    std::string tar = base_layer();
    auto inv = inventory({{tar, k_base}});
    std::vector<Package> want = {
        pkg("deb", "libc6", "2.36-9+deb12u4", "amd64", "var/lib/dpkg/status", k_base),
        pkg("deb", "libstdc++6", "12.2.0-14", "amd64", "var/lib/dpkg/status", k_base),
        pkg("pypi", "Foo_Bar", "0.1", "", "usr/lib/python3/dist-packages/Foo_Bar-0.1.egg-info", k_base),
        pkg("pypi", "requests", "2.31.0", "", "usr/local/lib/python3.11/site-packages/requests-2.31.0.dist-info",
            k_base),
        pkg("pypi", "six", "1.16.0", "", "usr/lib/python3/dist-packages/six-1.16.0.dist-info", k_base),
    };
    CHECK(inv.packages == want);
    CHECK(inv.os_id == "debian");
    CHECK(inv.os_version_id == "12");

    SUBCASE("the same layer gzip- and zstd-compressed gives the same") {
      auto tmp = test_support::make_temp("pi-packages-test-");
      std::string gz = compressed(tar, layers::Compression::gzip, tmp.path() / "layer.gz");
      std::string zst = compressed(tar, layers::Compression::zstd, tmp.path() / "layer.zst");
      CHECK(gz.substr(0, 2) == "\x1f\x8b");
      CHECK(gz != tar);
      CHECK(zst != tar);
      CHECK(inventory({{gz, k_base}}).packages == want);
      CHECK(inventory({{zst, k_base}}).packages == want);
    }

    SUBCASE("a corrupt layer is scan_tar's error, naming the layer") {
      std::string truncated = tar.substr(0, 700);
      truncated += std::string(300, '\x7f');
      auto e = error_of([&] { inventory({{truncated, k_base}}); });
      CHECK(e.kind() == util::ErrorKind::integrity);
      CHECK(contains(e.what(), k_base));
    }

    SUBCASE("a package file over its cap counts as absent") {
      std::string big = "Metadata-Version: 2.1\nName: big\nVersion: 1\n\n" + std::string(5 << 20, 'x');
      auto with_big = inventory(
          {{tar, k_base}, {make_tar({{"usr/lib/python3/dist-packages/big-1.dist-info/METADATA", big}}), k_upper}});
      CHECK(with_big.packages == want);
      CHECK(layers::inventory_file_cap("usr/lib/python3/dist-packages/big-1.dist-info/METADATA") == 4 << 20);
      CHECK(layers::inventory_file_cap("usr/share/doc/METADATA") == 0);
    }
  }

  TEST_CASE("packages: an upper layer whites out one dist-info, adds another and re-ships a third") {
    auto inv = inventory({{base_layer(), k_base}, {upper_layer(), k_upper}});
    CHECK(inv.os_id == "debian");
    CHECK(inv.os_version_id == "12");
    std::vector<Package> want = {
        pkg("deb", "libc6", "2.36-9+deb12u4", "amd64", "var/lib/dpkg/status", k_base),
        pkg("deb", "libstdc++6", "12.2.0-14", "amd64", "var/lib/dpkg/status", k_base),
        pkg("pypi", "Foo_Bar", "0.1", "", "usr/lib/python3/dist-packages/Foo_Bar-0.1.egg-info", k_base),
        pkg("pypi", "requests", "2.32.3", "", "usr/local/lib/python3.11/site-packages/requests-2.32.3.dist-info",
            k_upper),
        pkg("pypi", "six", "1.16.0", "", "usr/lib/python3/dist-packages/six-1.16.0.dist-info", k_upper),
    };
    CHECK(inv.packages == want);

    // Order matters: the same layers the other way round keep the base's requests.
    auto reversed = inventory({{upper_layer(), k_upper}, {base_layer(), k_base}});
    auto n = std::count_if(reversed.packages.begin(), reversed.packages.end(),
                           [](const Package& p) { return p.name == "requests"; });
    CHECK(n == 2);
  }

  TEST_CASE("packages: opaque dirs and dpkg status replacement across layers") {
    std::string lower = make_tar({
        {"opt/venv/lib/python3.11/site-packages/a-1.dist-info/METADATA", "Name: a\nVersion: 1\n"},
        {"opt/venv/lib/python3.11/site-packages/b-2.dist-info/METADATA", "Name: b\nVersion: 2\n"},
        {"opt/other/site-packages/keep-3.dist-info/METADATA", "Name: keep\nVersion: 3\n"},
        {"var/lib/dpkg/status", k_status},
    });
    CHECK(inventory({{lower, k_base}}).packages.size() == 5);
    std::string opaque = make_tar({
        {"opt/venv/", ""},
        {"opt/venv/.wh..wh..opq", ""},
        {"opt/venv/lib/python3.11/site-packages/c-4.dist-info/METADATA", "Name: c\nVersion: 4\n"},
    });

    auto inv = inventory({{lower, k_base}, {opaque, k_upper}});
    std::vector<std::string> names;
    for (const auto& p : inv.packages) {
      names.push_back(p.type + ":" + p.name);
    }
    CHECK(names == std::vector<std::string>{"deb:libc6", "deb:libstdc++6", "pypi:c", "pypi:keep"});
    CHECK(inv.os_id.empty());

    SUBCASE("a later dpkg status replaces the earlier one wholesale") {
      std::string newer = make_tar({{"var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\n"
                                                            "Architecture: amd64\nVersion: 2.36-9+deb12u7\n"}});
      auto merged = inventory({{lower, k_base}, {newer, k_upper}});
      REQUIRE(merged.packages.size() == 4);
      CHECK(merged.packages[0] == pkg("deb", "libc6", "2.36-9+deb12u7", "amd64", "var/lib/dpkg/status", k_upper));
      CHECK(merged.packages[1].name == "a");
    }
    SUBCASE("a whited-out status or METADATA removes what it listed") {
      auto merged = inventory({{lower, k_base}, {make_tar({{"var/lib/dpkg/.wh.status", ""}}), k_upper}});
      CHECK(merged.packages.size() == 3);
      CHECK(merged.packages[0].type == "pypi");
      auto no_meta =
          inventory({{lower, k_base},
                     {make_tar({{"opt/venv/lib/python3.11/site-packages/a-1.dist-info/.wh.METADATA", ""}}), k_upper}});
      CHECK(no_meta.packages.size() == 4);
    }
    SUBCASE("an opaque var/lib/dpkg removes the deb list, an opaque root removes everything") {
      CHECK(inventory({{lower, k_base}, {make_tar({{"var/lib/dpkg/.wh..wh..opq", ""}}), k_upper}}).packages.size() ==
            3);
      CHECK(inventory({{lower, k_base}, {make_tar({{".wh..wh..opq", ""}}), k_upper}}).packages.empty());
    }
  }

  TEST_CASE("packages: distroless status.d files, one package per file") {
    std::string lower = make_tar({
        {"usr/lib/os-release", "ID='debian'\nVERSION_ID=\"12\"\n"},
        {"var/lib/dpkg/status.d/", ""},
        {"var/lib/dpkg/status.d/base-files",
         "Package: base-files\nVersion: 12.4+deb12u5\nArchitecture: amd64\nMaintainer: x\n"},
        {"var/lib/dpkg/status.d/base-files.md5sums", "0123456789abcdef  etc/debian_version\n"},
        {"var/lib/dpkg/status.d/libssl3", "Package: libssl3\nStatus: install ok installed\nVersion: 3.0.11-1~deb12u2\n"
                                          "Architecture: amd64\n"},
        {"var/lib/dpkg/status.d/tzdata", "Package: tzdata\nStatus: deinstall ok config-files\n"
                                         "Version: 2024a-0+deb12u1\n"},
    });
    auto alone = inventory({{lower, k_base}});
    CHECK(alone.os_id == "debian");
    CHECK(alone.os_version_id == "12");
    REQUIRE(alone.packages.size() == 2);
    CHECK(alone.packages[0] ==
          pkg("deb", "base-files", "12.4+deb12u5", "amd64", "var/lib/dpkg/status.d/base-files", k_base));
    CHECK(alone.packages[1] ==
          pkg("deb", "libssl3", "3.0.11-1~deb12u2", "amd64", "var/lib/dpkg/status.d/libssl3", k_base));

    std::string upper = make_tar({
        {"var/lib/dpkg/status.d/.wh.base-files", ""},
        {"var/lib/dpkg/status.d/libssl3", "Package: libssl3\nVersion: 3.0.13-1~deb12u1\nArchitecture: amd64\n"},
    });
    auto inv = inventory({{lower, k_base}, {upper, k_upper}});
    REQUIRE(inv.packages.size() == 1);
    CHECK(inv.packages[0] ==
          pkg("deb", "libssl3", "3.0.13-1~deb12u1", "amd64", "var/lib/dpkg/status.d/libssl3", k_upper));
    CHECK(layers::purl(inv.packages[0], inv) == "pkg:deb/debian/libssl3@3.0.13-1~deb12u1?arch=amd64&distro=debian-12");
  }

  TEST_CASE("packages: the inventory survives the view's cache, and a hard-linked METADATA counts") {
    std::string tar = make_tar({
        {"usr/lib/python3/dist-packages/x-1.dist-info/METADATA", "Name: x\nVersion: 1\n\nA long description.\n"},
        {"var/lib/dpkg/status", k_status},
    });
    layers::BaseView view;
    view.add_layer(reader_of(tar), k_base);
    layers::TarMember link;
    view.begin_layer(k_upper);
    link.path = "usr/lib/python3/dist-packages/y-1.dist-info/METADATA";
    link.type = '1';
    link.link_target = "usr/lib/python3/dist-packages/x-1.dist-info/METADATA";
    view.add_member(link);
    view.finish({});
    auto before = with_python(view);
    REQUIRE(before.packages.size() == 4);
    CHECK(before.packages[3].location == "usr/lib/python3/dist-packages/y-1.dist-info");
    CHECK(before.packages[3].layer == k_upper);
    // Only a METADATA's headers are kept: the body is the long description.
    CHECK(view.contents().at("usr/lib/python3/dist-packages/x-1.dist-info/METADATA") == "Name: x\nVersion: 1\n");
    auto back = layers::decompress_view(layers::compress_view(view), {});
    CHECK(with_python(back).packages == before.packages);
    CHECK(back.contents() == view.contents());
  }

  TEST_CASE("packages: the view keeps embedded SPDX documents (var/lib/db/sbom/*.spdx.json) and no other file there") {
    CHECK(layers::is_embedded_sbom("var/lib/db/sbom/paddle-image.spdx.json"));
    CHECK_FALSE(layers::is_embedded_sbom("var/lib/db/sbom/.spdx.json"));
    CHECK_FALSE(layers::is_embedded_sbom("var/lib/db/sbom/x.json"));
    CHECK_FALSE(layers::is_embedded_sbom("var/lib/db/sbom/sub/x.spdx.json"));
    CHECK_FALSE(layers::is_embedded_sbom("opt/var/lib/db/sbom/x.spdx.json"));
    CHECK(layers::inventory_file_cap("var/lib/db/sbom/paddle-image.spdx.json") == 16 << 20);
    std::string tar = make_tar({{"var/lib/db/sbom/a.spdx.json", "{\"spdxVersion\": \"SPDX-2.3\"}"},
                                {"var/lib/db/sbom/readme.txt", "not kept"},
                                {"var/lib/dpkg/status", k_status}});
    layers::BaseView view;
    view.add_layer(reader_of(tar), k_base);
    view.finish({});
    CHECK(view.contents().count("var/lib/db/sbom/a.spdx.json") == 1);
    CHECK(view.contents().count("var/lib/db/sbom/readme.txt") == 0);
    // It is not a dpkg package: the inventory is dpkg's alone.
    auto inv = view.inventory();
    CHECK(std::all_of(inv.packages.begin(), inv.packages.end(),
                      [](const Package& p) { return p.location == "var/lib/dpkg/status"; }));
    auto back = layers::decompress_view(layers::compress_view(view), {});
    CHECK(back.contents() == view.contents());
  }

  TEST_CASE("packages: purl formatting (epoch, '+', distro, pypi names)") {
    layers::Inventory inv;
    inv.os_id = "ubuntu";
    inv.os_version_id = "22.04";
    auto deb = pkg("deb", "libstdc++6", "1:12.3.0-1ubuntu1~22.04", "amd64", "var/lib/dpkg/status", k_base);
    CHECK(layers::purl(deb, inv) ==
          "pkg:deb/ubuntu/libstdc%2B%2B6@1%3A12.3.0-1ubuntu1~22.04?arch=amd64&distro=ubuntu-22.04");
    auto epoch = pkg("deb", "libc6", "2:2.36-9+deb12u4", "arm64", "var/lib/dpkg/status", k_base);
    CHECK(layers::purl(epoch, inv) == "pkg:deb/ubuntu/libc6@2%3A2.36-9%2Bdeb12u4?arch=arm64&distro=ubuntu-22.04");

    layers::Inventory unknown; // no os-release: debian, no distro
    CHECK(layers::purl(epoch, unknown) == "pkg:deb/debian/libc6@2%3A2.36-9%2Bdeb12u4?arch=arm64");
    auto noarch = pkg("deb", "tzdata", "2024a-0+deb12u1", "", "var/lib/dpkg/status", k_base);
    CHECK(layers::purl(noarch, unknown) == "pkg:deb/debian/tzdata@2024a-0%2Bdeb12u1");

    python::Distribution torch;
    torch.name = "Torch_Vision..Extra";
    torch.version = "2.1.0+cu121";
    CHECK(python::purl(torch) == "pkg:pypi/torch-vision-extra@2.1.0%2Bcu121");
    python::Distribution plain;
    plain.name = "requests";
    plain.version = "2.32.3";
    CHECK(python::purl(plain) == "pkg:pypi/requests@2.32.3");
  }
}

} // namespace unit_packages_test
