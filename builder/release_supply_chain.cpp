#include "builder/release_supply_chain.hpp"

#include "layers/tar.hpp"
#include "signing/license.hpp"
#include "signing/provenance.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <utility>

namespace builder {

using nlohmann::json;
using util::Error;
using util::ErrorKind;

namespace {

constexpr const char* k_spdx_namespace = "https://paddle-image.dev/spdxdocs/";
constexpr const char* k_main_id = "SPDXRef-Package-paddle-image";

std::string spdx_id(const std::string& prefix, const std::string& text) {
  return "SPDXRef-" + prefix + "-" + signing::spdx_idstring(text);
}

json relationship(const std::string& from, const char* type, const std::string& to) {
  return {{"spdxElementId", from}, {"relationshipType", type}, {"relatedSpdxElement", to}};
}

json purl_ref(const std::string& purl) {
  return {{"referenceCategory", "PACKAGE-MANAGER"}, {"referenceType", "purl"}, {"referenceLocator", purl}};
}

std::string deb_purl(const ReleaseFacts& f, const std::string& name, const std::string& version,
                     const std::string& arch) {
  layers::Package p;
  p.type = "deb";
  p.name = name;
  p.version = version;
  p.arch = arch;
  layers::Inventory inv;
  inv.os_id = f.os_id;
  inv.os_version_id = f.os_version_id;
  return layers::purl(p, inv);
}

// The source as a purl: pkg:github/OWNER/REPO@VERSION for GitHub, else generic with the
// repository as its vcs_url.
std::string source_purl(const ReleaseFacts& f) {
  static const std::regex github(R"(https://github\.com/([^/]+)/([^/]+?)(\.git)?/?)");
  std::smatch m;
  if (std::regex_match(f.repository, m, github)) {
    return "pkg:github/" + util::percent_encode(m[1].str()) + "/" + util::percent_encode(m[2].str()) + "@" +
           util::percent_encode(f.version);
  }
  return "pkg:generic/paddle-image@" + util::percent_encode(f.version) +
         "?vcs_url=" + util::percent_encode("git+" + f.repository);
}

json document(const std::string& name, const std::string& described_sha256, const ReleaseFacts& f, json packages,
              json relationships, json files, const std::map<std::string, signing::ExtractedLicense>& extracted) {
  json doc = {
      {"spdxVersion", "SPDX-2.3"},
      {"dataLicense", "CC0-1.0"},
      {"SPDXID", "SPDXRef-DOCUMENT"},
      {"name", name},
      // From the file it describes: another file, another namespace; the same bytes, the
      // same document.
      {"documentNamespace", k_spdx_namespace + name + "-" + signing::uuid_v5("sha256:" + described_sha256)},
      {"creationInfo",
       {{"created", util::rfc3339_utc(f.epoch)},
        {"creators", {"Tool: paddle-image-release.sh-" + f.version, "Organization: paddle-image"}}}},
  };
  json rels = json::array({relationship("SPDXRef-DOCUMENT", "DESCRIBES", packages.at(0).at("SPDXID"))});
  for (auto& r : relationships) {
    rels.push_back(std::move(r));
  }
  doc["packages"] = std::move(packages);
  if (!files.empty()) {
    doc["files"] = std::move(files);
  }
  if (!extracted.empty()) {
    json infos = json::array();
    for (const auto& [id, e] : extracted) {
      infos.push_back({{"licenseId", e.id}, {"name", e.name}, {"extractedText", e.text}});
    }
    doc["hasExtractedLicensingInfos"] = infos;
  }
  doc["relationships"] = rels;
  return doc;
}

json paddle_image_package(const ReleaseFacts& f, const std::string& file_name, const std::string& sha256,
                          const std::string& version, const std::vector<std::string>& purls,
                          const std::string& comment) {
  std::string commit = f.commit.empty() ? "unknown" : f.commit;
  json refs = json::array();
  for (const auto& p : purls) {
    refs.push_back(purl_ref(p));
  }
  return {
      {"SPDXID", k_main_id},
      {"name", "paddle-image"},
      {"versionInfo", version},
      {"packageFileName", file_name},
      {"supplier", "Organization: paddle-image"},
      {"downloadLocation", f.commit.empty() ? "NOASSERTION" : "git+" + f.repository + "@" + commit},
      {"sourceInfo",
       "built from git commit " + commit + (f.dirty ? " with uncommitted changes" : "") + " of " + f.repository},
      {"filesAnalyzed", false},
      {"checksums", json::array({{{"algorithm", "SHA256"}, {"checksumValue", sha256}}})},
      {"licenseConcluded", "NOASSERTION"},
      {"licenseDeclared", "NOASSERTION"}, // COPYRIGHT states the terms; they have no SPDX identifier
      {"copyrightText", "NOASSERTION"},
      {"primaryPackagePurpose", "APPLICATION"},
      {"externalRefs", refs},
      {"comment", comment},
  };
}

json deb_package(const ReleaseFacts& f, const std::string& name, const std::string& version, const std::string& arch,
                 const HostPackages& host, std::map<std::string, signing::ExtractedLicense>& extracted,
                 const std::string& comment) {
  std::optional<std::string> copyright = host.copyright(name);
  return {
      {"SPDXID", spdx_id("Package-deb", name)},
      {"name", name},
      {"versionInfo", version},
      {"supplier", "Organization: Debian"},
      {"downloadLocation", "NOASSERTION"},
      {"filesAnalyzed", false},
      {"licenseConcluded", "NOASSERTION"},
      {"licenseDeclared", copyright ? signing::dep5_license(*copyright, name, extracted) : "NOASSERTION"},
      {"copyrightText", "NOASSERTION"},
      {"primaryPackagePurpose", "LIBRARY"},
      {"externalRefs", json::array({purl_ref(deb_purl(f, name, version, arch))})},
      {"comment", comment},
  };
}

struct Member {
  std::string path, sha1, sha256;
};

// NAME/lib/SONAME as the archive holds them (SHA-1 and SHA-256 of the bytes).
std::map<std::string, Member> archive_members(const fs::path& archive, const std::set<std::string>& sonames) {
  std::map<std::string, Member> out;
  auto soname_of = [&](const std::string& path) -> std::string {
    auto a = path.find('/');
    if (a == std::string::npos || path.compare(a, 5, "/lib/") != 0) {
      return {};
    }
    std::string rest = path.substr(a + 5);
    return rest.find('/') == std::string::npos && sonames.count(rest) != 0 ? rest : std::string();
  };
  layers::scan_tar(
      archive, [&](const layers::TarMember& m) { return m.type == '0' && !soname_of(m.path).empty(); },
      [&](const layers::TarMember& m, const std::string& content) {
        out[soname_of(m.path)] = Member{m.path, util::sha1_hex(content), util::sha256_hex(content)};
      });
  return out;
}

std::string file_name_of(const fs::path& p) {
  return p.filename().string();
}

} // namespace

std::string ReleaseFacts::distro() const {
  return os_version_id.empty() ? os_id : os_id + "-" + os_version_id;
}

json ReleaseFacts::to_json() const {
  return {{"version", version}, {"commit", commit},
          {"dirty", dirty},     {"repository", repository},
          {"epoch", epoch},     {"glibc_min", glibc_min},
          {"command", command}, {"cmake_options", cmake},
          {"tools", tools},     {"os", {{"id", os_id}, {"version_id", os_version_id}, {"distro", distro()}}}};
}

ReleaseFacts ReleaseFacts::from_json(const json& j, const std::string& file) {
  ReleaseFacts f;
  try {
    f.version = j.at("version").get<std::string>();
    f.commit = j.at("commit").get<std::string>();
    f.dirty = j.at("dirty").get<bool>();
    f.repository = j.at("repository").get<std::string>();
    f.epoch = j.at("epoch").get<std::int64_t>();
    f.glibc_min = j.at("glibc_min").get<std::string>();
    f.command = j.at("command").get<std::vector<std::string>>();
    f.cmake = j.at("cmake_options").get<std::map<std::string, std::string>>();
    f.tools = j.at("tools").get<std::map<std::string, std::string>>();
    f.os_id = j.at("os").at("id").get<std::string>();
    f.os_version_id = j.at("os").at("version_id").get<std::string>();
  } catch (const json::exception& e) {
    throw Error(ErrorKind::input, file + ": not a release facts file (" + e.what() + ")",
                "write it with paddle-image release-supply-chain facts");
  }
  return f;
}

std::vector<BundledLibrary> parse_bundled_libraries(const std::string& tsv) {
  std::vector<BundledLibrary> out;
  for (const auto& line : util::split(tsv, '\n')) {
    if (util::trim(line).empty()) {
      continue;
    }
    std::vector<std::string> cols = util::split(line, '\t');
    cols.resize(std::max<std::size_t>(cols.size(), 4));
    out.push_back({cols[0], cols[1], cols[2], cols[3].empty() ? "amd64" : cols[3]});
  }
  return out;
}

HostPackages host_packages(const fs::path& root) {
  auto status = std::make_shared<std::map<std::string, layers::Package>>();
  std::error_code ec;
  if (fs::exists(root / "var/lib/dpkg/status", ec)) {
    for (auto& p : layers::parse_dpkg_status(util::read_file(root / "var/lib/dpkg/status"), true)) {
      status->emplace(p.name, p);
    }
  }
  HostPackages h;
  h.installed = [status](const std::string& name) -> std::optional<layers::Package> {
    auto it = status->find(name);
    return it == status->end() ? std::nullopt : std::optional<layers::Package>(it->second);
  };
  h.copyright = [root](const std::string& name) -> std::optional<std::string> {
    fs::path p = root / "usr/share/doc" / name / "copyright";
    std::error_code e;
    if (name.find('/') != std::string::npos || !fs::is_regular_file(p, e)) {
      return std::nullopt;
    }
    return util::read_file(p);
  };
  return h;
}

ReleaseFacts release_facts(ReleaseFacts given, const fs::path& build_dir, const fs::path& root,
                           const HostPackages& host) {
  ReleaseFacts f = std::move(given);
  fs::path cache = build_dir / "CMakeCache.txt";
  std::error_code ec;
  if (!fs::is_regular_file(cache, ec)) {
    throw Error(ErrorKind::input, build_dir.string() + " has no CMakeCache.txt", "name the release build's directory");
  }
  static const std::set<std::string> wanted{"CMAKE_BUILD_TYPE",          "CMAKE_GENERATOR",     "CMAKE_CXX_COMPILER",
                                            "PADDLE_IMAGE_BUNDLE_RPATH", "PADDLE_IMAGE_WERROR", "PADDLE_IMAGE_TESTS",
                                            "PADDLE_IMAGE_SANITIZE"};
  static const std::regex entry(R"(([A-Za-z_]+):[A-Z]+=(.*))");
  for (const auto& line : util::split(util::read_file(cache), '\n')) {
    std::smatch m;
    if (std::regex_match(line, m, entry) && wanted.count(m[1].str()) != 0) {
      f.cmake[m[1].str()] = m[2].str();
    }
  }
  // The tools' first lines without their names ("cmake version 3.25.1" -> "3.25.1").
  static const std::regex prefix(R"(^(cmake version|tar \(GNU tar\)|gzip|Python)\s+)");
  for (auto& [name, v] : f.tools) {
    v = std::regex_replace(util::trim(v), prefix, "");
  }
  for (const char* pkg : {"dpkg", "dpkg-dev", "binutils", "libc6"}) {
    if (auto p = host.installed(pkg)) {
      f.tools[pkg] = p->version;
    }
  }
  layers::OsRelease os;
  for (const char* file : {"etc/os-release", "usr/lib/os-release"}) {
    if (fs::is_regular_file(root / file, ec)) {
      os = layers::parse_os_release(util::read_file(root / file));
      break;
    }
  }
  f.tools["os"] = os.pretty_name.empty() ? "unknown" : os.pretty_name;
  f.os_id = os.id.empty() ? "debian" : os.id;
  f.os_version_id = os.version_id;
  return f;
}

json archive_sbom(const ReleaseFacts& f, const fs::path& archive, const std::vector<BundledLibrary>& libs,
                  const HostPackages& host) {
  std::string name = file_name_of(archive);
  std::string sha = util::sha256_file_hex(archive);
  std::set<std::string> sonames;
  for (const auto& l : libs) {
    sonames.insert(l.soname);
  }
  std::map<std::string, Member> members = archive_members(archive, sonames);
  std::vector<std::string> missing;
  for (const auto& s : sonames) {
    if (members.count(s) == 0) {
      missing.push_back("lib/" + s);
    }
  }
  if (!missing.empty()) {
    throw Error(ErrorKind::input,
                archive.string() + " lacks " + util::join(missing, ", ") + ", which release.sh bundled",
                "package the archive again (scripts/release.sh)");
  }
  json packages = json::array({paddle_image_package(
      f, name, sha, f.version, {source_purl(f)},
      "The self-contained archive: libexec/paddle-image and the libraries it loads beyond glibc " + f.glibc_min +
          " or later, under lib/")});
  json files = json::array();
  json rels = json::array();
  std::map<std::string, signing::ExtractedLicense> extracted;
  std::map<std::string, std::string> package_ids;          // package -> SPDXID
  std::map<std::string, std::vector<std::string>> bundled; // package -> lib/SONAME, in order
  for (const auto& lib : libs) {
    const Member& m = members.at(lib.soname);
    std::string fid = spdx_id("File-lib", lib.soname);
    files.push_back({{"SPDXID", fid},
                     {"fileName", "./" + m.path.substr(m.path.find('/') + 1)},
                     {"checksums", json::array({{{"algorithm", "SHA1"}, {"checksumValue", m.sha1}},
                                                {{"algorithm", "SHA256"}, {"checksumValue", m.sha256}}})},
                     {"fileTypes", json::array({"BINARY"})},
                     {"licenseConcluded", "NOASSERTION"},
                     {"copyrightText", "NOASSERTION"}});
    if (lib.package.empty()) {
      rels.push_back(relationship(k_main_id, "CONTAINS", fid));
      continue;
    }
    if (package_ids.count(lib.package) == 0) {
      json pkg = deb_package(f, lib.package, lib.version, lib.arch, host, extracted, "");
      package_ids[lib.package] = pkg.at("SPDXID").get<std::string>();
      rels.push_back(relationship(k_main_id, "CONTAINS", package_ids[lib.package]));
      packages.push_back(std::move(pkg));
    }
    bundled[lib.package].push_back("lib/" + lib.soname);
    rels.push_back(relationship(package_ids[lib.package], "CONTAINS", fid));
  }
  for (std::size_t i = 1; i < packages.size(); ++i) {
    packages[i]["comment"] = "bundled as " + util::join(bundled[packages[i].at("name").get<std::string>()], ", ") +
                             " (from the Debian package installed where the release was made)";
  }
  return document(name, sha, f, std::move(packages), std::move(rels), std::move(files), extracted);
}

json deb_sbom(const ReleaseFacts& f, const fs::path& deb, const DebFields& fields, const HostPackages& host) {
  std::string name = file_name_of(deb);
  std::string sha = util::sha256_file_hex(deb);
  json packages =
      json::array({paddle_image_package(f, name, sha, fields.version,
                                        {"pkg:deb/paddle-image/paddle-image@" + util::percent_encode(fields.version) +
                                             "?arch=" + util::percent_encode(fields.arch),
                                         source_purl(f)},
                                        "The Debian package: /usr/bin/paddle-image on Debian's libraries (Depends)")});
  json rels = json::array();
  std::map<std::string, signing::ExtractedLicense> extracted;
  static const std::regex dep(R"(([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*(\(.*\))?)");
  for (const auto& clause : util::split(fields.depends, ',')) {
    std::string first = util::trim(clause.substr(0, clause.find('|')));
    std::smatch m;
    if (!std::regex_search(first, m, dep, std::regex_constants::match_continuous)) {
      continue;
    }
    std::string dep_name = m[1].str();
    std::optional<layers::Package> have = host.installed(dep_name);
    if (!have) {
      throw Error(ErrorKind::input,
                  name + " depends on " + dep_name + ", which is not installed here (dpkg-query -W " + dep_name + ")",
                  "make the release where its Depends are installed (scripts/setup.sh)");
    }
    json pkg = deb_package(f, dep_name, have->version, have->arch, host, extracted,
                           "Depends: " + first + "; the version installed where the release was made");
    rels.push_back(relationship(k_main_id, "DEPENDS_ON", pkg.at("SPDXID").get<std::string>()));
    packages.push_back(std::move(pkg));
  }
  return document(name, sha, f, std::move(packages), std::move(rels), json::array(), extracted);
}

json release_provenance(const ReleaseFacts& f, const std::vector<BundledLibrary>& libs) {
  signing::ProvenanceInput in;
  in.build_type = k_release_build_type;
  in.builder_id = k_release_builder_id;
  in.builder_tools = f.tools;
  in.builder_version = f.tools.count("paddle-image") != 0 ? f.tools.at("paddle-image") : f.version;
  in.invocation_id = f.repository + "@" + (f.commit.empty() ? "unknown" : f.commit);
  in.started_on = in.finished_on = util::rfc3339_utc(f.epoch); // the commit's time: the same commit, the same bytes
  in.external_parameters = {{"source", {{"repository", f.repository}, {"commit", f.commit}, {"dirty", f.dirty}}},
                            {"command", f.command},
                            {"source_date_epoch", f.epoch}};
  in.internal_parameters = {{"cmake", f.cmake}, {"glibc_min", f.glibc_min}};
  signing::ResourceDescriptor source;
  source.uri = "git+" + f.repository;
  if (!f.commit.empty()) {
    source.digest["gitCommit"] = f.commit;
  }
  source.annotations = {{"dirty", f.dirty}};
  in.dependencies.push_back(source);
  std::set<std::string> seen;
  for (const auto& lib : libs) {
    if (lib.package.empty() || !seen.insert(lib.package).second) {
      continue;
    }
    std::vector<std::string> files;
    for (const auto& x : libs) {
      if (x.package == lib.package) {
        files.push_back("lib/" + x.soname);
      }
    }
    std::sort(files.begin(), files.end());
    signing::ResourceDescriptor d;
    d.name = lib.package;
    d.uri = deb_purl(f, lib.package, lib.version, lib.arch);
    d.annotations = {{"version", lib.version}, {"bundled", files}};
    in.dependencies.push_back(d);
  }
  return signing::provenance_predicate(in);
}

} // namespace builder
