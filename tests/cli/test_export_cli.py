"""`ccopt plan|serve|batch JOB --export FORMAT [-o DIR]`: files to stdout or into DIR, exit codes,
and the numbers in the files against the JSON of the same run."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def test_plan_export_to_stdout_is_the_file() -> None:
    plan = json.loads(runner.invoke(app, ["plan", str(EXAMPLES / "llama7b_10days.toml"), "--json"]).stdout)[
        "plan"
    ]
    result = runner.invoke(app, ["plan", str(EXAMPLES / "llama7b_10days.toml"), "--export", "skypilot"])
    assert result.exit_code == 0, result.stderr
    doc = yaml.safe_load(result.stdout)  # nothing but the YAML on stdout
    assert doc["num_nodes"] == plan["instances"]
    assert doc["resources"]["instance_type"] == plan["instance"]
    assert doc["resources"]["accelerators"].endswith(f":{plan['gpus_per_instance']}")


def test_plan_export_into_a_folder_keeps_the_answer(tmp_path: Path) -> None:
    out = tmp_path / "launch"
    out.mkdir()  # ccopt creates no folder for an output
    # ZeRO-3 only: a plan every launcher format can run (ZeRO-2 is refused by the
    # Megatron formats, with the reason: tested elsewhere)
    job = tmp_path / "llama7b_10days.toml"
    text = (EXAMPLES / "llama7b_10days.toml").read_text()
    job.write_text(text.replace("[constraints]\n", "[constraints]\nzero_stages = [3]\n", 1))
    result = runner.invoke(app, ["plan", str(job), "--json", "--export", "all", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)["plan"]  # --json still prints the contract
    names = sorted(p.name for p in out.iterdir())
    stem = "llama-2-7b-pretrain-10d"
    for suffix in (
        "sky.yaml",
        "deepspeed.json",
        "torchrun.sh",
        "accelerate.sh",
        "megatron.sh",
        "nemo.sh",
        "sbatch",
    ):
        assert f"{stem}.{suffix}" in names
        assert "exported " in result.stderr and str(out / f"{stem}.{suffix}") in result.stderr
    ds = json.loads((out / f"{stem}.deepspeed.json").read_text())
    lay = plan["layout"]
    assert ds["train_batch_size"] == lay["micro_batch"] * lay["grad_accum"] * lay["dp"]
    assert lay["zero_stage"] == 3  # Megatron-LM runs ZeRO-3 as its FSDP2 path
    assert "--use-torch-fsdp2" in (out / f"{stem}.megatron.sh").read_text()
    assert not list(out.glob("*.torchtitan.toml"))  # another stack's config: only by name


def test_export_option_errors_exit_2_before_solving(tmp_path: Path) -> None:
    job = str(EXAMPLES / "llama7b_10days.toml")
    cases = [
        (["--export", "skypilot-yaml"], "allowed: skypilot"),
        (["--export", "skypilot", "--json"], "give -o DIR"),
        (["-o", str(tmp_path)], "only with --export"),
    ]
    (tmp_path / "file").write_text("x")
    cases.append((["--export", "slurm", "-o", str(tmp_path / "file")], "not a folder"))
    for extra, phrase in cases:
        result = runner.invoke(app, ["plan", job, *extra])
        assert result.exit_code == 2, (extra, result.stdout)
        assert phrase in result.stderr and "Traceback" not in result.stderr


def test_infeasible_plan_exports_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o"
    out.mkdir()
    result = runner.invoke(
        app, ["plan", str(EXAMPLES / "infeasible_70b_week.toml"), "--export", "slurm", "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "nothing exported" in result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_batch_exports_one_file_per_job_with_its_window(tmp_path: Path) -> None:
    job = str(EXAMPLES / "batch_12_finetunes.toml")
    data = json.loads(runner.invoke(app, ["batch", job, "--json"]).stdout)
    result = runner.invoke(app, ["batch", job, "--export", "slurm", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    scheduled = [j for j in data["jobs"] if j["status"] == "scheduled"]
    assert len(list(tmp_path.glob("*.sbatch"))) == len(scheduled)
    for j in scheduled:
        text = next(tmp_path.glob(f"{j['name']}.sbatch")).read_text()
        assert f"#SBATCH --nodes={j['instances']}" in text
        assert f"#SBATCH --begin=now+{round(j['start_hour'] * 60)}minutes" in text
        assert f"layout: dp {j['layout']['dp']} × tp {j['layout']['tp']}" in text


def test_serve_exports_a_service_per_deployment(tmp_path: Path) -> None:
    job = str(EXAMPLES / "serve_mistral7b_chatbot.toml")
    data = json.loads(runner.invoke(app, ["serve", job, "--json"]).stdout)
    result = runner.invoke(app, ["serve", job, "--export", "skypilot", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    files = sorted(tmp_path.glob("*.serve.yaml"))
    assert len(files) == len(data["plan"]["deployments"])
    doc = yaml.safe_load(files[0].read_text())
    assert doc["service"]["replicas"] == data["plan"]["deployments"][0]["instances"]
    bad = runner.invoke(app, ["serve", job, "--export", "deepspeed"])
    assert bad.exit_code == 2 and "skypilot or slurm" in bad.stderr


def test_a_missing_export_folder_is_bad_input_and_nothing_is_created(tmp_path: Path) -> None:
    """Issue 47: `--export -o a/b` created the folders, where the README says ccopt creates no
    folder for an output; now one line and exit 2, before any solving."""
    out = tmp_path / "a" / "b"
    result = runner.invoke(
        app, ["plan", str(EXAMPLES / "llama7b_10days.toml"), "--export", "slurm", "-o", str(out)]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: -o {out}: no such folder; allowed: an existing folder "
        "(ccopt creates no folder for an output)"
    )
    assert not (tmp_path / "a").exists() and result.stdout == ""
