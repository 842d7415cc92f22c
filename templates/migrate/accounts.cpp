// RUN useradd, adduser, groupadd and addgroup: the accounts layer's users and groups, in
// the Dockerfile's order; the names they make then resolve in COPY --chown and USER.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"

#include <algorithm>

namespace templates::migrate {

namespace {

// The groups base-passwd gives every Debian and Ubuntu system the same gid.
std::optional<std::int64_t> fixed_gid(const std::string& name) {
  static const std::map<std::string, std::int64_t> k_fixed{
      {"root", 0},    {"daemon", 1},     {"bin", 2},      {"sys", 3},      {"adm", 4},    {"tty", 5},
      {"disk", 6},    {"lp", 7},         {"mail", 8},     {"news", 9},     {"uucp", 10},  {"man", 12},
      {"proxy", 13},  {"kmem", 15},      {"dialout", 20}, {"fax", 21},     {"voice", 22}, {"cdrom", 24},
      {"floppy", 25}, {"tape", 26},      {"sudo", 27},    {"audio", 29},   {"dip", 30},   {"www-data", 33},
      {"backup", 34}, {"operator", 37},  {"list", 38},    {"irc", 39},     {"src", 40},   {"shadow", 42},
      {"utmp", 43},   {"video", 44},     {"sasl", 45},    {"plugdev", 46}, {"staff", 50}, {"games", 60},
      {"users", 100}, {"nogroup", 65534}};
  auto it = k_fixed.find(name);
  return it == k_fixed.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
}

std::optional<std::int64_t> number(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  std::int64_t v = std::stoll(s);
  return v <= 4294967294 ? std::optional<std::int64_t>(v) : std::nullopt;
}

// An account name as useradd takes it (a letter or '_', then [A-Za-z0-9_.-], '$' last).
bool account_name(const std::string& n) {
  if (n.empty() || n.size() > 32 || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) {
    return false;
  }
  for (std::size_t i = 1; i < n.size(); ++i) {
    char ch = n[i];
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-' ||
          (ch == '$' && i + 1 == n.size()))) {
      return false;
    }
  }
  return true;
}

// A command's options as (option, value) and its operands: "-ms /bin/bash" gives -m and
// -s /bin/bash; "--uid=5" and "--uid 5" give --uid 5. `takes` lists the options with a
// value (short ones by their letter). Nothing for an option missing its value.
struct Options {
  std::vector<std::pair<std::string, std::string>> opts;
  std::vector<std::string> operands;
};

std::optional<Options> options(const std::vector<std::string>& seg, const std::string& takes_short,
                               const std::vector<std::string>& takes_long) {
  Options out;
  for (std::size_t i = 1; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string name = a.substr(0, a.find('='));
      bool takes = std::find(takes_long.begin(), takes_long.end(), name) != takes_long.end();
      if (a.find('=') != std::string::npos) {
        out.opts.emplace_back(name, a.substr(a.find('=') + 1));
      } else if (takes) {
        if (i + 1 >= seg.size()) {
          return std::nullopt;
        }
        out.opts.emplace_back(name, seg[++i]);
      } else {
        out.opts.emplace_back(name, "");
      }
    } else if (a.size() > 1 && a[0] == '-') {
      for (std::size_t k = 1; k < a.size(); ++k) {
        std::string name = std::string("-") + a[k];
        if (takes_short.find(a[k]) == std::string::npos) {
          out.opts.emplace_back(name, "");
          continue;
        }
        if (k + 1 < a.size()) {
          out.opts.emplace_back(name, a.substr(k + 1));
        } else if (i + 1 < seg.size()) {
          out.opts.emplace_back(name, seg[++i]);
        } else {
          return std::nullopt;
        }
        break;
      }
    } else {
      out.operands.push_back(a);
    }
  }
  return out;
}

bool is(const std::string& opt, const char* s, const char* l) {
  return opt == s || opt == l;
}

} // namespace

bool Mapper::account_command(const std::string& c) {
  return c == "useradd" || c == "adduser" || c == "groupadd" || c == "addgroup";
}

const Layer* Mapper::accounts_layer() const {
  for (const auto& l : m.layers) {
    if (l.accounts) {
      return &l;
    }
  }
  return nullptr;
}

std::optional<std::int64_t> Mapper::known_uid(const std::string& name, const Layer* pending) const {
  if (auto n = number(name)) {
    return n;
  }
  for (const Layer* l : {accounts_layer(), pending}) {
    for (std::size_t i = 0; l != nullptr && i < l->users.size(); ++i) {
      if (l->users[i].name == name) {
        return l->users[i].uid;
      }
    }
  }
  return name == "root" ? std::optional<std::int64_t>(0) : std::nullopt;
}

