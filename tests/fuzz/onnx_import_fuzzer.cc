// libFuzzer target for the ONNX importer: any byte string must give a graph or a Status, never
// a crash, a hang or a sanitizer report. A graph that imports must also export, as the
// onnx_io.h header promises: with custom ops the export re-imports to the same Hash(); the
// standard export (fused ops lowered to standard operators) either re-imports to a valid graph
// or refuses, with a message, an op that has no standard form.
//
// Build and run: docs/fuzzing.md.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/onnx/onnx_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto graph = rewire::ImportOnnxBytes(bytes, "fuzz.onnx");
  if (!graph.ok()) {
    if (graph.status().message().empty()) {
      std::fprintf(stderr, "error without a message\n");
      std::abort();
    }
    return 0;
  }
  if (!graph->Validate().ok()) {
    std::fprintf(stderr, "imported graph is invalid: %s\n", graph->Validate().message().c_str());
    std::abort();
  }
  rewire::OnnxExportOptions custom;
  custom.custom_ops = true;
  auto exported = rewire::ExportOnnxBytes(*graph, custom);
  if (!exported.ok()) {
    std::fprintf(stderr, "import ok but export failed: %s\n", exported.status().message().c_str());
    std::abort();
  }
  auto again = rewire::ImportOnnxBytes(*exported, "fuzz-reexport.onnx");
  if (!again.ok()) {
    std::fprintf(stderr, "re-import of the export failed: %s\n", again.status().message().c_str());
    std::abort();
  }
  if (again->Hash() != graph->Hash()) {
    std::fprintf(stderr, "round trip changed the hash\n");
    std::abort();
  }
  auto standard = rewire::ExportOnnxBytes(*graph);
  if (!standard.ok()) {
    if (standard.status().message().empty()) {
      std::fprintf(stderr, "standard export error without a message\n");
      std::abort();
    }
    return 0;
  }
  auto lowered = rewire::ImportOnnxBytes(*standard, "fuzz-standard.onnx");
  if (!lowered.ok() || !lowered->Validate().ok()) {
    std::fprintf(
        stderr, "the standard export does not re-import to a valid graph: %s\n",
        lowered.ok() ? lowered->Validate().message().c_str() : lowered.status().message().c_str());
    std::abort();
  }
  return 0;
}
