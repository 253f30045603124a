// Reader and writer of NumPy .npz archives (zip of .npy entries).
#include "exec/npz.h"

#include <fmt/format.h>
#include <zlib.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "core/source_file.h"

namespace weft {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the npz code assumes a little-endian host");

constexpr int64_t kMaxArrayElements = int64_t{1} << 40;

[[noreturn]] void bad(const std::string& what, const std::string& message) {
  throw UserError(SourceLoc{what}, message);
}

uint32_t u32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}
uint16_t u16(const std::string& s, size_t at) {
  uint16_t v;
  std::memcpy(&v, s.data() + at, 2);
  return v;
}
uint64_t u64(const std::string& s, size_t at) {
  uint64_t v;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}

void put16(std::string& s, uint16_t v) {
  s.append(reinterpret_cast<const char*>(&v), 2);
}
void put32(std::string& s, uint32_t v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}

// The value of `key` in the header dict: the text after "'key':" up to the next top-level ','.
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& what) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) bad(what, fmt::format("the .npy header has no '{}'", key));
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) bad(what, "the .npy header is malformed");
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  size_t end = i;
  int depth = 0;
  while (end < header.size() && !(depth == 0 && (header[end] == ',' || header[end] == '}'))) {
    if (header[end] == '(') ++depth;
    if (header[end] == ')') --depth;
    ++end;
  }
  return header.substr(i, end - i);
}

// A NumPy element type: its descr, size and the dtype whose bytes it has (none: u2, u4, read
// only). In NpyElement order first.
struct NpyKind {
  const char* descr;
  int bytes;
  std::optional<DType> dtype;
};
const NpyKind kNpyKinds[] = {
    {"<f2", 2, DType::f16},   {"<f4", 4, DType::f32},   {"<f8", 8, DType::f64},
    {"|i1", 1, DType::i8},    {"|u1", 1, DType::u8},    {"<i2", 2, DType::i16},
    {"<i4", 4, DType::i32},   {"<i8", 8, DType::i64},   {"|b1", 1, DType::boolean},
    {"<u2", 2, std::nullopt}, {"<u4", 4, std::nullopt},
};

const NpyKind& npy_kind(NpyElement e) {
  return kNpyKinds[static_cast<size_t>(e)];
}

// The kind of a header's quoted descr ('<f4'); null for one not supported.
const NpyKind* npy_kind_of(const std::string& quoted) {
  for (const NpyKind& k : kNpyKinds)
    if (quoted == fmt::format("'{}'", k.descr)) return &k;
  return nullptr;
}

}  // namespace

NpyArray parse_npy(const std::string& b, const std::string& what) {
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) bad(what, "not a .npy array (bad magic)");
  int major = static_cast<unsigned char>(b[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = u16(b, 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) bad(what, "truncated .npy header");
    header_len = u32(b, 8);
    start = 12;
  } else {
    bad(what, fmt::format(".npy version {} is not supported", major));
  }
  if (start + header_len > b.size()) bad(what, "truncated .npy header");
  std::string header = b.substr(start, header_len);
  std::string descr = header_field(header, "descr", what);
  std::string fortran = header_field(header, "fortran_order", what);
  std::string shape_text = header_field(header, "shape", what);
  if (fortran != "False") bad(what, "Fortran-ordered arrays are not supported (save C order)");
  const NpyKind* kind = npy_kind_of(descr);
  if (!kind)
    bad(what, fmt::format("dtype {} is not supported (f2, f4, f8, i1, u1, i2, i4, i8, u2, u4, b1)",
                          descr));
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    bad(what, "the .npy shape is malformed");
  Shape shape;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  size_t i = 0;
  __int128 count = 1;
  while (i < inner.size()) {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == ',')) ++i;
    if (i >= inner.size()) break;
    size_t j = i;
    while (j < inner.size() && inner[j] >= '0' && inner[j] <= '9') ++j;
    if (j == i || j - i > 15) bad(what, "the .npy shape is malformed");
    int64_t d = std::stoll(inner.substr(i, j - i));
    shape.push_back(d);
    count *= d;
    if (count > kMaxArrayElements || shape.size() > 64) bad(what, "the array is too large");
    i = j;
  }
  size_t data = start + header_len;
  auto n = static_cast<size_t>(count);
  if (b.size() - data != n * static_cast<size_t>(kind->bytes))
    bad(what, fmt::format("the array data has {} bytes, but shape {} needs {}", b.size() - data,
                          shape_str(shape), n * static_cast<size_t>(kind->bytes)));
  NpyArray out;
  out.integral = kind->dtype ? !is_float_dtype(*kind->dtype) : true;
  out.tensor = Tensor<double>(shape, 0.0);
  const auto* p = reinterpret_cast<const uint8_t*>(b.data() + data);
  if (kind->dtype) {
    decode_values(p, n, *kind->dtype, out.tensor.data.data());
  } else {  // u2, u4: no weft dtype, exact in a double
    for (size_t k = 0; k < n; ++k) {
      uint32_t x = 0;
      std::memcpy(&x, p + k * static_cast<size_t>(kind->bytes), static_cast<size_t>(kind->bytes));
      out.tensor.data[k] = x;
    }
  }
  return out;
}

