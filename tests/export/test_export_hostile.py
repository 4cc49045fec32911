"""Launch files are data, never code (issue 41): hostile names are refused at input (exit 2,
naming the file and the field) or written as data, so every exported document parses to exactly
the keys ccopt writes and every exported script, run with its launchers stubbed, runs nothing
the plan did not intend; batch jobs whose names reduce to one file name get one file each.

The export side is tested on saved results with hostile strings put straight into them (names,
model, instance, region), so the exporters' own quoting is checked even where the input check
would have stopped the string first.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import yaml
from export_cases import BATCH, ROOT, SERVE, TRAIN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.errors import ConfigError

runner = CliRunner()

#: a marker file a hostile word would create if any shell ran it
MARK = "PWNED"
HOSTILE = [
    f"$(touch {MARK}1)",
    f"`touch {MARK}2`",
    f"x; touch {MARK}3; #",
    f"a' ; touch {MARK}4 ; echo '",
    f'b" ; touch {MARK}5 ; echo "',
    f"c && touch {MARK}6 || true",
    "key: value # not a comment",
    "{flow: [mapping]}",
    "- list item",
    "&anchor *alias !!python/object:os.system",
    '"""toml triple""" [table] = 1',
    "back\\slash ${HOME} $((1+1)) ~root *",
    "名前 🚀 ümlaut",
]
#: characters the inputs refuse (and the exporters escape if a result holds them anyway)
CONTROL = ["new\nline", "carriage\rreturn", "nul\x00byte", "line\u2028separator", "tab\tbed", "esc\x1b[31m"]

LAUNCHERS = [
    "torchrun", "deepspeed", "accelerate", "tune", "composer", "srun", "scontrol", "vllm",
    "text-generation-launcher", "trtllm-serve", "llama-server", "mlc_llm",
]  # fmt: skip


def _hostile_train(name: str) -> dict[str, Any]:
    """The headline plan with `name` as the job name, model, model path, instance and region."""
    result = copy.deepcopy(TRAIN["plan_llama7b_10days"])
    result["job"].update(name=name, model=name, model_ref=name)
    result["plan"].update(instance=name, region=name)
    return result


def _hostile_batch(name: str) -> dict[str, Any]:
    result = copy.deepcopy(BATCH["batch_12_finetunes"])
    for i, job in enumerate(result["jobs"]):
        job.update(name=f"{name} {i}", model=name, model_ref=name)
    return result


def _hostile_serve(name: str) -> dict[str, Any]:
    result = copy.deepcopy(SERVE["serve_8b_4090_vs_cloud"])
    result["job"].update(name=name, model=name, model_ref=name)
    return result


# ---- input: control characters are bad input, exit 2, one line naming file and field ----


@pytest.mark.parametrize("bad", CONTROL)
def test_job_name_with_a_control_character_is_bad_input(bad: str, tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    doc = tomllib.loads((ROOT / "examples" / "llama7b_10days.toml").read_text())
    doc["name"] = bad
    job.write_text(tomli_w.dumps(doc), encoding="utf-8")  # TOML escapes the character
    result = runner.invoke(app, ["plan", str(job), "--export", "torchrun"])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""  # no file printed
    line = result.stderr.strip()
    assert "\n" not in line and str(job) in line and "name:" in line and "control character" in line
    assert "allowed:" in line


@pytest.mark.parametrize("field", ["instance", "region", "provider"])
def test_overlay_row_with_a_newline_is_bad_input(field: str, tmp_path: Path) -> None:
    overlay = tmp_path / "prices.toml"
    row = {
        "provider": "internal",
        "instance": "dgx-a100-pod",
        "region": "lab",
        "gpu": "A100-80GB",
        "gpus_per_instance": 8,
        "usd_per_gpu_hour": 1.1,
    }
    row[field] = f"x\n$(touch {MARK})"
    overlay.write_text(
        "[[rows]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in row.items()), encoding="utf-8"
    )
    result = runner.invoke(
        app,
        ["plan", str(ROOT / "examples" / "llama7b_10days.toml"), "--export", "slurm"],
        env={"CCOPT_PRICES_OVERLAY": str(overlay)},
    )
    assert result.exit_code == 2, result.stdout
    line = result.stderr.strip()
    assert "\n" not in line and str(overlay) in line and f"rows[0].{field}" in line, line
    assert not (tmp_path / MARK).exists()


def test_the_api_refuses_a_control_character_in_any_job_string() -> None:
    job = tomllib.loads((ROOT / "examples" / "llama7b_10days.toml").read_text())
    job["workload"]["stack"] = "generic\r"
    with pytest.raises(ConfigError, match=r"workload.stack: control character U\+000D"):
        api.plan(job, offline=True)
    with pytest.raises(ConfigError, match="--train-script"):
        api.export(TRAIN["plan_llama7b_10days"], "torchrun", train_script="train.py\ntouch x")


# ---- export: every document parses to exactly the keys ccopt writes ----


def _documents(result: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for f in api.export(result, "all").files:
        if f.name.endswith(".yaml"):
            out.append((f.name, yaml.safe_load(f.text)))
        elif f.name.endswith(".json"):
            out.append((f.name, json.loads(f.text)))
        elif f.name.endswith(".toml"):
            out.append((f.name, tomllib.loads(f.text)))
    return out


SKY_TASK_KEYS = {"name", "resources", "num_nodes", "envs", "run"}


@pytest.mark.parametrize("name", HOSTILE + CONTROL)
def test_documents_keep_their_keys_and_the_name_as_data(name: str) -> None:
    clean = dict(_documents(TRAIN["plan_llama7b_10days"]))
    hostile = _documents(_hostile_train(name))
    assert {n.split(".", 1)[1] for n, _ in hostile} == {n.split(".", 1)[1] for n in clean}
    for file_name, doc in hostile:
        suffix = file_name.split(".", 1)[1]
        (same,) = [d for n, d in clean.items() if n.endswith(suffix)]
        assert set(doc) == set(same), file_name  # no key added, none lost
        if suffix == "sky.yaml":
            assert set(doc) == SKY_TASK_KEYS
            assert set(doc["envs"]) == set(same["envs"])
            assert doc["envs"]["CCOPT_MODEL"] == name  # the name is a value, byte for byte
            assert doc["resources"]["instance_type"] == name
        if suffix == "deepspeed.json":
            assert len(doc["_ccopt"]) == len(same["_ccopt"])  # header lines stay lines


# ---- scripts: run with the launchers stubbed, nothing unintended runs ----


def _stubs(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    for name in LAUNCHERS:
        f = bin_dir / name
        if name == "srun":  # run the command srun was given (drop its options), on "node 0"
            body = 'export SLURM_NODEID=0; while [ "${1#-}" != "$1" ]; do shift; done; exec "$@"'
        elif name == "scontrol":
            body = "echo node0"
        else:
            body = f'printf "%s\\0" {name} "$@" >> "{log}"; printf "\\n" >> "{log}"'
        f.write_text(f"#!/usr/bin/env bash\n{body}\n")
        f.chmod(f.stat().st_mode | stat.S_IEXEC)


def _sky_run(text: str) -> str:
    doc = yaml.safe_load(text)
    # SkyPilot sets `envs` as environment variables (values, not shell text)
    env = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in (doc.get("envs") or {}).items())
    return "#!/usr/bin/env bash\n" + env + doc["run"]


def _run_scripts(result: dict[str, Any], tmp_path: Path) -> list[list[str]]:
    """Run every script of `result` (SkyPilot run sections too) in tmp_path; the launchers' argv."""
    log = tmp_path / "argv.log"
    _stubs(tmp_path / "bin", log)
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "NODE_RANK": "0",
        "MASTER_ADDR": "10.0.0.1",
        "TRAIN_SCRIPT": "train.py",
        "SLURM_NNODES": "4",
        "SLURM_JOB_NODELIST": "node[0-3]",
        "SKYPILOT_NUM_NODES": "4",
        "SKYPILOT_NUM_GPUS_PER_NODE": "8",
        "SKYPILOT_NODE_RANK": "0",
        "SKYPILOT_NODE_IPS": "10.0.0.1\n10.0.0.2",
        "TORCHTUNE_CONFIG": "cfg",
        "FOUNDRY_YAML": "cfg",
        "TORCHTITAN_CONFIG": "cfg",
    }
    for f in api.export(result, "all").files:
        if f.name.endswith(".sky.yaml"):
            script = _sky_run(f.text)
        elif f.name.endswith((".sh", ".sbatch")):
            script = f.text
        else:
            continue
        path = tmp_path / f.name
        path.write_text(script if not f.name.endswith((".megatron.sh", ".nemo.sh")) else f.text)
        if f.name.endswith((".megatron.sh", ".nemo.sh")):  # sourced argument files
            cmd = ["bash", "-c", f'source "{path}"']
        else:
            cmd = ["bash", str(path)]
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (f.name, done.stderr)
    runs = log.read_bytes().decode().split("\0\n") if log.exists() else []
    return [r.split("\0") for r in runs if r]


