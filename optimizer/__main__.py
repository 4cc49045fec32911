"""`python -m optimizer` and the `ccopt` script run the ccopt CLI."""

import gc


def run() -> None:
    """The CLI, with the garbage collector paused from the first import until the command's
    stack is loaded (optimizer/cli/startup.py)."""
    was_on = gc.isenabled()
    gc.disable()
    from optimizer.cli import main, startup  # lazy: after the collector is paused

    if was_on:
        startup.adopt_pause()
    main()


if __name__ == "__main__":
    run()
