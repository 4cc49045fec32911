"""`python -m optimizer` and the `ccopt` script run the ccopt CLI."""

import gc
import os


def run() -> None:
    """The CLI, with the garbage collector paused from the first import until the command's
    stack is loaded (optimizer/cli/startup.py), and pydantic's plugin look-up off.

    pydantic reads the entry points of every installed distribution when it builds its first
    validator, to find plugins (~30-40 ms of `ccopt plan` on the 7B example, measured with
    paired runs); the CLI validates only its own job files and output, which no plugin is
    meant to observe, and starts no subprocess. A PYDANTIC_DISABLE_PLUGINS the user set is kept
    (and obeyed: startup.skip_plugin_discovery).
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    was_on = gc.isenabled()
    gc.disable()
    from optimizer import method_cache  # lazy: after the collector is paused

    method_cache.install()  # dataclass methods compiled once, not on every run (~60 ms of plan)
    from optimizer.cli import main, startup  # lazy: after the collector is paused

    startup.skip_plugin_discovery()  # and its import of importlib.metadata (~10 ms)

    if was_on:
        startup.adopt_pause()
    main()


if __name__ == "__main__":
    run()
