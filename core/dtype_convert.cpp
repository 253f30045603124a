// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, bit by bit.
#include "core/dtype_convert.h"

#include <bit>
#include <cstring>

#include "core/error.h"

namespace weft {

uint16_t float_to_f16_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // infinity or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds above 65504
  if (abs < 0x38800000u) {
    // Subnormal (or zero) in f16: the value is a multiple of 2^-24; shift the full significand
    // and round the dropped bits to nearest even.
    if (abs < 0x33000000u) return sign;  // below half of the smallest subnormal
    int exponent = static_cast<int>(abs >> 23);
    uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    int shift = 126 - exponent;  // |x| / 2^-24 = mantissa * 2^(exponent - 126)
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t rebased = abs - 0x38000000u;  // exponent bias 127 -> 15
  uint32_t result = rebased >> 13;
  uint32_t rest = rebased & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;  // may carry into exponent
  return static_cast<uint16_t>(sign | result);
}

float f16_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal: mantissa * 2^-24, exact in f32.
    float v = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_bf16_bits(float x) {
  uint32_t f = std::bit_cast<uint32_t>(x);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);  // NaN
  uint32_t rounding = 0x7FFFu + ((f >> 16) & 1u);
  return static_cast<uint16_t>((f + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

float round_to_dtype(float x, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return x;
    case DType::f16:
      return f16_bits_to_float(float_to_f16_bits(x));
    case DType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(x));
  }
  WEFT_CHECK(false, "unknown dtype");
}

double stored_value(double x, DType dtype) {
  return round_to_dtype(static_cast<float>(x), dtype);
}

std::vector<uint8_t> encode_as(const float* x, size_t n, DType dtype) {
  std::vector<uint8_t> bytes(n * static_cast<size_t>(dtype_bytes(dtype)));
  if (dtype == DType::f32) {
    if (n) std::memcpy(bytes.data(), x, n * sizeof(float));
    return bytes;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = dtype == DType::f16 ? float_to_f16_bits(x[i]) : float_to_bf16_bits(x[i]);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

void decode_from(const uint8_t* bytes, size_t n, DType dtype, float* out) {
  if (dtype == DType::f32) {
    if (n) std::memcpy(out, bytes, n * sizeof(float));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    out[i] = dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
  }
}

}  // namespace weft
