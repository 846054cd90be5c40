"""Kubernetes primitives both the operator side and the embedded plane use.

The bottom layer: quantities, label selectors, RFC 3339 time, the built-in resource table, serving
certificates, a minimal client and informer. It imports nothing else of kubetrain, so that
`embedded/` (which may not import operator logic) and the operator share one copy of each.
"""
