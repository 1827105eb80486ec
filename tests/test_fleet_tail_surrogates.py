"""A merged tail (``events tail --all-nodes``) of an event holding a lone surrogate
(JSON ``"\\ud800"``, valid JSON that UTF-8 cannot carry as such): its jsonl line keeps
the escape, as the one-node tail does, instead of the node's thread dying on the write
and the command saying it wrote nothing, with exit 0."""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.server import Reply

PAGE = (b'[{"id":"1","time":"2030-01-01T00:00:00Z","types":["a"],"node":"x",'
        b'"s":"x\\ud800y\\udfff\\u00e9"}]')
LINE = ('{"node": "n1", "id": "1", "time": "2030-01-01T00:00:00Z", "types": ["a"], '
        '"event_node": "x", "s": "x\\ud800y\\udfff\u00e9"}\n')


@pytest.mark.parametrize("to_file", [False, True])
def test_a_lone_surrogate_in_an_event_stays_escaped_in_the_merged_stream(invoke, emulator,
                                                                        log, home, to_file):
    r = invoke("node", "add", "n1", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    log.push_reply(Reply(200, PAGE, {"Link": '</events?iteration_token=0>; rel="next"'}))
    out = home / "f.jsonl"
    dest = ["--to", str(out)] if to_file else ["-o", "jsonl"]
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", *dest)
    assert r.exit_code == 0, r.stderr
    text = out.read_text() if to_file else r.stdout
    assert text == LINE
    assert json.loads(text)["s"] == "x\ud800y\udfff\u00e9"
