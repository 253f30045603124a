// IEEE binary16 and bfloat16 conversions with round-to-nearest-even, bit by bit; integer and bool
// storage; every dtype's bytes.
#include "core/dtype_convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
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
    case DType::f64:
    case DType::i64:
    case DType::i32:
    case DType::i16:
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      break;
  }
  WEFT_FAIL("round_to_dtype of a value to {}, which is not a kernel dtype", dtype_name(dtype));
}

double wrap_integer(double x, int bits, bool is_signed) {
  if (std::isnan(x)) return 0;
  double tr = std::clamp(std::trunc(x), -9223372036854775808.0, 9223372036854774784.0);
  auto u = static_cast<uint64_t>(static_cast<int64_t>(tr));
  if (bits < 64) u &= (uint64_t{1} << bits) - 1;
  if (!is_signed) return static_cast<double>(u);
  if (bits < 64 && (u >> (bits - 1)) != 0) u |= ~uint64_t{0} << bits;
  return static_cast<double>(static_cast<int64_t>(u));
}

double stored_value(double x, DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return round_to_dtype(static_cast<float>(x), dtype);
    case DType::f64:
      return x;
    case DType::i64:
      // Already integral within int64: as it is (the common case, no rounding work).
      if (x == std::trunc(x) && std::fabs(x) < 9223372036854775808.0) return x;
      return wrap_integer(x, 64, true);
    case DType::i32:
      return wrap_integer(x, 32, true);
    case DType::i16:
      return wrap_integer(x, 16, true);
    case DType::i8:
      return wrap_integer(x, 8, true);
    case DType::u8:
      return wrap_integer(x, 8, false);
    case DType::boolean:
      return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

std::vector<uint8_t> encode_as(const float* x, size_t n, DType dtype) {
  if (!is_kernel_dtype(dtype)) {
    std::vector<double> wide(n);
    for (size_t i = 0; i < n; ++i) wide[i] = stored_value(x[i], dtype);
    return encode_values(wide.data(), n, dtype);
  }
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
  if (!is_kernel_dtype(dtype)) {
    std::vector<double> wide(n);
    decode_values(bytes, n, dtype, wide.data());
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(wide[i]);
    return;
  }
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

namespace {

// Integers and bool are stored first (truncated, wrapped), so every value converts defined.
template <typename T>
void put_all(const double* x, size_t n, uint8_t* out, DType dtype) {
  const bool store = !is_float_dtype(dtype);
  for (size_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(store ? stored_value(x[i], dtype) : x[i]);
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  }
}

template <typename T>
void get_all(const uint8_t* bytes, size_t n, double* out) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

}  // namespace

std::vector<uint8_t> encode_values(const double* x, size_t n, DType dtype) {
  if (is_kernel_dtype(dtype)) {
    const std::vector<float> f(x, x + n);
    return encode_as(f.data(), n, dtype);
  }
  std::vector<uint8_t> bytes(n * static_cast<size_t>(dtype_bytes(dtype)));
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      break;  // above
    case DType::f64:
      put_all<double>(x, n, bytes.data(), dtype);
      break;
    case DType::i64:
      put_all<int64_t>(x, n, bytes.data(), dtype);
      break;
    case DType::i32:
      put_all<int32_t>(x, n, bytes.data(), dtype);
      break;
    case DType::i16:
      put_all<int16_t>(x, n, bytes.data(), dtype);
      break;
    case DType::i8:
      put_all<int8_t>(x, n, bytes.data(), dtype);
      break;
    case DType::u8:
    case DType::boolean:
      put_all<uint8_t>(x, n, bytes.data(), dtype);
      break;
  }
  return bytes;
}

void decode_values(const uint8_t* bytes, size_t n, DType dtype, double* out) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: {
      std::vector<float> f(n);
      decode_from(bytes, n, dtype, f.data());
      std::copy(f.begin(), f.end(), out);
      return;
    }
    case DType::f64:
      get_all<double>(bytes, n, out);
      return;
    case DType::i64:
      get_all<int64_t>(bytes, n, out);
      return;
    case DType::i32:
      get_all<int32_t>(bytes, n, out);
      return;
    case DType::i16:
      get_all<int16_t>(bytes, n, out);
      return;
    case DType::i8:
      get_all<int8_t>(bytes, n, out);
      return;
    case DType::u8:
      get_all<uint8_t>(bytes, n, out);
      return;
    case DType::boolean:
      for (size_t i = 0; i < n; ++i) out[i] = bytes[i] != 0 ? 1.0 : 0.0;
      return;
  }
}

}  // namespace weft
