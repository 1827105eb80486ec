"""``nodecli key``: generate RSA key pairs, print the public key, show fingerprints."""

from __future__ import annotations

import time
from pathlib import Path

import click

from nodecli.cli.app import App
from nodecli.cli.common import UserPath, output_option, pass_app
from nodecli.cli.lazy import HelpGroup
from nodecli.fsutil import ensure_private_dir
from nodecli.tokens.keys import (
    DEFAULT_BITS,
    PRIVATE_NAME,
    KeyPairInfo,
    check_bits,
    describe_key,
    generate_key_pair,
    public_pem,
)

SPINNER_BITS = 8192


def generate_with_progress(app: App, path: Path, bits: int, *, force: bool = False) -> KeyPairInfo:
    """Generate and write a key pair; 8192+ bits show a spinner with elapsed time (stderr)."""
    check_bits(bits)
    if bits < SPINNER_BITS or not app.term.interactive or app.verbosity < 0:
        if bits >= SPINNER_BITS:
            app.term.info(f"generating a {bits}-bit RSA key (this can take a minute)...")
        return generate_key_pair(path, bits, force=force, state_dir=app.paths.state_dir)
    started = time.monotonic()
    app.term.status.show(f"generating a {bits}-bit RSA key")
    try:
        from nodecli.node.events.checkpoint import pause_for_tests

        pause_for_tests("key-generate")  # the spinner runs; no key is being made yet
        info = generate_key_pair(path, bits, force=force, state_dir=app.paths.state_dir)
    finally:
        app.term.status.clear()
    app.term.info(f"generated a {bits}-bit RSA key in {time.monotonic() - started:.1f} s")
    return info


def report_new_key(app: App, info: KeyPairInfo, access_key: str | None = None) -> None:
    app.term.success(f"created private key {info.private_path} (mode 0600) and public key "
                     f"{info.public_path}")
    app.term.info(f"fingerprint {info.fingerprint} ({info.bits} bits)")
    import shlex

    ak = shlex.quote(access_key) if access_key else "ACCESS_KEY"
    app.term.info("register the public key on the node: nodecli access-key "
                  f"set-verification-key {ak} --public-key {shlex.quote(str(info.public_path))}")


@click.group(cls=HelpGroup,
             help="""RSA key pairs that sign bearer tokens.

\b
  nodecli key generate ~/keys/ak1/private.pem      4096 bits; public.pem beside it
  nodecli key generate ~/keys/ak1/ --bits 2048     a folder: private.pem + public.pem
  nodecli key public ~/keys/ak1/private.pem        the PEM a node needs as verification key
  nodecli key fingerprint ~/keys/ak1/public.pem    SHA256:... of the public key
""")
def key() -> None:
    pass


@key.command("generate")
@click.argument("path", type=UserPath())
@click.option("--bits", type=int, default=DEFAULT_BITS, show_default=True,
              help="Key length: a power of 2 from 1024 to 16384.")
@click.option("--force", is_flag=True,
              help="Replace an existing key pair (tokens signed by it stop verifying).")
@output_option(("text", "json"), default="text")
@pass_app
def generate(app: App, path: str, bits: int, force: bool, output_format: str) -> None:
    """Create a key pair: PATH (PKCS#8 PEM, 0600) and its public key beside it.

    PATH may be a folder (an existing one, or any path ending in '/', created 0700):
    the pair is then PATH/private.pem and PATH/public.pem. Otherwise the public key
    is PATH.pub (public.pem when PATH is named private.pem). An existing file is
    never overwritten without --force, and never through a link.

    \b
    Examples:
      nodecli key generate ~/keys/ak1/             # folder: private.pem + public.pem
      nodecli key generate ~/keys/ak1.pem --bits 2048
    """
    target = Path(path).expanduser()
    if path.endswith("/") or (target.is_dir() and not target.is_symlink()):
        target = ensure_private_dir(target) / PRIVATE_NAME
    info = generate_with_progress(app, target, check_bits(bits), force=force)
    if output_format == "json":
        app.term.json({"private_key": str(info.private_path), "public_key": str(info.public_path),
                       "bits": info.bits, "fingerprint": info.fingerprint})
    report_new_key(app, info)


@key.command("public")
@click.argument("path", type=UserPath(path_type=Path))
@pass_app
def public(app: App, path: Path) -> None:
    """Print the public key (SPKI PEM) of a private or public key file.

    \b
    Examples:
      nodecli key public ~/keys/ak1/private.pem
    """
    app.term.data(public_pem(path.expanduser()), end="")


@key.command("fingerprint")
@click.argument("path", type=UserPath(path_type=Path))
@output_option(("text", "json"), default="text")
@pass_app
def fingerprint(app: App, path: Path, output_format: str) -> None:
    """Print SHA256:<base64> of the key's SubjectPublicKeyInfo (DER).

    Works on the private or the public key file; both give the same fingerprint.
    -o json adds the hex form, the size and the kind of file.

    \b
    Examples:
      nodecli key fingerprint ~/keys/ak1/public.pem
    """
    info = describe_key(path.expanduser())
    if output_format == "json":
        app.term.json(info)
    else:
        app.term.data(info["fingerprint"])
