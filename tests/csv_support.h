#pragma once
// A CSV file read back with libcsv (RFC 4180, strict), an oracle independent of the
// writer under test.
#include <csv.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace kb::test {

inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  struct Rows {
    std::vector<std::vector<std::string>> rows{{}};
  } rows;
  csv_parser p{};
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) throw std::runtime_error("csv_init failed");
  auto field = [](void* s, std::size_t len, void* data) {
    static_cast<Rows*>(data)->rows.back().push_back(s ? std::string(static_cast<const char*>(s), len) : std::string());
  };
  auto row = [](int, void* data) { static_cast<Rows*>(data)->rows.emplace_back(); };
  const bool ok = csv_parse(&p, text.data(), text.size(), field, row, &rows) == text.size() &&
                  csv_fini(&p, field, row, &rows) == 0;
  const std::string error = ok ? "" : csv_strerror(csv_error(&p));
  csv_free(&p);
  if (!ok) throw std::runtime_error("malformed CSV: " + error);
  rows.rows.pop_back();  // the row the last line end opened
  return rows.rows;
}

}  // namespace kb::test
