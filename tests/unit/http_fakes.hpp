#pragma once
// Building blocks for unit tests that script a registry::Transport: canned responses
// and request-header lookup.
#include "registry/http.hpp"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace test_support {

// A response with the given status, headers (names lower-cased, as Http stores
// them) and body.
inline registry::Response resp(long status, std::vector<std::pair<std::string, std::string>> headers = {},
                               std::string body = {}) {
  registry::Response r;
  r.status = status;
  for (auto& [k, v] : headers) {
    std::string lower;
    for (char c : k) {
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    r.headers.items.emplace_back(lower, v);
  }
  r.body = std::move(body);
  r.http_version = "1.1";
  return r;
}

// The value of a request header ("Name: value" lines), "" when absent.
inline std::string header(const registry::Request& q, const std::string& name) {
  for (const auto& h : q.headers) {
    if (h.rfind(name + ": ", 0) == 0) {
      return h.substr(name.size() + 2);
    }
  }
  return {};
}

} // namespace test_support
