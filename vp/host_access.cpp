#include "vp/host_access.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace kb::vp {

namespace {

// One chunk's bytes through the bus in pieces of at most max_bytes.
void transfer(tlm::tlm_fw_transport_if<>& bus, tlm::tlm_command command, std::uint64_t address,
              std::uint8_t* bytes, std::uint64_t length, sc_core::sc_time& delay, std::uint64_t max_bytes) {
  for (std::uint64_t done = 0; done < length;) {
    const auto n = static_cast<unsigned int>(std::min(max_bytes, length - done));
    tlm::tlm_generic_payload gp;
    gp.set_command(command);
    gp.set_address(address + done);
    gp.set_data_ptr(bytes + done);
    gp.set_data_length(n);
    gp.set_streaming_width(n);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    bus.b_transport(gp, delay);
    if (!gp.is_response_ok()) {
      std::ostringstream s;
      s << "host " << (command == tlm::TLM_READ_COMMAND ? "read" : "write") << " of " << n << " B at 0x" << std::hex
        << address + done << " failed: " << gp.get_response_string();
      throw std::runtime_error(s.str());
    }
    done += n;
  }
}

}  // namespace

void write_tensor(tlm::tlm_base_initiator_socket_b<>& socket, const TensorMap& map, const std::vector<float>& values,
                  sc_core::sc_time& delay, std::uint64_t max_bytes) {
  if (values.size() != map.rows * map.row_elements)
    throw std::invalid_argument("tensor '" + map.name + "': " + std::to_string(values.size()) + " values for " +
                                std::to_string(map.rows) + " rows of " + std::to_string(map.row_elements));
  std::vector<std::uint8_t> bytes;
  for (const Chunk& c : map.chunks) {
    bytes.resize(c.rows * map.row_bytes());
    encode(map.dtype, values.data() + c.first_row * map.row_elements, bytes.data(), c.rows * map.row_elements);
    transfer(*socket.get_base_port().operator->(),
             tlm::TLM_WRITE_COMMAND, c.address, bytes.data(), bytes.size(), delay, max_bytes);
  }
}

std::vector<float> read_tensor(tlm::tlm_base_initiator_socket_b<>& socket, const TensorMap& map, sc_core::sc_time& delay,
                               std::uint64_t max_bytes) {
  std::vector<float> values(map.rows * map.row_elements, 0.0f);
  std::vector<bool> have(map.rows, false);
  std::vector<std::uint8_t> bytes;
  for (const Chunk& c : map.chunks) {
    if (have[c.first_row]) continue;  // a copy of rows already read
    bytes.resize(c.rows * map.row_bytes());
    transfer(*socket.get_base_port().operator->(),
             tlm::TLM_READ_COMMAND, c.address, bytes.data(), bytes.size(), delay, max_bytes);
    decode(map.dtype, bytes.data(), values.data() + c.first_row * map.row_elements, c.rows * map.row_elements);
    std::fill(have.begin() + static_cast<std::ptrdiff_t>(c.first_row),
              have.begin() + static_cast<std::ptrdiff_t>(c.first_row + c.rows), true);
  }
  return values;
}

void write_descriptor(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, const JobDescriptor& d,
                      sc_core::sc_time& delay) {
  std::array<std::uint8_t, desc::kBytes> bytes = encode(d);
  transfer(*socket.get_base_port().operator->(), tlm::TLM_WRITE_COMMAND, address, bytes.data(), bytes.size(), delay,
           bytes.size());
}

void write_lens(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, const std::vector<std::uint64_t>& lens,
                sc_core::sc_time& delay) {
  std::vector<std::uint64_t> words = {lens.size()};
  words.insert(words.end(), lens.begin(), lens.end());
  transfer(*socket.get_base_port().operator->(), tlm::TLM_WRITE_COMMAND, address,
           reinterpret_cast<std::uint8_t*>(words.data()), 8 * words.size(), delay, 4096);
}

JobResult read_result(tlm::tlm_base_initiator_socket_b<>& socket, std::uint64_t address, sc_core::sc_time& delay) {
  std::array<std::uint8_t, 16> bytes{};
  transfer(*socket.get_base_port().operator->(), tlm::TLM_READ_COMMAND, address + desc::kStatusAt, bytes.data(),
           bytes.size(), delay, bytes.size());
  JobResult r;
  std::uint32_t code = 0;
  std::memcpy(&r.status, bytes.data(), 4);
  std::memcpy(&code, bytes.data() + 4, 4);
  std::memcpy(&r.cycles, bytes.data() + 8, 8);
  r.error = static_cast<ErrorCode>(code);
  return r;
}

}  // namespace kb::vp
