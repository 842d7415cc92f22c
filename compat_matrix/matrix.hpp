#pragma once
// The compatibility matrix: facts about CUDA, drivers, GPUs, cuDNN, TensorRT and the
// published Paddle GPU images (data/*.yaml, compiled in; see data/SCHEMA.md). Every
// row keeps its source, whether it is confirmed, and where it was read (file:line).
#include "compat_matrix/version.hpp"

#include <optional>
#include <string>
#include <vector>

namespace compat {

struct EmbeddedFile {
  const char* name;
  const char* content;
};
const std::vector<EmbeddedFile>& embedded_files();

struct Row {
  std::string source;
  bool confirmed = true;
  std::string origin; // "cuda.yaml:12"
};

struct CudaRow : Row {
  std::string version;
  bool released = true;
  std::string driver_full;
  std::string driver_minor; // empty: no minor-version compatibility
  std::vector<int> sm;
};

struct ForwardBranch : Row {
  std::string branch;
  int driver_major = 0;
  std::string kind;
  std::string eol;
  std::vector<int> cuda_majors;
};

struct GpuRow : Row {
  std::string name;
  std::string cc; // "9.0"
  std::string gpu_class;
  std::vector<std::string> aliases;
};

struct LibraryRow : Row {
  std::string version;
  std::vector<std::string> cuda; // spans "11.0-11.8"
};

struct RegistryRow : Row {
  std::string name;
  std::string repository;
  std::string versions; // range
};

struct ImageRow : Row {
  std::string tag;
  std::string kind = "runtime";
  std::string cuda;
  std::string cudnn;
  std::string tensorrt;
  std::vector<int> archs;
  bool archs_confirmed = false;
};

struct ReleaseRow : Row {
  std::string version;
  std::string python;
  bool python_confirmed = true;
  std::string min_cc;
  std::vector<std::string> pip_cuda;
  std::vector<ImageRow> images;
};

struct Matrix {
  std::vector<CudaRow> cuda;
  std::vector<std::string> forward_gpu_classes;
  std::vector<ForwardBranch> forward_branches;
  std::vector<GpuRow> gpus;
  std::vector<LibraryRow> cudnn;
  std::vector<LibraryRow> tensorrt;
  std::vector<RegistryRow> registries;
  std::vector<ReleaseRow> paddle;

  // The built-in data.
  static Matrix builtin();
  // Merges one YAML document (same schema); rows with the same key are replaced.
  // Errors name `file:line` and the row. Validates the whole matrix afterwards.
  void merge(const std::string& yaml_text, const std::string& file);
  // Cross-checks (images name known CUDA/cuDNN/TensorRT rows, versions parse...).
  void validate() const;

  const CudaRow* find_cuda(const std::string& version) const;
  const LibraryRow* find_cudnn(const std::string& version) const;
  const LibraryRow* find_tensorrt(const std::string& version) const;
  // The release a stated Paddle version belongs to ("2.6.1.post117" is release 2.6.1:
  // the .post suffix names the CUDA build); nullptr for none or a version that does not
  // parse.
  const ReleaseRow* find_release(const std::string& paddle_version) const;
};

// The published image of `release` built for CUDA `cuda`, a runtime image before a
// devel one; nullptr if none.
const ImageRow* find_published(const ReleaseRow& release, const std::string& cuda);

// The built-in matrix with user files merged in order (`--matrix FILE`).
Matrix load_matrix(const std::vector<std::string>& user_files);

// A GPU as the user named it, resolved to a compute capability.
struct Gpu {
  std::string input;
  std::string name;      // canonical name, or "sm_XY" when given as a capability
  Version cc;            // 9.0
  std::string gpu_class; // empty when given as a capability
  bool confirmed = true;
  std::string sm() const; // "sm_90"
};

// Accepts names and aliases ("A100-SXM4-80GB", "Tesla T4", "NVIDIA H100 PCIe"),
// "sm_90" and "9.0". Unknown names get a "did you mean". `what` names the flag/field.
Gpu find_gpu(const Matrix& m, const std::string& input, const std::string& what);

} // namespace compat
