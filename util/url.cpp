#include "util/url.hpp"

#include "util/encoding.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace util {

namespace {

bool scheme_char(char c, bool first) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) || (!first && (std::isdigit(u) || c == '+' || c == '-' || c == '.'));
}

} // namespace

std::string Url::authority() const {
  return port.empty() ? host : host + ":" + port;
}

std::string Url::str(bool with_userinfo) const {
  std::string out = scheme + "://";
  if (with_userinfo && !userinfo.empty()) {
    out += userinfo + "@";
  }
  out += authority() + path;
  if (has_query) {
    out += "?" + query;
  }
  if (has_fragment) {
    out += "#" + fragment;
  }
  return out;
}

std::optional<Url> parse_url(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < sep; ++i) {
    if (!scheme_char(text[i], i == 0)) {
      return std::nullopt;
    }
  }
  Url u;
  u.scheme = ascii_lower(text.substr(0, sep));
  std::size_t start = sep + 3;
  std::size_t end = text.find_first_of("/?#", start);
  std::string_view auth = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  if (auto at = auth.rfind('@'); at != std::string_view::npos) {
    u.userinfo = std::string(auth.substr(0, at));
    auth = auth.substr(at + 1);
  }
  if (!auth.empty() && auth.front() == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos) {
      return std::nullopt;
    }
    u.host = std::string(auth.substr(0, close + 1));
    auth = auth.substr(close + 1);
    if (!auth.empty()) {
      if (auth.front() != ':') {
        return std::nullopt;
      }
      u.port = std::string(auth.substr(1));
    }
  } else {
    auto colon = auth.rfind(':');
    u.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) {
      u.port = std::string(auth.substr(colon + 1));
    }
  }
  // Only file: URLs have an empty authority ("file:///srv/wheels").
  bool empty_ok = u.scheme == "file" && u.userinfo.empty() && u.port.empty();
  if ((u.host.empty() && !empty_ok) || u.host == "[]" ||
      !std::all_of(u.port.begin(), u.port.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  std::string_view rest = end == std::string_view::npos ? std::string_view() : text.substr(end);
  if (auto hash = rest.find('#'); hash != std::string_view::npos) {
    u.has_fragment = true;
    u.fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    u.has_query = true;
    u.query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  u.path = rest.empty() ? "/" : std::string(rest);
  return u;
}

std::string without_userinfo(const std::string& url) {
  auto u = parse_url(url);
  if (!u || u->userinfo.empty()) {
    return url;
  }
  return u->str(false);
}

bool is_secret_query_parameter(std::string_view name) {
  static const std::array<std::string_view, 16> secret = {"x-amz-signature",
                                                          "x-amz-credential",
                                                          "x-amz-security-token",
                                                          "x-goog-signature",
                                                          "x-goog-credential",
                                                          "signature",
                                                          "sig",
                                                          "token",
                                                          "access_token",
                                                          "x-ms-signature",
                                                          "x-oss-signature",
                                                          "ossaccesskeyid",
                                                          "awsaccesskeyid",
                                                          "password",
                                                          "client_secret",
                                                          "x-goog-signature2"};
  std::string n = ascii_lower(name);
  return std::find(secret.begin(), secret.end(), n) != secret.end();
}

namespace {

// A query string with the value of every secret parameter (of every parameter, with
// `all`) replaced by "***".
std::string redact_query(const std::string& query, bool all = false) {
  std::string q;
  std::size_t i = 0;
  while (i <= query.size()) {
    auto amp = query.find('&', i);
    std::string item = query.substr(i, amp == std::string::npos ? std::string::npos : amp - i);
    auto eq = item.find('=');
    if (eq != std::string::npos && (all || is_secret_query_parameter(item.substr(0, eq)))) {
      item = item.substr(0, eq) + "=***";
    }
    q += (i == 0 ? "" : "&") + item;
    if (amp == std::string::npos) {
      break;
    }
    i = amp + 1;
  }
  return q;
}

bool url_end(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || std::string_view("\"'<>`").find(c) != std::string_view::npos;
}

// Request targets without a scheme ("GET /v2/r/blobs/sha256:..?X-Amz-Signature=..",
// an HTTP trace's request line): the query of every token that starts with '/' (of
// every token, and all its values, with `all`).
std::string redact_path_queries(const std::string& text, bool all = false) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto q = text.find('?', i);
    if (q == std::string::npos) {
      break;
    }
    std::size_t start = q;
    while (start > i && !url_end(text[start - 1])) {
      --start;
    }
    std::size_t end = q + 1;
    while (end < text.size() && !url_end(text[end])) {
      ++end;
    }
    out += text.substr(i, q + 1 - i);
    std::string query = text.substr(q + 1, end - q - 1);
    out += all ? redact_query(query, true) : start < q && text[start] == '/' ? redact_query(query) : query;
    i = end;
  }
  out += text.substr(std::min(i, text.size()));
  return out;
}

// An Authorization value wherever it appears, however a server quoted it (a registry
// error body that echoes the request's headers as JSON, `"Authorization":["Basic
// dXNl..."]`): the credential after "Basic" or "Bearer" (any case) when it is at least
// 8 token characters, so "Basic auth" or `Bearer realm="..."` stay readable.
std::string redact_auth_tokens(const std::string& text) {
  auto token_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-._~+/=").find(c) != std::string_view::npos;
  };
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t best = std::string::npos, word = 0;
    for (std::string_view scheme : {std::string_view("basic "), std::string_view("bearer ")}) {
      std::size_t at = i;
      while (at < text.size()) {
        std::size_t k = at;
        std::size_t n = 0;
        while (n < scheme.size() && k + n < text.size() &&
               std::tolower(static_cast<unsigned char>(text[k + n])) == scheme[n]) {
          ++n;
        }
        if (n == scheme.size() && (k == 0 || !std::isalnum(static_cast<unsigned char>(text[k - 1])))) {
          break;
        }
        ++at;
      }
      if (at < text.size() && at < best) {
        best = at;
        word = scheme.size();
      }
    }
    if (best == std::string::npos) {
      break;
    }
    std::size_t start = best + word;
    while (start < text.size() && text[start] == ' ') {
      ++start;
    }
    std::size_t end = start;
    while (end < text.size() && token_char(text[end])) {
      ++end;
    }
    // Only '=' may end a token (base64 padding); "realm=" is a parameter, not a credential.
    std::size_t core = end;
    while (core > start && text[core - 1] == '=') {
      --core;
    }
    bool credential =
        core - start >= 8 && std::string_view(text).substr(start, core - start).find('=') == std::string_view::npos;
    out += text.substr(i, start - i);
    out += credential ? "[redacted]" : text.substr(start, end - start);
    i = end;
  }
  out += text.substr(std::min(i, text.size()));
  return out;
}

} // namespace

