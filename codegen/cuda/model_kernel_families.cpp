// The device kernel families' table: struct sizes, pointer fields and work, from the argument
// structs themselves (offsetof), so it cannot drift from model_kernel_args.cuh.
#include "codegen/cuda/model_kernel_families.h"

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "core/error.h"

namespace weft {

namespace {

template <class Args, int64_t (*Work)(const Args&)>
int64_t work_of(const void* args) {
  return Work(*static_cast<const Args*>(args));
}

#define WEFT_DK_FIELD(type, field, written) \
  DkPointerField {                          \
    offsetof(type, field), written, #field  \
  }

std::vector<DkFamilyInfo> make_families() {
  std::vector<DkFamilyInfo> v;
  v.push_back(
      {DkFamily::map,
       "weft_dk_map",
       sizeof(weft_dk_map_args),
       {WEFT_DK_FIELD(weft_dk_map_args, in, false), WEFT_DK_FIELD(weft_dk_map_args, out, true)},
       work_of<weft_dk_map_args, weft_dk_map_work>});
  v.push_back({DkFamily::elementwise,
               "weft_dk_elementwise",
               sizeof(weft_dk_elementwise_args),
               {WEFT_DK_FIELD(weft_dk_elementwise_args, in[0], false),
                WEFT_DK_FIELD(weft_dk_elementwise_args, in[1], false),
                WEFT_DK_FIELD(weft_dk_elementwise_args, in[2], false),
                WEFT_DK_FIELD(weft_dk_elementwise_args, out, true)},
               work_of<weft_dk_elementwise_args, weft_dk_elementwise_work>});
  v.push_back(
      {DkFamily::rows,
       "weft_dk_rows",
       sizeof(weft_dk_rows_args),
       {WEFT_DK_FIELD(weft_dk_rows_args, in, false), WEFT_DK_FIELD(weft_dk_rows_args, out, true)},
       work_of<weft_dk_rows_args, weft_dk_rows_work>});
  v.push_back({DkFamily::gather,
               "weft_dk_gather",
               sizeof(weft_dk_gather_args),
               {WEFT_DK_FIELD(weft_dk_gather_args, x, false),
                WEFT_DK_FIELD(weft_dk_gather_args, ids, false),
                WEFT_DK_FIELD(weft_dk_gather_args, out, true),
                WEFT_DK_FIELD(weft_dk_gather_args, error, true)},
               work_of<weft_dk_gather_args, weft_dk_gather_work>});
  v.push_back(
      {DkFamily::index,
       "weft_dk_index",
       sizeof(weft_dk_index_args),
       {WEFT_DK_FIELD(weft_dk_index_args, x, false), WEFT_DK_FIELD(weft_dk_index_args, ids, false),
        WEFT_DK_FIELD(weft_dk_index_args, out, true),
        WEFT_DK_FIELD(weft_dk_index_args, error, true)},
       work_of<weft_dk_index_args, weft_dk_index_work>});
  v.push_back(
      {DkFamily::matmul,
       "weft_dk_matmul",
       sizeof(weft_dk_matmul_args),
       {WEFT_DK_FIELD(weft_dk_matmul_args, a, false), WEFT_DK_FIELD(weft_dk_matmul_args, b, false),
        WEFT_DK_FIELD(weft_dk_matmul_args, out, true)},
       work_of<weft_dk_matmul_args, weft_dk_matmul_work>});
  v.push_back({DkFamily::position,
               "weft_dk_position",
               sizeof(weft_dk_position_args),
               {WEFT_DK_FIELD(weft_dk_position_args, in, false),
                WEFT_DK_FIELD(weft_dk_position_args, out, true)},
               work_of<weft_dk_position_args, weft_dk_position_work>});
  v.push_back({DkFamily::generate,
               "weft_dk_generate",
               sizeof(weft_dk_generate_args),
               {WEFT_DK_FIELD(weft_dk_generate_args, out, true)},
               work_of<weft_dk_generate_args, weft_dk_generate_work>});
  v.push_back(
      {DkFamily::window,
       "weft_dk_window",
       sizeof(weft_dk_window_args),
       {WEFT_DK_FIELD(weft_dk_window_args, x, false), WEFT_DK_FIELD(weft_dk_window_args, w, false),
        WEFT_DK_FIELD(weft_dk_window_args, out, true)},
       work_of<weft_dk_window_args, weft_dk_window_work>});
  for (size_t i = 0; i < v.size(); ++i)
    WEFT_CHECK(static_cast<size_t>(v[i].family) == i && v[i].args_bytes % 8 == 0,
               "device kernel family {} out of order or of {} bytes", v[i].name, v[i].args_bytes);
  return v;
}

}  // namespace

const std::vector<DkFamilyInfo>& dk_families() {
  static const std::vector<DkFamilyInfo> families = make_families();
  return families;
}

const DkFamilyInfo& dk_family(DkFamily f) {
  return dk_families().at(static_cast<size_t>(f));
}

int dk_dtype_code(DType d) {
  switch (d) {
    case DType::f32:
      return 0;
    case DType::f16:
      return 1;
    case DType::bf16:
      return 2;
    case DType::f64:
      return 3;
    case DType::i64:
      return 4;
    case DType::i32:
      return 5;
    case DType::i16:
      return 6;
    case DType::i8:
      return 7;
    case DType::u8:
      return 8;
    case DType::boolean:
      return 9;
  }
  WEFT_FAIL("dtype {} has no device kernel code", static_cast<int>(d));
}

std::optional<DkFamily> dk_family_by_name(std::string_view name) {
  if (name.ends_with("_launch")) name.remove_suffix(7);
  for (const DkFamilyInfo& f : dk_families())
    if (name == f.name) return f.family;
  return std::nullopt;
}

}  // namespace weft
