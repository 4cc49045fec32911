"""`ccopt schema COMMAND` for every command and job file; list commands validate against it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.cli.schema_cmd import INPUTS
from optimizer.report.contract import OUTPUTS

runner = CliRunner()
COMMANDS = [
    "plan",
    "compare",
    "estimate",
    "calibrate",
    "calibrate-list",
    "serve",
    "serve-compare",
    "rl",
    "batch",
    "prices",
    "gpus",
    "models",
    "stacks",
    "sizing",
    "replan",
    "measure",
]


def test_every_command_with_json_output_has_a_schema():
    assert set(COMMANDS) == set(OUTPUTS)
    for name in [*COMMANDS, *INPUTS]:
        result = runner.invoke(app, ["schema", name])
        assert result.exit_code == 0, (name, result.stderr)
        jsonschema.Draft202012Validator.check_schema(json.loads(result.stdout))


def test_unknown_schema_is_bad_input():
    result = runner.invoke(app, ["schema", "plans"])
    assert result.exit_code == 2 and "allowed: plan, compare" in result.stderr


@pytest.mark.parametrize("command", ["prices", "gpus", "models", "stacks"])
def test_list_commands_validate_against_their_schema(command, no_user_state, monkeypatch):
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    out = runner.invoke(app, [command, "--json"])
    assert out.exit_code == 0, out.stderr
    schema = json.loads(runner.invoke(app, ["schema", command]).stdout)
    rows = json.loads(out.stdout)
    assert rows
    jsonschema.validate(rows, schema, cls=jsonschema.Draft202012Validator)


def test_job_file_schema_documents_every_field():
    schema = json.loads(runner.invoke(app, ["schema", "job"]).stdout)
    constraints = schema["$defs"]["Constraints"]["properties"]
    assert "gpu_types" in constraints and "gpus" not in constraints
    assert "old name: gpus" in constraints["gpu_types"]["description"]
    assert "stack" in schema["$defs"]["Workload"]["properties"]