@pytest.mark.parametrize("make", [_hostile_train, _hostile_batch, _hostile_serve])
def test_scripts_run_only_the_planned_launcher(make: Any, tmp_path: Path) -> None:
    for i, name in enumerate(HOSTILE + CONTROL):
        work = tmp_path / str(i)
        work.mkdir()
        runs = _run_scripts(make(name), work)
        assert runs, name  # the launchers did run
        assert all(argv[0] in LAUNCHERS for argv in runs)
        leftovers = [p.name for p in work.iterdir() if p.name.startswith(MARK)]
        assert leftovers == [], (name, leftovers)  # no hostile word ran
        if make is _hostile_serve and name in HOSTILE:  # the model reaches the server as one word
            assert any(name in argv for argv in runs), name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=40))
def test_any_name_leaves_every_script_valid_and_every_document_whole(name: str, tmp_path: Path) -> None:
    result = _hostile_train(name)
    for f in api.export(result, "all").files:
        if f.name.endswith((".sh", ".sbatch")):
            path = tmp_path / "s.sh"
            path.write_text(f.text)
            subprocess.run(["bash", "-n", str(path)], check=True, capture_output=True)
            # the header is comment lines only: no line of it is code
            header = [line for line in f.text.splitlines() if "plan: " in line]
            assert header and all(line.startswith("# ") for line in header)
        elif f.name.endswith(".yaml"):
            assert set(yaml.safe_load(f.text)) == SKY_TASK_KEYS
            assert yaml.safe_load(f.text)["envs"]["CCOPT_MODEL"] == name


