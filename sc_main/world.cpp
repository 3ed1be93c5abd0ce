#include "sc_main/world.h"

#include <cstdlib>
#include <stdexcept>

#ifdef KERNBENCH_WITH_MPI
#include <mpi.h>
#endif

namespace kb::cli {

namespace {
constexpr int kTag = 7;
#ifdef KERNBENCH_WITH_MPI
MPI_Comm parts_comm = MPI_COMM_NULL;
#endif
// Set by OpenMPI's launcher (and PMIx-based ones) in every rank it starts.
bool under_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr; }
}  // namespace

bool World::built_with_mpi() {
#ifdef KERNBENCH_WITH_MPI
  return true;
#else
  return false;
#endif
}

World& World::get() {
  static World world;
  return world;
}

World::World() {
#ifdef KERNBENCH_WITH_MPI
  if (!under_mpirun()) return;
  MPI_Init(nullptr, nullptr);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
  if (under_mpirun() && std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr &&
      std::string(std::getenv("OMPI_COMM_WORLD_SIZE")) != "1")
    throw std::runtime_error("started by mpirun, but this kernbench was built without MPI (install libopenmpi-dev "
                             "and rebuild)");
#endif
}

World::~World() {
#ifdef KERNBENCH_WITH_MPI
  if (parts_comm != MPI_COMM_NULL) MPI_Comm_free(&parts_comm);
  if (initialised_) MPI_Finalize();
#endif
}

void World::send(int to, const std::string& text) const {
#ifdef KERNBENCH_WITH_MPI
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, kTag, MPI_COMM_WORLD);
#else
  (void)to;
  (void)text;
  throw std::logic_error("World::send in a world of one rank");
#endif
}

std::optional<std::pair<int, std::string>> World::poll() const {
#ifdef KERNBENCH_WITH_MPI
  int waiting = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &waiting, &status);
  if (!waiting) return std::nullopt;
  return receive();
#else
  return std::nullopt;
#endif
}

std::pair<int, std::string> World::receive() const {
#ifdef KERNBENCH_WITH_MPI
  MPI_Status status;
  MPI_Probe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return {status.MPI_SOURCE, text};
#else
  throw std::logic_error("World::receive in a world of one rank");
#endif
}

void World::join_parts(bool member) {
#ifdef KERNBENCH_WITH_MPI
  if (!initialised_) return;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank_, &parts_comm);
  if (parts_comm == MPI_COMM_NULL) return;
  MPI_Comm_rank(parts_comm, &part_rank_);
  MPI_Comm_size(parts_comm, &part_count_);
#else
  (void)member;
#endif
}

std::vector<std::string> World::all_gather_parts(const std::string& mine) const {
#ifdef KERNBENCH_WITH_MPI
  if (parts_comm == MPI_COMM_NULL) throw std::logic_error("World::all_gather_parts outside the parts' group");
  const int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<std::size_t>(part_count_)), at(sizes.size(), 0);
  MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, parts_comm);
  for (std::size_t i = 1; i < sizes.size(); ++i) at[i] = at[i - 1] + sizes[i - 1];
  std::string all(static_cast<std::size_t>(at.back() + sizes.back()), '\0');
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), at.data(), MPI_CHAR, parts_comm);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) out.push_back(all.substr(static_cast<std::size_t>(at[i]), static_cast<std::size_t>(sizes[i])));
  return out;
#else
  return {mine};
#endif
}

}  // namespace kb::cli
