// A consumer built with nothing but `pkg-config --cflags --libs kernbench`: it
// elaborates an accelerator from an installed topology and reads its ID register.
#include <cstdio>
#include <cstring>

#include <kernbench/vp/accelerator.h>

int sc_main(int argc, char* argv[]) {
  if (argc != 2) return 2;
  kb::vp::Accelerator accel("accel", kb::Topology::load(argv[1]));
  tlm::tlm_generic_payload gp;
  std::uint32_t id = 0;
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(kb::vp::reg::kId);
  gp.set_data_ptr(reinterpret_cast<unsigned char*>(&id));
  gp.set_data_length(4);
  if (accel.control.get_base_export()->transport_dbg(gp) != 4 || id != kb::vp::reg::kIdValue) return 1;
  std::printf("pkg-config consumer: %s has %u PEs, ID register 0x%08x\n", accel.topology().name.c_str(),
              accel.topology().system.sips * accel.topology().cubes_per_sip() * accel.topology().cube.pes, id);
  return 0;
}
