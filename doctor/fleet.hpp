#pragma once
// `paddle-image doctor aggregate`: many nodes' `doctor --json` reports read, combined
// into one table of which nodes fail or warn on which check, and the verdicts (the
// fleet's, and one host's, which set the exit status).
#include "doctor/checks.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace doctor {

// The reports in one text: one JSON document, or one per line (kubectl logs of many
// pods; a document may span lines). Anything left that does not parse is an input
// error naming `what` (a file, or "stdin") and the line it ended at.
std::vector<nlohmann::json> parse_reports(const std::string& text, const std::string& what);

// Which nodes ended each check with each status.
struct Fleet {
  std::vector<std::string> nodes;                                                  // in report order
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_check; // id -> status -> nodes
  // Some node FAILed a check.
  bool any_fail() const;
};

// Combines the reports. A report names its node with "node"; one without is "nodeN",
// N its place among all the reports (1-based). A check without an id or a status
// counts under "?". A report that is not an object with "checks" is an input error.
Fleet aggregate(const std::vector<nlohmann::json>& reports);
// {"nodes": [...], "checks": {ID: {STATUS: [nodes]}}}
nlohmann::json to_json(const Fleet& f);
// "N node(s)", then a line per check and status FAIL or WARN naming the nodes, or
// "no check failed on any node".
std::string to_text(const Fleet& f);

// One host's verdict: a check FAILed, or with `strict` one WARNed.
bool host_failed(const Report& r, bool strict);

} // namespace doctor
