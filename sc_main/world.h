#pragma once
// The MPI world kernbench runs in (`mpirun -n R kernbench ...`): its rank and size, and
// text messages between ranks. Started without mpirun, or built without MPI (OpenMPI is
// optional), it is a world of one rank and nothing is sent.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kb::cli {

class World {
 public:
  // Initialised on first use: MPI_Init when started by mpirun and built with MPI.
  static World& get();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  static bool built_with_mpi();

  void send(int to, const std::string& text) const;
  // A message from any rank: the next one if one has arrived (poll), or waiting for it.
  std::optional<std::pair<int, std::string>> poll() const;
  std::pair<int, std::string> receive() const;

  // The ranks that simulate a part of a split run, as a group of their own: every rank
  // calls it once, saying whether it is one of them.
  void join_parts(bool member);
  int part_rank() const { return part_rank_; }  // among them
  int part_count() const { return part_count_; }
  // Every member's text, in their rank order (every member calls it together).
  std::vector<std::string> all_gather_parts(const std::string& mine) const;

 private:
  World();
  int rank_ = 0, size_ = 1;
  int part_rank_ = 0, part_count_ = 1;
  bool initialised_ = false;
};

}  // namespace kb::cli
