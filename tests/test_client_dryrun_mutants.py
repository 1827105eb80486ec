"""nodecli.http.client at the edges its mutation run found untested (issue 33 item 2):
under --dry-run only GET and HEAD go to the node (whatever the case of the method given)
and everything else stops before a byte is sent; a CA file that is missing is named as
the CA file. Over HTTPS to the emulator."""

from __future__ import annotations

import pytest

from nodecli import dryrun
from nodecli.errors import NotFoundError
from nodecli.http.client import Auth, Endpoint, open_client


@pytest.fixture
def dry():
    dryrun.activate()
    try:
        yield
    finally:
        dryrun.activate(False)


def test_a_dry_run_reads_with_get_and_head_and_sends_nothing_else(emulator, served, dry):
    auth = Auth("basic", username="admin", password="admin-pass")
    with open_client(emulator.endpoint(auth, max_attempts=1)) as client:
        for method in ("GET", "get", "HEAD", "head"):
            client.request(method, "/info", expect=(200, 404, 405))
        assert [line.split('"')[1].split()[0] for line in served] == ["GET", "GET", "HEAD",
                                                                      "HEAD"]
        served.clear()
        for method in ("POST", "put", "DELETE", "PATCH", "OPTIONS"):
            with pytest.raises(dryrun.DryRunStop):
                client.request(method, "/info", json_body={"a": 1}, expect=(200, 404, 405))
        assert served == []


def test_a_missing_ca_file_is_named_as_the_ca_file(tmp_path):
    missing = tmp_path / "ca.pem"
    with pytest.raises(NotFoundError) as e:
        open_client(Endpoint("https://127.0.0.1:9", Auth(), cacert=str(missing)))
    assert str(e.value) == f"CA file {missing}: no such file"
