"""SkyPilot round trip: every exported task / service YAML of the examples passes SkyPilot's own
schemas, and its numbers equal the plan's JSON.

SkyPilot (`pip install skypilot`) is not in the `test` extra: it pins click < 8.2, which breaks
import-linter (tests/test_layers.py), and `sky.Task.from_yaml` looks region and instance type up
in SkyPilot's online catalog (no network in tests). So the checks run against SkyPilot's schemas
(sky.utils.schemas of skypilot 0.14.1, saved in skypilot_schemas.json) with SkyPilot's validator
(Draft 7 + its two enum keywords, sky/utils/validator.py); where skypilot is importable they also
run through sky's own validate_schema and sky.Task.from_yaml_config (minus region/instance type).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from export_cases import BATCH, SERVE, TRAIN, train_plans

from optimizer import __version__, api
from optimizer.errors import ConfigError

HERE = Path(__file__).parent
SCHEMAS = json.loads((HERE / "skypilot_schemas.json").read_text())


def _enum(case_sensitive: bool) -> Any:
    def check(validator: Any, enums: list[str], instance: Any, schema: Any) -> Any:
        del validator, schema
        fold = (lambda s: s) if case_sensitive else (lambda s: str(s).lower())
        if fold(instance) not in [fold(e) for e in enums]:
            yield jsonschema.ValidationError(f"{instance!r} is not one of {enums!r}")

    return check


SkyValidator = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    validators={"case_insensitive_enum": _enum(False), "case_sensitive_enum": _enum(True)},
)


def _sky() -> Any:
    try:
        import sky
        from sky.utils import common_utils, schemas
    except Exception:  # not installed (see the module docstring)
        return None
    return sky, common_utils, schemas


def sky_check(doc: dict[str, Any]) -> None:
    """Validate a task (or service) document as SkyPilot's loader does."""
    SkyValidator(SCHEMAS["task"]).validate(doc)
    SkyValidator(SCHEMAS["resources"]).validate(doc["resources"])
    if "service" in doc:
        SkyValidator(SCHEMAS["service"]).validate(doc["service"])
    found = _sky()
    if found is None:
        return
    sky, common_utils, schemas = found
    common_utils.validate_schema(doc, schemas.get_task_schema(), "Invalid task YAML: ")
    common_utils.validate_schema(doc["resources"], schemas.get_resources_schema(), "Invalid resources: ")
    offline = {
        **doc,
        "resources": {k: v for k, v in doc["resources"].items() if k not in ("region", "instance_type")},
    }
    if offline["resources"].get("cloud") == "kubernetes":
        offline["resources"].pop("cloud")
    task = sky.Task.from_yaml_config(offline)
    assert task.num_nodes == doc.get("num_nodes", 1)
    if "service" in doc:
        assert task.service is not None and task.service.min_replicas == doc["service"]["replicas"]


def _load(text: str) -> dict[str, Any]:
    assert text.startswith("# exported by ccopt"), text[:80]
    return yaml.safe_load(text)


CLOUD_TRAIN = {
    name: r for name, r in {**TRAIN, **BATCH}.items() if any(p["kind"] == "cloud" for p in train_plans(r))
}


@pytest.mark.parametrize("name", sorted(CLOUD_TRAIN))
def test_task_yaml_of_every_example_loads_and_matches_the_plan(name: str) -> None:
    result = CLOUD_TRAIN[name]
    files = api.export(result, "skypilot").files
    plans = {p["name"] if "name" in p else result["job"]["name"]: p for p in train_plans(result)}
    clouds = [p for p in plans.values() if p["kind"] == "cloud"]
    assert len(files) == len(clouds)  # one file per cloud job (owned boxes: slurm)
    for f in files:
        doc = _load(f.text)
        sky_check(doc)
        p = plans[f.job]
        lay = p["layout"]
        res, env = doc["resources"], doc["envs"]
        gpu_name, count = res["accelerators"].split(":")
        assert doc["num_nodes"] == p["instances"]
        assert int(count) * doc["num_nodes"] == p["gpus"]
        assert res["instance_type"] == p["instance"]
        assert res.get("region", "unspecified") == p["region"]  # no region named: SkyPilot picks
        assert res["use_spot"] is (p["pricing"] == "spot")
        layout = [int(env[f"CCOPT_{k}"]) for k in ("DP", "TP", "PP", "CP")]
        assert layout == [lay["dp"], lay["tp"], lay["pp"], lay.get("cp") or 1]
        assert layout[0] * layout[1] * layout[2] * layout[3] == p["gpus"]
        micro, accum = int(env["CCOPT_MICRO_BATCH"]), int(env["CCOPT_GRAD_ACCUM"])
        assert micro * accum * layout[0] == p["global_batch"] == int(env["CCOPT_GLOBAL_BATCH"])
        assert int(env["CCOPT_STEPS"]) == p["steps"] and int(env["CCOPT_ZERO_STAGE"]) == lay["zero_stage"]
        assert "torchrun" in doc["run"] and "$SKYPILOT_NODE_RANK" in doc["run"]


