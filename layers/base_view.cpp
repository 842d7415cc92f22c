#include "layers/base_view.hpp"

#include "layers/cache_layout.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <deque>
#include <regex>
#include <set>
#include <sstream>
#include <zstd.h>

namespace layers {

namespace fs = std::filesystem;
using util::Error;
using util::ErrorKind;

namespace {

constexpr std::int64_t k_max_content = 16 << 20; // a kept file larger than this is ignored

// The most bytes of `path` the view keeps: the inventory's cap for a package file.
std::int64_t content_cap(const std::string& path) {
  std::int64_t cap = inventory_file_cap(path);
  return cap > 0 ? cap : k_max_content;
}

std::string parent_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

std::string base_name(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool under(const std::string& path, const std::string& dir) {
  return dir.empty() || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::string join(const std::vector<std::string>& comps) {
  std::string out;
  for (const auto& c : comps) {
    out += (out.empty() ? "" : "/") + c;
  }
  return out;
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= path.size()) {
    auto j = path.find('/', i);
    std::string c = path.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (!c.empty()) {
      out.push_back(c);
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  return out;
}

bool dist_info_file(const std::string& path, const char* name) {
  std::string b = base_name(path);
  std::string d = base_name(parent_of(path));
  return b == name && d.size() > 10 && d.compare(d.size() - 10, 10, ".dist-info") == 0;
}

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      return e.substr(name.size() + 1);
    }
  }
  return {};
}

nlohmann::json owner_json(const Owner& o) {
  nlohmann::json j = {{"uid", o.uid}, {"gid", o.gid}};
  if (!o.uname.empty()) {
    j["uname"] = o.uname.str();
  }
  if (!o.gname.empty()) {
    j["gname"] = o.gname.str();
  }
  return j;
}

} // namespace

bool BaseView::wants_content(const std::string& path) {
  static const std::regex cuda_version("usr/local/cuda[^/]*/version\\.(json|txt)");
  static const std::regex cudnn_header("(usr/include|usr/local/cuda[^/]*/include|usr/include/[^/]+)/cudnn_version\\.h");
  // dpkg's records and the loader's files a debs layer's unpack rules and ldconfig step read.
  static const std::regex dpkg_list("var/lib/dpkg/info/[^/]+\\.list");
  if (path == "var/lib/dpkg/diversions" || path == "var/lib/dpkg/statoverride" || path == "etc/passwd" ||
      path == "etc/group" || path == "etc/shadow" || path == "etc/gshadow" || path.rfind("etc/skel/", 0) == 0 ||
      path == "etc/ld.so.conf" || path == "etc/ld.so.cache" ||
      (path.rfind("var/lib/dpkg/info/", 0) == 0 && std::regex_match(path, dpkg_list))) {
    return true;
  }
  return path == "var/lib/dpkg/status" || path == "etc/os-release" || path == "usr/lib/os-release" ||
         base_name(path) == "pyvenv.cfg" || // which interpreter a venv's python is, and what it sees
         path.rfind("etc/ld.so.conf.d/", 0) == 0 || dist_info_file(path, "METADATA") ||
         dist_info_file(path, "INSTALLER") || dist_info_file(path, "RECORD") || std::regex_match(path, cuda_version) ||
         std::regex_match(path, cudnn_header) || inventory_file_cap(path) > 0;
}

void BaseView::begin_layer(const std::string& digest) {
  ++m_layer;
  m_layers.push_back(digest);
}

void BaseView::remove_below(const std::string& path, bool include_self, int below_layer) {
  auto drop = [&](std::map<std::string, std::string>* content, const std::string& p) {
    if (content != nullptr) {
      content->erase(p);
    }
  };
  if (include_self) {
    auto it = m_nodes.find(path);
    if (it != m_nodes.end() && it->second.layer < below_layer) {
      m_nodes.erase(it);
      drop(&m_content, path);
    }
  }
  std::string prefix = path.empty() ? std::string() : path + "/";
  for (auto it = m_nodes.lower_bound(prefix); it != m_nodes.end() && under(it->first, path);) {
    if (it->second.layer < below_layer) {
      drop(&m_content, it->first);
      it = m_nodes.erase(it);
    } else {
      ++it;
    }
  }
}

void BaseView::add_member(const TarMember& m, const std::string* content) {
  if (m.path.empty()) {
    return; // the root itself ("./")
  }
  std::string name = base_name(m.path);
  std::string dir = parent_of(m.path);
  if (name == ".wh..wh..opq") {
    remove_below(dir, false, m_layer); // an opaque directory hides what lower layers had in it
    return;
  }
  if (name.rfind(".wh.", 0) == 0) {
    std::string gone = dir.empty() ? name.substr(4) : dir + "/" + name.substr(4);
    remove_below(gone, true, m_layer + 1);
    return;
  }
  auto existing = m_nodes.find(m.path);
  if (m.type != '5' || (existing != m_nodes.end() && existing->second.type != '5')) {
    // A non-directory replaces whatever was there, a directory's contents included; a
    // directory replaces a non-directory.
    remove_below(m.path, true, m_layer + 1);
  }
  ViewNode n;
  n.type = m.type;
  n.mode = m.mode & 07777;
  n.owner = Owner{m.uid, m.gid, m.uname, m.gname};
  n.size = m.type == '0' ? m.size : 0;
  n.target = m.link_target;
  n.xattrs = std::map<std::string, std::string>(m.xattrs.begin(), m.xattrs.end());
  n.layer = m_layer;
  if (m.type == '1') {
    // A hard link carries its target's metadata.
    if (auto t = m_nodes.find(m.link_target); t != m_nodes.end()) {
      n.size = t->second.size;
    }
    if (wants_content(m.path)) {
      if (auto c = m_content.find(m.link_target); c != m_content.end()) {
        m_content[m.path] = c->second;
      } else if (auto t = m_nodes.find(m.link_target); t != m_nodes.end() && t->second.type == '0') {
        // The target's path is not one the view keeps: its bytes are read again later.
        m_link_wanted[m.link_target].push_back(m.path);
      }
    }
  }
  m_nodes[m.path] = std::move(n);
  if (content != nullptr) {
    keep_content(m.path, *content);
  }
}

std::map<std::string, int> BaseView::missing_link_targets() const {
  std::map<std::string, int> out;
  for (const auto& [target, links] : m_link_wanted) {
    auto t = m_nodes.find(target);
    if (t == m_nodes.end() || t->second.type != '0') {
      continue;
    }
    for (const auto& l : links) {
      auto n = m_nodes.find(l);
      if (n != m_nodes.end() && n->second.type == '1' && n->second.target == target && !m_content.count(l)) {
        out[target] = t->second.layer;
        break;
      }
    }
  }
  return out;
}

void BaseView::fill_link_target(const std::string& target, const std::string& content) {
  auto it = m_link_wanted.find(target);
  if (it == m_link_wanted.end()) {
    return;
  }
  for (const auto& l : it->second) {
    auto n = m_nodes.find(l);
    if (n != m_nodes.end() && n->second.type == '1' && n->second.target == target) {
      keep_content(l, content);
    }
  }
  m_link_wanted.erase(it);
}

void BaseView::keep_content(const std::string& path, const std::string& content) {
  std::string name = base_name(path);
  if (static_cast<std::int64_t>(content.size()) <= content_cap(path)) {
    std::string kept = content;
    if (name == "METADATA" || name == "PKG-INFO" ||
        (name.size() > 9 && name.compare(name.size() - 9, 9, ".egg-info") == 0)) {
      // Only the headers count (name, version, Requires-Dist); the body is the long
      // description, often most of the file.
      auto body = kept.find("\n\n");
      auto crlf = kept.find("\r\n\r\n");
      auto end = std::min(body == std::string::npos ? kept.size() : body + 1,
                          crlf == std::string::npos ? kept.size() : crlf + 2);
      kept.resize(end);
    }
    m_content[path] = std::move(kept);
  }
}

void BaseView::add_layer(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& digest) {
  begin_layer(digest);
  scan_tar(
      read, digest,
      [&](const TarMember& m) {
        bool keep = m.type == '0' && wants_content(m.path) && m.size <= content_cap(m.path);
        if (!keep) {
          add_member(m);
        }
        return keep;
      },
      [&](const TarMember& m, const std::string& content) { add_member(m, &content); });
  // libarchive may stop at the end-of-archive blocks: read the rest, so a verifying
  // reader sees the whole blob.
  std::vector<char> rest(1 << 16);
  while (read(rest.data(), rest.size()) > 0) {
  }
}

const ViewNode* BaseView::find(const std::string& path) const {
  auto it = m_nodes.find(path);
  return it == m_nodes.end() ? nullptr : &it->second;
}

void BaseView::finish(const std::vector<std::string>& config_env) {
  BaseFacts f;
  // Interpreters: python3.X in the usual bin directories, regular files or links.
  static const std::regex py_re("(usr/bin|usr/local/bin|opt/conda/bin|usr/local/python[^/]*/bin)/python3\\.([0-9]+)");
  for (const auto& [path, n] : m_nodes) {
    if (n.type != '5' && std::regex_match(path, py_re)) {
      f.interpreters.push_back("/" + path);
    }
  }
  if (auto it = m_content.find("var/lib/dpkg/status"); it != m_content.end()) {
    f.dpkg = parse_dpkg_status(it->second, true);
    for (auto& p : f.dpkg) {
      p.location = "var/lib/dpkg/status";
      if (p.name == "libc6") {
        static const std::regex ver_re("(?:[0-9]+:)?([0-9]+)\\.([0-9]+).*");
        std::smatch vm;
        if (std::regex_match(p.version, vm, ver_re)) {
          f.glibc = std::pair{std::stoi(vm[1]), std::stoi(vm[2])};
        }
      }
    }
  }
  // CUDA and cuDNN: what the image says it is (NVIDIA's images set these), else the files.
  f.cuda = env_value(config_env, "CUDA_VERSION");
  if (!f.cuda.empty()) {
    f.cuda_source = "ENV CUDA_VERSION";
  } else {
    static const std::regex json_re("\"cuda\"\\s*:\\s*\\{[^}]*\"version\"\\s*:\\s*\"([0-9][0-9.]*)\"");
    static const std::regex txt_re("CUDA Version ([0-9][0-9.]*)");
    for (const auto& [path, content] : m_content) {
      std::smatch mm;
      if (path.find("/version.") != std::string::npos && path.rfind("usr/local/cuda", 0) == 0 &&
          (std::regex_search(content, mm, json_re) || std::regex_search(content, mm, txt_re))) {
        // /usr/local/cuda itself (a link to the default toolkit) wins over cuda-X.Y.
        if (f.cuda.empty() || path.rfind("usr/local/cuda/", 0) == 0) {
          f.cuda = mm[1];
          f.cuda_source = "/" + path;
        }
      }
    }
    if (f.cuda.empty()) {
      // The toolkit's version file seen through /usr/local/cuda's links.
      std::string req = env_value(config_env, "NVIDIA_REQUIRE_CUDA");
      std::smatch mm;
      static const std::regex req_re("cuda>=([0-9]+\\.[0-9]+)");
      if (std::regex_search(req, mm, req_re)) {
        f.cuda = mm[1];
        f.cuda_source = "ENV NVIDIA_REQUIRE_CUDA";
      }
    }
  }
  f.cudnn = env_value(config_env, "CUDNN_VERSION");
  if (!f.cudnn.empty()) {
    f.cudnn_source = "ENV CUDNN_VERSION";
  } else {
    static const std::regex major_re("#define CUDNN_MAJOR ([0-9]+)");
    static const std::regex minor_re("#define CUDNN_MINOR ([0-9]+)");
    static const std::regex patch_re("#define CUDNN_PATCHLEVEL ([0-9]+)");
    for (const auto& [path, content] : m_content) {
      std::smatch a, b, c;
      if (base_name(path) == "cudnn_version.h" && std::regex_search(content, a, major_re) &&
          std::regex_search(content, b, minor_re)) {
        f.cudnn = std::string(a[1]) + "." + std::string(b[1]) +
                  (std::regex_search(content, c, patch_re) ? "." + std::string(c[1]) : "");
        f.cudnn_source = "/" + path;
      }
    }
  }
  for (const char* os : {"etc/os-release", "usr/lib/os-release"}) {
    auto it = m_content.find(os);
    if (it == m_content.end() || !f.os_id.empty()) {
      continue;
    }
    OsRelease r = parse_os_release(it->second);
    f.os_id = r.id;
    f.os_version_id = r.version_id;
  }
  for (const auto& [path, content] : m_content) {
    if (path.rfind("etc/ld.so.conf.d/", 0) == 0 && content.size() < 65536) {
      f.ld_so_conf[path] = content;
    }
  }
  m_facts = std::move(f);
}

std::string BaseView::layer_of(const std::string& path) const {
  const ViewNode* n = find(path);
  return n != nullptr && n->layer >= 0 && static_cast<std::size_t>(n->layer) < m_layers.size()
             ? m_layers[static_cast<std::size_t>(n->layer)]
             : std::string();
}

Inventory BaseView::inventory() const {
  return inventory_of(m_content, [&](const std::string& path) { return layer_of(path); });
}

std::string BaseView::resolve(const std::string& path, bool follow_last, std::vector<std::string>* followed,
                              const std::string& what) const {
  std::deque<std::string> todo;
  for (auto& c : split(path)) {
    todo.push_back(std::move(c));
  }
  std::vector<std::string> out;
  int hops = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") {
      continue;
    }
    if (c == "..") {
      if (out.empty()) {
        throw Error(ErrorKind::input, what + ": /" + path + " leads outside the image root ('..' above /)",
                    "write to a path inside the image");
      }
      out.pop_back();
      continue;
    }
    out.push_back(c);
    if (todo.empty() && !follow_last) {
      break;
    }
    std::string cur = join(out);
    const ViewNode* n = find(cur);
    if (n == nullptr || n->type != '2') {
      continue;
    }
    if (++hops > 40) {
      throw Error(ErrorKind::input, what + ": the base's symlinks loop at /" + cur + " (-> " + n->target + ")",
                  "write to the directory the link should lead to");
    }
    if (followed != nullptr) {
      followed->push_back(cur + " -> " + n->target);
    }
    out.pop_back();
    if (!n->target.empty() && n->target[0] == '/') {
      out.clear();
    } else {
      // A relative target: ".." may not climb above the root.
      std::vector<std::string> base = out;
      for (const auto& t : split(n->target)) {
        if (t == "..") {
          if (base.empty()) {
            throw Error(ErrorKind::input,
                        what + ": the base's symlink /" + cur + " -> " + n->target + " leads outside the image root",
                        "write to a path inside the image, not through that link");
          }
          base.pop_back();
        } else if (t != ".") {
          base.push_back(t);
        }
      }
    }
    auto parts = split(n->target);
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      todo.push_front(*it);
    }
  }
  return join(out);
}

