//===- MeshGroup.h - which group of a mesh a rank is in ---------*- C++ -*-===//
//
// Shared by the MPI and the NCCL runtimes: a mesh shape comes packed
// (spmdMeshWithAxis, SpmdRuntime.h), ranks are laid out row-major (last
// axis fastest), and the group over a mask of axes is identified by the
// coordinates outside the mask (its color) while the coordinates inside,
// row-major, give the rank's position in it (its key) — the order compiled
// programs assume for gathered and scattered chunks.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_MESHGROUP_H
#define SPMD_RUNTIME_MESHGROUP_H

#include "Spmd/Runtime/SpmdRuntime.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spmd::runtime {

inline std::vector<int64_t> unpackMeshShape(int64_t packed) {
  std::vector<int64_t> shape;
  for (int32_t a = 0; a < SPMD_MESH_MAX_AXES; ++a) {
    int64_t size = spmdMeshAxisSize(packed, a);
    if (size == 0)
      break;
    shape.push_back(size);
  }
  return shape;
}

struct GroupPosition {
  int64_t meshSize = 1; ///< ranks in the mesh
  int64_t color = 0;    ///< which group (coordinates outside the mask)
  int64_t key = 0;      ///< position in the group (coordinates inside)
};

inline GroupPosition groupPosition(int64_t packed, int64_t mask, int64_t rank) {
  std::vector<int64_t> shape = unpackMeshShape(packed);
  GroupPosition g;
  for (int64_t s : shape)
    g.meshSize *= s;
  std::vector<int64_t> coord(shape.size());
  int64_t rest = rank;
  for (int a = static_cast<int>(shape.size()) - 1; a >= 0; --a) {
    coord[a] = rest % shape[a];
    rest /= shape[a];
  }
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (mask & (int64_t(1) << a))
      g.key = g.key * shape[a] + coord[a];
    else
      g.color = g.color * shape[a] + coord[a];
  }
  return g;
}

/// The world ranks of the group over `mask` that `rank` is in, in group
/// order.
inline std::vector<int64_t> groupMembers(int64_t packed, int64_t mask,
                                         int64_t rank) {
  GroupPosition mine = groupPosition(packed, mask, rank);
  std::vector<int64_t> members;
  for (int64_t r = 0; r < mine.meshSize; ++r)
    if (groupPosition(packed, mask, r).color == mine.color)
      members.push_back(r);
  return members;
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_MESHGROUP_H
