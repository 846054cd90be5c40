"""What the client says when the API server refuses a request: a 401/403 about who is asking names
the kubeconfig's credentials; an admission webhook's denial (also a 403) is about the object, so
it says only the webhook's message."""

from __future__ import annotations

from kubetrain.client.aio import api_failure
from kubetrain.kube.errors import ApiError


def test_forbidden_for_the_caller_points_at_the_credentials() -> None:
    err = api_failure(
        ApiError(403, "Forbidden", 'pytorchjobs.kubeflow.org is forbidden: User "x" cannot create')
    )
    assert "check the credentials of your kubeconfig context" in str(err)


def test_a_webhook_denial_says_the_webhooks_message_only() -> None:
    webhook = "validator.trainjob.trainer.kubeflow.org"
    message = f'admission webhook "{webhook}" denied the request: spec.runtimeRef: not found'
    err = api_failure(ApiError(403, "Forbidden", message))
    assert str(err) == f"the API server refused the request (403 Forbidden): {message}"
