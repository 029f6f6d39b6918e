"""How a step argument is laid out over the ranks (DTensor's names)."""

from dataclasses import dataclass


class Placement:
    pass


@dataclass(frozen=True)
class Shard(Placement):
    """Each rank holds its slice of dimension `dim` of the global tensor."""
    dim: int = 0

    def __post_init__(self):
        if self.dim < 0:
            raise ValueError("Shard(dim): dim must be >= 0")


@dataclass(frozen=True)
class Replicate(Placement):
    """Every rank holds the whole tensor (the same values)."""


def override_placement(tensor, placement: Placement):
    """Marks `tensor` (an argument of a compiled step) as laid out by
    `placement` instead of the default Shard(0); returns the tensor."""
    if not isinstance(placement, Placement):
        raise TypeError("override_placement: expected spmd.Shard(d) or "
                        "spmd.Replicate()")
    tensor._spmd_placement = placement
    return tensor
