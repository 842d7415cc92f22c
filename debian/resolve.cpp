#include "debian/resolve.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <map>
#include <set>
#include <sstream>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

struct AptRoot {
  fs::path root;
  std::vector<fs::path> mirrors; // one per repository
};

// The private root: apt's directories, the base's status, and each repository as a
// local mirror holding the verified indexes under an unsigned Release that lists them
// (its signature was checked before; the sources mark it trusted).
AptRoot make_root(const fs::path& root, const std::vector<RepositoryIndex>& repos, const std::string& status,
                  const std::string& arch) {
  AptRoot r{root, {}};
  for (const char* d :
       {"etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d", "etc/apt/trusted.gpg.d",
        "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg", "var/log/apt"}) {
    fs::create_directories(root / d);
  }
  util::write_file_atomic(root / "etc/apt/apt.conf", "");
  util::write_file_atomic(root / "var/lib/dpkg/status", status);
  std::string sources;
  for (std::size_t i = 0; i < repos.size(); ++i) {
    const RepositoryIndex& idx = repos[i];
    fs::path m = root / ("mirror" + std::to_string(i));
    fs::path dists = m / "dists" / idx.repo.suite;
    std::string release = "Suite: " + idx.repo.suite + "\nCodename: " + idx.repo.suite +
                          "\nComponents: " + util::join(idx.repo.components, " ") + "\nArchitectures: " + arch +
                          "\nSHA256:\n";
    for (const auto& c : idx.components) {
      std::string rel = c.component + "/binary-" + arch + "/Packages";
      fs::create_directories((dists / rel).parent_path());
      util::write_file_atomic(dists / rel, c.packages);
      release += " " + util::sha256_hex(c.packages) + " " + std::to_string(c.packages.size()) + " " + rel + "\n";
    }
    util::write_file_atomic(dists / "Release", release);
    sources += "deb [trusted=yes arch=" + arch + "] file:" + m.string() + " " + idx.repo.suite + " " +
               util::join(idx.repo.components, " ") + "\n";
    r.mirrors.push_back(m);
  }
  util::write_file_atomic(root / "etc/apt/sources.list", sources);
  return r;
}

std::vector<std::string> apt_args(const fs::path& root, const std::string& arch) {
  const std::string r = root.string();
  return {"-o", "Dir=" + r,
          "-o", "Dir::State::status=" + (root / "var" / "lib" / "dpkg" / "status").string(),
          "-o", "Dir::Etc::Trusted=" + r + "/etc/apt/trusted.gpg",
          "-o", "Dir::Etc::TrustedParts=" + r + "/etc/apt/trusted.gpg.d",
          "-o", "APT::Architecture=" + arch,
          "-o", "APT::Architectures::=" + arch,
          "-o", "Debug::NoLocking=1",
          "-o", "Acquire::Languages=none",
          "-o", "APT::Install-Recommends=0",
          "-o", "APT::Install-Suggests=0",
          "-o", "APT::Sandbox::User=root",
          "-o", "Dpkg::Use-Pty=0",
          "-q"};
}

util::ProcessResult run_apt(const AptRoot& r, const std::string& arch, const std::vector<std::string>& tail) {
  std::vector<std::string> argv = {"apt-get"};
  for (auto& a : apt_args(r.root, arch)) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), tail.begin(), tail.end());
  util::ProcessOptions po;
  po.timeout_s = 300;
  // apt reads APT_CONFIG first: the private root's empty file, never the host's apt.conf.
  po.env_set = {"APT_CONFIG=" + (r.root / "etc/apt/apt.conf").string(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"};
  return util::run_process(argv, po, "install apt (apt-get resolves a debs layer's dependencies)");
}

// apt's E: and W: lines, for an error message.
std::string apt_reasons(const util::ProcessResult& p) {
  std::string out;
  std::istringstream in(p.err + "\n" + p.out);
  bool after_unmet = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("E: ", 0) == 0 || after_unmet) {
      std::string t = util::trim(line);
      if (!t.empty()) {
        out += (out.empty() ? " " : "; ") + t;
      }
    }
    if (line.find("unmet dependencies") != std::string::npos || line.find("Depends:") != std::string::npos) {
      after_unmet = true;
    }
  }
  if (out.empty()) {
    out = " " + util::trim(p.err.empty() ? p.out : p.err);
  }
  return out;
}

} // namespace

