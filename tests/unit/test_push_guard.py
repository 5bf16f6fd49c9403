"""The SSRF guard of the webhook sender: every blocked address class, names that resolve to
one, schemes, and the re-check at delivery."""

from __future__ import annotations

import pytest

from core.server.push_sender import HttpPushSender, Resolve
from core.settings import PushSettings
from core.tasks.push import PushTargetRefusedError


def resolver(answers: dict[str, list[list[str]]]) -> Resolve:
    """Answers per host, one list per lookup (the last one repeats)."""
    calls: dict[str, int] = {}

    async def resolve(host: str, port: int) -> list[str]:
        n = calls.get(host, 0)
        calls[host] = n + 1
        if host not in answers:
            raise OSError("unknown host")
        return answers[host][min(n, len(answers[host]) - 1)]

    return resolve


def guard(resolve: Resolve | None = None, *, allow_private: bool = False) -> HttpPushSender:
    settings = PushSettings(enabled=True, allow_private_targets=allow_private)
    if resolve is None:
        return HttpPushSender(settings)
    return HttpPushSender(settings, resolve=resolve)


BLOCKED = [
    ("127.0.0.1", "a loopback address"),
    ("127.8.9.10", "a loopback address"),
    ("[::1]", "a loopback address"),
    ("10.1.2.3", "a private address"),
    ("172.16.0.1", "a private address"),
    ("192.168.1.1", "a private address"),
    ("[fd12::1]", "a private address"),
    ("169.254.10.10", "a link-local address"),
    ("[fe80::1]", "a link-local address"),
    ("224.0.0.1", "a multicast address"),
    ("[ff02::1]", "a multicast address"),
    ("240.0.0.1", "a reserved address"),
    ("0.0.0.0", "an unspecified address"),  # noqa: S104 - the address under test
    ("169.254.169.254", "a cloud metadata address"),
    ("[fd00:ec2::254]", "a cloud metadata address"),
    ("[::ffff:127.0.0.1]", "a loopback address"),
    ("100.64.0.1", "not a public address"),
]


@pytest.mark.parametrize(("host", "reason"), BLOCKED)
async def test_each_blocked_address_class_is_refused(host: str, reason: str) -> None:
    with pytest.raises(PushTargetRefusedError, match=reason):
        await guard().vet(f"http://{host}:8080/hook")


@pytest.mark.parametrize(("address", "reason"), [(h.strip("[]"), r) for h, r in BLOCKED])
async def test_a_name_resolving_to_a_blocked_address_is_refused(address: str, reason: str) -> None:
    sender = guard(resolver({"hook.example": [[address]]}))
    with pytest.raises(PushTargetRefusedError, match=rf"hook\.example resolves to .*{reason}"):
        await sender.vet("https://hook.example/a2a")


async def test_one_blocked_address_among_public_ones_is_enough_to_refuse() -> None:
    sender = guard(resolver({"mixed.example": [["93.184.216.34", "10.0.0.7"]]}))
    with pytest.raises(PushTargetRefusedError, match=r"10\.0\.0\.7"):
        await sender.vet("https://mixed.example/")


async def test_localhost_through_the_system_resolver_is_refused() -> None:
    with pytest.raises(PushTargetRefusedError, match=r"localhost resolves to .* loopback"):
        await guard().vet("http://localhost:9/hook")


async def test_public_addresses_pass() -> None:
    sender = guard(resolver({"hook.example": [["93.184.216.34", "2606:2800:220:1::1"]]}))
    await sender.vet("https://hook.example/a2a")
    await sender.vet("http://93.184.216.34/a2a")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://hook.example/", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://hook.example/", "only http and https"),
        ("/relative", "only http and https"),
        ("http:///nohost", "no host"),
    ],
)
async def test_only_http_and_https_with_a_host(url: str, reason: str) -> None:
    with pytest.raises(PushTargetRefusedError, match=reason):
        await guard(allow_private=True).vet(url)


async def test_an_unresolvable_name_is_refused() -> None:
    with pytest.raises(PushTargetRefusedError, match="cannot resolve"):
        await guard(resolver({})).vet("https://nowhere.example/")


async def test_private_targets_when_allowed() -> None:
    await guard(allow_private=True).vet("http://127.0.0.1:9/hook")
    await guard(allow_private=True).vet("http://169.254.169.254/")


async def test_delivery_checks_again_and_refuses_a_name_that_changed() -> None:
    """Vetted at creation (public), resolving to loopback at delivery: nothing is sent."""
    sender = guard(resolver({"rebind.example": [["93.184.216.34"], ["127.0.0.1"]]}))
    await sender.vet("http://rebind.example/hook")
    with pytest.raises(PushTargetRefusedError, match="loopback"):
        await sender.send("http://rebind.example/hook", b"{}", {})
