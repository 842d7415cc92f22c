#include "python/wheel.hpp"

#include "layers/tree.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <array>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace python {

using util::Error;
using util::ErrorKind;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (true) {
    auto j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  return out;
}

// Minimum glibc for a manylinux platform tag, or nullopt when not manylinux.
std::optional<std::pair<int, int>> manylinux_glibc(const std::string& plat, const std::string& arch) {
  std::smatch m;
  std::string suffix = "_" + arch;
  if (plat.size() <= suffix.size() || plat.compare(plat.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  std::string head = plat.substr(0, plat.size() - suffix.size());
  if (head == "manylinux1") {
    return std::pair{2, 5};
  }
  if (head == "manylinux2010") {
    return std::pair{2, 12};
  }
  if (head == "manylinux2014") {
    return std::pair{2, 17};
  }
  static const std::regex re("manylinux_([0-9]+)_([0-9]+)");
  if (std::regex_match(head, m, re)) {
    return std::pair{std::stoi(m[1]), std::stoi(m[2])};
  }
  return std::nullopt;
}

bool python_tag_ok(const std::string& py, const std::string& abi, const PythonTarget& t, std::string& why) {
  std::string cp = "cp" + std::to_string(t.major) + std::to_string(t.minor);
  std::string major = std::to_string(t.major);
  static const std::regex re("(py|cp)([0-9])([0-9]*)");
  std::smatch m;
  if (!std::regex_match(py, m, re)) {
    why = "interpreter tag '" + py + "' is not CPython";
    return false;
  }
  if (m[2] != major) {
    why = "it is for Python " + std::string(m[2]) + (m[3].length() ? "." + std::string(m[3]) : "");
    return false;
  }
  int wheel_minor = m[3].length() ? std::stoi(m[3]) : -1;
  if (abi == "none") {
    if (wheel_minor > t.minor) {
      why = "it needs Python " + major + "." + std::to_string(wheel_minor) + " or newer";
      return false;
    }
    return true;
  }
  if (abi == "abi3") {
    if (m[1] != "cp" || wheel_minor > t.minor) {
      why = "its stable-ABI build needs CPython " + major + "." + std::to_string(wheel_minor) + " or newer";
      return false;
    }
    return true;
  }
  if (abi == cp || abi == cp + "m" || abi == cp + "d") {
    if (py != cp) {
      why = "interpreter tag '" + py + "' does not match ABI '" + abi + "'";
      return false;
    }
    return true;
  }
  why = "it is built for the ABI '" + abi + "' (CPython " + (m[3].length() ? major + "." + std::string(m[3]) : major) +
        "), the target is " + cp;
  return false;
}

bool platform_ok(const std::string& plat, const PythonTarget& t, std::string& why) {
  if (plat == "any" || plat == "linux_" + t.arch) {
    return true;
  }
  if (auto need = manylinux_glibc(plat, t.arch)) {
    if (t.glibc && *t.glibc < *need) {
      why = "platform '" + plat + "' needs glibc " + std::to_string(need->first) + "." + std::to_string(need->second) +
            ", the target has " + std::to_string(t.glibc->first) + "." + std::to_string(t.glibc->second);
      return false;
    }
    return true;
  }
  why = "platform '" + plat + "' does not run on linux " + t.arch;
  return false;
}

struct ReadArchive {
  struct archive* a;
  ReadArchive() : a(archive_read_new()) {}
  ~ReadArchive() { archive_read_free(a); }
};

void check_member_path(const std::string& name, const fs::path& wheel) {
  bool bad = name.empty() || name.front() == '/' || name.find('\\') != std::string::npos;
  for (const auto& comp : split(name, '/')) {
    if (comp == "..") {
      bad = true;
    }
  }
  if (bad) {
    throw Error(ErrorKind::input, "wheel " + wheel.string() + " has an unsafe member path '" + name + "'",
                "refusing to install it (paths must stay inside the install directory); rebuild the wheel");
  }
}

std::string record_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) {
    return s;
  }
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') {
      out += "\"\"";
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// Path of `image_path` relative to the directory `base` (both absolute image paths).
std::string relative_to(const std::string& image_path, const std::string& base) {
  return fs::path(image_path).lexically_relative(fs::path(base)).generic_string();
}

struct Written {
  std::string hash_b64;
  std::int64_t size = 0;
};

} // namespace

