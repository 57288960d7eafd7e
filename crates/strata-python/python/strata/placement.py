"""Where arrays live (seed 003): devices, and teams of processes under `mpirun`.

Run a script under `mpirun -n P python script.py` (or `strata launch --ranks P python
script.py`) and every rank runs it, as with mpi4py. `strata.world` is the team of every rank
(`world.rank`, `world.size`; a team of one without a launcher, where MPI is not needed).
Placing an array on it — `device=strata.world` in any creation function of
`strata.array_api` or `asarray` — partitions it along its first axis in blocks: each rank
allocates and computes only its rows, and the arrays stay resident across calls and time steps:

    import numpy as np, strata, strata.array_api as xp
    u = xp.asarray(np.load("u0.npy"), device=strata.world)   # each rank keeps its rows
    for step in range(500):
        lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1]
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + (0.1 + 0.001 * step) * lap
    strata.save("u.npy", u)          # every rank writes its block into one file
    if strata.world.rank == 0:
        print(np.asarray(u).sum())    # explicit: gathers the whole array on every rank

Slices of step 1 of a team array are shifts: the rows a rank's part reads from its neighbours
arrive by a halo exchange whose width comes from the slices. Elementwise operations run on the
blocks; reductions combine the ranks' partials; assignments of integers and slices of step 1
(`u[1:-1, 1:-1] = …`, `u[0, :] = …`) update each rank's rows. Other operations (a step slice,
`matmul`, sorting) compute on the whole array, gathered, and distribute the result again.
Reading a team array (`np.asarray(u)`, `u.to_numpy()`, `float(s)`) gathers it on every rank:
call it on every rank. The first failing rank's exception ends every rank (`MPI_Abort`), so a
job never hangs on a rank that is gone.
"""

from __future__ import annotations

import atexit
import sys
import traceback
from typing import Any, Optional

from ._strata import spmd as _spmd

_WORLD_RANKS = 0  # the IR's `team = world`: every rank of the job


class Team:
    """The team of every rank of the job this process runs in (`strata.world`)."""

    __slots__ = ()

    @property
    def rank(self) -> int:
        """This process's rank, `0 … size-1` (0 without a launcher)."""
        return _join()[0]

    @property
    def size(self) -> int:
        """The number of ranks (1 without a launcher)."""
        return _join()[1]

    def barrier(self) -> None:
        """Waits until every rank has called it."""
        _join()
        _spmd.barrier()

    def timings(self) -> dict:
        """This rank's distributed runs so far: `runs`, and summed over them `exchange_s` and
        `halo_bytes` (halo exchanges and fetched rows: the time spent waiting for them),
        `overlap_s` (computation that ran while halo exchanges were under way: each step's
        interior, computed before waiting for its halo), `wait_s` (the part of `exchange_s` spent
        completing those exchanges after the interior: small when MPI moved the bytes meanwhile,
        as Strata's progress thread makes it), `read_s` (making each run's held blocks)
        and `combine_s` (reductions' and gathers' collectives), `gathered_bytes` (other ranks'
        blocks this rank received whole: `np.asarray` of a team array, or an operation that
        needs the whole array). A loop's share is a difference.
        `prepared` counts the programs this process has prepared (compiled, or loaded from the
        cache): a loop that plans and compiles once does not increase it after its first step."""
        return _spmd.totals()

    def __repr__(self) -> str:
        rank, size = _join()
        return f"strata.world (rank {rank} of {size})"


world = Team()
"""The team of every rank of the job (a team of one without `mpirun`)."""