Resolution resolve(const std::vector<RepositoryIndex>& repos, const std::string& status,
                   const std::vector<std::string>& requests, const std::string& arch, const fs::path& work,
                   const std::string& where) {
  util::TempDir dir(work, "apt-root-");
  AptRoot root = make_root(dir.path(), repos, status, arch);
  util::ProcessResult up = run_apt(root, arch, {"update"});
  if (up.exit_code != 0) {
    throw Error(ErrorKind::input, where + ": apt could not read the repositories' indexes:" + apt_reasons(up),
                "check the repositories' components; this is apt reading files paddle-image verified");
  }
  std::vector<std::string> tail = {"-y", "--print-uris", "install"};
  tail.insert(tail.end(), requests.begin(), requests.end());
  util::ProcessResult p = run_apt(root, arch, tail);
  if (p.exit_code != 0) {
    throw Error(ErrorKind::input, where + ": apt cannot install " + util::join(requests, " ") + ":" + apt_reasons(p),
                "check the names and versions against the repositories (apt-cache policy NAME on a machine "
                "with them), or add the repository or component that has them");
  }
  // Every record of the verified indexes, by the file URL apt was given for it.
  std::map<std::string, std::pair<PackageRecord, std::string>> by_url;
  for (std::size_t i = 0; i < repos.size(); ++i) {
    for (const auto& c : repos[i].components) {
      for (const auto& para : parse_paragraphs(c.packages, repos[i].repo.url + " " + c.path)) {
        if (auto rec = package_record(para)) {
          by_url["file:" + root.mirrors[i].string() + "/" + rec->filename] = {*rec, repos[i].repo.url};
        }
      }
    }
  }
  std::map<std::string, std::string> installed; // name:arch -> version
  for (const auto& para : parse_paragraphs(status, "the base's var/lib/dpkg/status")) {
    if (para.value("Status").find(" installed") != std::string::npos) {
      installed[para.value("Package") + ":" + para.value("Architecture")] = para.value("Version");
    }
  }
  Resolution res;
  std::istringstream in(p.out);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 2 || line.front() != '\'') {
      continue;
    }
    std::string uri = util::percent_decode(line.substr(1, line.find('\'', 1) - 1));
    auto it = by_url.find(uri);
    if (it == by_url.end()) {
      throw Error(ErrorKind::internal, where + ": apt named " + uri + ", which no verified index lists");
    }
    const PackageRecord& rec = it->second.first;
    if (rec.filename.find("..") != std::string::npos || rec.filename.front() == '/') {
      throw Error(ErrorKind::integrity,
                  where + ": the index of " + util::redact_url(it->second.second) + " gives " + rec.package +
                      " the file name '" + rec.filename + "', which leaves the repository",
                  "this repository's index cannot be trusted: use another mirror");
    }
    if (rec.sha256.empty()) {
      throw Error(ErrorKind::integrity,
                  where + ": the index of " + util::redact_url(it->second.second) + " gives no SHA256 for " +
                      rec.package + " " + rec.version,
                  "a debs layer locks packages by SHA-256; use a repository whose index lists it");
    }
    for (const std::string& a : {rec.architecture, arch, std::string("all")}) {
      auto was = installed.find(rec.package + ":" + a);
      if (was != installed.end()) {
        throw Error(ErrorKind::input,
                    where + ": apt would upgrade the base's " + rec.package + " " + was->second + " to " + rec.version +
                        " (needed by " + util::join(requests, " ") + ")",
                    "a debs layer adds packages and does not replace the base's: use a base that has " + rec.package +
                        " " + rec.version + " or later, or pin the requested packages to versions the base's " +
                        rec.package + " satisfies");
      }
    }
    res.packages.push_back(LockedPackage{rec.package, rec.version, rec.architecture, rec.multi_arch, rec.filename,
                                         rec.sha256, rec.size, it->second.second});
  }
  std::istringstream again(p.out);
  for (std::string line; std::getline(again, line);) {
    // "libc6 is already the newest version (2.36-9+deb12u4)."
    auto at = line.find(" is already the newest version (");
    if (at != std::string::npos) {
      res.already.push_back(
          line.substr(0, at) + " " +
          line.substr(at + 32, line.rfind(')') == std::string::npos ? std::string::npos : line.rfind(')') - at - 32));
    }
  }
  return res;
}

} // namespace debian
