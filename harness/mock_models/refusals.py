"""How each real provider refuses a request, for the mocks' `Upstream` steps with a `refusal`:
the status, error body and headers the provider's documentation and live answers show.

- Anthropic (Messages API): `{"type": "error", "error": {"type", "message"}, "request_id"}`;
  401 `authentication_error`; 429 `rate_limit_error` with `retry-after` and the
  `anthropic-ratelimit-*` headers; no credit left is a 400 `invalid_request_error` ("Your
  credit balance is too low ...").
- OpenAI (Responses and Chat Completions share it): `{"error": {"message", "type", "param",
  "code"}}`; 401 `invalid_api_key`; 429 `rate_limit_exceeded` ("... Please try again in Ns.")
  with `retry-after` and `x-ratelimit-*` headers; 429 `insufficient_quota`.
- Gemini API: `{"error": {"code", "message", "status", "details"}}`; a bad key is a 400
  `INVALID_ARGUMENT` with an ErrorInfo `API_KEY_INVALID`; 429 `RESOURCE_EXHAUSTED` with a
  QuotaFailure (a per-minute quota id for a rate limit, with a RetryInfo `retryDelay`; a
  per-day one when the quota is used up).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from harness.mock_models.steps import Upstream

_GOOGLE = "type.googleapis.com/google.rpc."
# How the providers word a failure of their own (a 5xx body's message).
OPENAI_5XX = "The server had an error while processing your request. Sorry about that!"
GEMINI_5XX = "An internal error has occurred. Please retry or report it."


def _response(status: int, body: dict[str, Any], headers: dict[str, str]) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


def _delay(step: Upstream) -> int:
    return step.retry_after if step.retry_after is not None else 2


def anthropic(step: Upstream) -> web.Response:
    request_id = "req_mock_" + uuid.uuid4().hex[:12]
    headers = {"request-id": request_id}
    if step.refusal == "auth":
        status, kind, message = 401, "authentication_error", "invalid x-api-key"
    elif step.refusal == "rateLimit":
        status, kind = 429, "rate_limit_error"
        message = (
            "This request would exceed the rate limit for your organization (mock-org) of 50"
            " requests per minute. For details, refer to: https://docs.claude.com/en/api/"
            "rate-limits. You can see the response headers for current usage. Please reduce"
            " the prompt length or the maximum tokens requested, or try again later."
        )
        reset = datetime.now(UTC) + timedelta(seconds=_delay(step))
        headers |= {
            "retry-after": str(_delay(step)),
            "anthropic-ratelimit-requests-limit": "50",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": reset.isoformat(timespec="seconds"),
        }
    else:
        status, kind = 400, "invalid_request_error"
        message = (
            "Your credit balance is too low to access the Anthropic API. Please go to Plans &"
            " Billing to upgrade or purchase credits."
        )
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return _response(status, body, headers)


def openai(step: Upstream, model: str = "mock-model") -> web.Response:
    headers = {"x-request-id": "req_" + uuid.uuid4().hex[:24]}
    if step.refusal == "rateLimit":
        seconds = _delay(step)
        headers |= {
            "retry-after": str(seconds),
            "x-ratelimit-limit-requests": "3",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": f"{seconds}s",
        }
    status = 401 if step.refusal == "auth" else 429
    return _response(status, {"error": openai_error(step, model)}, headers)


def openai_error(step: Upstream, model: str = "mock-model") -> dict[str, Any]:
    """The `error` object of an OpenAI refusal (an HTTP error's body, or a `response.failed`
    event's `response.error`)."""
    if step.refusal == "auth":
        return {
            "message": "Incorrect API key provided: sk-mock***********1234. You can find your"
            " API key at https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    if step.refusal == "rateLimit":
        seconds = _delay(step)
        return {
            "message": f"Rate limit reached for {model} in organization org-mock on requests"
            f" per min (RPM): Limit 3, Used 3, Requested 1. Please try again in {seconds}s."
            " Visit https://platform.openai.com/account/rate-limits to learn more.",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    return {
        "message": "You exceeded your current quota, please check your plan and billing"
        " details. For more information on this error, read the docs:"
        " https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }


def gemini(step: Upstream, model: str = "gemini-2.5-flash") -> web.Response:
    if step.refusal == "auth":
        status, code = 400, "INVALID_ARGUMENT"
        message = "API key not valid. Please pass a valid API key."
        details: list[dict[str, Any]] = [
            {
                "@type": _GOOGLE + "ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
    else:
        status, code = 429, "RESOURCE_EXHAUSTED"
        per = "PerDay" if step.refusal == "quota" else "PerMinute"
        metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
        message = (
            "You exceeded your current quota, please check your plan and billing details."
            f" Quota exceeded for metric: {metric}, limit: 10, model: {model}"
        )
        details = [
            {
                "@type": _GOOGLE + "QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": metric,
                        "quotaId": f"GenerateRequests{per}PerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": model},
                        "quotaValue": "10",
                    }
                ],
            },
            {
                "@type": _GOOGLE + "Help",
                "links": [
                    {
                        "description": "Learn more",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
        ]
        if step.refusal == "rateLimit":
            message += f"\nPlease retry in {_delay(step)}s."
            details.append({"@type": _GOOGLE + "RetryInfo", "retryDelay": f"{_delay(step)}s"})
    body = {"error": {"code": status, "message": message, "status": code, "details": details}}
    return _response(status, body, {})
