#include "compat_matrix/matrix.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <filesystem>

#include <algorithm>
#include <regex>
#include <set>
#include <yaml-cpp/yaml.h>

namespace compat {

using util::Error;
using util::ErrorKind;

namespace {

class Reader {
public:
  explicit Reader(std::string file) : m_file(std::move(file)) {}

  std::string at(const YAML::Node& n) const {
    return n.Mark().is_null() ? m_file : m_file + ":" + std::to_string(n.Mark().line + 1);
  }

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what, const std::string& hint = {}) const {
    throw Error(ErrorKind::input, at(n) + ": " + what, hint);
  }

  void keys(const YAML::Node& n, const std::string& row, const std::vector<std::string>& allowed) const {
    if (!n.IsMap()) {
      fail(n, row + ": must be a mapping");
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string k = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string best = util::closest(k, allowed);
        fail(it->first, row + ": unknown key '" + k + "'",
             best.empty() ? "see compat_matrix/data/SCHEMA.md" : "did you mean '" + best + "'?");
      }
    }
  }

  std::string str(const YAML::Node& n, const std::string& key, const std::string& row, bool required = true) const {
    const YAML::Node v = n[key];
    if (!v) {
      if (required) {
        fail(n, row + ": missing '" + key + "'");
      }
      return {};
    }
    if (!v.IsScalar()) {
      fail(v, row + ": '" + key + "' must be a string");
    }
    return v.Scalar();
  }

  std::string version(const YAML::Node& n, const std::string& key, const std::string& row, bool required = true) const {
    std::string s = str(n, key, row, required);
    if (!s.empty() && !Version::valid(s)) {
      fail(n[key], row + ": '" + key + "' value '" + s + "' is not a version");
    }
    return s;
  }

  bool boolean(const YAML::Node& n, const std::string& key, const std::string& row, bool fallback) const {
    const YAML::Node v = n[key];
    if (!v) {
      return fallback;
    }
    if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
      fail(v, row + ": '" + key + "' must be true or false");
    }
    return v.Scalar() == "true";
  }

  std::vector<std::string> strings(const YAML::Node& n, const std::string& key, const std::string& row) const {
    std::vector<std::string> out;
    const YAML::Node v = n[key];
    if (!v) {
      return out;
    }
    if (!v.IsSequence()) {
      fail(v, row + ": '" + key + "' must be a list");
    }
    for (const auto& x : v) {
      if (!x.IsScalar()) {
        fail(x, row + ": '" + key + "' entries must be strings");
      }
      out.push_back(x.Scalar());
    }
    return out;
  }

  std::vector<int> ints(const YAML::Node& n, const std::string& key, const std::string& row) const {
    std::vector<int> out;
    for (const auto& s : strings(n, key, row)) {
      if (s.empty() || s.size() > 4 || !std::all_of(s.begin(), s.end(), ::isdigit)) {
        fail(n[key], row + ": '" + key + "' entry '" + s + "' is not a number");
      }
      out.push_back(std::stoi(s));
    }
    return out;
  }

  void row(Row& r, const YAML::Node& n, const std::string& row_name) const {
    r.source = str(n, "source", row_name, false);
    r.confirmed = boolean(n, "confirmed", row_name, true);
    r.origin = at(n);
  }

private:
  std::string m_file;
};

template <typename T, typename Key> void upsert(std::vector<T>& rows, T row, Key key) {
  for (auto& r : rows) {
    if (key(r) == key(row)) {
      r = std::move(row);
      return;
    }
  }
  rows.push_back(std::move(row));
}

std::string normalize_gpu(const std::string& s) {
  std::string lower;
  for (char c : s) {
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (const char* word : {"nvidia", "tesla", "geforce"}) {
    for (auto pos = lower.find(word); pos != std::string::npos; pos = lower.find(word)) {
      lower.erase(pos, std::string(word).size());
    }
  }
  std::string out;
  for (char c : lower) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(c);
    }
  }
  return out;
}

void check_version_list(const std::vector<std::string>& spans, const std::string& row, const std::string& origin) {
  for (const auto& s : spans) {
    util::with_context(origin + ": " + row, [&] { (void)VersionSpan::parse(s, "cuda"); });
  }
}