std::string PythonTarget::describe() const {
  std::string s = "CPython " + std::to_string(major) + "." + std::to_string(minor) + " on linux " + arch;
  if (glibc) {
    s += " (glibc " + std::to_string(glibc->first) + "." + std::to_string(glibc->second) + ")";
  }
  return s;
}

WheelName WheelName::parse(const std::string& filename) {
  const std::string ext = ".whl";
  if (filename.size() <= ext.size() || filename.compare(filename.size() - 4, 4, ext) != 0) {
    throw Error(ErrorKind::input, "'" + filename + "' is not a wheel file name (must end in .whl)");
  }
  auto parts = split(filename.substr(0, filename.size() - 4), '-');
  if (parts.size() != 5 && parts.size() != 6) {
    throw Error(ErrorKind::input, "'" + filename + "' is not a valid wheel file name",
                "expected NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl");
  }
  WheelName w;
  w.distribution = parts[0];
  w.version = parts[1];
  std::size_t k = 2;
  if (parts.size() == 6) {
    w.build = parts[k++];
  }
  w.python_tags = split(parts[k], '.');
  w.abi_tags = split(parts[k + 1], '.');
  w.platform_tags = split(parts[k + 2], '.');
  return w;
}

std::optional<std::string> incompatibility(const WheelName& wheel, const PythonTarget& target) {
  std::string py_why;
  std::string plat_why;
  bool py_any = false;
  for (const auto& py : wheel.python_tags) {
    for (const auto& abi : wheel.abi_tags) {
      std::string why;
      if (python_tag_ok(py, abi, target, why)) {
        py_any = true;
      } else if (py_why.empty()) {
        py_why = why;
      }
    }
  }
  bool plat_any = false;
  for (const auto& plat : wheel.platform_tags) {
    std::string why;
    if (platform_ok(plat, target, why)) {
      plat_any = true;
    } else if (plat_why.empty()) {
      plat_why = why;
    }
  }
  if (py_any && plat_any) {
    return std::nullopt;
  }
  return !py_any ? py_why : plat_why;
}

namespace {

std::string archive_error(struct archive* a) {
  return archive_error_string(a) != nullptr ? archive_error_string(a) : "?";
}

void check_runs_on_target(const WheelName& name, const std::string& fname, const PythonTarget& target) {
  if (auto why = incompatibility(name, target)) {
    throw Error(ErrorKind::incompatible, "wheel " + fname + " cannot run on the target: " + *why,
                "use a wheel built for " + target.describe() + ", or change the base image / python settings");
  }
}

void open_wheel_archive(struct archive* a, const fs::path& wheel) {
  archive_read_support_format_zip_seekable(a);
  if (archive_read_open_filename(a, wheel.c_str(), 1 << 16) != ARCHIVE_OK) {
    throw Error(ErrorKind::input, "wheel " + wheel.string() + " is not a readable zip archive: " + archive_error(a),
                "the file is corrupt or truncated; download or build it again");
  }
}

// The staging tree of one wheel: claims image paths (no two wheels install the same
// path), writes files under staging_root and keeps the RECORD lines of what it wrote.
class Staging {
public:
  Staging(const fs::path& root, const std::string& wheel_file, const std::string& site,
          std::map<std::string, std::string>& owners)
      : m_root(root), m_wheel_file(wheel_file), m_site(site), m_owners(owners) {}

  fs::path path_of(const std::string& image_path) const { return m_root / image_path.substr(1); }

  void claim(const std::string& image_path) {
    auto [it, inserted] = m_owners.try_emplace(image_path, m_wheel_file);
    if (!inserted) {
      throw Error(ErrorKind::input, "wheels " + it->second + " and " + m_wheel_file + " both install " + image_path,
                  "keep only one of them in the wheel set");
    }
  }

  // Claims and creates the directory of image_path; returns where the file goes.
  fs::path prepare(const std::string& image_path) {
    claim(image_path);
    fs::path p = path_of(image_path);
    util::create_dirs(p.parent_path(), "the staging directory");
    return p;
  }

