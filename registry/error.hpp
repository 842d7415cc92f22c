#pragma once
// The typed registry error: an HTTP status and the OCI error codes of the body
// ({"errors":[{"code":"MANIFEST_UNKNOWN","message":...}]}), thrown as the util::Error
// whose kind error_kind() gives, so everything above sees one util::Error with an
// exit code while whoever cares can catch RegistryError and read the codes.
#include "registry/http.hpp"
#include "util/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace registry {

// The OCI distribution error codes the client reacts to (the spec lists more; any
// code a registry sends is kept, known or not).
namespace codes {
inline constexpr std::string_view k_blob_unknown = "BLOB_UNKNOWN";
inline constexpr std::string_view k_digest_invalid = "DIGEST_INVALID";
inline constexpr std::string_view k_size_invalid = "SIZE_INVALID";
inline constexpr std::string_view k_manifest_unknown = "MANIFEST_UNKNOWN";
inline constexpr std::string_view k_name_unknown = "NAME_UNKNOWN";
inline constexpr std::string_view k_denied = "DENIED";
inline constexpr std::string_view k_unauthorized = "UNAUTHORIZED";
inline constexpr std::string_view k_too_many_requests = "TOOMANYREQUESTS";
} // namespace codes

// An error body, read leniently: the codes in order, and a one-line summary
// ("CODE: message; CODE: message", or the start of a body that is not JSON).
struct ErrorBody {
  std::vector<std::string> codes;
  std::string summary;
};
ErrorBody parse_error_body(const std::string& body);
// The summary of a response's error body.
std::string error_summary(const Response& r);

// The one mapping from what a registry answered to an error kind (and so to an exit
// code, util::exit_code): 401 and 403 (UNAUTHORIZED, DENIED) are `auth`; a 400 with
// DIGEST_INVALID or SIZE_INVALID is `integrity` (the bytes do not match their
// digest); everything else (BLOB_UNKNOWN, MANIFEST_UNKNOWN, NAME_UNKNOWN, 429
// TOOMANYREQUESTS, 5xx) is `registry`.
util::ErrorKind error_kind(long status, const std::vector<std::string>& error_codes);

class RegistryError : public util::Error {
public:
  // The kind is error_kind(status, error_codes).
  RegistryError(long status, std::vector<std::string> error_codes, const std::string& message, std::string hint = {});
  long status() const { return m_status; }
  const std::vector<std::string>& codes() const { return m_codes; }
  bool has_code(std::string_view code) const;
  std::exception_ptr in_context(const std::string& context) const override;

private:
  long m_status;
  std::vector<std::string> m_codes;
};

} // namespace registry