// Calls fn on each row of the top-level list `key` (none when the key is absent).
template <typename Fn> void each_row(const Reader& rd, const YAML::Node& root, const char* key, Fn&& fn) {
  const YAML::Node list = root[key];
  if (!list) {
    return;
  }
  if (!list.IsSequence()) {
    rd.fail(list, std::string(key) + ": must be a list of rows");
  }
  for (const auto& n : list) {
    fn(n);
  }
}

// A `cuda:` row: a toolkit's driver floors and SM targets (none for an unreleased one).
CudaRow read_cuda_row(const Reader& rd, const YAML::Node& n) {
  CudaRow r;
  std::string name = "cuda row";
  rd.keys(n, name, {"version", "released", "driver_full", "driver_minor", "sm", "source", "confirmed"});
  r.version = rd.version(n, "version", name);
  name = "cuda " + r.version;
  r.released = rd.boolean(n, "released", name, true);
  if (r.released) {
    r.driver_full = rd.version(n, "driver_full", name);
    r.driver_minor = rd.version(n, "driver_minor", name, false);
    r.sm = rd.ints(n, "sm", name);
    if (r.sm.empty()) {
      rd.fail(n, name + ": 'sm' must list the SM targets the toolkit compiles for");
    }
  }
  rd.row(r, n, name);
  return r;
}

// A `forward_compat: branches:` row: a driver branch forward compatibility supports.
ForwardBranch read_forward_branch(const Reader& rd, const YAML::Node& n) {
  ForwardBranch b;
  std::string name = "forward_compat branch";
  rd.keys(n, name, {"branch", "driver_major", "kind", "eol", "cuda_majors", "source", "confirmed"});
  b.branch = rd.str(n, "branch", name);
  name = "branch " + b.branch;
  std::string major = rd.str(n, "driver_major", name);
  if (major.empty() || !std::all_of(major.begin(), major.end(), ::isdigit)) {
    rd.fail(n["driver_major"], name + ": driver_major must be a number");
  }
  b.driver_major = std::stoi(major);
  b.kind = rd.str(n, "kind", name, false);
  b.eol = rd.str(n, "eol", name, false);
  b.cuda_majors = rd.ints(n, "cuda_majors", name);
  rd.row(b, n, name);
  return b;
}

// A `gpus:` row: a GPU's compute capability, class and aliases.
GpuRow read_gpu_row(const Reader& rd, const YAML::Node& n) {
  GpuRow g;
  std::string name = "gpu row";
  rd.keys(n, name, {"name", "cc", "class", "aliases", "source", "confirmed"});
  g.name = rd.str(n, "name", name);
  name = "gpu " + g.name;
  g.cc = rd.str(n, "cc", name);
  static const std::regex cc_re("[0-9]+\\.[0-9]");
  if (!std::regex_match(g.cc, cc_re)) {
    rd.fail(n["cc"], name + ": cc '" + g.cc + "' is not MAJOR.MINOR", "e.g. cc: \"9.0\"");
  }
  g.gpu_class = rd.str(n, "class", name);
  static const std::vector<std::string> classes = {"datacenter", "workstation", "geforce", "jetson"};
  if (std::find(classes.begin(), classes.end(), g.gpu_class) == classes.end()) {
    rd.fail(n["class"], name + ": unknown class '" + g.gpu_class + "'",
            "use datacenter, workstation, geforce or jetson");
  }
  g.aliases = rd.strings(n, "aliases", name);
  rd.row(g, n, name);
  return g;
}

// A `cudnn:` or `tensorrt:` row (lib names which): a library version and the CUDAs it supports.
LibraryRow read_library_row(const Reader& rd, const YAML::Node& n, const char* lib) {
  LibraryRow l;
  std::string name = std::string(lib) + " row";
  rd.keys(n, name, {"version", "cuda", "source", "confirmed"});
  l.version = rd.version(n, "version", name);
  name = std::string(lib) + " " + l.version;
  l.cuda = rd.strings(n, "cuda", name);
  if (l.cuda.empty()) {
    rd.fail(n, name + ": 'cuda' must list the CUDA versions it supports");
  }
  check_version_list(l.cuda, name, rd.at(n));
  rd.row(l, n, name);
  return l;
}