// A group by number, by name among the accounts made so far (a user's own group has
// the user's uid), or one of base-passwd's fixed groups.
std::optional<std::int64_t> Mapper::known_gid(const std::string& name, const Layer* pending) const {
  if (auto n = number(name)) {
    return n;
  }
  for (const Layer* l : {accounts_layer(), pending}) {
    for (std::size_t i = 0; l != nullptr && i < l->groups.size(); ++i) {
      if (l->groups[i].name == name) {
        return l->groups[i].gid;
      }
    }
    for (std::size_t i = 0; l != nullptr && i < l->users.size(); ++i) {
      if (l->users[i].name == name && !l->users[i].gid) {
        return l->users[i].uid;
      }
    }
  }
  return fixed_gid(name);
}

// The first uid (users) or gid (groups, users' own groups) from 1000 up that no account
// of this Dockerfile has: what useradd and groupadd give on a base without accounts of
// its own (the build refuses a clash with the base's, naming both).
std::int64_t Mapper::free_id(const Layer& pending, bool gid) const {
  std::set<std::int64_t> used;
  for (const Layer* l : {accounts_layer(), &pending}) {
    for (std::size_t i = 0; l != nullptr && i < l->users.size(); ++i) {
      used.insert(gid ? l->users[i].gid.value_or(l->users[i].uid) : l->users[i].uid);
    }
    for (std::size_t i = 0; gid && l != nullptr && i < l->groups.size(); ++i) {
      used.insert(l->groups[i].gid);
    }
  }
  std::int64_t id = 1000;
  while (used.count(id) != 0) {
    ++id;
  }
  return id;
}

// "USER[:GROUP]" of COPY --chown as ids, names resolved as Docker resolves them against
// the image's /etc/passwd and /etc/group (a user without a group: the gid is the uid).
std::optional<std::string> Mapper::numeric_owner(const std::string& owner) const {
  const std::string user = owner.substr(0, owner.find(':'));
  auto uid = known_uid(user);
  std::optional<std::int64_t> gid =
      owner.find(':') == std::string::npos ? uid : known_gid(owner.substr(owner.find(':') + 1));
  if (!uid || !gid) {
    return std::nullopt;
  }
  return std::to_string(*uid) + ":" + std::to_string(*gid);
}

void Mapper::commit_accounts(const Layer& pending) {
  if (pending.users.empty() && pending.groups.empty()) {
    return;
  }
  Layer* l = nullptr;
  for (auto& x : m.layers) {
    l = x.accounts ? &x : l;
  }
  if (l == nullptr) {
    Layer fresh;
    fresh.name = layer_name(m, "accounts");
    fresh.accounts = true;
    m.layers.push_back(fresh);
    l = &m.layers.back();
  }
  l->groups.insert(l->groups.end(), pending.groups.begin(), pending.groups.end());
  l->users.insert(l->users.end(), pending.users.begin(), pending.users.end());
}

// One account command into `pending` (committed once the whole RUN maps), or why it
// does not map.
std::optional<std::string> Mapper::add_account(const std::vector<std::string>& seg, Layer& pending) {
  if (seg[0] == "useradd") {
    return useradd(seg, pending);
  }
  if (seg[0] == "adduser") {
    return adduser(seg, pending);
  }
  return groupadd(seg, pending);
}

namespace {

// A system account's id without -u/-g: the highest free one below 1000, as useradd -r
// and groupadd -r take them (SYS_UID_MAX 999).
std::int64_t free_system_id(const std::set<std::int64_t>& used) {
  std::int64_t id = 999;
  while (id > 100 && used.count(id) != 0) {
    --id;
  }
  return id;
}

std::set<std::int64_t> used_ids(const Layer* committed, const Layer& pending, bool gid) {
  std::set<std::int64_t> used;
  for (const Layer* l : {committed, &pending}) {
    for (std::size_t i = 0; l != nullptr && i < l->users.size(); ++i) {
      used.insert(gid ? l->users[i].gid.value_or(l->users[i].uid) : l->users[i].uid);
    }
    for (std::size_t i = 0; gid && l != nullptr && i < l->groups.size(); ++i) {
      used.insert(l->groups[i].gid);
    }
  }
  return used;
}

} // namespace

