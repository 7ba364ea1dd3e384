// graphs/pickle_scan.cpp — a pickle opcode walker that only tracks which container holds which: every
// container is a vertex, every "put into" an edge, and the depth is the longest path, found without
// recursion. Opcode lengths follow CPython's pickletools.
#include "graphs/pickle_scan.h"

#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <unordered_map>
#include <vector>

namespace pt2diff {

namespace {

constexpr int kScalar = -1, kMark = -2;

struct Walker {
  explicit Walker(std::string_view pickle) : p(pickle) {}
  std::string_view p;
  size_t at = 0;
  std::vector<int> stack;                  ///< vertex per stack slot; kScalar, or kMark
  std::vector<std::vector<int>> children;  ///< per container vertex
  std::unordered_map<uint64_t, int> memo;
  std::optional<std::string> problem;

  bool fail(std::string why) {
    if (!problem) problem = std::move(why);
    return false;
  }
  bool need(size_t n) { return at + n <= p.size() || fail(fmt::format("truncated at byte {}", at)); }
  uint64_t little(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[at + i])) << (8 * i);
    at += n;
    return v;
  }
  bool skip_line() {
    const size_t end = p.find('\n', at);
    if (end == std::string_view::npos) return fail(fmt::format("truncated at byte {}", at));
    at = end + 1;
    return true;
  }
  bool skip_counted(size_t length_bytes) {  // a length, then that many bytes
    if (!need(length_bytes)) return false;
    const uint64_t n = little(length_bytes);
    if (n > p.size() - at) return fail(fmt::format("truncated at byte {}", at));
    at += static_cast<size_t>(n);
    return true;
  }
  int container() {
    children.emplace_back();
    return static_cast<int>(children.size() - 1);
  }
  bool pop(int& v) {
    if (stack.empty() || stack.back() == kMark) return fail(fmt::format("a stack underflow at byte {}", at));
    v = stack.back();
    stack.pop_back();
    return true;
  }
  bool pop_to_mark(std::vector<int>& items) {
    items.clear();
    while (!stack.empty() && stack.back() != kMark) {
      items.push_back(stack.back());
      stack.pop_back();
    }
    if (stack.empty()) return fail(fmt::format("no MARK for the opcode at byte {}", at));
    stack.pop_back();
    return true;
  }
  void hold(int parent, int child) {
    if (parent >= 0 && child >= 0) children[static_cast<size_t>(parent)].push_back(child);
  }
  /// A new container holding `items`, pushed.
  void build(const std::vector<int>& items) {
    const int c = container();
    for (int item : items) hold(c, item);
    stack.push_back(c);
  }
  bool build_from(size_t count) {
    std::vector<int> items(count);
    for (size_t i = 0; i < count; ++i)
      if (!pop(items[i])) return false;
    build(items);
    return true;
  }
  bool add_to_top(const std::vector<int>& items) {
    if (stack.empty() || stack.back() == kMark) return fail(fmt::format("nothing to add to at byte {}", at));
    for (int item : items) hold(stack.back(), item);
    return true;
  }
  bool put(uint64_t index) {
    if (stack.empty() || stack.back() == kMark) return fail(fmt::format("a memo put of nothing at byte {}", at));
    memo[index] = stack.back();
    return true;
  }
  bool get(uint64_t index) {
    auto it = memo.find(index);
    if (it == memo.end()) return fail(fmt::format("a memo get of an unknown entry at byte {}", at));
    stack.push_back(it->second);
    return true;
  }
  uint64_t line_number() {  // the decimal argument of GET/PUT (protocol 0)
    const size_t end = p.find('\n', at);
    uint64_t v = 0;
    for (size_t i = at; i < end && i < p.size(); ++i)
      if (p[i] >= '0' && p[i] <= '9') v = v * 10 + static_cast<uint64_t>(p[i] - '0');
    return v;
  }

  bool step(unsigned char op);
  size_t longest_chain();
};

