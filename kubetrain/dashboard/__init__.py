"""The web dashboard: live jobs, their replicas' logs and metric curves, and the job history.

`server.Dashboard` serves it on 127.0.0.1 (`guard`: loopback Host, own Origin, read-only, no
CORS). The live pages read the cluster through kubetrain's client and informers (`livestate`),
stream each replica's log from the API (`logfeed`) and read metrics from the lines as they come
(`series`, the history's convention); `usage` tells local pods' CPU and memory; `history` reads
finished and deleted jobs from the history store. `routes` are the URLs, `sse` the live streams,
`views` what of each object a page may see, `assets` the front end in ``static/`` (plain HTML,
CSS and JavaScript, no build step, nothing from a CDN).
"""

HOST = "127.0.0.1"
"""The only address the dashboard listens on."""
DEFAULT_PORT = 8470
"""The port tried first, so a page left open finds the next `kubetrain up` (a free one if taken)."""
