"""Fault injection for reliability tests: fail the next N matching requests with a chosen code."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from . import errors
from .errors import APIError
from .resources import ResourceType


@dataclass
class FaultRule:
    verb: str  # a Kubernetes verb or "*"
    resource: str  # "pods", "pods/status", "tfjobs.kubeflow.org", or "*"
    code: int
    remaining: int
    retry_after: int = 1
    namespace: str | None = None
    message: str = ""


class FaultInjector:
    """Thread-safe: tests may arm faults from outside the server's event loop."""

    CODES = (409, 429, 500, 503)

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def inject(
        self,
        verb: str,
        resource: str,
        code: int,
        count: int = 1,
        retry_after: int = 1,
        namespace: str | None = None,
        message: str = "",
    ) -> FaultRule:
        """Make the next ``count`` requests matching (verb, resource[, namespace]) fail with ``code``."""
        if code not in self.CODES:
            raise ValueError(f"unsupported fault code {code}; choose one of {self.CODES}")
        rule = FaultRule(verb, resource, code, count, retry_after, namespace, message)
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def check(
        self, verb: str, rt: ResourceType, subresource: str | None, namespace: str | None, name: str
    ) -> APIError | None:
        """The error to answer with, consuming one use of the first matching rule."""
        if not self._rules:
            return None
        resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
        with self._lock:
            for rule in self._rules:
                if rule.verb not in ("*", verb):
                    continue
                if rule.resource not in (
                    "*",
                    resource,
                    f"{resource}.{rt.group}" if rt.group else resource,
                    rt.key if not subresource else f"{rt.key}/{subresource}",
                ):
                    continue
                if rule.namespace is not None and rule.namespace != namespace:
                    continue
                rule.remaining -= 1
                if rule.remaining <= 0:
                    self._rules.remove(rule)
                return self._error(rule, rt, name)
        return None

    @staticmethod
    def _error(rule: FaultRule, rt: ResourceType, name: str) -> APIError:
        if rule.code == 409:
            return errors.conflict(rt.group, rt.plural, name, rule.message or errors.MODIFIED)
        if rule.code == 429:
            return errors.too_many_requests(
                rule.message or "Too many requests, please try again later.", rule.retry_after
            )
        if rule.code == 503:
            err = errors.service_unavailable(
                rule.message or "the server is currently unable to handle the request"
            )
            err.headers["Retry-After"] = str(rule.retry_after)
            return err
        return errors.internal(rule.message or "injected fault")