@pytest.mark.parametrize("name", sorted(SERVE))
def test_service_yaml_of_every_serving_example(name: str) -> None:
    result = SERVE[name]
    deployments = result["plan"]["deployments"]
    cloud = [d for d in deployments if d["provider"] not in ("owned", "buy")]
    if not cloud:  # bought boxes only: Slurm, not SkyServe
        with pytest.raises(ConfigError, match="export slurm"):
            api.export(result, "skypilot")
        assert len(api.export(result, "slurm").files) == len(deployments)
        return
    files = api.export(result, "skypilot").files
    assert len(files) == len(cloud)
    for f, d in zip(files, cloud, strict=True):
        doc = _load(f.text)
        sky_check(doc)
        assert doc["service"]["replicas"] == d["instances"]
        assert doc["resources"]["accelerators"].endswith(f":{d['gpus_per_instance']}")
        assert doc["resources"]["ports"] == 8000
        tp = int(re.search(r"--tensor-parallel-size (\d+)", doc["run"]).group(1))
        dp = re.search(r"--data-parallel-size (\d+)", doc["run"])
        per_instance = int(dp.group(1)) if dp else 1
        assert tp == d["tp"]
        assert tp * per_instance * doc["service"]["replicas"] == d["gpus"]  # every GPU serves
        assert per_instance * doc["service"]["replicas"] == d["replicas"]
        assert f"--max-num-seqs {d['batch']}" in doc["run"]


def test_the_validator_rejects_what_skypilot_rejects() -> None:
    """The checks above can fail: SkyPilot's schemas refuse a wrong type and an unknown field."""
    text = api.export(TRAIN["plan_llama7b_10days"], "skypilot").files[0].text
    doc = _load(text)
    sky_check(doc)
    for bad in ({"use_spot": "no"}, {"disk_size": "big"}, {"gpus": 8}):
        with pytest.raises(jsonschema.ValidationError):
            SkyValidator(SCHEMAS["resources"]).validate({**doc["resources"], **bad})
    with pytest.raises(jsonschema.ValidationError):
        SkyValidator(SCHEMAS["task"]).validate({**doc, "num_nodes": "one"})


def test_header_names_plan_cost_p90_catalog_and_version() -> None:
    result = TRAIN["plan_llama7b_10days"]
    p = result["plan"]
    head = api.export(result, "skypilot").files[0].text.split("\nname:")[0]
    assert f"ccopt {__version__}" in head
    assert f"${p['cost_usd']:,.2f}" in head and f"P90: ${p['cost_usd_p90']:,.2f}" in head
    assert f"prices as of {result['catalog']['as_of']}" in head
    assert result["job"]["name"] in head and p["instance"] in head


def test_owned_boxes_are_not_a_skypilot_task() -> None:
    result = TRAIN["plan_bert_base_finetune_8gb"]  # an owned RTX 2070
    assert result["plan"]["kind"] == "owned"
    with pytest.raises(ConfigError, match="export slurm"):
        api.export(result, "skypilot")


def dump_schemas() -> None:
    """Refresh skypilot_schemas.json from the installed skypilot (maintainers)."""
    import importlib.metadata

    found = _sky()
    assert found is not None, "pip install skypilot first"
    _, _, schemas = found
    doc = {
        "skypilot_version": importlib.metadata.version("skypilot"),
        "source": SCHEMAS["source"],
        "task": schemas.get_task_schema(),
        "resources": schemas.get_resources_schema(),
        "service": schemas.get_service_schema(),
    }
    (HERE / "skypilot_schemas.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    dump_schemas()
