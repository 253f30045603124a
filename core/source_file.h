// Reading the files weft's formats are written in: text (.weft, .wmod: bounded size, UTF-8 without
// NUL bytes) and binary (.onnx, .npz), every refusal a located UserError.
#pragma once

#include <string>

namespace weft {

inline constexpr long long kMaxSourceFileBytes = 64ll << 20;

// The file's bytes. Throws UserError at `path` when it cannot be opened or read, is larger than
// 64 MiB, or is not UTF-8 text (located at the first offending byte).
std::string read_source_file(const std::string& path);

// The file's bytes, whatever they are. Throws UserError at `path` when it does not exist, is a
// directory (a stream opens one and reports a nonsense size), or cannot be read.
std::string read_binary_file(const std::string& path);

}  // namespace weft
