#include "compat_matrix/resolver.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace compat {

using util::Error;
using util::ErrorKind;

namespace {

enum class Kind { paddle, prerelease, registry, image_kind, cuda, cudnn, tensorrt, python, gpu, driver };

const char* kind_field(Kind k) {
  switch (k) {
  case Kind::paddle:
    return "paddle";
  case Kind::prerelease:
    return "pre";
  case Kind::registry:
    return "registry";
  case Kind::image_kind:
    return "kind";
  case Kind::cuda:
    return "cuda";
  case Kind::cudnn:
    return "cudnn";
  case Kind::tensorrt:
    return "tensorrt";
  case Kind::python:
    return "python";
  case Kind::gpu:
    return "gpu";
  case Kind::driver:
    return "driver";
  }
  return "";
}

struct Failure {
  Kind kind;
  std::string message;
};

// One published image measured against the constraints.
struct Evaluated {
  const ReleaseRow* release;
  const ImageRow* image;
  std::vector<Failure> failures;
  Candidate candidate;

  void fail(Kind k, std::string msg) { failures.push_back({k, std::move(msg)}); }
  bool has(Kind k) const {
    return std::any_of(failures.begin(), failures.end(), [&](const Failure& f) { return f.kind == k; });
  }
  // Fails, and only for reasons of these kinds.
  bool only(const std::set<Kind>& kinds) const {
    return std::all_of(failures.begin(), failures.end(), [&](const Failure& f) { return kinds.count(f.kind) > 0; });
  }
  std::set<Kind> kinds() const {
    std::set<Kind> out;
    for (const auto& f : failures) {
      out.insert(f.kind);
    }
    return out;
  }
};

// The constraints, parsed and checked against the matrix.
struct Wanted {
  VersionRange paddle;
  bool admit_pre = false;
  std::optional<Version> cuda;
  std::optional<Version> cudnn;
  std::optional<Version> python;
  std::vector<Version> drivers;
  bool forward_gpus = false; // every GPU may use forward compatibility
};

std::string arch_span(const std::vector<int>& archs) {
  if (archs.empty()) {
    return "none";
  }
  return sm_name(*std::min_element(archs.begin(), archs.end())) + ".." +
         sm_name(*std::max_element(archs.begin(), archs.end()));
}

std::string comma_list(const std::set<std::string>& items) {
  std::string list;
  for (const auto& x : items) {
    list += (list.empty() ? "" : ", ") + x;
  }
  return list;
}

std::string repository_for(const Matrix& m, const Constraints& c, const Version& v) {
  if (c.registry != "dockerhub" && c.registry != "baidu") {
    return c.registry; // a mirror: same tags under HOST/PATH
  }
  for (const auto& r : m.registries) {
    if (r.name == c.registry && VersionRange::parse(r.versions).contains(v)) {
      return r.repository;
    }
  }
  return {};
}

// --- validating the constraints (input errors, exit 3)

VersionRange wanted_paddle(const Constraints& c) {
  VersionRange range = VersionRange::parse(c.paddle, c.field("paddle", -1));
  if (range.empty()) {
    throw Error(ErrorKind::input, c.field("paddle", -1) + ": '" + c.paddle + "' admits no version",
                "check the bounds, e.g. >=2.6,<3.1");
  }
  return range;
}

std::optional<Version> wanted_cuda(const Matrix& m, const Constraints& c) {
  if (c.cuda.empty()) {
    return std::nullopt;
  }
  Version want = Version::parse(c.cuda, c.field("cuda", -1));
  bool known_major = std::any_of(m.cuda.begin(), m.cuda.end(),
                                 [&](const CudaRow& r) { return Version::parse(r.version).has_prefix(want); });
  if (!known_major) {
    std::string list;
    for (const auto& r : m.cuda) {
      if (r.released) {
        list += (list.empty() ? "" : ", ") + r.version;
      }
    }
    throw Error(ErrorKind::input, c.field("cuda", -1) + ": CUDA " + c.cuda + " is not a known CUDA release",
                "known: " + list);
  }
  if (want.parts.size() >= 2) {
    const CudaRow* row = m.find_cuda(c.cuda);
    if (row == nullptr) {
      throw Error(ErrorKind::input, c.field("cuda", -1) + ": CUDA " + c.cuda + " is not a known CUDA release",
                  "`paddle-image matrix show cuda` lists them");
    }
    if (!row->released) {
      throw Error(ErrorKind::input,
                  c.field("cuda", -1) + ": CUDA " + c.cuda + " was never released (" + row->source + ")",
                  "use a released version, e.g. 12.6 or 12.8");
    }
  }
  return want;
}

// A cuDNN that no release pairs with the wanted CUDA contradicts it.
std::optional<Version> wanted_cudnn(const Matrix& m, const Constraints& c, const std::optional<Version>& cuda) {
  if (c.cudnn.empty()) {
    return std::nullopt;
  }
  Version want = Version::parse(c.cudnn, c.field("cudnn", -1));
  if (cuda && cuda->parts.size() >= 2) {
    bool any = false;
    for (const auto& row : m.cudnn) {
      if (!Version::parse(row.version).has_prefix(want)) {
        continue;
      }
      for (const auto& span : row.cuda) {
        any = any || VersionSpan::parse(span, "cuda").contains(*cuda);
      }
    }
    if (!any) {
      throw Error(ErrorKind::input,
                  c.field("cudnn", -1) + " " + c.cudnn + " and " + c.field("cuda", -1) + " " + c.cuda +
                      " contradict each other: no cuDNN " + c.cudnn + " release supports CUDA " + c.cuda,
                  "drop one of them; `paddle-image matrix show cudnn` lists the pairs");
    }
  }
  return want;
}

// Driver versions; a bare branch number is read as the branch's first release (noted).
std::vector<Version> wanted_drivers(const Constraints& c, std::vector<std::string>& notes) {
  std::vector<Version> drivers;
  for (std::size_t i = 0; i < c.drivers.size(); ++i) {
    const auto& d = c.drivers[i];
    Version v = Version::parse(d, c.field("driver", static_cast<int>(i)));
    if (v.parts.size() == 1 && v.pre_rank == 3 && v.parts[0] >= 100 && v.parts[0] < 10000) {
      // A branch number: its first release, so every comparison stays conservative.
      v = Version::parse(d + ".0");
      notes.push_back("driver " + d + " read as " + v.text + " (the first release of branch " + d +
                      "); give the full version for an exact answer");
    }
    if (v.parts.size() < 2 || v.pre_rank != 3 || v.parts[0] < 100) {
      throw Error(ErrorKind::input,
                  c.field("driver", static_cast<int>(i)) + ": '" + d + "' is not an NVIDIA driver version",
                  "e.g. 535.104.05 or 550.120 (nvidia-smi --query-gpu=driver_version --format=csv)");
    }
    drivers.push_back(v);
  }
  return drivers;
}

void check_registry_and_kind(const Constraints& c) {
  bool custom_registry = c.registry != "dockerhub" && c.registry != "baidu";
  if (custom_registry && c.registry.find('/') == std::string::npos) {
    throw Error(ErrorKind::input,
                c.field("registry", -1) + ": '" + c.registry + "' is not dockerhub, baidu or HOST/PATH",
                "e.g. --registry dockerhub or --registry mirror.example.com/paddlepaddle/paddle");
  }
  if (c.kind != "runtime" && c.kind != "dev") {
    throw Error(ErrorKind::input, c.field("kind", -1) + ": '" + c.kind + "' must be runtime or dev");
  }
}

// Checks every constraint, in the order they are reported; resolves the GPUs into res.
Wanted validate(const Matrix& m, const Constraints& c, Resolution& res) {
  Wanted w;
  w.paddle = wanted_paddle(c);
  w.admit_pre = c.pre || w.paddle.admits_prereleases();
  w.cuda = wanted_cuda(m, c);
  w.cudnn = wanted_cudnn(m, c, w.cuda);
  if (!c.python.empty()) {
    w.python = Version::parse(c.python, c.field("python", -1));
  }
  w.drivers = wanted_drivers(c, res.notes);
  for (std::size_t i = 0; i < c.gpus.size(); ++i) {
    res.gpus.push_back(find_gpu(m, c.gpus[i], c.field("gpu", static_cast<int>(i))));
  }
  check_registry_and_kind(c);
  std::vector<std::string> classes;
  for (const auto& g : res.gpus) {
    classes.push_back(g.gpu_class);
  }
  w.forward_gpus = forward_compat_gpus(m, classes);
  return w;
}

// --- evaluating one published image

// Release, registry, image kind and the software versions in the image.
void check_contents(const Constraints& c, const Wanted& w, const ReleaseRow& rel, const ImageRow& img, const Matrix& m,
                    Evaluated& ev) {
  Candidate& cand = ev.candidate;
  Version pv = Version::parse(rel.version);
  if (!w.paddle.contains(pv)) {
    ev.fail(Kind::paddle, "Paddle " + rel.version + " is outside " + c.paddle);
  } else if (pv.pre_rank != 3 && !w.admit_pre) {
    ev.fail(Kind::prerelease, "Paddle " + rel.version + " is a pre-release");
  }
  std::string repo = repository_for(m, c, pv);
  if (repo.empty()) {
    ev.fail(Kind::registry, "registry '" + c.registry + "' does not carry Paddle " + rel.version);
  }
  cand.reference = (repo.empty() ? std::string("docker.io/paddlepaddle/paddle") : repo) + ":" + img.tag;
  if (img.kind != c.kind) {
    ev.fail(Kind::image_kind, img.tag + " is a " + img.kind + " image");
  }
  if (w.cuda && !Version::parse(img.cuda).has_prefix(*w.cuda)) {
    ev.fail(Kind::cuda, img.tag + " has CUDA " + img.cuda);
  }
  if (w.cudnn && (img.cudnn.empty() || !Version::parse(img.cudnn).has_prefix(*w.cudnn))) {
    ev.fail(Kind::cudnn, img.tag + " has " + (img.cudnn.empty() ? "no cuDNN" : "cuDNN " + img.cudnn));
  }
  if (c.need_tensorrt && img.tensorrt.empty()) {
    ev.fail(Kind::tensorrt, img.tag + " has no TensorRT");
  }
  if (w.python) {
    if (rel.python.empty()) {
      cand.caveats.push_back("the Python version inside this image is not recorded; check it is " + c.python);
      cand.confirmed = false;
    } else if (!(Version::parse(rel.python) == *w.python)) {
      ev.fail(Kind::python, "Paddle " + rel.version + " images ship Python " + rel.python);
    } else if (!rel.python_confirmed) {
      cand.caveats.push_back("Python " + rel.python + " in this image is inferred, not confirmed");
      cand.confirmed = false;
    }
  }
  std::string reason = "Paddle " + rel.version + ", CUDA " + img.cuda;
  if (!img.cudnn.empty()) {
    reason += ", cuDNN " + img.cudnn;
  }
  reason += img.tensorrt.empty() ? ", no TensorRT" : ", TensorRT " + img.tensorrt;
  if (!rel.python.empty()) {
    reason += ", Python " + rel.python;
  }
  cand.reasons.push_back(reason);
}

// Each GPU: the release's minimum compute capability, then the image's architectures.
void check_gpus(const std::vector<Gpu>& gpus, const ReleaseRow& rel, const ImageRow& img, Evaluated& ev) {
  Candidate& cand = ev.candidate;
  for (const auto& g : gpus) {
    std::string gname = g.name == g.sm() ? g.sm() : g.name + " (" + g.sm() + ")";
    if (!meets_min_cc(rel, g.cc)) {
      ev.fail(Kind::gpu, "Paddle " + rel.version + " needs compute capability " + rel.min_cc + " or newer; " + gname +
                             " has " + g.cc.text);
      continue;
    }
    if (!ships_code_for(img.archs, g.cc)) {
      ev.fail(Kind::gpu,
              gname + " is not among the architectures " + img.tag + " ships (" + arch_span(img.archs) + ")");
      continue;
    }
    cand.reasons.push_back(gname + ": the image ships code for it");
    if (!img.archs_confirmed) {
      cand.caveats.push_back("the architecture list of this image is inferred, not confirmed (" + img.source + ")");
      cand.confirmed = false;
    }
    if (!g.confirmed) {
      cand.caveats.push_back("the compute capability of " + g.name + " is unconfirmed");
      cand.confirmed = false;
    }
  }
}

// Each driver: full, minor-version or (when allowed) forward compatibility, else a failure.
void check_drivers(const Matrix& m, const Constraints& c, const Wanted& w, const ImageRow& img, const CudaRow& cuda,
                   Evaluated& ev) {
  Candidate& cand = ev.candidate;
  DriverNeeds needs = DriverNeeds::of(cuda);
  int cuda_major = Version::parse(img.cuda).major();
  for (const Version& d : w.drivers) {
    auto level = native_driver_level(d, needs, c.strict_driver);
    if (level == DriverLevel::full) {
      cand.reasons.push_back("driver " + d.text + " >= " + cuda.driver_full + " (CUDA " + img.cuda +
                             " full compatibility)");
      continue;
    }
    if (level == DriverLevel::minor) {
      cand.level = std::max(cand.level, DriverLevel::minor);
      cand.reasons.push_back("driver " + d.text + " >= " + cuda.driver_minor + " (CUDA " + img.cuda +
                             " minor-version compatibility)");
      cand.caveats.push_back("driver " + d.text + " is below CUDA " + img.cuda + "'s " + cuda.driver_full +
                             ": runs under minor-version compatibility; PTX JIT of newer code may fail "
                             "(CUDA error 222); upgrade to " +
                             cuda.driver_full + " to remove this caveat");
      continue;
    }
    const ForwardBranch* fb = forward_branch(m, d, cuda_major);
    if (c.allow_forward_compat && w.forward_gpus && fb != nullptr) {
      cand.level = DriverLevel::forward;
      cand.reasons.push_back("driver " + d.text + " (branch " + fb->branch + ") with forward compatibility");
      cand.caveats.push_back("forward compatibility: the image needs the cuda-compat package for CUDA " + img.cuda +
                             " matching driver branch " + fb->branch +
                             (fb->eol.empty() ? "" : " (EOL " + fb->eol + ")") + "; only on data-center GPUs");
      if (!fb->confirmed) {
        cand.caveats.push_back("forward compatibility of branch " + fb->branch + " with CUDA " +
                               std::to_string(cuda_major) + " is unconfirmed (" + fb->source + ")");
        cand.confirmed = false;
      }
      continue;
    }
    std::string need = "CUDA " + img.cuda + " (" + img.tag + ") needs driver " + cuda.driver_full + " or newer";
    if (!cuda.driver_minor.empty()) {
      need += c.strict_driver
                  ? " (--strict-driver: minor-version compatibility from " + cuda.driver_minor + " not accepted)"
                  : " (" + cuda.driver_minor + " with minor-version compatibility)";
    }
    ev.fail(Kind::driver, need + "; this node has " + d.text);
  }
}

Evaluated evaluate(const Matrix& m, const Constraints& c, const Wanted& w, const std::vector<Gpu>& gpus,
                   const ReleaseRow& rel, const ImageRow& img) {
  Evaluated ev{&rel, &img, {}, {}};
  Candidate& cand = ev.candidate;
  cand.image = &img;
  cand.paddle = rel.version;
  cand.python = rel.python;
  cand.confirmed = rel.confirmed && img.confirmed;
  const CudaRow* cuda = m.find_cuda(img.cuda);
  cand.min_driver = cuda->driver_full;
  cand.minor_driver = cuda->driver_minor;
  cand.confirmed = cand.confirmed && cuda->confirmed;
  for (int a : img.archs) {
    cand.gpu_archs.push_back(sm_name(a));
  }
  check_contents(c, w, rel, img, m, ev);
  check_gpus(gpus, rel, img, ev);
  check_drivers(m, c, w, img, *cuda, ev);
  return ev;
}

// Best first: driver level, newest Paddle, confirmed data, newest CUDA, reference.
std::vector<Candidate> ranked_candidates(const std::vector<Evaluated>& all) {
  std::vector<Candidate> out;
  for (const auto& ev : all) {
    if (ev.failures.empty()) {
      out.push_back(ev.candidate);
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    if (a.level != b.level) {
      return a.level < b.level;
    }
    auto pa = Version::parse(a.paddle);
    auto pb = Version::parse(b.paddle);
    if (!(pa == pb)) {
      return pa > pb;
    }
    if (a.confirmed != b.confirmed) {
      return a.confirmed;
    }
    auto ca = Version::parse(a.image->cuda);
    auto cb = Version::parse(b.image->cuda);
    if (!(ca == cb)) {
      return ca > cb;
    }
    return a.reference < b.reference;
  });
  return out;
}

// --- nothing fits: violations with fixes

// Only pre-releases would fit: say so, with the one fix.
std::optional<Violation> prerelease_violation(const Constraints& c, const std::vector<Evaluated>& all) {
  std::set<std::string> pre_fits;
  for (const auto& ev : all) {
    if (!ev.failures.empty() && ev.only({Kind::prerelease})) {
      pre_fits.insert(ev.release->version);
    }
  }
  if (pre_fits.empty()) {
    return std::nullopt;
  }
  return Violation{c.field("pre", -1),
                   "only pre-releases fit: Paddle " + comma_list(pre_fits),
                   {"add --pre (resolve.pre: true in the spec) to accept a pre-release, or relax the "
                    "other constraints for a stable release"}};
}

// No image of a wanted release is published in that registry and kind at all.
Violation no_release_violation(const Constraints& c, const std::vector<Evaluated>& all) {
  std::set<std::string> known;
  for (const auto& ev : all) {
    if (!ev.has(Kind::registry) && !ev.has(Kind::image_kind)) {
      known.insert(ev.release->version);
    }
  }
  std::string list = comma_list(known);
  return Violation{c.field("paddle", -1),
                   "no published " + c.kind + " image of Paddle " + (c.paddle.empty() ? "any" : c.paddle) +
                       " in registry '" + c.registry + "'",
                   {"releases with " + c.kind + " images there: " + (list.empty() ? "none" : list)}};
}

// The lowest driver that makes an otherwise fitting image work.
std::vector<std::string> driver_fixes(const Matrix& m, const Constraints& c, const Wanted& w,
                                      const std::vector<const Evaluated*>& relevant) {
  std::vector<std::string> fixes;
  std::optional<Version> best_full;
  std::optional<Version> best_minor;
  std::string best_tag;
  std::string best_cuda;
  for (const auto* ev : relevant) {
    if (!ev->only({Kind::driver})) {
      continue;
    }
    const CudaRow* cuda = m.find_cuda(ev->image->cuda);
    Version f = Version::parse(cuda->driver_full);
    if (!best_full || f < *best_full) {
      best_full = f;
      best_tag = ev->image->tag;
      best_cuda = ev->image->cuda;
      best_minor = cuda->driver_minor.empty() ? std::nullopt : std::optional(Version::parse(cuda->driver_minor));
    }
  }
  if (best_full) {
    std::string fix = "upgrade the node driver to " + best_full->text + " or newer to use " + best_tag;
    if (best_minor && !c.strict_driver) {
      fix += " (" + best_minor->text + " or newer works under minor-version compatibility)";
    }
    fixes.push_back(fix);
    bool branch_exists = std::any_of(w.drivers.begin(), w.drivers.end(), [&](const Version& d) {
      return forward_branch(m, d, Version::parse(best_cuda).major()) != nullptr;
    });
    if (!c.allow_forward_compat && w.forward_gpus && branch_exists) {
      fixes.push_back("or, on a supported data-center driver branch, allow forward compatibility "
                      "(--allow-forward-compat; allow_forward_compat: true under resolve:)");
    }
  }
  if (c.strict_driver) {
    fixes.push_back("or accept minor-version compatibility (drop --strict-driver / strict_driver)");
  }
  return fixes;
}

// The builds that serve the GPUs: newest first; at most six, then a count.
std::string gpu_fix(const Matrix& m, const Constraints& c, const std::vector<Evaluated>& all) {
  std::vector<const Evaluated*> serving;
  for (const auto& ev : all) {
    if (!ev.has(Kind::gpu) && !ev.has(Kind::registry) && !ev.has(Kind::image_kind)) {
      serving.push_back(&ev);
    }
  }
  std::stable_sort(serving.begin(), serving.end(), [](const Evaluated* a, const Evaluated* b) {
    return Version::parse(a->release->version) > Version::parse(b->release->version);
  });
  std::string list;
  for (std::size_t i = 0; i < serving.size() && i < 6; ++i) {
    const CudaRow* cr = m.find_cuda(serving[i]->image->cuda);
    list += (list.empty() ? "" : ", ") + std::string("Paddle ") + serving[i]->release->version + " cuda" +
            serving[i]->image->cuda + " (driver >= " + DriverNeeds::of(*cr).lowest(c.strict_driver) + ")";
  }
  if (serving.size() > 6) {
    list += " and " + std::to_string(serving.size() - 6) + " older (paddle-image resolve --all)";
  }
  return list.empty() ? "no published image serves all these GPUs; split the fleet"
                      : "builds that serve these GPUs: " + list;
}

// What the images failing only on `kind` offer instead.
std::string relax_fix(Kind kind, const std::string& constraint, const std::vector<const Evaluated*>& relevant) {
  std::set<std::string> values;
  for (const auto* ev : relevant) {
    if (!ev->only({kind})) {
      continue;
    }
    values.insert(kind == Kind::cuda     ? "CUDA " + ev->image->cuda
                  : kind == Kind::cudnn  ? "cuDNN " + (ev->image->cudnn.empty() ? "none" : ev->image->cudnn)
                  : kind == Kind::python ? "Python " + ev->release->python
                                         : ev->image->tag);
  }
  std::string list = comma_list(values);
  return list.empty() ? "relax " + constraint : "relax " + constraint + "; available otherwise: " + list;
}

// The failures of the images that miss the fewest constraints, one violation per kind.
std::vector<Violation> closest_violations(const Matrix& m, const Constraints& c, const Wanted& w,
                                          const std::vector<Evaluated>& all,
                                          const std::vector<const Evaluated*>& relevant) {
  std::size_t fewest = SIZE_MAX;
  for (const auto* ev : relevant) {
    fewest = std::min(fewest, ev->kinds().size());
  }
  std::map<Kind, std::vector<std::string>> messages;
  for (const auto* ev : relevant) {
    if (ev->kinds().size() != fewest) {
      continue;
    }
    for (const auto& f : ev->failures) {
      auto& list = messages[f.kind];
      if (std::find(list.begin(), list.end(), f.message) == list.end()) {
        list.push_back(f.message);
      }
    }
  }
  std::vector<Violation> out;
  for (const auto& [kind, msgs] : messages) {
    Violation v;
    v.constraint = c.field(kind_field(kind), -1);
    if (kind == Kind::gpu && !c.gpus.empty()) {
      v.constraint = c.field("gpu", -1);
    }
    for (const auto& msg : msgs) {
      v.message += (v.message.empty() ? "" : "; ") + msg;
    }
    if (kind == Kind::driver) {
      v.fixes = driver_fixes(m, c, w, relevant);
    } else if (kind == Kind::gpu) {
      v.fixes.push_back(gpu_fix(m, c, all));
    } else {
      v.fixes.push_back(relax_fix(kind, v.constraint, relevant));
    }
    out.push_back(v);
  }
  return out;
}

std::vector<Violation> explain(const Matrix& m, const Constraints& c, const Wanted& w,
                               const std::vector<Evaluated>& all) {
  if (auto pre = prerelease_violation(c, all)) {
    return {*pre};
  }
  // Images of a wanted release, in the registry and of the kind asked for.
  std::vector<const Evaluated*> relevant;
  for (const auto& ev : all) {
    if (!ev.has(Kind::paddle) && !ev.has(Kind::prerelease) && !ev.has(Kind::registry) && !ev.has(Kind::image_kind)) {
      relevant.push_back(&ev);
    }
  }
  if (relevant.empty()) {
    return {no_release_violation(c, all)};
  }
  return closest_violations(m, c, w, all, relevant);
}

} // namespace