class Place:
    """A placement: a device (`"cpu"`, the host) and optionally a team it is distributed over
    (along the first axis), as the Rust front end's `Place`. `device=strata.world` is
    `Place(team=strata.world)`."""

    __slots__ = ("device", "team")

    def __init__(self, device: str = "cpu", team: Optional[Team] = None):
        if not isinstance(device, str):
            raise TypeError(f"device {device!r}: a device name such as 'cpu'")
        if team is not None and not isinstance(team, Team):
            raise TypeError(f"team {team!r}: strata.world (the team of every rank)")
        self.device = device
        self.team = team

    def __eq__(self, other: Any) -> bool:
        other = place_of(other) if isinstance(other, (str, Team)) else other
        return isinstance(other, Place) and (self.device, self.team is None) == (other.device, other.team is None)

    def __hash__(self) -> int:
        return hash((self.device, self.team is None))

    def __repr__(self) -> str:
        if self.team is None:
            return f"strata.Place(device={self.device!r})"
        return f"strata.Place(device={self.device!r}, team=strata.world)"


def gpu(n: int = 0) -> Place:
    """CUDA GPU `n` as a device (`device=strata.gpu(0)`, `x.to_device(strata.gpu(0))`): what
    reads arrays placed there computes there (compute follows data); needs an NVIDIA driver and
    NVRTC (docs/runtime.md, "GPUs"). The array's values come back to the host after each
    evaluation."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"gpu({n!r}): a GPU's number, 0 or more")
    return Place(f"gpu{n}")


def place_of(device: Any) -> Optional[Place]:
    """The placement a `device=` argument names (None: the default, the host)."""
    if device is None:
        return None
    if isinstance(device, Place):
        return device
    if isinstance(device, Team):
        return Place(team=device)
    if isinstance(device, str):
        return Place(device)
    raise ValueError(f"device {device!r}: 'cpu', a device name, strata.world or a strata.Place")


def device_arg(device: Any) -> Any:
    """A `device=` argument as the extension takes it: a name, or `(name, ranks)` for a team
    (joining the job first, so arrays on the team hold only this rank's block)."""
    p = place_of(device)
    if p is None:
        return None
    if p.team is None:
        return p.device
    if p.device != "cpu":
        raise ValueError(f"device {p!r}: team arrays live on the host (`cpu`) so far")
    _join()
    return (p.device, _WORLD_RANKS)


_joined: Optional[tuple] = None


def _join() -> tuple:
    """`(rank, size)`, joining the MPI job on first use when started by a launcher."""
    global _joined
    if _joined is None:
        _joined = _spmd.join()
        if _spmd.joined():
            atexit.register(_spmd.finalize)
            if _joined[1] > 1:
                _install_abort_on_error()
    return _joined


def _distributed() -> bool:
    """Whether this process runs in a job under a launcher (joining it on first use): team
    values are then distributed over its ranks; without one the team is this process."""
    _join()
    return _spmd.joined()


def _install_abort_on_error() -> None:
    """An uncaught exception on one rank prints its traceback (with the rank) and ends every
    rank: the others would otherwise wait for it forever in their next collective."""
    previous = sys.excepthook

    def hook(kind, value, tb):  # pragma: no cover - exercised under mpirun by the tests
        sys.stderr.write(f"strata: rank {_joined[0]} of {_joined[1]} failed:\n")
        sys.stderr.write("".join(traceback.format_exception(kind, value, tb)))
        sys.stderr.flush()
        if kind is KeyboardInterrupt:
            previous(kind, value, tb)
        _spmd.abort(1)

    sys.excepthook = hook


def save(path: Any, x: Any) -> None:
    """Writes the array `x` into the `.npy` file `path`. A team array's ranks each write their
    block at its offset (call it on every rank); a host array is written by rank 0. The file
    appears whole or not at all."""
    import os

    from .array_api import Array, asarray

    a = x if isinstance(x, Array) else asarray(x)
    _spmd.save(a._x, os.fspath(path))


def load_array(path: Any, *, device: Any = None) -> Any:
    """Reads a `.npy` file into a `strata.array_api` array at `device`: on a team each rank
    reads only its rows (at their byte offsets), so the whole array is never held by one rank."""
    import os

    import numpy as np

    from .array_api import Array, asarray

    p = place_of(device)
    if p is None or p.team is None:
        return asarray(np.load(os.fspath(path)), device=device)
    _join()
    return Array._new(_spmd.load(os.fspath(path), p.device, _WORLD_RANKS))
