#pragma once
// NumPy .npy files (format 1.0/2.0/3.0, C order, little-endian) <-> HostTensor.

#include <string>

#include "graph/types.h"

namespace rewire {

/// Reads float32 ('<f4'), float64 (converted to float32), int64 ('<i8'), int32 (converted to
/// int64) and bool ('|b1') arrays. A truncated file, Fortran order, or another dtype is an error
/// naming the file.
StatusOr<HostTensor> ReadNpy(const std::string& path);
StatusOr<HostTensor> ParseNpy(const std::string& bytes, const std::string& source = "<memory>");
/// Writes `t` as a .npy file (format 1.0).
Status WriteNpy(const std::string& path, const HostTensor& t);
std::string SerializeNpy(const HostTensor& t);

}  // namespace rewire
