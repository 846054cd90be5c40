"""The job history: what every job did, kept after the API server forgets it.

`store` is the SQLite file (bounded, oldest first out); `recorder` watches an API server (the
local plane's or a cluster's) and writes each job's spec, condition transitions, pods, events
and every container attempt's log into it. The CLI reads the store directly.
"""
