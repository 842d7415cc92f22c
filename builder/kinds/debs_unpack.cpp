#include "builder/kinds/debs_unpack.hpp"

#include "debian/install.hpp"
#include "debian/ld_cache.hpp"
#include "debian/version.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

const char* type_name(char t) {
  switch (t) {
  case '5':
    return "directory";
  case '2':
    return "symlink";
  case '1':
    return "hard link";
  default:
    return "file";
  }
}

std::string unslash(const std::string& p) {
  std::size_t i = 0;
  while (i < p.size() && p[i] == '/') {
    ++i;
  }
  return p.substr(i);
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// dpkg's and apt's own state: what a package writes there forges their records.
const char* admin_dir(const std::string& canon) {
  for (const char* d : {"var/lib/dpkg", "var/lib/apt", "var/cache/apt"}) {
    if (canon == d || under(canon, d)) {
      return d;
    }
  }
  return nullptr;
}

bool loader_conf(const std::string& canon) {
  return canon == "etc/ld.so.conf" || (under(canon, "etc/ld.so.conf.d") && canon.find('/', 17) == std::string::npos);
}

layers::Owner member_owner(const debian::DataMember& m) {
  layers::Owner o;
  o.uid = m.uid;
  o.gid = m.gid;
  o.uname = layers::Name(m.uname);
  o.gname = layers::Name(m.gname);
  return o;
}

bool replaces(const std::vector<debian::Relation>& rels, const std::string& name, const std::string& version) {
  return std::any_of(rels.begin(), rels.end(),
                     [&](const debian::Relation& r) { return debian::relation_matches(r, name, version); });
}

const std::string k_rebuild_fix = "leave the package out, or rebuild it with 'Replaces: ";

} // namespace

DebsUnpack::DebsUnpack(const layers::BaseView& landing, std::string status, std::string architecture, fs::path staging)
    : m_landing(landing), m_status(std::move(status)), m_architecture(std::move(architecture)),
      m_staging(std::move(staging)),
      m_db(landing.contents(), [this](const std::string& p) { return canonical(p, false); }) {}

std::string DebsUnpack::canonical(const std::string& path, bool follow_last) const {
  try {
    return m_landing.resolve(path, follow_last, nullptr, "/" + path);
  } catch (const Error&) {
    return path; // a link out of the root: land_on_base refuses it with the link named
  }
}

void DebsUnpack::add_record(const std::string& path, const std::string& content, std::uint32_t mode) {
  fs::path src = m_staging / ("r" + std::to_string(m_counter++));
  util::write_file_atomic(src, content);
  layers::Entry e;
  e.path = path;
  e.type = layers::Entry::Type::file;
  e.mode = mode;
  e.size = static_cast<std::int64_t>(content.size());
  e.source = src.string();
  m_entries[path] = e;
  m_canonical[path] = path;
}

void DebsUnpack::install(const debian::LockedPackage& p, const fs::path& deb) {
  const std::string what = "package " + p.name + " " + p.version + " (" + p.filename + ")";
  const std::size_t index = m_packages.size();
  m_packages.emplace_back();
  m_packages.back().name = p.name;
  m_packages.back().version = p.version;
  std::set<std::string> conffiles, shipped_regular;
  debian::DebControl control = debian::read_deb(
      deb, what,
      [&](const debian::DebControl& c) {
        if (c.control.value("Package") != p.name || c.control.value("Version") != p.version ||
            c.control.value("Architecture") != p.architecture) {
          throw Error(ErrorKind::integrity, what + ": its control file says " + c.control.value("Package") + " " +
                                                c.control.value("Version") + " " + c.control.value("Architecture"));
        }
        m_ldconfig = debian::check_maintainer_scripts(c, what).ldconfig || m_ldconfig;
        debian::parse_relations(c.control.value("Replaces"), what + ": its Replaces field");
        debian::status_paragraph(c.control, {}, what); // refuses the fields dpkg writes itself
        m_packages[index].control = c;
        m_packages[index].make_md5sums = c.files.count("md5sums") == 0;
        for (const auto& f : debian::conffile_paths(c)) {
          conffiles.insert(f);
        }
      },
      [&](const debian::DataMember& m, const debian::ReadData& read) {
        add_member(index, m, read, conffiles, shipped_regular);
      });
  Package& pk = m_packages[index];
  pk.control = std::move(control);
  if (pk.make_md5sums && !pk.md5sums.empty()) {
    pk.control.files["md5sums"] = pk.md5sums;
  }
  for (const auto& c : conffiles) {
    if (shipped_regular.count(c) == 0) {
      throw Error(ErrorKind::input,
                  what + ": its conffiles member lists " + c +
                      ", which the package does not ship as a regular file (dpkg: conffile '" + c +
                      "' is not a plain file or does not appear in the package)",
                  "the package is badly built: rebuild it with a conffiles member that lists only its files in /etc, "
                  "or leave it out");
    }
  }
  std::sort(pk.conffiles.begin(), pk.conffiles.end());
  pk.status = debian::status_paragraph(pk.control.control, pk.conffiles, what);
}

