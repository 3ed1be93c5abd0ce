#include "models/link/link_packet.h"

namespace kb {

void encode(const LinkPacket& p, ByteWriter& out) {
  out.put(p.at);
  out.put(p.link);
  out.put(p.forward);
  out.put(p.seq);
  out.put(p.stage);
  for (const std::uint32_t v : {p.dst_sip, p.dst_cube, p.dst_pe, p.src_sip, p.src_cube, p.src_pe, p.tag}) out.put(v);
  out.put(p.bytes);
  out.put(p.timing_only);
  out.put_all(p.data);
  out.put_all(p.route);
  out.put<std::uint64_t>(p.crossings.size());
  for (const LinkCrossing& c : p.crossings) {
    out.put_text(c.direction.view());
    out.put(c.start);
    out.put(c.busy_end);
    out.put(c.arrive);
  }
  out.put(p.account);
}

LinkPacket decode_packet(ByteReader& in) {
  LinkPacket p;
  p.at = in.get<std::uint64_t>();
  p.link = in.get<std::uint32_t>();
  p.forward = in.get<bool>();
  p.seq = in.get<std::uint64_t>();
  p.stage = in.get<LinkPacket::Stage>();
  for (std::uint32_t* v : {&p.dst_sip, &p.dst_cube, &p.dst_pe, &p.src_sip, &p.src_cube, &p.src_pe, &p.tag})
    *v = in.get<std::uint32_t>();
  p.bytes = in.get<std::uint64_t>();
  p.timing_only = in.get<bool>();
  p.data = in.get_all<std::uint8_t>();
  p.route = in.get_all<std::uint32_t>();
  p.crossings.resize(in.get<std::uint64_t>());
  for (LinkCrossing& c : p.crossings) {
    c.direction = Name::intern(in.get_text());
    c.start = in.get<std::uint64_t>();
    c.busy_end = in.get<std::uint64_t>();
    c.arrive = in.get<std::uint64_t>();
  }
  p.account = in.get<PathAccount>();
  return p;
}

}  // namespace kb
