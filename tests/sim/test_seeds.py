# One derivation of every random stream's seed (sim/seeds.py). The expected values are
# worked out by hand from the formulas the streams used before the module existed, so seeded
# results (scenario draws, sensor noise, fit's stand-in) stay what they were.
import re

import pytest

from surepick.sim import scenarios, seeds
from tests.conftest import REPO


@pytest.mark.parametrize("stream,seed,cycle,expected", [
    ("scenario", 1, 1, 1000003 + 7919),
    ("scenario", 5000, 0, 5000 * 1000003 - 2 ** 32),        # kept to 32 bits: 5,000,015,000 - 4,294,967,296
    ("sensor_noise", 3, 2, 3002),
    ("sensor_noise", 0, 1000, 1000),                         # = seed 1 cycle 0 (the docstring says so)
    ("refit_noise", 3, 2, 3002 + 7919),
    ("stand_in", 1, 0, 1 + 0x5EED),
    ("power_cut", 42, 0, 42),
])
def test_each_stream_keeps_the_seed_it_had(stream, seed, cycle, expected):
    assert seeds.derive(stream, seed, cycle) == expected


def test_the_streams_of_one_cycle_differ_and_an_unknown_one_is_refused():
    got = {s: seeds.derive(s, 7, 3) for s in seeds.STREAMS}
    assert len(set(got.values())) == len(got)
    with pytest.raises(KeyError):
        seeds.derive("no_such_stream", 7, 3)


def test_the_scenario_draws_come_from_the_scenario_stream():
    assert scenarios.rng_for(9, 2).random() == seeds.rng("scenario", 9, 2).random()


def test_no_other_module_seeds_a_generator_of_its_own():
    # Generators are made from derive()'s seeds; the plant's noise streams are the one SeedSequence
    # spawned from its sensor-noise seed (sim/sensor_models.py).
    made = re.compile(r"random\.Random\(|default_rng\(|SeedSequence\(|random\.seed\(")
    found = []
    from surepick.host.source_tree import CODE_FOLDERS
    for path in sorted(p for f in CODE_FOLDERS for p in (REPO / f).rglob("*.py") if "node_modules" not in p.parts):
        rel = path.relative_to(REPO).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if made.search(line) and rel not in ("sim/seeds.py", "sim/sensor_models.py"):
                if "seeds.derive(" not in line:
                    found.append("%s:%d: %s" % (rel, n, line.strip()))
    assert not found, "\n".join(found)