  // Writes a file held in memory (scripts, generated files) and records it.
  void write(const std::string& image_path, const std::string& content, std::uint32_t mode) {
    fs::path p = prepare(image_path);
    util::write_file_atomic(p, content);
    ::chmod(p.c_str(), mode);
    util::Sha256 h;
    h.update(content);
    record(image_path, util::base64url_nopad(h.finish_raw()), static_cast<std::int64_t>(content.size()));
  }

  void record(const std::string& image_path, const std::string& hash_b64, std::int64_t size) {
    m_record[relative_to(image_path, m_site)] = Written{hash_b64, size};
  }

  // The installed RECORD: every file written, then the RECORD line itself (no hash).
  std::string record_text(const std::string& dist_info) const {
    std::string rec;
    for (const auto& [path, w] : m_record) {
      rec += record_quote(path) + ",sha256=" + w.hash_b64 + "," + std::to_string(w.size) + "\n";
    }
    return rec + record_quote(dist_info + "/RECORD") + ",,\n";
  }

  std::size_t recorded_files() const { return m_record.size(); }

private:
  fs::path m_root;
  std::string m_wheel_file;
  std::string m_site;
  std::map<std::string, std::string>& m_owners;
  std::map<std::string, Written> m_record; // RECORD path -> hash
};

// Where a wheel member goes in the image (PEP 427 "installing a wheel").
struct Destination {
  std::string image_path;
  bool is_script = false;
};

// nullopt for a .data/<category>/ entry without a file name.
std::optional<Destination> member_destination(const std::string& member, const WheelName& name,
                                              const std::string& fname, const PythonTarget& target) {
  const std::string& site = target.site_packages;
  std::string first = member.substr(0, member.find('/'));
  Destination d;
  if (first.ends_with(".data") && member.find('/') != std::string::npos) {
    std::string rest = member.substr(first.size() + 1);
    std::string key = rest.substr(0, rest.find('/'));
    std::string tail = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/') + 1);
    if (tail.empty()) {
      return std::nullopt;
    }
    if (key == "purelib" || key == "platlib") {
      d.image_path = site + "/" + tail;
    } else if (key == "scripts") {
      d.image_path = target.scripts_dir + "/" + tail;
      d.is_script = true;
    } else if (key == "headers") {
      d.image_path = target.prefix + "/include/python" + std::to_string(target.major) + "." +
                     std::to_string(target.minor) + "/" + name.distribution + "/" + tail;
    } else if (key == "data") {
      d.image_path = target.prefix + "/" + tail;
    } else {
      throw Error(ErrorKind::input, "wheel " + fname + " has an unknown .data category '" + key + "'");
    }
  } else {
    d.image_path = site + "/" + member;
  }
  d.image_path = "/" + layers::normalize_image_path(d.image_path, "wheel " + fname);
  return d;
}

// What the unpacking pass learnt about the wheel's own metadata.
struct Unpacked {
  std::string dist_info;                            // "name-1.0.dist-info"
  std::string wheel_record;                         // the wheel's RECORD
  std::string entry_points;                         // entry_points.txt
  std::string wheel_meta;                           // WHEEL
  std::set<std::string> members;                    // regular files
  std::map<std::string, std::string> member_hashes; // member -> "sha256=..."
};

// Wheels have no business holding links or special files: pip writes a symlink member
// as a plain file holding the target, and a member beneath it could then land anywhere.
void check_regular_member(archive_entry* e, const std::string& member, const std::string& fname) {
  if (archive_entry_filetype(e) != AE_IFREG) {
    throw Error(ErrorKind::input,
                "wheel " + fname + ": member '" + member + "' is a " +
                    (archive_entry_filetype(e) == AE_IFLNK ? "symbolic link" : "special file") +
                    ", which is unsafe in a wheel",
                "rebuild the wheel with regular files only");
  }
}

struct MemberDigest {
  std::array<std::uint8_t, 32> sha256;
  std::int64_t size = 0;
};

// Copies the current member's data into `out` when given, else into `content`.
MemberDigest read_member(struct archive* a, const fs::path& wheel, const std::string& member, util::AtomicFile* out,
                         std::string& content, std::vector<char>& buf) {
  util::Sha256 h;
  std::int64_t size = 0;
  la_ssize_t n = 0;
  while ((n = archive_read_data(a, buf.data(), buf.size())) > 0) {
    h.update(buf.data(), static_cast<std::size_t>(n));
    size += n;
    if (out != nullptr) {
      out->write(buf.data(), static_cast<std::size_t>(n));
    } else {
      content.append(buf.data(), static_cast<std::size_t>(n));
    }
  }
  if (n < 0) {
    throw Error(ErrorKind::input,
                "wheel " + wheel.string() + " is corrupt (member " + member + "): " + archive_error(a),
                "download or build the wheel again");
  }
  return {h.finish_raw(), size};
}

// "#!python" (and "#!pythonw") means "the interpreter that installs this".
std::string with_target_shebang(const std::string& script, const PythonTarget& target) {
  if (script.rfind("#!python", 0) != 0) {
    return script;
  }
  auto eol = script.find('\n');
  return "#!" + target.interpreter + (eol == std::string::npos ? "\n" : script.substr(eol));
}

// Installs one member: streamed to its place, or (scripts and the metadata read again
// later: RECORD, WHEEL, entry_points.txt) kept in memory first.
void install_member(struct archive* a, archive_entry* e, const std::string& member, const Destination& dest,
                    const fs::path& wheel, const PythonTarget& target, Staging& staging, Unpacked& u,
                    std::vector<char>& buf) {
  bool keep_in_memory = dest.is_script || member.ends_with(".dist-info/RECORD") ||
                        member.ends_with(".dist-info/entry_points.txt") || member.ends_with(".dist-info/WHEEL");
  std::unique_ptr<util::AtomicFile> out;
  fs::path staged = staging.path_of(dest.image_path);
  if (!keep_in_memory) {
    staged = staging.prepare(dest.image_path);
    out = std::make_unique<util::AtomicFile>(staged);
  }
  std::string content;
  MemberDigest digest = read_member(a, wheel, member, out.get(), content, buf);
  std::string hash_b64 = util::base64url_nopad(digest.sha256);
  u.member_hashes[member] = "sha256=" + hash_b64;
  if (member.ends_with(".dist-info/RECORD")) {
    u.wheel_record = content;
    return; // regenerated at the end
  }
  if (member.ends_with(".dist-info/entry_points.txt")) {
    u.entry_points = content;
  }
  if (member.ends_with(".dist-info/WHEEL")) {
    u.wheel_meta = content;
  }
  std::uint32_t mode = (archive_entry_perm(e) & 0111) != 0 ? 0755 : 0644;
  if (out) {
    out->commit();
    ::chmod(staged.c_str(), mode);
    staging.record(dest.image_path, hash_b64, digest.size);
    return;
  }
  if (dest.is_script) {
    mode = 0755;
    content = with_target_shebang(content, target);
  }
  staging.write(dest.image_path, content, mode);
}

// One pass over the archive: every member checked and installed.
Unpacked unpack_members(struct archive* a, const fs::path& wheel, const WheelName& name, const PythonTarget& target,
                        Staging& staging) {
  const std::string fname = wheel.filename().string();
  Unpacked u;
  std::vector<char> buf(1 << 16);
  archive_entry* e = nullptr;
  int rc = 0;
  while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
    std::string member = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    check_member_path(member, wheel);
    if (archive_entry_filetype(e) == AE_IFDIR || member.back() == '/') {
      continue;
    }
    check_regular_member(e, member, fname);
    u.members.insert(member);
    auto dest = member_destination(member, name, fname, target);
    if (!dest) {
      continue;
    }
    if (std::string first = member.substr(0, member.find('/')); first.ends_with(".dist-info")) {
      u.dist_info = first;
    }
    install_member(a, e, member, *dest, wheel, target, staging, u, buf);
  }
  if (rc != ARCHIVE_EOF) {
    throw Error(ErrorKind::input, "wheel " + wheel.string() + " is corrupt: " + archive_error(a),
                "download or build the wheel again");
  }
  if (u.dist_info.empty() || u.wheel_meta.empty() || u.wheel_record.empty()) {
    throw Error(ErrorKind::input, "wheel " + fname + " has no .dist-info with WHEEL and RECORD",
                "this is not a valid wheel; rebuild it");
  }
  // pip installs wheels of format 1.x only: a later major version may lay files out
  // differently (PEP 427 "Wheel-Version").
  WheelFile format;
  try {
    format = parse_wheel_file(u.wheel_meta);
  } catch (const std::invalid_argument& bad) {
    throw Error(ErrorKind::input, "wheel " + fname + ": " + u.dist_info + "/WHEEL is not valid: " + bad.what(),
                "this is not a valid wheel; rebuild it");
  }
  if (format.major != 1) {
    throw Error(ErrorKind::input,
                "wheel " + fname + " is of format " + std::to_string(format.major) + "." +
                    std::to_string(format.minor) + " (" + u.dist_info +
                    "/WHEEL); paddle-image, like pip, installs "
                    "format 1.x wheels only",
                "use a wheel built by a current `pip wheel` or `python -m build`");
  }
  return u;
}

