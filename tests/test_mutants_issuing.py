"""Who may issue a token and how `token create --renew-into` keeps a file fresh, at the
points mutation testing found unchecked: each refusal's exact words and hint (they
tell the user what to do), a node user whose transfer user is missing, the renewal
loop's exact count of writes and naps (none after the last), each write 0600, the
`--every` bound at exactly 1 s and at exactly the token's lifetime, and a renewed
token's expiry counted from its renewal. In-process: the loop is given its rounds and
a sleep that only records; one 1024-bit key is made for the module."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from nodecli.config.model import Config, NodeUser, TransferUser
from nodecli.errors import AuthError, NodecliError, NotFoundError, UsageError
from nodecli.tokens.issuing import (
    TokenPlan,
    check_issuer,
    check_issuer_password,
    plan_token,
    renew_into,
    renewal,
)
from nodecli.tokens.keys import generate_private_key
from nodecli.tokens.wire import decode_unverified, token_expiry

NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def key():
    return generate_private_key(1024)


def _cfg() -> Config:
    cfg = Config()
    cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
    cfg.transfer_users["docroot"] = TransferUser("docroot", [], "/srv/data")
    cfg.transfer_users["bare"] = TransferUser("bare")
    cfg.users["admin"] = NodeUser("admin", "xfer", "$scrypt$hash")
    cfg.users["docu"] = NodeUser("docu", "docroot", "$scrypt$hash")
    cfg.users["bareu"] = NodeUser("bareu", "bare", "$scrypt$hash")
    cfg.users["lost"] = NodeUser("lost", "gone", "$scrypt$hash")  # its transfer user is gone
    cfg.users["nopass"] = NodeUser("nopass", "xfer", None)
    return cfg


def _refusal(kind: type[NodecliError], call, *args, **kwargs) -> tuple[str, str | None]:
    with pytest.raises(kind) as exc:
        call(*args, **kwargs)
    return exc.value.message, exc.value.hint


# -- who may issue ------------------------------------------------------------------------

def test_the_issuer_is_returned_when_it_may_issue() -> None:
    cfg = _cfg()
    assert check_issuer(cfg, "admin") is cfg.users["admin"]


@pytest.mark.parametrize("name", [None, ""])
def test_no_issuer_named_is_a_usage_error(name) -> None:
    assert _refusal(UsageError, check_issuer, _cfg(), name) == (
        "a node user is needed: -u/--user NAME", None)


def test_an_unknown_issuer_is_told_both_ways_to_a_token() -> None:
    assert _refusal(NotFoundError, check_issuer, _cfg(), "ghost") == (
        "node user 'ghost' does not exist in this machine's config (token create signs "
        "with a local node user's password; it does not ask a remote node)",
        "either add the node user here ('nodecli user add ghost --xuser XUSER'; 'nodecli -l' "
        "lists them), or, for a remote node, save a profile that signs its own tokens: "
        "'nodecli node add NAME --url URL --access-key AK --mint-key PRIVATE.pem "
        "--mint-user-id UID' (docs/nodes.md)")


@pytest.mark.parametrize(("name", "xuser", "what"), [
    ("docu", "docroot", "a docroot"),
    ("bareu", "bare", "no restriction"),
    ("lost", "gone", "no restriction"),
])
def test_an_issuer_without_a_restriction_is_told_what_its_transfer_user_has(
        name: str, xuser: str, what: str) -> None:
    message, hint = _refusal(NodecliError, check_issuer, _cfg(), name)
    assert message == (
        f"node user {name!r} cannot issue bearer tokens: its transfer user {xuser!r} has "
        f"{what}; access keys and bearer tokens need a transfer user with a restriction "
        "(such as file:////data/*)")
    assert hint == (f"give transfer user {xuser!r} a restriction instead of a docroot "
                    "(see: nodecli xuser --help)")


def test_an_issuer_without_a_password_is_told_how_to_set_one() -> None:
    expected = ("node user 'nopass' has no password set", "set one with: nodecli -mu nopass")
    assert _refusal(AuthError, check_issuer, _cfg(), "nopass") == expected
    assert _refusal(AuthError, check_issuer_password, _cfg().users["nopass"], "pw") == expected
    # an object with no password attribute at all is refused the same way
    assert _refusal(AuthError, check_issuer_password, SimpleNamespace(name="nopass"),
                    "pw") == expected


# -- --renew-into ------------------------------------------------------------------------

class Naps:
    """A sleep that records its durations, and ends a loop that would not stop."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)
        if len(self.seen) > 20:
            raise AssertionError("the renewal loop did not stop")


