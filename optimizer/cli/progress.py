"""What a long command is doing, on stderr, once it has run for over a second: one transient
rich line (a terminal only: logs and pipes stay clean). Used by batch (enumeration, then the
solver's objective and bound), report (solving, drawing) and measure (steps)."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

__all__ = ["Progress", "PROGRESS_AFTER_S"]

PROGRESS_AFTER_S = 1.0  # show progress only for work that runs longer than this


class Progress:
    """A context manager: `say(text)` sets the line shown once the work has run `after_s`."""

    def __init__(
        self, first: str = "working…", after_s: float = PROGRESS_AFTER_S, console: Any = None
    ) -> None:
        self.text = first
        self.after_s = after_s
        self.console = console if console is not None else Console(stderr=True)
        self.live: Any = None
        self.timer: threading.Timer | None = None

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self.timer = threading.Timer(self.after_s, self._start)
            self.timer.daemon = True
            self.timer.start()
        return self

    def _start(self) -> None:
        self.live = Live(self, console=self.console, refresh_per_second=4, transient=True)
        self.live.start()

    def __rich__(self) -> Text:  # plain text: a job name's brackets are not markup
        return Text.assemble(("ccopt ", "cyan"), self.text)

    def say(self, text: str) -> None:
        """The line to show from now on."""
        self.text = text
        if self.live is not None:
            self.live.refresh()

    def __exit__(self, *exc: Any) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.live is not None:
            self.live.stop()
