"""Who may do what on a node's files: the model behind ``access can-i``, ``who-can`` and
``what-can``. Pure: no HTTP, no terminal; it decides from data the caller gathered.

What it follows (interface.md 5.1 and the node family's public documentation):

* a bearer-token user reaches only what lies inside its access key's storage path;
* the token's scope must grant that key (``node.AK:user:all``); a token that
  administers the key (``node.AK:admin:all``) is not restricted by permissions, nor is
  the access key itself (Basic with its secret): the vendor warns that such keys give
  full access to the folder, whatever the sharing permissions say;
* a permission is held by a user (the token's ``user_id``) or a group (one of the
  token's ``group_ids``, which already lists every group of the user, most specific
  first); one set on a folder covers everything below it (component by component:
  ``/data/fin`` covers nothing of ``/data/finance``);
* a file is visible when the user holds a permission at or above it; a folder above a
  permitted file is visible too, on the way to it (its listing shows only what leads
  there); listing a folder's whole content needs the ``list`` level there.

Where the contract is silent, the choice is a field of :class:`Rules` with the node
emulator's behaviour as its default, so a node that differs is one flag away instead of a
wrong answer: whether permissions set on folders above the key's storage count
(``inherit_above_root``), whether an admin-scope token bypasses permissions
(``admin_bypass``), whether folders on the way to a permitted file are visible
(``traverse``).

Paths here are node paths (from the node's root, as the access key's ``storage.path``);
the commands turn a path written from the key's storage root into one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

LEVELS = ("list", "read", "write", "delete", "mkdir", "rename", "preview")
HOLDER_TYPES = ("user", "group")

# why a question is answered no (stable: the json field "reason")
OUTSIDE = "outside-storage"
SCOPE = "token-scope"
NO_PERMISSION = "no-permission"
LEVEL_NOT_HELD = "level-not-held"
# and yes
GRANTED = "granted"
BYPASS = "bypasses-permissions"
NODE_USER = "node-user"


def norm(path: str) -> str:
    """``/data//x/`` -> ``/data/x``; ``""`` and ``/`` -> ``/`` (``.`` dropped; ``..`` is
    the caller's to refuse)."""
    parts = [p for p in str(path).split("/") if p not in ("", ".")]
    return "/" + "/".join(parts)


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it, component by component (both normalised)."""
    return root == "/" or path == root or path.startswith(root + "/")


def join(root: str, relative: str) -> str:
    """A path written from the key's storage root, as a node path."""
    rel = norm(relative)
    return root if rel == "/" else norm(root + rel)


def relative(root: str, path: str) -> str:
    """A node path inside ``root`` as written from the storage root (``/`` for the root)."""
    if path == root:
        return "/"
    return path if root == "/" else path[len(root):]


def parent(path: str) -> str | None:
    if path == "/":
        return None
    return path.rsplit("/", 1)[0] or "/"


def ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``["/a/b", "/a", "/"]``: the path and every folder above it."""
    out: list[str] = [path]
    up = parent(path)
    while up is not None:
        out.append(up)
        up = parent(up)
    return out


@dataclass(frozen=True, slots=True)
class Perm:
    """One permission as the model sees it. ``path`` is the node path of the file it is
    set on; None for a permission the node reports as inherited from above the key's
    storage (its file is outside what the key can name)."""

    id: str
    path: str | None
    holder_type: str
    holder_id: str
    levels: tuple[str, ...]
    file_id: str = ""

    def where(self, root: str) -> str:
        if self.path is None:
            return f"(above the storage root, file {self.file_id or '?'})"
        return relative(root, self.path) if within(self.path, root) else self.path

    def holder(self) -> str:
        return f"{self.holder_type} {self.holder_id}"


@dataclass(frozen=True, slots=True)
class Subject:
    """Who asks: the token's user id, group ids and scope."""

    user_id: str
    group_ids: tuple[str, ...] = ()
    scope: str = ""

    def holds(self, perm: Perm) -> bool:
        if perm.holder_type == "user":
            return perm.holder_id == self.user_id
        return perm.holder_type == "group" and perm.holder_id in self.group_ids


