#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>

#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {
namespace {

// A run of input bytes in a doubly linked list; n == 0 once merged into its left neighbour.
struct Symbol {
  int prev;
  int next;
  std::size_t begin;
  std::size_t n;
};

struct Bigram {
  int left;
  int right;
  float score;
  std::size_t size;
};

// Highest score first; on equal scores the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void Tokenize(std::vector<TokenId>* out) {
    for (std::size_t offset = 0; offset < text_.size();) {
      const std::size_t n = std::min(Utf8SequenceLength(static_cast<unsigned char>(text_[offset])),
                                     text_.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + n == text_.size() ? -1 : index + 1, offset, n});
      offset += n;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Stale: one side was merged since (sizes only grow, so the sum tells).
      if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      TryAddBigram(left.prev, bigram.left);
      TryAddBigram(bigram.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) Emit(symbols_[i], out);
  }

 private:
  std::string_view Text(const Symbol& s) const { return text_.substr(s.begin, s.n); }

  void TryAddBigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const std::size_t size = symbols_[left].n + symbols_[right].n;
    const TokenId id = vocab_.Find(text_.substr(symbols_[left].begin, size));
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.tokens[id].score, size});
  }

  // A merged symbol is always a token; a single character may not be: bytes then.
  void Emit(const Symbol& symbol, std::vector<TokenId>* out) const {
    const std::string_view text = Text(symbol);
    const TokenId id = vocab_.Find(text);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
    for (char c : text) {
      const TokenId byte_id = vocab_.ByteToken(static_cast<std::uint8_t>(c));
      if (byte_id != kNoToken) {
        out->push_back(byte_id);
      } else if (vocab_.special.unk != kNoToken) {
        out->push_back(vocab_.special.unk);
      }
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue_;
};

}  // namespace

void SpmTokenize(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  SpmSession(vocab, text).Tokenize(out);
}

}  // namespace smartgen::tokenizer
