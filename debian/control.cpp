#include "debian/control.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <cctype>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

} // namespace

const std::string* Paragraph::get(std::string_view name) const {
  for (const auto& [k, v] : fields) {
    if (same_name(k, name)) {
      return &v;
    }
  }
  return nullptr;
}

std::string Paragraph::value(std::string_view name) const {
  const std::string* v = get(name);
  return v == nullptr ? std::string() : *v;
}

void Paragraph::set(const std::string& name, const std::string& value, std::string_view before) {
  for (auto& [k, v] : fields) {
    if (same_name(k, name)) {
      v = value;
      return;
    }
  }
  auto at = fields.end();
  if (!before.empty()) {
    at = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return same_name(f.first, before); });
  }
  fields.insert(at, {name, value});
}

void Paragraph::erase(std::string_view name) {
  fields.erase(std::remove_if(fields.begin(), fields.end(), [&](const auto& f) { return same_name(f.first, name); }),
               fields.end());
}

std::string Paragraph::text() const {
  std::string out;
  for (const auto& [k, v] : fields) {
    out += k;
    out += ':';
    if (!v.empty() && v.front() != '\n') {
      out += ' ';
    }
    out += v;
    out += '\n';
  }
  return out;
}

std::vector<Paragraph> parse_paragraphs(std::string_view text, const std::string& what) {
  std::vector<Paragraph> out;
  Paragraph cur;
  int lineno = 0;
  std::size_t pos = 0;
  auto flush = [&] {
    if (!cur.fields.empty()) {
      out.push_back(std::move(cur));
    }
    cur = Paragraph{};
  };
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      flush();
      continue;
    }
    if (line.front() == '#') {
      continue; // comments (dpkg allows them in control files)
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (cur.fields.empty()) {
        throw Error(ErrorKind::input,
                    what + ":" + std::to_string(lineno) + ": a continuation line with no field above it",
                    "every paragraph starts with a 'Name: value' line");
      }
      cur.fields.back().second += '\n';
      cur.fields.back().second += line;
      continue;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      throw Error(ErrorKind::input,
                  what + ":" + std::to_string(lineno) + ": '" + std::string(line.substr(0, 60)) +
                      "' is not a 'Name: value' field",
                  "the file is not in Debian's control format (deb822); check that it is the file you meant");
    }
    if (cur.fields.empty()) {
      cur.line = lineno;
    }
    std::string_view v = line.substr(colon + 1);
    std::size_t start = v.find_first_not_of(" \t");
    v = start == std::string_view::npos ? std::string_view() : v.substr(start);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) {
      v.remove_suffix(1);
    }
    cur.fields.emplace_back(std::string(line.substr(0, colon)), std::string(v));
  }
  flush();
  return out;
}

std::optional<PackageRecord> package_record(const Paragraph& p) {
  PackageRecord r;
  r.package = p.value("Package");
  r.version = p.value("Version");
  r.architecture = p.value("Architecture");
  r.filename = p.value("Filename");
  if (r.package.empty() || r.version.empty() || r.architecture.empty() || r.filename.empty()) {
    return std::nullopt;
  }
  r.multi_arch = p.value("Multi-Arch");
  r.sha256 = p.value("SHA256");
  r.source = p.value("Source");
  std::string size = p.value("Size");
  if (!size.empty() && size.find_first_not_of("0123456789") == std::string::npos && size.size() < 19) {
    r.size = std::stoll(size);
  }
  return r;
}

} // namespace debian
