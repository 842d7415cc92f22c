#include "signing/license.hpp"

#include "signing/provenance.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"

#include <regex>
#include <utility>
#include <vector>

namespace signing {

namespace {

// DEP-5 short license names (copyright-format 1.0, "License Specification"), lower
// case, and the SPDX identifiers they stand for.
const std::map<std::string, std::string>& dep5_to_spdx() {
  static const std::map<std::string, std::string> m{
      {"expat", "MIT"},
      {"mit", "MIT"},
      {"x11", "X11"},
      {"isc", "ISC"},
      {"zlib", "Zlib"},
      {"curl", "curl"},
      {"openssl", "OpenSSL"},
      {"ssleay", "SSLeay-standalone"},
      {"apache-2.0", "Apache-2.0"},
      {"apache-2", "Apache-2.0"},
      {"bsd-2-clause", "BSD-2-Clause"},
      {"bsd-3-clause", "BSD-3-Clause"},
      {"bsd-4-clause", "BSD-4-Clause"},
      {"mpl-1.1", "MPL-1.1"},
      {"mpl-2.0", "MPL-2.0"},
      {"cc0-1.0", "CC0-1.0"},
      {"cc0", "CC0-1.0"},
      {"artistic", "Artistic-1.0-Perl"},
      {"unicode-dfs-2016", "Unicode-DFS-2016"},
      {"icu", "ICU"},
      {"gpl-1", "GPL-1.0-only"},
      {"gpl-1+", "GPL-1.0-or-later"},
      {"gpl-2", "GPL-2.0-only"},
      {"gpl-2+", "GPL-2.0-or-later"},
      {"gpl-3", "GPL-3.0-only"},
      {"gpl-3+", "GPL-3.0-or-later"},
      {"lgpl-2", "LGPL-2.0-only"},
      {"lgpl-2+", "LGPL-2.0-or-later"},
      {"lgpl-2.1", "LGPL-2.1-only"},
      {"lgpl-2.1+", "LGPL-2.1-or-later"},
      {"lgpl-3", "LGPL-3.0-only"},
      {"lgpl-3+", "LGPL-3.0-or-later"},
      {"gfdl-1.2+", "GFDL-1.2-or-later"},
      {"gfdl-1.3+", "GFDL-1.3-or-later"},
      {"bsl-1.0", "BSL-1.0"},
      {"psf-2", "PSF-2.0"},
      {"python-2.0", "Python-2.0"},
  };
  return m;
}

// One field of a paragraph: its first line and the continuation lines (each trimmed,
// each ending in '\n').
struct Field {
  std::string first;
  std::string rest;
};
using Paragraph = std::map<std::string, Field>; // lower-case field name -> field

std::vector<Paragraph> paragraphs_of(const std::string& text) {
  std::vector<Paragraph> out;
  Paragraph cur;
  std::string last;
  for (std::string line : util::split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (util::trim(line, util::k_c_space).empty()) {
      if (!cur.empty()) {
        out.push_back(std::move(cur));
      }
      cur.clear();
      last.clear();
    } else if (line[0] == ' ' || line[0] == '\t') {
      if (!last.empty()) {
        cur[last].rest += util::trim(line, util::k_c_space) + "\n";
      }
    } else if (auto colon = line.find(':'); colon != std::string::npos) {
      last = util::ascii_lower(util::trim(line.substr(0, colon)));
      cur[last] = Field{util::trim(line.substr(colon + 1)), ""};
    }
  }
  if (!cur.empty()) {
    out.push_back(std::move(cur));
  }
  return out;
}

// The expression's names and operators: "A or B, C" -> A, OR, B, ",", C.
std::vector<std::string> tokens_of(const std::string& expr) {
  static const std::regex sep(R"(\s+(or|and)\s+|\s*,\s*(?:and\s+)?)", std::regex::icase);
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), sep); it != std::sregex_iterator(); ++it) {
    out.push_back(expr.substr(pos, static_cast<std::size_t>(it->position()) - pos));
    out.push_back((*it)[1].matched ? util::ascii_lower((*it)[1].str()) : std::string(","));
    pos = static_cast<std::size_t>(it->position() + it->length());
  }
  out.push_back(expr.substr(pos));
  return out;
}

} // namespace

std::string dep5_license(const std::string& copyright, const std::string& package,
                         std::map<std::string, ExtractedLicense>& extracted) {
  static const std::regex format(
      R"(^Format:\s*https?://www\.debian\.org/doc/packaging-manuals/copyright-format/1\.0/?)");
  if (!std::regex_search(copyright.substr(0, 200), format, std::regex_constants::match_continuous)) {
    return "NOASSERTION";
  }
  std::vector<Paragraph> paragraphs = paragraphs_of(copyright);
  const Paragraph* star = nullptr;
  for (const auto& p : paragraphs) {
    auto f = p.find("files");
    if (f != p.end() && f->second.first.substr(0, f->second.first.find_first_of(" \t")) == "*") {
      star = &p;
      break;
    }
  }
  if (star == nullptr || star->count("license") == 0 || star->at("license").first.empty()) {
    return "NOASSERTION";
  }
  std::map<std::string, std::string> standalone; // license name -> text
  for (const auto& p : paragraphs) {
    if (p.count("license") != 0 && p.count("files") == 0) {
      standalone.emplace(p.at("license").first, p.at("license").rest);
    }
  }
  static const std::regex with_exception(R"([A-Za-z0-9.+-]+ with [A-Za-z0-9.+-]+ exception)", std::regex::icase);
  std::vector<std::string> out;
  auto is_op = [](const std::string& s) { return s == "OR" || s == "AND"; };
  for (const auto& raw : tokens_of(star->at("license").first)) {
    std::string name = util::trim(raw);
    if (name.empty() || name == ",") {
      continue;
    }
    if (name == "or" || name == "and") {
      out.push_back(name == "or" ? "OR" : "AND");
      continue;
    }
    if (!out.empty() && !is_op(out.back())) {
      out.emplace_back("AND"); // "A, B": both apply
    }
    std::string low = util::ascii_lower(name);
    if (auto m = dep5_to_spdx().find(low); m != dep5_to_spdx().end()) {
      out.push_back(m->second);
      continue;
    }
    if (name.find(' ') != std::string::npos && !std::regex_match(name, with_exception)) {
      return "NOASSERTION"; // prose, not a license name
    }
    std::string ref = "LicenseRef-" + spdx_idstring(name);
    std::string body = standalone.count(name) != 0 ? util::trim(standalone.at(name)) : std::string();
    if (body.empty()) {
      body = "The license named '" + name + "' in " + package + "'s Debian copyright file";
    }
    if (auto e = extracted.find(ref); e != extracted.end() && e->second.text != body) {
      ref += "-" + spdx_idstring(package);
    }
    extracted.emplace(ref, ExtractedLicense{ref, name, body});
    out.push_back(ref);
  }
  while (!out.empty() && is_op(out.back())) {
    out.pop_back();
  }
  return out.empty() ? "NOASSERTION" : util::join(out, " ");
}

} // namespace signing
