#pragma once
// The base image of a build: its manifest, config and where its blobs live, plus
// what the wheel installer needs to know about its Python.
#include "builder/build.hpp"
#include "compat_matrix/facts.hpp"
#include "compat_matrix/matrix.hpp"
#include "imageio/source.hpp"
#include "layers/base_view.hpp"
#include "layers/cache.hpp"
#include "oci/layout.hpp"
#include "python/wheel.hpp"
#include "registry/transfer.hpp"

#include "spec/spec.hpp"
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace builder {

// What `base: auto` chose, and the facts that go into labels and metadata.
struct ResolvedBase {
  std::string reference; // registry reference of the published image
  std::string paddle;
  std::string cuda;
  std::string cudnn;
  std::string tensorrt;
  std::string python;
  std::string driver_full;
  std::string driver_minor;
  std::string driver_level; // full | minor-version | forward
  std::vector<std::string> archs;
  nlohmann::json report; // the resolver's JSON (choice, candidates, reasons, caveats)
  std::string origin;    // the matrix row the facts come from ("paddle.yaml:40")
};

struct Base {
  std::string name;                  // as written in the spec ("scratch", "oci:/x:tag")
  std::optional<oci::Digest> digest; // manifest digest (none for scratch)
  oci::Manifest manifest;            // empty layers for scratch
  oci::ImageConfig config;
  // An explicit base whose tag the compatibility matrix lists as a published Paddle
  // image (published_base): that row's facts, which the build records under what the
  // base itself states.
  std::optional<ResolvedBase> published;
  // The compatibility matrix (built-in, the spec's resolve.matrix files, --matrix).
  std::shared_ptr<const compat::Matrix> matrix;
  // The base as an image, opened by imageio::open_source (a layout, a docker-archive or
  // a registry repository): blobs are read from it, a registry's are mounted from it.
  // Null for scratch.
  oci::ImagePtr image;
  std::optional<ResolvedBase> resolved; // base: auto
  // A local file for one of the base's blobs: a layout's own file, else the blob pulled
  // once from the image into the layer cache (set by the build once the cache is open).
  std::function<std::filesystem::path(const oci::Descriptor&)> local_blob;
  // The base's file tree and facts (load_base_view); null for scratch.
  std::shared_ptr<const layers::BaseView> view;
};

// A debug-level log line (Events::debug; empty: not logged).
using DebugLog = std::function<void(const std::string& line)>;

// Opens the base named by the spec: scratch, an oci: layout, a docker-archive: file or
// a registry image, through imageio::open_source (only its manifest and config are fetched; layers stay in the registry
// until a local output or a Python scan needs them). `base: auto` is resolved with the compatibility matrix (built-in
// data, then the spec's resolve.matrix files, then extra_matrix); the chosen image is read from resolve.layout under
// its tag when that is set, else pulled from the registry the matrix names. The matrix's row for `ref` when its tag is
// a published Paddle image's: a registry repository whose path is one the matrix lists (HOST/paddlepaddle/paddle on any
// host, a mirror included), or a layout or archive holding that tag. nullopt otherwise: nothing is guessed from a tag
// alone on another repository.
std::optional<ResolvedBase> published_base(const compat::Matrix& m, const oci::ImageRef& ref);

Base open_base(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix = {},
               const imageio::Connect& connect = {});

// Checks that every layer blob of a local (layout) base still has its digest, so a
// blob corrupted in place never reaches an output. A blob is hashed on first use and
// again only when its (dev, inode, size, mtime_ns, ctime_ns) changes; that stat of a
// verified blob is kept in cache_dir/base-info/blobs. Returns how many blobs were
// hashed. Throws Error(integrity) naming the blob and the base.
std::size_t verify_local_base(const Base& base, const std::filesystem::path& cache_dir);
// After the build linked the base blobs into its outputs (a new hard link changes a
// file's ctime, not its bytes): records the new ctime of every verified blob whose
// dev, inode, size and mtime are unchanged, so the next build does not hash it again.
void refresh_local_base_records(const Base& base, const std::filesystem::path& cache_dir, const DebugLog& debug = {});

// Sets base.view: read from cache_dir/base-view/<manifest hex>.json.zst, or built in one
// streaming pass over the base's layers (from the layout, or streamed from the
// registry without keeping them; each checked against its digest) and cached there.
// `info` is told when the layers are read. No-op for scratch.
void load_base_view(Base& base, const std::filesystem::path& cache_dir, const DebugLog& debug = {},
                    const std::function<void(const std::string&)>& info = {});

// What the spec says about Python, completed from the base's view when needed
// (interpreter, site-packages, glibc).
python::PythonTarget python_target(const spec::BuildSpec& s, const Base& base);

// The interpreter and glibc from the base's view: python3.X in /usr/local/bin (a
// python.org build) before /usr/bin, the newest X within one directory; minor -1 when
// the base has none (or no view). python_target derives from it, and so does the
// io.paddle-image.python.version label of an image without a wheels layer.
struct BaseInterpreter {
  int minor = -1;
  std::string bin_dir; // "/usr/bin" or "/usr/local/bin"
  std::optional<std::pair<int, int>> glibc;
};
BaseInterpreter base_interpreter(const Base& base);

// ---- The base in a build -----------------------------------------------------------

// Opens the spec's base (open_base), checks a local one's blobs against their digests
// (verify_local_base), pulls a registry or archive base's layers into the layer cache
// only when something local needs them (Base::local_blob), and loads its view.
Base open_build_base(const spec::BuildSpec& s, const BuildOptions& o, layers::LayerCache& cache, const Events& ev);
// The base in the report: what `base: auto` chose, its name and digest, its layers.
void report_base(const Base& base, BuildReport& rep, const Events& ev);
// The Python the wheels are installed for; none without a wheels layer.
std::optional<python::PythonTarget> wheels_target(const spec::BuildSpec& s, const Base& base);

// What the base states about itself, read from its view: label key (after
// "io.paddle-image.") -> value and where it was read.
struct BaseFact {
  std::string value, source;
};
// The facts the base states (CUDA, cuDNN, Paddle, Python), each checked as the label
// readers check it: one that is not a version is left out, with a warning.
std::map<std::string, BaseFact> base_facts(const Base& base, const Events& ev);
// requires: fills in only what the base cannot tell: a value the base states otherwise
// is an input error naming both.
void check_requires_against_base(const spec::BuildSpec& s, const std::map<std::string, BaseFact>& facts);
// "12.0.1" -> "12.0" (the form requires: and the labels use); "" stays "".
std::string major_minor(const std::string& v);
// A value from the base, as a build line may show it: escaped, and cut when long.
std::string shown_value(const std::string& v);

// ---- The base's facts for the image's labels and the Python target -------------------

// What the base brings to the image's compatibility labels (docs/labels.md): the
// matrix's row for it (a base chosen by `base: auto`, or a published Paddle image the
// matrix knows), what the base states itself over that (it wins; a disagreement is
// said), and the driver floor for the CUDA it has (stated, else its
// NVIDIA_REQUIRE_CUDA) from the matrix. `cuda_known`: the matrix knows that CUDA, so its
// minor-compat floor is the matrix's, none included.
struct BaseCompatFacts {
  compat::ImageFacts facts;
  bool cuda_known = false;
};
BaseCompatFacts base_compat_facts(const Base& base, const std::map<std::string, BaseFact>& facts, const Events& ev);

// Said where the target's facts are used for selection: markers on python_full_version
// are evaluated as 3.N.0 when the base has no dpkg entry for its Python.
void warn_if_no_dpkg_python(const Base& base, const python::PythonTarget& t, const Events& ev);
// The Python facts of the target for selection and the closure check: the full
// version from the base's dpkg entry for python3.N (else 3.N.0) and the Python
// distributions the base already has.
python::TargetFacts base_target_facts(const Base& base, const python::PythonTarget& t);

} // namespace builder
