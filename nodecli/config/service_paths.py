"""Where the collaboration service keeps its operations: the paths a service profile
(``paths`` in config.toml), ``--service-path NAME=PATH`` or the emulator may move,
checked here so that a bad template is refused before it is saved or used."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from nodecli.errors import UsageError

TOP_LEVEL_PATH = "/operations"


@dataclass(frozen=True, slots=True)
class ServicePaths:
    """Where the service keeps operations. ``{id}`` is the parent's id.

    Shown by interface.md 4.4: the workspace and workspace-membership lists and the
    workspace operation path, and "POST to the workspaces collection". Guesses (not
    shown): the top-level list (``/operations``), the group-membership path, and the
    single-operation path under a workspace membership (the nesting rule applied).
    """

    operations: str = TOP_LEVEL_PATH
    workspaces: str = "/workspaces/{id}/operations"
    workspace_memberships: str = "/workspace_memberships/{id}/operations"
    group_memberships: str = "/group_memberships/{id}/operations"
    create_workspace: str = "/workspaces"

    NAMES = ("operations", "workspaces", "workspace_memberships", "group_memberships",
             "create_workspace")

    def nested(self, collection: str, parent_id: str) -> str:
        template = getattr(self, collection)
        return template.replace("{id}", quote(parent_id, safe=""))

    def with_overrides(self, overrides: dict[str, str]) -> ServicePaths:
        from dataclasses import replace

        for name, template in overrides.items():
            check_path_template(name, template)
        return replace(self, **overrides)


DEFAULT_PATHS = ServicePaths()


def check_path_template(name: str, template: str) -> str:
    """A path override: NAME one of ServicePaths.NAMES; an absolute path; ``{id}``
    exactly in the nested ones and nowhere else."""
    norm = name.replace("-", "_")
    if norm not in ServicePaths.NAMES:
        raise UsageError(f"unknown service path {name!r} (one of "
                         f"{', '.join(n.replace('_', '-') for n in ServicePaths.NAMES)})")
    ok = (isinstance(template, str) and template.startswith("/") and len(template) <= 512
          and not any(c.isspace() or c in "?#" or ord(c) < 32 for c in template))
    nested = norm not in ("operations", "create_workspace")
    if not ok or (template.count("{id}") != (1 if nested else 0)) or \
            template.replace("{id}", "").count("{") or template.replace("{id}", "").count("}"):
        need = "with {id} once where the parent id goes" if nested else "without {id}"
        raise UsageError(f"service path {name}: {template[:80]!r} is not an absolute path "
                         f"{need}")
    return template


def parse_path_overrides(items: Iterable[str]) -> dict[str, str]:
    """``NAME=TEMPLATE`` items (``--service-path``) as a checked dict."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--service-path takes NAME=PATH, not {item[:60]!r}")
        name, template = item.split("=", 1)
        norm = name.strip().replace("-", "_")
        out[norm] = check_path_template(norm, template.strip())
    return out