// Every member must match the wheel's own RECORD (the RECORD line itself has no hash).
void verify_against_record(const Unpacked& u, const std::string& fname) {
  std::map<std::string, std::string> recorded; // path -> hash
  for (auto& e : parse_record(u.wheel_record)) {
    recorded[e.path] = e.hash;
  }
  for (const auto& m : u.members) {
    if (m == u.dist_info + "/RECORD" || m.rfind(u.dist_info + "/RECORD.", 0) == 0) {
      continue;
    }
    auto it = recorded.find(m);
    if (it == recorded.end()) {
      throw Error(ErrorKind::integrity, "wheel " + fname + ": member " + m + " is not listed in its RECORD",
                  "the wheel was modified after it was built; rebuild it");
    }
    if (it->second.empty()) {
      throw Error(ErrorKind::integrity, "wheel " + fname + ": member " + m + " has no hash in its RECORD",
                  "only RECORD itself may be unhashed; rebuild the wheel");
    }
    auto hash = u.member_hashes.find(m);
    if (hash == u.member_hashes.end() || it->second != hash->second) {
      throw Error(ErrorKind::integrity, "wheel " + fname + ": member " + m + " does not match the hash in RECORD",
                  "the wheel was modified or corrupted; rebuild or re-download it");
    }
  }
}

