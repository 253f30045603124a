// Printer and parser of the kernel plan text form (line based, whitespace separated tokens).
#include "lower/plan_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace weft {

namespace {

std::string join(const std::vector<std::string>& names) {
  if (names.empty()) return "-";
  std::string s;
  for (const std::string& n : names) {
    if (!s.empty()) s += ',';
    s += n;
  }
  return s;
}

std::string list_str(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

std::string attr_str(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* r = std::get_if<Rational>(&v)) return r->str();
  return list_str(std::get<std::vector<int64_t>>(v));
}

bool has_op_token(StepKind k) {
  return k == StepKind::compute || k == StepKind::accum || k == StepKind::call;
}

void print_step(std::string& out, const Step& s, int indent) {
  std::string pad(indent, ' ');
  if (s.kind == StepKind::barrier) {
    out += fmt::format("{}barrier @{}\n", pad, s.depth);
    return;
  }
  out += fmt::format("{}{}", pad, step_kind_name(s.kind));
  if (has_op_token(s.kind)) out += fmt::format(" {}", op_info(s.op).name);
  out += fmt::format(" {} = {} @{}", join(s.outputs), join(s.inputs), s.depth);
  for (const auto& [k, v] : s.attrs.entries()) out += fmt::format(" {}={}", k, attr_str(v));
  if (s.register_tile != std::array<int64_t, 2>{0, 0})
    out += fmt::format(" tile={}", list_str({s.register_tile.begin(), s.register_tile.end()}));
  if (s.in_registers) out += " registers";
  if (s.hoisted) out += " hoisted";
  if (s.kind == StepKind::thread) {
    out += " {\n";
    for (const Step& b : s.body) print_step(out, b, indent + 2);
    out += pad + "}";
  }
  out += "\n";
}

std::string buffer_str(const PlanBuffer& b) {
  std::string role =
      b.space == MemSpace::device ? fmt::format(" {}", tensor_role_name(b.role)) : std::string();
  return fmt::format("{} {}{} {}{} layout={} swizzle={} offset={}", b.name, mem_space_name(b.space),
                     role, dtype_name(b.dtype), list_str(b.shape), b.contiguous_dim, b.swizzle,
                     b.offset);
}

}  // namespace