def user_scope(access_key: str, role: str = "user") -> str:
    return f"node.{access_key}:{role}:all"


@dataclass(frozen=True, slots=True)
class Rules:
    """The choices the contract leaves open (module doc); defaults: the emulator's."""

    inherit_above_root: bool = True
    admin_bypass: bool = True
    traverse: bool = True


@dataclass(frozen=True, slots=True)
class Step:
    """One rule considered, in order: what it is, its verdict (``pass``, ``deny``,
    ``allow``, ``applies``, ``skip``) and why."""

    rule: str
    verdict: str
    detail: str
    perm: Perm | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    level: str
    path: str
    because: tuple[Perm, ...] = ()
    held: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    summary: str = ""


@dataclass(slots=True)
class Model:
    """One access key's storage and the permissions inside (and above) it."""

    access_key: str
    root: str
    perms: Sequence[Perm]
    rules: Rules = field(default_factory=Rules)

    # the permissions by folder, for every holder and per subject (the model's
    # permissions are not changed after it is made)
    _all: dict[str | None, list[Perm]] | None = field(default=None, repr=False)
    _mine: dict[Subject, _Index] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.root = norm(self.root)

    def _by_path(self) -> dict[str | None, list[Perm]]:
        if self._all is None:
            self._all = {}
            for perm in self.perms:
                self._all.setdefault(perm.path, []).append(perm)
        return self._all

    def _index(self, subject: Subject) -> _Index:
        idx = self._mine.get(subject)
        if idx is None:
            idx = _Index()
            for perm in self.perms:
                if not subject.holds(perm):
                    continue
                if perm.path is not None and within(perm.path, self.root):
                    idx.way.update(ancestors(perm.path)[1:])
                if self.counts(perm):
                    idx.by_path.setdefault(perm.path, []).append(perm)
            self._mine[subject] = idx
        return idx

    # -- the pieces ---------------------------------------------------------------------

    def counts(self, perm: Perm) -> bool:
        """Whether the permission can apply at all to this key's files."""
        if perm.path is None:
            return self.rules.inherit_above_root
        return within(perm.path, self.root) or (
            self.rules.inherit_above_root and within(self.root, perm.path))

    def scope_role(self, subject: Subject) -> str | None:
        """``admin``, ``user`` or None (the scope grants nothing on this key)."""
        words = subject.scope.split()
        if user_scope(self.access_key, "admin") in words or "admin:all" in words:
            return "admin"
        if user_scope(self.access_key) in words:
            return "user"
        return None

    def bypass(self, subject: Subject) -> bool:
        return self.rules.admin_bypass and self.scope_role(subject) == "admin"

    def applicable(self, subject: Subject, path: str) -> list[Perm]:
        """The subject's permissions at ``path`` or above, most specific first (above the
        storage root last), in the order they were given within one folder."""
        by_path = self._index(subject).by_path
        out: list[Perm] = []
        for folder in ancestors(path):
            out.extend(by_path.get(folder, ()))
        out.extend(by_path.get(None, ()))
        return out

    def levels_at(self, subject: Subject, path: str) -> set[str]:
        held: set[str] = set()
        for perm in self.applicable(subject, path):
            held.update(perm.levels)
        return held

    def leads_to(self, subject: Subject, path: str) -> Perm | None:
        """A subject's permission strictly below ``path`` (inside the storage): the folder
        is on the way to it."""
        for perm in self.perms:
            if (perm.path is not None and perm.path != path and within(perm.path, path)
                    and within(perm.path, self.root) and subject.holds(perm)):
                return perm
        return None

    def visible(self, subject: Subject, path: str) -> bool:
        path = norm(path)
        if not within(path, self.root) or self.scope_role(subject) is None:
            return False
        if self.bypass(subject) or self.applicable(subject, path):
            return True
        return self.rules.traverse and path in self._index(subject).way

    def listable(self, subject: Subject, path: str) -> bool:
        """The folder's whole content is listed (the ``list`` level, or a bypass)."""
        path = norm(path)
        if not within(path, self.root) or self.scope_role(subject) is None:
            return False
        return self.bypass(subject) or "list" in self.levels_at(subject, path)

    # -- can-i ----------------------------------------------------------------------------

    def decide(self, subject: Subject, level: str, path: str) -> Decision:
        """May ``subject`` use ``level`` at ``path`` (a node path)? With every rule
        considered, in order."""
        path = norm(path)
        steps: list[Step] = []

        def done(allowed: bool, reason: str, summary: str, because: Iterable[Perm] = (),
                 held: Iterable[str] = ()) -> Decision:
            return Decision(allowed, reason, level, path, tuple(because),
                            tuple(sorted(held, key=_level_order)), tuple(steps), summary)

        if not within(path, self.root):
            steps.append(Step("storage", "deny", f"{path} is outside access key "
                              f"{self.access_key}'s storage {self.root}"))
            return done(False, OUTSIDE, f"{path} is outside the key's storage {self.root}")
        steps.append(Step("storage", "pass", f"{path} is inside the key's storage {self.root}"))
        role = self.scope_role(subject)
        if role is None:
            steps.append(Step("scope", "deny", f"scope {subject.scope!r} does not grant "
                              f"{user_scope(self.access_key)}"))
            return done(False, SCOPE, f"the token's scope does not grant access key "
                                      f"{self.access_key}")
        if role == "admin" and self.rules.admin_bypass:
            steps.append(Step("scope", "allow", f"scope {user_scope(self.access_key, 'admin')}"
                              " administers the key: permissions do not restrict it"))
            return done(True, BYPASS, "the token administers the access key: permissions "
                                      "do not restrict it", held=LEVELS)
        steps.append(Step("scope", "pass", f"scope {user_scope(self.access_key)}: "
                          "permissions decide"))
        on_path = set(ancestors(path))
        granting: list[Perm] = []
        held: set[str] = set()
        for perm in self.ordered_for(path):
            at = perm.where(self.root)
            if not subject.holds(perm):
                steps.append(Step("permission", "skip", f"{perm.holder()} on {at}: not "
                                  f"user {subject.user_id} nor one of its groups", perm))
            elif perm.path is not None and perm.path not in on_path:
                steps.append(Step("permission", "skip", f"{perm.holder()} on {at}: not "
                                  "the path nor a folder above it", perm))
            elif not self.counts(perm):
                steps.append(Step("permission", "skip", f"{perm.holder()} on {at}: above "
                                  "the key's storage, and such permissions do not count "
                                  "(--no-inherit-above-root)", perm))
            else:
                levels = ",".join(perm.levels) or "(none)"
                if level in perm.levels:
                    granting.append(perm)
                    steps.append(Step("permission", "allow", f"{perm.holder()} on {at} "
                                      f"grants {levels}", perm))
                else:
                    steps.append(Step("permission", "applies", f"{perm.holder()} on {at} "
                                      f"grants {levels}, not {level}", perm))
                held.update(perm.levels)
        if granting:
            first = granting[0]
            how = "directly" if first.path == path else "inherited"
            return done(True, GRANTED, f"{first.holder()} holds {level} on "
                        f"{first.where(self.root)} ({how})", granting, held)
        if held or self.applicable(subject, path):
            grant = ",".join(sorted(held, key=_level_order)) or "no level"
            return done(False, LEVEL_NOT_HELD, f"{level} is not held: the permissions at "
                        f"or above the path grant {grant}", (), held)
        below = self.leads_to(subject, path) if self.rules.traverse else None
        extra = (f" (the folder is visible on the way to {below.where(self.root)})"
                 if below is not None else "")
        return done(False, NO_PERMISSION, f"no permission at or above the path for user "
                    f"{subject.user_id} or its groups{extra}")

    def ordered_for(self, path: str) -> list[Perm]:
        """Every permission, in the order ``decide`` considers them: those on the path's
        folders from the path upward, those above the storage, then the others."""
        depth = {p: i for i, p in enumerate(ancestors(path))}
        late = len(depth)

        def key(perm: Perm) -> int:
            if perm.path is None:
                return late
            return depth.get(perm.path, late + 1)

        return sorted(self.perms, key=key)

    # -- who-can and what-can --------------------------------------------------------------

    def who_can(self, path: str, level: str | None = None) -> list[Holding]:
        """Every holder with ``level`` (any level when None) at ``path``: one row per
        permission it comes from, most specific first."""
        path = norm(path)
        if not within(path, self.root):
            return []
        by_path = self._by_path()
        rows: list[Holding] = []
        for folder in [*ancestors(path), None]:
            found = [Holding(perm.holder_type, perm.holder_id, perm, inherited=folder != path)
                     for perm in by_path.get(folder, ())
                     if self.counts(perm) and (level is None or level in perm.levels)]
            rows.extend(sorted(found, key=lambda h: (h.holder_type, h.holder_id,
                                                     _id_key(h.perm.id))))
        return rows

    def what_can(self, subject: Subject, paths: Iterable[str]) -> list[Sight]:
        """For each known path (node paths inside the storage, files and folders): whether
        the subject sees it, the levels it holds there, and whether it lists it."""
        out: list[Sight] = []
        bypass = self.bypass(subject)
        for raw in sorted({norm(p) for p in paths}, key=_path_key):
            if not within(raw, self.root) or not self.visible(subject, raw):
                continue
            held = set(LEVELS) if bypass else self.levels_at(subject, raw)
            mine = [] if bypass else self.applicable(subject, raw)
            out.append(Sight(raw, tuple(sorted(held, key=_level_order)),
                             traverse_only=not bypass and not mine,
                             source=mine[0] if mine else None))
        return out