// Name and version from the .dist-info directory; pip refuses a wheel whose file name
// and .dist-info disagree, and so do we.
void read_identity(const std::string& dist_info, const WheelName& name, const std::string& fname,
                   InstalledWheel& info) {
  std::string di = dist_info.substr(0, dist_info.size() - std::string(".dist-info").size());
  info.name = di.substr(0, di.rfind('-'));
  info.version = di.substr(di.rfind('-') + 1);
  if (normalize_project_name(info.name) != normalize_project_name(name.distribution) ||
      normalize_version(info.version) != normalize_version(name.version)) {
    throw Error(ErrorKind::input,
                "wheel " + fname + " names " + name.distribution + " " + name.version + " but its " + dist_info +
                    " says " + info.name + " " + info.version,
                "the file was renamed or built wrongly; use the wheel under its original name");
  }
}

// Console and GUI script launchers from entry_points.txt.
void write_launchers(const std::string& entry_points, const std::string& fname, const PythonTarget& target,
                     Staging& staging) {
  std::string section;
  std::istringstream eps(entry_points);
  std::string line;
  while (std::getline(eps, line)) {
    line = util::trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') {
      continue;
    }
    if (line.front() == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    if (section != "console_scripts" && section != "gui_scripts") {
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    std::string script = util::trim(line.substr(0, eq));
    std::string ref = util::trim(line.substr(eq + 1));
    ref = util::trim(ref.substr(0, ref.find('[')));
    auto colon = ref.find(':');
    if (script.empty() || script.find('/') != std::string::npos || colon == std::string::npos) {
      throw Error(ErrorKind::input, "wheel " + fname + ": bad entry point '" + line + "'");
    }
    std::string module = util::trim(ref.substr(0, colon));
    std::string attr = util::trim(ref.substr(colon + 1));
    std::string import_name = attr.substr(0, attr.find('.'));
    std::string body = "#!" + target.interpreter + "\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom " + module +
                       " import " + import_name +
                       "\nif __name__ == \"__main__\":\n"
                       "    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n"
                       "    sys.exit(" +
                       attr + "())\n";
    staging.write(target.scripts_dir + "/" + script, body, 0755);
  }
}

// INSTALLER, then the RECORD of everything installed (written last, unrecorded itself).
void write_dist_info(const std::string& dist_info, const PythonTarget& target, Staging& staging) {
  std::string dist_info_image = target.site_packages + "/" + dist_info;
  staging.write(dist_info_image + "/INSTALLER", "paddle-image\n", 0644);
  std::string rec = staging.record_text(dist_info);
  util::write_file_atomic(staging.prepare(dist_info_image + "/RECORD"), rec);
}

} // namespace