// A `registries:` row: where Paddle's images are published, for which versions.
RegistryRow read_registry_row(const Reader& rd, const YAML::Node& n) {
  RegistryRow r;
  std::string name = "registry row";
  rd.keys(n, name, {"name", "repository", "versions", "source", "confirmed"});
  r.name = rd.str(n, "name", name);
  r.repository = rd.str(n, "repository", name);
  name = "registry " + r.repository;
  r.versions = rd.str(n, "versions", name, false);
  util::with_context(rd.at(n) + ": " + name, [&] { (void)VersionRange::parse(r.versions, "versions"); });
  rd.row(r, n, name);
  return r;
}

// One of a release's `images:` (release_name names the release in messages).
ImageRow read_image_row(const Reader& rd, const YAML::Node& in, const std::string& release_name) {
  ImageRow img;
  std::string iname = release_name + " image";
  rd.keys(in, iname, {"tag", "kind", "cuda", "cudnn", "tensorrt", "archs", "archs_confirmed", "source", "confirmed"});
  img.tag = rd.str(in, "tag", iname);
  iname = "image " + img.tag;
  img.kind = rd.str(in, "kind", iname, false);
  if (img.kind.empty()) {
    img.kind = "runtime";
  }
  if (img.kind != "runtime" && img.kind != "dev") {
    rd.fail(in["kind"], iname + ": kind must be runtime or dev");
  }
  img.cuda = rd.version(in, "cuda", iname);
  img.cudnn = rd.version(in, "cudnn", iname, false);
  img.tensorrt = rd.version(in, "tensorrt", iname, false);
  img.archs = rd.ints(in, "archs", iname);
  if (img.archs.empty()) {
    rd.fail(in, iname + ": 'archs' must list the SM architectures the build ships");
  }
  img.archs_confirmed = rd.boolean(in, "archs_confirmed", iname, false);
  rd.row(img, in, iname);
  return img;
}

// A `paddle:` row: a release's Python, minimum compute capability, pip CUDAs and images.
ReleaseRow read_release_row(const Reader& rd, const YAML::Node& n) {
  ReleaseRow rel;
  std::string name = "paddle row";
  rd.keys(n, name, {"version", "python", "python_confirmed", "min_cc", "pip_cuda", "images", "source", "confirmed"});
  rel.version = rd.version(n, "version", name);
  name = "paddle " + rel.version;
  rel.python = rd.version(n, "python", name, false);
  rel.python_confirmed = rd.boolean(n, "python_confirmed", name, true);
  rel.min_cc = rd.version(n, "min_cc", name, false);
  rel.pip_cuda = rd.strings(n, "pip_cuda", name);
  rd.row(rel, n, name);
  if (const YAML::Node images = n["images"]) {
    if (!images.IsSequence()) {
      rd.fail(images, name + ": 'images' must be a list");
    }
    for (const auto& in : images) {
      upsert(rel.images, read_image_row(rd, in, name), [](const ImageRow& x) { return x.tag; });
    }
  }
  return rel;
}

// Adds a release read from row n. A user row for an existing release adds or replaces
// images, keeping the others, and replaces only the fields the row gives.
void add_release(std::vector<ReleaseRow>& paddle, ReleaseRow rel, const YAML::Node& n) {
  for (auto& existing : paddle) {
    if (Version::parse(existing.version) == Version::parse(rel.version)) {
      for (auto& img : rel.images) {
        upsert(existing.images, img, [](const ImageRow& x) { return x.tag; });
      }
      if (!rel.python.empty()) {
        existing.python = rel.python;
        existing.python_confirmed = rel.python_confirmed;
      }
      if (!rel.min_cc.empty()) {
        existing.min_cc = rel.min_cc;
      }
      if (n["pip_cuda"]) {
        existing.pip_cuda = rel.pip_cuda;
      }
      if (n["source"]) {
        existing.source = rel.source;
      }
      if (n["confirmed"]) {
        existing.confirmed = rel.confirmed;
      }
      existing.origin = rel.origin;
      return;
    }
  }
  paddle.push_back(std::move(rel));
}

} // namespace

Matrix Matrix::builtin() {
  Matrix m;
  for (const auto& f : embedded_files()) {
    m.merge(f.content, std::string("compat_matrix/data/") + f.name);
  }
  return m;
}

