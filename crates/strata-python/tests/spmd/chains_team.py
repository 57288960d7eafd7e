"""Generated array-API chains (tests/chains.py) on team arrays, each value against numpy.
Prints one JSON line per rank.
    python chains_team.py [COUNT] [FIRST_SEED]"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import chains  # noqa: E402

import strata  # noqa: E402
import strata.array_api as xp  # noqa: E402

count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
first = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
wrong = []
for seed in range(first, first + count):
    description, bad = chains.chain(xp, seed, device=strata.world)
    if bad:
        wrong.append(f"seed {seed}: {bad} in {description}")
print(json.dumps({"rank": strata.world.rank, "wrong": wrong, "chains": count}), flush=True)
