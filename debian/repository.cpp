#include "debian/repository.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/process.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <ctime>
#include <memory>
#include <sstream>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

std::string fetch_all(const Fetch& fetch, const std::string& url) {
  std::string out;
  fetch(
      url, [&](const char* d, std::size_t n) { out.append(d, n); }, [&] { out.clear(); });
  return out;
}

std::string where_of(const Repository& r, const std::string& file) {
  return "repository " + util::redact_url(r.url) + " " + r.suite + " (" + r.origin + "), " + file;
}

} // namespace

std::string repo_url(const Repository& r, const std::string& path) {
  std::string base = r.url;
  while (!base.empty() && base.back() == '/') {
    base.pop_back();
  }
  return base + "/" + path;
}

Verified verify_signature(const fs::path& keyring, const std::string& signed_file, const std::string& signature,
                          const std::string& what, const fs::path& work) {
  std::error_code ec;
  if (!fs::is_regular_file(keyring, ec)) {
    throw Error(ErrorKind::input, what + ": the keyring " + keyring.string() + " is not a file",
                "name the repository's signing keyring: Debian's is /usr/share/keyrings/debian-archive-keyring.gpg "
                "(apt-get install debian-archive-keyring), Ubuntu's /usr/share/keyrings/ubuntu-archive-keyring.gpg "
                "(apt-get install ubuntu-keyring)");
  }
  std::string head = util::read_file_range(keyring, 0, std::min<std::int64_t>(64, fs::file_size(keyring)));
  if (head.rfind("-----BEGIN PGP", 0) == 0) {
    throw Error(ErrorKind::input, what + ": the keyring " + keyring.string() + " is ASCII-armoured",
                "gpgv reads binary keyrings: gpg --dearmor < " + keyring.string() + " > keyring.gpg, and name that");
  }
  util::TempDir dir(work, "gpgv-");
  fs::path data = dir.path() / (signature.empty() ? "InRelease" : "Release");
  util::write_file_atomic(data, signed_file);
  fs::path out = dir.path() / "signed.txt";
  std::vector<std::string> argv = {
      "gpgv", "--homedir", dir.path().string(), "--keyring", fs::absolute(keyring).string(), "--status-fd", "1"};
  if (signature.empty()) {
    argv.insert(argv.end(), {"--output", out.string(), data.string()});
  } else {
    fs::path sig = dir.path() / "Release.gpg";
    util::write_file_atomic(sig, signature);
    argv.insert(argv.end(), {sig.string(), data.string()});
  }
  util::ProcessOptions po;
  po.timeout_s = 120;
  util::ProcessResult r = util::run_process(argv, po, "install gpgv (apt-get install gpgv)");
  std::string fingerprint;
  bool good = false;
  std::istringstream status(r.out);
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("[GNUPG:] VALIDSIG ", 0) == 0) {
      fingerprint = util::split(line.substr(18), ' ').at(0);
    } else if (line.rfind("[GNUPG:] GOODSIG ", 0) == 0) {
      good = true;
    }
  }
  if (r.exit_code != 0 || !good || fingerprint.empty()) {
    std::string why = "the signature does not verify";
    if (r.out.find("NO_PUBKEY") != std::string::npos) {
      why = "it is signed by a key that " + keyring.string() + " does not hold";
    } else if (r.out.find("BADSIG") != std::string::npos) {
      why = "its signature is bad: the file was changed after it was signed";
    } else if (r.out.find("NODATA") != std::string::npos || r.err.find("no valid OpenPGP data") != std::string::npos) {
      why = "it carries no signature";
    }
    throw Error(ErrorKind::integrity, what + ": " + why + "; nothing was written",
                "check that the URL is the repository you meant and that the keyring is the one that signs it");
  }
  Verified v;
  v.fingerprint = fingerprint;
  v.text = signature.empty() ? util::read_file(out) : signed_file;
  return v;
}

std::vector<std::pair<std::string, ReleaseFile>> release_files(const std::string& release, const std::string& what) {
  auto paras = parse_paragraphs(release, what);
  std::vector<std::pair<std::string, ReleaseFile>> out;
  if (paras.empty()) {
    return out;
  }
  const std::string* sums = paras.front().get("SHA256");
  if (sums == nullptr) {
    throw Error(ErrorKind::integrity, what + " lists no SHA256 hashes",
                "the repository is too old or not a Debian archive: apt refuses such a Release too");
  }
  std::istringstream in(*sums);
  for (std::string line; std::getline(in, line);) {
    auto parts = util::split(util::trim(line), ' ');
    parts.erase(std::remove(parts.begin(), parts.end(), std::string()), parts.end());
    if (parts.size() != 3) {
      continue;
    }
    ReleaseFile f;
    f.sha256 = parts[0];
    if (parts[1].find_first_not_of("0123456789") == std::string::npos && parts[1].size() < 19) {
      f.size = std::stoll(parts[1]);
    }
    out.emplace_back(parts[2], f);
  }
  return out;
}

