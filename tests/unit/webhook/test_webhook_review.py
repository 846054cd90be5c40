"""AdmissionReview decoding and encoding, including every way a request can be malformed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from webhook_jobs import review, valid_job

from kubetrain.webhook.review import (
    ADMISSION_V1BETA1,
    MalformedReview,
    allowed,
    denied,
    errored,
    parse_review,
    rejection_status,
    review_body,
)


def body(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def test_parses_a_review_as_kube_apiserver_sends_it() -> None:
    doc = review("UPDATE", valid_job("TFJob"), valid_job("TFJob"))
    req, api_version = parse_review(body(doc), "application/json")
    assert api_version == "admission.k8s.io/v1"
    assert req.uid == doc["request"]["uid"]
    assert req.operation == "UPDATE"
    assert req.object == doc["request"]["object"]
    assert req.old_object == doc["request"]["oldObject"]
    assert (req.namespace, req.name, req.kind["kind"]) == ("default", "test", "TFJob")


def test_v1beta1_is_accepted() -> None:
    _, api_version = parse_review(
        body(review("CREATE", valid_job("TFJob"), api_version=ADMISSION_V1BETA1)),
        "application/json; charset=utf-8",
    )
    assert api_version == ADMISSION_V1BETA1


MALFORMED = [
    (b"{}", "text/plain", "contentType=text/plain, expected application/json"),
    (b"", "application/json", "request body is empty"),
    (b"{not json", "application/json", "couldn't decode AdmissionReview"),
    (b"[1, 2]", "application/json", "not a JSON object"),
    (body({"kind": "Pod", "apiVersion": "v1"}), "application/json", "expected AdmissionReview"),
    (
        body({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v2"}),
        "application/json",
        "apiVersion",
    ),
    (
        body({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}),
        "application/json",
        "no request",
    ),
    (
        body(
            {
                "kind": "AdmissionReview",
                "apiVersion": "admission.k8s.io/v1",
                "request": {"operation": "CREATE"},
            }
        ),
        "application/json",
        "no uid",
    ),
    (
        body(
            {
                "kind": "AdmissionReview",
                "apiVersion": "admission.k8s.io/v1",
                "request": {"uid": "u", "operation": "X"},
            }
        ),
        "application/json",
        "unknown operation 'X'",
    ),
    (b"\xff\xfe\x00", "application/json", "couldn't decode"),
]


@pytest.mark.parametrize(("raw", "content_type", "reason"), MALFORMED)
def test_malformed_reviews_raise_a_readable_reason(raw: bytes, content_type: str, reason: str) -> None:
    with pytest.raises(MalformedReview) as info:
        parse_review(raw, content_type)
    assert reason in str(info.value)


def test_responses_match_controller_runtime() -> None:
    assert review_body(allowed("u1")) == {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "response": {"uid": "u1", "allowed": True, "status": {"metadata": {}, "code": 200}},
    }
    assert review_body(denied("u2", "bad", ("careful",)))["response"] == {
        "uid": "u2",
        "allowed": False,
        "status": {"metadata": {}, "message": "bad", "reason": "Forbidden", "code": 403},
        "warnings": ["careful"],
    }
    assert errored("", 400, "oops").to_dict() == {
        "uid": "",
        "allowed": False,
        "status": {"metadata": {}, "message": "oops", "code": 400},
    }


def test_rejection_status_is_what_the_api_server_returns_to_kubectl() -> None:
    status = rejection_status(
        "validator.tfjob.training-operator.kubeflow.org", denied("u", "x: Required value")
    )
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'admission webhook "validator.tfjob.training-operator.kubeflow.org" denied the request: '
        "x: Required value",
        "reason": "Forbidden",
        "code": 403,
    }
    bare = rejection_status("w", errored("u", 200, ""))
    assert bare["message"] == 'admission webhook "w" denied the request without explanation'
    assert bare["code"] == 400
