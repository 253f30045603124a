// The shared-memory swizzle of generated CUDA (weft_swz of codegen/cuda/device/prelude.cuh, the
// real header compiled for the host): a bijection that moves 16-byte chunks whole, whose ldmatrix
// phases as the emitter issues them (8 rows x 16 bytes) hit each bank once wherever layout
// selection swizzles a matmul operand, for rows of 16 to 512 bytes and elements of 2 and 4 bytes.
#define WEFT_HOST_EMULATION
#include "codegen/cuda/device/prelude.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/target.h"
#include "lower/select_layouts.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

constexpr int kRows = 64;  // rows of each buffer: several of every 8-row phase pattern

// A buffer layout: the byte offset of each element index (a swizzled or a plain buffer).
using Layout = std::function<int(int)>;

// The conflict degree of one ldmatrix phase reading the 16 bytes at byte `col` of rows `rows`:
// the most distinct 4-byte words any of the 32 banks serves (the same address is a broadcast).
int conflict_degree(const Layout& at, int e, int row_bytes, const std::vector<int>& rows, int col) {
  std::map<int, std::set<int>> words_of_bank;
  for (int r : rows) {
    const int first = at((r * row_bytes + col) / e);
    for (int w = first / 4; w < first / 4 + 4; ++w) words_of_bank[w % 32].insert(w);
  }
  size_t worst = 0;
  for (const auto& [bank, words] : words_of_bank) worst = std::max(worst, words.size());
  return static_cast<int>(worst);
}

// The worst degree over every phase the emitter's ldmatrix can issue on a buffer of kRows rows:
// 8 consecutive rows from a multiple of 8 (A: 16-row tiles of m, B with .trans: 16 rows of k)
// at every 16-byte column; `any_start`: from every row instead.
int worst_degree(const Layout& at, int e, int row_bytes, bool any_start = false) {
  int worst = 0;
  for (int r0 = 0; r0 + 8 <= kRows; r0 += any_start ? 1 : 8)
    for (int col = 0; col < row_bytes; col += 16) {
      std::vector<int> rows;
      for (int r = r0; r < r0 + 8; ++r) rows.push_back(r);
      worst = std::max(worst, conflict_degree(at, e, row_bytes, rows, col));
    }
  return worst;
}

// Rows clamped as the emitter clamps A's rows past m (row m-1 read again): a partial last tile.
int clamped_degree(const Layout& at, int e, int row_bytes, int m) {
  std::vector<int> rows;
  for (int r = 0; r < 8; ++r) rows.push_back(std::min(r, m - 1));
  int worst = 0;
  for (int col = 0; col < row_bytes; col += 16)
    worst = std::max(worst, conflict_degree(at, e, row_bytes, rows, col));
  return worst;
}

// A row-major matmul operand of `rows` rows of `row_bytes` as the plan holds it.
PlanBuffer operand(const std::string& name, int e, int rows, int row_bytes) {
  PlanBuffer b;
  b.name = name;
  b.dtype = e == 2 ? DType::f16 : DType::f32;
  b.shape = {rows, row_bytes / e};
  b.contiguous_dim = 1;
  return b;
}

// Which operands H100 layout selection swizzles in C = A B with rows of `row_bytes` everywhere
// (A: kRows x k, B: k x k, C: kRows x k, k = row_bytes / e).
std::pair<bool, bool> selected_swizzles(int e, int row_bytes) {
  const int k = row_bytes / e;
  KernelPlan kernel;
  kernel.name = "matmul";
  kernel.buffers = {operand("a", e, kRows, row_bytes), operand("b", e, k, row_bytes),
                    operand("c", e, kRows, row_bytes)};
  Step s;
  s.kind = StepKind::compute;
  s.op = OpKind::matmul;
  s.inputs = {"a", "b"};
  s.outputs = {"c"};
  kernel.loop_steps.push_back(s);
  ProgramPlan p;
  p.kernels.push_back(kernel);
  const ProgramPlan chosen = select_layouts(p, target_by_name("h100"));
  return {chosen.kernels[0].find_buffer("a")->swizzle != 0,
          chosen.kernels[0].find_buffer("b")->swizzle != 0};
}

