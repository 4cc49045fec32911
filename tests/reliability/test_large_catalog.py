"""A large price table is read in bounded memory (issue 29 item 5): every row validated as it
streams by, past LARGE_TABLE_ROWS only the KEEP_REGIONS cheapest rows of each machine kept, the
reduction stated, and the plan the same as on the whole table."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import pytest

from benchmarks.scale import big_catalog
from optimizer.errors import CatalogError
from optimizer.pricing import catalog
from optimizer.pricing.catalog import bundled_path
from optimizer.pricing.schema import KEEP_REGIONS, stream_rows

HEADER, *ROWS = bundled_path().read_text(encoding="utf-8").splitlines(keepends=True)


def _regions(prices: list[float]) -> str:
    """The bundled table's first row repeated in regions r0, r1, ... at these instance prices
    (per-GPU price kept consistent)."""
    first = next(csv.DictReader(io.StringIO(HEADER + ROWS[0])))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(first), lineterminator="\n")
    writer.writeheader()
    gpus = int(first["gpus_per_instance"])
    for k, price in enumerate(prices):
        writer.writerow({**first, "region": f"r{k}", "usd_per_hour": price, "usd_per_gpu_hour": price / gpus})
    return out.getvalue()


def test_the_cheapest_regions_of_a_machine_are_kept_in_file_order() -> None:
    # 20 regions of one machine at prices 20, 19, ..., 1 (r19 the cheapest), r5 tied with r19
    prices = [float(20 - k) for k in range(20)]
    prices[5] = 1.0
    table = stream_rows(_regions(prices).splitlines(keepends=True), "t.csv", reduce_over=10)
    assert table.read == 20 and table.reduced
    # by (price, region): r19 $1 and r5 $1 (tie: "r19" < "r5" as text, both kept), then r18 $2,
    # r17 $3, ... : the 8 cheapest are r5, r19, r18, r17, r16, r15, r14, r13
    assert len(table.rows) == KEEP_REGIONS == 8
    assert [r.region for r in table.rows] == ["r5", "r13", "r14", "r15", "r16", "r17", "r18", "r19"]


def test_regions_a_job_names_are_kept_whatever_their_price() -> None:
    # 20 regions at $20, $19, ..., $1: r0 and r1 (the dearest) are named by the job (e.g. its
    # data's region, where egress is free); they are kept beside the 8 cheapest (r12..r19)
    prices = [float(20 - k) for k in range(20)]
    lines = _regions(prices).splitlines(keepends=True)
    table = stream_rows(lines, "t.csv", reduce_over=10, keep_regions=("R0", "r1"))
    assert table.reduced
    assert [r.region for r in table.rows] == ["r0", "r1"] + [f"r{k}" for k in range(12, 20)]


def test_a_job_region_survives_the_reduction_end_to_end(tmp_path: Path, monkeypatch) -> None:
    """A reduced table (threshold lowered to 10 rows) still offers the region the job names."""
    path = tmp_path / "prices.csv"
    path.write_text(_regions([float(20 - k) for k in range(20)]), encoding="utf-8")
    monkeypatch.setattr(catalog, "LARGE_TABLE_ROWS", 10)
    catalog._rows_cached.cache_clear()
    plain = catalog.load_catalog_rows(path)
    named = catalog.load_catalog_rows(path, keep_regions=("r0",))
    catalog._rows_cached.cache_clear()
    assert "r0" not in {r.region for r in plain.rows}
    assert "r0" in {r.region for r in named.rows} and len(named.rows) == KEEP_REGIONS + 1
    assert "with every row of r0" in (named.age.note or "")


def test_a_small_table_is_kept_whole() -> None:
    table = stream_rows([HEADER, *ROWS], "t.csv", reduce_over=len(ROWS))
    assert not table.reduced and len(table.rows) == table.read == len(ROWS)


@pytest.mark.parametrize(
    ("bad", "phrase"),
    [("bogus-gpu", "unknown GPU id"), ("dup", "duplicate offering")],
)
def test_a_bad_row_past_the_threshold_is_still_an_error_naming_its_line(bad: str, phrase: str) -> None:
    lines = _regions([float(k + 1) for k in range(30)]).splitlines(keepends=True)
    if bad == "dup":
        lines.append(lines[3])  # r2 again, on line 32
    else:
        lines.append(lines[3].replace(",r2,", ",r99,").replace(lines[3].split(",")[3], "bogus-gpu"))
    with pytest.raises(CatalogError, match=rf"t\.csv: row 32, column '\w+': .*{phrase}"):
        stream_rows(lines, "t.csv", reduce_over=10)


def test_a_reduced_table_plans_as_the_whole_one_and_says_so(ccopt, tmp_path, monkeypatch) -> None:
    """The bundled table in 10 regions (benchmarks/scale.py), reduced past 1,000 rows: the same
    plan and cost as the bundled table, the note in the JSON catalog block and the plan line."""
    monkeypatch.setattr(catalog, "LARGE_TABLE_ROWS", 1000)
    path = tmp_path / "big.csv"
    rows = big_catalog(10, path)
    job = Path(__file__).resolve().parents[2] / "examples" / "llama7b_10days.toml"
    big = ccopt("plan", str(job), "--prices", str(path), "--json", "--alternatives", "0")
    small = ccopt("plan", str(job), "--json", "--alternatives", "0")
    assert big.code == small.code == 0, big.err
    big_json, small_json = json.loads(big.out), json.loads(small.out)
    assert big_json["plan"]["cost_usd"] == small_json["plan"]["cost_usd"]
    note = big_json["catalog"]["note"]
    assert f"{rows:,} rows read, the {KEEP_REGIONS} cheapest regions of each machine kept" in note
    assert "reduced while read" in ccopt("plan", str(job), "--prices", str(path), "--alternatives", "0").out


def test_printing_a_long_name_takes_time_linear_in_its_length(ccopt, tmp_path) -> None:
    """A 200,000-character job name: rich's repr highlighter alone would take ~8 minutes on it
    (quadratic: 40,000 characters took 17 s); printed plain it is well under the bound."""
    example = Path(__file__).resolve().parents[2] / "examples" / "llama7b_10days.toml"
    job = tmp_path / "long.toml"
    job.write_text(f'name = "{"n" * 200_000}"\n' + example.read_text().split("\n", 2)[2])
    start = time.perf_counter()
    run = ccopt("plan", str(job), "--alternatives", "0")
    assert run.code == 0, run.err[:300]
    assert time.perf_counter() - start < 15
    assert run.out.count("n") >= 200_000  # the name, wrapped to the console width


def test_the_regions_a_job_names() -> None:
    from optimizer.inputs.jobs.train import job_from_dict

    job = job_from_dict(
        {
            "model": {"preset": "llama-2-7b"},
            "workload": {"tokens": 1e9, "seq_len": 2048, "global_batch": 64},
            "constraints": {
                "regions": ["us-east-1"],
                "reserved_held": [
                    {"provider": "aws", "instance": "p4de.24xlarge", "region": "us-west-2", "count": 2}
                ],
            },
        }
    )
    assert job.named_regions() == ("us-east-1", "us-west-2")
