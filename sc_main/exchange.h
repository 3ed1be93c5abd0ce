#pragma once
// How the processes of a run split over processes talk while they simulate coupled SIPs
// (platform/split_run.h, docs/parallel.md): --jobs parts through a pipe each way between
// every two of them, MPI ranks through MPI (World).
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "platform/split_run.h"

namespace kb::cli {

// Another process of the split run stopped, so this one cannot go on: its error is the
// run's (exit code 3, which a --jobs parent reports only when no part has another).
inline constexpr int kPeerStoppedExit = 3;
struct PeerStopped : std::runtime_error {
  PeerStopped() : std::runtime_error("another process of the split run stopped") {}
};

// The descriptors of a --jobs part's pipes: for each other part j, the read end from it
// at first + 2j and the write end to it at first + 2j + 1.
struct PipePlan {
  std::uint32_t rank = 0, parts = 1;
  int first = 0;
  std::string text() const;  // "RANK,PARTS,FIRST" (--exchange)
};
// nullopt for anything but "RANK,PARTS,FIRST" with RANK < PARTS.
std::optional<PipePlan> parse_pipe_plan(const std::string& text);

// The parent's side: makes the pipes between `parts` parts, and gives for each part the
// (parent's descriptor, part's descriptor) pairs its worker gets (spawn_self); close()
// the parent's copies once the workers have started.
class PipeMesh {
 public:
  explicit PipeMesh(std::uint32_t parts);
  ~PipeMesh() { close(); }
  PipeMesh(const PipeMesh&) = delete;
  PipeMesh& operator=(const PipeMesh&) = delete;
  PipePlan plan(std::uint32_t rank) const { return {rank, parts_, first_}; }
  std::vector<std::pair<int, int>> descriptors(std::uint32_t rank) const;
  void close();

 private:
  std::uint32_t parts_;
  int first_ = 0;
  std::vector<std::vector<std::array<int, 2>>> pipes_;  // [from][to]: read end, write end
};

// A --jobs part's side.
class PipeExchange final : public PartExchange {
 public:
  explicit PipeExchange(const PipePlan& plan);
  std::uint32_t rank() const override { return plan_.rank; }
  std::uint32_t parts() const override { return plan_.parts; }
  std::vector<std::string> all_gather(const std::string& mine) override;

 private:
  PipePlan plan_;
  std::vector<std::string> inbox_;  // per part: bytes read, not yet taken
};

// An MPI rank's side, among the ranks that simulate parts (World::join_parts).
class MpiExchange final : public PartExchange {
 public:
  MpiExchange();
  std::uint32_t rank() const override { return rank_; }
  std::uint32_t parts() const override { return parts_; }
  std::vector<std::string> all_gather(const std::string& mine) override;

 private:
  std::uint32_t rank_, parts_;
};

}  // namespace kb::cli
