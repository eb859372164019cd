"""Verify a Taskkeeper desk's signed Agent Cards with the A2A Python SDK's own verifier.

    python a2a_sdk_verify_card.py --base http://127.0.0.1:PORT --desk web --token TOKEN \
        --thumbprint KID [--expect-fail]

The SDK (`a2a-sdk[signing]`, pinned in crates/cli/tests/it/interop.rs) fetches the cards: the
machine's and the desk's public card through its card resolver, the desk's extended card
through its client (JSON-RPC, with the token). Each is checked by
`a2a.utils.signing.create_signature_verifier`, whose key provider fetches the JWK Set the
signature's `jku` names and takes the key with the signature's `kid`, which must be the
thumbprint the owner handed over (the pin). Then a card changed by one character must fail.

With --expect-fail the cards must NOT verify (the key was rotated after the pin was taken).
Each check prints one JSON line {"check", "ok", ...}; the last is {"check": "all"}.
"""

import argparse
import asyncio
import json
import sys

import httpx

from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import AgentCard, GetExtendedAgentCardRequest
from a2a.utils.signing import (
    InvalidSignaturesError,
    NoSignatureError,
    SignatureVerificationError,
    create_signature_verifier,
)
from jwt.api_jwk import PyJWK
from jwt.exceptions import InvalidKeyError

failed = 0


def emit(**fields):
    print(json.dumps(fields), flush=True)


def check(name, ok, **detail):
    global failed
    if not ok:
        failed += 1
    emit(check=name, ok=bool(ok), **detail)


def key_provider(pin):
    """The SDK's key provider: the key `kid` from the set at `jku`, only if it is the pin.
    It refuses with a PyJWT error, the kind the SDK's verifier counts as a failed signature."""

    def provide(kid, jku):
        if kid != pin:
            raise InvalidKeyError(f"kid {kid} is not the pinned thumbprint {pin}")
        if not jku:
            raise InvalidKeyError("no jku in the protected header")
        try:
            keys = httpx.get(jku, timeout=10).raise_for_status().json()["keys"]
        except (httpx.HTTPError, ValueError, KeyError) as e:
            raise InvalidKeyError(f"cannot fetch the key set at {jku}: {e}") from e
        for key in keys:
            if key.get("kid") == kid:
                return PyJWK(key)
        raise InvalidKeyError(f"no key {kid} at {jku}")

    return provide


def verifies(verifier, card):
    try:
        verifier(card)
        return True, None
    except SignatureVerificationError as e:
        return False, f"{type(e).__name__}: {e}"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--desk", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--thumbprint", required=True)
    p.add_argument("--expect-fail", action="store_true")
    a = p.parse_args()
    verifier = create_signature_verifier(key_provider(a.thumbprint), ["ES256"])
    want = not a.expect_fail

    async with httpx.AsyncClient(timeout=10) as http:
        cards = {}
        machine = A2ACardResolver(http, a.base)
        cards["machine"] = await machine.get_agent_card()
        desk = A2ACardResolver(http, f"{a.base}/a2a/{a.desk}")
        cards["desk"] = await desk.get_agent_card()

        auth = httpx.AsyncClient(
            timeout=10, headers={"Authorization": f"Bearer {a.token}"}
        )
        client = await create_client(
            cards["desk"], client_config=ClientConfig(httpx_client=auth)
        )
        cards["extended"] = await client.get_extended_agent_card(
            GetExtendedAgentCardRequest()
        )
        await auth.aclose()
    check(
        "the extended card is the one with the directory",
        "working in" in cards["extended"].description,
        description=cards["extended"].description,
    )

    for name, card in cards.items():
        ok, why = verifies(verifier, card)
        check(f"{name} card verifies" if want else f"{name} card is refused", ok == want, why=why)

    if want:
        # The SDK's resolver verifies too, when given the verifier.
        async with httpx.AsyncClient(timeout=10) as http:
            resolver = A2ACardResolver(http, f"{a.base}/a2a/{a.desk}")
            try:
                await resolver.get_agent_card(signature_verifier=verifier)
                check("the resolver verifies the desk card", True)
            except SignatureVerificationError as e:
                check("the resolver verifies the desk card", False, why=str(e))

        # One character changed in a signed field: refused.
        tampered = AgentCard()
        tampered.CopyFrom(cards["desk"])
        tampered.description = tampered.description[:-1] + (
            "x" if not tampered.description.endswith("x") else "y"
        )
        ok, why = verifies(verifier, tampered)
        check("a card changed by one character is refused", not ok, why=why)
        refused = isinstance(_raised(verifier, tampered), InvalidSignaturesError)
        check("as InvalidSignaturesError", refused)

        # The signature itself changed: refused.
        forged = AgentCard()
        forged.CopyFrom(cards["desk"])
        sig = forged.signatures[0].signature
        forged.signatures[0].signature = ("A" if sig[0] != "A" else "B") + sig[1:]
        ok, why = verifies(verifier, forged)
        check("a changed signature is refused", not ok, why=why)

        # No signatures at all: refused as such.
        bare = AgentCard()
        bare.CopyFrom(cards["desk"])
        del bare.signatures[:]
        check("an unsigned card is refused", isinstance(_raised(verifier, bare), NoSignatureError))

        # Another pin (another machine's key): refused.
        other = create_signature_verifier(key_provider("not-" + a.thumbprint), ["ES256"])
        ok, why = verifies(other, cards["desk"])
        check("another pinned key refuses the card", not ok, why=why)

    emit(check="all", ok=failed == 0)
    return 1 if failed else 0


def _raised(verifier, card):
    try:
        verifier(card)
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        return e
    return None


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