InstalledWheel install_wheel(const fs::path& wheel, const PythonTarget& target, const fs::path& staging_root,
                             std::map<std::string, std::string>& owners) {
  const std::string fname = wheel.filename().string();
  WheelName name = WheelName::parse(fname);
  check_runs_on_target(name, fname, target);
  InstalledWheel info;
  info.filename = fname;
  info.sha256 = util::sha256_file_hex(wheel);

  ReadArchive ra;
  open_wheel_archive(ra.a, wheel);
  Staging staging(staging_root, fname, target.site_packages, owners);
  Unpacked u = unpack_members(ra.a, wheel, name, target, staging);
  verify_against_record(u, fname);
  read_identity(u.dist_info, name, fname, info);
  write_launchers(u.entry_points, fname, target, staging);
  write_dist_info(u.dist_info, target, staging);
  info.files = staging.recorded_files() + 1;
  return info;
}

nlohmann::json to_json(const InstalledWheel& wheel) {
  return {{"name", wheel.name},
          {"version", wheel.version},
          {"filename", wheel.filename},
          {"sha256", wheel.sha256},
          {"files", wheel.files}};
}

InstalledWheel installed_wheel_from_json(const nlohmann::json& j) {
  InstalledWheel w;
  w.name = j.at("name").get<std::string>();
  w.version = j.at("version").get<std::string>();
  w.filename = j.at("filename").get<std::string>();
  w.sha256 = j.at("sha256").get<std::string>();
  w.files = j.at("files").get<std::size_t>();
  return w;
}

nlohmann::json to_json(const WheelInventory& inventory) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : inventory.wheels) {
    out.push_back(to_json(w));
  }
  return out;
}

WheelInventory wheel_inventory_from_json(const nlohmann::json& j) {
  WheelInventory inv;
  for (const auto& w : j.get_ref<const nlohmann::json::array_t&>()) { // throws type_error unless an array
    inv.wheels.push_back(installed_wheel_from_json(w));
  }
  return inv;
}

} // namespace python

namespace python {

std::string read_wheel_metadata(const fs::path& wheel, const std::string& filename) {
  WheelName name = WheelName::parse(filename);
  ReadArchive ra;
  archive* a = ra.a;
  archive_read_support_format_zip_seekable(a);
  if (archive_read_open_filename(a, wheel.c_str(), 1 << 16) != ARCHIVE_OK) {
    const char* why = archive_error_string(a);
    throw Error(ErrorKind::input,
                "wheel " + wheel.string() + " is not a readable zip: " + (why ? why : "unknown error"));
  }
  archive_entry* e = nullptr;
  int rc = 0;
  while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
    std::string member = archive_entry_pathname(e) ? archive_entry_pathname(e) : "";
    // <name>-<version>.dist-info/METADATA at the top level; the directory name's
    // project and version are checked by the installer, here only its shape.
    auto slash = member.find('/');
    if (slash == std::string::npos || slash < 10 || member.substr(slash) != "/METADATA" ||
        member.compare(slash - 10, 10, ".dist-info") != 0) {
      continue;
    }
    std::string out;
    std::vector<char> buf(1 << 16);
    la_ssize_t n = 0;
    while ((n = archive_read_data(a, buf.data(), buf.size())) > 0) {
      out.append(buf.data(), static_cast<std::size_t>(n));
      if (out.size() > (16u << 20)) {
        throw Error(ErrorKind::input, "wheel " + filename + ": METADATA is over 16 MiB");
      }
    }
    if (n < 0) {
      const char* why = archive_error_string(a);
      throw Error(ErrorKind::input,
                  "wheel " + filename + ": cannot read " + member + ": " + (why ? why : "unknown error"));
    }
    return out;
  }
  throw Error(ErrorKind::input,
              "wheel " + filename + " (" + name.distribution + " " + name.version + ") has no .dist-info/METADATA",
              "the file is not a valid wheel; rebuild or re-download it");
}

} // namespace python
