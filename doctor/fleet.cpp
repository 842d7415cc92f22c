#include "doctor/fleet.hpp"

#include "util/error.hpp"

#include <sstream>

namespace doctor {

std::vector<nlohmann::json> parse_reports(const std::string& text, const std::string& what) {
  std::vector<nlohmann::json> reports;
  try {
    reports.push_back(nlohmann::json::parse(text));
    return reports;
  } catch (const std::exception&) {
  }
  std::istringstream in(text);
  std::string line;
  std::string doc;
  int line_no = 0;
  for (; std::getline(in, line);) {
    ++line_no;
    doc += line + "\n";
    try {
      auto j = nlohmann::json::parse(doc);
      reports.push_back(j);
      doc.clear();
    } catch (const std::exception&) {
    }
  }
  if (!doc.empty() && doc.find_first_not_of(" \n\t") != std::string::npos) {
    throw util::Error(util::ErrorKind::input,
                      what + ": not doctor JSON (unparsable near line " + std::to_string(line_no) + ")",
                      "collect with paddle-image doctor --json");
  }
  return reports;
}

bool Fleet::any_fail() const {
  for (const auto& [id, statuses] : by_check) {
    if (statuses.count("FAIL") != 0) {
      return true;
    }
  }
  return false;
}

Fleet aggregate(const std::vector<nlohmann::json>& reports) {
  Fleet f;
  int n = 0;
  for (const auto& r : reports) {
    if (!r.is_object() || !r.contains("checks")) {
      throw util::Error(util::ErrorKind::input, "a report has no 'checks' (not doctor --json output)");
    }
    std::string node = r.value("node", "node" + std::to_string(++n));
    f.nodes.push_back(node);
    for (const auto& c : r["checks"]) {
      f.by_check[c.value("id", std::string("?"))][c.value("status", std::string("?"))].push_back(node);
    }
  }
  return f;
}

nlohmann::json to_json(const Fleet& f) {
  nlohmann::json j = {{"nodes", f.nodes}, {"checks", nlohmann::json::object()}};
  for (const auto& [id, statuses] : f.by_check) {
    j["checks"][id] = statuses;
  }
  return j;
}

std::string to_text(const Fleet& f) {
  std::ostringstream t;
  t << f.nodes.size() << " node(s)\n";
  for (const auto& [id, statuses] : f.by_check) {
    for (const char* s : {"FAIL", "WARN"}) {
      if (auto it = statuses.find(s); it != statuses.end()) {
        t << s << "  " << id << ": ";
        for (std::size_t i = 0; i < it->second.size(); ++i) {
          t << (i ? ", " : "") << it->second[i];
        }
        t << "\n";
      }
    }
  }
  if (!f.any_fail()) {
    t << "no check failed on any node\n";
  }
  return t.str();
}

bool host_failed(const Report& r, bool strict) {
  return r.count(Status::fail) > 0 || (strict && r.count(Status::warn) > 0);
}

} // namespace doctor