std::string hide_query_values(const std::string& text) {
  return redact_path_queries(text, true);
}

std::string redact_url(const std::string& url) {
  auto u = parse_url(url);
  if (!u) {
    return url;
  }
  if (!u->userinfo.empty()) {
    u->userinfo = "***";
  }
  if (u->has_query) {
    u->query = redact_query(u->query);
  }
  return u->str(true);
}

namespace {

// Command-line secrets: the value after --password/--token/... (or after its '='), and
// the password half of `-u USER:PASS` / `--user USER:PASS` (curl, wget).
std::string redact_flags(const std::string& text) {
  static const std::array<std::string_view, 8> secret_flags = {"--password",      "--passwd",        "--token",
                                                               "--secret",        "--access-token",  "--auth-token",
                                                               "--http-password", "--proxy-password"};
  std::string out;
  std::size_t i = 0;
  bool hide_next = false;
  bool user_next = false;
  while (i < text.size()) {
    std::size_t end = i;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) {
      ++end;
    }
    std::string word = text.substr(i, end - i);
    if (!word.empty()) {
      if (hide_next) {
        word = "***";
      } else if (user_next && word.find(':') != std::string::npos) {
        word = word.substr(0, word.find(':')) + ":***";
      } else {
        auto eq = word.find('=');
        std::string flag = ascii_lower(word.substr(0, eq));
        if (std::find(secret_flags.begin(), secret_flags.end(), flag) != secret_flags.end() &&
            eq != std::string::npos) {
          word = word.substr(0, eq) + "=***";
        } else if (flag == "--user" && eq != std::string::npos && word.find(':', eq) != std::string::npos) {
          word = word.substr(0, word.find(':', eq)) + ":***";
        }
      }
      std::string flag = ascii_lower(word);
      hide_next = std::find(secret_flags.begin(), secret_flags.end(), flag) != secret_flags.end();
      user_next = flag == "-u" || flag == "--user";
    }
    out += word;
    i = end;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) {
      out += text[i++];
    }
  }
  return out;
}

} // namespace

std::string redact_text(std::string_view input) {
  std::string flags_done = redact_flags(std::string(input));
  std::string_view text = flags_done;
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto sep = text.find("://", i);
    // An Authorization header's value, up to the end of the line.
    auto auth = text.find("uthorization:", i);
    if (auth != std::string_view::npos && auth > 0 && (text[auth - 1] == 'A' || text[auth - 1] == 'a') &&
        (sep == std::string_view::npos || auth < sep)) {
      std::size_t value = auth + 13;
      auto eol = text.find_first_of("\r\n", value);
      out += std::string(text.substr(i, value - i)) + " [redacted]";
      i = eol == std::string_view::npos ? text.size() : eol;
      continue;
    }
    if (sep == std::string_view::npos) {
      out += std::string(text.substr(i));
      break;
    }
    // The URL starts at its scheme and ends at white space, a quote or a bracket.
    std::size_t start = sep;
    while (start > i && scheme_char(text[start - 1], false)) {
      --start;
    }
    std::size_t end = sep + 3;
    while (end < text.size() && !url_end(text[end])) {
      ++end;
    }
    out += std::string(text.substr(i, start - i));
    out += start == sep ? std::string(text.substr(start, end - start))
                        : redact_url(std::string(text.substr(start, end - start)));
    i = end;
  }
  return redact_auth_tokens(redact_path_queries(out));
}

bool is_loopback_authority(std::string_view authority) {
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || rest.size() == 1 ||
                          rest.substr(1).find_first_not_of("0123456789") != std::string_view::npos)) {
      return false;
    }
    return host.substr(0, close + 1) == "[::1]";
  }
  if (auto colon = host.find(':'); colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) {
      return false;
    }
    host = host.substr(0, colon);
  }
  std::string lower(host);
  for (char& c : lower) {
    c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (lower == "localhost") {
    return true;
  }
  // 127.a.b.c: four decimal octets, each 0-255, the first 127.
  int octets = 0;
  std::size_t pos = 0;
  while (pos <= lower.size()) {
    auto dot = lower.find('.', pos);
    std::string part = lower.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (part.empty() || part.size() > 3 || part.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(part) > 255 || (octets == 0 && part != "127")) {
      return false;
    }
    ++octets;
    if (dot == std::string::npos) {
      break;
    }
    pos = dot + 1;
  }
  return octets == 4;
}

std::string percent_encode(std::string_view s) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 0xF];
    }
  }
  return out;
}

std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string with_query(const std::string& url, const std::string& kv) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + kv;
}

} // namespace util
