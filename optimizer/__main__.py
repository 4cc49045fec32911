"""`python -m optimizer` and the `ccopt` script run the ccopt CLI."""

import os


def run() -> None:
    """The CLI, with the garbage collector paused until the command's modules are imported
    (optimizer/startup.py), and pydantic's plugin look-up off.

    pydantic reads the entry points of every installed distribution when it builds its first
    validator, to find plugins (~30-40 ms of `ccopt plan` on the 7B example, measured with
    paired runs); the CLI validates only its own job files and output, which no plugin is
    meant to observe. A PYDANTIC_DISABLE_PLUGINS the user set is kept, and pydantic obeys it.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # optimizer/__init__.py and optimizer/startup.py import nothing else: the collector is
    # paused before any library is imported
    from optimizer import startup  # lazy: nothing is imported before the variable is set

    startup.pause()
    from optimizer.cli import main  # lazy: after the collector is paused

    main()


if __name__ == "__main__":
    run()
