// ONNX external data: tensors whose bytes live in a file beside the model (`MODEL.onnx.data`, as
// PyTorch writes models over 2 GB and, by default, many smaller ones), read into the tensors before
// conversion, with the file's path held inside the model's directory.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/system_memory.h"
#include "onnx/importer.h"

namespace weft::onnx_import {
namespace {

namespace fs = std::filesystem;

// A non-negative decimal of an external_data entry, or none.
std::optional<int64_t> parse_count(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool leaves(const fs::path& relative) {
  return !relative.empty() && *relative.begin() == "..";
}

class ExternalData {
 public:
  ExternalData(const std::string& model_path, int64_t memory_limit)
      : model_path_(model_path), memory_limit_(memory_limit) {
    fs::path parent = fs::path(model_path).parent_path();
    dir_ = parent.empty() ? fs::path(".") : parent;
  }

  void load(TensorProto& t, const std::string& what) {
    if (t.data_location() != TensorProto::EXTERNAL) return;
    std::string location, offset_text = "0", length_text;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset_text = kv.value();
      if (kv.key() == "length") length_text = kv.value();
    }
    auto offset = parse_count(offset_text);
    auto length = length_text.empty() ? std::optional<int64_t>(-1) : parse_count(length_text);
    if (location.empty()) fail(what, "keeps its data in an external file but names none");
    if (!offset || !length)
      fail(what, fmt::format("has an external data offset '{}' or length '{}' that is not a "
                             "byte count",
                             offset_text, length_text));
    fs::path file = resolve(location, what);
    std::error_code ec;
    const auto size = static_cast<int64_t>(fs::file_size(file, ec));
    if (ec) fail(what, fmt::format("cannot read its external data file '{}'", file.string()));
    if (*length < 0) length = size - std::min(*offset, size);
    if (*offset > size || *length > size - *offset)
      fail(what, fmt::format("asks for bytes {} to {} of its external data file '{}', which has {} "
                             "(truncated, or written for another model?)",
                             *offset, *offset + *length, file.string(), size));
    loaded_ += *length;
    require_weights_fit(loaded_, memory_limit_, model_path_,
                        "the model's external data takes (so far)");
    std::ifstream in(file, std::ios::binary);
    std::string bytes(static_cast<size_t>(*length), '\0');
    in.seekg(*offset);
    if (!in || !in.read(bytes.data(), *length))
      fail(what, fmt::format("cannot read its external data file '{}'", file.string()));
    t.set_raw_data(std::move(bytes));
    t.clear_external_data();
    t.set_data_location(TensorProto::DEFAULT);
  }

  void load_graph(onnx::GraphProto& g) {
    for (TensorProto& t : *g.mutable_initializer())
      load(t, fmt::format("initializer '{}'", t.name()));
    for (onnx::NodeProto& n : *g.mutable_node())
      for (onnx::AttributeProto& a : *n.mutable_attribute()) {
        std::string what =
            fmt::format("attribute '{}' of node '{}' ({})", a.name(), n.name(), n.op_type());
        if (a.has_t()) load(*a.mutable_t(), what);
        for (TensorProto& t : *a.mutable_tensors()) load(t, what);
        if (a.has_g()) load_graph(*a.mutable_g());
        for (onnx::GraphProto& sub : *a.mutable_graphs()) load_graph(sub);
      }
  }

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& message) const {
    throw UserError(SourceLoc{model_path_}, fmt::format("{} {}", what, message));
  }

  // The data file of `location`: a relative path that stays inside the model's directory, also
  // after symbolic links are followed. A model is input a user may not have written; its paths
  // must not read files elsewhere (`../../etc/passwd`, `/etc/shadow`).
  fs::path resolve(const std::string& location, const std::string& what) const {
    const fs::path rel(location);
    const std::string hint = "external data must be a file in the model's own directory";
    if (rel.has_root_path())
      fail(what, fmt::format("names its external data file by the absolute path '{}' ({})",
                             location, hint));
    const fs::path normal = rel.lexically_normal();
    if (leaves(normal) || normal == ".")
      fail(what, fmt::format("names the external data file '{}', outside the model's directory "
                             "({})",
                             location, hint));
    const fs::path file = dir_ / normal;
    std::error_code ec;
    const auto status = fs::status(file, ec);
    if (status.type() == fs::file_type::not_found)
      fail(what, fmt::format("keeps its data in '{}', which does not exist (it must be beside the "
                             "model: {})",
                             location, file.string()));
    if (status.type() != fs::file_type::regular)
      fail(what, fmt::format("keeps its data in '{}', which is not a regular file", location));
    std::error_code ec_dir;
    const fs::path real = fs::canonical(file, ec), real_dir = fs::canonical(dir_, ec_dir);
    if (ec || ec_dir || leaves(real.lexically_relative(real_dir)))
      fail(what, fmt::format("names the external data file '{}', a link to '{}' outside the "
                             "model's directory ({})",
                             location, real.string(), hint));
    return file;
  }

  std::string model_path_;
  fs::path dir_;
  int64_t memory_limit_ = 0;
  int64_t loaded_ = 0;  // bytes read so far
};

}  // namespace

void require_weights_fit(int64_t bytes, int64_t memory_limit, const std::string& path,
                         const char* what) {
  int64_t memory = memory_limit > 0 ? memory_limit : physical_memory_bytes();
  if (memory <= 0 || bytes <= memory / 3) return;
  throw UserError(SourceLoc{path},
                  fmt::format("{} {}; weft holds weights as f64 values, about {} in all, more "
                              "than the {} of memory this process may use: a model larger than "
                              "memory cannot be imported",
                              what, memory_str(bytes), memory_str(3 * bytes), memory_str(memory)));
}

void load_external_data(onnx::ModelProto& model, const std::string& model_path,
                        int64_t memory_limit) {
  ExternalData data(model_path, memory_limit);
  if (model.has_graph()) data.load_graph(*model.mutable_graph());
}

}  // namespace weft::onnx_import
