// groupadd and useradd on the text of the base's account databases (accounts.hpp).
#include "builder/accounts.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#include <algorithm>

namespace builder {

using util::Error;
using util::ErrorKind;

namespace {

// One of /etc/passwd, /etc/group, /etc/shadow, /etc/gshadow: its lines, and which line
// holds each name and (passwd, group) each id.
class Database {
public:
  Database(std::string path, const std::string& text, bool has_ids) : m_path(std::move(path)), m_has_ids(has_ids) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      start = nl == std::string::npos ? text.size() : nl + 1;
      index(line, m_lines.size());
      m_lines.push_back(line);
    }
    m_base_lines = m_lines.size();
  }
  const std::string& path() const { return m_path; }
  // The line (from 0) holding `name`, or none.
  std::optional<std::size_t> by_name(const std::string& name) const { return find(m_names, name); }
  std::optional<std::size_t> by_id(std::int64_t id) const { return find(m_ids, id); }
  std::vector<std::string> fields(std::size_t line) const { return util::split(m_lines[line], ':'); }
  // Field `i` of `line` ("" past its end).
  std::string field(std::size_t line, std::size_t i) const {
    std::vector<std::string> f = fields(line);
    return i < f.size() ? f[i] : std::string();
  }
  // "the base's /etc/passwd line 23 ('paddle:x:1001:1001::/home/paddle:/bin/sh')", or
  // "this layer's" for a line it added.
  std::string cite(std::size_t line) const {
    return std::string(line < m_base_lines ? "the base's /" : "this layer's /") + m_path + " line " +
           std::to_string(line + 1) + " ('" + util::escape_bytes(m_lines[line]) + "')";
  }
  // "the base's" or "this layer's", for the entry on `line`.
  std::string whose(std::size_t line) const { return line < m_base_lines ? "the base's" : "this layer's"; }
  void append(const std::string& line) {
    index(line, m_lines.size());
    m_lines.push_back(line);
  }
  // Adds `member` to the list in field `field` (group: 3, gshadow: 3) of `line`.
  void add_member(std::size_t line, std::size_t field, const std::string& member) {
    std::vector<std::string> f = fields(line);
    f.resize(std::max(f.size(), field + 1));
    std::vector<std::string> members = f[field].empty() ? std::vector<std::string>{} : util::split(f[field], ',');
    if (std::find(members.begin(), members.end(), member) != members.end()) {
      return;
    }
    members.push_back(member);
    f[field] = util::join(members, ",");
    m_lines[line] = util::join(f, ":");
  }
  std::string text() const {
    std::string out;
    for (const auto& l : m_lines) {
      out += l + "\n";
    }
    return out;
  }

private:
  template <typename K> static std::optional<std::size_t> find(const std::map<K, std::size_t>& m, const K& k) {
    auto it = m.find(k);
    return it == m.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  }
  void index(const std::string& line, std::size_t at) {
    // Comments, blank lines and NIS compat entries ("+", "+@netgroup") name nobody.
    if (line.empty() || line[0] == '#' || line[0] == '+' || line[0] == '-') {
      return;
    }
    std::vector<std::string> f = util::split(line, ':');
    m_names.emplace(f[0], at);
    if (m_has_ids && f.size() > 2 && !f[2].empty() && f[2].find_first_not_of("0123456789") == std::string::npos &&
        f[2].size() <= 10) {
      m_ids.emplace(std::stoll(f[2]), at);
    }
  }
  std::string m_path;
  bool m_has_ids;
  std::vector<std::string> m_lines;
  std::size_t m_base_lines = 0;
  std::map<std::string, std::size_t> m_names;
  std::map<std::int64_t, std::size_t> m_ids;
};

struct Merge {
  const std::string& where;
  Database passwd;
  Database group;
  std::optional<Database> shadow;
  std::optional<Database> gshadow;
  MergedAccounts out;

  [[noreturn]] void clash(const std::string& origin, const std::string& what, const std::string& fix) const {
    throw Error(ErrorKind::input, origin + ": " + where + ": " + what, fix);
  }

  // groupadd -g GID NAME; nothing when the base has that group with that gid already.
  void add_group(const std::string& name, std::int64_t gid, const std::string& origin) {
    auto by_name = group.by_name(name);
    auto by_id = group.by_id(gid);
    if (by_name && by_id == by_name) {
      out.notes.push_back("group " + name + " (" + std::to_string(gid) + ") is in the base already");
      return;
    }
    if (by_name) {
      clash(origin,
            "group '" + name + "' has gid " + std::to_string(gid) + ", but " + group.cite(*by_name) + " gives it gid " +
                group.field(*by_name, 2),
            "use gid " + group.field(*by_name, 2) + " (" + group.whose(*by_name) + " group), or another name");
    }
    if (by_id) {
      clash(origin,
            "gid " + std::to_string(gid) + " of group '" + name + "' is " + group.whose(*by_id) + " group '" +
                group.field(*by_id, 0) + "' (" + group.cite(*by_id) + ")",
            "choose a gid nothing else uses, or use group '" + group.field(*by_id, 0) + "'");
    }
    group.append(name + ":x:" + std::to_string(gid) + ":");
    if (gshadow && !gshadow->by_name(name)) {
      gshadow->append(name + ":!::");
    }
    out.notes.push_back("group " + name + " (" + std::to_string(gid) + ") added");
  }

