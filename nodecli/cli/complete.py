"""Dynamic shell completion of names stored in the config.

Use as ``shell_complete=`` on any argument or option::

    @click.argument("name", shell_complete=complete_users)
    @click.option("--node", shell_complete=complete_nodes)

During completion click does not run the root callback, so there is no App: the
config is located from the ``--home`` already typed on the command line, else
``NODECLI_HOME``, else the platform folders. Any problem (no config, damaged file)
completes nothing rather than printing an error into the user's shell.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


def _config(ctx: click.Context) -> Any:
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore

    home = ctx.find_root().params.get("home")
    return ConfigStore(resolve_paths(home)).load()


def _complete(names: Callable[[Any], Iterable[str]]) -> Callable[..., list[CompletionItem]]:
    def complete(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        with contextlib.suppress(Exception):
            return [CompletionItem(n) for n in sorted(names(_config(ctx)))
                    if n.startswith(incomplete)]
        return []

    return complete


#: node user names (``user show NAME``, ``-u NAME``)
complete_users = _complete(lambda cfg: cfg.users)
#: transfer user names (``--xuser``, ``xuser show NAME``)
complete_transfer_users = _complete(lambda cfg: cfg.transfer_users)
#: node profile names (``--node``)
complete_nodes = _complete(lambda cfg: cfg.nodes)
#: service profile names (``--service``)
complete_services = _complete(lambda cfg: cfg.services)
