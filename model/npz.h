// NumPy .npy/.npz files for the model executor's inputs and outputs: a careful reader (stored
// or deflated zip entries, little-endian f2/f4/f8/i4/i8/b1 arrays in C order) and a writer of
// stored f32 (or f64) entries. Every malformed file is a UserError naming the file and entry.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "interp/tensor.h"

namespace weft {

// An array read from an .npy entry: its values as doubles, its shape (empty for a 0-d scalar),
// and whether its dtype was an integer (or bool) type.
struct NpyArray {
  Tensor<double> tensor;
  bool integral = false;
};

// Entry name (without ".npy") -> array, in name order.
using NpzArrays = std::map<std::string, NpyArray>;

NpzArrays read_npz(const std::string& path);
// Writes the tensors as f32 (or f64 with `f64`); the archive is a plain stored zip.
void write_npz(const std::string& path, const std::map<std::string, Tensor<double>>& arrays,
               bool f64 = false);

// One .npy payload (for tests and the npz reader): parse and produce.
NpyArray parse_npy(const std::string& bytes, const std::string& what);
std::string make_npy(const Tensor<double>& t, bool f64);

}  // namespace weft
