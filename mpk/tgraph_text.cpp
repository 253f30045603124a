// Printer and line-based parser of `.tgraph`. Each line is one declaration; ids are positional
// (o3 is the fourth operator), so a printed graph reads back to the same vectors.
#include "mpk/tgraph_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <map>

#include "core/error.h"

namespace weft {

namespace {

std::string ids(char prefix, const std::vector<int>& v) {
  if (v.empty()) return "-";
  std::string s;
  for (int x : v) s += fmt::format("{}{}{}", s.empty() ? "" : ",", prefix, x);
  return s;
}

std::string box_str(const Box& b) {
  std::string s = "[";
  for (size_t d = 0; d < b.lo.size(); ++d)
    s += fmt::format("{}{}:{}", d ? "," : "", b.lo[d], b.hi[d]);
  return s + "]";
}

std::string_view home_name(TensorHome h) {
  switch (h) {
    case TensorHome::input:
      return "input";
    case TensorHome::output:
      return "output";
    case TensorHome::workspace:
      return "workspace";
  }
  return "?";
}

}  // namespace

std::string print_tgraph(const TaskGraph& g) {
  std::string s = fmt::format("tgraph {} workers={} dispatch={}\n", g.name, g.workers,
                              dispatch_name(g.dispatch));
  for (const TgTensor& t : g.tensors)
    s += fmt::format("tensor {} {}[{}] layout={} {}={}\n", t.name, dtype_name(t.dtype),
                     fmt::join(t.shape, ","), t.contiguous_dim, home_name(t.home), t.slot);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Operator& o = g.ops[i];
    s += fmt::format("op o{} kernel={} index={} {} grid=[{}]{}{}\n", i, o.kernel, o.kernel_index,
                     o.library ? "library" : "blocks", fmt::join(o.grid, ","),
                     o.bytes >= 0 ? fmt::format(" bytes={}", o.bytes) : "",
                     o.data_dependent ? " data-dependent" : "");
  }
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const Task& t = g.tasks[i];
    s += fmt::format("task t{} ", i);
    s += t.op == kEmptyTask ? std::string("empty")
                            : fmt::format("op=o{} bid=[{}]", t.op, fmt::join(t.bid, ","));
    s += fmt::format(" wait={} trig={} {}", ids('e', t.waits), ids('e', t.triggers),
                     t.jit ? "jit" : "aot");
    for (const Access& a : t.reads)
      s += fmt::format(" read {}{}", g.tensors[a.tensor].name, box_str(a.box));
    for (const Access& a : t.writes)
      s += fmt::format(" write {}{}", g.tensors[a.tensor].name, box_str(a.box));
    s += "\n";
  }
  for (size_t i = 0; i < g.events.size(); ++i) {
    const Event& e = g.events[i];
    s += fmt::format("event e{} {} need={} launch={}\n", i, event_kind_name(e.kind), e.need,
                     e.first < 0 ? std::string("-") : fmt::format("t{}..t{}", e.first, e.last));
  }
  for (size_t w = 0; w < g.worker_lists.size(); ++w) {
    s += fmt::format("worker w{}", w);
    for (int t : g.worker_lists[w]) s += fmt::format(" t{}", t);
    s += "\n";
  }
  s += "end\n";
  return s;
}

