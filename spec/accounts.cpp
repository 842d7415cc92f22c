// The `accounts` layer's keys (docs/spec.md "Accounts"): groups and users as `groupadd`
// and `useradd` take them, each field checked so that it fits its line of /etc/passwd or
// /etc/group (no ':' or ',' where those separate fields and members, no control
// character) and each name and id used once in the layer.
#include "spec/parse_context.hpp"

#include <map>
#include <set>

namespace spec::detail {

namespace {

// useradd's rule for names (shadow's is_valid_user_name, without its --badname): a
// letter or '_' first, then letters, digits, '_', '.' and '-', a '$' at the end (Samba's
// machine accounts), at most 32 bytes.
bool account_name(const std::string& n) {
  if (n.empty() || n.size() > 32 || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) {
    return false;
  }
  for (std::size_t i = 1; i < n.size(); ++i) {
    char ch = n[i];
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-' ||
              (ch == '$' && i + 1 == n.size());
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::string name_field(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::string v = c.str(n, field);
  if (!account_name(v)) {
    c.fail(
        n, field, "'" + util::escape_bytes(v) + "' is not a user or group name",
        "a letter or '_' first, then letters, digits, '_', '.' or '-', at most 32 characters (as useradd takes them)");
  }
  return v;
}

std::int64_t id_field(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::int64_t v = c.integer(n, field);
  if (v < 0 || v > k_max_id) {
    c.fail(n, field, std::to_string(v) + " is not an id", "ids are 0-" + std::to_string(k_max_id));
  }
  return v;
}

// A passwd field holding a path (home, shell): absolute, no ':' (the field separator).
std::string path_field(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::string v = c.str(n, field);
  check_image_path(c, n, field, v);
  if (v.find(':') != std::string::npos) {
    c.fail(n, field, "'" + util::escape_bytes(v) + "' holds ':', which separates the fields of /etc/passwd",
           "choose a path without ':'");
  }
  return v;
}

GroupSpec parse_group(const Ctx& c, const YAML::Node& g, const std::string& f) {
  c.check_keys(g, f, {"name", "gid"});
  for (const char* k : {"name", "gid"}) {
    if (!g[k]) {
      c.fail(g, f, std::string("missing '") + k + "'", "a group is {name: NAME, gid: GID}, as groupadd -g GID NAME");
    }
  }
  GroupSpec out;
  out.origin = c.where(g);
  out.name = name_field(c, g["name"], f + ".name");
  out.gid = id_field(c, g["gid"], f + ".gid");
  return out;
}

UserSpec parse_user(const Ctx& c, const YAML::Node& u, const std::string& f) {
  c.check_keys(u, f, {"name", "uid", "gid", "home", "create_home", "home_mode", "shell", "comment", "groups"});
  for (const char* k : {"name", "uid"}) {
    if (!u[k]) {
      c.fail(u, f, std::string("missing '") + k + "'",
             "a user is at least {name: NAME, uid: UID}, as useradd -u UID NAME");
    }
  }
  UserSpec out;
  out.origin = c.where(u);
  out.name = name_field(c, u["name"], f + ".name");
  out.uid = id_field(c, u["uid"], f + ".uid");
  if (u["gid"]) {
    out.gid = id_field(c, u["gid"], f + ".gid");
  }
  out.home = u["home"] ? path_field(c, u["home"], f + ".home") : "/home/" + out.name;
  while (out.home.size() > 1 && out.home.back() == '/') {
    out.home.pop_back();
  }
  if (u["create_home"]) {
    out.create_home = boolean(c, u["create_home"], f + ".create_home");
  }
  if (u["home_mode"]) {
    out.home_mode = c.mode(u["home_mode"], f + ".home_mode");
  }
  if (out.create_home && out.home == "/") {
    c.fail(u["home"], f + ".home", "the home directory to make is the root",
           "give the user a home of its own, or create_home: false");
  }
  if (u["shell"]) {
    out.shell = path_field(c, u["shell"], f + ".shell");
  }
  if (u["comment"]) {
    out.comment = c.str(u["comment"], f + ".comment");
    if (has_control(out.comment) || out.comment.find(':') != std::string::npos) {
      c.fail(u["comment"], f + ".comment", "holds ':' or a control character, which /etc/passwd cannot hold",
             "write the comment without them");
    }
  }
  if (u["groups"]) {
    auto names = c.str_list(u["groups"], f + ".groups");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const YAML::Node& at = u["groups"].IsSequence() ? u["groups"][i] : u["groups"];
      out.groups.push_back(name_field(c, at, f + ".groups[" + std::to_string(i) + "]"));
      if (!seen.insert(names[i]).second) {
        c.fail(at, f + ".groups[" + std::to_string(i) + "]", "group '" + names[i] + "' is listed twice",
               "list each group once");
      }
    }
  }
  return out;
}

// Each name and each id once among the layer's groups, and among its users.
template <typename T, typename Id>
void check_unique(const Ctx& c, const YAML::Node& list, const std::string& f, const std::vector<T>& items, Id id,
                  const char* id_name) {
  std::map<std::string, std::size_t> names;
  std::map<std::int64_t, std::size_t> ids;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string at = f + "[" + std::to_string(i) + "]";
    auto [n, fresh_name] = names.emplace(items[i].name, i);
    if (!fresh_name) {
      c.fail(list[i], at + ".name", "'" + items[i].name + "' is also " + f + "[" + std::to_string(n->second) + "]",
             "give each its own name");
    }
    auto [d, fresh_id] = ids.emplace(id(items[i]), i);
    if (!fresh_id) {
      c.fail(list[i], at + "." + id_name,
             std::string(id_name) + " " + std::to_string(id(items[i])) + " is also " + f + "[" +
                 std::to_string(d->second) + "]'s",
             "give each its own id");
    }
  }
}

} // namespace

void parse_accounts_layer(const Ctx& c, const YAML::Node& n, const std::string& key, const std::string& field,
                          const BuildSpec& /*s*/, LayerSpec& l) {
  const YAML::Node& a = n[key];
  const std::string af = field + "." + key;
  if (!a.IsMap()) {
    c.fail(a, af, "must be a map with groups and users",
           "e.g. accounts: {groups: [{name: paddle, gid: 1000}], users: [{name: paddle, uid: 1000, gid: 1000}]}");
  }
  c.check_keys(a, af, {"groups", "users"});
  AccountsLayerSpec body;
  for (const char* list : {"groups", "users"}) {
    const YAML::Node& items = a[list];
    if (items && !items.IsSequence()) {
      c.fail(items, af + "." + list, "must be a list");
    }
    for (std::size_t i = 0; items && i < items.size(); ++i) {
      const std::string f = af + "." + list + "[" + std::to_string(i) + "]";
      if (std::string(list) == "groups") {
        body.groups.push_back(parse_group(c, items[i], f));
      } else {
        body.users.push_back(parse_user(c, items[i], f));
      }
    }
  }
  if (body.groups.empty() && body.users.empty()) {
    c.fail(a, af, "names no group and no user", "list at least one, e.g. users: [{name: paddle, uid: 1000}]");
  }
  check_unique(
      c, a["groups"], af + ".groups", body.groups, [](const GroupSpec& g) { return g.gid; }, "gid");
  check_unique(
      c, a["users"], af + ".users", body.users, [](const UserSpec& u) { return u.uid; }, "uid");
  if (n["owner"]) {
    c.fail(n["owner"], field + ".owner", "an accounts layer's home directories belong to their users",
           "drop owner here");
  }
  l.body = std::move(body);
}

} // namespace spec::detail
