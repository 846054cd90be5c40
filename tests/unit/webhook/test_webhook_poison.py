"""Deep nesting and odd strings get a proper admission answer, never an HTTP 500 (issue #17).

The webhook answered 500 `maximum recursion depth exceeded` for a PyTorchJob/TFJob nested deep.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from webhook_jobs import request, review, valid_job

from kubetrain.kinds.registry import REPLICA_SPEC_KINDS as KINDS
from kubetrain.kube import jsonsafe
from kubetrain.webhook.handler import admit, webhook_path
from kubetrain.webhook.review import parse_review
from kubetrain.webhook.server import WebhookServer

DEPTHS = (600, 5000)


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def deep_job(kind: str, depth: int) -> dict[str, Any]:
    job = valid_job(kind)
    specs = job["spec"][KINDS[kind].replica_specs_field]
    next(iter(specs.values()))["template"]["spec"]["containers"][0]["command"] = nested(depth)
    return job


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob"])
@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_job_is_denied_with_a_field_error(kind: str, depth: int) -> None:
    job = deep_job(kind, depth)
    body = jsonsafe.dumps(review("CREATE", job))
    parsed, _ = parse_review(body, "application/json")
    resp = admit(KINDS[kind], parsed)
    assert not resp.allowed and resp.status["code"] == 403
    assert "containers[0].command[0][0]" in resp.status["message"]
    assert "nesting too deep: at most 100 levels" in resp.status["message"]
    update = admit(KINDS[kind], request("UPDATE", job, old=deep_job(kind, depth)))
    assert not update.allowed and update.status["code"] == 403


def test_lone_surrogates_are_read_as_go_reads_them() -> None:
    job = valid_job("TFJob")
    job["metadata"]["labels"] = {"a": "\ud800"}
    body = jsonsafe.dumps(review("CREATE", job)).replace("\ufffd".encode(), b"\\ud800")
    parsed, _ = parse_review(body, "application/json")
    assert parsed.object["metadata"]["labels"] == {"a": "\ufffd"}
    assert admit(KINDS["TFJob"], parsed).allowed


@pytest.mark.parametrize("depth", DEPTHS)
async def test_the_http_answer_is_an_admission_review_not_a_500(depth: int) -> None:
    server = WebhookServer(kinds=[KINDS["PyTorchJob"]])
    async with TestClient(TestServer(server.app())) as client:
        body = jsonsafe.dumps(review("CREATE", deep_job("PyTorchJob", depth)))
        resp = await client.post(
            webhook_path(KINDS["PyTorchJob"]), data=body, headers={"Content-Type": "application/json"}
        )
        assert resp.status == 200
        answer = orjson.loads(await resp.read())["response"]
        assert answer["allowed"] is False and "nesting too deep" in answer["status"]["message"]
        name = valid_job("PyTorchJob", name="\ud800")
        body = jsonsafe.dumps(review("CREATE", name))
        resp = await client.post(
            webhook_path(KINDS["PyTorchJob"]), data=body, headers={"Content-Type": "application/json"}
        )
        assert resp.status == 200
        assert orjson.loads(await resp.read())["response"]["allowed"] is False  # "\ufffd" is no DNS label
