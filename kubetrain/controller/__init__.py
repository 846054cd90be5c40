"""The framework-agnostic job reconciler: observed state -> actions + new status, with no I/O.

Entry points (`kubetrain.controller.reconciler`):

* `plan(job, observed, now, config) -> Plan` — one reconcile of a raw job of any generic-path kind;
* `watched_children(config) -> list[ChildType]` — the child kinds the runtime must cache.

`plan.py` and `config.py` are the contract with the runtime; `events.py` holds the event reasons
and messages both sides spell (and `failure_event` for writes that failed). Where and why the
reconciler departs from upstream is listed in docs/differences.md.
"""
