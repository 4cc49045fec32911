"""The `ccopt` command line: parses, calls optimizer.api, renders (rich tables or --json)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn, Protocol, TextIO, cast

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from optimizer import __version__
from optimizer.cli.common import EXIT_INTERNAL, EXIT_OK, notices_on_stderr
from optimizer.cli.lazy import LazyGroup

__all__ = ["app", "main"]

app = typer.Typer(
    cls=LazyGroup,  # subcommands are imported when run (cli/lazy.py), not at start-up
    name="ccopt",
    help="The cheapest GPU cluster that finishes an ML job on time.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,  # help texts mention TOML tables like [capacity]: print them as written
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ccopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit"
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Show the traceback of an internal error (exit code 3) instead of one line"
    ),
) -> None:
    """The cheapest GPU cluster that finishes an ML job on time.

    Exit codes: 0 an answer, 1 infeasible (with the binding constraint and the nearest fix),
    2 bad input (one line naming the file, field and allowed values), 3 internal error.
    """
    ctx.with_resource(notices_on_stderr())  # notes and warnings: one line each, for this command


#: the click command of `app`, built on first use (typer rebuilds it on every call: ~45 ms)
_built: list[TyperGroup] = []


def _command() -> TyperGroup:
    if not _built:
        _built.append(cast(TyperGroup, typer.main.get_command(app)))
    return _built[0]


class _ReaderMayLeave:
    """stdout that outlives its reader: when the reader closes the pipe early (`ccopt plan … |
    head -1`), the rest of the output is dropped quietly and the command still exits with its
    answer's code (0 or 1), not click's 1 for a broken pipe (which would read as "infeasible")."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop_the_rest()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop_the_rest()

    def _drop_the_rest(self) -> None:
        self.reader_left = True
        devnull = os.open(os.devnull, os.O_WRONLY)  # the interpreter's final flush goes there
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the real stream's
        return getattr(self._stream, name)


class _UsageError(Protocol):
    """What click's usage errors carry (typer ≥ 0.28 raises them as TyperException)."""

    exit_code: int

    def show(self) -> None: ...

    def format_message(self) -> str: ...


def _usage_error(exc: TyperException) -> NoReturn:
    """A bad flag or argument told in one line (bare `ccopt`: the help), with click's code."""
    if not hasattr(exc, "format_message"):  # not a usage error: a bug
        raise exc
    error = cast(_UsageError, exc)
    if type(exc).__name__ == "NoArgsIsHelpError":  # bare `ccopt`: the help, as before
        error.show()
        sys.exit(error.exit_code)
    ctx = getattr(exc, "ctx", None)  # UsageError and its kin carry the command's context
    where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
    message = " ".join(error.format_message().split())
    sys.stderr.write(f"error: {message}{where}\n")
    sys.exit(error.exit_code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: our errors exit 1/2 with one line (common.user_errors);
    anything else is a bug, reported in one line with exit code 3 (`--debug`: traceback)."""
    args = sys.argv[1:] if argv is None else argv
    stdout = sys.stdout
    if not isinstance(stdout, _ReaderMayLeave) and hasattr(stdout, "fileno"):
        stdout = _ReaderMayLeave(stdout)
    try:  # not standalone: usage errors come back here, to be told in one line
        with contextlib.redirect_stdout(stdout):  # type: ignore[type-var]
            code = _command().main(args=args, prog_name="ccopt", standalone_mode=False)
    except TyperException as exc:  # click's usage errors (typer's base for them): exit 2, one line
        _usage_error(exc)
    except Exception as exc:
        if "--debug" in args:
            raise
        sys.stderr.write(
            f"internal error: {type(exc).__name__}: {exc} — a bug in ccopt; rerun "
            "with --debug for the traceback and report it\n"
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else EXIT_OK)