# ---- no lost file ----


def test_clashing_job_names_get_one_file_each(tmp_path: Path) -> None:
    result = copy.deepcopy(BATCH["batch_12_finetunes"])
    scheduled = [j for j in result["jobs"] if j["status"] == "scheduled"]
    assert len(scheduled) >= 3
    # cloud jobs first: SkyPilot and DeepSpeed leave owned-box jobs out (how many of the 12 go
    # to the owned box follows the bands)
    renamed = sorted(scheduled, key=lambda j: j.get("kind") == "owned")
    for job, name in zip(renamed, ["Train A", "train-a", "train_a"], strict=False):
        job["name"] = name
    for fmt in ("torchrun", "slurm", "skypilot", "deepspeed"):
        files = api.export(result, fmt).files
        names = [f.name for f in files]
        assert len(set(names)) == len(names), (fmt, names)  # no file written over another
        stems = {f.name.split(".", 1)[0] for f in files if f.job in ("Train A", "train-a", "train_a")}
        if fmt in ("skypilot", "deepspeed"):  # jobs the format cannot run are left out, with reasons
            assert stems <= {"train-a", "train-a-2", "train-a-3"} and len(stems) >= 2, names
        else:
            assert len(files) == len(scheduled)
            assert stems == {"train-a", "train-a-2", "train-a-3"}, (fmt, names)
        if fmt == "skypilot":  # the SkyPilot task (cluster) names differ as well
            tasks = {yaml.safe_load(f.text)["name"] for f in files}
            assert len(tasks) == len(files)


def test_clashing_names_through_the_cli_write_three_files(tmp_path: Path) -> None:
    batch = tmp_path / "clash.toml"
    job = (
        '[job.model]\npreset = "llama-3-8b"\n[job.workload]\nkind = "lora"\ntokens = 1e7\n'
        "seq_len = 2048\nglobal_batch = 64\n[job.constraints]\ndeadline_days = 7\n"
    )
    jobs = "".join(f'[[job]]\nname = "{n}"\n{job}' for n in ("Train A", "train-a", "train_a"))
    batch.write_text("[capacity]\nhorizon_days = 30\n" + jobs)
    out = tmp_path / "out"
    out.mkdir()
    result = runner.invoke(app, ["batch", str(batch), "--export", "torchrun", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "train-a-2.torchrun.sh",
        "train-a-3.torchrun.sh",
        "train-a.torchrun.sh",
    ]
    for name in ("Train A", "train-a", "train_a"):  # each job's file says which job it is
        assert f"of job {name!r}:" in result.stderr