// Every check for element size E and rows of ROW bytes.
template <int E, int ROW>
void check_rows() {
  SCOPED_TRACE(testing::Message() << "rows of " << ROW << " bytes, " << E << "-byte elements");
  const int elements = kRows * ROW / E;
  Layout swizzled = [](int i) { return weft_swz<E, ROW>(i) * E; };
  Layout plain = [](int i) { return i * E; };
  // A bijection on the buffer (only whole 128-byte segments need it: pipeline slots and offsets
  // are 128-byte aligned), moving 16-byte chunks whole (cp.async and ldmatrix rows).
  std::set<int> images;
  for (int i = 0; i < elements; ++i) {
    const int b = swizzled(i);
    EXPECT_EQ(b / 128, i * E / 128) << "element " << i << " left its segment";
    images.insert(b);
    if (i * E % 16 != 0) {
      EXPECT_EQ(b, swizzled(i - 1) + E) << "element " << i;
    }
  }
  EXPECT_EQ(static_cast<int>(images.size()), elements);
  const bool removes = swizzle_removes_bank_conflicts(operand("b", E, kRows, ROW));
  EXPECT_EQ(removes, ROW % 128 == 0 || ROW == 32 || ROW == 64);
  if (removes) {
    EXPECT_GT(worst_degree(plain, E, ROW), 1);
    EXPECT_EQ(worst_degree(swizzled, E, ROW), 1);
    for (int m = 1; m < 8; ++m) EXPECT_EQ(clamped_degree(swizzled, E, ROW, m), 1) << "m = " << m;
  }
  // Rows of a multiple of 128 bytes: any 8 consecutive rows (a batch may start anywhere).
  if (ROW % 128 == 0) {
    EXPECT_EQ(worst_degree(swizzled, E, ROW, true), 1);
  }
  if (ROW == 16) {
    EXPECT_EQ(worst_degree(plain, E, ROW), 1);
  }
  // The selector swizzles exactly the operands whose conflicts the swizzle removes.
  auto [a_swizzled, b_swizzled] = selected_swizzles(E, ROW);
  EXPECT_EQ(a_swizzled, removes);
  EXPECT_EQ(b_swizzled, removes);
}

template <int E, int... ROW>
void check_widths(std::integer_sequence<int, ROW...>) {
  (check_rows<E, 16 * (ROW + 1)>(), ...);
}

TEST(Swizzle, IsABijectionAndLdmatrixPhasesAreConflictFreeWhereLayoutSelectionSwizzles) {
  // Rows of 16, 32, ..., 512 bytes (every width an ldmatrix row address allows).
  check_widths<2>(std::make_integer_sequence<int, 32>{});
  check_widths<4>(std::make_integer_sequence<int, 32>{});
}

// The XOR key of the first swizzle, the 128-byte segment index, leaves rows wider than 128 bytes
// conflicted (2-way at 256 bytes, 4-way at 512, 8-way at 1024): what keying the row fixed.
TEST(Swizzle, KeyingTheSegmentInsteadOfTheRowLeftWideRowsConflicted) {
  Layout segment_keyed = [](int i) {
    const int b = i * 2;
    return b ^ (((b >> 7) & 7) << 4);
  };
  EXPECT_EQ(worst_degree(segment_keyed, 2, 128), 1);
  EXPECT_EQ(worst_degree(segment_keyed, 2, 256), 2);
  EXPECT_EQ(worst_degree(segment_keyed, 2, 512), 4);
  EXPECT_EQ(worst_degree(segment_keyed, 2, 1024), 8);
  Layout row_keyed = [](int i) { return weft_swz<2, 1024>(i) * 2; };
  EXPECT_EQ(worst_degree(row_keyed, 2, 1024), 1);
}

}  // namespace
}  // namespace weft