namespace {

nlohmann::json xattrs_json(const std::map<std::string, std::string>& x) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : x) {
    j[k] = util::base64_encode(v);
  }
  return j;
}

std::map<std::string, std::string> xattrs_from(const nlohmann::json& j, const std::string& path) {
  std::map<std::string, std::string> out;
  for (const auto& [k, x] : j.items()) {
    std::string value;
    if (!util::base64_decode(x.get<std::string>(), value)) {
      throw Error(ErrorKind::input, "not a base view: xattr " + k + " of /" + path + " is not base64");
    }
    out[k] = value;
  }
  return out;
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

nlohmann::json BaseView::header_json(const nlohmann::json& extra_facts) const {
  nlohmann::json dpkg = nlohmann::json::array();
  for (const auto& p : m_facts.dpkg) {
    dpkg.push_back({{"name", p.name}, {"version", p.version}, {"arch", p.arch}});
  }
  nlohmann::json facts = {{"interpreters", m_facts.interpreters},
                          {"dpkg", dpkg},
                          {"cuda", m_facts.cuda},
                          {"cuda_source", m_facts.cuda_source},
                          {"cudnn", m_facts.cudnn},
                          {"cudnn_source", m_facts.cudnn_source},
                          {"os_id", m_facts.os_id},
                          {"os_version_id", m_facts.os_version_id},
                          {"ld_so_conf", m_facts.ld_so_conf}};
  facts["glibc"] = m_facts.glibc ? nlohmann::json::array({m_facts.glibc->first, m_facts.glibc->second}) : nullptr;
  facts.update(extra_facts);
  return {{"format", k_format}, {"layers", m_layers}, {"facts", facts}};
}

void BaseView::write_json(std::ostream& out, const nlohmann::json& extra, const nlohmann::json& extra_facts) const {
  nlohmann::json head = extra;
  nlohmann::json header = header_json(extra_facts);
  head.update(header);
  std::string h = dump(head);
  out << h.substr(0, h.size() - 1) << ",\"nodes\":{";
  bool first = true;
  for (const auto& [path, n] : m_nodes) {
    nlohmann::json j = {{"t", std::string(1, n.type)}, {"m", n.mode}, {"o", owner_json(n.owner)}, {"l", n.layer}};
    if (n.size != 0) {
      j["s"] = n.size;
    }
    if (!n.target.empty()) {
      j["k"] = n.target;
    }
    if (!n.xattrs.empty()) {
      j["x"] = xattrs_json(n.xattrs);
    }
    out << (first ? "" : ",") << dump(nlohmann::json(path)) << ":" << dump(j);
    first = false;
  }
  out << "}}\n";
}

std::string compress_view(const BaseView& view) {
  std::string text = dump(nlohmann::json{{"format", BaseView::k_format}, {"layers", view.layers()}}) + "\n";
  for (const auto& [path, n] : view.nodes()) {
    text +=
        dump(nlohmann::json::array({path, std::string(1, n.type), n.mode, n.owner.uid, n.owner.gid, n.owner.uname.str(),
                                    n.owner.gname.str(), n.layer, n.size, n.target, xattrs_json(n.xattrs)}));
    text += '\n';
  }
  for (const auto& [path, content] : view.contents()) {
    text += dump(nlohmann::json{{"c", path}, {"b", util::base64_encode(content)}});
    text += '\n';
  }
  std::string out(ZSTD_compressBound(text.size()), '\0');
  std::size_t size = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  if (ZSTD_isError(size)) {
    throw Error(ErrorKind::internal, std::string("zstd: ") + ZSTD_getErrorName(size));
  }
  out.resize(size);
  return out;
}

BaseView decompress_view(const std::string& bytes, const std::vector<std::string>& config_env) {
  unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 32)) {
    throw Error(ErrorKind::input, "not a compressed base view");
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  std::size_t n = ZSTD_decompress(text.data(), text.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n) || n != text.size()) {
    throw Error(ErrorKind::input, "not a compressed base view");
  }
  BaseView v = BaseView::from_lines(text);
  v.finish(config_env);
  return v;
}