std::string decompress(const std::string& data, const std::string& name, const std::string& what) {
  auto ends = [&](const char* s) {
    std::string suffix = s;
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!ends(".xz") && !ends(".gz") && !ends(".bz2") && !ends(".zst") && !ends(".lz4")) {
    return data;
  }
  std::unique_ptr<archive, decltype(&archive_read_free)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(a.get());
  archive_read_support_format_raw(a.get());
  if (archive_read_open_memory(a.get(), data.data(), data.size()) != ARCHIVE_OK) {
    throw Error(ErrorKind::integrity, what + ": cannot be decompressed: " + archive_error_string(a.get()));
  }
  archive_entry* e = nullptr;
  if (archive_read_next_header(a.get(), &e) != ARCHIVE_OK) {
    throw Error(ErrorKind::integrity, what + ": cannot be decompressed: " + archive_error_string(a.get()));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
    if (n < 0) {
      throw Error(ErrorKind::integrity, what + ": cannot be decompressed: " + archive_error_string(a.get()));
    }
    if (n == 0) {
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

void check_valid_until(const std::string& release, std::int64_t now, const std::string& what) {
  auto paras = parse_paragraphs(release, what);
  if (paras.empty() || paras.front().get("Valid-Until") == nullptr) {
    return;
  }
  std::string v = paras.front().value("Valid-Until");
  struct tm tm {};
  const char* end = ::strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) {
    throw Error(ErrorKind::integrity, what + ": Valid-Until '" + v + "' is not a date apt reads",
                "the repository's Release is malformed: use another mirror");
  }
  std::int64_t until = static_cast<std::int64_t>(::timegm(&tm));
  if (until < now) {
    throw Error(ErrorKind::integrity,
                what + " expired at " + v + " (Valid-Until): the mirror serves an old Release; nothing was written",
                "a mirror that stopped updating, or one replaying an old signed Release: use an up-to-date mirror");
  }
}

RepositoryIndex fetch_repository(const Repository& r, const std::string& arch, const Fetch& fetch,
                                 const fs::path& work) {
  RepositoryIndex idx;
  idx.repo = r;
  const std::string dists = "dists/" + r.suite + "/";
  std::string inrelease_error;
  Verified v;
  std::string release_name = "InRelease";
  try {
    std::string inrelease = fetch_all(fetch, repo_url(r, dists + "InRelease"));
    v = verify_signature(r.keyring, inrelease, "", where_of(r, dists + "InRelease"), work);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::integrity || e.kind() == ErrorKind::input || e.kind() == ErrorKind::usage) {
      throw; // a signature that fails is not retried another way
    }
    inrelease_error = e.what();
    release_name = "Release";
    std::string release, sig;
    try {
      release = fetch_all(fetch, repo_url(r, dists + "Release"));
    } catch (const Error&) {
      throw Error(e.kind(), where_of(r, dists + "InRelease") + ": " + inrelease_error,
                  "check the repository URL and suite (the archive root holds dists/" + r.suite + "/)");
    }
    try {
      sig = fetch_all(fetch, repo_url(r, dists + "Release.gpg"));
    } catch (const Error& gpg) {
      const std::string said = gpg.what();
      const bool missing = gpg.kind() == ErrorKind::io ||
                           (gpg.kind() == ErrorKind::registry &&
                            (said.find("HTTP 404") != std::string::npos || said.find("HTTP 410") != std::string::npos));
      if (!missing) {
        throw; // the signature may be there: a server or network failure is not "unsigned"
      }
      // A Release served without InRelease or Release.gpg is an unsigned repository
      // (apt: "The repository ... is not signed"), not one that cannot be reached.
      throw Error(ErrorKind::integrity,
                  where_of(r, dists + "Release") +
                      ": the repository is not signed: it serves a Release but neither "
                      "InRelease nor Release.gpg (" +
                      inrelease_error + "; Release.gpg: " + gpg.what() + ")",
                  "sign the repository (apt-ftparchive release, then gpg --clearsign into InRelease) with the key of "
                  "the layer's keyring, or ask its owner to; a debs layer installs only from signed repositories");
    }
    v = verify_signature(r.keyring, release, sig, where_of(r, dists + "Release"), work);
  }
  idx.release = v.text;
  idx.signed_by = v.fingerprint;
  idx.release_sha256 = util::sha256_hex(v.text);
  const std::string what = where_of(r, dists + release_name);
  check_valid_until(v.text, static_cast<std::int64_t>(::time(nullptr)), what);
  auto files = release_files(v.text, what);
  auto paras = parse_paragraphs(v.text, what);
  std::string listed_archs = paras.empty() ? "" : paras.front().value("Architectures");
  for (const auto& comp : r.components) {
    const std::string stem = comp + "/binary-" + arch + "/Packages";
    const std::pair<std::string, ReleaseFile>* pick = nullptr;
    for (const char* ext : {".xz", ".gz", ""}) {
      for (const auto& f : files) {
        if (f.first == stem + ext) {
          pick = &f;
          break;
        }
      }
      if (pick != nullptr) {
        break;
      }
    }
    if (pick == nullptr) {
      throw Error(ErrorKind::input,
                  what + " lists no " + stem + " (component '" + comp + "', architecture " + arch + "; it lists " +
                      (listed_archs.empty() ? "no architectures" : "architectures " + listed_archs) + ")",
                  "name a component and suite the repository has, for the spec's platform");
    }
    const std::string file_what = where_of(r, dists + pick->first);
    std::string data = fetch_all(fetch, repo_url(r, dists + pick->first));
    std::string got = util::sha256_hex(data);
    if (got != pick->second.sha256 ||
        (pick->second.size >= 0 && pick->second.size != static_cast<std::int64_t>(data.size()))) {
      throw Error(ErrorKind::integrity,
                  file_what + ": sha256 " + got + " (" + std::to_string(data.size()) + " bytes), but the signed " +
                      release_name + " lists " + pick->second.sha256 + " (" + std::to_string(pick->second.size) +
                      " bytes); nothing was written",
                  "the mirror serves an index the repository did not sign (a mirror caught mid-update, or tampering): "
                  "try again later or use another mirror");
    }
    ComponentIndex c;
    c.component = comp;
    c.path = pick->first;
    c.sha256 = got;
    c.packages = decompress(data, pick->first, file_what);
    idx.components.push_back(std::move(c));
  }
  return idx;
}

} // namespace debian
