"""The SSRF guard of the webhook sender: every blocked address class, names that resolve to
one, schemes, and the re-check at delivery."""

from __future__ import annotations

import pytest

from core.bindings.http.push_sender import HttpPushSender, Resolve
from core.push.dispatcher import PushTargetRefusedError
from core.settings.server import PushSettings


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


def guard(
    resolve: Resolve | None = None, *, allow_private: bool = False, allowed: list[str] | None = None
) -> HttpPushSender:
    # allowed_targets only when a test uses it, so the other tests also run against a
    # guard that does not know the key.
    extra = {"allowed_targets": allowed} if allowed else {}
    settings = PushSettings(enabled=True, allow_private_targets=allow_private, **extra)
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
    ("100.100.100.200", "a cloud metadata address"),
    ("[::ffff:127.0.0.1]", "a loopback address"),
    ("100.64.0.1", "not a public address"),
]

# Every IPv6 form that embeds an IPv4 address reaches that IPv4 host: judged by it.
EMBEDDED = [
    ("[2002:a00:1::]", "a private address", "10.0.0.1"),  # 6to4
    ("[2002:7f00:1::]", "a loopback address", "127.0.0.1"),
    ("[2002:a9fe:a9fe::]", "a cloud metadata address", "169.254.169.254"),
    ("[2002:c0a8:101:1::5]", "a private address", "192.168.1.1"),
    ("[64:ff9b::a00:1]", "a private address", "10.0.0.1"),  # NAT64 well-known prefix
    ("[64:ff9b::7f00:1]", "a loopback address", "127.0.0.1"),
    ("[64:ff9b::a9fe:a9fe]", "a cloud metadata address", "169.254.169.254"),
    ("[64:ff9b:1:a00:1::]", "a local-use NAT64 address", ""),  # its layout is not knowable
    ("[64:ff9b:1::5db8:d822]", "a local-use NAT64 address", ""),
    # Teredo: server 65.54.227.120, client 127.0.0.1 stored XOR-ed (ffff ^ 7f00.0001).
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "a loopback address", "127.0.0.1"),
    ("[2001:0:a00:1:8000:63bf:a247:27dd]", "a private address", "10.0.0.1"),  # Teredo server
    ("[::ffff:10.0.0.1]", "a private address", ""),  # IPv4-mapped
    ("[::ffff:169.254.169.254]", "a cloud metadata address", ""),
    ("[::10.0.0.1]", "a private address", "10.0.0.1"),  # IPv4-compatible
    ("[::127.0.0.1]", "a loopback address", "127.0.0.1"),
    ("[::ffff:0:10.0.0.1]", "a private address", "10.0.0.1"),  # IPv4-translated
    ("[::ffff:0:169.254.169.254]", "a cloud metadata address", ""),
]

EMBEDDED_PUBLIC = [
    "[2002:5db8:d822::1]",
    "[64:ff9b::5db8:d822]",
    "[2001:0:4136:e378:8000:63bf:a247:27dd]",  # Teredo client 93.184.216.34
    "[::ffff:93.184.216.34]",
    "[::93.184.216.34]",
    "[::ffff:0:93.184.216.34]",
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


@pytest.mark.parametrize(("host", "reason", "inner"), EMBEDDED)
async def test_ipv6_forms_embedding_a_blocked_ipv4_are_refused(
    host: str, reason: str, inner: str
) -> None:
    with pytest.raises(PushTargetRefusedError, match=reason) as refused:
        await guard().vet(f"http://{host}:8080/hook")
    assert inner in str(refused.value)


@pytest.mark.parametrize("host", EMBEDDED_PUBLIC)
async def test_ipv6_forms_embedding_a_public_ipv4_pass(host: str) -> None:
    await guard().vet(f"http://{host}/hook")


@pytest.mark.parametrize(("host", "reason", "inner"), EMBEDDED)
async def test_a_name_resolving_to_an_embedded_blocked_ipv4_is_refused(
    host: str, reason: str, inner: str
) -> None:
    sender = guard(resolver({"hook.example": [[host.strip("[]")]]}))
    with pytest.raises(PushTargetRefusedError, match=reason):
        await sender.vet("https://hook.example/a2a")


async def test_allowed_targets_open_only_what_they_list() -> None:
    sender = guard(
        resolver({"receiver.internal": [["10.9.8.7"]], "other.internal": [["10.9.8.8"]]}),
        allowed=["127.0.0.1", "192.168.0.0/16", "fd12::/16", "Receiver.Internal"],
    )
    await sender.vet("http://127.0.0.1:9/hook")
    await sender.vet("http://[::ffff:127.0.0.1]:9/hook")
    await sender.vet("http://192.168.44.1/hook")
    await sender.vet("http://[fd12::1]/hook")
    await sender.vet("http://receiver.internal/hook")
    for refused in (
        "http://127.0.0.2/hook",
        "http://[::1]/hook",
        "http://10.0.0.1/hook",
        "http://[2002:c0a8:101::]/hook",  # the 6to4 form of an allowed address is not listed
        "http://other.internal/hook",
    ):
        with pytest.raises(PushTargetRefusedError):
            await sender.vet(refused)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/",
        "http://[fd00:ec2::254]/",
        "http://metadata.internal/",
        "http://100.100.100.200/",
        "http://[::ffff:100.100.100.200]/",
        "http://[2002:6464:64c8::]/",
        "http://aliyun.internal/",
    ],
)
async def test_a_range_or_a_name_never_opens_the_metadata_address(url: str) -> None:
    sender = guard(
        resolver(
            {
                "metadata.internal": [["169.254.169.254"]],
                "aliyun.internal": [["100.100.100.200"]],
            }
        ),
        allowed=[
            "169.254.0.0/16",
            "fd00::/8",
            "100.64.0.0/10",
            "2002::/16",
            "metadata.internal",
            "aliyun.internal",
        ],
    )
    with pytest.raises(PushTargetRefusedError, match="a cloud metadata address"):
        await sender.vet(url)


async def test_the_metadata_address_listed_as_itself_is_allowed() -> None:
    await guard(allowed=["169.254.169.254"]).vet("http://169.254.169.254/")
    await guard(allowed=["fd00:ec2::254/128"]).vet("http://[fd00:ec2::254]/")
    await guard(allowed=["100.100.100.200"]).vet("http://100.100.100.200/")


@pytest.mark.parametrize("entry", ["http://hook.example/", "10.0.0.0/33", "bad_name", "a..b"])
def test_an_allowed_target_that_is_neither_a_cidr_nor_a_name_is_a_config_error(
    entry: str,
) -> None:
    with pytest.raises(ValueError, match="neither a CIDR nor a host name"):
        PushSettings(allowed_targets=[entry])


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
