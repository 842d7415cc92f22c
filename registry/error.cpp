#include "registry/error.hpp"

#include "util/encoding.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace registry {

ErrorBody parse_error_body(const std::string& body) {
  ErrorBody out;
  try {
    auto j = nlohmann::json::parse(body);
    std::vector<std::string> parts;
    for (const auto& e : j.at("errors")) {
      std::string code = e.value("code", "");
      std::string message = e.value("message", "");
      std::string part = code;
      if (!message.empty()) {
        part += (part.empty() ? "" : ": ") + message;
      }
      parts.push_back(part);
      if (!code.empty()) {
        out.codes.push_back(code);
      }
    }
    out.summary = util::join(parts, "; ");
  } catch (const std::exception&) {
    // Not an OCI error body (a proxy's HTML page, a plain text line): no codes,
    // and the start of the body, on one line, as the summary.
    out.codes.clear();
    out.summary = body.substr(0, 200);
    for (char& c : out.summary) {
      if (c == '\n' || c == '\r') {
        c = ' ';
      }
    }
  }
  // Server-controlled text: a body that echoes the request's Authorization header or a
  // presigned URL must not carry the credential into a message.
  out.summary = util::redact_text(out.summary);
  return out;
}

std::string error_summary(const Response& r) {
  return parse_error_body(r.body).summary;
}

util::ErrorKind error_kind(long status, const std::vector<std::string>& error_codes) {
  auto has = [&](std::string_view code) {
    return std::find(error_codes.begin(), error_codes.end(), code) != error_codes.end();
  };
  if (status == 401 || status == 403) {
    return util::ErrorKind::auth;
  }
  if (status == 400 && (has(codes::k_digest_invalid) || has(codes::k_size_invalid))) {
    return util::ErrorKind::integrity;
  }
  return util::ErrorKind::registry;
}

RegistryError::RegistryError(long status, std::vector<std::string> error_codes, const std::string& message,
                             std::string hint)
    : util::Error(error_kind(status, error_codes), message, std::move(hint)), m_status(status),
      m_codes(std::move(error_codes)) {}

std::exception_ptr RegistryError::in_context(const std::string& context) const {
  return std::make_exception_ptr(RegistryError(m_status, m_codes, context + ": " + what(), hint()));
}

bool RegistryError::has_code(std::string_view code) const {
  return std::find(m_codes.begin(), m_codes.end(), code) != m_codes.end();
}

} // namespace registry