void Matrix::merge(const std::string& text, const std::string& file) {
  Reader rd(file);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw Error(ErrorKind::input, file + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (root.IsNull()) {
    return;
  }
  rd.keys(root, "matrix", {"cuda", "forward_compat", "gpus", "cudnn", "tensorrt", "registries", "paddle"});
  each_row(rd, root, "cuda", [&](const YAML::Node& n) {
    upsert(cuda, read_cuda_row(rd, n), [](const CudaRow& x) { return Version::parse(x.version); });
  });
  if (const YAML::Node fc = root["forward_compat"]) {
    rd.keys(fc, "forward_compat", {"gpu_classes", "branches"});
    if (fc["gpu_classes"]) {
      forward_gpu_classes = rd.strings(fc, "gpu_classes", "forward_compat");
    }
    if (const YAML::Node branches = fc["branches"]) {
      for (const auto& n : branches) {
        upsert(forward_branches, read_forward_branch(rd, n), [](const ForwardBranch& x) { return x.branch; });
      }
    }
  }
  each_row(rd, root, "gpus", [&](const YAML::Node& n) {
    upsert(gpus, read_gpu_row(rd, n), [](const GpuRow& x) { return normalize_gpu(x.name); });
  });
  for (const char* lib : {"cudnn", "tensorrt"}) {
    auto& rows = std::string(lib) == "cudnn" ? cudnn : tensorrt;
    each_row(rd, root, lib, [&](const YAML::Node& n) {
      upsert(rows, read_library_row(rd, n, lib), [](const LibraryRow& x) { return x.version; });
    });
  }
  each_row(rd, root, "registries", [&](const YAML::Node& n) {
    // Key: name + versions (the two Baidu mirrors share a name and differ in range).
    upsert(registries, read_registry_row(rd, n), [](const RegistryRow& x) { return x.name + "|" + x.versions; });
  });
  each_row(rd, root, "paddle", [&](const YAML::Node& n) { add_release(paddle, read_release_row(rd, n), n); });
  validate();
}

void Matrix::validate() const {
  for (const auto& rel : paddle) {
    for (const auto& img : rel.images) {
      const CudaRow* c = find_cuda(img.cuda);
      if (c == nullptr || !c->released) {
        throw Error(ErrorKind::input,
                    img.origin + ": image " + img.tag + ": CUDA " + img.cuda +
                        (c == nullptr ? " is not in the cuda table" : " was never released"),
                    "add the CUDA row or fix the image's cuda");
      }
      if (!img.cudnn.empty() && find_cudnn(img.cudnn) == nullptr) {
        throw Error(ErrorKind::input,
                    img.origin + ": image " + img.tag + ": cuDNN " + img.cudnn + " is not in the cudnn table");
      }
      if (!img.tensorrt.empty() && find_tensorrt(img.tensorrt) == nullptr) {
        throw Error(ErrorKind::input,
                    img.origin + ": image " + img.tag + ": TensorRT " + img.tensorrt + " is not in the tensorrt table");
      }
    }
  }
}

Matrix load_matrix(const std::vector<std::string>& user_files) {
  Matrix m = Matrix::builtin();
  for (const auto& f : user_files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f, ec)) {
      throw Error(ErrorKind::input, "matrix file '" + f + "' does not exist",
                  "pass a YAML file (see compat_matrix/data/SCHEMA.md)");
    }
    m.merge(util::read_file(f), f);
  }
  return m;
}

const CudaRow* Matrix::find_cuda(const std::string& version) const {
  Version v = Version::parse(version);
  for (const auto& c : cuda) {
    if (Version::parse(c.version) == v) {
      return &c;
    }
  }
  return nullptr;
}

namespace {
const LibraryRow* find_lib(const std::vector<LibraryRow>& rows, const std::string& version) {
  for (const auto& r : rows) {
    if (r.version == version) {
      return &r;
    }
  }
  return nullptr;
}
} // namespace

const LibraryRow* Matrix::find_cudnn(const std::string& version) const {
  return find_lib(cudnn, version);
}
const LibraryRow* Matrix::find_tensorrt(const std::string& version) const {
  return find_lib(tensorrt, version);
}

const ReleaseRow* Matrix::find_release(const std::string& paddle_version) const {
  std::string release = paddle_version.substr(0, paddle_version.find(".post"));
  if (release.empty() || !Version::valid(release)) {
    return nullptr;
  }
  auto want = Version::parse(release);
  for (const auto& r : paddle) {
    if (Version::valid(r.version) && Version::parse(r.version) == want) {
      return &r;
    }
  }
  return nullptr;
}