bool DebsUnpack::take_over(std::size_t index, const std::string& shown, const std::string& canon) {
  const Package& pk = m_packages[index];
  const std::string what = "package " + pk.name + " " + pk.version;
  const auto rels = debian::parse_relations(pk.control.control.value("Replaces"), what + ": its Replaces field");
  bool took = false;
  auto mine = m_owner.find(canon);
  if (mine != m_owner.end()) {
    Package& other = m_packages[mine->second.index];
    if (!replaces(rels, other.name, other.version)) {
      throw Error(ErrorKind::input,
                  what + " ships /" + shown + ", which package " + other.name + " " + other.version +
                      " of the same layer ships too (dpkg: trying to overwrite '/" + shown +
                      "', which is also in package " + other.name + ")",
                  k_rebuild_fix + other.name + "' (dpkg then moves the file to it), or leave one of the two out");
    }
    other.given_up.insert(mine->second.listed);
    m_entries.erase(mine->second.entry);
    m_canonical.erase(mine->second.entry);
    took = true;
  }
  for (const auto& owner : m_db.owners(canon)) {
    const std::string name = owner.substr(0, owner.find(':'));
    if (!replaces(rels, name, m_db.version_of(name))) {
      throw Error(ErrorKind::input,
                  what + " ships /" + shown + ", which is also in package " + name + " " + m_db.version_of(name) +
                      " of the base (dpkg: trying to overwrite '/" + shown + "', which is also in package " + owner +
                      ")",
                  k_rebuild_fix + name + "' if it is meant to take the file over, or install it in another path");
    }
    m_db.disown(canon, owner);
    m_taken.push_back("/" + canon + " from " + owner + " to " + pk.name);
    took = true;
  }
  return took;
}

// A non-directory of the layer may not land where the layer or the image below has a
// directory: dpkg keeps a directory and never replaces it.
void DebsUnpack::check_kept_directory(const std::string& what, const debian::DataMember& m,
                                      const std::string& canon) const {
  auto layer_dir = m_dirs.find(canon);
  if (layer_dir != m_dirs.end()) {
    throw Error(ErrorKind::input,
                what + " ships /" + m.path + " as a " + type_name(m.type) + ", where package " +
                    m_packages[layer_dir->second].name + " has a directory (dpkg keeps a directory, never replaces it)",
                "the packages do not fit together: leave one of them out");
  }
  const layers::ViewNode* there = m_landing.find(canon);
  if (there != nullptr && (there->type == '5' || (there->type == '2' && [&] {
                             const layers::ViewNode* to = m_landing.find(canonical(canon, true));
                             return to != nullptr && to->type == '5';
                           }()))) {
    throw Error(ErrorKind::input,
                what + " ships /" + m.path + " as a " + type_name(m.type) + ", where the image below has " +
                    (there->type == '5' ? "the directory /" + canon
                                        : "/" + canon + ", a symlink to the directory " + there->target) +
                    ": dpkg keeps a directory and never replaces it, and replacing it would hide everything in it",
                "the package is badly built or hostile: leave it out");
  }
}

// A regular file's bytes streamed to the staging directory, hashed for dpkg's md5sums
// and conffiles as they pass, a loader configuration's bytes kept for the ldconfig step.
void DebsUnpack::stage_file(Package& pk, const debian::DataMember& m, const debian::ReadData& read,
                            const std::string& canon, const std::set<std::string>& conffiles,
                            std::set<std::string>& shipped_regular, layers::Entry& e) {
  e.type = layers::Entry::Type::file;
  fs::path src = m_staging / ("f" + std::to_string(m_counter++));
  util::AtomicFile out(src);
  std::string keep; // a loader configuration's bytes
  const bool conf = conffiles.count("/" + m.path) != 0;
  const bool loader = loader_conf(canon);
  const bool sum = conf || pk.make_md5sums;
  util::Md5 md5;
  char buf[65536];
  std::int64_t total = 0;
  for (std::size_t n; (n = read(buf, sizeof buf)) > 0;) {
    out.write(buf, n);
    total += static_cast<std::int64_t>(n);
    if (sum) {
      md5.update(buf, n);
    }
    if (loader && keep.size() < (1u << 20)) {
      keep.append(buf, n);
    }
  }
  out.commit();
  const std::string hex = sum ? md5.finish_hex() : std::string();
  if (conf) {
    pk.conffiles.emplace_back("/" + m.path, hex);
    shipped_regular.insert("/" + m.path);
  }
  if (pk.make_md5sums) {
    pk.md5sums += hex + "  " + m.path + "\n"; // as dpkg writes them for a package that ships none
  }
  if (loader) {
    m_loader_conf[canon] = keep;
  }
  e.size = total;
  e.source = src.string();
}