BaseView BaseView::from_lines(const std::string& text) {
  try {
    std::size_t eol = text.find('\n');
    nlohmann::json j = nlohmann::json::parse(text.substr(0, eol));
    if (j.at("format").get<int>() != k_format) {
      throw Error(ErrorKind::input,
                  "base view of format " + j.at("format").dump() + ", not " + std::to_string(k_format));
    }
    BaseView v;
    v.m_layers = j.at("layers").get<std::vector<std::string>>();
    v.m_layer = static_cast<int>(v.m_layers.size()) - 1;
    // One small document per path: never a tree of every path in memory at once.
    auto hint = v.m_nodes.end();
    while (eol != std::string::npos && eol + 1 < text.size()) {
      std::size_t next = text.find('\n', eol + 1);
      nlohmann::json a = nlohmann::json::parse(
          text.begin() + static_cast<std::ptrdiff_t>(eol + 1),
          next == std::string::npos ? text.end() : text.begin() + static_cast<std::ptrdiff_t>(next));
      eol = next;
      if (a.is_object()) {
        // A kept file's content, after the paths.
        std::string path = a.at("c").get<std::string>(), content;
        if (v.m_nodes.count(path) == 0 || !util::base64_decode(a.at("b").get<std::string>(), content)) {
          throw Error(ErrorKind::input, "not a base view: the content of /" + path + " is not one of its files");
        }
        v.m_content.emplace(std::move(path), std::move(content));
        continue;
      }
      ViewNode node;
      std::string path = a.at(0).get<std::string>();
      node.type = a.at(1).get<std::string>().at(0);
      node.mode = a.at(2).get<std::uint32_t>();
      node.owner = Owner{a.at(3).get<std::int64_t>(), a.at(4).get<std::int64_t>(), a.at(5).get<std::string>(),
                         a.at(6).get<std::string>()};
      node.layer = a.at(7).get<int>();
      node.size = a.at(8).get<std::int64_t>();
      node.target = a.at(9).get<std::string>();
      node.xattrs = xattrs_from(a.at(10), path);
      hint = v.m_nodes.emplace_hint(hint, std::move(path), std::move(node));
    }
    return v;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, std::string("not a base view: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw Error(ErrorKind::input, std::string("not a base view: ") + e.what());
  }
}

std::vector<std::string> apply_base_view(EntrySet& set, const BaseView& view, const std::string& what) {
  std::vector<std::string> followed;
  if (view.nodes().empty()) {
    // Nothing below (a scratch base's first layer): no path moves and no directory
    // takes metadata, so the entries (finalized, parents present) stay as they are;
    // resolving each of them against an empty tree was a quarter of a no-change
    // rebuild's time.
    return followed;
  }
  // The entries are moved, node by node, never copied: a 30,000-file layer's set is
  // held once, not two or three times (a no-change rebuild's peak memory).
  std::map<std::string, Entry> entries = set.take_entries();
  std::map<std::string, Entry> moved;
  std::map<std::string, std::string> from; // new path -> the path the rule named
  while (!entries.empty()) {
    auto node = entries.extract(entries.begin());
    Entry& e = node.mapped();
    const std::string path = node.key();
    std::vector<std::string> links;
    std::string to = view.resolve(path, e.type == Entry::Type::dir, &links, what + ": /" + path);
    for (auto& l : links) {
      if (std::find(followed.begin(), followed.end(), l) == followed.end()) {
        followed.push_back(l);
      }
    }
    const ViewNode* there = view.find(to);
    if (e.type == Entry::Type::dir && there != nullptr && there->type != '5' && there->type != '2') {
      throw Error(ErrorKind::input,
                  what + ": the directory /" + path + (to != path ? " (through the base's links: /" + to + ")" : "") +
                      " would replace a file of the base",
                  "write it somewhere else, or remove the base's file in an earlier step");
    }
    if (e.type == Entry::Type::hardlink) {
      e.link_target = view.resolve(e.link_target, false, nullptr, what + ": /" + path);
    }
    e.path = to;
    if (auto it = moved.find(to); it != moved.end()) {
      // The same directory reached twice (a parent written both ways) is one directory.
      if (it->second.type == Entry::Type::dir && e.type == Entry::Type::dir) {
        continue;
      }
      auto first = from.find(to); // an entry that did not move was named as `to` itself
      throw Error(ErrorKind::input,
                  what + ": /" + (first != from.end() ? first->second : to) + " and /" + path +
                      " are the same path in the image (/" + to + ", through the base's symlinks)",
                  "write the file once");
    }
    if (to != path) {
      from[to] = path;
    }
    node.key() = to;
    moved.insert(std::move(node));
  }
  set.replace_entries(std::move(moved));
  set.add_missing_parents(Owner{});
  // Directories that exist in the base keep the base's metadata.
  std::map<std::string, Entry> adjusted = set.take_entries();
  for (auto& [path, e] : adjusted) {
    if (e.type != Entry::Type::dir) {
      continue;
    }
    const ViewNode* n = view.find(path);
    if (n != nullptr && n->type == '5') {
      e.mode = n->mode;
      e.owner = n->owner;
      e.xattrs = n->xattrs.empty() ? nullptr : std::make_shared<const std::map<std::string, std::string>>(n->xattrs);
    }
  }
  set.replace_entries(std::move(adjusted));
  return followed;
}

std::function<std::size_t(char*, std::size_t)>
verified_layer_reader(std::function<std::size_t(char*, std::size_t)> inner, const oci::Descriptor& layer,
                      const std::string& image) {
  // oci::VerifyingSink does the hashing and the size and digest check.
  auto verify = std::make_shared<oci::VerifyingSink>(layer, image + " layer " + layer.digest.str(), nullptr);
  auto done = std::make_shared<bool>(false);
  return [inner = std::move(inner), verify, done](char* buf, std::size_t len) -> std::size_t {
    if (*done) {
      return 0;
    }
    std::size_t n = inner(buf, len);
    if (n > 0) {
      (*verify)(buf, n);
      return n;
    }
    *done = true;
    verify->check();
    return 0;
  };
}

BaseView read_base_view(const oci::Image& image, const oci::Manifest& m, const std::vector<std::string>& config_env) {
  ViewCacheOptions o;
  o.what = image.name();
  return cached_view(
      m.layers, [&](const oci::Descriptor& d) { return image.open_blob(d, 0); }, config_env, o);
}

namespace {

std::string view_key(const std::vector<oci::Descriptor>& layers, std::size_t n) {
  std::string key = "base-view " + std::to_string(BaseView::k_format) + "\n";
  for (std::size_t i = 0; i < n; ++i) {
    key += layers[i].digest.str() + "\n";
  }
  return util::sha256_hex(key);
}

fs::path view_cache_file(const fs::path& cache_dir, const std::vector<oci::Descriptor>& layers, std::size_t n) {
  return CacheLayout(cache_dir).base_view(view_key(layers, n));
}

} // namespace

std::string view_cache_key(const std::vector<oci::Descriptor>& layers) {
  return view_key(layers, layers.size());
}

fs::path view_cache_path(const fs::path& cache_dir, const std::vector<oci::Descriptor>& layers) {
  return view_cache_file(cache_dir, layers, layers.size());
}

BaseView cached_view(const std::vector<oci::Descriptor>& layers,
                     const std::function<oci::Reader(const oci::Descriptor&)>& open,
                     const std::vector<std::string>& config_env, const ViewCacheOptions& o) {
  BaseView view;
  std::size_t from = 0;
  if (!o.cache_dir.empty()) {
    for (std::size_t n = layers.size(); n > 0 && from == 0; --n) {
      fs::path file = view_cache_file(o.cache_dir, layers, n);
      std::error_code ec;
      if (!fs::exists(file, ec)) {
        continue;
      }
      try {
        view = decompress_view(util::read_file(file), {});
        if (view.layers().size() != n) {
          throw Error(ErrorKind::input,
                      "it holds " + std::to_string(view.layers().size()) + " layers, not " + std::to_string(n));
        }
        for (std::size_t i = 0; i < n; ++i) {
          if (view.layers()[i] != layers[i].digest.str()) {
            throw Error(ErrorKind::input, "its layer " + std::to_string(i) + " is another one");
          }
        }
        from = n;
      } catch (const Error& e) {
        // Safe: the file only caches what reading the layers gives; a damaged or older
        // one is read again from the layers.
        view = BaseView();
        if (o.debug) {
          o.debug("base-view: not using " + file.string() + ": " + e.what());
        }
      }
    }
  }
  if (from < layers.size()) {
    if (o.info) {
      auto count = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " layer" : " layers"); };
      o.info("reading the file tree of " + o.what + " (" +
             (from == 0 ? count(layers.size())
                        : "the top " + std::to_string(layers.size() - from) + " of " + count(layers.size()) + "; the " +
                              std::to_string(from) + " below them from the cache") +
             ")");
    }
    util::with_context("reading the layers of " + o.what, [&] {
      for (std::size_t i = from; i < layers.size(); ++i) {
        view.add_layer(verified_layer_reader(open(layers[i]), layers[i], o.what), layers[i].digest.str());
      }
      // Hard links to package files (conda's environments link from pkgs/, tar writes
      // the second path of an inode as a link) whose target was not kept: read the
      // layers holding those targets once more, for those files alone.
      std::map<int, std::set<std::string>> by_layer;
      for (const auto& [target, layer] : view.missing_link_targets()) {
        by_layer[layer].insert(target);
      }
      for (const auto& entry : by_layer) {
        const int layer = entry.first;
        const std::set<std::string>& targets = entry.second;
        if (layer < 0 || static_cast<std::size_t>(layer) >= layers.size()) {
          continue;
        }
        const oci::Descriptor& d = layers[static_cast<std::size_t>(layer)];
        auto read = verified_layer_reader(open(d), d, o.what);
        scan_tar(
            read, d.digest.str(),
            [&](const TarMember& m) { return m.type == '0' && targets.count(m.path) != 0 && m.size <= (1 << 24); },
            [&](const TarMember& m, const std::string& content) { view.fill_link_target(m.path, content); });
        std::vector<char> rest(1 << 16);
        while (read(rest.data(), rest.size()) > 0) {
        }
      }
    });
    if (o.store && !o.cache_dir.empty() && !layers.empty()) {
      fs::path file = view_cache_file(o.cache_dir, layers, layers.size());
      util::create_dirs(file.parent_path(), "the base-view cache directory");
      util::write_file_atomic(file, compress_view(view));
    }
  }
  view.finish(config_env);
  return view;
}

nlohmann::json entry_tree(const EntrySet& set) {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& [path, e] : set.entries()) {
    if (e.type == Entry::Type::dir || e.type == Entry::Type::symlink) {
      t.push_back({path, e.type == Entry::Type::dir ? "5" : "2", e.mode, e.owner.uid, e.owner.gid, e.owner.uname.str(),
                   e.owner.gname.str(), e.link_target});
    }
  }
  return t;
}

void add_tree_layer(BaseView& view, const nlohmann::json& tree, const std::string& digest) {
  view.begin_layer(digest);
  for (const auto& item : tree) {
    TarMember m;
    m.path = item.at(0).get<std::string>();
    m.type = item.at(1).get<std::string>().at(0);
    m.mode = item.at(2).get<std::uint32_t>();
    m.uid = item.at(3).get<std::int64_t>();
    m.gid = item.at(4).get<std::int64_t>();
    m.uname = item.at(5).get<std::string>();
    m.gname = item.at(6).get<std::string>();
    m.link_target = item.at(7).get<std::string>();
    view.add_member(m);
  }
}

} // namespace layers
