#include "compat_matrix/resolver.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace compat {

using util::Error;
using util::ErrorKind;

std::string to_string(DriverLevel level) {
  switch (level) {
  case DriverLevel::full:
    return "full";
  case DriverLevel::minor:
    return "minor-version";
  case DriverLevel::forward:
    return "forward";
  }
  return "full";
}

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

struct Evaluated {
  const ReleaseRow* release;
  const ImageRow* image;
  std::vector<Failure> failures;
  Candidate candidate;
};

std::string sm_name(int arch) {
  return "sm_" + std::to_string(arch);
}

// Binary compatibility: a cubin for sm_XY runs on CC X.Z with Z >= Y (same major).
bool ships_for(const std::vector<int>& archs, const Version& cc) {
  int major = static_cast<int>(cc.parts.at(0));
  int minor = cc.parts.size() > 1 ? static_cast<int>(cc.parts[1]) : 0;
  return std::any_of(archs.begin(), archs.end(), [&](int a) { return a / 10 == major && a % 10 <= minor; });
}

std::string arch_span(const std::vector<int>& archs) {
  if (archs.empty()) {
    return "none";
  }
  return sm_name(*std::min_element(archs.begin(), archs.end())) + ".." +
         sm_name(*std::max_element(archs.begin(), archs.end()));
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

const ForwardBranch* forward_branch(const Matrix& m, const Version& driver, int cuda_major) {
  for (const auto& b : m.forward_branches) {
    if (driver.major() == b.driver_major &&
        std::find(b.cuda_majors.begin(), b.cuda_majors.end(), cuda_major) != b.cuda_majors.end()) {
      return &b;
    }
  }
  return nullptr;
}

} // namespace