// `useradd [-u UID] [-g GROUP] [-G G1,G2] [-m|-M] [-d HOME] [-b BASE] [-s SHELL] [-c
// COMMENT] [-r] [-N] [-U] [-l] NAME`, short options combined as useradd takes them (-ms
// /bin/bash).
std::optional<std::string> Mapper::useradd(const std::vector<std::string>& seg, Layer& pending) {
  auto o =
      options(seg, "ugGdsbcpkefKRPZ",
              {"--uid", "--gid", "--groups", "--home-dir", "--home", "--shell", "--base-dir", "--comment", "--password",
               "--skel", "--expiredate", "--inactive", "--key", "--root", "--prefix", "--selinux-user"});
  if (!o) {
    return std::string("useradd: an option lacks its value");
  }
  if (o->operands.size() != 1 || !account_name(o->operands[0])) {
    return std::string("useradd needs one user name (a letter or '_' first, then letters, digits, '_', '.', '-')");
  }
  AccountUser u;
  u.name = o->operands[0];
  bool uid_given = false;
  bool system = false;
  bool user_group = true;
  std::string base_dir = "/home";
  for (const auto& [k, v] : o->opts) {
    if (is(k, "-u", "--uid")) {
      if (!number(v)) {
        return "useradd -u " + v + ": not a number";
      }
      u.uid = *number(v);
      uid_given = true;
    } else if (is(k, "-g", "--gid")) {
      u.gid = known_gid(v, &pending);
      if (!u.gid) {
        return "useradd -g " + v +
               ": a group neither this Dockerfile makes nor every Debian or Ubuntu base has: give its gid (-g GID)";
      }
    } else if (is(k, "-G", "--groups")) {
      for (const auto& g : util::split(v, ',')) {
        if (!account_name(g)) {
          return "useradd -G " + v + ": '" + g + "' is not a group name";
        }
        u.groups.push_back(g);
      }
    } else if (is(k, "-d", "--home-dir") || k == "--home") {
      if (v.empty() || v[0] != '/' || v.find(':') != std::string::npos) {
        return "useradd -d " + v + ": not an absolute path";
      }
      u.home = v;
    } else if (is(k, "-b", "--base-dir")) {
      base_dir = v;
    } else if (is(k, "-s", "--shell")) {
      u.shell = v;
    } else if (is(k, "-c", "--comment")) {
      u.comment = v;
    } else if (is(k, "-m", "--create-home")) {
      u.create_home = true;
    } else if (is(k, "-M", "--no-create-home")) {
      u.create_home = false;
    } else if (is(k, "-r", "--system")) {
      system = true;
    } else if (is(k, "-N", "--no-user-group")) {
      user_group = false;
    } else if (!(is(k, "-U", "--user-group") || is(k, "-l", "--no-log-init"))) {
      return is(k, "-p", "--password")
                 ? std::string("useradd -p sets a password in the Dockerfile, where the image's history shows it: an "
                               "accounts layer's users are locked (no password logs in); drop -p")
                 : "useradd " + k +
                       " has no accounts equivalent (the layer takes -u, -g, -G, -m, -M, -d, -b, -s, -c, "
                       "-r, -N, -U, -l)";
    }
  }
  return add_user(u, uid_given, system, user_group, base_dir, pending);
}

// A user of useradd or adduser, its uid chosen as they choose it when not given.
std::optional<std::string> Mapper::add_user(AccountUser u, bool uid_given, bool system, bool user_group,
                                            const std::string& base_dir, Layer& pending) {
  if (known_uid(u.name, &pending)) {
    return "adds user " + u.name + ", which " + (u.name == "root" ? "every base has" : "an earlier line adds");
  }
  if (!uid_given) {
    u.uid = system ? free_system_id(used_ids(accounts_layer(), pending, false)) : free_id(pending, false);
    u.note = std::string(system ? "the highest free system uid, as useradd -r chooses"
                                : "the first uid useradd gives on a base without users of its own") +
             " (the Dockerfile gives none); the build refuses it where the base has it";
  }
  if (!u.gid && !user_group) {
    u.gid = 100; // useradd -N: USERS_GID, the `users` group
  }
  if (!u.gid) {
    for (const Layer* l : {accounts_layer(), static_cast<const Layer*>(&pending)}) {
      for (std::size_t i = 0; l != nullptr && i < l->groups.size(); ++i) {
        if (l->groups[i].name == u.name) {
          return "adds user " + u.name + " with a group of its name, but an earlier line adds group " + u.name +
                 " (useradd refuses that): give -g " + u.name;
        }
      }
    }
  }
  if (!u.gid && used_ids(accounts_layer(), pending, true).count(u.uid) != 0) {
    // The user's own group takes the next free gid when its uid is one already (useradd's
    // find_new_gid): a group of its own in the layer.
    AccountGroup g{u.name, system ? free_system_id(used_ids(accounts_layer(), pending, true)) : free_id(pending, true)};
    pending.groups.push_back(g);
    u.gid = g.gid;
  }
  if (base_dir != "/home" && u.home.empty()) {
    u.home = base_dir + "/" + u.name;
  }
  pending.users.push_back(u);
  return std::nullopt;
}

