"""``nodecli completion bash|zsh|fish``: click's own completion scripts."""

from __future__ import annotations

import click

from nodecli.cli.app import App
from nodecli.cli.common import pass_app

PROG_NAME = "nodecli"
COMPLETE_VAR = "_NODECLI_COMPLETE"
SHELLS = ("bash", "zsh", "fish")


def completion_source(shell: str) -> str:
    """The completion script for ``shell`` (deterministic: no version probe, no dates)."""
    from click.shell_completion import ShellComplete, get_completion_class

    from nodecli.cli.root import cli

    comp_cls = get_completion_class(shell)
    if comp_cls is None:  # pragma: no cover - click.Choice guards this
        raise click.UsageError(f"unsupported shell {shell!r}")
    comp = comp_cls(cli, {}, PROG_NAME, COMPLETE_VAR)
    # ShellComplete.source, not BashComplete.source: the latter runs `bash` to check
    # its version and prints to stderr, which neither scripts nor generation want.
    return ShellComplete.source(comp)


@click.command(help="""Print the shell completion script for SHELL.

Completes commands, options and names: node users (also after -mu/-du), transfer
users, node and service profiles, checkpoint names and the access key ids known on this
machine (profiles, keys/, the emulator's state). A TAB never contacts a node.

\b
Install (pick your shell; new shells then complete):
  # bash (bash-completion 2):
  mkdir -p ~/.local/share/bash-completion/completions
  nodecli completion bash > ~/.local/share/bash-completion/completions/nodecli
  # zsh (with fpath+=(~/.zfunc) before compinit in ~/.zshrc):
  mkdir -p ~/.zfunc
  nodecli completion zsh > ~/.zfunc/_nodecli
  # fish:
  mkdir -p ~/.config/fish/completions
  nodecli completion fish > ~/.config/fish/completions/nodecli.fish
\b
Or load it for the current session only:
  eval "$(nodecli completion bash)"      # bash; use zsh for zsh
""")
@click.argument("shell", type=click.Choice(SHELLS))
@pass_app
def completion(app: App, shell: str) -> None:
    app.term.data(completion_source(shell), end="")
