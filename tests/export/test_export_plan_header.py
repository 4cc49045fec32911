"""Every training export carries the plan's run as a `ccopt-plan: {...}` JSON header line
(through json.dumps, in a comment or DeepSpeed's `_ccopt` list), and `ccopt calibrate
--from-plan` reads back the very request `ccopt estimate --from-plan` builds from the plan."""

from __future__ import annotations

import json

import pytest

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.inputs.training_logs import plan_header
from optimizer.report.export import common


def test_the_reader_and_the_writer_agree_on_the_prefix():
    assert plan_header.PLAN_HEADER_PREFIX == common.PLAN_HEADER_PREFIX


@pytest.mark.parametrize(
    "stack", ["megatron-core", "deepspeed", "hf-trainer", "torchtitan", "torchtune", "llm-foundry"]
)
def test_every_exported_file_reads_back_as_the_plans_request(stack_plans, tmp_path, stack):
    result = stack_plans[stack]
    expected = api.plan_row_request(result)
    exported = api.export(result, "all").files
    assert exported
    for f in exported:
        path = tmp_path / f.name
        path.write_text(f.text, encoding="utf-8")
        options = api.plan_file_options(path)
        assert api.request_from_options(options) == expected, f.name


def test_a_saved_plan_json_reads_as_its_plan_row(stack_plans, tmp_path):
    result = next(iter(stack_plans.values()))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    assert api.request_from_options(api.plan_file_options(path)) == api.plan_row_request(result)


def test_a_hostile_model_name_stays_one_comment_line(stack_plans, tmp_path):
    result = json.loads(json.dumps(next(iter(stack_plans.values()))))
    result["job"]["model_ref"] = "evil\nrm -rf / # \u2028 ’"
    text = api.export(result, "torchrun").files[0].text
    header = [ln for ln in text.splitlines() if "ccopt-plan:" in ln]
    assert len(header) == 1 and header[0].startswith("# ccopt-plan: {")
    path = tmp_path / "x.sh"
    path.write_text(text, encoding="utf-8")
    assert api.plan_file_options(path)["model"] == "evil\nrm -rf / # \u2028 ’"


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("# just a comment\n", "no 'ccopt-plan:' header line"),
        ("# ccopt-plan: {not json\n", "line 1: the plan header is not JSON"),
        ("# ccopt-plan: [1, 2]\n", "line 1: the plan header is not a JSON object"),
        ('# ccopt-plan: {"gpus_per_node": 8}\n', "unknown field 'gpus_per_node'"),
        ('# ccopt-plan: {"tp": {"a": 1}}\n', "tp must be a number, string or boolean"),
    ],
)
def test_a_bad_header_is_refused_naming_file_and_line(tmp_path, text, phrase):
    path = tmp_path / "plan.sh"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        api.plan_file_options(path)
    assert str(err.value).startswith(f"--from-plan: {path}") and phrase in str(err.value)
