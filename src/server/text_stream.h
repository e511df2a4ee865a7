// TextStream: the generated text of one request, built piece by piece, with OpenAI stop
// sequences and safe streaming deltas.
//
//   TextStream text(stop);
//   text.Append(tokenizer.TokenToPiece(id, /*special=*/false));
//   send(text.TakeDelta());      // while streaming
//   send(text.TakeRest());       // at the end
//
// - Stop sequences are found in the decoded bytes, across token boundaries. At the first match
//   the text is cut before it and stopped() becomes true; later pieces are ignored.
// - TakeDelta() never returns the start of a multi-byte UTF-8 character whose remaining bytes
//   have not arrived, nor a tail that could still grow into a stop sequence: those bytes are
//   held back until they are decided. Invalid bytes are passed through (JSON output turns them
//   into U+FFFD). The deltas concatenated with TakeRest() equal text().
//
// Not thread-safe (one request's consumer owns it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace smartgen::server {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop = {});

  // Appends the bytes of one token. Returns true when a stop sequence completed (now or before).
  bool Append(std::string_view piece);
  bool stopped() const { return stopped_; }

  // The bytes that are safe to send now, from the end of the last delta.
  std::string TakeDelta();
  // Everything not yet taken (for the end of generation: nothing is held back).
  std::string TakeRest();

  // The whole text so far (cut before a stop sequence).
  const std::string& text() const { return text_; }

 private:
  // Bytes at the end of text_ that must wait: a possible stop-sequence prefix or an
  // incomplete UTF-8 character.
  std::size_t HeldBackBytes() const;

  std::vector<std::string> stop_;
  std::size_t max_stop_ = 0;
  std::string text_;
  std::size_t taken_ = 0;
  bool stopped_ = false;
};

}  // namespace smartgen::server
