"""``events list`` (nodecli/cli/events.py's ``_show_page``) at the edges the mutation
run found unwatched: a page in each format, a field of the node's cut in the table
and whole in jsonl, csv and ``--field``. In process, over HTTPS to the emulator (a
canned page)."""

from __future__ import annotations

import pytest

from nodecli.emulator.server import Reply

EVENT = (b'{"id":"' + b"i" * 100 + b'","time":"' + b"t" * 60
         + b'","user_id":"u","types":["file.created"],"data":{}}')
NO_LINK = 'nodecli: warning: the node sent no Link rel="next" header\n'


@pytest.mark.parametrize(("args", "stdout"), [
    (["-o", "table"],
     "id" + " " * 80 + "time" + " " * 38 + "type          user  summary\n"
     + "i" * 79 + "…  " + "t" * 39 + "…  file.created  u      (?)\n"),
    (["-o", "jsonl"], EVENT.decode() + "\n"),
    (["-o", "csv"], "id,time,user_id,types,data\n" + "i" * 100 + "," + "t" * 60
     + ",u,file.created,{}\n"),
    (["--field", "id"], "i" * 100 + "\n"),  # the items of the page's "events"
])
def test_a_page_in_each_format_cut_only_in_the_table(invoke, node_env, log, args, stdout):
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {}))
    r = invoke("events", "list", *args, env=node_env)
    assert (r.exit_code, r.stdout, r.stderr) == (0, stdout, NO_LINK)
