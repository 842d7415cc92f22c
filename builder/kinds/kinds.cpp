#include "builder/layer_kind.hpp"

namespace builder {

// The one registration of each kind.
const LayerKind& layer_kind(spec::LayerSpec::Kind kind) {
  switch (kind) {
  case spec::LayerSpec::Kind::wheels:
    return wheels_layer_kind();
  case spec::LayerSpec::Kind::debs:
    return debs_layer_kind();
  case spec::LayerSpec::Kind::accounts:
    return accounts_layer_kind();
  case spec::LayerSpec::Kind::files:
  case spec::LayerSpec::Kind::data:
    break;
  }
  return copy_layer_kind();
}

} // namespace builder
