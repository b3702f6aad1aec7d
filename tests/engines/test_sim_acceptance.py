# The simulator's acceptance numbers, measured by batch runs (slow tier: about 750 cycles).
import pytest

from surepick.engines import acceptance


@pytest.mark.slow
def test_acceptance_batches(tmp_path):
    res, out = acceptance.run(scale=1.0, jobs=2, out_dir=str(tmp_path))
    print(res)
    nom = res["nominal"]
    assert nom["cycles"] == 200 and nom["verified_placed"] == 200
    off = res["part_offset"]
    assert off["cycles"] == 200 and off["judge_placed"] == 200 and off["false_success"] == 0
    miss = res["part_missing"]
    assert miss["faults"] == {"GRASP_FAILED": 50} and miss["attempts"] == {"3": 50}
    for name, causes in acceptance.CAUSES.items():
        r = res[name]
        assert r["cycles"] == 50 and r["false_success"] == 0, name
        assert set(r["faults"]) <= set(causes) and sum(r["faults"].values()) == 50, (name, r["faults"])
    assert res["_all"]["agreement"] >= 0.995
    # reported, not gated: yawed parts; still never a false success
    assert res["part_offset_yawed"]["false_success"] == 0


def test_acceptance_quick_sample(tmp_path):
    # A small slice of the same checks for the quick tier.
    res, out = acceptance.run(scale=0.02, jobs=2, out_dir=str(tmp_path))
    assert res["nominal"]["verified_placed"] == res["nominal"]["cycles"] == 4
    assert res["part_missing"]["faults"] == {"GRASP_FAILED": 2}
    assert res["_all"]["agreement"] == 1.0