Resolution resolve(const Matrix& m, const Constraints& c) {
  Resolution res;
  // --- validate the constraints themselves (input errors, exit 3)
  VersionRange paddle_range = VersionRange::parse(c.paddle, c.field("paddle", -1));
  if (paddle_range.empty()) {
    throw Error(ErrorKind::input, c.field("paddle", -1) + ": '" + c.paddle + "' admits no version",
                "check the bounds, e.g. >=2.6,<3.1");
  }
  bool admit_pre = c.pre || paddle_range.admits_prereleases();
  std::optional<Version> want_cuda;
  if (!c.cuda.empty()) {
    want_cuda = Version::parse(c.cuda, c.field("cuda", -1));
    bool known_major = std::any_of(m.cuda.begin(), m.cuda.end(),
                                   [&](const CudaRow& r) { return Version::parse(r.version).has_prefix(*want_cuda); });
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
    if (want_cuda->parts.size() >= 2) {
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
  }
  std::optional<Version> want_cudnn;
  if (!c.cudnn.empty()) {
    want_cudnn = Version::parse(c.cudnn, c.field("cudnn", -1));
    if (want_cuda && want_cuda->parts.size() >= 2) {
      bool any = false;
      for (const auto& row : m.cudnn) {
        if (!Version::parse(row.version).has_prefix(*want_cudnn)) {
          continue;
        }
        for (const auto& span : row.cuda) {
          any = any || VersionSpan::parse(span, "cuda").contains(*want_cuda);
        }
      }
      if (!any) {
        throw Error(ErrorKind::input,
                    c.field("cudnn", -1) + " " + c.cudnn + " and " + c.field("cuda", -1) + " " + c.cuda +
                        " contradict each other: no cuDNN " + c.cudnn + " release supports CUDA " + c.cuda,
                    "drop one of them; `paddle-image matrix show cudnn` lists the pairs");
      }
    }
  }
  std::optional<Version> want_python;
  if (!c.python.empty()) {
    want_python = Version::parse(c.python, c.field("python", -1));
  }
  std::vector<Version> drivers;
  for (std::size_t i = 0; i < c.drivers.size(); ++i) {
    const auto& d = c.drivers[i];
    Version v = Version::parse(d, c.field("driver", static_cast<int>(i)));
    if (v.parts.size() == 1 && v.pre_rank == 3 && v.parts[0] >= 100 && v.parts[0] < 10000) {
      // A branch number: its first release, so every comparison stays conservative.
      v = Version::parse(d + ".0");
      res.notes.push_back("driver " + d + " read as " + v.text + " (the first release of branch " + d +
                          "); give the full version for an exact answer");
    }
    if (v.parts.size() < 2 || v.pre_rank != 3 || v.parts[0] < 100) {
      throw Error(ErrorKind::input,
                  c.field("driver", static_cast<int>(i)) + ": '" + d + "' is not an NVIDIA driver version",
                  "e.g. 535.104.05 or 550.120 (nvidia-smi --query-gpu=driver_version --format=csv)");
    }
    drivers.push_back(v);
  }
  for (std::size_t i = 0; i < c.gpus.size(); ++i) {
    res.gpus.push_back(find_gpu(m, c.gpus[i], c.field("gpu", static_cast<int>(i))));
  }
  bool custom_registry = c.registry != "dockerhub" && c.registry != "baidu";
  if (custom_registry && c.registry.find('/') == std::string::npos) {
    throw Error(ErrorKind::input,
                c.field("registry", -1) + ": '" + c.registry + "' is not dockerhub, baidu or HOST/PATH",
                "e.g. --registry dockerhub or --registry mirror.example.com/paddlepaddle/paddle");
  }
  if (c.kind != "runtime" && c.kind != "dev") {
    throw Error(ErrorKind::input, c.field("kind", -1) + ": '" + c.kind + "' must be runtime or dev");
  }
  bool all_datacenter = !res.gpus.empty() && std::all_of(res.gpus.begin(), res.gpus.end(), [&](const Gpu& g) {
    return std::find(m.forward_gpu_classes.begin(), m.forward_gpu_classes.end(), g.gpu_class) !=
           m.forward_gpu_classes.end();
  });

  // --- evaluate every published image
  std::vector<Evaluated> all;
  for (const auto& rel : m.paddle) {
    Version pv = Version::parse(rel.version);
    for (const auto& img : rel.images) {
      Evaluated ev{&rel, &img, {}, {}};
      auto fail = [&](Kind k, std::string msg) { ev.failures.push_back({k, std::move(msg)}); };
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
      if (!paddle_range.contains(pv)) {
        fail(Kind::paddle, "Paddle " + rel.version + " is outside " + c.paddle);
      } else if (pv.pre_rank != 3 && !admit_pre) {
        fail(Kind::prerelease, "Paddle " + rel.version + " is a pre-release");
      }
      std::string repo = repository_for(m, c, pv);
      if (repo.empty()) {
        fail(Kind::registry, "registry '" + c.registry + "' does not carry Paddle " + rel.version);
      }
      cand.reference = (repo.empty() ? std::string("docker.io/paddlepaddle/paddle") : repo) + ":" + img.tag;
      if (img.kind != c.kind) {
        fail(Kind::image_kind, img.tag + " is a " + img.kind + " image");
      }
      Version ic = Version::parse(img.cuda);
      if (want_cuda && !ic.has_prefix(*want_cuda)) {
        fail(Kind::cuda, img.tag + " has CUDA " + img.cuda);
      }
      if (want_cudnn && (img.cudnn.empty() || !Version::parse(img.cudnn).has_prefix(*want_cudnn))) {
        fail(Kind::cudnn, img.tag + " has " + (img.cudnn.empty() ? "no cuDNN" : "cuDNN " + img.cudnn));
      }
      if (c.need_tensorrt && img.tensorrt.empty()) {
        fail(Kind::tensorrt, img.tag + " has no TensorRT");
      }
      if (want_python) {
        if (rel.python.empty()) {
          cand.caveats.push_back("the Python version inside this image is not recorded; check it is " + c.python);
          cand.confirmed = false;
        } else if (!(Version::parse(rel.python) == *want_python)) {
          fail(Kind::python, "Paddle " + rel.version + " images ship Python " + rel.python);
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
      for (const auto& g : res.gpus) {
        std::string gname = g.name == g.sm() ? g.sm() : g.name + " (" + g.sm() + ")";
        if (!rel.min_cc.empty() && g.cc < Version::parse(rel.min_cc)) {
          fail(Kind::gpu, "Paddle " + rel.version + " needs compute capability " + rel.min_cc + " or newer; " + gname +
                              " has " + g.cc.text);
          continue;
        }
        if (!ships_for(img.archs, g.cc)) {
          fail(Kind::gpu,
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
      Version full = Version::parse(cuda->driver_full);
      for (std::size_t i = 0; i < drivers.size(); ++i) {
        const Version& d = drivers[i];
        if (d >= full) {
          cand.reasons.push_back("driver " + d.text + " >= " + cuda->driver_full + " (CUDA " + img.cuda +
                                 " full compatibility)");
          continue;
        }
        bool minor_ok = !cuda->driver_minor.empty() && d >= Version::parse(cuda->driver_minor);
        if (minor_ok && !c.strict_driver) {
          cand.level = std::max(cand.level, DriverLevel::minor);
          cand.reasons.push_back("driver " + d.text + " >= " + cuda->driver_minor + " (CUDA " + img.cuda +
                                 " minor-version compatibility)");
          cand.caveats.push_back("driver " + d.text + " is below CUDA " + img.cuda + "'s " + cuda->driver_full +
                                 ": runs under minor-version compatibility; PTX JIT of newer code may fail "
                                 "(CUDA error 222); upgrade to " +
                                 cuda->driver_full + " to remove this caveat");
          continue;
        }
        const ForwardBranch* fb = forward_branch(m, d, ic.major());
        if (c.allow_forward_compat && all_datacenter && fb != nullptr) {
          cand.level = DriverLevel::forward;
          cand.reasons.push_back("driver " + d.text + " (branch " + fb->branch + ") with forward compatibility");
          cand.caveats.push_back("forward compatibility: the image needs the cuda-compat package for CUDA " + img.cuda +
                                 " matching driver branch " + fb->branch +
                                 (fb->eol.empty() ? "" : " (EOL " + fb->eol + ")") + "; only on data-center GPUs");
          if (!fb->confirmed) {
            cand.caveats.push_back("forward compatibility of branch " + fb->branch + " with CUDA " +
                                   std::to_string(ic.major()) + " is unconfirmed (" + fb->source + ")");
            cand.confirmed = false;
          }
          continue;
        }
        std::string need = "CUDA " + img.cuda + " (" + img.tag + ") needs driver " + cuda->driver_full + " or newer";
        if (!cuda->driver_minor.empty()) {
          need += c.strict_driver
                      ? " (--strict-driver: minor-version compatibility from " + cuda->driver_minor + " not accepted)"
                      : " (" + cuda->driver_minor + " with minor-version compatibility)";
        }
        fail(Kind::driver, need + "; this node has " + d.text);
      }
      all.push_back(std::move(ev));
    }
  }

  for (auto& ev : all) {
    if (ev.failures.empty()) {
      res.candidates.push_back(ev.candidate);
    }
  }
  std::sort(res.candidates.begin(), res.candidates.end(), [](const Candidate& a, const Candidate& b) {
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
  if (!res.candidates.empty()) {
    return res;
  }

  // --- nothing fits: explain, with fixes
  auto has = [](const Evaluated& ev, Kind k) {
    return std::any_of(ev.failures.begin(), ev.failures.end(), [&](const Failure& f) { return f.kind == k; });
  };
  auto only = [&](const Evaluated& ev, std::set<Kind> kinds) {
    return std::all_of(ev.failures.begin(), ev.failures.end(),
                       [&](const Failure& f) { return kinds.count(f.kind) > 0; });
  };
  // Only pre-releases would fit: say so, with the one fix.
  std::set<std::string> pre_fits;
  for (const auto& ev : all) {
    if (!ev.failures.empty() && only(ev, {Kind::prerelease})) {
      pre_fits.insert(ev.release->version);
    }
  }
  if (!pre_fits.empty()) {
    std::string list;
    for (const auto& v : pre_fits) {
      list += (list.empty() ? "" : ", ") + v;
    }
    res.violations.push_back({c.field("pre", -1),
                              "only pre-releases fit: Paddle " + list,
                              {"add --pre (resolve.pre: true in the spec) to accept a pre-release, or relax the "
                               "other constraints for a stable release"}});
    return res;
  }
  std::vector<const Evaluated*> relevant;
  for (const auto& ev : all) {
    if (!has(ev, Kind::paddle) && !has(ev, Kind::prerelease) && !has(ev, Kind::registry) &&
        !has(ev, Kind::image_kind)) {
      relevant.push_back(&ev);
    }
  }
  if (relevant.empty()) {
    std::set<std::string> known;
    for (const auto& ev : all) {
      if (!has(ev, Kind::registry) && !has(ev, Kind::image_kind)) {
        known.insert(ev.release->version);
      }
    }
    std::string list;
    for (const auto& v : known) {
      list += (list.empty() ? "" : ", ") + v;
    }
    res.violations.push_back({c.field("paddle", -1),
                              "no published " + c.kind + " image of Paddle " + (c.paddle.empty() ? "any" : c.paddle) +
                                  " in registry '" + c.registry + "'",
                              {"releases with " + c.kind + " images there: " + (list.empty() ? "none" : list)}});
    return res;
  }
  std::size_t fewest = SIZE_MAX;
  for (const auto* ev : relevant) {
    std::set<Kind> kinds;
    for (const auto& f : ev->failures) {
      kinds.insert(f.kind);
    }
    fewest = std::min(fewest, kinds.size());
  }
  std::map<Kind, std::vector<std::string>> messages;
  for (const auto* ev : relevant) {
    std::set<Kind> kinds;
    for (const auto& f : ev->failures) {
      kinds.insert(f.kind);
    }
    if (kinds.size() != fewest) {
      continue;
    }
    for (const auto& f : ev->failures) {
      auto& list = messages[f.kind];
      if (std::find(list.begin(), list.end(), f.message) == list.end()) {
        list.push_back(f.message);
      }
    }
  }
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
      // The lowest driver that makes an otherwise fitting image work.
      std::optional<Version> best_full;
      std::optional<Version> best_minor;
      std::string best_tag;
      std::string best_cuda;
      for (const auto* ev : relevant) {
        if (!only(*ev, {Kind::driver})) {
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
        v.fixes.push_back(fix);
        bool branch_exists = std::any_of(drivers.begin(), drivers.end(), [&](const Version& d) {
          return forward_branch(m, d, Version::parse(best_cuda).major()) != nullptr;
        });
        if (!c.allow_forward_compat && all_datacenter && branch_exists) {
          v.fixes.push_back("or, on a supported data-center driver branch, allow forward compatibility "
                            "(--allow-forward-compat; allow_forward_compat: true under resolve:)");
        }
      }
      if (c.strict_driver) {
        v.fixes.push_back("or accept minor-version compatibility (drop --strict-driver / strict_driver)");
      }
    } else if (kind == Kind::gpu) {
      // Newest first; at most six, then a count.
      std::vector<const Evaluated*> serving;
      for (const auto& ev : all) {
        if (!has(ev, Kind::gpu) && !has(ev, Kind::registry) && !has(ev, Kind::image_kind)) {
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
                serving[i]->image->cuda +
                " (driver >= " + (c.strict_driver || cr->driver_minor.empty() ? cr->driver_full : cr->driver_minor) +
                ")";
      }
      if (serving.size() > 6) {
        list += " and " + std::to_string(serving.size() - 6) + " older (paddle-image resolve --all)";
      }
      v.fixes.push_back(list.empty() ? "no published image serves all these GPUs; split the fleet"
                                     : "builds that serve these GPUs: " + list);
    } else {
      std::set<std::string> values;
      for (const auto* ev : relevant) {
        if (!only(*ev, {kind})) {
          continue;
        }
        values.insert(kind == Kind::cuda     ? "CUDA " + ev->image->cuda
                      : kind == Kind::cudnn  ? "cuDNN " + (ev->image->cudnn.empty() ? "none" : ev->image->cudnn)
                      : kind == Kind::python ? "Python " + ev->release->python
                                             : ev->image->tag);
      }
      std::string list;
      for (const auto& x : values) {
        list += (list.empty() ? "" : ", ") + x;
      }
      v.fixes.push_back(list.empty() ? "relax " + v.constraint
                                     : "relax " + v.constraint + "; available otherwise: " + list);
    }
    res.violations.push_back(v);
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
