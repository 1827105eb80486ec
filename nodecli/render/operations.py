"""Operations of the collaboration service as text: the table columns, the one-line
status of an operation, and why it stopped."""

from __future__ import annotations

from typing import Any

from nodecli.render.table import Column
from nodecli.render.text import sanitize

# on a narrow terminal: updated, then user, type and parent are left out ('operations
# show OP' finds the parent itself); ids, statuses and times are never cut
OP_COLUMNS = [
    Column("id", "id", whole=True),
    Column("type", "type", drop=3),
    Column("parent", "parent", drop=4),
    Column("status", "status", whole=True),
    Column("conflict_folder", "conflict folder"),
    Column("user_id", "user", drop=2),
    Column("created_at", "created", whole=True),
    Column("updated_at", "updated", whole=True, drop=1),
]
SUMMARY_COLUMNS = [
    Column("operation", "operation"),
    Column("choice", "choice"),
    Column("final_status", "final status"),
    Column("detail", "detail"),
]


def op_line(op: dict[str, Any]) -> str:
    return (f"operation {sanitize(op.get('id'))} ({sanitize(op.get('type'))}): "
            f"{sanitize(op.get('status'))}")