  // The user's primary group: its gid's, or the group named as the user (made with
  // gid = uid when there is none, as useradd's USERGROUPS_ENAB does).
  std::pair<std::int64_t, std::string> primary_group(const spec::UserSpec& u) {
    if (u.gid) {
      auto g = group.by_id(*u.gid);
      if (!g) {
        clash(u.origin,
              "user '" + u.name + "' has gid " + std::to_string(*u.gid) + ", which no group has (in the base's /" +
                  group.path() + " or this layer's groups)",
              "add {name: " + u.name + ", gid: " + std::to_string(*u.gid) + "} to the layer's groups");
      }
      return {*u.gid, group.field(*g, 0)};
    }
    if (auto g = group.by_name(u.name)) {
      std::string id = group.field(*g, 2);
      if (id.empty() || id.size() > 10 || id.find_first_not_of("0123456789") != std::string::npos) {
        clash(u.origin, "user '" + u.name + "' takes the group of its name, but " + group.cite(*g) + " gives it no gid",
              "give the user a gid");
      }
      return {std::stoll(id), u.name};
    }
    add_group(u.name, u.uid, u.origin);
    return {u.uid, u.name};
  }

  // useradd: the passwd line (and shadow's, locked), the supplementary groups' members.
  void add_user(const spec::UserSpec& u) {
    auto by_name = passwd.by_name(u.name);
    auto by_id = passwd.by_id(u.uid);
    if (by_name && by_id == by_name) {
      out.notes.push_back("user " + u.name + " (" + std::to_string(u.uid) + ") is in the base already: kept as it is");
      return;
    }
    if (by_name) {
      clash(u.origin,
            "user '" + u.name + "' has uid " + std::to_string(u.uid) + ", but " + passwd.cite(*by_name) +
                " gives it uid " + passwd.field(*by_name, 2),
            "use uid " + passwd.field(*by_name, 2) +
                " (the base has the user: drop it from the layer), or another name");
    }
    if (by_id) {
      clash(u.origin,
            "uid " + std::to_string(u.uid) + " of user '" + u.name + "' is " + passwd.whose(*by_id) + " user '" +
                passwd.field(*by_id, 0) + "' (" + passwd.cite(*by_id) + ")",
            "choose a uid the base does not use (1000 and up are free on most bases; check with paddle-image inspect)");
    }
    auto [gid, gname] = primary_group(u);
    for (const auto& s : u.groups) {
      auto g = group.by_name(s);
      if (!g) {
        clash(u.origin,
              "user '" + u.name + "' joins group '" + s + "', which neither the base's /" + group.path() +
                  " nor this layer's groups has",
              "add the group to the layer's groups, or drop it from the user's groups");
      }
      group.add_member(*g, 3, u.name);
      if (gshadow) {
        if (auto gs = gshadow->by_name(s)) {
          gshadow->add_member(*gs, 3, u.name);
        }
      }
    }
    passwd.append(u.name + ":x:" + std::to_string(u.uid) + ":" + std::to_string(gid) + ":" + u.comment + ":" + u.home +
                  ":" + u.shell);
    if (shadow && !shadow->by_name(u.name)) {
      // Locked ("!": no password logs in), no date of the last change (aging off): the
      // same bytes on every day's build, as SOURCE_DATE_EPOCH asks.
      shadow->append(u.name + ":!::0:99999:7:::");
    }
    if (u.create_home) {
      out.homes.push_back({u.home.substr(1), u.home_mode, u.uid, gid, u.name, gname});
    }
    out.notes.push_back("user " + u.name + " (" + std::to_string(u.uid) + ":" + std::to_string(gid) + ") added" +
                        (u.create_home ? ", home " + u.home : ""));
  }
};

std::string content_of(const std::map<std::string, std::string>& base, const std::string& path) {
  auto it = base.find(path);
  return it == base.end() ? std::string() : it->second;
}

} // namespace

MergedAccounts merge_accounts(const spec::AccountsLayerSpec& a, const std::map<std::string, std::string>& base,
                              const std::string& where) {
  Merge m{where,
          Database("etc/passwd", content_of(base, "etc/passwd"), true),
          Database("etc/group", content_of(base, "etc/group"), true),
          std::nullopt,
          std::nullopt,
          {}};
  if (base.count("etc/shadow") != 0) {
    m.shadow.emplace("etc/shadow", base.at("etc/shadow"), false);
  }
  if (base.count("etc/gshadow") != 0) {
    m.gshadow.emplace("etc/gshadow", base.at("etc/gshadow"), false);
  }
  for (const auto& g : a.groups) {
    m.add_group(g.name, g.gid, g.origin);
  }
  for (const auto& u : a.users) {
    m.add_user(u);
  }
  m.out.files["etc/passwd"] = m.passwd.text();
  m.out.files["etc/group"] = m.group.text();
  if (m.shadow) {
    m.out.files["etc/shadow"] = m.shadow->text();
  }
  if (m.gshadow) {
    m.out.files["etc/gshadow"] = m.gshadow->text();
  }
  return std::move(m.out);
}

} // namespace builder
