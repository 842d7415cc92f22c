#pragma once
// The one URL parser and the one redaction of credentials. Every module that splits a
// URL or shows one (messages, logs at every level, --json, rendered files, lock files,
// labels) goes through here, so a credential cannot leak through a copy that forgot.
#include <optional>
#include <string>
#include <string_view>

namespace util {

// scheme://[userinfo@]host[:port][/path][?query][#fragment]; host may be an IPv6
// literal in brackets ("[::1]", kept with its brackets in `host`).
struct Url {
  std::string scheme;   // lower-cased: "https"
  std::string userinfo; // "user:pass" as written (percent-encoded); empty when none
  std::string host;     // "mirror.example.com", "[::1]"
  std::string port;     // "8443"; empty when none
  std::string path;     // "/simple/x/" ("/" when the URL has none)
  std::string query;    // without the '?'; empty when none
  std::string fragment; // without the '#'
  bool has_query = false;
  bool has_fragment = false;

  std::string authority() const; // host[:port], no userinfo
  // The URL written back; without the userinfo when `with_userinfo` is false.
  std::string str(bool with_userinfo = true) const;
};

// nullopt for text that is not an absolute URL with an authority (no "://", an empty
// host other than file:///path's, an unclosed '[', a port that is not digits).
std::optional<Url> parse_url(std::string_view text);

// The URL with one more query parameter `kv` ("name=value", already encoded): after
// '?' when it has no query yet, else after '&'.
std::string with_query(const std::string& url, const std::string& kv);

// A loopback origin, judged from the literal authority ("host[:port]") alone, never
// from DNS: `localhost`, an IPv4 literal in 127.0.0.0/8, `[::1]`. pip counts these as
// secure origins, and Docker and go-containerregistry allow plain HTTP to them.
bool is_loopback_authority(std::string_view authority);

// The URL without userinfo (what may be stored: lock files, specs, labels). Text that
// is not a URL comes back unchanged.
std::string without_userinfo(const std::string& url);

// The URL as it may be shown: userinfo as "***", and the values of query parameters
// that carry credentials (presigned S3/GCS/Azure redirects: X-Amz-Signature,
// X-Amz-Credential, X-Amz-Security-Token, X-Goog-Signature, X-Goog-Credential,
// Signature, sig, token, access_token, ...) as "***".
std::string redact_url(const std::string& url);

// Free text (a message, a log line, a command line) with every URL in it redacted as
// redact_url does, the value of any "Authorization:" header replaced, and command-line
// secrets hidden: the value of --password/--token/--secret (and similar) flags and the
// password of `-u USER:PASS` / `--user USER:PASS`.
std::string redact_text(std::string_view text);

// Text with the value of every query parameter after any '?' replaced by "***", up to
// white space or a quote, whatever the parameter's name: for HTTP trace lines, where a
// redirect's query may hold a token under a name no list knows.
std::string hide_query_values(const std::string& text);

// True when the query parameter name carries a credential (case-insensitive).
bool is_secret_query_parameter(std::string_view name);

// RFC 3986 percent-encoding: every byte but the unreserved characters (ALPHA, DIGIT,
// "-", ".", "_", "~") as %XX with upper-case hex (query values, purl segments).
std::string percent_encode(std::string_view s);
// Every %XX with two hex digits as its byte; anything else, a stray '%' included, as it
// is.
std::string percent_decode(std::string_view s);

} // namespace util
