#pragma once
// A kind of spec layer, as the build sees it. Each kind is one class in its own file
// under builder/kinds/ (files and data: copy_layer.cpp; wheels: wheels_layer.cpp; debs:
// debs_layer.cpp; accounts: accounts_layer.cpp) and one entry in layer_kind()
// (kinds/kinds.cpp), which the build asks by the spec layer's kind. What a new kind provides is walked through in
// ARCHITECTURE.md ("Adding a layer kind").
#include "builder/layer_build.hpp"
#include "spec/spec.hpp"

#include <vector>

namespace builder {

class LayerKind {
public:
  virtual ~LayerKind() = default;
  // Builds the layer, or reuses it from the layer cache (and, through it, the registry
  // cache) when its key is there: one report, or one per part of a layer in parts.
  // `proto` carries the layer's name and kind. The layer lands on cx.landing and sets
  // cx.tree_out to its directories and links, which the layers above land on.
  virtual std::vector<LayerReport> build(const spec::LayerSpec& l, const LayerContext& cx, LayerReport proto) const = 0;
};

// The kind that builds a spec layer of `kind`.
const LayerKind& layer_kind(spec::LayerSpec::Kind kind);

// The kinds, each defined in its own file (kinds/*.cpp).
const LayerKind& copy_layer_kind();
const LayerKind& wheels_layer_kind();
const LayerKind& debs_layer_kind();
const LayerKind& accounts_layer_kind();

} // namespace builder
