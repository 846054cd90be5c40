"""One registration per kind (`registration.py`), collected in `registry.py`; everything that
lists kinds (CRDs, served kinds, the client, the resource table, webhook routes, the CLI) reads
the registry."""
