"""What went wrong upstream, in one vocabulary for every backend: rejected credentials, a used-up
quota, a rate limit, or another error of the model provider.

Agents report these in their own words (an error event, an exit line, a quoted provider body).
`classify` reads such raw text for the markers the providers put in their error bodies
(the messages, responses, chat completions and generateContent APIs) and the agents in their
messages;
`retry_hint` and `reset_hint` find when to try again. `upstream_failure` builds the `Failed`
event: a sentence for the caller, the kind and timing as fields, the raw text only in the log
under the error id. `safe_failure` (the package root) runs every raw failure text through
`classify`, so a backend that reports its agent's error text gets the kinds without code of its
own; a backend whose agent says the kind in a structured field calls `upstream_failure` itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

UpstreamKind = Literal["auth", "quota", "rateLimit", "upstream"]

SENTENCES: dict[UpstreamKind, str] = {
    "auth": "The model provider refused the agent's credentials (missing, invalid or expired).",
    "quota": "The agent's account has used up its quota or credit with the model provider.",
    "rateLimit": "The model provider is rate-limiting the agent's account.",
    "upstream": "The model provider answered the agent with an error.",
}

# Most specific first: a quota error is often a 429, and a per-minute quota is a rate limit
# (Google words both "You exceeded your current quota"; only a rate limit says when to retry).
_MARKERS: tuple[tuple[UpstreamKind, re.Pattern[str]], ...] = (
    (
        "auth",
        re.compile(
            r"authentication_error|authentication_failed|invalid[ _]?x-api-key|invalid_api_key"
            r"|incorrect api key|invalid api key|api key not valid|api_key_invalid"
            r"|api key expired|unauthenticated|invalid authentication credentials"
            r"|\b401\b[^0-9]{0,3}unauthorized|(?:status|error|code|http)[\"':= ]{0,4}401\b"
            r"|api error: 401|token (?:has )?expired|please run /login|not logged in"
            r"|oauth token (?:has )?(?:expired|been revoked)|\bunauthorized\b"
            r"|missing environment variable\W+\w*(?:api_?key|token)|authentication required"
            r"|not authenticated|no authentication information|no \w+ oauth token",
            re.I,
        ),
    ),
    (
        "quota",
        re.compile(
            r"perday|insufficient_quota|credit balance is too low|billing_error"
            r"|usage_?limit_?(?:reached|exceeded)|usagelimitexceeded|hit your usage limit"
            r"|reached (?:its|your) (?:usage|spend(?:ing)?) limit|quota exceeded\. check your plan",
            re.I,
        ),
    ),
    (
        "rateLimit",
        re.compile(
            r"perminute|retrydelay|(?:retry|try again) in \d|rate_limit|rate[- ]limit"
            r"|too many requests",
            re.I,
        ),
    ),
    ("quota", re.compile(r"exceeded your current quota|check your plan and billing", re.I)),
    ("rateLimit", re.compile(r"resource_exhausted|\b429\b", re.I)),
    ("quota", re.compile(r"\bquota\b", re.I)),
    (
        "upstream",
        re.compile(
            r"overloaded|server_error|api_error|internal ?server ?error|bad gateway|high demand"
            r"|server had an error|an internal error has occurred"
            r"|service unavailable|gateway timeout|(?:status|error|code|http)[\"':= ]{0,4}5\d\d\b"
            r"|api error: 5\d\d",
            re.I,
        ),
    ),
)

_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0, "m": 60.0, "min": 60.0}
_RETRY = (
    re.compile(r"retry[-_ ]after(?:[-_]ms)?[\"':= ]+(\d+(?:\.\d+)?)(ms)?", re.I),
    re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?) ?(ms|s|sec|seconds?|m|min)\b", re.I),
    re.compile(r"retrydelay[\"':= ]+\"?(\d+(?:\.\d+)?)(s|ms)", re.I),
    re.compile(r"retry_delay_ms[\"':= ]+(\d+)()", re.I),
    re.compile(r"resets_in_seconds[\"':= ]+(\d+)()", re.I),
)
_RESET_EPOCH = re.compile(r"(?:resets_at[\"':= ]+|usage limit reached\|)(\d{9,11})\b", re.I)


def classify(text: str) -> UpstreamKind | None:
    """The kind of upstream failure `text` (raw: an error body, an agent's error line) reports,
    or None when it names none."""
    for kind, pattern in _MARKERS:
        if pattern.search(text):
            return kind
    return None


def of_status(status: object) -> UpstreamKind | None:
    """The kind an HTTP status of the provider's answer names on its own, if any."""
    if not isinstance(status, int) or isinstance(status, bool):
        return None
    if status == 401:
        return "auth"
    if status == 429:
        return "rateLimit"
    return "upstream" if status >= 500 else None


def retry_hint(text: str) -> float | None:
    """Seconds to wait before trying again, when `text` says (a retry-after, "try again in
    20s", a Google RetryInfo delay, an agent's retry delay)."""
    for pattern in _RETRY:
        found = pattern.search(text)
        if found is None:
            continue
        value = float(found.group(1))
        unit = (found.group(2) or "").lower()
        if pattern.pattern.startswith("retry_delay_ms") or unit == "ms":
            return round(value / 1000, 3)
        return value * _UNITS.get(unit, 1.0)
    return None


def reset_hint(text: str, *, now: datetime | None = None) -> datetime | None:
    """When a used-up quota resets, when `text` says (an epoch, or seconds from now)."""
    found = _RESET_EPOCH.search(text)
    if found is not None:
        return datetime.fromtimestamp(int(found.group(1)), tz=UTC)
    seconds = re.search(r"resets_in_seconds[\"':= ]+(\d+)", text, re.I)
    if seconds is not None:
        return (now or datetime.now(UTC)) + timedelta(seconds=int(seconds.group(1)))
    return None
