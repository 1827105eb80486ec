"""``events tail`` over many nodes: one thread per node runs the one-node tail, and all
of them write one merged stream (jsonl with a ``node`` field, or lines led by the node's
name). Each node keeps its own checkpoint, so each node's events come in its order and,
into a file, exactly once across crashes: a page goes to the file whole (under a lock,
then fsync) before its node's checkpoint moves, and at a restart each node skips the
lines of its own that the file holds after its checkpoint. A node that is down at the
start is retried in the background while the others flow."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nodecli.errors import NodecliError, UsageError
from nodecli.node.events.checkpoint import (
    Checkpoint,
    CheckpointFile,
    node_key,
    pause_for_tests,
    resume_path,
)
from nodecli.node.events.sinks import FileSink, Sink, TextSink
from nodecli.node.events.stop import GracefulStop
from nodecli.node.events.tail import TailInterrupted, TailOptions, tail
from nodecli.node.info import Status, node_info

if TYPE_CHECKING:
    from nodecli.http.client import Client

@dataclass(slots=True)
class NodeRun:
    """One node of a merged tail and how it went."""

    name: str
    client: Client
    checkpoint: CheckpointFile | None = None
    emitted: int = 0
    error: NodecliError | None = None
    interrupted: bool = False


class FleetStop(GracefulStop):
    """SIGINT/SIGTERM for many tail threads: the first asks every node to stop after the
    page it is writing (its checkpoint saved); a second one stops at once."""

    def __init__(self) -> None:
        super().__init__()
        self.event = threading.Event()

    def _handler(self, signum: int, frame: Any) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        if self.event.is_set():  # asked before this page: none of it is written
            raise KeyboardInterrupt
        yield
        if self.event.is_set():
            raise KeyboardInterrupt

    def sleep(self, seconds: float) -> None:
        if self.event.wait(max(0.0, seconds)):
            raise KeyboardInterrupt


class SharedOutput:
    """The one output of a merged tail: a file (appended, fsync'ed) or a text stream,
    written a page at a time under a lock so pages never interleave."""

    def __init__(self, *, file: FileSink | None = None, stream: IO[str] | None = None) -> None:
        self.file = file
        self.stream = stream
        self.lock = threading.Lock()
        if file is not None:
            file.drop_cut_line()  # a line cut by a crash; no thread is writing yet

    def sink_for(self, node: str) -> NodeSink:
        return NodeSink(self, node)


class NodeSink(TextSink):
    """What one node's tail sees of the shared output (a ``Sink``)."""

    def __init__(self, shared: SharedOutput, node: str) -> None:
        self.shared = shared
        self.node = node

    def write(self, chunk: str) -> None:
        with self.shared.lock:
            if self.shared.file is not None:
                self.shared.file.write(chunk)
            elif self.shared.stream is not None:
                self.shared.stream.write(chunk)
                self.shared.stream.flush()

    def position(self) -> dict[str, Any] | None:
        if self.shared.file is None:
            return None
        with self.shared.lock:
            return self.shared.file.position()

    def recover(self, cp: Checkpoint | None) -> list[str]:
        if self.shared.file is None:
            return []
        with self.shared.lock:  # no page is half written while the file is read
            return self.shared.file.recover(cp, node=self.node)


def with_node(name: str, event: dict[str, Any]) -> dict[str, Any]:
    """The event with ``node`` first (an event's own ``node`` field becomes
    ``event_node``, so the merged field always names the profile)."""
    out: dict[str, Any] = {"node": name}
    for key, value in event.items():
        out["event_node" if key == "node" else key] = value
    return out


def node_renderer(name: str, opts: TailOptions) -> Callable[
        [Sequence[tuple[dict[str, Any], str]]], str]:
    """The text of a node's page in the merged stream."""
    if opts.fmt == "jsonl":
        from nodecli.remote_json import escape_surrogates

        # (a lone surrogate an event's JSON escaped stays escaped: UTF-8 cannot carry it)
        return lambda items: "".join(
            escape_surrogates(json.dumps(with_node(name, obj), ensure_ascii=False)) + "\n"
            for obj, _ in items)
    base = opts.render
    if base is None:
        raise ValueError("a merged tail in a text format needs a render function")
    lead = f"{name}\t" if opts.fmt == "plain" else f"{name}  "
    return lambda items: "".join(lead + line for line in base(items).splitlines(True))


def checkpoint_for(name: str, client: Client, opts: TailOptions, *, state_dir: str | Path,
                   resume_name: str | None, output_file: Path | None) -> CheckpointFile | None:
    """A node's own checkpoint: ``--resume NAME`` (per node already) or, beside the
    output file, ``FILE.checkpoints/<profile>.json`` (profile names are file-safe)."""
    if resume_name is not None:
        path = resume_path(state_dir, client, resume_name, opts.flt)
    elif output_file is not None:
        path = Path(f"{output_file}.checkpoints") / f"{name}.json"
    else:
        return None
    return CheckpointFile(path, node=node_key(client), flt=opts.flt)


def merged_tail(runs: list[NodeRun], opts: TailOptions, *, state_dir: str | Path,
                out: IO[str], output_file: Path | None = None,
                say: Status | None = None, log: Status | None = None,
                progress: Callable[[int, Any], None] | None = None,
                stop: FleetStop | None = None,
                sink_for: Callable[[str], Sink] | None = None) -> list[NodeRun]:
    """Tail every node of ``runs`` into one output until each is caught up (or, with
    ``opts.follow``, until a signal). ``say`` gets one line per node event worth
    telling (down, retrying, resumed); a node's error ends only that node.
    ``sink_for(node)``, when given, is where a node's events go instead (``events
    ship``: the caller's sink, which the caller closes)."""
    if opts.max_events is not None or opts.until_type is not None:
        raise UsageError("--max-events and --until-type count one node's events: not with "
                         "--nodes/--all-nodes")
    if output_file is not None and opts.fmt != "jsonl":
        # a restart finds each node's lines after its checkpoint by their node field
        raise UsageError("a merged tail writes jsonl to a file (each line names its node)")
    from nodecli import dryrun

    if dryrun.active() and output_file is not None:
        raise dryrun.DryRunStop(f"would append events to {output_file}; nothing was "
                                "written (--dry-run)")
    stop = stop or FleetStop()
    locked: list[CheckpointFile] = []
    file: FileSink | None = None
    try:
        for run in runs:
            if run.checkpoint is not None:
                run.checkpoint.lock()
                locked.append(run.checkpoint)
        if sink_for is None:
            file = FileSink(output_file, opts.fmt) if output_file is not None else None
            sink_for = SharedOutput(file=file, stream=None if file else out).sink_for
        counter = _Counter(progress)
        threads = [threading.Thread(target=_run_node, name=f"tail-{run.name}", daemon=True,
                                    args=(run, replace(opts, render=node_renderer(run.name,
                                                                                  opts)),
                                          sink_for(run.name), stop, state_dir, say,
                                          log, counter))
                   for run in runs]
        stop.install()
        try:
            for thread in threads:
                thread.start()
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(0.2)  # short joins: a signal is handled between them
        except KeyboardInterrupt:  # the second signal: the threads die with the process
            for run in runs:
                run.interrupted = True
            raise
        finally:
            stop.restore()
        return runs
    finally:
        if file is not None:
            file.close()
        for checkpoint in locked:
            checkpoint.unlock()


class _Counter:
    """Events written by all nodes together, for the progress line."""

    def __init__(self, progress: Callable[[int, Any], None] | None) -> None:
        self.progress = progress
        self.total = 0
        self.lock = threading.Lock()

    def for_node(self) -> Callable[[int, Any], None] | None:
        progress = self.progress
        if progress is None:
            return None
        seen = [0]

        def one(written: int, last_time: Any) -> None:
            with self.lock:
                self.total += written - seen[0]
                seen[0] = written
                progress(self.total, last_time)

        return one


def _run_node(run: NodeRun, opts: TailOptions, sink: Sink, stop: FleetStop,
              state_dir: str | Path, say: Status | None, log: Status | None,
              counter: _Counter) -> None:
    """One node's tail. With ``follow`` a node that is down (at the start or later) is
    retried by the tail itself, in this thread, while the other threads go on."""
    tell = say or (lambda text: None)

    def status(text: str) -> None:  # the first attempt and the recovery, not each retry
        if text == "resumed" or text.startswith("reconnecting (attempt 1,"):
            tell(f"{run.name}: {text}")

    try:
        info = node_info(run.client, state_dir, log=log)
        state = tail(run.client, opts, sink, checkpoint=run.checkpoint, info=info,
                     status=status, notice=lambda text: tell(f"{run.name}: hint: {text}"),
                     warn=lambda text: tell(f"{run.name}: {text}"), stop=stop, drain=0,
                     progress=counter.for_node())
        run.emitted += state.emitted
    except TailInterrupted as exc:
        run.emitted += exc.state.emitted
        run.interrupted = True
        # (the tests' hook: this node ended by the first signal, its count noted; the
        # thread still alive, as one whose request is in flight at a second signal)
        pause_for_tests("node-stopped", run.name)
    except NodecliError as exc:
        run.error = exc
    except KeyboardInterrupt:
        run.interrupted = True
    except Exception as exc:  # noqa: BLE001 - a bug in one node's thread: said, exit 1
        # (uncaught, the thread would print a traceback and the command end with 0,
        # "wrote 0 events" from a node whose events were never written)
        run.error = NodecliError(f"internal error: {type(exc).__name__}: {exc}",
                                 hint="this is a bug in nodecli; the other nodes went on")
