// NumPy .npy/.npz files for the model executor's inputs and outputs: a careful reader (stored
// or deflated zip entries, little-endian f2/f4/f8/i1/u1/i2/i4/i8/u2/u4/b1 arrays in C order) and a
// writer of stored entries in each dtype's NumPy type. Every malformed file is a UserError naming
// the file and entry.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace weft {

// An array read from an .npy entry: its values as doubles, its shape (empty for a 0-d scalar),
// and whether its dtype was an integer (or bool) type.
struct NpyArray {
  Tensor<double> tensor;
  bool integral = false;
};

// Entry name (without ".npy") -> array, in name order.
using NpzArrays = std::map<std::string, NpyArray>;

// The element type an array is written as: '<f2', '<f4', '<f8', '|i1', '|u1', '<i2', '<i4',
// '<i8', '|b1'.
enum class NpyElement : uint8_t { f2, f4, f8, i1, u1, i2, i4, i8, b1 };
// The NumPy type of a model dtype: its own, and bf16 -> <f4, as NumPy has no bfloat16 (a bf16
// tensor's values are exact in f32, so nothing is lost).
NpyElement npy_element(DType dtype);

NpzArrays read_npz(const std::string& path);
// Writes the tensors as f32 (or f64 with `f64`); the archive is a plain stored zip.
void write_npz(const std::string& path, const std::map<std::string, Tensor<double>>& arrays,
               bool f64 = false);
// The same with each array's element type from `elements` (<f4 for a name not there).
void write_npz(const std::string& path, const std::map<std::string, Tensor<double>>& arrays,
               const std::map<std::string, NpyElement>& elements);

// One .npy payload (for tests and the npz reader): parse and produce (each value rounded to the
// element type, to nearest even).
NpyArray parse_npy(const std::string& bytes, const std::string& what);
std::string make_npy(const Tensor<double>& t, NpyElement element);

}  // namespace weft