bool Walker::step(unsigned char op) {
  std::vector<int> items;
  int a = 0, b = 0;
  switch (op) {
    // Scalars with fixed-size or counted arguments.
    case 'J': return need(4) && (at += 4, stack.push_back(kScalar), true);
    case 'K': return need(1) && (at += 1, stack.push_back(kScalar), true);
    case 'M': return need(2) && (at += 2, stack.push_back(kScalar), true);
    case 'G': return need(8) && (at += 8, stack.push_back(kScalar), true);
    case 0x82: return need(1) && (at += 1, stack.push_back(kScalar), true);
    case 0x83: return need(2) && (at += 2, stack.push_back(kScalar), true);
    case 0x84: return need(4) && (at += 4, stack.push_back(kScalar), true);
    case 'T': case 'X': case 'B': case 0x8b: return skip_counted(4) && (stack.push_back(kScalar), true);
    case 'U': case 'C': case 0x8c: case 0x8a: return skip_counted(1) && (stack.push_back(kScalar), true);
    case 0x8d: case 0x8e: case 0x96: return skip_counted(8) && (stack.push_back(kScalar), true);
    case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': return skip_line() && (stack.push_back(kScalar), true);
    case 'c': return skip_line() && skip_line() && (stack.push_back(kScalar), true);
    case 'N': case 0x88: case 0x89: case ')': case 0x97: stack.push_back(kScalar); return true;
    case 0x80: return need(1) && (at += 1, true);   // PROTO
    case 0x95: return need(8) && (at += 8, true);   // FRAME
    case 0x98: return true;                         // READONLY_BUFFER
    // Containers.
    case ']': case '}': case 0x8f: stack.push_back(container()); return true;
    case '(': stack.push_back(kMark); return true;
    case 'l': case 'd': case 't': case 0x91: return pop_to_mark(items) && (build(items), true);
    case 0x85: return build_from(1);
    case 0x86: return build_from(2);
    case 0x87: return build_from(3);
    case 'a': return pop(a) && add_to_top({a});
    case 's': return pop(a) && pop(b) && add_to_top({a, b});
    case 'b': return pop(a) && add_to_top({a});
    case 'e': case 'u': case 0x90: return pop_to_mark(items) && add_to_top(items);
    case 'R': case 0x81: return build_from(2);       // REDUCE, NEWOBJ: a callable applied to an args tuple
    case 0x92: return build_from(3);                 // NEWOBJ_EX
    case 0x93: return pop(a) && pop(b) && (stack.push_back(kScalar), true);  // STACK_GLOBAL
    case 'Q': return build_from(1);                  // BINPERSID
    case 'o': return pop_to_mark(items) && (build(items), true);
    case 'i': return skip_line() && skip_line() && pop_to_mark(items) && (build(items), true);
    // Stack and memo.
    case '0': return pop(a);
    case '1': return pop_to_mark(items);
    case '2': return (!stack.empty() || fail("DUP of nothing")) && (stack.push_back(stack.back()), true);
    case 'q': return need(1) && put(little(1));
    case 'r': return need(4) && put(little(4));
    case 0x94: return put(memo.size());
    case 'p': { const uint64_t i = line_number(); return skip_line() && put(i); }
    case 'h': return need(1) && get(little(1));
    case 'j': return need(4) && get(little(4));
    case 'g': { const uint64_t i = line_number(); return skip_line() && get(i); }
    default: return fail(fmt::format("an unknown opcode 0x{:02x} at byte {}", op, at - 1));
  }
}

size_t Walker::longest_chain() {
  // Depth of a vertex: 1 + the deepest of its children; iterative DFS, a grey vertex met again is a cycle.
  std::vector<size_t> depth(children.size(), 0);
  std::vector<char> colour(children.size(), 0);  // 0 new, 1 on the path, 2 done
  size_t best = 0;
  for (size_t root = 0; root < children.size(); ++root) {
    if (colour[root]) continue;
    std::vector<std::pair<size_t, size_t>> path = {{root, 0}};  // vertex, next child to visit
    colour[root] = 1;
    while (!path.empty()) {
      auto& [v, next] = path.back();
      if (next < children[v].size()) {
        const size_t child = static_cast<size_t>(children[v][next++]);
        if (colour[child] == 1) {
          fail("a container that contains itself");
          return best;
        }
        if (colour[child] == 0) {
          colour[child] = 1;
          path.emplace_back(child, 0);
        }
        continue;
      }
      size_t d = 1;
      for (int child : children[v]) d = std::max(d, depth[static_cast<size_t>(child)] + 1);
      depth[v] = d;
      colour[v] = 2;
      best = std::max(best, d);
      path.pop_back();
    }
  }
  return best;
}

}  // namespace

PickleShape scan_pickle(std::string_view pickle, size_t max_depth) {
  Walker w{pickle};
  bool stopped = false;
  while (!w.problem && w.at < pickle.size()) {
    const auto op = static_cast<unsigned char>(pickle[w.at++]);
    if (op == '.') {
      stopped = true;
      break;
    }
    w.step(op);
  }
  PickleShape shape;
  if (!w.problem && !stopped) w.fail("no STOP opcode: the pickle is truncated");
  if (!w.problem) shape.depth = w.longest_chain();
  if (!w.problem && shape.depth > max_depth)
    w.fail(fmt::format("containers nested {} deep (pt2diff reads at most {})", shape.depth, max_depth));
  shape.problem = w.problem;
  return shape;
}

}  // namespace pt2diff