Resolution resolve(const Matrix& m, const Constraints& c) {
  Resolution res;
  Wanted w = validate(m, c, res);
  std::vector<Evaluated> all;
  for (const auto& rel : m.paddle) {
    for (const auto& img : rel.images) {
      all.push_back(evaluate(m, c, w, res.gpus, rel, img));
    }
  }
  res.candidates = ranked_candidates(all);
  if (res.candidates.empty()) {
    res.violations = explain(m, c, w, all);
  }
  return res;
}

nlohmann::json to_json(const Candidate& c) {
  return {{"reference", c.reference},   {"paddle", c.paddle},
          {"python", c.python},         {"cuda", c.image->cuda},
          {"cudnn", c.image->cudnn},    {"tensorrt", c.image->tensorrt},
          {"kind", c.image->kind},      {"driver_compatibility", to_string(c.level)},
          {"min_driver", c.min_driver}, {"minor_driver", c.minor_driver},
          {"archs", c.gpu_archs},       {"confirmed", c.confirmed},
          {"reasons", c.reasons},       {"caveats", c.caveats},
          {"source", c.image->source}};
}

nlohmann::json to_json(const Resolution& r, bool all) {
  nlohmann::json cands = nlohmann::json::array();
  for (std::size_t i = 0; i < r.candidates.size() && (all || i == 0); ++i) {
    cands.push_back(to_json(r.candidates[i]));
  }
  nlohmann::json viol = nlohmann::json::array();
  for (const auto& v : r.violations) {
    viol.push_back({{"constraint", v.constraint}, {"message", v.message}, {"fixes", v.fixes}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    gpus.push_back({{"input", g.input}, {"name", g.name}, {"cc", g.cc.text}, {"sm", g.sm()}, {"class", g.gpu_class}});
  }
  return {{"choice", r.candidates.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.candidates[0].reference)},
          {"candidates", cands},
          {"candidate_count", r.candidates.size()},
          {"violations", viol},
          {"gpus", gpus},
          {"notes", r.notes}};
}

std::string describe(const Resolution& r, bool all) {
  std::ostringstream t;
  for (const auto& n : r.notes) {
    t << "note: " << n << "\n";
  }
  if (r.candidates.empty()) {
    t << "no compatible image:\n";
    for (const auto& v : r.violations) {
      t << "  " << v.constraint << ": " << v.message << "\n";
      for (const auto& f : v.fixes) {
        t << "    fix: " << f << "\n";
      }
    }
    return t.str();
  }
  for (std::size_t i = 0; i < r.candidates.size() && (all || i == 0); ++i) {
    const auto& c = r.candidates[i];
    t << (all ? std::to_string(i + 1) + ". " : "") << c.reference << "\n";
    for (const auto& why : c.reasons) {
      t << "    fits: " << why << "\n";
    }
    t << "    driver compatibility: " << to_string(c.level) << " (full from " << c.min_driver
      << (c.minor_driver.empty() ? "" : ", minor-version from " + c.minor_driver) << ")\n";
    for (const auto& cav : c.caveats) {
      t << "    caveat: " << cav << "\n";
    }
    t << "    data: " << (c.confirmed ? "confirmed" : "relies on unconfirmed rows") << "\n";
  }
  if (!all && r.candidates.size() > 1) {
    t << "(" << r.candidates.size() - 1 << " more candidate(s): --all)\n";
  }
  return t.str();
}

} // namespace compat