@dataclass(slots=True)
class _Index:
    """One subject's permissions that count, by folder (None: above the storage), and
    the folders on the way to one of its permissions inside the storage."""

    by_path: dict[str | None, list[Perm]] = field(default_factory=dict)
    way: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Holding:
    holder_type: str
    holder_id: str
    perm: Perm
    inherited: bool


@dataclass(frozen=True, slots=True)
class Sight:
    path: str
    levels: tuple[str, ...]
    traverse_only: bool
    source: Perm | None


def _level_order(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)


def _id_key(value: str) -> tuple[bool, int | str]:
    """Numeric ids in numeric order (however long), then the others (a node's word: "²"
    is a digit to ``isdigit`` but no number to ``int``)."""
    if value.isascii() and value.isdigit():
        return (False, int(value))
    return (True, value)


def _path_key(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


# -- node users: restrictions or docroot ---------------------------------------------------


def node_user_decision(level: str, path: str, *, docroot: str | None,
                       restrictions: Sequence[str],
                       matches: Callable[[str, str], bool]) -> Decision:
    """What a node user (HTTP Basic) may reach: its transfer user's docroot, or its
    restrictions over ``file:///`` URLs (an accepting one matches and no ``!`` one does).
    Restrictions know no levels: a reachable path allows every level. ``matches(pattern,
    url)`` is the node's one glob matcher (:mod:`nodecli.users.restrictions`)."""
    path = norm(path)
    steps: list[Step] = []

    def done(allowed: bool, summary: str) -> Decision:
        return Decision(allowed, NODE_USER if allowed else OUTSIDE, level, path,
                        held=LEVELS if allowed else (), steps=tuple(steps), summary=summary)

    if docroot is not None:
        root = norm(docroot)
        inside = within(path, root)
        steps.append(Step("docroot", "allow" if inside else "deny",
                          f"{path} is {'inside' if inside else 'outside'} the docroot {root}"))
        return done(inside, steps[-1].detail)
    url = "file:///" + path
    accepted: str | None = None
    for raw in restrictions:
        negated = raw.startswith("!")
        pattern = raw[1:] if negated else raw
        if not matches(pattern, url):
            steps.append(Step("restriction", "skip", f"{raw} does not match {url}"))
            continue
        if negated:
            steps.append(Step("restriction", "deny", f"{raw} rejects {url}"))
            return done(False, f"restriction {raw} rejects {url}")
        steps.append(Step("restriction", "applies", f"{raw} accepts {url}"))
        accepted = accepted or raw
    if accepted is None:
        what = "no restriction accepts" if restrictions else "the transfer user has no " \
            "restriction nor docroot for"
        return done(False, f"{what} {url}")
    return done(True, f"restriction {accepted} accepts {url}")
