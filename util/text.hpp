#pragma once
// Small string helpers that every module used to write for itself: trimming and shell
// quoting. (ASCII lower-casing is util::ascii_lower, in encoding.hpp; percent-encoding
// is in url.hpp.)
#include <string>
#include <string_view>
#include <vector>

namespace util {

// The characters most readers trim: blanks and line ends.
inline constexpr std::string_view k_blanks = " \t\r\n";
// What std::isspace accepts in the C locale (the readers that follow a grammar's "white
// space", PEP 440's for one).
inline constexpr std::string_view k_c_space = " \t\n\v\f\r";

// `s` without the characters of `chars` at either end (trim), at its start (trim_left)
// or at its end (trim_right); a string of nothing else gives "".
std::string trim(std::string_view s, std::string_view chars = k_blanks);
std::string trim_left(std::string_view s, std::string_view chars = k_blanks);
std::string trim_right(std::string_view s, std::string_view chars = k_blanks);
// The same as views into `s` (for readers that keep offsets into a buffer).
std::string_view trim_view(std::string_view s, std::string_view chars = k_blanks);

// `s` cut at every `sep`: n separators give n + 1 parts ("" gives one empty part).
std::vector<std::string> split(std::string_view s, char sep);

// `word` as one POSIX shell word: as it is when it holds only characters no shell
// treats specially (letters, digits, @%+=:,./_-), otherwise in single quotes with each
// ' written as '\''; "" gives ''.
std::string shell_quote(std::string_view word);

} // namespace util
