// Host-side conversion of values to every dtype's storage: rounding, integer wrapping, bytes.
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

// `x` rounded to the nearest value representable in kernel dtype `dtype` (f32, f16, bf16).
float round_to_dtype(float x, DType dtype);
// `x` as a tensor of `dtype` stores it. Kernel dtypes: rounded to f32 (the precision operators
// compute in, as a GPU kernel's accumulator), then to `dtype`; NaN stays NaN, overflow gives
// infinity. f64: itself. Integers: toward zero (an integer quotient truncates, as ONNX's Div),
// then modulo 2^bits as two's complement (NaN gives 0, values beyond int64 saturate first). bool:
// 1 for any nonzero value (NaN too), else 0.
double stored_value(double x, DType dtype);
// `x` toward zero, then modulo 2^bits, signed or not: the integer dtypes' rounding, and ONNX
// Cast's to integer types weft has no dtype for (u16, u32, u64).
double wrap_integer(double x, int bits, bool is_signed);

// Integers beyond this magnitude are not all exact in a double, the VM's storage: an i64 value
// past it is refused where it is stored, never rounded silently.
constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53

// `n` floats as the bytes of a device tensor of `dtype` (row-major), and back (other than the
// kernel dtypes through encode_values: integers held by floats are exact to 2^24).
std::vector<uint8_t> encode_as(const float* x, size_t n, DType dtype);
void decode_from(const uint8_t* bytes, size_t n, DType dtype, float* out);
// `n` values as the bytes of a tensor of any dtype (integers and bool stored first, stored_value),
// and back: exact for every dtype's values.
std::vector<uint8_t> encode_values(const double* x, size_t n, DType dtype);
void decode_values(const uint8_t* bytes, size_t n, DType dtype, double* out);

}  // namespace weft
