// Hash-consed abstract-expression terms: interning, printing and parsing.
#include "absexpr/term.h"

#include <cctype>
#include <charconv>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace weft {

int term_arity(TermOp op) {
  switch (op) {
    case TermOp::var:
    case TermOp::cst:
      return 0;
    case TermOp::fn:
    case TermOp::sum:
    case TermOp::max:
      return 1;
    case TermOp::add:
    case TermOp::mul:
    case TermOp::div:
    case TermOp::cat:
      return 2;
  }
  return 0;
}

const char* term_op_name(TermOp op) {
  switch (op) {
    case TermOp::var:
      return "var";
    case TermOp::cst:
      return "const";
    case TermOp::add:
      return "add";
    case TermOp::mul:
      return "mul";
    case TermOp::div:
      return "div";
    case TermOp::fn:
      return "fn";
    case TermOp::sum:
      return "sum";
    case TermOp::max:
      return "max";
    case TermOp::cat:
      return "cat";
  }
  return "?";
}

bool is_term_function(OpKind kind) {
  return class_of(kind) == OpClass::unary && (kind == OpKind::exp || op_info(kind).formula.empty());
}

bool read_term_symbol(std::string_view head, TermOp& op, int64_t& k) {
  static constexpr TermOp kFixed[] = {TermOp::cst, TermOp::add, TermOp::mul, TermOp::div,
                                      TermOp::sum, TermOp::max, TermOp::cat};
  for (TermOp o : kFixed)
    if (head == term_op_name(o)) {
      op = o;
      k = 0;
      return true;
    }
  std::optional<OpKind> kind = op_by_name(head);
  if (!kind || !is_term_function(*kind)) return false;
  op = TermOp::fn;
  k = static_cast<int64_t>(*kind);
  return true;
}

const char* term_symbol_name(TermOp op, int64_t k) {
  return op == TermOp::fn ? op_info(static_cast<OpKind>(k)).name : term_op_name(op);
}

namespace {

// "const, add, ..., exp, sqrt, ..., cat": every symbol the printed form may use.
std::string term_symbols_text() {
  std::string s = "const, add, mul, div";
  for (const OpInfo& info : all_ops())
    if (is_term_function(info.kind)) s += fmt::format(", {}", info.name);
  return s + ", sum, max, cat";
}

}  // namespace

