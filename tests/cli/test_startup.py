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
    threshold = gc.get_threshold()
    yield
    startup._paused[0] = False
    gc.unfreeze()
    gc.set_threshold(*threshold)
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


_BUILD_A_VALIDATOR = """
import os, sys
from optimizer.cli import startup
startup.skip_plugin_discovery()
from pydantic import BaseModel
class Point(BaseModel):
    x: int
assert Point(x="3").x == 3
loader = sys.modules["pydantic.plugin._loader"]
print("metadata" if "importlib.metadata" in sys.modules else "no-metadata",
      "real" if "entry_points" in vars(loader) else "stand-in")
"""


def _validator_run(plugins_env: str | None) -> list[str]:
    """Build a first pydantic validator in a fresh interpreter after skip_plugin_discovery:
    whether importlib.metadata got imported and which loader pydantic ended up with."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if plugins_env is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = plugins_env
    done = subprocess.run(
        [sys.executable, "-c", _BUILD_A_VALIDATOR], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.split()


@pytest.mark.parametrize("off", ["__all__", "1", "true"])
def test_plugins_off_builds_validators_without_reading_package_metadata(off: str) -> None:
    assert _validator_run(off) == ["no-metadata", "stand-in"]


def test_plugins_on_hands_over_to_pydantics_own_loader() -> None:
    # without the variable pydantic must look for plugins as usual (entry points read)
    assert _validator_run(None) == ["metadata", "real"]


def test_the_stand_in_answers_as_pydantics_loader_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic.plugin import _loader as real

    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "__all__")
    assert tuple(startup._get_plugins()) == tuple(real.get_plugins()) == ()


def test_any_other_name_asked_of_the_stand_in_comes_from_pydantics_loader() -> None:
    code = (
        "import sys\n"
        "from optimizer.cli import startup\n"
        "startup.skip_plugin_discovery()\n"
        "from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP\n"
        "print(PYDANTIC_ENTRY_POINT_GROUP, 'entry_points' in vars(sys.modules['pydantic.plugin._loader']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["pydantic", "True"]  # the real loader took over
