#include "util/error.hpp"

#include "util/interrupt.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

namespace util {

int exit_code(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::usage:
    return 2;
  case ErrorKind::input:
    return 3;
  case ErrorKind::io:
    return 4;
  case ErrorKind::auth:
    return 5;
  case ErrorKind::network:
    return 6;
  case ErrorKind::registry:
    return 7;
  case ErrorKind::integrity:
    return 8;
  case ErrorKind::incompatible:
    return 9;
  case ErrorKind::host:
    return 10;
  case ErrorKind::verification:
    return 11;
  case ErrorKind::incomplete:
    return 12;
  case ErrorKind::interrupted:
    return 128 + (interrupted() != 0 ? interrupted() : SIGINT);
  case ErrorKind::internal:
    return 70;
  }
  return 70;
}

std::string_view kind_name(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::usage:
    return "usage";
  case ErrorKind::input:
    return "input";
  case ErrorKind::io:
    return "io";
  case ErrorKind::auth:
    return "auth";
  case ErrorKind::network:
    return "network";
  case ErrorKind::registry:
    return "registry";
  case ErrorKind::integrity:
    return "integrity";
  case ErrorKind::incompatible:
    return "incompatible";
  case ErrorKind::host:
    return "host";
  case ErrorKind::verification:
    return "verification";
  case ErrorKind::incomplete:
    return "incomplete";
  case ErrorKind::interrupted:
    return "interrupted";
  case ErrorKind::internal:
    return "internal";
  }
  return "internal";
}

Error::Error(ErrorKind kind, const std::string& message, std::string hint)
    : std::runtime_error(message), m_kind(kind), m_hint(std::move(hint)) {}

Error Error::with_context(const std::string& context) const {
  return Error(m_kind, context + ": " + what(), m_hint);
}

std::exception_ptr Error::in_context(const std::string& context) const {
  return std::make_exception_ptr(with_context(context));
}

void throw_errno(const std::string& what) {
  int err = errno;
  throw Error(ErrorKind::io, what + ": " + std::strerror(err));
}

} // namespace util
