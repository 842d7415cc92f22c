#pragma once
// One project error type. Every failure carries a category that maps to a
// documented exit code (README, "Exit codes"); context is prepended on the way up.
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace util {

enum class ErrorKind {
  usage,        // bad command line
  input,        // invalid spec, wheel, lock file, reference
  io,           // file system trouble
  auth,         // registry credentials refused
  network,      // could not reach a host
  registry,     // registry refused a request
  integrity,    // digest or signature mismatch
  incompatible, // no compatible base image / wheel cannot run on target
  host,         // a host check failed (doctor)
  verification, // a signature or attestation did not verify (verify)
  incomplete,   // content a node or mirror should hold is missing (warm verify)
  interrupted,  // SIGINT or SIGTERM (exit 128 + the signal: 130, 143)
  internal,     // a bug
};

int exit_code(ErrorKind kind);
std::string_view kind_name(ErrorKind kind);

class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message, std::string hint = {});
  ErrorKind kind() const { return m_kind; }
  const std::string& hint() const { return m_hint; }
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
  ~Error() override = default;
  // A copy with "context: " prepended to the message.
  Error with_context(const std::string& context) const;
  // The same, of this error's own type (a registry::RegistryError stays one, with its
  // status and codes), ready to rethrow: what with_context(context, f) throws, so whoever
  // catches the error above the context still sees what it is.
  virtual std::exception_ptr in_context(const std::string& context) const;

private:
  ErrorKind m_kind;
  std::string m_hint;
};

[[noreturn]] void throw_errno(const std::string& what);

// Runs f(); an Error thrown inside gets `context` prepended. Other exceptions pass
// through unchanged (main reports them as internal errors).
template <typename F> decltype(auto) with_context(const std::string& context, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    std::rethrow_exception(e.in_context(context));
  }
}

} // namespace util
