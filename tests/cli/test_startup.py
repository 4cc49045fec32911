"""The collector paused while a command's modules are imported (optimizer/startup.py):
resumed in one place (cli/lazy.load_command), with the start-up objects frozen, only when the
entry point paused it; and no module of pydantic, typer or the stdlib is patched to start faster."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from optimizer import startup
from optimizer.cli.lazy import load_command


@pytest.fixture
def collector():
    """The collector's state restored after the test (on, nothing frozen)."""
    yield
    startup._paused[0] = False
    gc.unfreeze()
    gc.enable()


def test_a_pause_by_the_entry_point_is_resumed_when_a_command_is_loaded(collector) -> None:
    startup.pause()
    assert not gc.isenabled()
    before = gc.get_freeze_count()
    load_command("models")  # the one place that resumes
    assert gc.isenabled()
    assert gc.get_freeze_count() > before  # what start-up built is out of later collections
    gc.disable()
    startup.resume()  # once only: a second resume leaves the collector as it is
    assert not gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off(collector) -> None:
    gc.disable()
    startup.pause()  # already off: not ours to turn back on
    startup.resume()
    assert not gc.isenabled()


def test_the_pause_comes_before_any_library_is_imported() -> None:
    """The entry point imports the pause from a module that imports nothing else: importing it
    from the cli package ran typer's, rich's and our CLI modules' imports with the collector on
    (136 young collections during `ccopt plan` on the 7B example, 85 once moved)."""
    probe = (
        "import sys; from optimizer import startup; "
        "print(sorted(m for m in sys.modules if m.startswith(('optimizer', 'typer', 'pydantic', 'rich'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['optimizer', 'optimizer.startup']"


def test_the_entry_point_runs_a_command_to_its_answer() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "optimizer", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("ccopt ")


_PLUGINS = """
import sys
from optimizer.__main__ import run
try:
    run()
except SystemExit:
    pass
import os
print(os.environ.get("PYDANTIC_DISABLE_PLUGINS"), "pydantic.plugin._loader" in sys.modules,
      type(sys.modules.get("pydantic.plugin._loader")).__name__)
"""


@pytest.mark.parametrize("given", [None, "my-plugin"])
def test_plugins_off_by_default_a_users_choice_kept_and_pydantics_loader_its_own(given: str | None) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if given is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = given
    done = subprocess.run(
        [sys.executable, "-c", _PLUGINS, "models"], capture_output=True, text=True, env=env, check=True
    )
    value, imported, kind = done.stdout.split()[-3:]
    assert value == (given or "__all__")
    assert (imported, kind) in {("False", "NoneType"), ("True", "module")}  # pydantic's own module
