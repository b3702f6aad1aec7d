# A deadline for the few tests whose work is a long run (hundreds of cycles, or minutes of
# emulated chip time). The suite's per-test --timeout 900 (scripts/test.sh) is a hang guard sized
# for tests of a few minutes; how long these take, quiet and beside a CPU hog, on the machines
# measured so far is in docs/testing.md ("A long run has a deadline of its own"): a machine twice
# as slow as the slowest there, beside a hog, would pass 900 s with nothing wrong.
# A hang guard only: no test asserts on time.
import pytest

LONG_RUN_TIMEOUT_S = 1800
LONG_RUN = pytest.mark.timeout(LONG_RUN_TIMEOUT_S)
