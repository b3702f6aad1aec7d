# A deadline for the few tests whose work is a long run (hundreds of cycles, or minutes of
# emulated chip time). The suite's per-test --timeout 900 (scripts/test.sh) is a hang guard sized
# for tests of a few minutes; these take 5-6 minutes alone on the quiet development machine and
# 13-14 minutes beside a 2-core CPU hog (docs/testing.md, "The whole suite"), so a slower machine
# beside a hog would pass 900 s with nothing wrong. 1800 s is about five times their quiet time.
# A hang guard only: no test asserts on time.
import pytest

LONG_RUN_TIMEOUT_S = 1800
LONG_RUN = pytest.mark.timeout(LONG_RUN_TIMEOUT_S)
