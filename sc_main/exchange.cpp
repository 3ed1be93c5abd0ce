#include "sc_main/exchange.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sc_main/world.h"

namespace kb::cli {

std::string PipePlan::text() const {
  return std::to_string(rank) + "," + std::to_string(parts) + "," + std::to_string(first);
}

std::optional<PipePlan> parse_pipe_plan(const std::string& text) {
  unsigned rank = 0, parts = 0;
  int first = -1, used = 0;
  if (std::sscanf(text.c_str(), "%u,%u,%d%n", &rank, &parts, &first, &used) != 3 ||
      static_cast<std::size_t>(used) != text.size() || rank >= parts || first < 3)
    return std::nullopt;
  return PipePlan{rank, parts, first};
}

PipeMesh::PipeMesh(std::uint32_t parts) : parts_(parts), pipes_(parts, std::vector<std::array<int, 2>>(parts, {-1, -1})) {
  for (std::uint32_t a = 0; a < parts; ++a)
    for (std::uint32_t b = 0; b < parts; ++b) {
      if (a == b) continue;
      if (::pipe2(pipes_[a][b].data(), O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("--jobs: cannot make a pipe: ") + std::strerror(errno));
      first_ = std::max({first_, pipes_[a][b][0], pipes_[a][b][1]});
    }
  ++first_;  // a part's own descriptors lie above every pipe's, so none is overwritten
}

std::vector<std::pair<int, int>> PipeMesh::descriptors(std::uint32_t rank) const {
  std::vector<std::pair<int, int>> out;
  for (std::uint32_t j = 0; j < parts_; ++j) {
    if (j == rank) continue;
    const int at = first_ + 2 * static_cast<int>(j);
    out.emplace_back(pipes_[j][rank][0], at);      // from j
    out.emplace_back(pipes_[rank][j][1], at + 1);  // to j
  }
  return out;
}

void PipeMesh::close() {
  for (auto& row : pipes_)
    for (auto& p : row)
      for (int& fd : p)
        if (fd >= 0) ::close(std::exchange(fd, -1));
}

PipeExchange::PipeExchange(const PipePlan& plan) : plan_(plan), inbox_(plan.parts) {
  ::signal(SIGPIPE, SIG_IGN);  // a peer that went away is an error to report, not a signal that kills
  for (std::uint32_t j = 0; j < plan_.parts; ++j)
    if (j != plan_.rank)
      for (const int fd : {plan_.first + 2 * static_cast<int>(j), plan_.first + 2 * static_cast<int>(j) + 1})
        if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
          throw std::runtime_error("--exchange: descriptor " + std::to_string(fd) + " is not open");
}

std::vector<std::string> PipeExchange::all_gather(const std::string& mine) {
  // A message: its length, then its bytes. Every part writes to and reads from every
  // other at once (a large message fills a pipe), so the writes and reads interleave.
  std::string framed(sizeof(std::uint64_t), '\0');
  const std::uint64_t n = mine.size();
  std::memcpy(framed.data(), &n, sizeof n);
  framed += mine;
  std::vector<std::string> all(plan_.parts);
  all[plan_.rank] = mine;
  std::vector<std::size_t> written(plan_.parts, 0);
  std::vector<bool> got(plan_.parts, false);
  got[plan_.rank] = true;
  auto take = [&](std::uint32_t j) {  // a whole message from j in its inbox
    std::string& in = inbox_[j];
    std::uint64_t len = 0;
    if (in.size() < sizeof len) return;
    std::memcpy(&len, in.data(), sizeof len);
    if (in.size() < sizeof len + len) return;
    all[j] = in.substr(sizeof len, len);
    in.erase(0, sizeof len + len);
    got[j] = true;
  };
  for (std::uint32_t j = 0; j < plan_.parts; ++j)
    if (!got[j]) take(j);  // sent early, with the last round's
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::uint32_t, bool>> what;  // (part, writing)
    for (std::uint32_t j = 0; j < plan_.parts; ++j) {
      if (j == plan_.rank) continue;
      const int at = plan_.first + 2 * static_cast<int>(j);
      if (!got[j]) {
        fds.push_back({at, POLLIN, 0});
        what.emplace_back(j, false);
      }
      if (written[j] < framed.size()) {
        fds.push_back({at + 1, POLLOUT, 0});
        what.emplace_back(j, true);
      }
    }
    if (fds.empty()) return all;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("a split run's pipes: ") + std::strerror(errno));
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      const auto [j, writing] = what[k];
      if (writing) {
        const ssize_t w = ::write(fds[k].fd, framed.data() + written[j], framed.size() - written[j]);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (w < 0) throw PeerStopped();
        written[j] += static_cast<std::size_t>(w);
      } else {
        char buffer[1 << 16];
        const ssize_t r = ::read(fds[k].fd, buffer, sizeof buffer);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) throw PeerStopped();
        inbox_[j].append(buffer, static_cast<std::size_t>(r));
        take(j);
      }
    }
  }
}

MpiExchange::MpiExchange()
    : rank_(static_cast<std::uint32_t>(World::get().part_rank())),
      parts_(static_cast<std::uint32_t>(World::get().part_count())) {}

std::vector<std::string> MpiExchange::all_gather(const std::string& mine) { return World::get().all_gather_parts(mine); }

}  // namespace kb::cli
