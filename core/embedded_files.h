// Source files embedded into weft at build time (cmake/embed_files.cmake): the device and support
// code that generated programs paste in, kept in the tree as real files that compile on their own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft {

struct EmbeddedFile {
  std::string_view path;  // relative to the source root, as the files include each other
  std::string_view text;
};

// Every embedded file, ordered by path (defined by the generated embedded_files.cpp).
const std::vector<EmbeddedFile>& embedded_files();

// The text of the embedded file `path`; an internal error when it was not embedded.
std::string_view embedded_file(std::string_view path);

// `path`'s text made self-contained: each line `#include "P"` naming an embedded file is
// replaced by P's text (recursively, each file once, preceded by a `// P` line) and `#pragma once`
// lines are dropped; other lines are kept as they are. Files in `pasted` (and what they include)
// are left out: the unit holds them already.
std::string expand_embedded(std::string_view path,
                            const std::vector<std::string_view>& pasted = {});

}  // namespace weft
