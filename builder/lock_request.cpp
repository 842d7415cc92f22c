#include "builder/lock_request.hpp"

#include "util/error.hpp"
#include "util/url.hpp"

namespace builder {

using util::Error;
using util::ErrorKind;

void check_lock_request(const std::string& spec_file, const std::string& requirements,
                        const std::vector<std::string>& index_urls) {
  if (spec_file.empty()) {
    throw Error(ErrorKind::usage, "lock needs --spec FILE (and --layer NAME when it has several wheels layers)",
                "the spec's base and python settings decide which wheels fit: paddle-image lock " + requirements +
                    " -o requirements.lock --spec spec.yaml --layer framework");
  }
  for (const auto& u : index_urls) {
    if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
      throw Error(ErrorKind::usage, "--index-url " + u + ": not an http(s) URL",
                  "give the simple-API root, e.g. https://mirror.example/simple");
    }
  }
}

bool lock_to_stdout(const std::string& output) {
  return output.empty() || output == "-";
}

nlohmann::json lock_report(const python::LockResult& r, const std::string& requirements, const std::string& output,
                           bool all_platforms) {
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& l : r.lines) {
    lines.push_back({{"name", l.name}, {"version", l.version}, {"files", l.files}});
  }
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& u : r.sources.sources.indexes) {
    sources.push_back(util::redact_url(u));
  }
  nlohmann::json fl = nlohmann::json::array();
  for (const auto& u : r.sources.sources.find_links) {
    fl.push_back(util::redact_url(u));
  }
  nlohmann::json j = {{"requirements", requirements},
                      {"output", lock_to_stdout(output) ? nlohmann::json(nullptr) : nlohmann::json(output)},
                      {"indexes", sources},
                      {"find_links", fl},
                      {"index_from", r.sources.described},
                      {"all_platforms", all_platforms},
                      {"lines", lines},
                      {"in_base", r.in_base},
                      {"resolution",
                       {{"decisions", r.decisions},
                        {"conflicts", r.conflicts},
                        {"metadata_fetched", r.metadata_fetched},
                        {"metadata_cached", r.metadata_cached}}},
                      {"warnings", r.warnings}};
  if (lock_to_stdout(output)) {
    // The lock itself is the result; --json wraps it.
    j["lock"] = r.text;
  }
  return j;
}

} // namespace builder