NpyElement npy_element(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::bf16:
      return NpyElement::f4;
    case DType::f16:
      return NpyElement::f2;
    case DType::f64:
      return NpyElement::f8;
    case DType::i64:
      return NpyElement::i8;
    case DType::i32:
      return NpyElement::i4;
    case DType::i16:
      return NpyElement::i2;
    case DType::i8:
      return NpyElement::i1;
    case DType::u8:
      return NpyElement::u1;
    case DType::boolean:
      return NpyElement::b1;
  }
  WEFT_FAIL("unknown dtype");
}

std::string make_npy(const Tensor<double>& t, NpyElement element) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += fmt::format("{}, ", t.shape[i]);
  if (t.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (t.shape.size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  const NpyKind& kind = npy_kind(element);
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", kind.descr, shape);
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  put16(out, static_cast<uint16_t>(header.size()));
  out += header;
  // Integer and bool elements hold what the dtype stores (encode_values truncates and wraps
  // anything else, as a cast would).
  const std::vector<uint8_t> bytes = encode_values(t.data.data(), t.data.size(), *kind.dtype);
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return out;
}

NpzArrays read_npz(const std::string& path) {
  std::string z = read_binary_file(path);  // zlib takes a non-const input pointer
  // The end-of-central-directory record: the last "PK\5\6" within 64 KiB + 22 of the end.
  if (z.size() < 22) bad(path, "not an .npz file (too short for a zip archive)");
  size_t eocd = std::string::npos;
  for (size_t i = z.size() - 22 + 1; i-- > 0 && z.size() - i <= 65557;)
    if (u32(z, i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) bad(path, "not an .npz file (no zip directory)");
  size_t entries = u16(z, eocd + 10);
  size_t dir = u32(z, eocd + 16);
  NpzArrays out;
  size_t at = dir;
  for (size_t e = 0; e < entries; ++e) {
    if (at + 46 > z.size() || u32(z, at) != 0x02014b50) bad(path, "the zip directory is corrupt");
    uint16_t method = u16(z, at + 10);
    uint64_t csize = u32(z, at + 20), usize = u32(z, at + 24);
    size_t name_len = u16(z, at + 28), extra_len = u16(z, at + 30), comment_len = u16(z, at + 32);
    uint64_t local = u32(z, at + 42);
    if (at + 46 + name_len + extra_len > z.size()) bad(path, "the zip directory is corrupt");
    std::string name = z.substr(at + 46, name_len);
    // Zip64 sizes and offset live in extra field 0x0001, in this order, for the fields at max.
    size_t x = at + 46 + name_len, xend = x + extra_len;
    while (x + 4 <= xend) {
      uint16_t id = u16(z, x), len = u16(z, x + 2);
      if (x + 4 + len > xend) break;
      if (id == 1) {
        size_t f = x + 4;
        auto take = [&](uint64_t& v) {
          if (v == 0xFFFFFFFFu && f + 8 <= x + 4 + len) {
            v = u64(z, f);
            f += 8;
          }
        };
        take(usize);
        take(csize);
        take(local);
      }
      x += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    std::string what = path + ":" + name;
    if (local + 30 > z.size() || u32(z, local) != 0x04034b50) bad(what, "the zip entry is corrupt");
    size_t data = local + 30 + u16(z, local + 26) + u16(z, local + 28);
    if (data > z.size() || csize > z.size() - data) bad(what, "the zip entry is truncated");
    if (usize > (uint64_t{1} << 40)) bad(what, "the entry is too large");
    std::string bytes;
    if (method == 0) {
      bytes = z.substr(data, csize);
    } else if (method == 8) {
      bytes.resize(usize);
      z_stream s{};
      if (inflateInit2(&s, -MAX_WBITS) != Z_OK) bad(what, "cannot inflate the entry");
      s.next_in = reinterpret_cast<Bytef*>(z.data() + data);
      s.avail_in = static_cast<uInt>(csize);
      s.next_out = reinterpret_cast<Bytef*>(bytes.data());
      s.avail_out = static_cast<uInt>(usize);
      int rc = inflate(&s, Z_FINISH);
      inflateEnd(&s);
      if (rc != Z_STREAM_END || s.total_out != usize) bad(what, "the deflated entry is corrupt");
    } else {
      bad(what, fmt::format("zip compression method {} is not supported", method));
    }
    if (name.size() < 4 || name.substr(name.size() - 4) != ".npy")
      bad(what, "an .npz entry must be a .npy array");
    name.resize(name.size() - 4);
    out[name] = parse_npy(bytes, what);
  }
  return out;
}

void write_npz(const std::string& path, const std::map<std::string, Tensor<double>>& arrays,
               bool f64) {
  std::map<std::string, NpyElement> elements;
  for (const auto& entry : arrays) elements[entry.first] = f64 ? NpyElement::f8 : NpyElement::f4;
  write_npz(path, arrays, elements);
}

void write_npz(const std::string& path, const std::map<std::string, Tensor<double>>& arrays,
               const std::map<std::string, NpyElement>& elements) {
  std::string z, dir;
  size_t count = 0;
  for (const auto& [name, t] : arrays) {
    auto e = elements.find(name);
    std::string payload = make_npy(t, e == elements.end() ? NpyElement::f4 : e->second);
    std::string file = name + ".npy";
    if (payload.size() >= 0xFFFFFFFFu || z.size() >= 0xFFFFFFFFu)
      throw UserError(SourceLoc{path}, "the outputs are too large for a zip without zip64");
    uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(payload.data()),
                                               static_cast<uInt>(payload.size())));
    auto offset = static_cast<uint32_t>(z.size());
    auto header = [&](std::string& s, bool central) {
      put32(s, central ? 0x02014b50 : 0x04034b50);
      if (central) put16(s, 20);  // made by
      put16(s, 20);               // needed to extract
      put16(s, 0);                // flags
      put16(s, 0);                // stored
      put16(s, 0);                // time
      put16(s, 0x21);             // date: 1980-01-01
      put32(s, crc);
      put32(s, static_cast<uint32_t>(payload.size()));
      put32(s, static_cast<uint32_t>(payload.size()));
      put16(s, static_cast<uint16_t>(file.size()));
      put16(s, 0);  // extra
      if (central) {
        put16(s, 0);  // comment
        put16(s, 0);  // disk
        put16(s, 0);  // internal attributes
        put32(s, 0);  // external attributes
        put32(s, offset);
      }
      s += file;
    };
    header(z, false);
    z += payload;
    header(dir, true);
    ++count;
  }
  auto dir_offset = static_cast<uint32_t>(z.size());
  z += dir;
  put32(z, 0x06054b50);
  put16(z, 0);
  put16(z, 0);
  put16(z, static_cast<uint16_t>(count));
  put16(z, static_cast<uint16_t>(count));
  put32(z, static_cast<uint32_t>(dir.size()));
  put32(z, dir_offset);
  put16(z, 0);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(SourceLoc{path}, "cannot write the file");
  out.write(z.data(), static_cast<std::streamsize>(z.size()));
  if (!out) throw UserError(SourceLoc{path}, "cannot write the file");
}

}  // namespace weft
