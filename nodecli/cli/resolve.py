"""The resolve dialogue: what to do with each stopped operation, asked on a terminal
(or taken from the flags), sent, watched and summarised."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.errors import Interrupted, NodecliError
from nodecli.render import sanitize
from nodecli.render.operations import SUMMARY_COLUMNS, op_line
from nodecli.service.operations import stop_reason

CONFLICT_PROMPT = "[u]se existing folder, [r]ename, re[t]ry, [s]kip"
ERROR_PROMPT = "re[t]ry, [s]kip"
APPLY_PROMPT = "Apply this choice to all remaining conflicts?"
MAX_ROUNDS = 5  # times one operation may be asked about on a terminal (conflict after conflict)
_KEYS = {"u": "use-existing", "use": "use-existing", "use existing": "use-existing",
         "use existing folder": "use-existing", "r": "rename", "rename": "rename",
         "t": "retry", "retry": "retry", "s": "skip", "skip": "skip"}


def _ask(question: str, allowed: tuple[str, ...]) -> str:
    while True:
        answer = click.prompt(question, err=True, prompt_suffix=": ", show_default=False)
        action = _KEYS.get(answer.strip().lower())
        if action in allowed:
            return action
        click.echo(f"  please answer {' / '.join(a[0] if a != 'retry' else 't' for a in allowed)}",
                   err=True)


def _ask_folder_name() -> str:
    from nodecli.service.operations import folder_name_problem

    while True:
        name = click.prompt("New folder name", err=True, prompt_suffix=": ", default="",
                            show_default=False)
        problem = folder_name_problem(name)
        if problem is None:
            return name
        click.echo(f"  {problem}; try again", err=True)


class Decider:
    """Answers ``decide(op, index, total)`` from flags or by asking on the terminal."""

    def __init__(self, app: App, flag_choice: Any | None,
                 apply_to_all: bool | None = None) -> None:
        self.app = app
        self.flag_choice = flag_choice
        # --apply-to-all / --no-apply-to-all on a terminal: that answer, not asked
        self.apply_to_all = apply_to_all
        self.all_choice: Any = None

    def __call__(self, op: dict[str, Any], index: int, total: int) -> Any:
        from nodecli.service.operations import conflict_folder
        from nodecli.service.resolve import Choice, is_conflict

        if self.flag_choice is not None:
            return self.flag_choice
        conflict = is_conflict(op)
        head = (f"[{index}/{total}] operation {sanitize(op.get('id'))} "
                f"({sanitize(op.get('type'))}) stopped: ")
        if conflict:
            head += f"folder conflict on {sanitize(repr(conflict_folder(op)))}"
        else:
            head += sanitize(stop_reason(op))
        if conflict and self.all_choice is not None:
            if self.all_choice.action == "rename":
                # each folder needs its own new name: only that is asked
                click.echo(head + " -> rename (applied to all)", err=True)
                return Choice.prompted("rename", _ask_folder_name(), True)
            click.echo(head + f" -> {self.all_choice.label()} (applied to all)", err=True)
            return self.all_choice
        click.echo(head, err=True)
        if not conflict:
            return Choice.prompted(_ask(ERROR_PROMPT, ("retry", "skip")))
        action = _ask(CONFLICT_PROMPT, ("use-existing", "rename", "retry", "skip"))
        folder = _ask_folder_name() if action == "rename" else None
        apply_all = (self.apply_to_all if self.apply_to_all is not None
                     else click.confirm(APPLY_PROMPT, default=False, err=True))
        choice = Choice.prompted(action, folder, apply_all)
        if apply_all:
            self.all_choice = choice
        return choice


def run_resolve(app: App, session: Any, ops: list[dict[str, Any]], flag_choice: Any,
                interval: float, timeout: float | None, output_format: str,
                apply_to_all: bool | None = None) -> None:
    """Decide, send, watch and summarise (shared by resolve and workspaces create)."""
    from nodecli.service.resolve import resolve_operations

    app.budget.follow()  # each request within --deadline: prompts come between them

    sent: list[Any] = []

    def on_sent(out: Any) -> None:
        sent.append(out)
        name = f"operation {sanitize(out.ref.op_id)}"
        if out.error is not None:
            app.term.warn(f"{name}: {sanitize(out.detail)}")
        else:
            app.term.info(f"{name}: {sanitize(out.choice)} -> {sanitize(out.final_status)}")

    status = app.term.status

    def on_update(out: Any, elapsed: float) -> None:
        status.show(op_line(out.operation), plain=op_line(out.operation))

    try:
        # on a terminal, an operation that stops again (a second conflict) is asked
        # about again; with flags the service applies the choice itself (apply_to_all)
        rounds = MAX_ROUNDS if flag_choice is None else 1
        decider = Decider(app, flag_choice, apply_to_all)

        def decide(op: dict[str, Any], index: int, total: int) -> Any:
            status.clear()  # a live status line would swallow the prompt
            return decider(op, index, total)

        outcomes = resolve_operations(session.client, ops, decide,
                                      interval=interval, timeout=timeout, rounds=rounds,
                                      paths=session.paths, on_sent=on_sent,
                                      on_update=on_update)
    except (KeyboardInterrupt, click.Abort):
        status.clear()
        raise Interrupted(f"interrupted: {len(sent)} operation(s) had been sent a resolution; "
                          "the remaining ones were left untouched") from None
    finally:
        status.clear()
    rows = [o.row() for o in outcomes]
    app.term.table(rows, SUMMARY_COLUMNS, output_format)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        again = [o for o in failed if o.resumed and o.final_status == "stopped"]
        raise NodecliError(
            f"{len(failed)} of {len(outcomes)} operation(s) did not end in success",
            hint="some stopped again after they resumed: run 'nodecli operations resolve' "
                 "again for them" if again else None)
