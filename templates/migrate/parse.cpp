// parse_dockerfile: the text read into instructions as BuildKit reads it (parser
// directives, continuation lines, comments, heredoc bodies).
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace templates {

using migrate::upper;
using util::Error;
using util::ErrorKind;

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t b = 0;
  while (b <= text.size()) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) {
      if (b < text.size()) {
        lines.push_back(text.substr(b));
      }
      break;
    }
    lines.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return lines;
}

// The escape character of the parser directives: leading "# key=value" comments before
// anything else (`# escape=``), '\\' when none sets it.
char escape_directive(const std::vector<std::string>& lines) {
  char escape = '\\';
  for (const auto& raw : lines) {
    std::string l = util::trim(raw, " \t\r");
    if (l.empty() || l[0] != '#') {
      break;
    }
    std::string d = util::ascii_lower(util::trim(l.substr(1), " \t\r"));
    if (d.rfind("escape=", 0) == 0 && d.size() > 7) {
      escape = util::trim(l.substr(1), " \t\r").substr(7)[0];
    } else if (d.find('=') == std::string::npos) {
      break;
    }
  }
  return escape;
}

// The heredoc words of an instruction's line (RUN <<EOF, COPY <<A <<B /dir/), in the
// order they appear: each body follows the line, one after another.
std::vector<std::string> heredoc_words(const std::string& cur) {
  std::vector<std::string> words;
  for (std::size_t hd = cur.find("<<"); hd != std::string::npos; hd = cur.find("<<", hd + 2)) {
    if (hd + 2 >= cur.size() || cur[hd + 2] == '<') {
      hd += 1; // "<<<" is not a heredoc
      continue;
    }
    std::string word = cur.substr(hd + 2);
    if (!word.empty() && word[0] == '-') {
      word.erase(0, 1);
    }
    word = word.substr(0, word.find_first_of(" \t;&|>"));
    if (!word.empty() && (word.front() == '"' || word.front() == '\'')) {
      word = word.substr(1, word.size() >= 2 ? word.size() - 2 : 0);
    }
    if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                             std::string::npos) {
      words.push_back(word);
    }
  }
  return words;
}

} // namespace

std::vector<DockerInstruction> parse_dockerfile(const std::string& text, const std::string& file_name) {
  std::vector<std::string> lines = split_lines(text);
  const char escape = escape_directive(lines);
  std::vector<DockerInstruction> out;
  std::string cur;
  int start = 0;
  bool continuing = false; // the line before ended with the escape character
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string l = lines[n];
    if (!l.empty() && l.back() == '\r') {
      l.pop_back();
    }
    std::string t = util::trim(l, " \t\r");
    if (t.empty() || t[0] == '#') {
      continue; // comments and blank lines, also inside a continued instruction
    }
    const bool first = !continuing; // the instruction's first line
    if (first) {
      start = static_cast<int>(n + 1);
    }
    std::string r = l;
    while (!r.empty() && (r.back() == ' ' || r.back() == '\t')) {
      r.pop_back();
    }
    // A continuation joins the lines as BuildKit does: the escape character and the
    // blanks after it go, nothing is added, and what is before it and the next line's
    // leading blanks stay (`ENV A=x\` then `y` is A=xy; `RUN apk add \` then `    gnupg`
    // keeps its blanks). Only the first line's leading blanks go.
    if (!r.empty() && r.back() == escape) {
      r.pop_back();
      std::size_t lead = first ? r.find_first_not_of(" \t") : 0;
      cur += lead == std::string::npos ? std::string() : r.substr(lead);
      continuing = true;
      continue;
    }
    continuing = false;
    cur += first ? util::trim(l, " \t\r") : l.substr(0, l.find_last_not_of(" \t\r") + 1);
    // Heredocs (RUN <<EOF ... EOF, COPY <<A <<B /dir/): each body belongs to the
    // instruction, one after another in the order their words appear on its line.
    std::vector<std::string> words = heredoc_words(cur);
    for (const auto& word : words) {
      while (n + 1 < lines.size()) {
        ++n;
        std::string body = lines[n];
        if (!body.empty() && body.back() == '\r') {
          body.pop_back();
        }
        cur += "\n" + body;
        if (util::trim(body, " \t\r") == word) {
          break;
        }
      }
    }
    std::size_t sp = cur.find_first_of(" \t");
    DockerInstruction in;
    in.line = start;
    in.escape = escape;
    in.keyword = upper(cur.substr(0, sp));
    in.args = sp == std::string::npos ? "" : util::trim(cur.substr(sp), " \t\r");
    in.text = cur;
    if (in.keyword.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos) {
      throw Error(ErrorKind::input,
                  file_name + ":" + std::to_string(start) + ": '" + in.keyword + "' is not a Dockerfile instruction",
                  "is a line continuation (a trailing backslash) missing above?");
    }
    out.push_back(in);
    cur.clear();
  }
  if (!cur.empty()) {
    DockerInstruction in;
    in.line = start;
    in.escape = escape;
    std::size_t sp = cur.find_first_of(" \t");
    in.keyword = upper(cur.substr(0, sp));
    in.args = sp == std::string::npos ? "" : util::trim(cur.substr(sp), " \t\r");
    in.text = util::trim(cur, " \t\r");
    out.push_back(in);
  }
  return out;
}

} // namespace templates
