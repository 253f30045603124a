// Drawing the per-test parameters of the finite-field domain.
#include "verify/field_domain.h"

namespace weft {

std::shared_ptr<const FieldTestParams> FieldTestParams::draw(uint64_t seed, int threads) {
  auto t = std::make_shared<FieldTestParams>();
  t->seed = seed;
  t->threads = threads;
  const ff::Field& F = ff::field_p();
  // p = 2q + 1: r^2 has order q unless r ≡ ±1 or 0.
  for (uint64_t ctr = 0;; ++ctr) {
    uint64_t r = F.from_bits(ff::mix64(seed, 0x6f6d656761ULL, ctr));
    if (r <= 1 || r == ff::kP - 1) continue;
    t->omega = F.mul(r, r);
    break;
  }
  uint64_t base = t->omega;
  for (int i = 0; i < 7; ++i) {
    uint64_t acc = 1;
    for (int b = 0; b < 256; ++b) {
      t->omega_pow[i][b] = acc;
      acc = F.mul(acc, base);
    }
    base = acc;  // ω^(256^(i+1))
  }
  return t;
}

uint64_t uninterpreted_tag(OpKind kind) {
  return ff::mix64(0x756e696e74ULL, static_cast<uint64_t>(kind));
}

}  // namespace weft
