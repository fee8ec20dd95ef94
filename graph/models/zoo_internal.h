#pragma once
// Private to graph/models/: the per-model builders behind BuildModel and what they share.
// Each builder receives parameters already checked by BuildModel (none negative, none absurdly
// large); zero still means "the model's default".

#include <cstdint>

#include "graph/builder.h"
#include "graph/models/zoo.h"

namespace rewire::zoo {

/// `value` when set (positive), else the model's default `def`.
inline int64_t OrDefault(int64_t value, int64_t def) { return value > 0 ? value : def; }

// CNNs (cnn_models.cc).
StatusOr<Graph> BuildInceptionV3(const ModelParams& params);
StatusOr<Graph> BuildResNeXt50(const ModelParams& params);
StatusOr<Graph> BuildSqueezeNet(const ModelParams& params);
StatusOr<Graph> BuildResNet50(const ModelParams& params);
StatusOr<Graph> BuildVgg19(const ModelParams& params);

// Transformers (transformer_models.cc).
StatusOr<Graph> BuildBert(const ModelParams& params);
StatusOr<Graph> BuildVit(const ModelParams& params);
StatusOr<Graph> BuildDalle(const ModelParams& params);
StatusOr<Graph> BuildTransformerTransducer(const ModelParams& params);
StatusOr<Graph> BuildGpt2(const ModelParams& params);

// TASO's searched architectures (taso_models.cc).
StatusOr<Graph> BuildNasRnn(const ModelParams& params);
StatusOr<Graph> BuildNasNetA(const ModelParams& params);

// X-RLflow's graphs and TASO's examples in TASO's style (xrlflow_models.cc,
// xrlflow_cnn_models.cc).
StatusOr<Graph> BuildXrlflowBert(const ModelParams& params);
StatusOr<Graph> BuildXrlflowVit(const ModelParams& params);
StatusOr<Graph> BuildXrlflowDalle(const ModelParams& params);
StatusOr<Graph> BuildXrlflowTransformerTransducer(const ModelParams& params);
StatusOr<Graph> BuildXrlflowResNeXt50(const ModelParams& params);
StatusOr<Graph> BuildXrlflowInceptionV3(const ModelParams& params);
StatusOr<Graph> BuildXrlflowSqueezeNet(const ModelParams& params);
StatusOr<Graph> BuildTasoBert(const ModelParams& params);
StatusOr<Graph> BuildTasoNasNetA(const ModelParams& params);

}  // namespace rewire::zoo
