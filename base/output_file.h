#pragma once
// Writes an output file whole or not at all: the text goes to a temporary file beside
// the target, which is renamed over it only once complete.
#include <functional>
#include <ostream>
#include <string>

namespace kb {

// Throws std::runtime_error naming the path and the reason when it cannot write.
void write_file_atomically(const std::string& path, const std::string& contents);
// The same for a file `write` produces piece by piece.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace kb