void DebsUnpack::add_member(std::size_t index, const debian::DataMember& m, const debian::ReadData& read,
                            const std::set<std::string>& conffiles, std::set<std::string>& shipped_regular) {
  Package& pk = m_packages[index];
  const std::string what = "package " + pk.name + " " + pk.version;
  pk.paths.push_back(m.path);
  if (m.path.empty()) {
    return; // "./": the root, which the base has
  }
  const bool dir = m.type == '5';
  std::string path = m.path;
  std::string canon = canonical(path, dir);
  if (!dir) {
    if (const char* admin = admin_dir(canon)) {
      throw Error(ErrorKind::input,
                  what + " ships /" + m.path + " in /" + admin +
                      ", which dpkg and apt keep for their own records: a package that writes there forges them",
                  "the package is badly built or hostile: leave it out");
    }
    const debian::Diversion* d = m_db.diversion(canon);
    if (d != nullptr && d->package != pk.name) {
      path = unslash(d->to); // dpkg writes the diverted file where the diversion says
      canon = canonical(path, false);
    }
  }
  layers::Entry e;
  e.path = path;
  e.mode = m.mode;
  e.owner = member_owner(m);
  if (const debian::StatOverride* o = m_db.statoverride(canon)) {
    e.owner = layers::Owner{o->uid, o->gid, layers::Name(o->user), layers::Name(o->group)};
    e.mode = o->mode;
  }
  if (dir) {
    auto file = m_owner.find(canon);
    if (file != m_owner.end()) {
      throw Error(ErrorKind::input,
                  what + " has a directory /" + m.path + " where package " + m_packages[file->second.index].name +
                      " has a " + type_name(file->second.type),
                  "dpkg would not install both either: leave one of the packages out");
    }
    m_dirs.emplace(canon, index);
    e.type = layers::Entry::Type::dir;
    if (m_entries.count(path) == 0) {
      m_entries[path] = e;
      m_canonical[path] = canon;
    }
    return;
  }
  // The very link the image below has (a merged-/usr /bin -> usr/bin) changes nothing:
  // dpkg lists it for the package, and the tree keeps what is there.
  if (const layers::ViewNode* there = m_landing.find(canon);
      there != nullptr && there->type == '2' && m.type == '2' && there->target == m.link && m_owner.count(canon) == 0) {
    return;
  }
  check_kept_directory(what, m, canon);
  take_over(index, m.path, canon);
  m_owner[canon] = Owned{index, path, m.path, m.type};
  m_shipper[path] = pk.name;
  if (m.type == '2') {
    e.type = layers::Entry::Type::symlink;
    e.link_target = m.link;
  } else if (m.type == '1') {
    e.type = layers::Entry::Type::hardlink;
    e.link_target = m.link;
  } else {
    stage_file(pk, m, read, canon, conffiles, shipped_regular, e);
  }
  m_entries[path] = e;
  m_canonical[path] = canon;
}

// No entry below a file or a symlink of the layer itself (a package that ships a link
// and then files through it would have the runtime write wherever the link points).
void DebsUnpack::check_parents() const {
  for (const auto& [path, e] : m_entries) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) {
      continue;
    }
    auto parent = m_entries.find(path.substr(0, slash));
    if (parent != m_entries.end() && parent->second.type != layers::Entry::Type::dir) {
      auto owner = m_shipper.find(path);
      auto parent_owner = m_shipper.find(parent->first);
      throw Error(ErrorKind::input,
                  "package " + (owner == m_shipper.end() ? std::string("?") : owner->second) + " ships /" + path +
                      " below /" + parent->first + ", which " +
                      (parent_owner == m_shipper.end() ? std::string("?") : parent_owner->second) +
                      " ships as a file or symlink",
                  "dpkg would not install it either: leave one of the packages out");
    }
  }
}

std::map<std::string, layers::Entry> DebsUnpack::finish(const std::function<void(const std::string&)>& info) {
  check_parents();
  std::vector<debian::Paragraph> status;
  for (const auto& pk : m_packages) {
    std::vector<std::string> paths;
    for (const auto& path : pk.paths) {
      if (pk.given_up.count(path) == 0) {
        paths.push_back(path);
      }
    }
    for (const auto& [name, content] : debian::info_files(pk.control, paths)) {
      std::string ext = name.substr(name.rfind('.') + 1);
      bool script = ext == "preinst" || ext == "postinst" || ext == "prerm" || ext == "postrm" || ext == "config";
      add_record("var/lib/dpkg/info/" + name, content, script ? 0755 : 0644);
    }
    status.push_back(pk.status);
  }
  for (const auto& t : m_taken) {
    info("  dpkg: " + t + " (Replaces)");
  }
  for (const auto& [path, content] : m_db.changed_lists()) {
    add_record(path, content, 0644);
  }
  add_record("var/lib/dpkg/status", debian::merged_status(m_status, status), 0644);
  update_ld_cache(info);
  return std::move(m_entries);
}

} // namespace builder
