"""The collector paused while a command starts (optimizer/cli/startup.py): resumed, with the
start-up objects frozen, only when the entry point paused it; left alone otherwise."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from optimizer.cli import startup


@pytest.fixture
def collector():
    """The collector's state restored after the test (on, nothing frozen)."""
    yield
    startup._paused[0] = False
    gc.unfreeze()
    gc.enable()


def test_a_pause_by_the_entry_point_is_resumed_with_the_start_up_frozen(collector) -> None:
    gc.disable()
    startup.adopt_pause()
    before = gc.get_freeze_count()
    assert startup.loaded(len) is len  # the value passes through
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # what start-up built is out of later collections
    gc.disable()
    startup.resume()  # once only: a second resume leaves the collector as it is
    assert not gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off(collector) -> None:
    gc.disable()
    startup.resume()
    assert not gc.isenabled()
    gc.enable()
    startup.adopt_pause()  # called with the collector on: nothing was paused, nothing to resume
    gc.disable()
    startup.resume()
    assert not gc.isenabled()


def test_the_entry_point_runs_a_command_to_its_answer() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "optimizer", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("ccopt ")
