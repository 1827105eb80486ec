"""Dynamic shell completion of the names a user types.

Use as ``shell_complete=`` on any argument or option::

    @click.argument("name", shell_complete=complete_users)
    @click.option("--node", shell_complete=complete_nodes)

What completes, and from where (all local; completion never opens a connection, never
imports the HTTP or crypto stacks and never prints an error):

* node users, transfer users, node and service profiles: the home's ``config.toml``;
* checkpoint names (``events tail --resume``): the files under ``state/checkpoints/``;
* access key ids: the ones this machine knows without asking a node, i.e. the node
  profiles' ``access_key``, the key pairs in ``keys/<AK>/`` and the access keys of an
  emulator run with this home (``state/emulator/access_keys.json``). Keys that exist only
  on a remote node are not offered: listing them would need a request on every <TAB>.

During completion click does not run the root callback, so there is no App: the
home is the ``--home`` already typed on the command line, else ``NODECLI_HOME``, else
the platform folders. Any problem (no config, damaged file) completes nothing rather
than printing an error into the user's shell.

Classic short-flag clusters (``nodecli -mu <TAB>``, ``-du``, and a value typed against
them, ``-muus<TAB>``) are understood by the completion classes installed with
:func:`install_completion_classes`: click itself only recognises ``-u`` spelled alone
before the value.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from nodecli.config.paths import Paths


def _paths(ctx: click.Context) -> Paths:
    from nodecli.config.paths import resolve_paths

    home = None
    probe: click.Context | None = ctx
    while probe is not None and home is None:  # --home may follow the subcommand
        home = probe.params.get("home")
        probe = probe.parent
    return resolve_paths(home)


def _config(ctx: click.Context) -> Any:
    from nodecli.config.store import ConfigStore

    return ConfigStore(_paths(ctx)).load()


def _items(names: Iterable[str], incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    return [CompletionItem(n) for n in sorted(set(names)) if n.startswith(incomplete)]


def _complete(names: Callable[[click.Context], Iterable[str]]) -> Callable[..., list[Any]]:
    def complete(ctx: click.Context, param: click.Parameter,
                 incomplete: str) -> list[CompletionItem]:
        with contextlib.suppress(Exception):
            return _items(names(ctx), incomplete)
        return []

    return complete


def access_key_ids(paths: Paths, config: Any) -> set[str]:
    """Access key ids known on this machine (no request to any node)."""
    ids = {p.access_key for p in config.nodes.values() if p.access_key}
    with contextlib.suppress(OSError):
        from nodecli.tokens.keys import PRIVATE_NAME

        ids.update(d.name for d in paths.keys_dir.iterdir() if (d / PRIVATE_NAME).is_file())
    # a file that cannot be read, is not JSON or has another shape: the other sources
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError, KeyError):
        import json

        from nodecli.fsutil import read_regular  # never blocks (a FIFO is refused)

        raw = read_regular(paths.state_dir / "emulator" / "access_keys.json", 8 << 20)
        saved = json.loads(raw)
        ids.update(ak["id"] for ak in saved["access_keys"] if isinstance(ak.get("id"), str))
    return ids


def checkpoint_names(state_dir: str | os.PathLike[str]) -> set[str]:
    """Names given to ``events tail --resume NAME`` (``state/checkpoints/<node>/NAME@F.json``)."""
    names: set[str] = set()
    with contextlib.suppress(OSError):
        for node_dir in (Path(state_dir) / "checkpoints").iterdir():
            with contextlib.suppress(OSError):
                names.update(f.name.split("@", 1)[0] for f in node_dir.iterdir()
                             if f.name.endswith(".json") and "@" in f.name)
    return names


def _access_keys(ctx: click.Context) -> set[str]:
    paths = _paths(ctx)
    config: Any = None
    with contextlib.suppress(Exception):
        from nodecli.config.store import ConfigStore

        config = ConfigStore(paths).load()
    if config is None:  # a damaged config still lets the key folders complete
        from nodecli.config.model import Config

        config = Config()
    return access_key_ids(paths, config)


#: node user names (``user show NAME``, ``-u NAME``, ``token create -u``, ``--user``)
complete_users = _complete(lambda ctx: _config(ctx).users)
#: transfer user names (``--xuser``, ``xuser show NAME``)
complete_transfer_users = _complete(lambda ctx: _config(ctx).transfer_users)
#: node profile names (``--node``, ``node show NAME``)
complete_nodes = _complete(lambda ctx: _config(ctx).nodes)
#: service profile names (``--service``, ``service show NAME``)
complete_services = _complete(lambda ctx: _config(ctx).services)
#: access key ids known locally (``--access-key``, ``access-key show AK``)
complete_access_keys = _complete(_access_keys)
#: checkpoint names (``events tail --resume NAME``)
complete_checkpoints = _complete(lambda ctx: checkpoint_names(_paths(ctx).state_dir))
#: saved scan names (``files du --resume NAME``: ``state/scans/NAME.json``)
complete_scans = _complete(lambda ctx: {p.stem for p in (Path(_paths(ctx).state_dir)
                                                         / "scans").glob("*.json")})


def complete_files(ctx: click.Context, param: click.Parameter,
                   incomplete: str) -> list[CompletionItem]:
    """Let the shell complete file names (for path options typed as plain strings)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def complete_dirs(ctx: click.Context, param: click.Parameter,
                  incomplete: str) -> list[CompletionItem]:
    """Let the shell complete folder names."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="dir")]


# -- classic short-flag clusters ----------------------------------------------------------

def _short_options(command: click.Command, ctx: click.Context,
                   word: str) -> dict[str, click.Option] | None:
    """``-x`` spelling -> option of ``command``; None when ``word`` is itself one of its
    option spellings (then it is no cluster)."""
    shorts: dict[str, click.Option] = {}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            if word in param.opts or word in param.secondary_opts:
                return None
            shorts.update({o: param for o in param.opts if len(o) == 2 and o[0] == "-"})
    return shorts


def split_cluster(command: click.Command, ctx: click.Context, arg: str) -> list[str] | None:
    """``-mu`` -> ``["-m", "-u"]`` when the cluster ends with an option awaiting its value.

    None when ``arg`` is not such a cluster: an option of that exact spelling, an unknown
    letter, or a value option before the end (``-uabc``: ``abc`` is the value).
    """
    letters_only = arg[1:]  # a cluster is "-" and two or more ASCII letters or digits
    if not (arg[:1] == "-" and len(letters_only) >= 2 and letters_only.isascii()
            and letters_only.isalnum()):
        return None
    shorts = _short_options(command, ctx, arg)
    if shorts is None:
        return None
    letters = [f"-{ch}" for ch in arg[1:]]
    for i, opt in enumerate(letters):
        param = shorts.get(opt)
        if param is None:
            return None
        if not (param.is_flag or param.count):
            return letters if i == len(letters) - 1 else None
    return None  # flags only: nothing awaits a value


def split_attached(command: click.Command, ctx: click.Context,
                   word: str) -> tuple[str, click.Option, str] | None:
    """``-muus`` -> (``-mu``, the -u option, ``us``): a value typed against its flag.

    None unless ``word`` is single-dash letters that are flags of ``command`` up to one
    value option followed by at least one character of its value.
    """
    if len(word) < 3 or word[0] != "-" or word[1] == "-":
        return None
    shorts = _short_options(command, ctx, word)
    if shorts is None:
        return None
    for i, ch in enumerate(word[1:], start=1):
        param = shorts.get(f"-{ch}")
        if param is None:
            return None
        if not (param.is_flag or param.count):
            value = word[i + 1:]
            return (word[:i + 1], param, value) if value else None
    return None


def _cluster_mixin(base: type) -> type:
    class ClusterComplete(base):
        """Click's completion for ``base.name``, plus ``-mu <TAB>`` (see module doc)."""

        def get_completions(self, args: list[str], incomplete: str) -> list[Any]:
            if "--" not in args and (args or incomplete.startswith("-")):
                with contextlib.suppress(Exception):
                    from click.shell_completion import CompletionItem, _resolve_context

                    ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name,
                                           list(args))
                    attached = split_attached(ctx.command, ctx, incomplete)
                    if attached:  # -muus<TAB>: the value completes, the flags stay
                        prefix, param, value = attached
                        return [CompletionItem(prefix + item.value, help=item.help)
                                for item in param.shell_complete(ctx, value)
                                if item.type == "plain"]
                    split = split_cluster(ctx.command, ctx, args[-1]) if args else None
                    if split:
                        args = [*args[:-1], *split]
            return super().get_completions(args, incomplete)

    ClusterComplete.__name__ = base.__name__
    return ClusterComplete


def install_completion_classes() -> None:
    """Register bash/zsh/fish completion that also understands short-flag clusters."""
    from click.shell_completion import (
        BashComplete,
        FishComplete,
        ZshComplete,
        add_completion_class,
    )

    for base in (BashComplete, ZshComplete, FishComplete):
        add_completion_class(_cluster_mixin(base), base.name)
