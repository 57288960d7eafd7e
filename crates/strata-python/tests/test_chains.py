"""Generated array-API chains of 5–30 operations (chains.py) against numpy, on shapes with every
extent from 1 to 8: 30 in CI, `STRATA_CHAINS_COUNT` of them for a long run. Team arrays run the
same generator under mpirun (test_spmd.py)."""

import os

import pytest

import chains
import strata.array_api as xp

COUNT = int(os.environ.get("STRATA_CHAINS_COUNT", "30"))


@pytest.mark.parametrize("seed", range(COUNT))
def test_generated_chain_matches_numpy(seed):
    description, wrong = chains.chain(xp, seed)
    assert not wrong, f"{wrong} in {description}"
