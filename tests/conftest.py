"""Every property test draws the same examples on every run (Hypothesis derandomized, seeded from
the test itself): `make test` is a fixed sample, and a failure seen once is seen again. `make
test-sweeps` (KVCALC_SWEEP=all) lets them draw new examples each run, beside the whole sweeps."""

import os

from hypothesis import settings

settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("KVCALC_SWEEP") == "all" else "fixed")