const ImageRow* find_published(const ReleaseRow& release, const std::string& cuda) {
  const ImageRow* best = nullptr;
  for (const auto& img : release.images) {
    if (img.cuda == cuda && (best == nullptr || (best->kind != "runtime" && img.kind == "runtime"))) {
      best = &img;
    }
  }
  return best;
}

std::string Gpu::sm() const {
  return "sm_" + std::to_string(cc.parts.at(0)) + std::to_string(cc.parts.size() > 1 ? cc.parts[1] : 0);
}

Gpu find_gpu(const Matrix& m, const std::string& input, const std::string& what) {
  Gpu g;
  g.input = input;
  if (input.find_first_not_of(" \t") == std::string::npos) {
    throw Error(ErrorKind::input, what + ": the GPU name is empty",
                "give a name as nvidia-smi prints it (e.g. 'NVIDIA A100-SXM4-80GB') or a compute capability "
                "(sm_80 or 8.0)");
  }
  static const std::regex sm_re("(?:sm_?|SM_?)([0-9]{2,3})");
  static const std::regex cc_re("([0-9]{1,2})\\.([0-9])");
  std::smatch mm;
  if (std::regex_match(input, mm, sm_re)) {
    std::string d = mm[1];
    g.cc = Version::parse(d.substr(0, d.size() - 1) + "." + d.substr(d.size() - 1));
    g.name = g.sm();
    return g;
  }
  if (std::regex_match(input, mm, cc_re)) {
    g.cc = Version::parse(input);
    g.name = g.sm();
    return g;
  }
  std::string norm = normalize_gpu(input);
  // Leading words of the name, longest first ("NVIDIA H100 80GB HBM3" -> "h10080gbhbm3",
  // "h10080gb", "h100"): nvidia-smi appends memory and form factor after a space.
  std::vector<std::string> words;
  {
    std::string word;
    for (char ch : input + " ") {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        word.push_back(ch);
      } else if (!word.empty()) {
        std::string w = normalize_gpu(word);
        if (!w.empty()) {
          words.push_back(w);
        }
        word.clear();
      }
    }
  }
  std::vector<std::string> heads;
  for (std::size_t k = words.size(); k > 0; --k) {
    std::string h;
    for (std::size_t i = 0; i < k; ++i) {
      h += words[i];
    }
    heads.push_back(h);
  }
  const GpuRow* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& row : m.gpus) {
    std::vector<std::string> names = row.aliases;
    names.push_back(row.name);
    for (const auto& n : names) {
      std::string nn = normalize_gpu(n);
      if (nn.empty()) {
        continue;
      }
      bool exact = nn == norm || std::find(heads.begin(), heads.end(), nn) != heads.end();
      bool prefix = norm.size() > nn.size() && norm.compare(0, nn.size(), nn) == 0 &&
                    !std::isdigit(static_cast<unsigned char>(norm[nn.size()]));
      if ((exact || prefix) && nn.size() + (exact ? 1000 : 0) > best_len) {
        best = &row;
        best_len = nn.size() + (exact ? 1000 : 0);
      }
    }
  }
  if (best == nullptr) {
    std::vector<std::string> names;
    for (const auto& row : m.gpus) {
      names.push_back(row.name);
    }
    std::vector<std::string> normalized;
    for (const auto& n : names) {
      normalized.push_back(normalize_gpu(n));
    }
    // A name that is (nearly) all prefix words like "NVIDIA" leaves nothing to match.
    std::string guess = norm.empty() ? std::string{} : util::closest(norm, normalized);
    std::string suggestion;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!guess.empty() && normalized[i] == guess) {
        suggestion = names[i];
      }
    }
    throw Error(ErrorKind::input, what + ": unknown GPU '" + input + "'",
                (suggestion.empty() ? std::string{} : "did you mean '" + suggestion + "'? ") +
                    "or give its compute capability, e.g. sm_90 or 9.0 (`paddle-image matrix show gpus` lists them)");
  }
  g.name = best->name;
  g.cc = Version::parse(best->cc);
  g.gpu_class = best->gpu_class;
  g.confirmed = best->confirmed;
  return g;
}

} // namespace compat
