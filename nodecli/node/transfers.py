"""Transfers started on a node (POST /ops/transfers, with a bearer token) from a
transfer specification in a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nodecli.errors import UsageError
from nodecli.fsutil import read_limited

MAX_SPEC_BYTES = 1024 * 1024


def load_transfer_spec(path: str) -> dict[str, Any]:
    """A transfer specification from a JSON file (``-`` is not accepted: give a file)."""
    p = Path(path).expanduser()
    raw = read_limited(p, MAX_SPEC_BYTES, "transfer spec")
    try:
        spec = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"transfer spec {p} is not UTF-8 text") from None
    except ValueError as exc:
        raise UsageError(f"transfer spec {p} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"transfer spec {p} is nested too deeply") from None
    if not isinstance(spec, dict):
        raise UsageError(f"transfer spec {p} must hold a JSON object")
    return spec


def start_transfer(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """POST /ops/transfers with a bearer token; return the node's answer."""
    from nodecli.errors import RemoteError

    if client.endpoint.auth.kind != "bearer":
        raise UsageError("starting a transfer needs a bearer token: --bearer-file PATH "
                         "(or NODECLI_BEARER) with --access-key AK")
    data = client.json("POST", "/ops/transfers", json_body=spec, expect=(200, 201, 202))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RemoteError("the node answered the transfer request with something other "
                          "than a JSON object")
    return data
