#include "debian/database.hpp"

#include "debian/control.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#include <sstream>

namespace debian {

using util::Error;
using util::ErrorKind;

namespace {

std::string unslash(const std::string& p) {
  std::size_t i = 0;
  while (i < p.size() && p[i] == '/') {
    ++i;
  }
  return p.substr(i);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

} // namespace

std::vector<Diversion> parse_diversions(const std::string& text, const std::string& what) {
  std::vector<std::string> lines = lines_of(text);
  if (lines.size() % 3 != 0) {
    throw Error(ErrorKind::input,
                what + ": " + std::to_string(lines.size()) + " lines, not triples of from, to and package",
                "the base's dpkg database is damaged: repair it with dpkg-divert in the base");
  }
  std::vector<Diversion> out;
  for (std::size_t i = 0; i < lines.size(); i += 3) {
    if (lines[i].empty() || lines[i].front() != '/' || lines[i + 1].empty() || lines[i + 1].front() != '/') {
      throw Error(ErrorKind::input,
                  what + ":" + std::to_string(i + 1) + ": '" + lines[i].substr(0, 120) + "' and '" +
                      lines[i + 1].substr(0, 120) + "' are not absolute paths",
                  "the base's dpkg database is damaged: repair it with dpkg-divert in the base");
    }
    out.push_back(Diversion{lines[i], lines[i + 1], lines[i + 2] == ":" ? std::string() : lines[i + 2]});
  }
  return out;
}

std::map<std::string, std::int64_t> parse_id_file(const std::string& text) {
  std::map<std::string, std::int64_t> out;
  for (const auto& line : lines_of(text)) {
    auto f = util::split(line, ':');
    if (f.size() >= 3 && !f[0].empty() && !f[2].empty() && f[2].find_first_not_of("0123456789") == std::string::npos &&
        f[2].size() < 11) {
      out.emplace(f[0], std::stoll(f[2]));
    }
  }
  return out;
}

std::map<std::string, StatOverride> parse_statoverride(const std::string& text, const std::string& passwd,
                                                       const std::string& group, const std::string& what) {
  auto users = parse_id_file(passwd);
  auto groups = parse_id_file(group);
  std::map<std::string, StatOverride> out;
  int lineno = 0;
  for (const auto& line : lines_of(text)) {
    ++lineno;
    if (util::trim(line).empty()) {
      continue;
    }
    const std::string where = what + ":" + std::to_string(lineno);
    std::istringstream in(line);
    std::string user, grp, mode, path;
    in >> user >> grp >> mode;
    std::getline(in >> std::ws, path);
    if (path.empty() || path.front() != '/' || mode.empty() ||
        mode.find_first_not_of("01234567") != std::string::npos || mode.size() > 5) {
      throw Error(ErrorKind::input, where + ": '" + line.substr(0, 120) + "' is not USER GROUP MODE PATH",
                  "the base's dpkg database is damaged: repair it with dpkg-statoverride in the base");
    }
    StatOverride o;
    o.mode = static_cast<std::uint32_t>(std::stoul(mode, nullptr, 8)) & 07777;
    auto id = [&](const std::string& name, const std::map<std::string, std::int64_t>& ids, const char* file,
                  std::string& keep) -> std::int64_t {
      if (!name.empty() && name.front() == '#' && name.size() > 1 && name.size() < 12 &&
          name.find_first_not_of("0123456789", 1) == std::string::npos) {
        return std::stoll(name.substr(1));
      }
      auto it = ids.find(name);
      if (it == ids.end()) {
        throw Error(ErrorKind::input, where + ": '" + name + "' is not in the base's " + file,
                    "dpkg cannot apply this override either: add the name in the base or remove the override");
      }
      keep = name;
      return it->second;
    };
    o.uid = id(user, users, "etc/passwd", o.user);
    o.gid = id(grp, groups, "etc/group", o.group);
    out[unslash(path)] = o;
  }
  return out;
}

Database::Database(const std::map<std::string, std::string>& files,
                   const std::function<std::string(const std::string&)>& canonical) {
  const std::string info = "var/lib/dpkg/info/";
  for (auto it = files.lower_bound(info); it != files.end() && it->first.rfind(info, 0) == 0; ++it) {
    const std::string& path = it->first;
    if (path.size() <= info.size() + 5 || path.compare(path.size() - 5, 5, ".list") != 0 ||
        path.find('/', info.size()) != std::string::npos) {
      continue;
    }
    m_lists.push_back(Listed{path.substr(info.size(), path.size() - info.size() - 5), it->second, {}});
    const std::size_t index = m_lists.size() - 1;
    for (const auto& line : lines_of(it->second)) {
      std::string rel = unslash(line);
      if (rel.empty() || rel == ".") {
        continue;
      }
      m_owners[canonical(rel)].emplace_back(index, line);
    }
  }
  auto get = [&](const char* path) {
    auto f = files.find(path);
    return f == files.end() ? std::string() : f->second;
  };
  for (const auto& p : parse_paragraphs(get("var/lib/dpkg/status"), "the base's var/lib/dpkg/status")) {
    std::string status = p.value("Status");
    if (status.size() > 10 && status.compare(status.size() - 10, 10, " installed") == 0) {
      m_versions[p.value("Package")] = p.value("Version");
    }
  }
  for (auto& d : parse_diversions(get("var/lib/dpkg/diversions"), "the base's var/lib/dpkg/diversions")) {
    m_diversions[unslash(d.from)] = d;
  }
  m_overrides = parse_statoverride(get("var/lib/dpkg/statoverride"), get("etc/passwd"), get("etc/group"),
                                   "the base's var/lib/dpkg/statoverride");
}

std::vector<std::string> Database::owners(const std::string& canonical_path) const {
  std::vector<std::string> out;
  auto it = m_owners.find(canonical_path);
  if (it == m_owners.end()) {
    return out;
  }
  for (const auto& [index, recorded] : it->second) {
    const Listed& l = m_lists[index];
    if (l.disowned.count(recorded) == 0 && (out.empty() || out.back() != l.name)) {
      out.push_back(l.name);
    }
  }
  return out;
}

std::string Database::version_of(const std::string& name) const {
  auto it = m_versions.find(name);
  return it == m_versions.end() ? std::string() : it->second;
}

void Database::disown(const std::string& canonical_path, const std::string& info_name) {
  auto it = m_owners.find(canonical_path);
  if (it == m_owners.end()) {
    return;
  }
  for (const auto& [index, recorded] : it->second) {
    if (m_lists[index].name == info_name) {
      m_lists[index].disowned.insert(recorded);
    }
  }
}

std::map<std::string, std::string> Database::changed_lists() const {
  std::map<std::string, std::string> out;
  for (const auto& l : m_lists) {
    if (l.disowned.empty()) {
      continue;
    }
    std::string text;
    for (const auto& line : lines_of(l.text)) {
      if (l.disowned.count(line) == 0) {
        text += line + "\n";
      }
    }
    out["var/lib/dpkg/info/" + l.name + ".list"] = text;
  }
  return out;
}

const Diversion* Database::diversion(const std::string& path) const {
  auto it = m_diversions.find(path);
  return it == m_diversions.end() ? nullptr : &it->second;
}

const StatOverride* Database::statoverride(const std::string& path) const {
  auto it = m_overrides.find(path);
  return it == m_overrides.end() ? nullptr : &it->second;
}

} // namespace debian
