"""optimizer.files: an output never replaces an input, a store, a device, a FIFO or a directory;
it replaces only an earlier ccopt output without --force, atomically; inputs are regular files."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from optimizer import files
from optimizer.errors import ConfigError
from optimizer.files import OutputFile, is_ccopt_output, open_input, output_file, read_input_text


def _refused(path: Path, phrase: str, **kw: object) -> str:
    with pytest.raises(ConfigError) as err:
        output_file(path, "-o", **kw)  # type: ignore[arg-type]
    text = str(err.value)
    assert phrase in text and str(path) in text and "\n" not in text, text
    return text


def test_a_new_file_is_written_atomically_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.html"
    out = output_file(target, "-o")
    assert out.write("<p>hi</p>") == target
    assert target.read_text() == "<p>hi</p>"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["out.html"]  # no temp file left


def test_a_file_ccopt_did_not_write_needs_force(tmp_path: Path) -> None:
    notes = tmp_path / "notes.html"
    notes.write_text("<h1>my notes</h1>")
    os.chmod(notes, 0o640)
    _refused(notes, "exists and is not an earlier ccopt output; add --force to replace it")
    assert notes.read_text() == "<h1>my notes</h1>"
    output_file(notes, "-o", force=True).write("new")
    assert notes.read_text() == "new"
    assert stat.S_IMODE(notes.stat().st_mode) == 0o640  # a replaced file keeps its mode


@pytest.mark.parametrize(
    "content, ours",
    [
        ('<!doctype html>\n<html><head><meta name="generator" content="ccopt 0.2.0">', True),
        ('<!doctype html><html><head><meta name="generator" content="Hugo">', False),
        (json.dumps({"kind": "ccopt-calibration-point", "model": "x"}), True),
        (json.dumps({"kind": "mine", "note": "made by ccopt 1"}), False),
        ('name = "made by ccopt 1"\n', False),  # the mark alone, in a text file, is not enough
        ("", False),
    ],
)
def test_earlier_outputs_are_recognised_by_content(tmp_path: Path, content: str, ours: bool) -> None:
    path = tmp_path / "f"
    path.write_text(content)
    assert is_ccopt_output(path) is ours


@pytest.mark.parametrize(
    "fmt", ["png", "pdf", "svg", "svgz", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps"]
)
def test_every_plot_format_carries_the_mark(tmp_path: Path, fmt: str) -> None:
    pytest.importorskip("matplotlib")
    from optimizer.cli.plot import PLOT_FORMATS, _pyplot, save_figure

    assert fmt in PLOT_FORMATS
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1, 1), dpi=20)
    ax.plot([0, 1], [0, 1])
    plain = tmp_path / f"plain.{fmt}"
    fig.savefig(plain, format=fmt)  # matplotlib's own file: not ours
    ours = tmp_path / f"ours.{fmt}"
    save_figure(fig, output_file(ours, "--plot"))
    plt.close(fig)
    assert not is_ccopt_output(plain)
    assert is_ccopt_output(ours)
    output_file(ours, "--plot")  # so replacing it needs no --force
    _refused(plain, "add --force")


def test_inputs_and_stores_are_never_replaced_even_with_force(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text('name = "x"\n')
    keep = [(job, "the job file")]
    _refused(job, "is the job file; ccopt never writes over an input", force=True, keep=keep)
    link = tmp_path / "link.html"
    link.symlink_to(job)
    hard = tmp_path / "hard.html"
    os.link(job, hard)
    for other in (link, hard):  # the same file under another name
        _refused(other, "the job file", force=True, keep=keep)
    store = tmp_path / "store" / "calibration.json"  # not there yet: still ccopt's
    store.parent.mkdir()
    _refused(store, "is where ccopt keeps the calibration store", keep=[(store, "the calibration store")])
    assert job.read_text() == 'name = "x"\n' and not store.exists()


def test_a_file_the_process_read_is_never_replaced(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"hidden_size": 8}')
    out = output_file(config, "-o", force=True)  # before it is read: allowed
    assert read_input_text(config) == '{"hidden_size": 8}'
    with pytest.raises(ConfigError, match="is a file this command read"):
        out.write("{}")  # the write checks again
    assert config.read_text() == '{"hidden_size": 8}'


def test_fifo_devices_directories_and_links_to_them_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    _refused(fifo, "is a FIFO (named pipe)", force=True)
    null = tmp_path / "null.html"
    null.symlink_to("/dev/null")
    _refused(null, "is a symlink to /dev/null, which is a character device", force=True)
    _refused(tmp_path, "is a directory", force=True)
    to_dir = tmp_path / "dir.html"
    to_dir.symlink_to(tmp_path)
    _refused(to_dir, "which is a directory", force=True)
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "nowhere.html")
    _refused(dangling, "which does not exist", force=True)
    loop = tmp_path / "loop.html"
    loop.symlink_to(loop)
    _refused(loop, "is a symlink loop", force=True)
    assert Path("/dev/null").is_char_device()


def test_a_symlink_to_an_earlier_output_writes_through(tmp_path: Path) -> None:
    real = tmp_path / "real.html"
    output_file(real, "-o").write('<meta name="generator" content="ccopt 0">old')
    link = tmp_path / "link.html"
    link.symlink_to(real)
    assert output_file(link, "-o").write('<meta name="generator" content="ccopt 0">new') == real
    assert link.is_symlink() and real.read_text().endswith("new")


def test_a_missing_folder_is_refused_not_created(tmp_path: Path) -> None:
    _refused(tmp_path / "no" / "r.html", f"directory {tmp_path / 'no'} does not exist")
    assert not (tmp_path / "no").exists()
    afile = tmp_path / "file"
    afile.write_text("")
    _refused(afile / "r.html", "is under a file, not a directory")


def _as_unprivileged(fn) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """Run fn() in a forked child without root's right to write anywhere: (exit code, message)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)  # nobody
            os.write(write, fn().encode())
        except BaseException as exc:
            os.write(write, f"{type(exc).__name__}: {exc}".encode())
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), message