def test_renewal_writes_each_token_0600_and_naps_between_writes_only(tmp_path: Path) -> None:
    target = tmp_path / "token"
    target.write_text("old\n")
    target.chmod(0o644)  # replaced by a private file, never rewritten in place
    made: list[str] = []
    seen: list[tuple] = []
    naps = Naps()

    def make():
        made.append(f"tok{len(made)}")
        return made[-1], f"exp{len(made)}"

    def wrote(expires) -> None:
        seen.append((expires, target.read_text(), stat.S_IMODE(target.stat().st_mode)))

    assert renew_into(target, make, 0.01, wrote=wrote, sleep=naps, rounds=3) == 3
    assert seen == [("exp1", "tok0\n", 0o600), ("exp2", "tok1\n", 0o600),
                    ("exp3", "tok2\n", 0o600)]
    assert naps.seen == [0.01, 0.01]  # (a real sleep would record none)


def test_renewal_without_rounds_runs_until_stopped(tmp_path: Path) -> None:
    naps = Naps()

    class Stop(Exception):
        pass

    made: list[str] = []

    def make():
        if len(naps.seen) == 4 or len(made) == 10:
            raise Stop
        made.append("tok")
        return "tok", None

    with pytest.raises(Stop):
        renew_into(tmp_path / "t", make, 0.01, sleep=naps)
    assert naps.seen == [0.01] * 4 and len(made) == 4 and (tmp_path / "t").read_text() == "tok\n"


def test_renewal_of_zero_rounds_writes_nothing(tmp_path: Path) -> None:
    assert renew_into(tmp_path / "t", lambda: ("tok", None), 1.0, sleep=Naps(),
                      rounds=0) == 0
    assert not (tmp_path / "t").exists()


def test_renew_into_and_every_go_together() -> None:
    assert renewal(None, None) == (None, 0.0)
    for target, every in (("f", None), (None, "1m")):
        assert _refusal(UsageError, renewal, target, every) == (
            "--renew-into FILE and --every DURATION go together", None)


def test_every_is_at_least_one_second(tmp_path: Path) -> None:
    assert renewal(str(tmp_path / "t"), "1s") == (tmp_path / "t", 1.0)
    assert renewal("~/t", "1m") == (Path(os.path.expanduser("~/t")), 60.0)
    assert _refusal(UsageError, renewal, "t", "0s") == ("--every must be at least 1s", None)
    message, _ = _refusal(UsageError, renewal, "t", "soon")
    assert message.startswith("--every: invalid duration 'soon'")


# -- the plan ------------------------------------------------------------------------------

def test_a_plan_with_renewal_holds_everything_it_was_given(tmp_path: Path) -> None:
    plan = plan_token(access_key="AK", user_id="u", group_ids="g1,g2", role="user",
                      expires_at="+30m", renew_into=str(tmp_path / "t"), every="29m59s", now=NOW)
    assert plan == TokenPlan("AK", "u", ["g1", "g2"], "user", NOW + timedelta(minutes=30),
                             timedelta(minutes=30), tmp_path / "t", 1799.0)


def test_every_must_be_shorter_than_the_lifetime_exactly(tmp_path: Path) -> None:
    assert _refusal(UsageError, plan_token, access_key="AK", user_id="u", group_ids=None,
                    role="admin", expires_at="+30m", renew_into=str(tmp_path / "t"),
                    every="30m", now=NOW) == (
        "--every must be shorter than the token's lifetime (30m): else the file would hold "
        "expired tokens", None)


@pytest.mark.parametrize("expires_at", ["2030-06-15T13:00:00Z", "1h"])
def test_renewal_needs_an_expiry_that_starts_with_a_plus(tmp_path: Path, expires_at) -> None:
    assert _refusal(UsageError, plan_token, access_key="AK", user_id="u", group_ids=None,
                    role="admin", expires_at=expires_at, renew_into=str(tmp_path / "t"),
                    every="1m", now=NOW) == (
        "--renew-into needs a relative --expires-at (+30m, +2h): each renewed token lasts "
        "that long", None)
    # without --renew-into, the same expiry is taken, counted from the given clock
    plan = plan_token(access_key="AK", user_id="u", group_ids=None, role="admin",
                      expires_at=expires_at, renew_into=None, every=None, now=NOW)
    assert plan.expires == NOW + timedelta(hours=1) and plan.lifetime == timedelta(hours=1)
    assert plan.renew_into is None and plan.every == 0.0


def test_a_renewed_token_lasts_its_lifetime_from_its_renewal(key) -> None:
    plan = TokenPlan("AK", "u", None, "admin", NOW + timedelta(hours=1), timedelta(minutes=20))
    assert token_expiry(decode_unverified(plan.sign(key)).claims) == NOW + timedelta(hours=1)
    later = NOW + timedelta(hours=5)
    assert token_expiry(decode_unverified(plan.sign(key, later)).claims) == (
        later + timedelta(minutes=20))
