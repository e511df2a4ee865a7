#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <queue>
#include <string>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {
namespace {

struct BpeSymbol {
  int prev;
  int next;
  std::size_t begin;
  std::size_t n;  // 0 once merged into its left neighbour
};

struct BpeBigram {
  int left;
  int right;
  int rank;
  std::size_t begin;  // the merged text: word[begin, begin + size)
  std::size_t size;
};

// Lowest rank first; on equal ranks the leftmost pair.
struct BpeBigramGreater {
  bool operator()(const BpeBigram& a, const BpeBigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeWordSession {
 public:
  explicit BpeWordSession(const Vocab& vocab) : vocab_(vocab) {}

  // Tokenizes one byte-encoded pre-token.
  void Tokenize(std::string_view word, std::vector<TokenId>* out) {
    word_ = word;
    symbols_.clear();
    queue_ = {};
    if (vocab_.pre.ignore_merges) {
      const TokenId whole = vocab_.Find(word);
      if (whole != kNoToken) {
        out->push_back(whole);
        return;
      }
    }
    for (std::size_t offset = 0; offset < word.size();) {
      const std::size_t n = std::min(Utf8SequenceLength(static_cast<unsigned char>(word[offset])),
                                     word.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + n == word.size() ? -1 : index + 1, offset, n});
      offset += n;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const BpeBigram bigram = queue_.top();
      queue_.pop();
      BpeSymbol& left = symbols_[bigram.left];
      BpeSymbol& right = symbols_[bigram.right];
      if (left.n == 0 || right.n == 0) continue;
      // Stale unless the two symbols still spell exactly the merged text.
      if (left.begin != bigram.begin || left.n + right.n != bigram.size ||
          right.begin != left.begin + left.n) {
        continue;
      }
      left.n += right.n;
      right.n = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      TryAddBigram(left.prev, bigram.left);
      TryAddBigram(bigram.left, left.next);
    }

    for (const BpeSymbol& symbol : symbols_) {
      if (symbol.n == 0) continue;
      const std::string_view text = word_.substr(symbol.begin, symbol.n);
      const TokenId id = vocab_.Find(text);
      if (id != kNoToken) {
        out->push_back(id);
        continue;
      }
      for (char c : text) {
        const TokenId byte_id = vocab_.Find(std::string_view(&c, 1));
        if (byte_id != kNoToken) out->push_back(byte_id);
      }
    }
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const BpeSymbol& l = symbols_[left];
    const BpeSymbol& r = symbols_[right];
    const int rank =
        vocab_.MergeRank(word_.substr(l.begin, l.n), word_.substr(r.begin, r.n), &scratch_);
    if (rank < 0) return;
    queue_.push({left, right, rank, l.begin, l.n + r.n});
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<BpeSymbol> symbols_;
  std::priority_queue<BpeBigram, std::vector<BpeBigram>, BpeBigramGreater> queue_;
  std::string scratch_;
};

}  // namespace

void BpeTokenize(const Vocab& vocab, const PreTokenizer& pre_tokenizer, std::string_view text,
                 std::vector<TokenId>* out) {
  BpeWordSession session(vocab);
  std::string encoded;
  for (std::string_view piece : pre_tokenizer.Split(text)) {
    encoded.clear();
    ByteEncode(piece, &encoded);
    session.Tokenize(encoded, out);
  }
}

}  // namespace smartgen::tokenizer
