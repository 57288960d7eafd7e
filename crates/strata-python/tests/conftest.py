"""Settings for the whole package test run.

The array API front end runs small evaluations of programs it has not compiled yet in the
reference interpreter while their kernels compile in the background (tiered execution,
docs/python.md). These tests check the native kernels, so they compile at once
(`STRATA_TIERED=0`, read once when the first program is prepared); `test_tiers.py` runs its
programs in child processes with the tiers on."""

import os

os.environ.setdefault("STRATA_TIERED", "0")