// `adduser USER GROUP`, `addgroup USER GROUP` (Debian's): a user this Dockerfile adds joins a group.
std::optional<std::string> Mapper::add_to_group(const std::string& user, const std::string& group, Layer& pending) {
  for (Layer* l : {const_cast<Layer*>(accounts_layer()), &pending}) {
    for (std::size_t i = 0; l != nullptr && i < l->users.size(); ++i) {
      if (l->users[i].name == user) {
        if (std::find(l->users[i].groups.begin(), l->users[i].groups.end(), group) == l->users[i].groups.end()) {
          l->users[i].groups.push_back(group);
        }
        return std::nullopt;
      }
    }
  }
  return "adds user " + user + " to group " + group + ", but the user is the base's: an accounts layer adds users";
}

// Debian's adduser: a home with /etc/skel in it, /bin/bash (adduser.conf's DSHELL), a
// group of the user's name, no password with --disabled-password.
std::optional<std::string> Mapper::adduser(const std::vector<std::string>& seg, Layer& pending) {
  auto o = options(seg, "", {"--uid", "--gid", "--ingroup", "--home", "--shell", "--gecos", "--comment"});
  if (!o) {
    return std::string("adduser: an option lacks its value");
  }
  if (o->operands.size() == 2) {
    return add_to_group(o->operands[0], o->operands[1], pending);
  }
  if (o->operands.size() != 1 || !account_name(o->operands[0])) {
    return std::string("adduser needs one user name (a letter or '_' first, then letters, digits, '_', '.', '-')");
  }
  AccountUser u;
  u.name = o->operands[0];
  u.create_home = true;
  u.shell = "/bin/bash";
  bool uid_given = false;
  for (const auto& [k, v] : o->opts) {
    if (k == "--uid" && number(v)) {
      u.uid = *number(v);
      uid_given = true;
    } else if (k == "--gid" || k == "--ingroup") {
      u.gid = known_gid(v, &pending);
      if (!u.gid) {
        return "adduser " + k + " " + v +
               ": a group neither this Dockerfile makes nor every Debian or Ubuntu base has: give --gid GID";
      }
    } else if (k == "--home" && !v.empty() && v[0] == '/' && v.find(':') == std::string::npos) {
      u.home = v;
    } else if (k == "--shell") {
      u.shell = v;
    } else if (k == "--gecos" || k == "--comment") {
      u.comment = v.substr(0, v.find(','));
    } else if (k == "--no-create-home") {
      u.create_home = false;
    } else if (!(k == "--disabled-password" || k == "--disabled-login" || k == "--quiet" || k == "-q" ||
                 k == "--force-badname" || k == "--allow-badname" || k == "--allow-bad-names")) {
      return k.rfind("--", 0) == 0 ? "adduser " + k +
                                         " has no accounts equivalent (--system users have Debian's "
                                         "own defaults: write the accounts layer's user by hand)"
                                   : "adduser " + k +
                                         " is BusyBox's (Alpine) or not adduser's: write the accounts "
                                         "layer's user by hand";
    }
  }
  return add_user(u, uid_given, false, true, "/home", pending);
}

// groupadd [-g GID] [-r] [-f] NAME; Debian's addgroup [--gid GID] [--system] NAME (and
// BusyBox's addgroup -g GID [-S] NAME).
std::optional<std::string> Mapper::groupadd(const std::vector<std::string>& seg, Layer& pending) {
  auto o = options(seg, "gKpRP", {"--gid", "--key", "--password", "--root", "--prefix"});
  if (!o) {
    return seg[0] + ": an option lacks its value";
  }
  if (seg[0] == "addgroup" && o->operands.size() == 2) {
    return add_to_group(o->operands[0], o->operands[1], pending);
  }
  if (o->operands.size() != 1 || !account_name(o->operands[0])) {
    return seg[0] + " needs one group name";
  }
  AccountGroup g;
  g.name = o->operands[0];
  bool gid_given = false;
  bool system = false;
  bool force = false;
  for (const auto& [k, v] : o->opts) {
    if (is(k, "-g", "--gid") && number(v)) {
      g.gid = *number(v);
      gid_given = true;
    } else if (is(k, "-r", "--system") || k == "-S") {
      system = true;
    } else if (is(k, "-f", "--force")) {
      force = true;
    } else if (!(k == "--quiet" || k == "-q")) {
      return seg[0] + " " + k + " has no accounts equivalent (the layer takes a name and a gid)";
    }
  }
  if (known_gid(g.name, &pending) && !fixed_gid(g.name)) {
    return force ? std::nullopt : std::optional<std::string>("adds group " + g.name + ", which an earlier line adds");
  }
  if (fixed_gid(g.name)) {
    return force ? std::nullopt
                 : std::optional<std::string>("adds group " + g.name + ", which every Debian and Ubuntu base has");
  }
  if (!gid_given) {
    g.gid = system ? free_system_id(used_ids(accounts_layer(), pending, true)) : free_id(pending, true);
  }
  pending.groups.push_back(g);
  return std::nullopt;
}

} // namespace templates::migrate
