#include "debian/lock.hpp"

#include "util/error.hpp"
#include "util/url.hpp"

namespace debian {

using util::Error;
using util::ErrorKind;

nlohmann::json request_json(const Request& r) {
  nlohmann::json repos = nlohmann::json::array();
  for (const auto& repo : r.repositories) {
    repos.push_back({{"url", util::redact_url(repo.url)}, {"suite", repo.suite}, {"components", repo.components}});
  }
  return {{"packages", r.packages}, {"repositories", repos}, {"architecture", r.architecture}};
}

std::string lock_text(const Lock& lock) {
  nlohmann::json pk = nlohmann::json::array();
  for (const auto& p : lock.packages) {
    nlohmann::json j = {{"name", p.name},
                        {"version", p.version},
                        {"architecture", p.architecture},
                        {"filename", p.filename},
                        {"sha256", p.sha256},
                        {"size", p.size},
                        {"repository", util::redact_url(p.repository)}};
    if (!p.multi_arch.empty()) {
      j["multi_arch"] = p.multi_arch;
    }
    pk.push_back(j);
  }
  nlohmann::json repos = nlohmann::json::array();
  for (std::size_t i = 0; i < lock.request.repositories.size(); ++i) {
    repos.push_back({{"url", util::redact_url(lock.request.repositories[i].url)},
                     {"release_sha256", i < lock.release_sha256.size() ? lock.release_sha256[i] : ""},
                     {"signed_by", i < lock.signed_by.size() ? lock.signed_by[i] : ""}});
  }
  nlohmann::json j = {{"lockVersion", Lock::k_version},
                      {"comment", "written by paddle-image lock; the build installs exactly these packages"},
                      {"request", request_json(lock.request)},
                      {"base_status_sha256", lock.base_status_sha256},
                      {"repositories", repos},
                      {"packages", pk},
                      {"already_installed", lock.already}};
  return j.dump(2) + "\n";
}

namespace {

std::string field_str(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_string()) {
    throw Error(ErrorKind::input, where + ": '" + key + "' is missing or not a string",
                "write the lock again with paddle-image lock --spec SPEC --layer LAYER");
  }
  return j[key].get<std::string>();
}

} // namespace

Lock parse_lock(const std::string& text, const std::string& file) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  const std::string fix = "write it with paddle-image lock --spec SPEC --layer LAYER";
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::input, file + " is not a debs lock (not a JSON object)", fix);
  }
  if (!j.contains("lockVersion") || j["lockVersion"] != Lock::k_version) {
    throw Error(ErrorKind::input, file + ": lockVersion is not " + std::to_string(Lock::k_version), fix);
  }
  Lock lock;
  try {
    const auto& req = j.at("request");
    lock.request.packages = req.at("packages").get<std::vector<std::string>>();
    lock.request.architecture = req.at("architecture").get<std::string>();
    for (const auto& r : req.at("repositories")) {
      Repository repo;
      repo.url = r.at("url").get<std::string>();
      repo.suite = r.at("suite").get<std::string>();
      repo.components = r.at("components").get<std::vector<std::string>>();
      lock.request.repositories.push_back(repo);
    }
    lock.base_status_sha256 = j.at("base_status_sha256").get<std::string>();
    for (const auto& r : j.at("repositories")) {
      lock.release_sha256.push_back(r.at("release_sha256").get<std::string>());
      lock.signed_by.push_back(r.at("signed_by").get<std::string>());
    }
    if (j.contains("already_installed")) {
      lock.already = j["already_installed"].get<std::vector<std::string>>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, file + ": " + e.what(), fix);
  }
  if (!j.contains("packages") || !j["packages"].is_array()) {
    throw Error(ErrorKind::input, file + ": 'packages' is missing", fix);
  }
  for (std::size_t i = 0; i < j["packages"].size(); ++i) {
    const auto& p = j["packages"][i];
    std::string where = file + ": packages[" + std::to_string(i) + "]";
    if (!p.is_object()) {
      throw Error(ErrorKind::input, where + " is not an object", fix);
    }
    LockedPackage lp;
    lp.name = field_str(p, "name", where);
    lp.version = field_str(p, "version", where);
    lp.architecture = field_str(p, "architecture", where);
    lp.filename = field_str(p, "filename", where);
    lp.sha256 = field_str(p, "sha256", where);
    lp.repository = field_str(p, "repository", where);
    if (p.contains("multi_arch")) {
      lp.multi_arch = field_str(p, "multi_arch", where);
    }
    if (lp.sha256.size() != 64 || lp.sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw Error(ErrorKind::input, where + ".sha256 '" + lp.sha256 + "' is not a SHA-256 in lower-case hex", fix);
    }
    if (lp.filename.find("..") != std::string::npos || lp.filename.empty() || lp.filename.front() == '/') {
      throw Error(ErrorKind::input, where + ".filename '" + lp.filename + "' is not a path under the repository", fix);
    }
    if (!p.contains("size") || !p["size"].is_number_integer()) {
      throw Error(ErrorKind::input, where + ".size is missing or not a number", fix);
    }
    lp.size = p["size"].get<std::int64_t>();
    lock.packages.push_back(lp);
  }
  return lock;
}

} // namespace debian
