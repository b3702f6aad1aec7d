# run.json's `params`: a scenario's parameters as the run resolved them. Numbers, and for a choice
# parameter (sim/scenarios.py: estop's and pot_wire_broken's `state`) the chosen name; anything
# else is refused with one line naming the parameter. Values here are written out by hand from
# docs/run-record.md, not taken from a run.
import math

import pytest

from surepick.host.records import record_schema as schema
from surepick.shared_fsm.config import Config


def _meta(params):
    cfg = Config().to_dict()
    return {"format": "surepick-run", "format_version": 1, "kind": "host-sim", "scenario": "estop",
            "params": params, "seed": 3, "config": cfg, "loop_period_ms": cfg["loop_period_ms"], "cycles": 1}


@pytest.mark.parametrize("params", [{}, {"state": "LIFT"}, {"state": "none", "at_ms": 0.0, "rail": 1},
                                    {"offset_mm": 8.0, "yaw_deg": 20}])
def test_numbers_and_choice_names_are_accepted(params):
    schema.check_meta(_meta(params))


@pytest.mark.parametrize("value", [True, None, "", [1], {"a": 1}, math.nan, math.inf])
def test_anything_else_names_the_parameter(value):
    with pytest.raises(schema.FieldError) as e:
        schema.check_meta(_meta({"state": value}))
    assert str(e.value).startswith("params.state must be a finite number or a choice's name"), str(e.value)