def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="ccopt-ro-"))  # /tmp: reachable by nobody
    try:
        os.chmod(base, 0o755)
        folder = base / "ro"
        folder.mkdir(mode=0o555)
        os.chmod(folder, 0o555)

        def attempt() -> str:
            try:
                output_file(folder / "r.html", "-o").write("x")
            except ConfigError as exc:
                return str(exc)
            return "written"

        code, message = _as_unprivileged(attempt)
        assert code == 0, message
        assert message == f"-o: {folder / 'r.html'} cannot be written: directory {folder} is not writable"
    finally:
        shutil.rmtree(base)


def test_a_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "r.html"
    old.write_text('<meta name="generator" content="ccopt 0">old')

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    out = OutputFile(old, "-o")
    with pytest.raises(
        ConfigError, match=r"cannot be written \(No space left on device\); nothing was changed"
    ):
        out.write("new")
    assert old.read_text().endswith("old") and [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_inputs_are_regular_files_and_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "job.toml"
    os.mkfifo(fifo)
    result: list[str] = []

    def read() -> None:
        try:
            open_input(fifo, "job file")
        except ConfigError as exc:
            result.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert result == [f"job file {fifo}: is a FIFO (named pipe); allowed: a regular file"]
    with pytest.raises(ConfigError, match="is a character device"):
        open_input("/dev/zero", "--prices")
    with pytest.raises(IsADirectoryError):
        open_input(tmp_path)


def test_a_reused_inode_of_a_deleted_input_is_not_an_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read earlier in the process and deleted since: a new file given its inode number
    (what file systems do) is not that input."""
    new = tmp_path / "r.html"
    new.write_text('<meta name="generator" content="ccopt 0">')
    info = new.stat()
    monkeypatch.setitem(files._READ, (info.st_dev, info.st_ino), str(tmp_path / "deleted-config.json"))
    assert not files.was_read(new)
    output_file(new, "-o").write("new")  # accepted: an earlier output, not an input
    read_input_text(new)
    assert files.was_read(new)