size_t TermStore::NodeHash::operator()(const TermNode& n) const {
  uint64_t h = static_cast<uint64_t>(n.op) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(n.k) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(n.a) + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
  h ^= static_cast<uint64_t>(n.b) + 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

TermStore::TermStore(bool constants_as_terms)
    : chunks_(new std::atomic<TermNode*>[kMaxChunks]), constants_as_terms_(constants_as_terms) {
  for (size_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

TermStore::~TermStore() {
  for (size_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

const TermNode& TermStore::node(TermId id) const {
  WEFT_CHECK(id < size(), "term id {} out of range ({} terms)", id, size());
  return chunks_[id >> kChunkBits].load(std::memory_order_acquire)[id & (kChunkSize - 1)];
}

std::string TermStore::var_name(int64_t index) const {
  std::shared_lock lock(mu_);
  WEFT_CHECK(index >= 0 && static_cast<size_t>(index) < names_.size(), "bad variable index {}",
             index);
  return names_[static_cast<size_t>(index)];
}

TermId TermStore::var(std::string_view name) {
  int64_t index;
  {
    std::unique_lock lock(mu_);
    auto it = name_index_.find(std::string(name));
    if (it == name_index_.end()) {
      index = static_cast<int64_t>(names_.size());
      names_.emplace_back(name);
      name_index_.emplace(std::string(name), index);
    } else {
      index = it->second;
    }
  }
  return make({TermOp::var, index, kNoTerm, kNoTerm});
}

TermId TermStore::cst() {
  return make({TermOp::cst, 0, kNoTerm, kNoTerm});
}

TermId TermStore::make(TermNode n) {
  int arity = term_arity(n.op);
  if ((n.op == TermOp::sum || n.op == TermOp::max) && n.k == 1 && n.a < size()) return n.a;
  if (n.op == TermOp::fn)  // which operators may be functions is checked where terms are read
    WEFT_CHECK(n.k >= 0 && n.k < kNumOpKinds, "{} is not an operator", n.k);
  else
    WEFT_CHECK(
        (n.op == TermOp::sum || n.op == TermOp::max) ? n.k >= 1 : (n.op == TermOp::var || n.k == 0),
        "bad size {} for {}", n.k, term_op_name(n.op));
  size_t have = size();
  WEFT_CHECK(arity < 1 || n.a < have, "operand {} does not exist", n.a);
  WEFT_CHECK(arity < 2 ? n.b == kNoTerm : n.b < have, "bad second operand {}", n.b);
  if (arity < 1) WEFT_CHECK(n.a == kNoTerm, "leaf with an operand");
  if (auto it = index_.find(n); it != index_.end()) return it->second;
  std::lock_guard<std::mutex> lock(insert_mu_);
  if (auto it = index_.find(n); it != index_.end()) return it->second;
  uint32_t id = count_.load(std::memory_order_relaxed);
  size_t chunk = id >> kChunkBits;
  WEFT_CHECK(chunk < kMaxChunks, "term store is full ({} terms)", id);
  TermNode* block = chunks_[chunk].load(std::memory_order_relaxed);
  if (block == nullptr) {
    block = new TermNode[kChunkSize];
    chunks_[chunk].store(block, std::memory_order_release);
  }
  block[id & (kChunkSize - 1)] = n;
  // The node and the count are published before the index entry: a reader that finds the id
  // can read its node.
  count_.store(id + 1, std::memory_order_release);
  index_.emplace(n, id);
  return id;
}

std::string TermStore::str(TermId id) const {
  const TermNode& n = node(id);
  switch (term_arity(n.op)) {
    case 0:
      return n.op == TermOp::var ? var_name(n.k) : "(const)";
    case 1:
      if (n.op == TermOp::sum || n.op == TermOp::max)
        return fmt::format("({} {} {})", term_op_name(n.op), n.k, str(n.a));
      return fmt::format("({} {})", term_symbol_name(n.op, n.k), str(n.a));
    default:
      return fmt::format("({} {} {})", term_op_name(n.op), str(n.a), str(n.b));
  }
}

size_t TermStore::tree_size(TermId id) const {
  const TermNode& n = node(id);
  size_t s = 1;
  if (n.a != kNoTerm) s += tree_size(n.a);
  if (n.b != kNoTerm) s += tree_size(n.b);
  return s;
}

namespace {

// Recursive-descent reader of the printed form.
class SexprReader {
 public:
  SexprReader(std::string_view text, TermStore& store) : s_(text), store_(store) {}

  TermId read_all() {
    TermId t = read(0);
    skip_space();
    if (pos_ != s_.size()) fail("end of the term");
    return t;
  }

 private:
  [[noreturn]] void fail(std::string_view expected) {
    std::string found = pos_ < s_.size() ? fmt::format("'{}'", s_.substr(pos_, 12)) : "the end";
    throw UserError(fmt::format("abstract expression, column {}: expected {}, found {}", pos_ + 1,
                                expected, found));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  static bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '\'';
  }
  std::string_view word() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(fmt::format("'{}'", c));
    ++pos_;
  }

  TermId read(int depth) {
    if (depth > 10000) fail("a less deeply nested term");
    skip_space();
    if (pos_ >= s_.size()) fail("a term");
    if (s_[pos_] != '(') {
      std::string_view name = word();
      if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
        fail("a variable name or '('");
      return store_.var(name);
    }
    ++pos_;
    std::string_view head = word();
    TermNode n{TermOp::var, 0, kNoTerm, kNoTerm};
    if (!read_term_symbol(head, n.op, n.k))
      fail(fmt::format("an operator ({})", term_symbols_text()));
    if (n.op == TermOp::sum || n.op == TermOp::max) {
      std::string_view num = word();
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n.k);
      if (num.empty() || ec != std::errc() || p != num.data() + num.size() || n.k < 1)
        fail(fmt::format("the number of elements {} reduces (an integer >= 1)", head));
    }
    int arity = term_arity(n.op);
    if (arity >= 1) n.a = read(depth + 1);
    if (arity >= 2) n.b = read(depth + 1);
    expect(')');
    return store_.make(n);
  }

  std::string_view s_;
  TermStore& store_;
  size_t pos_ = 0;
};

}  // namespace

TermId TermStore::parse(std::string_view text) {
  return SexprReader(text, *this).read_all();
}

}  // namespace weft