std::string print_plan(const ProgramPlan& p) {
  std::string out = fmt::format("plan {} target={} workspace={}\n", p.name.empty() ? "-" : p.name,
                                p.target, p.workspace_bytes);
  out += fmt::format("inputs {}\noutputs {}\n", join(p.inputs), join(p.outputs));
  for (const ProgramInterface& i : p.interfaces) {
    out += fmt::format("interface {}", i.name);
    for (const auto& [role, values] : i.roles) out += fmt::format(" {}={}", role, join(values));
    out += "\n";
  }
  for (const PlanBuffer& t : p.tensors) out += fmt::format("tensor {}\n", buffer_str(t));
  for (const KernelPlan& k : p.kernels) {
    if (k.library) {
      out += fmt::format("kernel {} library\n", k.name);
    } else {
      out += fmt::format("kernel {} grid={} threads={} loop={} stages={} smem={} group={}\n",
                         k.name, list_str({k.grid.begin(), k.grid.end()}), k.threads, k.loop,
                         k.stages, k.smem_bytes, k.block_group);
      for (const PlanBuffer& b : k.buffers) out += fmt::format("  buffer {}\n", buffer_str(b));
      out += "loop:\n";
    }
    for (const Step& s : k.loop_steps) print_step(out, s, 2);
    if (!k.library) {
      out += "post:\n";
      for (const Step& s : k.post_steps) print_step(out, s, 2);
    }
    out += "end\n";
  }
  return out;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string file) : file_(std::move(file)) {
    std::string line;
    std::istringstream in{std::string(text)};
    while (std::getline(in, line)) lines_.push_back(line);
  }

  ProgramPlan parse() {
    ProgramPlan p;
    auto t = next_tokens();
    expect(t.size() == 4 && t[0] == "plan", "expected 'plan NAME target=T workspace=N'");
    p.name = t[1] == "-" ? "" : t[1];
    p.target = value_of(t[2], "target");
    p.workspace_bytes = to_int(value_of(t[3], "workspace"));
    t = next_tokens();
    expect(t.size() == 2 && t[0] == "inputs", "expected 'inputs NAMES'");
    p.inputs = names(t[1]);
    t = next_tokens();
    expect(t.size() == 2 && t[0] == "outputs", "expected 'outputs NAMES'");
    p.outputs = names(t[1]);
    while (!(t = next_tokens()).empty()) {
      if (t[0] == "interface") {
        p.interfaces.push_back(interface(t));
      } else if (t[0] == "tensor") {
        p.tensors.push_back(buffer(t));
      } else if (t[0] == "kernel") {
        p.kernels.push_back(kernel(t));
      } else {
        fail("expected 'tensor' or 'kernel'");
      }
    }
    return p;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) {
    throw UserError(SourceLoc{file_, line_no_, 1}, msg);
  }
  void expect(bool cond, const std::string& msg) {
    if (!cond) fail(msg);
  }

  // Tokens of the next non-empty line; empty at the end of the text.
  std::vector<std::string> next_tokens() {
    while (next_ < lines_.size()) {
      line_no_ = static_cast<int>(next_) + 1;
      std::istringstream in(lines_[next_++]);
      std::vector<std::string> t;
      std::string w;
      while (in >> w) t.push_back(w);
      if (!t.empty()) return t;
    }
    return {};
  }

  std::string value_of(const std::string& tok, const std::string& key) {
    expect(tok.rfind(key + "=", 0) == 0, fmt::format("expected '{}=...', got '{}'", key, tok));
    return tok.substr(key.size() + 1);
  }

  int64_t to_int(const std::string& s) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    expect(ec == std::errc() && ptr == s.data() + s.size(), fmt::format("bad integer '{}'", s));
    return v;
  }

  std::vector<int64_t> int_list(const std::string& s) {
    expect(s.size() >= 2 && s.front() == '[' && s.back() == ']', fmt::format("bad list '{}'", s));
    std::vector<int64_t> v;
    std::string inner = s.substr(1, s.size() - 2);
    if (inner.empty()) return v;
    std::istringstream in(inner);
    std::string item;
    while (std::getline(in, item, ',')) v.push_back(to_int(item));
    return v;
  }

  ProgramInterface interface(const std::vector<std::string>& t) {
    expect(t.size() >= 3, "expected 'interface NAME ROLE=VALUES ...'");
    ProgramInterface i{t[1], {}, {}};
    for (size_t k = 2; k < t.size(); ++k) {
      const size_t eq = t[k].find('=');
      expect(eq != std::string::npos && eq > 0 && eq + 1 < t[k].size(),
             fmt::format("expected ROLE=VALUES, got '{}'", t[k]));
      i.roles.emplace_back(t[k].substr(0, eq), names(t[k].substr(eq + 1)));
    }
    return i;
  }

  std::vector<std::string> names(const std::string& s) {
    if (s == "-") return {};
    std::vector<std::string> v;
    std::istringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) v.push_back(item);
    return v;
  }

  // "tensor|buffer NAME SPACE [ROLE] TYPE layout= swizzle= offset="
  PlanBuffer buffer(const std::vector<std::string>& t) {
    expect(t.size() >= 7, "expected 'NAME SPACE [ROLE] TYPE layout=D swizzle=S offset=B'");
    PlanBuffer b;
    b.name = t[1];
    size_t i = 2;
    if (t[i] == "device")
      b.space = MemSpace::device;
    else if (t[i] == "shared")
      b.space = MemSpace::shared;
    else if (t[i] == "reg")
      b.space = MemSpace::reg;
    else
      fail(fmt::format("unknown memory space '{}'", t[i]));
    ++i;
    if (b.space == MemSpace::device) {
      if (t[i] == "input")
        b.role = TensorRole::input;
      else if (t[i] == "output")
        b.role = TensorRole::output;
      else if (t[i] == "temp")
        b.role = TensorRole::temp;
      else
        fail(fmt::format("unknown tensor role '{}'", t[i]));
      ++i;
    }
    expect(t.size() == i + 4, "wrong number of fields in a buffer line");
    const std::string& ty = t[i];
    size_t br = ty.find('[');
    expect(br != std::string::npos, fmt::format("bad tensor type '{}'", ty));
    auto dt = dtype_from_name(ty.substr(0, br));
    expect(dt.has_value(), fmt::format("unknown dtype in '{}'", ty));
    b.dtype = *dt;
    b.shape = int_list(ty.substr(br));
    b.contiguous_dim = static_cast<int>(to_int(value_of(t[i + 1], "layout")));
    b.swizzle = static_cast<int>(to_int(value_of(t[i + 2], "swizzle")));
    b.offset = to_int(value_of(t[i + 3], "offset"));
    return b;
  }

  KernelPlan kernel(const std::vector<std::string>& t) {
    KernelPlan k;
    expect(t.size() >= 3, "expected 'kernel NAME library' or 'kernel NAME grid=..'");
    k.name = t[1];
    if (t[2] == "library") {
      k.library = true;
      std::vector<std::string> s;
      while ((s = next_tokens()) != std::vector<std::string>{"end"}) {
        expect(!s.empty(), "missing 'end'");
        k.loop_steps.push_back(step(s));
      }
      return k;
    }
    expect(t.size() == 8,
           "expected 'kernel NAME grid=[..] threads=N loop=N stages=N smem=N group=N'");
    auto g = int_list(value_of(t[2], "grid"));
    expect(g.size() == 3, "grid needs 3 entries");
    k.grid = {g[0], g[1], g[2]};
    k.threads = to_int(value_of(t[3], "threads"));
    k.loop = to_int(value_of(t[4], "loop"));
    k.stages = to_int(value_of(t[5], "stages"));
    expect(k.stages >= 1, "stages must be >= 1");
    k.smem_bytes = to_int(value_of(t[6], "smem"));
    k.block_group = to_int(value_of(t[7], "group"));
    expect(k.block_group >= 1 && k.num_blocks() % k.block_group == 0,
           "group must be >= 1 and divide the number of blocks");
    std::vector<std::string> s;
    while ((s = next_tokens()).size() > 0 && s[0] == "buffer") k.buffers.push_back(buffer(s));
    expect(s == std::vector<std::string>{"loop:"}, "expected 'loop:'");
    while ((s = next_tokens()) != std::vector<std::string>{"post:"}) {
      expect(!s.empty(), "missing 'post:'");
      k.loop_steps.push_back(step(s));
    }
    while ((s = next_tokens()) != std::vector<std::string>{"end"}) {
      expect(!s.empty(), "missing 'end'");
      k.post_steps.push_back(step(s));
    }
    return k;
  }

  Step step(const std::vector<std::string>& t) {
    Step s;
    const std::string& kind = t[0];
    bool found = false;
    for (StepKind k : {StepKind::load, StepKind::compute, StepKind::thread, StepKind::accum,
                       StepKind::store, StepKind::barrier, StepKind::call})
      if (kind == step_kind_name(k)) s.kind = k, found = true;
    expect(found, fmt::format("unknown step '{}'", kind));
    size_t i = 1;
    if (s.kind == StepKind::barrier) {
      expect(t.size() == 2 && t[1][0] == '@', "expected 'barrier @D'");
      s.depth = static_cast<int>(to_int(t[1].substr(1)));
      return s;
    }
    if (has_op_token(s.kind)) {
      expect(t.size() > i, "missing operator");
      auto op = op_by_name(t[i]);
      expect(op.has_value(), fmt::format("unknown operator '{}'", t[i]));
      s.op = *op;
      ++i;
    } else {
      s.op = s.kind == StepKind::load    ? OpKind::iter
             : s.kind == StepKind::store ? OpKind::save
                                         : OpKind::thread;
    }
    expect(t.size() >= i + 4 && t[i + 1] == "=" && t[i + 3][0] == '@',
           "expected 'OUTS = INS @DEPTH'");
    s.outputs = names(t[i]);
    s.inputs = names(t[i + 2]);
    s.depth = static_cast<int>(to_int(t[i + 3].substr(1)));
    bool open = false;
    for (size_t j = i + 4; j < t.size(); ++j) {
      if (t[j] == "{" && j + 1 == t.size() && s.kind == StepKind::thread) {
        open = true;
        break;
      }
      if (t[j] == "registers" && s.kind == StepKind::accum && j + 1 == t.size()) {
        s.in_registers = true;
        continue;
      }
      if (t[j] == "hoisted" && s.kind == StepKind::load && j + 1 == t.size()) {
        s.hoisted = true;
        continue;
      }
      if (t[j].rfind("tile=", 0) == 0 && s.kind == StepKind::compute && s.op == OpKind::matmul) {
        auto tile = int_list(t[j].substr(5));
        expect(tile.size() == 2 && tile[0] >= 1 && tile[1] >= 1,
               fmt::format("expected 'tile=[ROWS,COLUMNS]', got '{}'", t[j]));
        s.register_tile = {tile[0], tile[1]};
        continue;
      }
      size_t eq = t[j].find('=');
      expect(eq != std::string::npos, fmt::format("expected 'key=value', got '{}'", t[j]));
      std::string key = t[j].substr(0, eq), val = t[j].substr(eq + 1);
      if (s.kind == StepKind::call && (key == "dk" || key == "dk_args" || key == "dk_ptrs" ||
                                       key == "dk_work" || key == "dk_tasks")) {
        // A device-kernel call's attributes (lower/plan.h), whatever its operator.
        if (val.starts_with('['))
          s.attrs.set(key, int_list(val));
        else
          s.attrs.set(key, to_int(val));
        continue;
      }
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& a : op_info(s.op).attrs)
        if (key == a.name) spec = &a;
      expect(spec != nullptr, fmt::format("'{}' has no attribute '{}'", op_info(s.op).name, key));
      switch (spec->kind) {
        case AttrKind::integer:
        case AttrKind::opt_dim:
          s.attrs.set(key, to_int(val));
          break;
        case AttrKind::int_list:
        case AttrKind::dim_map:
          s.attrs.set(key, int_list(val));
          break;
        case AttrKind::rational: {
          auto r = Rational::parse(val);
          expect(r.has_value(), fmt::format("bad rational '{}'", val));
          s.attrs.set(key, *r);
          break;
        }
      }
    }
    expect(!is_model_only(s.op) || is_device_kernel_call(s),
           fmt::format("'{}' is a model-level operator, in a plan only as a device-kernel call "
                       "(dk=...)",
                       op_info(s.op).name));
    // A tile that moves with the iteration cannot be loaded once.
    expect(!s.hoisted || s.attrs.get_int_or("fmap", -1) < 0, "a hoisted load has an fmap");
    if (s.kind == StepKind::thread) {
      expect(open, "a thread step ends with '{'");
      std::vector<std::string> b;
      while ((b = next_tokens()) != std::vector<std::string>{"}"}) {
        expect(!b.empty(), "missing '}'");
        s.body.push_back(step(b));
      }
    }
    return s;
  }

  std::string file_;
  std::vector<std::string> lines_;
  size_t next_ = 0;
  int line_no_ = 0;
};

}  // namespace

ProgramPlan parse_plan(std::string_view text, const std::string& file) {
  return Parser(text, file).parse();
}

}  // namespace weft
