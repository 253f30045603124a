// Host-side conversion between f32 and the storage formats of device tensors (f16, bf16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace weft {

// Round to nearest even, as the device converts; overflow gives infinity, NaN stays NaN.
uint16_t float_to_f16_bits(float x);
uint16_t float_to_bf16_bits(float x);
float f16_bits_to_float(uint16_t h);
float bf16_bits_to_float(uint16_t b);

// `x` rounded to the nearest value representable in `dtype`.
float round_to_dtype(float x, DType dtype);
// `x` as a tensor of `dtype` stores it: rounded to f32 (the precision operators compute in, as a
// GPU kernel's accumulator), then to `dtype`. NaN stays NaN; overflow gives infinity.
double stored_value(double x, DType dtype);

// `n` floats as the bytes of a device tensor of `dtype` (row-major), and back.
std::vector<uint8_t> encode_as(const float* x, size_t n, DType dtype);
void decode_from(const uint8_t* bytes, size_t n, DType dtype, float* out);

}  // namespace weft