namespace {

struct Token {
  std::string_view text;
  int col = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  TaskGraph run() {
    TaskGraph g;
    bool header = false, ended = false;
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) nl = text_.size();
      ++line_;
      tokens_ = split(text_.substr(pos, nl - pos));
      pos = nl + 1;
      if (tokens_.empty() || tokens_[0].text[0] == '#') continue;
      at_ = 0;
      const Token kw = next("a declaration");
      if (ended) fail(kw, "text after 'end'");
      if (!header && kw.text != "tgraph")
        fail(kw, "expected 'tgraph NAME workers=N dispatch=D' first");
      if (kw.text == "tgraph") {
        if (header) fail(kw, "a second 'tgraph' header");
        header = true;
        g.name = std::string(next("a graph name").text);
        g.workers = static_cast<int>(integer(value(next("workers=N"), "workers")));
        Token d = next("dispatch=aot|jit|hybrid");
        try {
          g.dispatch = dispatch_by_name(value(d, "dispatch").text);
        } catch (const UserError& e) {
          fail(d, e.message());
        }
      } else if (kw.text == "tensor") {
        tensor(g);
      } else if (kw.text == "op") {
        op(g);
      } else if (kw.text == "task") {
        task(g);
      } else if (kw.text == "event") {
        event(g);
      } else if (kw.text == "worker") {
        Token id = next("a worker id");
        expect_id(id, 'w', g.worker_lists.size());
        std::vector<int> list;
        while (at_ < tokens_.size()) list.push_back(ref(tokens_[at_++], 't', -1));
        g.worker_lists.push_back(std::move(list));
      } else if (kw.text == "end") {
        ended = true;
      } else {
        fail(kw,
             fmt::format("unknown declaration '{}' (tgraph, tensor, op, task, event, worker, end)",
                         kw.text));
      }
      if (at_ < tokens_.size())
        fail(tokens_[at_], fmt::format("unexpected '{}'", tokens_[at_].text));
    }
    if (!ended) WEFT_USER_ERROR((SourceLoc{file_, line_, 1}), "missing 'end'");
    if (g.worker_lists.size() != static_cast<size_t>(g.workers))
      WEFT_USER_ERROR((SourceLoc{file_, line_, 1}), "{} worker lines for workers={}",
                      g.worker_lists.size(), g.workers);
    check_refs(g);
    return g;
  }

 private:
  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    throw UserError(SourceLoc{file_, line_, t.col}, msg);
  }

  static std::vector<Token> split(std::string_view line) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
      if (j > i) out.push_back(Token{line.substr(i, j - i), static_cast<int>(i) + 1});
      i = j;
    }
    return out;
  }

  Token next(const char* what) {
    if (at_ >= tokens_.size()) {
      Token end{"", tokens_.empty()
                        ? 1
                        : tokens_.back().col + static_cast<int>(tokens_.back().text.size())};
      fail(end, fmt::format("expected {}", what));
    }
    return tokens_[at_++];
  }

  Token value(const Token& t, std::string_view key) {
    if (t.text.size() <= key.size() || t.text.substr(0, key.size()) != key ||
        t.text[key.size()] != '=')
      fail(t, fmt::format("expected {}=..., got '{}'", key, t.text));
    return Token{t.text.substr(key.size() + 1), t.col + static_cast<int>(key.size()) + 1};
  }

  int64_t integer(const Token& t) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      fail(t, fmt::format("expected an integer, got '{}'", t.text));
    return v;
  }

  // "a,b,c" (or "" for none) as integers, each located.
  std::vector<int64_t> int_list(const Token& t) {
    std::vector<int64_t> out;
    size_t i = 0;
    while (i < t.text.size()) {
      size_t j = t.text.find(',', i);
      if (j == std::string_view::npos) j = t.text.size();
      out.push_back(integer(Token{t.text.substr(i, j - i), t.col + static_cast<int>(i)}));
      i = j + 1;
    }
    return out;
  }

  Token bracketed(const Token& t) {
    if (t.text.size() < 2 || t.text.front() != '[' || t.text.back() != ']')
      fail(t, fmt::format("expected [...], got '{}'", t.text));
    return Token{t.text.substr(1, t.text.size() - 2), t.col + 1};
  }

  std::array<int64_t, 3> triple(const Token& t) {
    auto v = int_list(bracketed(t));
    if (v.size() != 3) fail(t, "expected three numbers [x,y,z]");
    for (int64_t x : v)
      if (x < 0) fail(t, "negative coordinate");
    return {v[0], v[1], v[2]};
  }

  void expect_id(const Token& t, char prefix, size_t index) {
    if (t.text != fmt::format("{}{}", prefix, index))
      fail(t, fmt::format("expected id {}{} (ids are numbered in order), got '{}'", prefix, index,
                          t.text));
  }

  // A reference like e12; `limit` >= 0 bounds it now, -1 defers the check to check_refs.
  int ref(const Token& t, char prefix, int64_t limit) {
    if (t.text.size() < 2 || t.text[0] != prefix)
      fail(t, fmt::format("expected a {} id like {}0, got '{}'",
                          prefix == 'e'   ? "event"
                          : prefix == 't' ? "task"
                                          : "operator",
                          prefix, t.text));
    int64_t v = integer(Token{t.text.substr(1), t.col + 1});
    if (v < 0 || (limit >= 0 && v >= limit)) fail(t, fmt::format("'{}' is not declared", t.text));
    if (limit < 0) deferred_.push_back({t, prefix, line_, v});
    return static_cast<int>(v);
  }

  std::vector<int> ref_list(const Token& t, char prefix) {
    std::vector<int> out;
    if (t.text == "-") return out;
    size_t i = 0;
    while (i <= t.text.size()) {
      size_t j = t.text.find(',', i);
      if (j == std::string_view::npos) j = t.text.size();
      out.push_back(ref(Token{t.text.substr(i, j - i), t.col + static_cast<int>(i)}, prefix, -1));
      i = j + 1;
    }
    return out;
  }

  void tensor(TaskGraph& g) {
    TgTensor t;
    t.name = std::string(next("a tensor name").text);
    Token ty = next("a type like f32[4,64]");
    size_t br = ty.text.find('[');
    if (br == std::string_view::npos) fail(ty, "expected a type like f32[4,64]");
    auto dt = dtype_from_name(ty.text.substr(0, br));
    if (!dt) fail(ty, fmt::format("unknown dtype '{}'", ty.text.substr(0, br)));
    t.dtype = *dt;
    t.shape = int_list(bracketed(Token{ty.text.substr(br), ty.col + static_cast<int>(br)}));
    t.contiguous_dim = static_cast<int>(integer(value(next("layout=D"), "layout")));
    if (t.contiguous_dim < 0 ||
        (t.contiguous_dim >= static_cast<int>(t.shape.size()) && !t.shape.empty()))
      fail(ty, "layout dim out of range");
    Token home = next("input=I, output=O or workspace=BYTES");
    size_t eq = home.text.find('=');
    std::string_view key = home.text.substr(0, eq == std::string_view::npos ? 0 : eq);
    if (key == "input")
      t.home = TensorHome::input;
    else if (key == "output")
      t.home = TensorHome::output;
    else if (key == "workspace")
      t.home = TensorHome::workspace;
    else
      fail(home, "expected input=I, output=O or workspace=BYTES");
    t.slot = integer(value(home, key));
    if (tensor_index_.count(t.name)) fail(ty, fmt::format("tensor '{}' declared twice", t.name));
    tensor_index_[t.name] = static_cast<int>(g.tensors.size());
    g.tensors.push_back(std::move(t));
  }

  void op(TaskGraph& g) {
    expect_id(next("an operator id"), 'o', g.ops.size());
    Operator o;
    o.kernel = std::string(value(next("kernel=NAME"), "kernel").text);
    o.kernel_index = static_cast<int>(integer(value(next("index=N"), "index")));
    Token kind = next("library or blocks");
    if (kind.text != "library" && kind.text != "blocks") fail(kind, "expected library or blocks");
    o.library = kind.text == "library";
    o.grid = triple(value(next("grid=[x,y,z]"), "grid"));
    if (at_ < tokens_.size() && tokens_[at_].text.rfind("bytes=", 0) == 0) {
      o.bytes = integer(value(tokens_[at_], "bytes"));
      if (o.bytes < 0) fail(tokens_[at_], "expected bytes=N with N >= 0");
      ++at_;
    }
    if (at_ < tokens_.size() && tokens_[at_].text == "data-dependent") {
      o.data_dependent = true;
      ++at_;
    }
    g.ops.push_back(std::move(o));
  }

  Access access(const TaskGraph& g, const Token& t) {
    size_t br = t.text.find('[');
    if (br == std::string_view::npos) fail(t, "expected NAME[lo:hi,...]");
    auto it = tensor_index_.find(std::string(t.text.substr(0, br)));
    if (it == tensor_index_.end())
      fail(t, fmt::format("unknown tensor '{}'", t.text.substr(0, br)));
    Access a{it->second, {}};
    Token inner = bracketed(Token{t.text.substr(br), t.col + static_cast<int>(br)});
    size_t i = 0;
    while (i < inner.text.size()) {
      size_t j = inner.text.find(',', i);
      if (j == std::string_view::npos) j = inner.text.size();
      std::string_view part = inner.text.substr(i, j - i);
      size_t colon = part.find(':');
      Token pt{part, inner.col + static_cast<int>(i)};
      if (colon == std::string_view::npos) fail(pt, "expected lo:hi");
      a.box.lo.push_back(integer(Token{part.substr(0, colon), pt.col}));
      a.box.hi.push_back(
          integer(Token{part.substr(colon + 1), pt.col + static_cast<int>(colon) + 1}));
      i = j + 1;
    }
    const Shape& shape = g.tensors[a.tensor].shape;
    if (a.box.lo.size() != shape.size())
      fail(t, fmt::format("box of rank {} for a tensor of rank {}", a.box.lo.size(), shape.size()));
    for (size_t d = 0; d < shape.size(); ++d)
      if (a.box.lo[d] < 0 || a.box.lo[d] > a.box.hi[d] || a.box.hi[d] > shape[d])
        fail(t, fmt::format("box outside the tensor's shape [{}]", fmt::join(shape, ",")));
    return a;
  }

  void task(TaskGraph& g) {
    expect_id(next("a task id"), 't', g.tasks.size());
    Task t;
    Token first = next("op=oN or empty");
    if (first.text != "empty") {
      t.op = ref(value(first, "op"), 'o', static_cast<int64_t>(g.ops.size()));
      Token bid = next("bid=[x,y,z]");
      t.bid = triple(value(bid, "bid"));
      for (int d = 0; d < 3; ++d)
        if (t.bid[d] >= g.ops[t.op].grid[d])
          fail(bid, "block coordinate outside the operator's grid");
    }
    t.waits = ref_list(value(next("wait=..."), "wait"), 'e');
    t.triggers = ref_list(value(next("trig=..."), "trig"), 'e');
    Token mode = next("aot or jit");
    if (mode.text != "aot" && mode.text != "jit") fail(mode, "expected aot or jit");
    t.jit = mode.text == "jit";
    while (at_ < tokens_.size()) {
      Token kind = tokens_[at_++];
      if (kind.text != "read" && kind.text != "write") fail(kind, "expected read or write");
      (kind.text == "read" ? t.reads : t.writes).push_back(access(g, next("NAME[lo:hi,...]")));
    }
    g.tasks.push_back(std::move(t));
  }

  void event(TaskGraph& g) {
    expect_id(next("an event id"), 'e', g.events.size());
    Event e;
    Token kind = next("begin, normal or end");
    if (kind.text == "begin")
      e.kind = EventKind::begin;
    else if (kind.text == "normal")
      e.kind = EventKind::normal;
    else if (kind.text == "end")
      e.kind = EventKind::end;
    else
      fail(kind, "expected begin, normal or end");
    e.need = integer(value(next("need=N"), "need"));
    if (e.need < 0) fail(kind, "negative need");
    Token launch = value(next("launch=tA..tB or launch=-"), "launch");
    if (launch.text != "-") {
      size_t dots = launch.text.find("..");
      if (dots == std::string_view::npos) fail(launch, "expected tA..tB");
      e.first = ref(Token{launch.text.substr(0, dots), launch.col}, 't', -1);
      e.last = ref(Token{launch.text.substr(dots + 2), launch.col + static_cast<int>(dots) + 2},
                   't', -1);
      if (e.last < e.first) fail(launch, "an empty launch range (write launch=-)");
    }
    g.events.push_back(e);
  }

  // References to tasks and events may come before their declarations (tasks name events).
  void check_refs(const TaskGraph& g) {
    for (const auto& d : deferred_) {
      size_t limit = d.prefix == 'e' ? g.events.size() : g.tasks.size();
      if (d.value >= static_cast<int64_t>(limit)) {
        line_ = d.line;
        fail(d.token, fmt::format("'{}' is not declared", d.token.text));
      }
    }
  }

  struct Deferred {
    Token token;
    char prefix;
    int line;
    int64_t value;
  };

  std::string_view text_;
  std::string file_;
  int line_ = 0;
  std::vector<Token> tokens_;
  size_t at_ = 0;
  std::map<std::string, int> tensor_index_;
  std::vector<Deferred> deferred_;
};

}  // namespace

TaskGraph parse_tgraph(std::string_view text, const std::string& file) {
  return Parser(text, file).run();
}

}  // namespace weft
